-- Benchstream's ClickHouse schema, version 4: settings that belong to a run.
-- {db} is replaced by CLICKHOUSE_DATABASE. Every statement is safe to re-run.
-- A run's window length is registered by the first processor that sees the
-- run (services/adapters/clickhouse/run-registry.ts); when two register at
-- once, the earliest claim wins for everyone (argMin). Readers take a run's
-- window length from runs.window_ms, never from a processor's setting.

-- Percentiles as HdrHistogram 2.1.4 (the one YCSB 0.17.0 ships) defines
-- them, the same rule as services/core/stats/histogram.ts: rank q*n rounded
-- half up, at least 1; the bucket's midpoint reported in whole µs (half up).
-- Exact references over raw events use bs_rank too:
--   arraySort(groupArray(latency_us))[bs_rank(0.99, count())]
CREATE OR REPLACE FUNCTION bs_rank AS (q, n) -> greatest(toUInt64(1), toUInt64(floor(q * n + 0.5)));

CREATE OR REPLACE FUNCTION bs_quantile AS (q, h) ->
  toUInt64(floor(bs_bucket_value(arrayElement(mapKeys(mapSort(h)),
    arrayFirstIndex(c -> c >= bs_rank(q, arraySum(mapValues(h))), arrayCumSum(mapValues(mapSort(h)))))) + 0.5));

CREATE TABLE IF NOT EXISTS {db}.run_settings
(
    run_id      String,
    window_ms   UInt32,
    claimed_by  String,
    claimed_at  DateTime64(6, 'UTC') DEFAULT now64(6)
)
ENGINE = MergeTree
ORDER BY run_id;

-- What a run's drivers say about it beyond version 1's columns: the group of
-- repetitions it belongs to, its repetition number, and the workload
-- properties it ran with (so runs can be told comparable or not).
ALTER TABLE {db}.run_clients ADD COLUMN IF NOT EXISTS group_id LowCardinality(String) DEFAULT '';
ALTER TABLE {db}.run_clients ADD COLUMN IF NOT EXISTS repeat UInt32 DEFAULT 0;
ALTER TABLE {db}.run_clients ADD COLUMN IF NOT EXISTS properties Map(String, String);

-- Runs that had windows before this migration get the length they were written with.
INSERT INTO {db}.run_settings (run_id, window_ms, claimed_by)
SELECT run_id, max(window_ms), 'migration-0004' FROM {db}.op_windows
WHERE run_id NOT IN (SELECT run_id FROM {db}.run_settings)
GROUP BY run_id;

-- One row per run that reached a processor: its registered window length, and
-- what its drivers announced (NULL/0/empty for a run without lifecycle records,
-- e.g. events produced by another tool).
CREATE OR REPLACE VIEW {db}.runs AS
SELECT
    s.run_id                       AS run_id,
    c.started_at                   AS started_at,
    c.ended_at                     AS ended_at,
    ifNull(c.clients, 0)           AS clients,
    ifNull(c.clients_ended, 0)     AS clients_ended,
    ifNull(c.threads, 0)           AS threads,
    ifNull(c.target, 0)            AS target,
    c.labels                       AS labels,
    ifNull(c.workload, '')         AS workload,
    ifNull(c.binding, '')          AS binding,
    c.sent                         AS sent,
    ifNull(c.undelivered, 0)       AS undelivered,
    ifNull(c.runtime_ms, 0)        AS runtime_ms,
    s.window_ms                    AS window_ms
FROM
(
    SELECT run_id, argMin(window_ms, (claimed_at, claimed_by)) AS window_ms
    FROM {db}.run_settings
    GROUP BY run_id
) AS s
LEFT JOIN
(
    SELECT
        run_id,
        minIf(at, phase = 'start')                         AS started_at,
        if(countIf(phase = 'end') = uniqExactIf(client_id, phase = 'start'),
           maxIf(at, phase = 'end'), NULL)                 AS ended_at,
        uniqExactIf(client_id, phase = 'start')            AS clients,
        countIf(phase = 'end')                             AS clients_ended,
        sumIf(threads, phase = 'start')                    AS threads,
        sumIf(target, phase = 'start')                     AS target,
        anyIf(labels, phase = 'start')                     AS labels,
        anyIf(workload, phase = 'start')                   AS workload,
        anyIf(binding, phase = 'start')                    AS binding,
        sumMapIf(sent, phase = 'end')                      AS sent,
        sumIf(undelivered, phase = 'end')                  AS undelivered,
        maxIf(runtime_ms, phase = 'end')                   AS runtime_ms
    FROM {db}.run_clients
    GROUP BY run_id
) AS c ON c.run_id = s.run_id
SETTINGS join_use_nulls = 1;

CREATE OR REPLACE VIEW {db}.op_percentiles AS
SELECT
    run_id,
    op,
    sum(count)                                   AS operations,
    sum(errors)                                  AS errors,
    sum(count) / greatest(1, dateDiff('millisecond', min(window_start), max(window_start)) / 1000
        + (SELECT any(window_ms) FROM {db}.runs WHERE run_id = {run_id:String}) / 1000) AS ops_per_sec,
    sum(sum_us) / sum(count)                     AS avg_us,
    min(min_us)                                  AS min_us,
    max(max_us)                                  AS max_us,
    sumMap(hist)                                 AS merged_hist,
    least(bs_quantile(0.50, merged_hist), max_us)    AS p50_us,
    least(bs_quantile(0.90, merged_hist), max_us)    AS p90_us,
    least(bs_quantile(0.95, merged_hist), max_us)    AS p95_us,
    least(bs_quantile(0.99, merged_hist), max_us)    AS p99_us,
    least(bs_quantile(0.999, merged_hist), max_us)   AS p999_us,
    least(bs_quantile(0.9999, merged_hist), max_us)  AS p9999_us,
    bs_quantile(0.99, sumMap(intended_hist))     AS intended_p99_us
FROM {db}.op_windows
WHERE run_id = {run_id:String} AND window_start >= {from:DateTime64(3)} AND window_start < {to:DateTime64(3)}
GROUP BY run_id, op;

-- Views inline SQL functions when they are created: re-create the one of
-- version 1 that uses bs_quantile, so it reports by the rule above.
CREATE OR REPLACE VIEW {db}.run_summary AS
SELECT
    run_id,
    op,
    sum(count)                                   AS operations,
    sum(errors)                                  AS errors,
    sum(sum_us) / sum(count)                     AS avg_us,
    min(min_us)                                  AS min_us,
    max(max_us)                                  AS max_us,
    sumMap(hist)                                 AS merged_hist,
    least(bs_quantile(0.50, merged_hist), max_us)   AS p50_us,
    least(bs_quantile(0.90, merged_hist), max_us)   AS p90_us,
    least(bs_quantile(0.95, merged_hist), max_us)   AS p95_us,
    least(bs_quantile(0.99, merged_hist), max_us)   AS p99_us,
    least(bs_quantile(0.999, merged_hist), max_us)  AS p999_us,
    bs_quantile(0.99, sumMap(intended_hist))     AS intended_p99_us,
    sum(cache_hits)                              AS cache_hits,
    sum(cache_misses)                            AS cache_misses,
    if(cache_hits + cache_misses = 0, NULL, cache_hits / (cache_hits + cache_misses)) AS cache_hit_ratio,
    sum(late_events)                             AS late_events,
    min(first_start)                             AS first_start,
    max(last_end)                                AS last_end
FROM {db}.op_windows
GROUP BY run_id, op;
