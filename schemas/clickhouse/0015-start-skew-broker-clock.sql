-- Benchstream's ClickHouse schema, version 15: a run's start skew on the
-- broker's clock. {db} is replaced by CLICKHOUSE_DATABASE. Every statement is
-- safe to re-run.
--
-- Version 10 took the spread of the clients' first operations as each
-- client's own clock read them: a machine whose clock is off by d moved its
-- client's start by d in that spread although the agent started it at the
-- right instant (seen with libfaketime, +30 ms: a skew of 30 ms for runs that
-- started within 5). Each client's first operation is now taken less its
-- machine's clock offset, which its start record carries; the rest of the
-- view is as version 14 left it (one-per-run fields by the first client_id).
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
    k.start_skew_ms                AS start_skew_ms,
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
        argMinIf(labels, client_id, phase = 'start') AS labels,
        argMinIf(workload, client_id, phase = 'start') AS workload,
        argMinIf(binding, client_id, phase = 'start') AS binding,
        sumMapIf(sent, phase = 'end')                      AS sent,
        sumIf(undelivered, phase = 'end')                  AS undelivered,
        maxIf(runtime_ms, phase = 'end')                   AS runtime_ms,
        argMinIf(group_id, client_id, phase = 'start') AS group_id,
        maxIf(repeat, phase = 'start')                     AS repeat,
        argMinIf(properties, client_id, phase = 'start') AS properties,
        maxIf(schedule_lag_max_ms, phase = 'end')          AS schedule_lag_max_ms,
        sumIf(behind_schedule_episodes, phase = 'end')     AS behind_schedule_episodes,
        maxIf(expected_clients, phase = 'start')           AS expected_clients,
        maxIf(abs(clock_offset_ms), phase = 'start')       AS clock_offset_max_ms
    FROM {db}.run_clients
    GROUP BY run_id
) AS c ON c.run_id = s.run_id
LEFT JOIN
(
    -- Each client's first operation on the broker's clock: its own clock's reading less its machine's offset
    -- (clock_offset_ms of its start record, 0 for a client without one).
    SELECT run_id,
           if(countIf(first_us IS NOT NULL) < 2, NULL, (max(first_us) - min(first_us)) / 1000) AS start_skew_ms
    FROM
    (
        SELECT run_id,
               client_id,
               toUnixTimestamp64Micro(minIf(first_op_at, phase = 'end'))
                 - toInt64(round(ifNull(anyIf(clock_offset_ms, phase = 'start'), 0) * 1000)) AS first_us
        FROM {db}.run_clients
        GROUP BY run_id, client_id
    )
    GROUP BY run_id
) AS k ON k.run_id = s.run_id
SETTINGS join_use_nulls = 1;
