-- Ad hoc percentiles for any time range of a run, merged over clients:
--   SELECT * FROM benchstream.op_percentiles(run_id = 'r1', from = '2026-12-02 10:00:00', to = '2026-12-02 10:05:00')
-- Windows are selected by their start; percentiles come from merged buckets.
CREATE VIEW IF NOT EXISTS {db}.op_percentiles AS
SELECT
    run_id,
    op,
    sum(count)                                   AS operations,
    sum(errors)                                  AS errors,
    sum(count) / greatest(1, dateDiff('millisecond', min(window_start), max(window_start)) / 1000
                             + any(window_ms) / 1000) AS ops_per_sec,
    sum(sum_us) / sum(count)                     AS avg_us,
    min(min_us)                                  AS min_us,
    max(max_us)                                  AS max_us,
    sumMap(hist)                                 AS merged_hist,
    bs_quantile(0.50, merged_hist)               AS p50_us,
    bs_quantile(0.90, merged_hist)               AS p90_us,
    bs_quantile(0.95, merged_hist)               AS p95_us,
    bs_quantile(0.99, merged_hist)               AS p99_us,
    bs_quantile(0.999, merged_hist)              AS p999_us,
    bs_quantile(0.9999, merged_hist)             AS p9999_us,
    bs_quantile(0.99, sumMap(intended_hist))     AS intended_p99_us
FROM {db}.op_windows
WHERE run_id = {run_id:String} AND window_start >= {from:DateTime64(3)} AND window_start < {to:DateTime64(3)}
GROUP BY run_id, op;
