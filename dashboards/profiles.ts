/**
 * "Benchstream — profiles": the CPU profiles of runs in Grafana's flame
 * graph panel, built in SQL from the stored stacks
 * (schemas/clickhouse/0006-profiles.sql). The panel reads a nested set:
 * fields level, value, self and label, one row per node of the call tree in
 * depth-first pre-order under a single root at level 0 (Grafana's
 * dataTransform.ts nestedSetToLevels). Here each node is a prefix of a
 * stack's frame array: its value is the samples of the stacks that start
 * with it, its self those of the stacks that end there, and ORDER BY the
 * prefix gives pre-order (an array sorts before its extensions, siblings by
 * name). A differential panel adds valueRight and selfRight (the
 * candidate); value and self are then the baseline, as the panel expects.
 * services/core/profiles/flame-graph.ts builds the same rows for the API.
 */
import { DashboardBuilder, PanelBuilder, type Dashboard } from '@grafana/grafana-foundation-sdk/dashboard'
import {
  alertsAnnotation,
  datasourceRef,
  datasourceVariable,
  finishDashboard,
  indentTail,
  neutralThresholds,
  queryVariable,
  sql,
  SQL_FORMAT,
  sqlTarget,
  tablePanel,
  UNITS,
  withSections,
  type DashboardConfig,
} from './common.js'

export const PROFILES_UID = 'benchstream-profiles'

const RUN = '${run:singlequote}'
const BASELINE = '${baseline:singlequote}'
const CANDIDATE = '${candidate:singlequote}'
/** The root's label: services/core/profiles/flame-graph.ts ROOT_LABEL. */
const ROOT = 'all'
/** Frames listed in the change tables. */
const TOP_FRAMES = 20

