/**
 * HTTP API shapes, version 1: release A vs release B (GET /api/v1/compare,
 * `benchstream compare`) and a figure over a label-ordered series of runs
 * (GET /api/v1/history, `benchstream history`), with the figures both know
 * by name.
 */
import { Type, type Static } from 'typebox'
import { LABEL_TERM, Nullable } from './api-common.v1.js'

/**
 * One side of a comparison: a run id, `runs:ID,ID,...` (those runs),
 * `group:NAME` (a group of repetitions), or a selector
 * `key=value[,key=value...]` over labels (and `workload=`, `group=`), e.g.
 * `version=0.98.0,workload=e`.
 */
const SIDE = (what: string) =>
  Type.String({
    minLength: 1,
    maxLength: 2048,
    pattern: '^[A-Za-z0-9][^&]*$',
    description:
      `the ${what}: a run id, runs:ID,ID,..., group:NAME, or key=value[,key=value...] ` + '(labels, workload, group)',
  })

export const CompareQuery = Type.Object(
  {
    baseline: SIDE('baseline (release A)'),
    candidate: SIDE('candidate (release B)'),
    alpha: Type.Optional(
      Type.Number({
        exclusiveMinimum: 0,
        exclusiveMaximum: 1,
        description: 'significance level, greater than 0 and less than 1 (default 0.05)',
      }),
    ),
    minEffect: Type.Optional(
      Type.Number({
        minimum: 0,
        exclusiveMaximum: 1,
        description: 'smallest relative change called a regression or improvement, 0 to below 1 (default 0.01 = 1 %)',
      }),
    ),
    force: Type.Optional(
      Type.Boolean({ description: 'compare even when the setups differ (the differences are listed)' }),
    ),
    by: Type.Optional(
      Type.String({
        pattern: '^[A-Za-z0-9][A-Za-z0-9._:-]{0,63}$',
        description:
          "pair the sides' runs by this label's value instead of by workload (runs of different values are " +
          'never pooled)',
      }),
    ),
    test: Type.Optional(
      Type.Union([Type.Literal('auto'), Type.Literal('welch')], {
        description:
          "the test of repetitions: auto (default: Mann-Whitney where it can find a change, else Welch's t) or " +
          "welch (Welch's t always, as a sequential experiment's looks use it)",
      }),
    ),
    format: Type.Optional(
      Type.Union([Type.Literal('json'), Type.Literal('markdown'), Type.Literal('text')], {
        description: 'json (default), markdown or text (the terminal table)',
      }),
    ),
  },
  { additionalProperties: false },
)
export type CompareQuery = Static<typeof CompareQuery>

/**
 * The figures compare and history know by name. A run with events has throughput, avg, p50, p95, p99, p99.9, max,
 * error_rate and cache_hit_ratio per operation; a summary run (YCSB's report as printed) has throughput, avg, min,
 * max, errors (its `Return=` lines that are not OK), error_rate and every percentile it printed (`p95`, `p99`, and
 * any other as `p<percent>`).
 */
export const FIGURE_KEYS = [
  'throughput',
  'avg',
  'min',
  'p50',
  'p90',
  'p95',
  'p99',
  'p99.9',
  'p99.99',
  'max',
  'errors',
  'error_rate',
  'cache_hit_ratio',
  'server_cache_hit_ratio',
] as const
export type FigureKey = (typeof FIGURE_KEYS)[number]
/** A figure of a comparison: a named one, or a percentile a report printed (`p75`). */
export const FIGURE_KEY_PATTERN =
  '^(?:throughput|avg|min|max|errors|error_rate|cache_hit_ratio|server_cache_hit_ratio|p\\d+(?:\\.\\d+)?)$'

export const HistoryQuery = Type.Object(
  {
    label: Type.String({
      pattern: '^[A-Za-z0-9][A-Za-z0-9._:-]{0,63}$',
      description: 'the label that orders the series, e.g. version (natural order: 0.98.10 after 0.98.9)',
    }),
    workload: Type.Optional(
      Type.String({ minLength: 1, maxLength: 1024, description: 'only runs of this workload (workloade, or e)' }),
    ),
    op: Type.Optional(
      Type.String({ pattern: '^[A-Z][A-Z-]{0,31}$', description: 'operation (READ, SCAN, ...) or OVERALL (default)' }),
    ),
    figure: Type.Optional(
      Type.Enum(
        [
          'throughput',
          'avg',
          'min',
          'p50',
          'p90',
          'p95',
          'p99',
          'p99.9',
          'p99.99',
          'max',
          'errors',
          'error_rate',
          'cache_hit_ratio',
        ],
        {
          description:
            'throughput (default), avg, min, p50, p90, p95, p99, p99.9, p99.99, max, errors, error_rate, ' +
            'cache_hit_ratio (min and errors: summary runs; percentiles a summary run did not print are absent)',
        },
      ),
    ),
    filter: Type.Optional(
      Type.Array(Type.String({ pattern: LABEL_TERM }), {
        maxItems: 32,
        description: 'more label filters key=value (repeatable)',
      }),
    ),
  },
  { additionalProperties: false },
)
export type HistoryQuery = Static<typeof HistoryQuery>

