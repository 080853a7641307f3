-- Benchstream's ClickHouse schema, version 12: silences, and alerts folded
-- into incidents for people (the API, the CLI, the live view, Grafana).
-- {db} is replaced by CLICKHOUSE_DATABASE. Every statement is safe to re-run.

-- The silence that held an incident's webhook back ('' when none), decided
-- when it fired and kept on its resolved row (services/core/alerting/silences.ts).
ALTER TABLE {db}.alerts ADD COLUMN IF NOT EXISTS silenced_by String DEFAULT '' AFTER notified_at;

-- Silences, Alertmanager's model: matchers on the alert's labels (alertname,
-- run_id, op, severity) and a time range. One row per version: an expiry
-- writes the silence again with its new end, and readers take the row with
-- the latest updated_at per id. ends_at NULL: a silence for a run, without
-- an end (it names the run in a run_id matcher).
CREATE TABLE IF NOT EXISTS {db}.silences
(
    id          String,
    matchers    Nested(name LowCardinality(String), value String, is_equal UInt8),
    starts_at   DateTime64(3, 'UTC'),
    ends_at     Nullable(DateTime64(3, 'UTC')),
    created_by  String,
    comment     String,
    updated_at  DateTime64(3, 'UTC')
)
ENGINE = MergeTree
ORDER BY (id, updated_at);

-- One row per incident (rule, run, operation, start) with its latest state:
--   state             resolved once a resolved row exists, else firing
--   starts_at         start of the first breaching window; ends_at NULL while firing
--   value, threshold, summary, description   of the firing row (why it fired)
--   resolved_summary  how it ended ('' while firing)
--   silenced_by       the silence that held its webhook back ('' when none)
CREATE OR REPLACE VIEW {db}.alert_incidents AS
SELECT
    run_id,
    fingerprint,
    any(a_rule)                             AS rule,
    any(a_rule_type)                        AS rule_type,
    any(a_severity)                         AS severity,
    any(a_op)                               AS op,
    max(a_state)                            AS state,
    min(a_starts_at)                        AS starts_at,
    maxIf(a_ends_at, a_state = 'resolved')  AS ends_at,
    argMin(a_value, a_state)                AS value,
    argMin(a_threshold, a_state)            AS threshold,
    argMin(a_summary, a_state)              AS summary,
    argMin(a_description, a_state)          AS description,
    anyIf(a_summary, a_state = 'resolved')  AS resolved_summary,
    argMin(a_silenced_by, a_state)          AS silenced_by
FROM
(
    -- Renamed, so that the aggregates' names above do not shadow the columns they read.
    SELECT run_id, fingerprint, rule AS a_rule, rule_type AS a_rule_type, severity AS a_severity, op AS a_op,
           state AS a_state, starts_at AS a_starts_at, ends_at AS a_ends_at, value AS a_value,
           threshold AS a_threshold, summary AS a_summary, description AS a_description, silenced_by AS a_silenced_by
    FROM {db}.alerts
)
GROUP BY run_id, fingerprint;
