-- Benchstream's ClickHouse schema, version 6: CPU profiles of runs.
-- {db} is replaced by CLICKHOUSE_DATABASE. Every statement is safe to re-run.
-- A profile is folded stacks with sample counts (async-profiler's collapsed
-- output, perf script collapsed by services/core/profiles/perf-script.ts, or
-- PROFILE records from Kafka), tagged with a run, labels (host, process) and
-- the time slices its samples cover. Written by `benchstream profile attach`
-- (services/adapters/clickhouse/profile-store.ts) and by the processor
-- (services/adapters/clickhouse/window-store.ts).

-- Every distinct stack once, keyed by the first 8 bytes of SHA-256 over its
-- frames joined by ';' (services/core/profiles/profile.ts stackId). Writers
-- insert only ids they do not find; a race can write one twice with the same
-- frames, which the engine folds on merge: read with any(frames) ... GROUP BY.
CREATE TABLE IF NOT EXISTS {db}.profile_stacks
(
    stack_id    UInt64,
    frames      Array(String),
    depth       UInt16,
    first_seen  DateTime64(3, 'UTC') DEFAULT now64(3)
)
ENGINE = ReplacingMergeTree
ORDER BY stack_id
SETTINGS non_replicated_deduplication_window = 10000;

-- Samples per profile, time slice and stack: the rows flame graphs sum.
-- window_start is the start of the slice the samples were taken in (a file
-- is one slice, a streamed profile one per record); selections by time take
-- slices by their start, as op_windows are taken by window_start.
CREATE TABLE IF NOT EXISTS {db}.profile_samples
(
    run_id        LowCardinality(String),
    profile_id    String,
    window_start  DateTime64(3, 'UTC'),
    stack_id      UInt64,
    count         UInt64
)
ENGINE = MergeTree
ORDER BY (run_id, profile_id, window_start, stack_id)
SETTINGS non_replicated_deduplication_window = 10000;

-- One row per profile and time slice: what the samples are of. Written last,
-- so a profile is visible once its samples are in.
CREATE TABLE IF NOT EXISTS {db}.profile_slices
(
    profile_id    String,
    run_id        LowCardinality(String),
    labels        Map(LowCardinality(String), String),
    event         LowCardinality(String),
    interval_ns   UInt64,
    source        LowCardinality(String),
    origin        String,
    window_start  DateTime64(3, 'UTC'),
    window_ms     UInt64,
    samples       UInt64,
    stacks        UInt32,
    cpu_ms        Nullable(Float64),
    src_partition Int32,
    src_offset    Int64,
    inserted_at   DateTime64(3, 'UTC') DEFAULT now64(3)
)
ENGINE = MergeTree
ORDER BY (run_id, profile_id, window_start)
SETTINGS non_replicated_deduplication_window = 10000;

-- One row per profile.
CREATE VIEW IF NOT EXISTS {db}.profiles AS
SELECT
    profile_id,
    any(run_id)                                                       AS run_id,
    any(labels)                                                       AS labels,
    any(event)                                                        AS event,
    any(interval_ns)                                                  AS interval_ns,
    any(source)                                                       AS source,
    min(window_start)                                                 AS from_time,
    max(window_start + toIntervalMillisecond(window_ms))              AS to_time,
    sum(samples)                                                      AS samples,
    count()                                                           AS slices,
    sum(cpu_ms)                                                       AS cpu_ms
FROM {db}.profile_slices
GROUP BY profile_id;
