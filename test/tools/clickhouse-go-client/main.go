// A ClickHouse client as the Grafana ClickHouse plugin (v4.20.0) builds it:
// clickhouse-go v2.47.0 over HTTP (pkg/plugin/driver.go: Protocol HTTP,
// gzip compression, HttpUrlPath from the datasource's "path", basic auth,
// database/sql with a ping after opening). It runs each query given as an
// argument and prints one JSON object per query on stdout:
//
//	{"columns":[{"name":"...","type":"..."}],"rows":[[...],...]}
//
// or {"error":"..."} when the query fails (exit status 0: the caller checks
// errors). Used by test/integration/clickhouse-http.test.ts against
// Benchstream's /clickhouse endpoint.
//
//	go run . -addr 127.0.0.1:8080 -path /clickhouse -password TOKEN 'SELECT 1'
package main

import (
	"context"
	"database/sql"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"reflect"
	"time"

	"github.com/ClickHouse/clickhouse-go/v2"
)

type column struct {
	Name string `json:"name"`
	Type string `json:"type"`
}

type result struct {
	Columns []column `json:"columns,omitempty"`
	Rows    [][]any  `json:"rows"`
	Error   string   `json:"error,omitempty"`
}

func main() {
	addr := flag.String("addr", "127.0.0.1:8080", "host:port of the endpoint")
	path := flag.String("path", "/clickhouse", "HTTP path (the datasource's path setting)")
	user := flag.String("user", "benchstream", "basic auth user name")
	password := flag.String("password", "", "basic auth password (Benchstream's API_TOKEN)")
	database := flag.String("database", "benchstream", "default database")
	flag.Parse()

	// As the plugin sets them (driver.go Connect): HTTP, gzip, path, auth, timeouts.
	db := clickhouse.OpenDB(&clickhouse.Options{
		Protocol:    clickhouse.HTTP,
		Addr:        []string{*addr},
		HttpUrlPath: *path,
		Auth:        clickhouse.Auth{Database: *database, Username: *user, Password: *password},
		Compression: &clickhouse.Compression{Method: clickhouse.CompressionGZIP},
		DialTimeout: 10 * time.Second,
		ReadTimeout: 60 * time.Second,
		ClientInfo:  clickhouse.ClientInfo{Products: []struct{ Name, Version string }{{Name: "benchstream-test", Version: "1"}}},
	})
	defer db.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	out := json.NewEncoder(os.Stdout)
	// The plugin pings right after opening (driver.go), which runs SELECT 1.
	if err := db.PingContext(ctx); err != nil {
		_ = out.Encode(result{Error: "ping: " + err.Error()})
		os.Exit(0)
	}
	for _, q := range flag.Args() {
		_ = out.Encode(run(ctx, db, q))
	}
}

func run(parent context.Context, db *sql.DB, query string) result {
	// sqlds gives each query a deadline; clickhouse-go turns it into max_execution_time.
	ctx, cancel := context.WithTimeout(parent, 15*time.Second)
	defer cancel()
	rows, err := db.QueryContext(ctx, query)
	if err != nil {
		return result{Error: err.Error()}
	}
	defer rows.Close()
	types, err := rows.ColumnTypes()
	if err != nil {
		return result{Error: err.Error()}
	}
	res := result{Rows: [][]any{}}
	for _, t := range types {
		res.Columns = append(res.Columns, column{Name: t.Name(), Type: t.DatabaseTypeName()})
	}
	for rows.Next() {
		dest := make([]any, len(types))
		for i, t := range types {
			dest[i] = reflect.New(t.ScanType()).Interface()
		}
		if err := rows.Scan(dest...); err != nil {
			return result{Error: "scan: " + err.Error()}
		}
		row := make([]any, len(dest))
		for i, d := range dest {
			row[i] = plain(reflect.ValueOf(d).Elem().Interface())
		}
		res.Rows = append(res.Rows, row)
	}
	if err := rows.Err(); err != nil {
		return result{Error: err.Error()}
	}
	return res
}

// plain turns values JSON cannot show as they are into text: times as
// milliseconds since the epoch, nil pointers as null, maps with keys as text.
func plain(v any) any {
	switch x := v.(type) {
	case time.Time:
		return x.UnixMilli()
	case *time.Time:
		if x == nil {
			return nil
		}
		return x.UnixMilli()
	}
	r := reflect.ValueOf(v)
	switch r.Kind() {
	case reflect.Pointer:
		if r.IsNil() {
			return nil
		}
		return plain(r.Elem().Interface())
	case reflect.Map:
		m := map[string]any{}
		for _, k := range r.MapKeys() {
			m[fmt.Sprint(k.Interface())] = plain(r.MapIndex(k).Interface())
		}
		return m
	case reflect.Slice:
		if r.Type().Elem().Kind() == reflect.Uint8 {
			return string(r.Bytes())
		}
		s := make([]any, r.Len())
		for i := range s {
			s[i] = plain(r.Index(i).Interface())
		}
		return s
	}
	return v
}
