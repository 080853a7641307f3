-- Benchstream's ClickHouse schema, version 2: alert incidents.
-- {db} is replaced by CLICKHOUSE_DATABASE. Every statement is safe to re-run.
-- One row per state change of an incident (firing, then resolved), written by
-- the alerts service (services/alerts/) after it has notified. The fingerprint
-- identifies the incident (rule, run, op, start); a restarted service reads
-- the latest state per fingerprint so that it does not notify twice. Inserts
-- carry insert_deduplication_token = alerts:<fingerprint>:<state>, so the
-- same change written twice is stored once.

CREATE TABLE IF NOT EXISTS {db}.alerts
(
    rule          LowCardinality(String),
    rule_type     LowCardinality(String),
    severity      LowCardinality(String),
    run_id        String,
    op            LowCardinality(String),
    state         Enum8('firing' = 1, 'resolved' = 2),
    starts_at     DateTime64(3, 'UTC'),
    ends_at       Nullable(DateTime64(3, 'UTC')),
    at_window     DateTime64(3, 'UTC'),
    value         Float64,
    threshold     Float64,
    summary       String,
    description   String,
    fingerprint   String,
    notified_at   Nullable(DateTime64(3, 'UTC')),
    inserted_at   DateTime64(3, 'UTC') DEFAULT now64(3)
)
ENGINE = MergeTree
ORDER BY (run_id, fingerprint, state)
SETTINGS non_replicated_deduplication_window = 10000;
