/**
 * "Benchstream — compare runs": a baseline and a candidate run side by side.
 * Time series are drawn against seconds since each run's first window, so
 * two runs started at different times line up; the table compares whole runs
 * per YCSB measurement (READ, READ-FAILED, ...) with the same numbers as the
 * run report (services/adapters/clickhouse/read-model-report.ts runReport).
 */
import {
  CustomVariableBuilder,
  DashboardBuilder,
  DashboardCursorSync,
  type Dashboard,
} from '@grafana/grafana-foundation-sdk/dashboard'
import {
  alertsAnnotation,
  datasourceVariable,
  finishDashboard,
  indentTail,
  OPERATION_ORDER,
  runVariable,
  sql,
  SQL_FORMAT,
  sqlTarget,
  tablePanel,
  trendPanel,
  UNITS,
  withSections,
  type DashboardConfig,
} from './common.js'

export const COMPARE_RUNS_UID = 'benchstream-compare'

const BASELINE = '${baseline:singlequote}'
const CANDIDATE = '${candidate:singlequote}'
const STEP = '${step}'

/** Bucket lengths offered for the aligned time series, seconds. */
export const STEP_CHOICES_S = [1, 5, 10, 30, 60] as const
const DEFAULT_STEP_S = 5

export function compareRunsDashboard(cfg: DashboardConfig): Dashboard {
  const db = cfg.database
  const windows = `${db}.op_windows`
  const both = `(${BASELINE}, ${CANDIDATE})`

  // Windows of both runs with t_s = seconds since the run's first window, cut into STEP buckets.
  const aligned = sql`
    SELECT w.run_id AS run_id, w.count AS count, w.window_ms AS window_ms, w.hist AS hist, w.max_us AS max_us,
           intDiv(toUnixTimestamp64Milli(w.window_start) - f.first_ms, ${STEP} * 1000) * ${STEP} AS t_s
    FROM ${windows} AS w
    INNER JOIN
    (
        SELECT run_id, toUnixTimestamp64Milli(min(window_start)) AS first_ms
        FROM ${windows}
        WHERE run_id IN ${both}
        GROUP BY run_id
    ) AS f ON f.run_id = w.run_id
    WHERE w.run_id IN ${both}`
  const nested = indentTail(aligned, 12)
  const rate = (run: string): string =>
    `if(countIf(run_id = ${run}) = 0, NULL, sumIf(count, run_id = ${run}) / greatest(${STEP}, max(window_ms) / 1000))`
  const p99 = (run: string): string =>
    `if(countIf(run_id = ${run}) = 0, NULL, least(bs_quantile(0.99, sumMapIf(hist, run_id = ${run})), ` +
    `maxIf(max_us, run_id = ${run})))`

  // Baseline and candidate overlaid on time since each run's start: one panel per metric.
  const overlay = (title: string, unit: string, description: string, metric: (run: string) => string) =>
    trendPanel(cfg, title, unit, 't_s', description)
      .withTarget(
        sqlTarget(
          cfg,
          'A',
          SQL_FORMAT.table,
          sql`
        SELECT t_s,
               ${metric(BASELINE)} AS baseline,
               ${metric(CANDIDATE)} AS candidate
        FROM
        (
            ${nested}
        )
        GROUP BY t_s
        ORDER BY t_s`,
        ),
      )
      .overrideByName('baseline', [{ id: 'displayName', value: 'baseline ${baseline}' }])
      .overrideByName('candidate', [{ id: 'displayName', value: 'candidate ${candidate}' }])

  const timeseries = [
    overlay(
      'Throughput since start',
      UNITS.throughput,
      "Operations per second, all operations and clients, against seconds since each run's first window.",
      rate,
    ),
    overlay(
      'p99 latency since start',
      UNITS.latency,
      'p99 of the merged histograms of all operations and clients per bucket, against seconds since ' +
        "each run's first window.",
      p99,
    ),
  ]

  const metrics = [
    ['ops_per_s', UNITS.throughput],
    ['avg_us', UNITS.latency],
    ['p95_us', UNITS.latency],
    ['p99_us', UNITS.latency],
    ['intended_p99_us', UNITS.latency],
  ] as const
  const picks = metrics
    .flatMap(([m]) => [`anyIf(${m}, run_id = ${BASELINE}) AS b_${m}`, `anyIf(${m}, run_id = ${CANDIDATE}) AS c_${m}`])
    .join(',\n')
  const columns = metrics
    .flatMap(([m]) => [
      `b_${m} AS baseline_${m}`,
      `c_${m} AS candidate_${m}`,
      `(c_${m} - b_${m}) / nullIf(b_${m}, 0) * 100 AS ${m}_change_pct`,
    ])
    .join(',\n')
  const order = `[${OPERATION_ORDER.map((o) => `'${o}'`).join(', ')}]`
  const table = tablePanel(
    cfg,
    'Per measurement: baseline vs candidate',
    'Whole runs (not limited by the time range). Throughput = operations / run time, the run time ' +
      "being the drivers' own (else the span of the events), as in the run report; latencies from " +
      'merged histograms. Measurements follow YCSB: READ is the successful reads, READ-FAILED the ' +
      'others. intended p99 is latency from the scheduled start (-target runs; equal to the measured ' +
      'one otherwise), beside the measured p99. Change % is (candidate - baseline) / baseline.',
  )
    .withTarget(
      sqlTarget(
        cfg,
        'A',
        SQL_FORMAT.table,
        sql`
      SELECT measurement,
             ${indentTail(columns, 13)}
      FROM
      (
          SELECT measurement,
                 ${indentTail(picks, 17)}
          FROM
          (
              SELECT m.run_id AS run_id, m.measurement AS measurement,
                     toNullable(m.operations * 1000 / rt.runtime_ms) AS ops_per_s,
                     toNullable(m.avg_us) AS avg_us,
                     toNullable(m.p95_us) AS p95_us,
                     toNullable(m.p99_us) AS p99_us,
                     toNullable(m.intended_p99_us) AS intended_p99_us
              FROM
              (
                  SELECT run_id, if(status = 'OK', op, concat(op, '-FAILED')) AS measurement,
                         sum(count) AS operations, sum(sum_us) / sum(count) AS avg_us,
                         least(bs_quantile(0.95, sumMap(hist)), max(max_us)) AS p95_us,
                         least(bs_quantile(0.99, sumMap(hist)), max(max_us)) AS p99_us,
                         least(bs_quantile(0.99, sumMap(intended_hist)), max(intended_max_us)) AS intended_p99_us
                  FROM ${windows}
                  WHERE run_id IN ${both}
                  GROUP BY run_id, measurement
                  UNION ALL
                  SELECT run_id, 'OVERALL' AS measurement,
                         sum(count) AS operations, sum(sum_us) / sum(count) AS avg_us,
                         least(bs_quantile(0.95, sumMap(hist)), max(max_us)) AS p95_us,
                         least(bs_quantile(0.99, sumMap(hist)), max(max_us)) AS p99_us,
                         least(bs_quantile(0.99, sumMap(intended_hist)), max(intended_max_us)) AS intended_p99_us
                  FROM ${windows}
                  WHERE run_id IN ${both}
                  GROUP BY run_id
              ) AS m
              INNER JOIN
              (
                  SELECT s.run_id AS run_id,
                         if(r.runtime_ms > 0, toFloat64(r.runtime_ms), s.span_ms) AS runtime_ms
                  FROM
                  (
                      SELECT run_id,
                             (toUnixTimestamp64Micro(max(last_end)) - toUnixTimestamp64Micro(min(first_start))) / 1000
                             AS span_ms
                      FROM ${windows}
                      WHERE run_id IN ${both}
                      GROUP BY run_id
                  ) AS s
                  LEFT JOIN (SELECT run_id, runtime_ms FROM ${db}.runs WHERE run_id IN ${both}) AS r
                  ON r.run_id = s.run_id
              ) AS rt ON rt.run_id = m.run_id
          )
          GROUP BY measurement
      )
      ORDER BY measurement != 'OVERALL',
               if(indexOf(${order}, replaceRegexpOne(measurement, '-FAILED$', '')) = 0, 1000,
                  indexOf(${order}, replaceRegexpOne(measurement, '-FAILED$', ''))),
               endsWith(measurement, '-FAILED'),
               measurement`,
      ),
    )
    .overrideByRegexp('.*ops_per_s$', [
      { id: 'unit', value: UNITS.throughput },
      { id: 'decimals', value: 1 },
    ])
    .overrideByRegexp('.*_us$', [
      { id: 'unit', value: UNITS.latency },
      { id: 'decimals', value: 1 },
    ])
    .overrideByRegexp('.*_change_pct$', [
      { id: 'unit', value: UNITS.percent },
      { id: 'decimals', value: 1 },
    ])

  const builder = new DashboardBuilder('Benchstream — compare runs')
    .uid(COMPARE_RUNS_UID)
    .description('A baseline and a candidate run, aligned on time since their start, and compared per measurement.')
    .tags(['benchstream'])
    .editable()
    .timezone('browser')
    .tooltip(DashboardCursorSync.Crosshair)
    // The range only chooses the runs the pickers list (the panels take whole runs,
    // aligned on their start): the last day's runs by default, widen it for older ones.
    .time({ from: 'now-24h', to: 'now' })
    .annotations([alertsAnnotation(cfg, `run_id IN (${BASELINE}, ${CANDIDATE})`)])
    .withVariable(datasourceVariable(cfg))
    .withVariable(runVariable(cfg, 'baseline', 'Baseline', 'Runs active in the time range, newest first.'))
    .withVariable(runVariable(cfg, 'candidate', 'Candidate', 'Runs active in the time range, newest first.'))
    .withVariable(
      new CustomVariableBuilder('step')
        .label('Step (s)')
        .description('Bucket length of the aligned time series, seconds.')
        .values(STEP_CHOICES_S.join(','))
        .current({ text: String(DEFAULT_STEP_S), value: String(DEFAULT_STEP_S) })
        .allowCustomValue(false),
    )
  withSections(builder, [
    ['Aligned on time since start', timeseries],
    ['Whole runs', [table]],
  ])
  return finishDashboard(builder.build(), cfg)
}
