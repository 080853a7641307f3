/**
 * Repetitions until decided: the group-sequential design behind
 * `repetitions: { min, max }` and the decision on each figure of a
 * comparison (regression, improvement, no change, or undecided) that both a
 * sequential experiment and `benchstream experiment bisect` act on.
 *
 * - Looks: after every round of runs from `min` to `max`, one comparison.
 *   Round r gets the share of alpha that a Lan-DeMets spending function
 *   (O'Brien-Fleming-type by default, or Pocock-type) adds between r - 1 and
 *   r planned repetitions; the first look gets what it spends up to `min`.
 *   The shares add up to alpha, and a false call at any look needs a false
 *   call at some look's level, so by Boole's inequality the rate of false
 *   calls over all looks is at most alpha, whatever the dependence between
 *   the looks and whatever test each look uses, as long as each is valid at
 *   its level. Testing every look at alpha (the "naive" rule this replaces)
 *   has no such bound: test/unit/sequential-design.test.ts shows it calling
 *   identical setups different far more often than alpha.
 * - No change is a decision only when proven: Schuirmann's two one-sided
 *   tests (TOST) at the look's level find the change within ±minEffect.
 *   A high p-value proves nothing.
 * - An undecided figure says what it could have found: the smallest change
 *   that Welch's test at the look's level finds with 80% power at the noise
 *   seen (a lower bound of the power, computed exactly for normal values).
 *
 * Why each choice, and the proofs: docs/design/sequential.md.
 */
import type { ComparedFigure, ReleaseComparison } from '../../../schemas/compare-api.v1.js'
import type { Decisions, FigureDecision } from '../../../schemas/experiment-decisions.v1.js'
import { closest } from '../suggest.js'
import { logGamma, normalCdf, normalUpperTail, studentTQuantile, studentTTwoSided } from './distributions.js'
import { benjaminiHochberg } from './multiple-testing.js'
import { figureSpec } from './run-values.js'
import { mean, variance } from './sample-stats.js'

export type SpendingFunction = 'obrien-fleming' | 'pocock'

export interface SequentialDesign {
  alpha: number
  min: number
  max: number
  spending: SpendingFunction
}

/** The power an undecided figure's detectable change is given for. */
export const DETECTION_POWER = 0.8

/** z with P(Z > z) = q, 0 < q < 1: bisection on the upper tail, accurate where q is tiny. */
export function normalUpperQuantile(q: number): number {
  if (!(q > 0 && q < 1)) return Number.NaN
  let lo = -40
  let hi = 40
  for (let i = 0; i < 200 && hi - lo > 1e-13; i++) {
    const mid = (lo + hi) / 2
    if (normalUpperTail(mid) > q) lo = mid
    else hi = mid
  }
  return (lo + hi) / 2
}

/**
 * Alpha spent up to information fraction t in (0, 1] (Lan and DeMets 1983):
 * O'Brien-Fleming-type 2 - 2 Φ(z_{1-α/2} / √t), Pocock-type α ln(1 + (e - 1) t).
 * Both are α at t = 1 and increase with t.
 */
export function alphaSpent(spending: SpendingFunction, alpha: number, t: number): number {
  if (!(t > 0)) return 0
  const f = Math.min(1, t)
  if (spending === 'pocock') return alpha * Math.log(1 + (Math.E - 1) * f)
  return 2 * normalUpperTail(normalUpperQuantile(alpha / 2) / Math.sqrt(f))
}

/** The level of the look after `round` repetitions (min <= round <= max): its share of alpha. */
export function lookAlpha(d: SequentialDesign, round: number): number {
  if (!Number.isInteger(round) || round < d.min || round > d.max)
    throw new RangeError(`a look is after ${d.min} to ${d.max} repetitions, not ${round}`)
  const at = (r: number): number => alphaSpent(d.spending, d.alpha, r / d.max)
  return round === d.min ? at(round) : at(round) - at(round - 1)
}

/** P(T >= t) for Student's t with df degrees of freedom. */
function upperT(t: number, df: number): number {
  if (t === Infinity) return 0
  if (t === -Infinity) return 1
  const two = studentTTwoSided(t, df) / 2
  return t >= 0 ? two : 1 - two
}

export interface EquivalenceResult {
  /** max of the two one-sided p-values; null when untestable (fewer than 2 values a side, a baseline mean of 0). */
  pValue: number | null
  /** candidate - baseline, on the test's scale (logarithms for latencies and throughput). */
  difference: number
  /** The equivalence margins on that scale: the change is proven within (low, high) when pValue < alpha. */
  low: number
  high: number
}

