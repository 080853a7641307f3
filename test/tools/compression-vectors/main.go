// Writes the fixtures of test/unit/compression-codecs.test.ts with the code
// clickhouse-go v2.47.0 uses (the Grafana plugin's client): CityHash128 v1.0.2
// from its lib/cityhash102, and ClickHouse compressed blocks (LZ4, none) from
// ch-go's compress package, which it sends with compress=1.
//
//	go run . ../../fixtures/clickhouse-compression
package main

import (
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"

	"github.com/ClickHouse/ch-go/compress"
	"github.com/ClickHouse/clickhouse-go/v2/lib/cityhash102"
)

// input is the test input of n bytes: byte i is (31 i + 7) mod 251.
func input(n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte((i*31 + 7) % 251)
	}
	return b
}

// text is a compressible input, rebuilt by the test: a query result in TSV, repeated.
func text() []byte {
	var b []byte
	for i := 0; len(b) < 300_000; i++ {
		b = append(b, []byte("READ\t"+string(rune('a'+i%26))+"\t12345\t0.5\n")...)
	}
	return b
}

func blocks(method compress.Method, data []byte, size int) []byte {
	w := compress.NewWriter(compress.LevelZero, method)
	var out []byte
	for i := 0; i < len(data); i += size {
		end := min(i+size, len(data))
		if err := w.Compress(data[i:end]); err != nil {
			panic(err)
		}
		out = append(out, w.Data...)
	}
	return out
}

func main() {
	dir := os.Args[1]
	type vector struct {
		Length int    `json:"length"`
		Hash   string `json:"hash"`
	}
	var vectors []vector
	for _, n := range []int{0, 1, 3, 4, 7, 8, 9, 15, 16, 17, 31, 32, 33, 63, 64, 65, 100, 127, 128, 129, 150, 159,
		160, 161, 200, 255, 256, 257, 300, 1000, 4096, 65536, 1048576} {
		vectors = append(vectors, vector{n, hex.EncodeToString(cityhash102.CityHash128(input(n), uint32(n)).Bytes())})
	}
	j, _ := json.MarshalIndent(vectors, "", "  ")
	must(os.WriteFile(filepath.Join(dir, "cityhash128-v102.json"), append(j, '\n'), 0o644))
	t := text()
	// 64 KiB blocks: several in one body.
	must(os.WriteFile(filepath.Join(dir, "text.tsv.ch-go-lz4"), blocks(compress.LZ4, t, 65536), 0o644))
	must(os.WriteFile(filepath.Join(dir, "text.tsv.ch-go-none"), blocks(compress.None, t[:1000], 1000), 0o644))
}

func must(err error) {
	if err != nil {
		panic(err)
	}
}
