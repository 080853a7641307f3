-- Benchstream's ClickHouse schema, version 8: release comparison figures.
-- {db} is replaced by CLICKHOUSE_DATABASE. Every statement is safe to re-run.
-- The same figures `benchstream compare`, `sweep` and `history` print (they
-- read these views through services/adapters/clickhouse/read-model.ts), for
-- Grafana: per run, per window, per group of repetitions and per sweep point.
-- Percentiles always come from a merged histogram (sumMap over clients and
-- windows), never from averaging or taking the max of percentiles.

-- One row per run and operation, plus an OVERALL row per run, as the run's
-- report computes them (services/core/reports/ycsb-report.ts):
--   runtime_ms     the drivers' run time (runs.runtime_ms), else the span of the events
--   operations     successful calls (status OK), YCSB's [READ] Operations
--   errors         calls with another status, YCSB's [READ-FAILED]
--   ops_per_sec    operations / runtime; OVERALL counts every call, failed ones
--                  included, as YCSB's [OVERALL] Throughput does
--   avg/min/max and percentiles over the successful calls, whole µs, clamped
--                  into [min, max] (the report's rule); OVERALL merges the
--                  histograms of every operation (a percentile over all calls)
--   cache_hit_ratio  hits / (hits + misses) the client saw, NULL when unknown
CREATE OR REPLACE VIEW {db}.run_op_figures AS
SELECT
    a.run_id                                   AS run_id,
    r.group_id                                 AS group_id,
    r.repeat                                   AS repeat,
    r.workload                                 AS workload,
    r.labels                                   AS labels,
    r.target                                   AS target,
    r.threads                                  AS threads,
    r.clients                                  AS clients,
    r.started_at                               AS started_at,
    a.op                                       AS op,
    if(r.runtime_ms > 0, toFloat64(r.runtime_ms), s.span_us / 1000) AS runtime_ms,
    a.operations                               AS operations,
    a.errors                                   AS errors,
    if(runtime_ms > 0,
       (if(a.op = 'OVERALL', a.operations + a.errors, a.operations)) * 1000 / runtime_ms, 0) AS ops_per_sec,
    if(a.operations + a.errors = 0, NULL, a.errors / (a.operations + a.errors)) AS error_rate,
    if(a.operations = 0, NULL, a.sum_us / a.operations)                 AS avg_us,
    if(a.operations = 0, NULL, a.min_us)                                AS min_us,
    if(a.operations = 0, NULL, a.max_us)                                AS max_us,
    if(a.operations = 0, NULL, least(greatest(bs_quantile(0.50, a.h), a.min_us), a.max_us))   AS p50_us,
    if(a.operations = 0, NULL, least(greatest(bs_quantile(0.90, a.h), a.min_us), a.max_us))   AS p90_us,
    if(a.operations = 0, NULL, least(greatest(bs_quantile(0.95, a.h), a.min_us), a.max_us))   AS p95_us,
    if(a.operations = 0, NULL, least(greatest(bs_quantile(0.99, a.h), a.min_us), a.max_us))   AS p99_us,
    if(a.operations = 0, NULL, least(greatest(bs_quantile(0.999, a.h), a.min_us), a.max_us))  AS p999_us,
    if(a.operations = 0, NULL, least(greatest(bs_quantile(0.9999, a.h), a.min_us), a.max_us)) AS p9999_us,
    a.cache_hits                               AS cache_hits,
    a.cache_misses                             AS cache_misses,
    if(a.cache_hits + a.cache_misses = 0, NULL, a.cache_hits / (a.cache_hits + a.cache_misses)) AS cache_hit_ratio
FROM
(
    SELECT
        run_id, op,
        sumIf(count, status = 'OK')    AS operations,
        sumIf(count, status != 'OK')   AS errors,
        sumIf(sum_us, status = 'OK')   AS sum_us,
        minIf(min_us, status = 'OK')   AS min_us,
        maxIf(max_us, status = 'OK')   AS max_us,
        sumMapIf(hist, status = 'OK')  AS h,
        sum(cache_hits)                AS cache_hits,
        sum(cache_misses)              AS cache_misses
    FROM {db}.op_windows
    GROUP BY run_id, op
    UNION ALL
    SELECT
        run_id, 'OVERALL' AS op,
        sumIf(count, status = 'OK'), sumIf(count, status != 'OK'), sumIf(sum_us, status = 'OK'),
        minIf(min_us, status = 'OK'), maxIf(max_us, status = 'OK'), sumMapIf(hist, status = 'OK'),
        sum(cache_hits), sum(cache_misses)
    FROM {db}.op_windows
    GROUP BY run_id
) AS a
INNER JOIN
(
    SELECT run_id, toUnixTimestamp64Micro(max(last_end)) - toUnixTimestamp64Micro(min(first_start)) AS span_us
    FROM {db}.op_windows
    GROUP BY run_id
) AS s ON s.run_id = a.run_id
LEFT JOIN {db}.runs AS r ON r.run_id = a.run_id;

-- The same figures per window (merged over clients), with the window's
-- offset from the run's first window in seconds (t_s), for "since start"
-- charts and for per-window samples (compare with fewer than 3 repetitions,
-- the live baseline). A window's percentiles come from its own merged
-- histogram; the first and last windows of a run are partial.
CREATE OR REPLACE VIEW {db}.op_window_figures AS
SELECT
    run_id,
    window_start,
    dateDiff('millisecond', min(window_start) OVER (PARTITION BY run_id), window_start) / 1000 AS t_s,
    op,
    window_ms,
    operations,
    errors,
    operations * 1000 / window_ms                                        AS ops_per_sec,
    if(operations + errors = 0, NULL, errors / (operations + errors))    AS error_rate,
    if(operations = 0, NULL, sum_us / operations)                        AS avg_us,
    if(operations = 0, NULL, max_us)                                     AS max_us,
    if(operations = 0, NULL, least(greatest(bs_quantile(0.50, h), min_us), max_us))  AS p50_us,
    if(operations = 0, NULL, least(greatest(bs_quantile(0.95, h), min_us), max_us))  AS p95_us,
    if(operations = 0, NULL, least(greatest(bs_quantile(0.99, h), min_us), max_us))  AS p99_us,
    if(operations = 0, NULL, least(greatest(bs_quantile(0.999, h), min_us), max_us)) AS p999_us,
    if(cache_hits + cache_misses = 0, NULL, cache_hits / (cache_hits + cache_misses)) AS cache_hit_ratio
FROM
(
    SELECT
        run_id, window_start, op, max(window_ms) AS window_ms,
        sumIf(count, status = 'OK') AS operations, sumIf(count, status != 'OK') AS errors,
        sumIf(sum_us, status = 'OK') AS sum_us,
        minIf(min_us, status = 'OK') AS min_us, maxIf(max_us, status = 'OK') AS max_us,
        sumMapIf(hist, status = 'OK') AS h, sum(cache_hits) AS cache_hits, sum(cache_misses) AS cache_misses
    FROM {db}.op_windows
    GROUP BY run_id, window_start, op
);

-- Groups of repetitions (benchstream run --group/--repeat) per workload and
-- operation, for error bars: the median of the runs' figures (each from its
-- run's merged histogram) and their range and standard deviation.
CREATE OR REPLACE VIEW {db}.group_op_figures AS
SELECT
    f.group_id                           AS group_id,
    f.workload                           AS workload,
    f.op                                 AS op,
    count()                              AS runs,
    groupArray(f.run_id)                 AS run_ids,
    min(f.started_at)                    AS first_started_at,
    median(f.ops_per_sec)                AS median_ops_per_sec,
    min(f.ops_per_sec)                   AS min_ops_per_sec,
    max(f.ops_per_sec)                   AS max_ops_per_sec,
    stddevSampStable(f.ops_per_sec)      AS stddev_ops_per_sec,
    median(f.avg_us)                     AS median_avg_us,
    median(f.p50_us)                     AS median_p50_us,
    median(f.p95_us)                     AS median_p95_us,
    median(f.p99_us)                     AS median_p99_us,
    min(f.p99_us)                        AS min_p99_us,
    max(f.p99_us)                        AS max_p99_us,
    stddevSampStable(f.p99_us)           AS stddev_p99_us,
    median(f.p999_us)                    AS median_p999_us,
    median(f.error_rate)                 AS median_error_rate,
    median(f.cache_hit_ratio)            AS median_cache_hit_ratio
FROM {db}.run_op_figures AS f
WHERE f.group_id != ''
GROUP BY f.group_id, f.workload, f.op;

-- Sweep points (benchstream sweep labels every run sweep=<id>,
-- sweep.param=<what varies>, point=<value>): throughput and percentiles per
-- point, x as a number for the chart.
CREATE OR REPLACE VIEW {db}.sweep_points AS
SELECT
    labels['sweep']                    AS sweep_id,
    labels['sweep.param']              AS param,
    labels['point']                    AS point,
    toFloat64OrNull(labels['point'])   AS x,
    run_id,
    started_at,
    op,
    ops_per_sec,
    p50_us,
    p95_us,
    p99_us,
    p999_us,
    error_rate
FROM {db}.run_op_figures
WHERE labels['sweep'] != '';
