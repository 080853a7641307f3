/**
 * "Benchstream — sweep": runs that share a label key (threads, target,
 * version, ...) side by side, throughput and p99 against the label's value;
 * groups of repetitions with their median and range; benchstream sweep's
 * points and curve.
 * Values sort numerically when they are numbers, else as text. Runs are
 * those active in the time range; each run counts whole.
 */
import { DashboardBuilder, type Dashboard } from '@grafana/grafana-foundation-sdk/dashboard'
import {
  alertsAnnotation,
  barChartPanel,
  datasourceVariable,
  finishDashboard,
  indentTail,
  queryVariable,
  runsInRangeWhere,
  sql,
  SQL_FORMAT,
  sqlTarget,
  tablePanel,
  trendPanel,
  UNITS,
  withSections,
  type DashboardConfig,
} from './common.js'

export const SWEEP_UID = 'benchstream-sweep'

const LABEL = '${label:singlequote}'
const WORKLOAD = '${workload:singlequote}'
/** The workload choice meaning "any workload" (a workload name never starts with *). */
export const ANY_WORKLOAD = '*'

export function sweepDashboard(cfg: DashboardConfig): Dashboard {
  const db = cfg.database

  // One row per matching run: its label value, throughput as the run report computes it, merged histogram.
  const perRun = sql`
    SELECT r.run_id AS run_id, r.labels[${LABEL}] AS value, r.workload AS workload,
           r.clients AS clients, r.threads AS threads, r.started_at AS started_at,
           w.operations * 1000 / if(r.runtime_ms > 0, toFloat64(r.runtime_ms), w.span_ms) AS ops_per_s,
           w.avg_us AS avg_us, w.h AS h, w.mx AS mx
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
               max(max_us) AS mx,
               (toUnixTimestamp64Micro(max(last_end)) - toUnixTimestamp64Micro(min(first_start))) / 1000 AS span_ms
        FROM ${db}.op_windows
        WHERE run_id IN (SELECT run_id FROM ${db}.runs WHERE ${runsInRangeWhere()} AND mapContains(labels, ${LABEL}))
        GROUP BY run_id
    ) AS w ON w.run_id = r.run_id`
  const numericOrder = 'toFloat64OrNull(value) ASC NULLS LAST, value'

  const table = tablePanel(
    cfg,
    'Runs by ${label}',
    'One row per run that has the label, sorted by its value. Throughput = operations / run time ' +
      'as in the run report; latencies from the merged histogram of all operations, clients and outcomes.',
  )
    .withTarget(
      sqlTarget(
        cfg,
        'A',
        SQL_FORMAT.table,
        sql`
      SELECT value, run_id, workload, clients, threads, ops_per_s, avg_us,
             least(bs_quantile(0.5, h), mx) AS p50_us, least(bs_quantile(0.99, h), mx) AS p99_us
      FROM
      (
          ${indentTail(perRun, 10)}
      )
      ORDER BY ${numericOrder}, started_at, run_id`,
      ),
    )
    .overrideByName('ops_per_s', [
      { id: 'unit', value: UNITS.throughput },
      { id: 'decimals', value: 1 },
    ])
    .overrideByRegexp('.*_us$', [
      { id: 'unit', value: UNITS.latency },
      { id: 'decimals', value: 1 },
    ])
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
    barChartPanel(
      cfg,
      'Throughput by ${label}',
      UNITS.throughput,
      'value',
      'Mean throughput of the runs with each value.',
    ).withTarget(sqlTarget(cfg, 'A', SQL_FORMAT.table, perValue('ops_per_s', 'avg(ops_per_s)'))),
    barChartPanel(
      cfg,
      'p99 latency by ${label}',
      UNITS.latency,
      'value',
      'p99 of the merged histograms of the runs with each value.',
    ).withTarget(
      sqlTarget(cfg, 'A', SQL_FORMAT.table, perValue('p99_us', 'least(bs_quantile(0.99, sumMap(h)), max(mx))')),
    ),
  ]

  // Groups of repetitions (run --repeat/--group) whose runs are active in the range: the
  // median of the runs' own figures and their range, Grafana's error bars (view group_op_figures).
  const groups = tablePanel(
    cfg,
    'Groups of repetitions: median and range',
    "One row per group and operation: the median over the group's runs of each run's own figure " +
      "(percentiles from the run's merged histogram, never averaged across runs) and the smallest " +
      'and largest run. Throughput of OVERALL counts every call, of an operation its successful calls. ' +
      'The samples benchstream compare tests.',
  )
    .withTarget(
      sqlTarget(
        cfg,
        'A',
        SQL_FORMAT.table,
        sql`
      SELECT group_id, workload, op, runs, median_ops_per_sec, min_ops_per_sec, max_ops_per_sec,
             median_p99_us, min_p99_us, max_p99_us
      FROM ${db}.group_op_figures
      WHERE group_id IN (SELECT group_id FROM ${db}.runs WHERE ${runsInRangeWhere()} AND group_id != '')
      ORDER BY first_started_at, group_id, op != 'OVERALL', op`,
      ),
    )
    .overrideByRegexp('.*ops_per_sec$', [
      { id: 'unit', value: UNITS.throughput },
      { id: 'decimals', value: 1 },
    ])
    .overrideByRegexp('.*_us$', [
      { id: 'unit', value: UNITS.latency },
      { id: 'decimals', value: 1 },
    ])

  // The points of benchstream sweep runs (labels sweep, sweep.param, point; view sweep_points).
  const sweepWhere =
    `sweep_id IN (SELECT labels['sweep'] FROM ${db}.runs WHERE ${runsInRangeWhere()} ` + `AND labels['sweep'] != '')`
  const points = tablePanel(
    cfg,
    'Sweep points',
    'benchstream sweep: one row per point of each sweep whose runs are active in the range, in the ' +
      "order of the swept value; all operations (OVERALL), from each run's merged histogram.",
  )
    .withTarget(
      sqlTarget(
        cfg,
        'A',
        SQL_FORMAT.table,
        sql`
      SELECT sweep_id, param, point, run_id, ops_per_sec, p50_us, p95_us, p99_us, error_rate
      FROM ${db}.sweep_points
      WHERE op = 'OVERALL' AND ${sweepWhere}
      ORDER BY sweep_id, x ASC NULLS LAST, point, started_at`,
      ),
    )
    .overrideByName('ops_per_sec', [
      { id: 'unit', value: UNITS.throughput },
      { id: 'decimals', value: 1 },
    ])
    .overrideByRegexp('.*_us$', [
      { id: 'unit', value: UNITS.latency },
      { id: 'decimals', value: 1 },
    ])
  // The curve of the newest sweep: throughput and p99 against the swept value (numeric points).
  const newest =
    `sweep_id = (SELECT argMax(sweep_id, started_at) FROM ${db}.sweep_points WHERE op = 'OVERALL' ` +
    `AND x IS NOT NULL AND ${sweepWhere})`
  const curve = (title: string, column: string, unit: string, what: string): ReturnType<typeof trendPanel> =>
    trendPanel(
      cfg,
      title,
      unit,
      'x',
      `The newest sweep in the range with numeric points: ${what} against the swept value.`,
    ).withTarget(
      sqlTarget(
        cfg,
        'A',
        SQL_FORMAT.table,
        sql`
        SELECT x, ${column}
        FROM ${db}.sweep_points
        WHERE op = 'OVERALL' AND x IS NOT NULL AND ${newest}
        ORDER BY x`,
      ),
    )
  const curves = [
    curve(
      'Sweep curve: throughput',
      'ops_per_sec',
      UNITS.throughput,
      'throughput (saturation: where it stops growing)',
    ),
    curve('Sweep curve: p99', 'p99_us', UNITS.latency, 'p99 (the knee: where it turns up)'),
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
    .annotations([
      alertsAnnotation(
        cfg,
        sql`
        run_id IN
        (
            SELECT run_id FROM ${db}.runs
            WHERE ${runsInRangeWhere()} AND mapContains(labels, ${LABEL})
              AND (${WORKLOAD} = '${ANY_WORKLOAD}' OR workload = ${WORKLOAD})
        )`,
      ),
    ])
    .withVariable(datasourceVariable(cfg))
    .withVariable(
      queryVariable(
        cfg,
        'label',
        'Label',
        'Label keys of the runs active in the time range.',
        sql`
        SELECT DISTINCT arrayJoin(mapKeys(labels)) AS label
        FROM ${db}.runs
        WHERE ${runsInRangeWhere()}
        ORDER BY label`,
      ),
    )
    .withVariable(
      queryVariable(
        cfg,
        'workload',
        'Workload',
        `Workload of the runs; ${ANY_WORKLOAD} = any.`,
        sql`
        SELECT workload
        FROM
        (
            SELECT '${ANY_WORKLOAD}' AS workload, 0 AS k
            UNION ALL
            SELECT DISTINCT workload, 1 AS k
            FROM ${db}.runs
            WHERE ${runsInRangeWhere()} AND mapContains(labels, ${LABEL})
        )
        ORDER BY k, workload`,
      ),
    )
  withSections(builder, [
    ['Runs', [table]],
    ['By value', charts],
    ['Groups of repetitions', [groups]],
    ['Sweeps', [points, ...curves]],
  ])
  return finishDashboard(builder.build(), cfg)
}
