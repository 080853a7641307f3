-- Benchstream's ClickHouse schema, version 1.
-- {db} is replaced by CLICKHOUSE_DATABASE. Every statement is safe to re-run.
-- Tables written by the processor carry the Kafka partition and offsets their
-- rows came from, and use non_replicated_deduplication_window so that an
-- insert repeated after a crash (same insert_deduplication_token) is dropped.
-- No PARTITION BY: one insert must stay one part, or deduplication and
-- atomicity would be per partition instead of per insert.

CREATE DATABASE IF NOT EXISTS {db};

-- Histogram bucket index -> representative value in µs (the midpoint of the
-- bucket). Same layout as services/core/stats/histogram.ts: 0..255 exact, then 128
-- linear sub-buckets per power of two.
CREATE FUNCTION IF NOT EXISTS bs_bucket_value AS (i) ->
  if(i < 256, toFloat64(i),
     toFloat64(bitShiftLeft(toUInt64(i) - (intDiv(toUInt64(i), 128) - 1) * 128, intDiv(toUInt64(i), 128) - 1))
     + (toFloat64(bitShiftLeft(toUInt64(1), intDiv(toUInt64(i), 128) - 1)) - 1) / 2);

-- Quantile q (0..1) of a merged histogram Map(bucket, count): the bucket
-- holding rank max(1, ceil(q*n)). Merge first (sumMap), then call this; never
-- average or max percentiles.
CREATE FUNCTION IF NOT EXISTS bs_quantile AS (q, h) ->
  bs_bucket_value(arrayElement(mapKeys(mapSort(h)),
    arrayFirstIndex(c -> c >= greatest(1, ceil(q * arraySum(mapValues(h)) - 1e-7)),
                    arrayCumSum(mapValues(mapSort(h))))));

-- Partial event-time windows per (run, client, operation, status). Several
-- rows may exist for one window (flushes of open windows, late events, other
-- partitions): always aggregate (sum, min, max, sumMap).
CREATE TABLE IF NOT EXISTS {db}.op_windows
(
    run_id           LowCardinality(String),
    client_id        LowCardinality(String),
    op               LowCardinality(String),
    status           LowCardinality(String),
    window_start     DateTime64(3, 'UTC') CODEC(DoubleDelta, ZSTD(1)),
    window_ms        UInt32,
    count            UInt64,
    errors           UInt64,
    sum_us           UInt64,
    min_us           UInt64,
    max_us           UInt64,
    intended_sum_us  UInt64,
    intended_max_us  UInt64,
    cache_hits       UInt64,
    cache_misses     UInt64,
    bytes            UInt64,
    hist             Map(UInt16, UInt64),
    intended_hist    Map(UInt16, UInt64),
    late_events      UInt64,
    first_start      DateTime64(6, 'UTC'),
    last_end         DateTime64(6, 'UTC'),
    src_partition    UInt16,
    src_first_offset UInt64,
    src_last_offset  UInt64,
    inserted_at      DateTime64(3, 'UTC') DEFAULT now64(3)
)
ENGINE = MergeTree
ORDER BY (run_id, op, window_start, client_id, status)
SETTINGS non_replicated_deduplication_window = 10000;

-- Raw events, one row per operation, for exact checks and ad hoc digging.
-- TTL is applied from BENCHSTREAM_OPS_TTL_DAYS at start-up (0 = keep).
CREATE TABLE IF NOT EXISTS {db}.ops
(
    run_id        LowCardinality(String),
    client_id     LowCardinality(String),
    thread        UInt16,
    op            LowCardinality(String),
    start         DateTime64(6, 'UTC') CODEC(DoubleDelta, ZSTD(1)),
    latency_us    UInt32 CODEC(T64, ZSTD(1)),
    intended_us   UInt32 CODEC(T64, ZSTD(1)),
    status        LowCardinality(String),
    cache         Enum8('UNKNOWN' = 0, 'HIT' = 1, 'MISS' = 2),
    bytes         UInt32 CODEC(T64, ZSTD(1)),
    src_partition UInt16,
    src_offset    UInt64
)
ENGINE = MergeTree
ORDER BY (run_id, op, start)
SETTINGS non_replicated_deduplication_window = 10000;