const VERDICTS = [
  'regression',
  'improvement',
  'no significant change',
  'insufficient data',
  'at target',
  'below target',
] as const

/** One side of one compared figure. */
const ComparedSide = Type.Object({
  /** Median over the side's runs of each run's figure (each from its own merged histogram); null when no run has it. */
  center: Nullable(Type.Number()),
  /** Every run's figure lies within ± this many percent of the center; null with one run or a zero center. */
  spreadPercent: Nullable(Type.Number()),
  /** Each run's figure, in the order of the side's runs. */
  values: Type.Array(Nullable(Type.Number())),
  /** Samples the test used: runs, or windows over all runs. */
  n: Type.Integer(),
  /**
   * A percentile of a summary run with several clients: each client's figure as printed (the run's figure is their
   * median, see ComparedFigure.clientMedian); null otherwise.
   */
  perClient: Nullable(Type.Array(Type.Object({ runId: Type.String(), clientId: Type.String(), value: Type.Number() }))),
})

export const ComparedFigure = Type.Object({
  workload: Type.String(),
  /** An operation, or OVERALL. */
  op: Type.String(),
  /** One of FIGURE_KEYS, or a percentile a report printed (`p75`). */
  figure: Type.String({ pattern: FIGURE_KEY_PATTERN }),
  /** `READ p99 (µs)`, `OVERALL throughput (ops/s)`. */
  label: Type.String(),
  direction: Type.Union([Type.Literal('higher-is-better'), Type.Literal('lower-is-better')]),
  baseline: ComparedSide,
  candidate: ComparedSide,
  /** Change of the centers, percent; null when either is missing or the baseline's is 0. */
  changePercent: Nullable(Type.Number()),
  verdict: Type.Enum([...VERDICTS]),
  samples: Type.Union([Type.Literal('repetitions'), Type.Literal('windows'), Type.Literal('none')]),
  /** mann-whitney-u-exact, welch-t, circular-block-bootstrap, none. */
  method: Type.String(),
  pValue: Nullable(Type.Number()),
  /** Benjamini-Hochberg adjusted p-value over every tested figure of the comparison: what the verdict uses. */
  adjustedPValue: Nullable(Type.Number()),
  /** Relative change the test is about (medians or means of the samples), percent. */
  effectPercent: Nullable(Type.Number()),
  ci: Nullable(Type.Object({ level: Type.Number(), low: Type.Number(), high: Type.Number() })),
  note: Nullable(Type.String()),
  reason: Type.String(),
  /**
   * Smallest step of the figure as printed, µs: 1000 for the whole-ms percentiles of YCSB before 0.4.0 (a change
   * smaller than this is never called; a center or value of 0 is a printed 0 ms, any latency under 1 ms, and the
   * tables print it `< 1 ms`), 0 when exact or finer than the figure.
   */
  resolutionUs: Type.Number(),
  /**
   * Largest number of clients whose printed percentiles a run's value is the median of (summary runs with several
   * clients: percentiles of clients cannot be merged); 0 when each run's value is its own figure.
   */
  clientMedian: Type.Integer(),
})
export type ComparedFigure = Static<typeof ComparedFigure>

/**
 * A frame (function, wherever called from) in both sides' merged CPU profiles: shares in percent of each side's
 * samples.
 */
const FrameShareChange = Type.Object({
  frame: Type.String(),
  baseline: Type.Number(),
  candidate: Type.Number(),
  /** candidate - baseline, percentage points. */
  change: Type.Number(),
  baselineSamples: Type.Integer(),
  candidateSamples: Type.Integer(),
})

/**
 * The frames whose share of CPU samples changed most between the sides (services/core/profiles/flame-graph.ts
 * frameShareChanges).
 */
export const ProfileChanges = Type.Object({
  baselineSamples: Type.Integer(),
  candidateSamples: Type.Integer(),
  /** By self share (the frame was the leaf: time spent in it). */
  self: Type.Array(FrameShareChange),
  /** By total share (the frame anywhere on the stack: time spent in it and its callees). */
  total: Type.Array(FrameShareChange),
  /** Path of the differential flame graph of the same runs on the API (the profiles page). */
  diffFlameGraph: Type.String(),
})
export type ProfileChanges = Static<typeof ProfileChanges>

