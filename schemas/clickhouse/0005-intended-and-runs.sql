-- Benchstream's ClickHouse schema, version 5: intended latency and schedule
-- lag everywhere a run is summarised, and a percentile view that takes
-- seconds since the run's start. {db} is replaced by CLICKHOUSE_DATABASE.
-- Every statement is safe to re-run.

-- What a driver says at its end about keeping its schedule (-target): the
-- largest delay of an operation's start behind its scheduled start, and how
-- many separate times it fell behind by more than its bound.
ALTER TABLE {db}.run_clients ADD COLUMN IF NOT EXISTS schedule_lag_max_ms Float64 DEFAULT 0;
ALTER TABLE {db}.run_clients ADD COLUMN IF NOT EXISTS behind_schedule_episodes UInt32 DEFAULT 0;

-- One row per run that reached a processor (as version 4) and, new: its
-- group and repetition, the workload properties it ran with, and whether any
-- client fell behind its schedule.
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
    s.window_ms                    AS window_ms,
    ifNull(c.group_id, '')         AS group_id,
    ifNull(c.repeat, 0)            AS repeat,
    c.properties                   AS properties,
    ifNull(c.schedule_lag_max_ms, 0)      AS schedule_lag_max_ms,
    ifNull(c.behind_schedule_episodes, 0) AS behind_schedule_episodes
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
        maxIf(runtime_ms, phase = 'end')                   AS runtime_ms,
        anyIf(group_id, phase = 'start')                   AS group_id,
        maxIf(repeat, phase = 'start')                     AS repeat,
        anyIf(properties, phase = 'start')                 AS properties,
        maxIf(schedule_lag_max_ms, phase = 'end')          AS schedule_lag_max_ms,
        sumIf(behind_schedule_episodes, phase = 'end')     AS behind_schedule_episodes
    FROM {db}.run_clients
    GROUP BY run_id
) AS c ON c.run_id = s.run_id
SETTINGS join_use_nulls = 1;

-- Percentiles of one run over a stretch of it, measured and intended, given
-- in seconds since the run's start (its first window):
--   SELECT * FROM benchstream.op_percentiles(run_id = 'r1', from_s = 60, to_s = 120)
-- Whole µs, never above the maximum, by the rank rule of version 4. The
-- merged histograms stay inside the view (a raw map is no answer to a person).
CREATE OR REPLACE VIEW {db}.op_percentiles AS
SELECT
    run_id,
    op,
    operations,
    errors,
    ops_per_sec,
    avg_us,
    min_us,
    max_us,
    least(bs_quantile(0.50, h), max_us)    AS p50_us,
    least(bs_quantile(0.90, h), max_us)    AS p90_us,
    least(bs_quantile(0.95, h), max_us)    AS p95_us,
    least(bs_quantile(0.99, h), max_us)    AS p99_us,
    least(bs_quantile(0.999, h), max_us)   AS p999_us,
    least(bs_quantile(0.9999, h), max_us)  AS p9999_us,
    intended_avg_us,
    intended_max_us,
    least(bs_quantile(0.50, ih), intended_max_us)  AS intended_p50_us,
    least(bs_quantile(0.95, ih), intended_max_us)  AS intended_p95_us,
    least(bs_quantile(0.99, ih), intended_max_us)  AS intended_p99_us,
    least(bs_quantile(0.999, ih), intended_max_us) AS intended_p999_us
FROM
(
    SELECT
        run_id,
        op,
        sum(count)                   AS operations,
        sum(errors)                  AS errors,
        sum(count) / greatest(1, dateDiff('millisecond', min(window_start), max(window_start)) / 1000
            + (SELECT any(window_ms) FROM {db}.runs WHERE run_id = {run_id:String}) / 1000) AS ops_per_sec,
        sum(sum_us) / sum(count)     AS avg_us,
        min(min_us)                  AS min_us,
        max(max_us)                  AS max_us,
        sumMap(hist)                 AS h,
        sum(intended_sum_us) / sum(count) AS intended_avg_us,
        max(intended_max_us)         AS intended_max_us,
        sumMap(intended_hist)        AS ih
    FROM {db}.op_windows
    WHERE run_id = {run_id:String}
      AND window_start >= (SELECT min(window_start) FROM {db}.op_windows WHERE run_id = {run_id:String})
                          + toIntervalMillisecond(toInt64({from_s:Float64} * 1000))
      AND window_start <  (SELECT min(window_start) FROM {db}.op_windows WHERE run_id = {run_id:String})
                          + toIntervalMillisecond(toInt64({to_s:Float64} * 1000))
    GROUP BY run_id, op
);

-- The run summary with intended latency beside the measured one.
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
    sum(intended_sum_us) / sum(count)            AS intended_avg_us,
    max(intended_max_us)                         AS intended_max_us,
    least(bs_quantile(0.99, sumMap(intended_hist)), intended_max_us)  AS intended_p99_us,
    least(bs_quantile(0.999, sumMap(intended_hist)), intended_max_us) AS intended_p999_us,
    sum(cache_hits)                              AS cache_hits,
    sum(cache_misses)                            AS cache_misses,
    if(cache_hits + cache_misses = 0, NULL, cache_hits / (cache_hits + cache_misses)) AS cache_hit_ratio,
    sum(late_events)                             AS late_events,
    min(first_start)                             AS first_start,
    max(last_end)                                AS last_end
FROM {db}.op_windows
GROUP BY run_id, op;