-- Run lifecycle records from drivers: one 'start' and one 'end' per client.
CREATE TABLE IF NOT EXISTS {db}.run_clients
(
    run_id        LowCardinality(String),
    client_id     LowCardinality(String),
    phase         LowCardinality(String),
    at            DateTime64(6, 'UTC'),
    labels        Map(LowCardinality(String), String),
    workload      String,
    binding       LowCardinality(String),
    threads       UInt32,
    target        Float64,
    sent          Map(LowCardinality(String), UInt64),
    undelivered   UInt64,
    runtime_ms    UInt64,
    src_partition UInt16,
    src_offset    UInt64
)
ENGINE = MergeTree
ORDER BY (run_id, client_id, phase, at)
SETTINGS non_replicated_deduplication_window = 10000;

-- One row per run: what the drivers announced.
CREATE VIEW IF NOT EXISTS {db}.runs AS
SELECT
    run_id,
    minIf(at, phase = 'start')                         AS started_at,
    if(countIf(phase = 'end') = uniqExactIf(client_id, phase = 'start'), maxIf(at, phase = 'end'), NULL) AS ended_at,
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
GROUP BY run_id;

-- Server-side metric samples (cumulative counters) from the drivers' samplers.
CREATE TABLE IF NOT EXISTS {db}.server_metrics
(
    run_id        LowCardinality(String),
    client_id     LowCardinality(String),
    at            DateTime64(6, 'UTC'),
    source        LowCardinality(String),
    name          LowCardinality(String),
    value         Float64,
    src_partition UInt16,
    src_offset    UInt64
)
ENGINE = MergeTree
ORDER BY (run_id, name, at)
SETTINGS non_replicated_deduplication_window = 10000;

-- What the processor rejected, by reason (the dead-letter topic has the bytes).
CREATE TABLE IF NOT EXISTS {db}.dead_letters
(
    at            DateTime64(3, 'UTC') DEFAULT now64(3),
    src_partition UInt16,
    src_offset    UInt64,
    reason        LowCardinality(String),
    run_id        String,
    events        UInt64,
    detail        String
)
ENGINE = MergeTree
ORDER BY (reason, src_partition, src_offset)
SETTINGS non_replicated_deduplication_window = 10000;

-- Per run and operation, merged over clients, statuses and time.
CREATE VIEW IF NOT EXISTS {db}.run_summary AS
SELECT
    run_id,
    op,
    sum(count)                                   AS operations,
    sum(errors)                                  AS errors,
    sum(sum_us) / sum(count)                     AS avg_us,
    min(min_us)                                  AS min_us,
    max(max_us)                                  AS max_us,
    sumMap(hist)                                 AS merged_hist,
    bs_quantile(0.50, merged_hist)               AS p50_us,
    bs_quantile(0.90, merged_hist)               AS p90_us,
    bs_quantile(0.95, merged_hist)               AS p95_us,
    bs_quantile(0.99, merged_hist)               AS p99_us,
    bs_quantile(0.999, merged_hist)              AS p999_us,
    bs_quantile(0.99, sumMap(intended_hist))     AS intended_p99_us,
    sum(cache_hits)                              AS cache_hits,
    sum(cache_misses)                            AS cache_misses,
    if(cache_hits + cache_misses = 0, NULL, cache_hits / (cache_hits + cache_misses)) AS cache_hit_ratio,
    sum(late_events)                             AS late_events,
    min(first_start)                             AS first_start,
    max(last_end)                                AS last_end
FROM {db}.op_windows
GROUP BY run_id, op;
