/**
 * "Benchstream — sweep": runs that share a label key (threads, target,
 * version, ...) side by side, throughput and p99 against the label's value.
 * Values sort numerically when they are numbers, else as text. Runs are
 * those active in the time range; each run counts whole.
 */
import { DashboardBuilder, type Dashboard } from '@grafana/grafana-foundation-sdk/dashboard'
import { barChartPanel, datasourceVariable, finishDashboard, indentTail, queryVariable, runsInRangeWhere, sql, SQL_FORMAT, sqlTarget, tablePanel, UNITS, withSections, type DashboardConfig } from './common.js'

export const SWEEP_UID = 'benchstream-sweep'

const LABEL = '${label:singlequote}'
const WORKLOAD = '${workload:singlequote}'
/** The workload choice meaning "any workload" (a workload name never starts with *). */
export const ANY_WORKLOAD = '*'

export function sweepDashboard(cfg: DashboardConfig): Dashboard {
  const db = cfg.database

  // One row per matching run: its label value, throughput as the run report computes it, merged histogram.
  const perRun = sql`
    SELECT r.run_id AS run_id, r.labels[${LABEL}] AS value, r.workload AS workload, r.clients AS clients, r.threads AS threads, r.started_at AS started_at,
           w.operations * 1000 / if(r.runtime_ms > 0, toFloat64(r.runtime_ms), w.span_ms) AS ops_per_s,
           w.avg_us AS avg_us, w.h AS h
    FROM
    (
        SELECT run_id, labels, workload, clients, threads, started_at, runtime_ms
        FROM ${db}.runs
        WHERE ${runsInRangeWhere()}
          AND mapContains(labels, ${LABEL})
          AND (${WORKLOAD} = '${ANY_WORKLOAD}' OR workload = ${WORKLOAD})
    ) AS r
    INNER JOIN
    (
        SELECT run_id, sum(count) AS operations, sum(sum_us) / sum(count) AS avg_us, sumMap(hist) AS h,
               (toUnixTimestamp64Micro(max(last_end)) - toUnixTimestamp64Micro(min(first_start))) / 1000 AS span_ms
        FROM ${db}.op_windows
        WHERE run_id IN (SELECT run_id FROM ${db}.runs WHERE ${runsInRangeWhere()} AND mapContains(labels, ${LABEL}))
        GROUP BY run_id
    ) AS w ON w.run_id = r.run_id`
  const numericOrder = 'toFloat64OrNull(value) ASC NULLS LAST, value'

  const table = tablePanel(cfg, 'Runs by ${label}', 'One row per run that has the label, sorted by its value. Throughput = operations / run time as in the run report; latencies from the merged histogram of all operations, clients and outcomes.')
    .withTarget(sqlTarget(cfg, 'A', SQL_FORMAT.table, sql`
      SELECT value, run_id, workload, clients, threads, ops_per_s, avg_us,
             bs_quantile(0.5, h) AS p50_us, bs_quantile(0.99, h) AS p99_us
      FROM
      (
          ${indentTail(perRun, 10)}
      )
      ORDER BY ${numericOrder}, started_at, run_id`))
    .overrideByName('ops_per_s', [{ id: 'unit', value: UNITS.throughput }, { id: 'decimals', value: 1 }])
    .overrideByRegexp('.*_us$', [{ id: 'unit', value: UNITS.latency }, { id: 'decimals', value: 1 }])
    .overrideByName('value', [{ id: 'displayName', value: '${label}' }])

  // Per label value: several runs with one value (repeats) merge: mean throughput, p99 of the merged histograms.
  const perValue = (column: string, expression: string): string => sql`
    SELECT value, ${expression} AS ${column}
    FROM
    (
        ${indentTail(perRun, 8)}
    )
    GROUP BY value
    ORDER BY ${numericOrder}`

  const charts = [
    barChartPanel(cfg, 'Throughput by ${label}', UNITS.throughput, 'value', 'Mean throughput of the runs with each value.')
      .withTarget(sqlTarget(cfg, 'A', SQL_FORMAT.table, perValue('ops_per_s', 'avg(ops_per_s)'))),
    barChartPanel(cfg, 'p99 latency by ${label}', UNITS.latency, 'value', 'p99 of the merged histograms of the runs with each value.')
      .withTarget(sqlTarget(cfg, 'A', SQL_FORMAT.table, perValue('p99_us', 'bs_quantile(0.99, sumMap(h))'))),
  ]

  const builder = new DashboardBuilder('Benchstream — sweep')
    .uid(SWEEP_UID)
    .description('Runs sharing a label, throughput and p99 against the label value.')
    .tags(['benchstream'])
    .editable()
    .timezone('browser')
    // The range chooses the runs of the sweep (each counts whole): a sweep is usually run
    // in one sitting, so the last day's by default; widen it for a sweep spread over days.
    .time({ from: 'now-24h', to: 'now' })
    .annotations([])
    .withVariable(datasourceVariable(cfg))
    .withVariable(
      queryVariable(cfg, 'label', 'Label', 'Label keys of the runs active in the time range.', sql`
        SELECT DISTINCT arrayJoin(mapKeys(labels)) AS label
        FROM ${db}.runs
        WHERE ${runsInRangeWhere()}
        ORDER BY label`),
    )
    .withVariable(
      queryVariable(cfg, 'workload', 'Workload', `Workload of the runs; ${ANY_WORKLOAD} = any.`, sql`
        SELECT workload
        FROM
        (
            SELECT '${ANY_WORKLOAD}' AS workload, 0 AS k
            UNION ALL
            SELECT DISTINCT workload, 1 AS k
            FROM ${db}.runs
            WHERE ${runsInRangeWhere()} AND mapContains(labels, ${LABEL})
        )
        ORDER BY k, workload`),
    )
  withSections(builder, [
    ['Runs', [table]],
    ['By value', charts],
  ])
  return finishDashboard(builder.build(), cfg)
}
