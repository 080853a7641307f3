-- Benchstream's ClickHouse schema, version 10: experiments. {db} is replaced
-- by CLICKHOUSE_DATABASE. Every statement is safe to re-run.

-- What a client of an experiment's run says beyond version 5: how many
-- clients the run has (so a client that never ended is seen), its machine's
-- clock offset from the broker's as its agent measured it, and when its first
-- operation started (the skew between the clients' starts).
ALTER TABLE {db}.run_clients ADD COLUMN IF NOT EXISTS expected_clients UInt32 DEFAULT 0;
ALTER TABLE {db}.run_clients ADD COLUMN IF NOT EXISTS clock_offset_ms Nullable(Float64);
ALTER TABLE {db}.run_clients ADD COLUMN IF NOT EXISTS first_op_at Nullable(DateTime64(6, 'UTC'));

-- Experiments as the coordinator stores them through the API: the whole
-- state of each as JSON (schemas/experiment-state.v1.ts ExperimentState), the
-- highest version kept.
CREATE TABLE IF NOT EXISTS {db}.experiments
(
    experiment_id String,
    name          String,
    status        LowCardinality(String),
    created_at    DateTime64(3, 'UTC'),
    updated_at    DateTime64(3, 'UTC'),
    version       UInt64,
    state         String CODEC(ZSTD(3))
)
ENGINE = ReplacingMergeTree(version)
ORDER BY experiment_id;

-- One row per run (as version 5) and, new: the clients it was to have, the
-- spread of its clients' first operations, and its clients' largest clock
-- offset (absolute).
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
    ifNull(c.behind_schedule_episodes, 0) AS behind_schedule_episodes,
    ifNull(c.expected_clients, 0)  AS expected_clients,
    c.start_skew_ms                AS start_skew_ms,
    c.clock_offset_max_ms          AS clock_offset_max_ms
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
        sumIf(behind_schedule_episodes, phase = 'end')     AS behind_schedule_episodes,
        maxIf(expected_clients, phase = 'start')           AS expected_clients,
        if(countIf(phase = 'end' AND first_op_at IS NOT NULL) < 2, NULL,
           dateDiff('microsecond', minIf(first_op_at, phase = 'end'), maxIf(first_op_at, phase = 'end')) / 1000)
                                                           AS start_skew_ms,
        maxIf(abs(clock_offset_ms), phase = 'start')       AS clock_offset_max_ms
    FROM {db}.run_clients
    GROUP BY run_id
) AS c ON c.run_id = s.run_id
SETTINGS join_use_nulls = 1;
