/**
 * The baseline of a live comparison (rule type vs_baseline, `benchstream run
 * --baseline <run|group:NAME>`), pure: per operation and offset from the
 * start, the median of the baseline's windows and their noise (1.4826 x the
 * median of consecutive differences). Alignment, noise and the rule:
 * docs/design/alerting.md#the-live-baseline-baseline-profilets.
 */
import type { BaselineFigure, VsBaselineRule } from '../../../schemas/alert-rules.v1.js'

/** One window of one baseline run and operation. */
export interface BaselineWindowRow {
  runId: string
  /** Windows since the run's first window (0 = the first). */
  offset: number
  op: string
  windowMs: number
  /** Operations in the window, every status. */
  count: number
  /** p50 and p99 of the window's successful operations from its merged histogram, µs; null without any. */
  p50Us?: number | null
  p99Us: number | null
}

interface Series {
  /** Offset -> expected value. */
  expected: Map<number, number>
  /** sigma of a window-to-window difference; undefined when too few windows to say. */
  sigma: number | undefined
}

export interface BaselineProfile {
  /** What the candidate named: a run id or group:NAME. */
  ref: string
  runs: string[]
  /** The baseline's window length; a candidate with another one cannot be aligned. */
  windowMs: number | undefined
  ops: Map<string, Record<BaselineFigure, Series>>
}

/** Consecutive-window differences needed before a sigma is trusted. */
export const MIN_DIFFERENCES = 4
/** 1 / Φ⁻¹(3/4): a median absolute deviation times this estimates a standard deviation (normal data). */
const MAD_TO_SIGMA = 1.4826
export const VS_BASELINE_DEFAULTS = {
  sigmas: 4,
  minPercent: 10,
  minOps: 20,
  figures: ['throughput', 'p99'] as BaselineFigure[],
} as const

export function buildBaselineProfile(
  ref: string,
  rows: readonly BaselineWindowRow[],
  minOps: number = VS_BASELINE_DEFAULTS.minOps,
): BaselineProfile {
  const windowMs = rows[0]?.windowMs
  const span = new Map<string, { first: number; last: number }>()
  for (const r of rows) {
    const s = span.get(r.runId)
    span.set(
      r.runId,
      s === undefined
        ? { first: r.offset, last: r.offset }
        : { first: Math.min(s.first, r.offset), last: Math.max(s.last, r.offset) },
    )
  }
  // op -> figure -> run -> offset -> value
  const values = new Map<string, Record<BaselineFigure, Map<string, Map<number, number>>>>()
  for (const r of rows) {
    const s = span.get(r.runId)!
    if (r.offset === s.first || r.offset === s.last) continue
    let v = values.get(r.op)
    if (v === undefined) values.set(r.op, (v = { throughput: new Map(), p50: new Map(), p99: new Map() }))
    put(v.throughput, r.runId, r.offset, (r.count * 1000) / r.windowMs)
    if (r.p50Us != null && r.count >= minOps) put(v.p50, r.runId, r.offset, r.p50Us)
    if (r.p99Us !== null && r.count >= minOps) put(v.p99, r.runId, r.offset, r.p99Us)
  }
  const ops = new Map<string, Record<BaselineFigure, Series>>()
  for (const [op, v] of values)
    ops.set(op, { throughput: series(v.throughput, span), p50: series(v.p50, span), p99: series(v.p99, span) })
  return { ref, runs: [...span.keys()].sort(), windowMs, ops }
}

function put(m: Map<string, Map<number, number>>, run: string, offset: number, value: number): void {
  let byOffset = m.get(run)
  if (byOffset === undefined) m.set(run, (byOffset = new Map()))
  byOffset.set(offset, value)
}

