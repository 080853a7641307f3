module benchstream/test/tools/compression-vectors

go 1.25.0

require (
	github.com/ClickHouse/ch-go v0.73.0
	github.com/ClickHouse/clickhouse-go/v2 v2.47.0
)

require (
	github.com/go-faster/city v1.0.1 // indirect
	github.com/go-faster/errors v0.7.1 // indirect
	github.com/klauspost/compress v1.18.6 // indirect
	github.com/pierrec/lz4/v4 v4.1.27 // indirect
)