/**
 * Schuirmann's TOST on Welch's statistic: H0 change <= -minEffect or change >= +minEffect, rejected when both
 * one-sided tests reject. On logarithms (logScale, every value positive) the margins are ln(1 - m) and ln(1 + m),
 * a relative change within ±m; otherwise ±m times the baseline's mean. Zero spread on both sides: decided by the
 * difference itself (p 0 inside the margins or for identical values, 1 outside).
 */
export function equivalenceTest(
  baseline: readonly number[],
  candidate: readonly number[],
  o: { minEffect: number; logScale: boolean },
): EquivalenceResult {
  const logs = o.logScale && [...baseline, ...candidate].every((x) => x > 0)
  const a = logs ? baseline.map(Math.log) : [...baseline]
  const b = logs ? candidate.map(Math.log) : [...candidate]
  const ma = mean(a)
  const difference = mean(b) - ma
  const low = logs ? Math.log1p(-Math.min(o.minEffect, 1 - 1e-12)) : -o.minEffect * Math.abs(ma)
  const high = logs ? Math.log1p(o.minEffect) : o.minEffect * Math.abs(ma)
  const out = { difference, low, high }
  if (a.length < 2 || b.length < 2) return { ...out, pValue: null }
  const va = variance(a) / a.length
  const vb = variance(b) / b.length
  const se = Math.sqrt(va + vb)
  // Every value of both sides the same (an error rate of 0 throughout): no change at all, whatever the margins.
  if (!(se > 0) && difference === 0) return { ...out, pValue: 0 }
  if (!(high > low)) return { ...out, pValue: 1 }
  if (!(se > 0)) return { ...out, pValue: difference > low && difference < high ? 0 : 1 }
  const df = ((va + vb) * (va + vb)) / ((va * va) / (a.length - 1) + (vb * vb) / (b.length - 1))
  return { ...out, pValue: Math.max(upperT((difference - low) / se, df), upperT((high - difference) / se, df)) }
}

// ---------------------------------------------------------------- power

/** Bins of the χ² integral: a valid bound with any number; with 1000 it is within 0.01 of one with 16,000. */
const POWER_BINS = 1000
const chiGrids = new Map<number, { uMax: number; cdf: Float64Array }>()

/** P(U <= u) for U ~ χ²(2k): 1 - e^{-u/2} Σ_{j<k} (u/2)^j / j!, summed in log space. */
function chiSquareEvenCdf(u: number, k: number): number {
  if (u <= 0) return 0
  const x = u / 2
  let s = 0
  for (let j = 0; j < k; j++) s += Math.exp(j * Math.log(x) - x - logGamma(j + 1))
  return Math.max(0, 1 - s)
}

function chiGrid(k: number): { uMax: number; cdf: Float64Array } {
  let g = chiGrids.get(k)
  if (g === undefined) {
    const uMax = 2 * k + 40 * Math.sqrt(k) + 40
    const cdf = new Float64Array(POWER_BINS + 1)
    for (let i = 0; i <= POWER_BINS; i++) cdf[i] = chiSquareEvenCdf((i * uMax) / POWER_BINS, k)
    chiGrids.set(k, (g = { uMax, cdf }))
  }
  return g
}

/**
 * A lower bound, exact up to the bins, of the power of Welch's two-sided test at `level` on n + n normal values of
 * one standard deviation `sd` whose means differ by delta >= 0: P(a rejection in the change's direction with a
 * difference of at least minDelta). The mean difference D is N(delta, 2 sd²/n), independent of
 * U = (n-1)(s_a² + s_b²)/sd² ~ χ²(2(n-1)); Welch's se is sd √(U / (n(n-1))) and its df at least n - 1, so its
 * critical value is at most c = t_{1-level/2, n-1}. The miss probability given U, Φ((max(c se, minDelta) - delta) /
 * sd_D), grows with U: summed over bins of U at each bin's upper end, plus all of U beyond the last bin.
 */
export function welchPowerLowerBound(delta: number, sd: number, n: number, level: number, minDelta = 0): number {
  if (!(n >= 2) || !(sd > 0) || !(level > 0 && level < 1)) return Number.NaN
  const k = Math.floor(n) - 1
  const c = studentTQuantile(1 - level / 2, k)
  const sdD = sd * Math.sqrt(2 / n)
  const { uMax, cdf } = chiGrid(k)
  let miss = 1 - cdf[POWER_BINS]!
  for (let i = 1; i <= POWER_BINS; i++) {
    const u = (i * uMax) / POWER_BINS
    const bar = Math.max(c * sd * Math.sqrt(u / (n * k)), minDelta)
    miss += (cdf[i]! - cdf[i - 1]!) * normalCdf((bar - delta) / sdD)
  }
  return Math.max(0, 1 - miss)
}

