/**
 * What the alert evaluator (alert-rules.ts) takes and gives: complete windows
 * of a run's merged counts, the run's context, and the firing/resolved
 * transitions; the window rules' union and the defaults of optional rule
 * fields.
 */
import type {
  AlertState,
  BaselineMethod,
  BelowTargetRule,
  DropVsBaselineRule,
  ErrorRateRule,
  RuleType,
  Severity,
  VsBaselineRule,
} from '../../../schemas/alert-rules.v1.js'
import type { BaselineProfile } from './baseline-profile.js'

/** Merged counts of one operation in one window. */
export interface WindowOpCount {
  op: string
  count: number
  errors: number
  /** p50 and p99 of the window's successful operations, µs (vs_baseline rules); null or absent when unknown. */
  p50Us?: number | null
  p99Us?: number | null
}

/**
 * One complete window of a run. Operations without a row may be left out: they count as 0 once the run has seen them.
 */
export interface CompleteWindow {
  /** ms since epoch, a multiple of windowMs. */
  startMs: number
  windowMs: number
  ops: readonly WindowOpCount[]
}

export interface RunContext {
  runId: string
  /** The run's target in ops/s, summed over its clients; 0 = none. */
  targetOpsPerSec: number
  /** What vs_baseline rules compare this run with, and where this run's first window is (offsets count from it). */
  baseline?: { profile: BaselineProfile; firstWindowMs: number }
}

export interface AlertTransition {
  state: AlertState
  rule: string
  ruleType: RuleType
  severity: Severity
  runId: string
  /** An operation, or ALL for rules about the whole run. */
  op: string
  /** Same for the firing and the resolved transition of one incident. */
  fingerprint: string
  /** When the condition began: start of the first bad window (no_data: last data + seconds). */
  startsAtMs: number
  /** When it ended (resolved only): start of the first good window, or the run's end. */
  endsAtMs: number | undefined
  /** Start of the window whose evaluation made this change (no_data: the evaluation time). */
  atWindowMs: number
  /** The measured value at that window: ops/s, an error fraction, or seconds without data. */
  value: number
  /** The value it was compared with, same unit. */
  threshold: number
  summary: string
  description: string
  /**
   * The silence that holds this incident's webhook back (services/core/alerting/silences.ts); set by the alert engine
   * when the incident fires, never by the evaluator.
   */
  silencedBy?: string | undefined
}

/** Defaults for optional rule fields, in one place. */
export const RULE_DEFAULTS = {
  warmupWindows: 0,
  baseline: 'median' as BaselineMethod,
  minBaselineOpsPerSec: 1,
  minOps: 1,
} as const

/** The rules judged on a window's values (every type but no_data). */
export type WindowRule = BelowTargetRule | DropVsBaselineRule | ErrorRateRule | VsBaselineRule
