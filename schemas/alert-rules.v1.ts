/**
 * Alert rules file, version 1 (deploy/alerts/rules.json; ALERTS_RULES_FILE),
 * and the alert notice Benchstream publishes on the alerts topic. JSON Schema
 * via TypeBox; the TypeScript types are derived from the same objects and
 * services/alerts/rules-file.ts validates the file against them once.
 *
 * Every window rule looks at *complete* windows only (the run's watermark
 * has passed window end + allowed lateness), merged over clients and Kafka
 * partitions. A window inside a run with no operations counts as 0.
 */
import { Type, type Static, type TEnum } from 'typebox'
import { OPERATIONS } from './events.v1.js'

export const ALERT_RULES_VERSION = 1
export const SEVERITIES = ['critical', 'warning', 'info'] as const
export type Severity = (typeof SEVERITIES)[number]
export const RULE_TYPES = ['below_target', 'drop_vs_baseline', 'error_rate', 'no_data', 'vs_baseline'] as const
export type RuleType = (typeof RULE_TYPES)[number]
export const BASELINE_METHODS = ['median', 'mean'] as const
export type BaselineMethod = (typeof BASELINE_METHODS)[number]
export const ALERT_STATES = ['firing', 'resolved'] as const
export type AlertState = (typeof ALERT_STATES)[number]
/** The `op` of an alert about the run as a whole (below_target, no_data). */
export const ALL_OPS = 'ALL'

/** Prometheus label-name rules, since the name becomes the `alertname` label. */
export const RULE_NAME_PATTERN = '^[A-Za-z_][A-Za-z0-9_]{0,63}$'
/** Upper bound on any window count in a rule: one hour of 1-second windows. */
export const MAX_RULE_WINDOWS = 3600

function literals<const T extends readonly string[]>(values: T, description: string): TEnum<[...T]> {
  return Type.Enum<[...T]>(values, { description })
}

const common = {
  name: Type.String({
    pattern: RULE_NAME_PATTERN,
    description:
      'a name of 1-64 characters from A-Z a-z 0-9 _, not starting with a digit (it becomes the alertname label)',
  }),
  severity: literals(SEVERITIES, `one of ${SEVERITIES.join(', ')}`),
  description: Type.Optional(Type.String({ maxLength: 500, description: 'free text of at most 500 characters' })),
}
const windows = (what: string) =>
  Type.Integer({
    minimum: 1,
    maximum: MAX_RULE_WINDOWS,
    description: `${what}: an integer from 1 to ${MAX_RULE_WINDOWS}`,
  })
const resolveWindows = Type.Optional(
  windows("consecutive good windows before a firing alert resolves (default: the rule's windows)"),
)
const warmupWindows = Type.Optional(
  Type.Integer({
    minimum: 0,
    maximum: MAX_RULE_WINDOWS,
    description: `complete windows at the start of the run that are ignored: an integer from 0 to ${MAX_RULE_WINDOWS}`,
  }),
)
const ops = Type.Optional(
  Type.Array(literals(OPERATIONS, `one of ${OPERATIONS.join(', ')}`), {
    minItems: 1,
    uniqueItems: true,
    description: `a non-empty list of distinct operations from ${OPERATIONS.join(', ')}`,
  }),
)

/**
 * Total throughput of the run (all operations and clients together) below
 * `fraction` of the run's target (the sum of the clients' -target), for
 * `windows` consecutive windows. Runs without a target are not checked.
 */
export const BelowTargetRule = Type.Object(
  {
    type: Type.Literal('below_target'),
    ...common,
    fraction: Type.Number({ exclusiveMinimum: 0, maximum: 1, description: 'a number greater than 0 and at most 1' }),
    windows: windows('consecutive windows below the target before it fires'),
    resolveWindows,
    warmupWindows,
  },
  { additionalProperties: false },
)
export type BelowTargetRule = Static<typeof BelowTargetRule>

/**
 * One operation's throughput more than `percent` % under the median (or
 * mean) of its `baselineWindows` previous good windows, for `windows`
 * consecutive windows. The first `warmupWindows` of the run are neither
 * evaluated nor part of the baseline; breaching windows never enter it, so a
 * long drop does not become its own baseline.
 */
export const DropVsBaselineRule = Type.Object(
  {
    type: Type.Literal('drop_vs_baseline'),
    ...common,
    percent: Type.Number({
      exclusiveMinimum: 0,
      exclusiveMaximum: 100,
      description: 'a number greater than 0 and less than 100',
    }),
    baselineWindows: windows('windows in the trailing baseline'),
    baseline: Type.Optional(literals(BASELINE_METHODS, `one of ${BASELINE_METHODS.join(', ')} (default median)`)),
    warmupWindows,
    /** Operations slower than this (ops/s, baseline) are too sparse to judge. */
    minBaselineOpsPerSec: Type.Optional(
      Type.Number({ minimum: 0, description: 'a number of operations per second, 0 or more (default 1)' }),
    ),
    windows: windows('consecutive windows below the baseline before it fires'),
    resolveWindows,
    ops,
  },
  { additionalProperties: false },
)
export type DropVsBaselineRule = Static<typeof DropVsBaselineRule>

