"""clickhouse-connect as pandas, Jupyter and Superset use it, with its default
settings (compression on, Native for query and query_df, Arrow for
query_arrow), against Benchstream's /clickhouse endpoint. Used by
test/clients/clickhouse-clients.test.ts.

    python client.py HOST PORT PASSWORD RUN_ID < input.json

The input: {"attacks": [[name, sql], ...], "whole_run": RUN, "slow": SQL}.
Prints one JSON object: what the client found at connection, the run read
with query, query_df and query_arrow; a whole run of raw events read with
each (issue 31: every row, with the client's defaults); a query that passes
a limit part-way (the server's time limit), and one that passes the
request's max_result_rows, with each reader: the exception's type and text,
or what came instead; and each attack run with query and query_arrow:
"refused" (with the message), "ok" or "empty".
"""
import json
import sys

import clickhouse_connect
import pandas
import pyarrow


def main() -> None:
    host, port, password, run_id = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4]
    given = json.load(sys.stdin)
    attacks = given["attacks"]
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
    # The reproduction: a whole run of raw events, with the client's defaults.
    whole_sql = f"SELECT * FROM ops WHERE run_id = '{given['whole_run']}'"
    whole_df = client.query_df(whole_sql)
    whole_arrow = client.query_arrow(whole_sql)
    whole_rows = client.query(whole_sql)
    latency = whole_rows.column_names.index("latency_us")
    out["whole"] = {
        "df_rows": len(whole_df),
        "df_latency": int(whole_df["latency_us"].sum()),
        "arrow_rows": whole_arrow.num_rows,
        "arrow_latency": int(pyarrow.compute.sum(whole_arrow.column("latency_us")).as_py()),
        "query_rows": len(whole_rows.result_rows),
        "query_latency": sum(int(r[latency]) for r in whole_rows.result_rows),
    }
    # Limits hit: the server's time limit part-way, and max_result_rows (ClickHouse's result_overflow_mode='throw').
    limits = {}
    for name, sql, settings in (
        ("time", given["slow"], None),
        ("max_result_rows", whole_sql, {"max_result_rows": 1000}),
    ):
        for how in ("query_df", "query_arrow", "query"):
            try:
                res = getattr(client, how)(sql, settings=settings)
                rows = len(res) if how == "query_df" else res.num_rows if how == "query_arrow" else len(res.result_rows)
                limits[f"{name} {how}"] = {"raised": False, "rows": rows}
            except Exception as e:  # noqa: BLE001 - what it raised is the answer
                limits[f"{name} {how}"] = {"raised": True, "type": type(e).__name__, "text": str(e)[:500]}
    out["limits"] = limits
    results = []
    for name, sql in attacks:
        got = {}
        for how in ("query", "query_arrow"):
            try:
                if how == "query":
                    res = client.query(sql)
                    rows = len(res.result_rows)
                    text = json.dumps(res.result_rows, default=str)
                else:
                    res = client.query_arrow(sql)
                    rows = res.num_rows
                    text = json.dumps(res.to_pylist(), default=str)
                got[how] = {"outcome": "empty" if rows == 0 else "ok", "text": text[:300]}
            except Exception as e:  # noqa: BLE001 - every failure is an outcome here
                got[how] = {"outcome": "refused", "text": str(e)[:300]}
        results.append([name, got])
    out["attacks"] = results
    print(json.dumps(out))


if __name__ == "__main__":
    main()
