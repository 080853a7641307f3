-- Benchstream's ClickHouse schema, version 8: final reports of old runs, as reported.
-- {db} is replaced by CLICKHOUSE_DATABASE. Every statement is safe to re-run.
-- A YCSB text or JSON report (`benchstream import-ycsb report.txt`) holds
-- summary figures only: counts, average, min, max and the percentiles it
-- printed. They reach this table as SUMMARY_REPORT records through Kafka,
-- written by the processor like every other table (one writer, the same
-- exactly-once flush), one row per client and measurement, origin
-- 'reported': YCSB computed them, Benchstream did not, and a percentile of
-- one client cannot be merged with another client's.

CREATE TABLE IF NOT EXISTS {db}.reported_measurements
(
    run_id          LowCardinality(String),
    client_id       LowCardinality(String),
    -- The measurement as printed: READ, READ-FAILED, Intended-UPDATE, CLEANUP.
    measurement     LowCardinality(String),
    -- operation | cleanup (never counted as an operation) | other (a binding's own name)
    kind            LowCardinality(String),
    op              LowCardinality(String),
    -- measured | intended (from the scheduled start)
    latency         LowCardinality(String),
    status          LowCardinality(String),
    origin          LowCardinality(String) DEFAULT 'reported',
    -- text | json-array | json-objects | raw
    format          LowCardinality(String),
    source          String,
    imported_at     DateTime64(6, 'UTC'),
    -- The client's [OVERALL] figures, on each of its rows.
    runtime_ms      Nullable(Float64),
    throughput      Nullable(Float64),
    operations      Nullable(UInt64),
    average_us      Nullable(Float64),
    min_us          Nullable(Float64),
    max_us          Nullable(Float64),
    -- Percentile in percent as printed ('95', '99.9') -> µs.
    percentiles_us  Map(String, Float64),
    -- Percentiles printed in whole ms (YCSB 0.1.0 to 0.3.1): their resolution is 1000 µs.
    percentiles_in_ms UInt8,
    returns         Map(String, UInt64),
    src_partition   UInt16,
    src_offset      UInt64
)
ENGINE = MergeTree
ORDER BY (run_id, measurement, client_id)
SETTINGS non_replicated_deduplication_window = 10000;

-- One row per run and measurement over its clients: counts add up, averages
-- combine weighted by operations, min and max combine; percentiles only
-- when a single client reported the measurement (percentiles_per_client = 1
-- otherwise: read them per client from reported_measurements).
CREATE VIEW IF NOT EXISTS {db}.reported_summary AS
SELECT
    m.run_id                                               AS run_id,
    m.measurement                                          AS measurement,
    any(m.kind)                                            AS kind,
    any(m.op)                                              AS op,
    any(m.latency)                                         AS latency,
    'reported'                                             AS origin,
    uniqExact(m.client_id)                                 AS clients,
    sum(m.operations)                                      AS operations,
    if(sumIf(m.operations, m.average_us IS NOT NULL) > 0,
       sumIf(m.average_us * m.operations, m.average_us IS NOT NULL) / sumIf(m.operations, m.average_us IS NOT NULL),
       NULL)                                               AS average_us,
    min(m.min_us)                                          AS min_us,
    max(m.max_us)                                          AS max_us,
    if(uniqExact(m.client_id) = 1, any(m.percentiles_us), CAST(map(), 'Map(String, Float64)')) AS percentiles_us,
    uniqExact(m.client_id) > 1                             AS percentiles_per_client,
    sumMap(m.returns)                                      AS returns,
    max(m.runtime_ms)                                      AS runtime_ms
FROM {db}.reported_measurements AS m
GROUP BY m.run_id, m.measurement;