/** errors / operations of one operation above `threshold` for `windows` consecutive windows. */
export const ErrorRateRule = Type.Object(
  {
    type: Type.Literal('error_rate'),
    ...common,
    threshold: Type.Number({
      exclusiveMinimum: 0,
      maximum: 1,
      description: 'a fraction greater than 0 and at most 1 (0.05 = 5 %)',
    }),
    /** Windows with fewer operations are skipped (neither good nor bad). */
    minOps: Type.Optional(Type.Integer({ minimum: 1, description: 'an integer of at least 1 (default 1)' })),
    windows: windows('consecutive windows above the threshold before it fires'),
    resolveWindows,
    warmupWindows,
    ops,
  },
  { additionalProperties: false },
)
export type ErrorRateRule = Static<typeof ErrorRateRule>

/** A run that started and has not ended has produced no operation for `seconds`. */
export const NoDataRule = Type.Object(
  {
    type: Type.Literal('no_data'),
    ...common,
    seconds: Type.Integer({ minimum: 1, maximum: 86_400, description: 'an integer number of seconds from 1 to 86400' }),
  },
  { additionalProperties: false },
)
export type NoDataRule = Static<typeof NoDataRule>

export const BASELINE_FIGURES = ['throughput', 'p50', 'p99'] as const
export type BaselineFigure = (typeof BASELINE_FIGURES)[number]

/**
 * Live comparison with a baseline run or group (`benchstream run --baseline
 * <run|group:NAME>`, label `baseline`): each complete window of the
 * candidate, per operation, against the baseline's window at the same
 * offset from its run's start (the median over the baseline's runs). The
 * baseline's own window-to-window noise sets the bar: sigma = 1.4826 x the
 * median absolute difference between consecutive windows of a baseline run
 * (the standard deviation of a difference of two windows, robust to
 * outliers); a window is bad when throughput is below, or p50 or p99 above, the
 * baseline's by more than `sigmas` x sigma and by more than `minPercent` %,
 * and `windows` bad windows in a row fire. Runs without a baseline are not
 * checked; there is no Prometheus twin (Prometheus has no baseline run).
 */
export const VsBaselineRule = Type.Object(
  {
    type: Type.Literal('vs_baseline'),
    ...common,
    figures: Type.Optional(
      Type.Array(literals(BASELINE_FIGURES, `one of ${BASELINE_FIGURES.join(', ')}`), {
        minItems: 1,
        uniqueItems: true,
        description: 'figures compared: throughput, p50 and/or p99 (default throughput and p99)',
      }),
    ),
    sigmas: Type.Optional(
      Type.Number({
        minimum: 1,
        maximum: 100,
        description: "how many of the baseline's noise (sigma) a difference must exceed, 1 to 100 (default 4)",
      }),
    ),
    minPercent: Type.Optional(
      Type.Number({
        exclusiveMinimum: 0,
        exclusiveMaximum: 1000,
        description:
          'smallest difference in percent of the baseline that counts, greater than 0 and less than 1000 (default 10)',
      }),
    ),
    /** Windows (of the baseline or the candidate) with fewer operations have no p50 or p99 worth judging. */
    minOps: Type.Optional(
      Type.Integer({
        minimum: 1,
        description:
          'an integer of at least 1 (default 20): fewer operations in a window and its p50 and p99 are not judged',
      }),
    ),
    windows: windows('consecutive windows beyond the baseline before it fires'),
    resolveWindows,
    warmupWindows,
    ops,
  },
  { additionalProperties: false },
)
export type VsBaselineRule = Static<typeof VsBaselineRule>

/** Per-type schemas, for validating one rule against the schema its `type` names. */
export const RULE_SCHEMAS = {
  below_target: BelowTargetRule,
  drop_vs_baseline: DropVsBaselineRule,
  error_rate: ErrorRateRule,
  no_data: NoDataRule,
  vs_baseline: VsBaselineRule,
} as const

export const AlertRule = Type.Union([BelowTargetRule, DropVsBaselineRule, ErrorRateRule, NoDataRule, VsBaselineRule])
export type AlertRule = Static<typeof AlertRule>

export const AlertRulesFile = Type.Object(
  {
    version: Type.Literal(ALERT_RULES_VERSION, { description: `${ALERT_RULES_VERSION}` }),
    rules: Type.Array(Type.Unknown(), { maxItems: 1000, description: 'a list of at most 1000 rules' }),
  },
  { additionalProperties: false },
)
export interface AlertRulesFile {
  version: typeof ALERT_RULES_VERSION
  rules: AlertRule[]
}

/** The JSON message on the alerts topic (key: fingerprint), one per state change. */
export const AlertNotice = Type.Object({
  v: Type.Literal(1),
  state: literals(ALERT_STATES, 'firing or resolved'),
  rule: Type.String(),
  ruleType: literals(RULE_TYPES, RULE_TYPES.join(', ')),
  severity: literals(SEVERITIES, SEVERITIES.join(', ')),
  runId: Type.String(),
  /** An operation, or ALL for a rule about the whole run. */
  op: Type.String(),
  /** When the condition began (start of the first breaching window), ISO 8601. */
  startsAt: Type.String(),
  /** When it ended (resolved), else null. */
  endsAt: Type.Union([Type.String(), Type.Null()]),
  /** Start of the window whose evaluation made this change, ISO 8601. */
  atWindow: Type.String(),
  /** What was measured at that window: ops/s, an error fraction, or seconds without data. */
  value: Type.Number(),
  threshold: Type.Number(),
  summary: Type.String(),
  description: Type.String(),
  fingerprint: Type.String(),
  /**
   * The silence the incident was silenced by when it fired (its webhook was held back), else null; absent in notices
   * written before silences existed.
   */
  silencedBy: Type.Optional(Type.Union([Type.String(), Type.Null()])),
})
export type AlertNotice = Static<typeof AlertNotice>
