-- Benchstream's ClickHouse schema, version 11: summary runs in run lists.
-- {db} is replaced by CLICKHOUSE_DATABASE. Every statement is safe to re-run.
-- A run imported from YCSB's final reports only (`benchstream import-ycsb
-- report.txt`) has rows in reported_measurements and no windows: a summary
-- run, whose figures are YCSB's as printed. The run lists (the API's, the
-- live view's picker, Grafana's run variables) mark it with this view.

-- One row per run with reported figures:
--   clients      clients whose report was imported
--   operations   measured operations of every client, as YCSB counts them
--                (failed ones included; CLEANUP, Intended- sections and the
--                Raw/Bucket half of a two-in-one measurement left out, so
--                nothing counts twice)
--   runtime_ms   the longest client's RunTime(ms)
--   throughput   the clients' Throughput(ops/sec), added
--   has_events   1 when the run also has windows (raw data or interval logs
--                imported with the report): its figures then come from those
--   origin       'reported' for a summary run, 'events' otherwise
CREATE OR REPLACE VIEW {db}.reported_runs AS
SELECT
    c.run_id                       AS run_id,
    count()                        AS clients,
    toUInt64(sum(c.ops))           AS operations,
    max(c.runtime_ms)              AS runtime_ms,
    sum(c.throughput)              AS throughput,
    toUInt8(c.run_id IN (SELECT run_id FROM {db}.op_windows
                         WHERE run_id IN (SELECT run_id FROM {db}.reported_measurements))) AS has_events,
    if(has_events = 1, 'events', 'reported') AS origin
FROM
(
    SELECT
        run_id,
        client_id,
        sumIf(ifNull(operations, 0),
              kind = 'operation' AND latency = 'measured' AND NOT match(measurement, '^(Raw|Bucket)')) AS ops,
        any(runtime_ms)            AS runtime_ms,
        any(throughput)            AS throughput
    FROM {db}.reported_measurements
    GROUP BY run_id, client_id
) AS c
GROUP BY c.run_id;
