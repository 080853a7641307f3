"""One query_df through /clickhouse, timed: what bench/pull.ts measures.

    python pull.py HOST PORT SQL

Prints {"rows": N, "seconds": S, "peak_rss_mb": M} (M: this process's peak
resident memory, from getrusage), or {"error": "..."}.
"""
import json
import resource
import sys
import time

import clickhouse_connect


def main() -> None:
    host, port, sql = sys.argv[1], int(sys.argv[2]), sys.argv[3]
    client = clickhouse_connect.get_client(host=host, port=port, proxy_path="/clickhouse", database="benchstream")
    t0 = time.perf_counter()
    try:
        df = client.query_df(sql)
    except Exception as e:  # noqa: BLE001 - the failure is the answer
        print(json.dumps({"error": f"{type(e).__name__}: {e}"[:1000]}))
        return
    seconds = time.perf_counter() - t0
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(json.dumps({"rows": len(df), "seconds": seconds, "peak_rss_mb": peak}))


if __name__ == "__main__":
    main()