function series(byRun: Map<string, Map<number, number>>, span: Map<string, { first: number; last: number }>): Series {
  const atOffset = new Map<number, number[]>()
  const diffs: number[] = []
  for (const [run, byOffset] of byRun) {
    const s = span.get(run)!
    for (let k = s.first + 1; k < s.last; k++) {
      const x = byOffset.get(k)
      if (x === undefined) continue
      atOffset.set(k - s.first, [...(atOffset.get(k - s.first) ?? []), x])
      const prev = byOffset.get(k - 1)
      if (prev !== undefined) diffs.push(Math.abs(x - prev))
    }
  }
  const expected = new Map([...atOffset].map(([k, xs]) => [k, median(xs)]))
  return { expected, sigma: diffs.length >= MIN_DIFFERENCES ? MAD_TO_SIGMA * median(diffs) : undefined }
}

function median(xs: readonly number[]): number {
  const s = [...xs].sort((a, b) => a - b)
  const mid = s.length >> 1
  return s.length % 2 === 1 ? s[mid]! : (s[mid - 1]! + s[mid]!) / 2
}

/** One judged figure of one candidate window. */
export interface BaselineJudgement {
  figure: BaselineFigure
  bad: boolean
  value: number
  expected: number
  sigma: number
  /** The value beyond which the window is bad. */
  threshold: number
}

/**
 * The candidate's window at `offset` (windows since its first) for one
 * operation, against the baseline: every figure that can be judged (the
 * baseline has that offset and a sigma, and enough operations for a percentile).
 * Empty when nothing can be judged: the window is then neither good nor bad.
 */
export function judgeWindow(
  profile: BaselineProfile,
  rule: VsBaselineRule,
  op: string,
  offset: number,
  candidate: { count: number; windowMs: number; p50Us?: number | null; p99Us: number | null },
): BaselineJudgement[] {
  const s = profile.ops.get(op)
  if (s === undefined || profile.windowMs !== candidate.windowMs) return []
  const sigmas = rule.sigmas ?? VS_BASELINE_DEFAULTS.sigmas
  const minPercent = rule.minPercent ?? VS_BASELINE_DEFAULTS.minPercent
  const minOps = rule.minOps ?? VS_BASELINE_DEFAULTS.minOps
  const out: BaselineJudgement[] = []
  for (const figure of rule.figures ?? VS_BASELINE_DEFAULTS.figures) {
    const series = s[figure]
    const expected = series.expected.get(offset)
    if (expected === undefined || series.sigma === undefined) continue
    const margin = Math.max(sigmas * series.sigma, (minPercent / 100) * Math.abs(expected))
    if (figure === 'throughput') {
      const value = (candidate.count * 1000) / candidate.windowMs
      out.push({
        figure,
        value,
        expected,
        sigma: series.sigma,
        threshold: expected - margin,
        bad: value < expected - margin,
      })
    } else {
      const value = figure === 'p50' ? (candidate.p50Us ?? null) : candidate.p99Us
      if (value === null || candidate.count < minOps) continue
      out.push({
        figure,
        value,
        expected,
        sigma: series.sigma,
        threshold: expected + margin,
        bad: value > expected + margin,
      })
    }
  }
  return out
}

/**
 * How far a judged figure lies beyond the expected value, in units of its
 * margin (the distance from the expected value to the bar): 1 is on the bar.
 * Throughput and latencies have different units; this makes them comparable.
 */
export function exceedance(j: BaselineJudgement): number {
  const margin = Math.abs(j.threshold - j.expected)
  const beyond = j.figure === 'throughput' ? j.expected - j.value : j.value - j.expected
  if (margin === 0) return beyond > 0 ? Number.POSITIVE_INFINITY : 0
  return beyond / margin
}

/**
 * The figure that speaks for a window: the bad one furthest beyond its bar, else the first judged. `judged` is not
 * empty.
 */
export function worstJudgement(judged: readonly BaselineJudgement[]): BaselineJudgement {
  let worst: BaselineJudgement | undefined
  for (const j of judged) if (j.bad && (worst === undefined || exceedance(j) > exceedance(worst))) worst = j
  return worst ?? judged[0]!
}