export function profilesDashboard(cfg: DashboardConfig): Dashboard {
  const db = cfg.database

  /**
   * Samples per stack of the slices `slices` selects (a WHERE over
   * profile_slices), with each stack's frames: `sums` are the aggregates over
   * profile_samples, named by `columns`.
   */
  const stacks = (columns: readonly string[], sums: string, slices: string): string => sql`
    SELECT s.frames AS frames, ${columns.map((c) => `c.${c} AS ${c}`).join(', ')}
    FROM
    (
        SELECT stack_id, ${sums}
        FROM ${db}.profile_samples
        WHERE (profile_id, window_start) IN (SELECT profile_id, window_start FROM ${db}.profile_slices WHERE ${slices})
        GROUP BY stack_id
    ) AS c
    INNER JOIN
    (
        SELECT stack_id, any(frames) AS frames
        FROM ${db}.profile_stacks
        WHERE stack_id IN
        (
            SELECT stack_id FROM ${db}.profile_samples
            WHERE (profile_id, window_start) IN
                  (SELECT profile_id, window_start FROM ${db}.profile_slices WHERE ${slices})
        )
        GROUP BY stack_id
    ) AS s ON s.stack_id = c.stack_id`

  /**
   * A flame graph panel over `stacks` (the rows of `stacks()` above): the
   * nested set the panel reads, one row per path from the root. `sides` are
   * the panel's value columns and the stacks' sample column each sums: one
   * side (value/self) or two (value/self the baseline, valueRight/selfRight
   * the candidate).
   */
  const flameGraph = (
    title: string,
    description: string,
    stacksSql: string,
    sides: ReadonlyArray<{ value: string; self: string; samples: string }>,
  ) => {
    const root = sides.map((x) => `sum(${x.samples}) AS ${x.value}, toUInt64(0) AS ${x.self}`).join(', ')
    // Continuation lines aligned under the first column of the generated SQL (sql`` dedents by the template's indent).
    const paths = sides
      .map((x) => `sum(${x.samples}) AS ${x.value}, sumIf(${x.samples}, length(path) = length(frames)) AS ${x.self}`)
      .join(',\n                   ')
    return (
      new PanelBuilder()
        .type('flamegraph')
        .title(title)
        .description(description)
        .datasource(datasourceRef(cfg))
        // Widths are sample counts; no colour scale of ours (the panel colours frames itself).
        .unit(UNITS.count)
        .thresholds(neutralThresholds())
        .height(16)
        .span(24)
        .withTarget(
          sqlTarget(
            cfg,
            'A',
            SQL_FORMAT.table,
            sql`
        WITH stacks AS
        (
            ${indentTail(stacksSql, 12)}
        )
        SELECT level, ${sides.map((x) => `${x.value}, ${x.self}`).join(', ')}, label
        FROM
        (
            SELECT toUInt64(0) AS level, ${root}, '${ROOT}' AS label, CAST([], 'Array(String)') AS path
            FROM stacks
            UNION ALL
            SELECT length(path) AS level, ${paths}, path[-1] AS label, path
            FROM stacks
            ARRAY JOIN arrayMap(i -> arraySlice(frames, 1, i), range(1, length(frames) + 1)) AS path
            GROUP BY path
        )
        ORDER BY path`,
          ),
        )
    )
  }

  // One run, cut to the dashboard's time range (slices by their start, as windows).
  const oneRun = stacks(['n'], 'sum(count) AS n', `run_id = ${RUN} AND $__timeFilter_ms(window_start)`)
  const flame = flameGraph(
    'CPU profile of ${run}',
    'Every profile of the run whose time slices start in the time range, merged (all hosts and processes): ' +
      "width = samples. Click to zoom, search in the panel's toolbar. The same graph, interactive " +
      'or as SVG: /profiles?run=<run> and /api/v1/profiles/flamegraph?run=<run>&format=svg on the ' +
      'Benchstream API.',
    oneRun,
    [{ value: 'value', self: 'self', samples: 'n' }],
  )

  // Two whole runs (no time cut: they ran at different times).
  const bothRuns = stacks(
    ['a', 'b'],
    `sumIf(count, run_id = ${BASELINE}) AS a, sumIf(count, run_id = ${CANDIDATE}) AS b`,
    `run_id IN (${BASELINE}, ${CANDIDATE})`,
  )
  const diff = flameGraph(
    'Differential profile: ${candidate} against ${baseline}',
    'Both whole runs (not cut by the time range). value/self: the baseline; valueRight/selfRight: ' +
      "the candidate. Grafana colours each frame by the change of its share of each side's samples " +
      ("(green less, red more). Brendan Gregg's form (widths from the " +
        'candidate): /profiles?baseline=<A>&candidate=<B> ') +
      'on the Benchstream API.',
    bothRuns,
    [
      { value: 'value', self: 'self', samples: 'a' },
      { value: 'valueRight', self: 'selfRight', samples: 'b' },
    ],
  )

  /**
   * Frames by the change of their share of samples, percentage points; `framesOf` maps a stack's frames to the frames
   * it counts for.
   */
  const changes = (title: string, description: string, framesOf: string) =>
    tablePanel(cfg, title, description)
      .span(12)
      .height(12)
      .withTarget(
        sqlTarget(
          cfg,
          'A',
          SQL_FORMAT.table,
          sql`
        WITH stacks AS
        (
            ${indentTail(bothRuns, 12)}
        )
        SELECT frame, 100 * fa / t.ta AS baseline_pct, 100 * fb / t.tb AS candidate_pct,
               candidate_pct - baseline_pct AS change_pp
        FROM
        (
            SELECT frame, sum(a) AS fa, sum(b) AS fb
            FROM stacks
            ARRAY JOIN ${framesOf} AS frame
            GROUP BY frame
        ) AS f
        CROSS JOIN (SELECT sum(a) AS ta, sum(b) AS tb FROM stacks) AS t
        WHERE change_pp != 0
        ORDER BY abs(change_pp) DESC, frame
        LIMIT ${TOP_FRAMES}`,
        ),
      )
      .overrideByRegexp('.*_pct$', [
        { id: 'unit', value: UNITS.percent },
        { id: 'decimals', value: 2 },
      ])
      .overrideByName('change_pp', [
        { id: 'decimals', value: 2 },
        { id: 'displayName', value: 'change (pp)' },
      ])

  const selfTable = changes(
    'Frames whose self share changed most',
    "Samples where the frame was the leaf (running its own code), as a share of each run's samples, " +
      'and the change in percentage points (candidate - baseline). The same as GET /api/v1/profiles/diff.',
    '[frames[-1]]',
  )
  const totalTable = changes(
    'Frames whose total share changed most',
    "Samples with the frame anywhere on the stack (counted once per stack), as a share of each run's " +
      'samples, and the change in percentage points.',
    'arrayDistinct(frames)',
  )

  const runs = sql`
    SELECT run_id
    FROM ${db}.profile_slices
    WHERE $__timeFilter_ms(window_start)
    GROUP BY run_id
    ORDER BY max(window_start) DESC, run_id`
  const builder = new DashboardBuilder('Benchstream — profiles')
    .uid(PROFILES_UID)
    .description(
      "CPU profiles attached to runs (benchstream profile attach / capture): a run's flame graph, " +
        'and a differential one of two runs with the frames whose share changed most.',
    )
    .tags(['benchstream'])
    .editable()
    .timezone('browser')
    .time({ from: 'now-24h', to: 'now' })
    .annotations([alertsAnnotation(cfg, `run_id IN (${RUN}, ${BASELINE}, ${CANDIDATE})`)])
    .withVariable(datasourceVariable(cfg))
    .withVariable(queryVariable(cfg, 'run', 'Run', 'Runs with profile slices in the time range, newest first.', runs))
    .withVariable(
      queryVariable(cfg, 'baseline', 'Baseline', 'Runs with profile slices in the time range, newest first.', runs),
    )
    .withVariable(
      queryVariable(cfg, 'candidate', 'Candidate', 'Runs with profile slices in the time range, newest first.', runs),
    )
  withSections(builder, [
    ['One run', [flame]],
    ['Candidate against baseline', [diff, selfTable, totalTable]],
  ])
  return finishDashboard(builder.build(), cfg)
}