/** The smallest delta whose power bound (welchPowerLowerBound) is at least `power`; NaN when n < 2 or sd is not > 0. */
export function detectableDifference(
  sd: number,
  n: number,
  level: number,
  power = DETECTION_POWER,
  minDelta = 0,
): number {
  if (!(n >= 2) || !(sd > 0)) return Number.NaN
  let hi = Math.max(sd, minDelta)
  while (welchPowerLowerBound(hi, sd, n, level, minDelta) < power && hi < 1e12 * sd) hi *= 2
  let lo = 0
  // To 1e-5 of the difference: far below how precisely anyone reads a detectable change.
  for (let i = 0; i < 60 && hi - lo > 1e-5 * hi; i++) {
    const mid = (lo + hi) / 2
    if (welchPowerLowerBound(mid, sd, n, level, minDelta) >= power) hi = mid
    else lo = mid
  }
  return hi
}

/**
 * The smallest increase and decrease, in percent, that a figure's test at `level` finds with 80% power at the
 * noise of its values (pooled standard deviation, on logarithms where the figure's changes are factors), given
 * `n` values a side (the fewer of the two) and that a change must reach minEffect to be called. null when the noise
 * cannot be measured (fewer than 2 values a side).
 */
export function detectableChange(
  baseline: readonly number[],
  candidate: readonly number[],
  o: { level: number; minEffect: number; logScale: boolean },
): { increasePercent: number; decreasePercent: number } | null {
  if (baseline.length < 2 || candidate.length < 2) return null
  const logs = o.logScale && [...baseline, ...candidate].every((x) => x > 0)
  const a = logs ? baseline.map(Math.log) : [...baseline]
  const b = logs ? candidate.map(Math.log) : [...candidate]
  const n = Math.min(a.length, b.length)
  const sd = Math.sqrt((variance(a) + variance(b)) / 2)
  const ma = Math.abs(mean(a))
  if (!(sd > 0)) return { increasePercent: o.minEffect * 100, decreasePercent: o.minEffect * 100 }
  if (logs) {
    const up = detectableDifference(sd, n, o.level, DETECTION_POWER, Math.log1p(o.minEffect))
    const down = detectableDifference(sd, n, o.level, DETECTION_POWER, -Math.log1p(-Math.min(o.minEffect, 0.999999)))
    return { increasePercent: Math.expm1(up) * 100, decreasePercent: -Math.expm1(-down) * 100 }
  }
  if (!(ma > 0)) return null
  const d = (detectableDifference(sd, n, o.level, DETECTION_POWER, o.minEffect * ma) / ma) * 100
  return { increasePercent: d, decreasePercent: d }
}

// ---------------------------------------------------------------- named figures

/** Whether a figure name's workload part (`workloade:` or `e:`; none: any) is this workload. */
export function namesWorkload(name: string, workload: string): boolean {
  const colon = name.indexOf(':')
  if (colon < 0) return true
  const w = name.slice(0, colon).trim()
  return workload === w || workload === `workload${w}`
}

/** Whether a figure name (`[workload:]label`, the label's unit optional, case and spaces ignored) names this row. */
export function namesFigure(name: string, f: Pick<ComparedFigure, 'workload' | 'label'>): boolean {
  const norm = (s: string): string => s.toLowerCase().replace(/\s+/g, ' ').trim()
  const colon = name.indexOf(':')
  const label = norm(colon < 0 ? name : name.slice(colon + 1))
  if (!namesWorkload(name, f.workload)) return false
  return norm(f.label) === label || norm(f.label.replace(/\s*\([^)]*\)$/, '')) === label
}

/** The names of `figures` that may name a figure of this workload; undefined (every figure) when none are named. */
export function figuresOf(figures: readonly string[] | undefined, workload: string): string[] | undefined {
  return figures === undefined ? undefined : figures.filter((n) => namesWorkload(n, workload))
}

// ---------------------------------------------------------------- decisions

const fmtP = (p: number): string => (p < 0.001 ? p.toExponential(1) : p.toFixed(3))
const pct = (x: number): string => `${x >= 0 ? '+' : ''}${x.toFixed(1)}%`

/**
 * Each figure of a comparison decided or not, at the comparison's own alpha and minEffect (the look's): compare's
 * regression and improvement stand (adjusted over the comparison's figures), at target and below target are rules
 * that stand too, and a figure with no significant change is "no change" only where the equivalence test, adjusted
 * over the figures it is run on (Benjamini-Hochberg), proves it within ±minEffect. `figures` names those that must be
 * decided (undefined: all; empty: none); the names that match none are listed in `unknown`, with the nearest label.
 */
