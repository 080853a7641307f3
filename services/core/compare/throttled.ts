/**
 * Throughput verdicts for throttled runs (YCSB's `-target`): a run that met
 * its target is `at target` (its throughput says nothing about the release),
 * one that fell short is `below target`. "Met" is at least `tolerance` x
 * target, default 0.99 (docs/design/verdicts.md#throttled-runs).
 */
import { BenchstreamError } from '../errors.js'
import { median, requireFinite } from './sample-stats.js'
import type { VerdictKind } from './types.js'
import type { Verdict } from './verdict.js'

/** Fraction of the target a run must reach to count as having met it. */
export const DEFAULT_TARGET_TOLERANCE = 0.99

export interface RunThroughput {
  /** Measured throughput of the run, ops/s. */
  throughput: number
  /** The run's target, ops/s (the sum of its clients' -target); null or 0 when unthrottled. */
  target: number | null
}

export type ThrottleStatus = 'unthrottled' | 'at target' | 'below target'

/** How the runs of one side did against their common target. */
export interface SideThrottle {
  status: ThrottleStatus
  /** The target shared by the side's runs; null when unthrottled. */
  target: number | null
  runs: number
  /** Runs below tolerance × target. */
  runsBelow: number
  /** Median throughput / target; null when unthrottled. */
  medianRatio: number | null
  /** How far the worst run fell short of the target, in percent (0 when every run met it); null when unthrottled. */
  shortfallPercent: number | null
}

/**
 * Classifies one side's runs: `unthrottled` (no target), `at target` (every
 * run reached tolerance × target) or `below target` (at least one did not:
 * one short run out of three is already a limit being hit). All runs of a
 * side must share their target (comparable.ts reports runs that do not);
 * throws BS_ERR_BAD_REQUEST otherwise.
 */
export function assessThrottle(runs: readonly RunThroughput[], tolerance = DEFAULT_TARGET_TOLERANCE): SideThrottle {
  if (!(tolerance > 0 && tolerance <= 1))
    throw new BenchstreamError('BS_ERR_BAD_REQUEST', `tolerance must be greater than 0 and at most 1; got ${tolerance}`)
  requireFinite(
    'throughput',
    runs.map((r) => r.throughput),
  )
  const targets = new Set(runs.map((r) => (r.target === null || r.target === 0 ? null : r.target)))
  if (targets.size > 1)
    throw new BenchstreamError(
      'BS_ERR_BAD_REQUEST',
      `the runs of one side must share one target; ` +
        `got ${[...targets].map((t) => (t === null ? 'none' : String(t))).join(', ')}`,
    )
  const target = [...targets][0] ?? null
  if (target === null)
    return {
      status: 'unthrottled',
      target: null,
      runs: runs.length,
      runsBelow: 0,
      medianRatio: null,
      shortfallPercent: null,
    }
  if (!(target > 0) || !Number.isFinite(target))
    throw new BenchstreamError(
      'BS_ERR_BAD_REQUEST',
      `a target must be a positive number of ops/s or null; got ${target}`,
    )
  const ratios = runs.map((r) => r.throughput / target)
  const runsBelow = ratios.filter((q) => q < tolerance).length
  const worst = Math.min(...ratios)
  return {
    status: runsBelow > 0 ? 'below target' : 'at target',
    target,
    runs: runs.length,
    runsBelow,
    medianRatio: median(ratios),
    shortfallPercent: Math.max(0, (1 - worst) * 100),
  }
}

/** The throughput verdict once targets are taken into account. */
export interface ThroughputVerdict {
  verdict: VerdictKind | 'at target' | 'below target'
  /** The statistical verdict, where throughput carries a signal; passed through unchanged. */
  statistics: Verdict | null
  baseline: SideThrottle
  candidate: SideThrottle
  reason: string
}

/**
 * Applies the rules above to a throughput comparison:
 * - candidate below target: `below target` (a finding), with the statistical
 *   verdict kept beside it (when both sides fell short, both hit a limit and
 *   the test is meaningful);
 * - candidate at target: `at target`, whatever the statistics say; the
 *   reason notes when the baseline had missed the same target;
 * - candidate unthrottled: the statistical verdict (`insufficient data` when none).
 */
export function throttledThroughputVerdict(
  baseline: SideThrottle,
  candidate: SideThrottle,
  statistics: Verdict | null,
): ThroughputVerdict {
  const base = { statistics, baseline, candidate }
  if (candidate.status === 'below target') {
    const ratio = ((candidate.medianRatio ?? 0) * 100).toFixed(1)
    return {
      ...base,
      verdict: 'below target',
      reason:
        `candidate fell short of its target of ${candidate.target} ops/s in ${candidate.runsBelow} of ` +
        (`${candidate.runs} runs (median ${ratio}% ` +
          `of target, worst ${(candidate.shortfallPercent ?? 0).toFixed(1)}% short)`),
    }
  }
  if (candidate.status === 'at target') {
    const also =
      baseline.status === 'below target' && baseline.target === candidate.target
        ? `; the baseline missed the same target by up to ${(baseline.shortfallPercent ?? 0).toFixed(1)}%`
        : baseline.status === 'at target'
          ? '; so did the baseline'
          : ''
    return {
      ...base,
      verdict: 'at target',
      reason:
        `candidate met its target of ${candidate.target} ops/s in every run, so its throughput carries ` +
        `no signal${also}`,
    }
  }
  if (statistics === null)
    return { ...base, verdict: 'insufficient data', reason: 'no statistical comparison was given' }
  const note =
    baseline.status === 'unthrottled'
      ? ''
      : ` (the baseline was throttled to ${baseline.target} ops/s: the runs are not comparable)`
  return { ...base, verdict: statistics.verdict, reason: `${statistics.reason}${note}` }
}
