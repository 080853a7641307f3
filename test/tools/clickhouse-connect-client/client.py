"""clickhouse-connect as pandas, Jupyter and Superset use it, with its default
settings (compression on, Native for query and query_df, Arrow for
query_arrow), against Benchstream's /clickhouse endpoint. Used by
test/clients/clickhouse-clients.test.ts.

    python client.py HOST PORT PASSWORD RUN_ID < attacks.json

Prints one JSON object: what the client found at connection, the run read
with query, query_df and query_arrow, a result over the row cap, and each
attack of the JSON list on stdin ([[name, sql], ...]) run with query and
query_arrow: "refused: <message>", "truncated", "ok" or "empty".
"""
import json
import sys

import clickhouse_connect
import pandas
import pyarrow


def main() -> None:
    host, port, password, run_id = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4]
    attacks = json.load(sys.stdin)
    client = clickhouse_connect.get_client(
        host=host, port=port, username="benchstream", password=password, proxy_path="/clickhouse", database="benchstream"
    )
    out = {
        "versions": {
            "clickhouse_connect": clickhouse_connect.__version__ if hasattr(clickhouse_connect, "__version__") else "",
            "pandas": pandas.__version__,
            "pyarrow": pyarrow.__version__,
        },
        "server_version": client.server_version,
        "server_tz": str(client.server_tz),
        "compression": client.compression,
        "protocol_version": client.protocol_version,
        "readonly": client.server_settings["readonly"].value if "readonly" in client.server_settings else None,
    }
    # Client-side parameters (%(name)s): the endpoint does not take server-side ones (param_*).
    summary_sql = "SELECT op, operations, p99_us, max_us FROM run_summary WHERE run_id = %(run)s ORDER BY op"
    r = client.query(summary_sql, parameters={"run": run_id})
    out["query"] = [list(map(lambda v: v if isinstance(v, str) else int(v), row)) for row in r.result_rows]
    windows_sql = (
        "SELECT op, status, window_start, count, sum_us FROM op_windows WHERE run_id = %(run)s "
        "ORDER BY window_start, op, status, client_id"
    )
    df = client.query_df(windows_sql, parameters={"run": run_id})
    by_op = df.groupby("op")["count"].sum()
    out["query_df"] = {
        "rows": len(df),
        "dtypes": {k: str(v) for k, v in df.dtypes.items()},
        "count_by_op": {str(k): int(v) for k, v in by_op.items()},
    }
    table = client.query_arrow(windows_sql, parameters={"run": run_id})
    out["query_arrow"] = {
        "rows": table.num_rows,
        "schema": [f"{f.name}: {f.type}" for f in table.schema],
        "count": int(pyarrow.compute.sum(table.column("count")).as_py()),
    }
    big = client.query("SELECT number FROM numbers(100000)")
    big_arrow = client.query_arrow("SELECT number FROM numbers(100000)")
    big_df = client.query_df("SELECT number FROM numbers(100000)")
    out["truncation"] = {
        "query_rows": len(big.result_rows),
        "query_last": int(big.result_rows[-1][0]),
        "summary": big.summary,
        "arrow_rows": big_arrow.num_rows,
        "df_rows": len(big_df),
    }
    results = []
    for name, sql in attacks:
        got = {}
        for how in ("query", "query_arrow"):
            try:
                if how == "query":
                    res = client.query(sql)
                    truncated = res.summary.get("benchstream_truncated") == "true"
                    rows = len(res.result_rows)
                    text = json.dumps(res.result_rows, default=str)
                else:
                    res = client.query_arrow(sql)
                    truncated = None
                    rows = res.num_rows
                    text = json.dumps(res.to_pylist(), default=str)
                got[how] = {"outcome": "truncated" if truncated else ("empty" if rows == 0 else "ok"), "text": text[:300]}
            except Exception as e:  # noqa: BLE001 - every failure is an outcome here
                got[how] = {"outcome": "refused", "text": str(e)[:300]}
        results.append([name, got])
    out["attacks"] = results
    print(json.dumps(out))


if __name__ == "__main__":
    main()