export function decideFigures(
  c: Pick<ReleaseComparison, 'alpha' | 'minEffect' | 'figures'>,
  o: { figures?: readonly string[]; round: number; stop: Decisions['stop']; detectable?: boolean },
): Decisions {
  const named = o.figures ?? []
  const rows = o.figures === undefined ? c.figures : c.figures.filter((f) => named.some((n) => namesFigure(n, f)))
  // Suggestions by the label without its unit too, as names are mostly written.
  const byName = new Map<string, string>()
  for (const f of c.figures) byName.set(f.label.replace(/\s*\([^)]*\)$/, ''), f.label).set(f.label, f.label)
  const unknown = named
    .filter((n) => !c.figures.some((f) => namesFigure(n, f)))
    .map((n) => {
      const near = closest(n.includes(':') ? n.slice(n.indexOf(':') + 1) : n, byName.keys())
      return `${n}${near === undefined ? '' : ` (did you mean ${byName.get(near)}?)`}`
    })
  const values = (xs: ReadonlyArray<number | null>): number[] => xs.filter((x): x is number => x !== null)
  const logScale = (f: ComparedFigure): boolean => figureSpec(f.figure)?.logScale ?? false
  const tested = rows
    .map((f) => ({
      f,
      e: equivalenceTest(values(f.baseline.values), values(f.candidate.values), {
        minEffect: c.minEffect,
        logScale: logScale(f),
      }),
    }))
    .filter((x) => x.f.verdict === 'no significant change' && x.e.pValue !== null)
  const adjusted = new Map<ComparedFigure, number>()
  const bh = benjaminiHochberg(tested.map((x) => x.e.pValue!))
  tested.forEach((x, i) => adjusted.set(x.f, bh[i]!))
  const margin = `±${(c.minEffect * 100).toFixed(c.minEffect * 100 < 1 ? 2 : 0)}%`
  const figures = rows.map((f): FigureDecision => {
    const a = values(f.baseline.values)
    const b = values(f.candidate.values)
    const eq = adjusted.get(f) ?? null
    const p = f.adjustedPValue ?? f.pValue
    const base = {
      workload: f.workload,
      label: f.label,
      verdict: f.verdict,
      pValue: p,
      equivalenceP: eq,
      changePercent: f.changePercent,
      runs: { baseline: a.length, candidate: b.length },
      detectable: null,
    }
    const change = f.changePercent === null ? '' : ` (${pct(f.changePercent)})`
    switch (f.verdict) {
      case 'regression':
      case 'improvement':
        return { ...base, decision: f.verdict, reason: `${f.verdict}${change}, p=${p === null ? '–' : fmtP(p)}` }
      case 'below target':
        return { ...base, decision: 'regression', reason: `below target: ${f.reason}`.slice(0, 2000) }
      case 'at target':
        return { ...base, decision: 'at target', reason: `at target: ${f.reason}`.slice(0, 2000) }
      default:
        break
    }
    if (eq !== null && eq < c.alpha)
      return {
        ...base,
        decision: 'no change',
        reason: `no change beyond ${margin}${change}: equivalence p=${fmtP(eq)} < ${fmtP(c.alpha)}`,
      }
    // What it could have found: for the comparison that is reported (a look that only decides whether to go on needs
    // not compute it).
    const detectable =
      o.detectable === false
        ? null
        : detectableChange(a, b, { level: c.alpha, minEffect: c.minEffect, logScale: logScale(f) })
    const why =
      f.verdict === 'insufficient data'
        ? 'insufficient data'
        : `p=${p === null ? '–' : fmtP(p)}, equivalence p=${eq === null ? '–' : fmtP(eq)}, not below ${fmtP(c.alpha)}`
    const could =
      detectable === null
        ? ''
        : `; could have found +${detectable.increasePercent.toFixed(1)}% ` +
          `or -${detectable.decreasePercent.toFixed(1)}% ` +
          `with ${DETECTION_POWER * 100}% power (Welch's t at ${fmtP(c.alpha)})`
    return { ...base, detectable, decision: 'undecided', reason: `undecided${change}: ${why}${could}` }
  })
  return {
    alpha: c.alpha,
    minEffect: c.minEffect,
    round: o.round,
    stop: o.stop,
    decided: unknown.length === 0 && figures.every((f) => f.decision !== 'undecided'),
    figures,
    unknown,
  }
}
