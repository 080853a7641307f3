"""What pandas and DuckDB make of the files `benchstream export` wrote. Used
by test/clients/clickhouse-clients.test.ts.

    python read_exports.py FILE...

Prints one JSON object: for each file, its rows and the sum of latency_us as
pandas reads it (read_parquet, read_feather, read_csv, read_json with
lines=True), and as DuckDB reads it (read_parquet, read_csv, read_json;
Arrow files through pyarrow), with pandas' dtype of latency_us and start.
"""
import json
import sys

import duckdb
import pandas
import pyarrow.feather


def pandas_frame(path: str) -> pandas.DataFrame:
    if path.endswith(".parquet"):
        return pandas.read_parquet(path)
    if path.endswith((".arrow", ".feather")):
        return pandas.read_feather(path)
    if path.endswith(".csv"):
        return pandas.read_csv(path)
    return pandas.read_json(path, lines=True)


def duckdb_sum(path: str) -> list:
    con = duckdb.connect()
    if path.endswith(".parquet"):
        rel = f"read_parquet('{path}')"
    elif path.endswith(".csv"):
        rel = f"read_csv('{path}')"
    elif path.endswith((".jsonl", ".ndjson")):
        rel = f"read_json('{path}', format = 'newline_delimited')"
    else:
        con.register("exported", pyarrow.feather.read_table(path))
        rel = "exported"
    rows, latency = con.execute(f"SELECT count(*), sum(latency_us) FROM {rel}").fetchone()
    return [int(rows), int(latency)]


def main() -> None:
    out = {"versions": {"pandas": pandas.__version__, "duckdb": duckdb.__version__}, "files": {}}
    for path in sys.argv[1:]:
        df = pandas_frame(path)
        out["files"][path] = {
            "pandas": [len(df), int(df["latency_us"].sum())],
            "dtypes": {k: str(df[k].dtype) for k in ("latency_us", "start")},
            "duckdb": duckdb_sum(path),
        }
    print(json.dumps(out))


if __name__ == "__main__":
    main()