const SideThrottle = Type.Object({
  status: Type.Union([Type.Literal('unthrottled'), Type.Literal('at target'), Type.Literal('below target')]),
  target: Nullable(Type.Number()),
  runs: Type.Integer(),
  runsBelow: Type.Integer(),
  medianRatio: Nullable(Type.Number()),
  shortfallPercent: Nullable(Type.Number()),
})

const CompareSide = Type.Object({
  /** What was asked for: a run id, group:NAME or a selector. */
  ref: Type.String(),
  runs: Type.Array(Type.String()),
  groups: Type.Array(Type.String()),
  workloads: Type.Array(Type.String()),
})

/** Release A vs release B: GET /api/v1/compare, `benchstream compare --format json`. */
export const ReleaseComparison = Type.Object({
  baseline: CompareSide,
  candidate: CompareSide,
  alpha: Type.Number(),
  minEffect: Type.Number(),
  /** Figures whose p-values were adjusted together (Benjamini-Hochberg). */
  tests: Type.Integer(),
  comparable: Type.Boolean(),
  /** Compared although not comparable (--force). */
  forced: Type.Boolean(),
  /** Settings that differ between the sides or among one side's runs (workload-prefixed when several are compared). */
  differences: Type.Array(
    Type.Object({
      name: Type.String(),
      baseline: Type.Array(Type.String()),
      candidate: Type.Array(Type.String()),
      where: Type.Array(Type.String()),
    }),
  ),
  /**
   * What pairs the sides' runs: null for the workload (the run's workload, else its `workload` label), or the label
   * named with --by.
   */
  by: Nullable(Type.String()),
  /** What the reader must know about how the sides were compared (setups that could not be compared, and why). */
  notes: Type.Array(Type.String()),
  /** Workload pairs compared; a workload only one side ran is listed in unpaired. */
  workloads: Type.Array(
    Type.Object({
      baseline: Type.String(),
      candidate: Type.String(),
      baselineRuns: Type.Array(Type.String()),
      candidateRuns: Type.Array(Type.String()),
      throttle: Nullable(Type.Object({ baseline: SideThrottle, candidate: SideThrottle })),
      /** Runs of this pair that are summary runs (figures as YCSB reported them), per side. */
      reportedRuns: Type.Object({ baseline: Type.Integer(), candidate: Type.Integer() }),
      /** Who printed the summary runs' figures: `ycsb` (YCSB's reports), `pe` (HBase PerformanceEvaluation). */
      reportedBy: Type.Optional(Type.Array(Type.Union([Type.Literal('ycsb'), Type.Literal('pe')]))),
    }),
  ),
  /** Workloads (or --by values) one side only has, and pairs with nothing to compare, each with why. */
  unpaired: Type.Array(Type.String()),
  figures: Type.Array(ComparedFigure),
  summary: Type.Object({
    regressions: Type.Integer(),
    improvements: Type.Integer(),
    unchanged: Type.Integer(),
    insufficient: Type.Integer(),
    atTarget: Type.Integer(),
    belowTarget: Type.Integer(),
  }),
  /**
   * Where the CPU time went: frame share changes between the sides' CPU profiles; null when a side has no profile
   * samples (or profiles are not served).
   */
  profiles: Nullable(ProfileChanges),
})
export type ReleaseComparison = Static<typeof ReleaseComparison>

/** A figure over a label-ordered series of runs (benchstream history, GET /api/v1/history). */
export const ReleaseHistory = Type.Object({
  label: Type.String(),
  workload: Nullable(Type.String()),
  op: Type.String(),
  figure: Type.String(),
  points: Type.Array(
    Type.Object({
      value: Type.String(),
      runs: Type.Array(Type.String()),
      /** Each run's figure. */
      values: Type.Array(Nullable(Type.Number())),
      /** Median of the runs' figures; null when none has it. */
      center: Nullable(Type.Number()),
      /** Change from the previous point, percent. */
      changePercent: Nullable(Type.Number()),
      /**
       * Smallest step of the figure as printed, µs, as ComparedFigure.resolutionUs: 1000 when a run's figure is a
       * percentile YCSB printed in whole ms (a value of 0 is then under 1 ms, not 0 µs), 0 when exact.
       */
      resolutionUs: Type.Number(),
    }),
  ),
  changePoints: Type.Array(
    Type.Object({
      /** Index in points of the first point after the change. */
      index: Type.Integer(),
      value: Type.String(),
      pValue: Type.Number(),
      meanBefore: Type.Number(),
      meanAfter: Type.Number(),
      changePercent: Nullable(Type.Number()),
    }),
  ),
  /** Why no change point could be looked for, when so (too few points). */
  note: Nullable(Type.String()),
})
export type ReleaseHistory = Static<typeof ReleaseHistory>
