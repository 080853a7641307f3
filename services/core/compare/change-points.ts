/**
 * E-divisive means change-point detection (Matteson and James 2014), as
 * MongoDB's signal-processing-algorithms and Apache Otava use it: energy
 * statistic with α = 1, recursive bisection, permutation test with p = (1 +
 * #{permuted >= observed}) / (R + 1). O(R · n²) per change point. The
 * algorithm and where we differ from MongoDB's: docs/design/change-points.md.
 */
import { Rng } from '../workload/random.js'
import { mean, requireFinite, requireInt, requireOpenRange } from './sample-stats.js'

export interface ChangePointOptions {
  /** Significance level of the permutation test. @default 0.05 */
  significance?: number
  /** Permutations per test; p-values have a resolution of 1 / (permutations + 1). @default 199 */
  permutations?: number
  /** Fewest points on each side of a change (at least 2, for the within-sample term). @default 3 */
  minSegment?: number
  /** Exponent α of the distances, in (0, 2). @default 1 */
  exponent?: number
  /** PRNG seed of the permutations. @default 1 */
  seed?: number
  /** Stop after this many change points. @default unlimited */
  maxChangePoints?: number
}

export interface ChangePoint {
  /** Index of the first point after the change. */
  index: number
  /** p-value of the permutation test when the change was accepted. */
  pValue: number
  /** Q̂ of the split. */
  q: number
  /** Means of the final segments before and after the change. */
  meanBefore: number
  meanAfter: number
  /** (meanAfter - meanBefore) / |meanBefore|; null when meanBefore is 0. */
  relativeChange: number | null
}

/** Change points of `series`, ascending by index (see the file comment). */
export function eDivisive(series: readonly number[], options: ChangePointOptions = {}): ChangePoint[] {
  const significance = options.significance ?? 0.05
  const permutations = options.permutations ?? 199
  const minSegment = options.minSegment ?? 3
  const exponent = options.exponent ?? 1
  const maxChangePoints = options.maxChangePoints ?? Number.MAX_SAFE_INTEGER
  requireFinite('series', series)
  requireOpenRange('significance', significance, 0, 1)
  requireInt('permutations', permutations, 1, 1_000_000)
  requireInt('minSegment', minSegment, 2, Number.MAX_SAFE_INTEGER)
  requireOpenRange('exponent', exponent, 0, 2)
  requireInt('maxChangePoints', maxChangePoints, 0, Number.MAX_SAFE_INTEGER)
  const rng = new Rng(options.seed ?? 1)
  const accepted: Array<{ index: number; pValue: number; q: number }> = []

  while (accepted.length < maxChangePoints) {
    const bounds = [0, ...accepted.map((c) => c.index).sort((a, b) => a - b), series.length]
    const segments = bounds.slice(1).map((end, i) => [bounds[i] ?? 0, end] as const)
    let best: { index: number; q: number } | null = null
    for (const [a, b] of segments) {
      const c = bestSplit(series.slice(a, b), minSegment, exponent)
      if (c !== null && (best === null || c.q > best.q)) best = { index: a + c.tau, q: c.q }
    }
    if (best === null) break
    let atLeast = 0
    for (let r = 0; r < permutations; r++) {
      let maxQ = Number.NEGATIVE_INFINITY
      for (const [a, b] of segments) {
        const c = bestSplit(shuffled(series.slice(a, b), rng), minSegment, exponent)
        if (c !== null && c.q > maxQ) maxQ = c.q
      }
      if (maxQ >= best.q) atLeast++
    }
    const pValue = (1 + atLeast) / (permutations + 1)
    if (pValue > significance) break
    accepted.push({ ...best, pValue })
  }

  const sorted = [...accepted].sort((a, b) => a.index - b.index)
  return sorted.map((c, i) => {
    const before = series.slice(sorted[i - 1]?.index ?? 0, c.index)
    const after = series.slice(c.index, sorted[i + 1]?.index ?? series.length)
    const meanBefore = mean(before)
    const meanAfter = mean(after)
    return {
      ...c,
      meanBefore,
      meanAfter,
      relativeChange: meanBefore === 0 ? null : (meanAfter - meanBefore) / Math.abs(meanBefore),
    }
  })
}

/**
 * Q̂ of splitting `z` into z[0, tau) and z[tau, n) (see the file comment); NaN
 * when either part has fewer than 2 points.
 */
export function energyQ(z: readonly number[], tau: number, exponent = 1): number {
  const x = z.slice(0, tau)
  const y = z.slice(tau)
  const m = x.length
  const n = y.length
  if (m < 2 || n < 2) return Number.NaN
  let cross = 0
  for (const xi of x) for (const yj of y) cross += Math.abs(xi - yj) ** exponent
  return (
    ((m * n) / (m + n)) *
    ((2 / (m * n)) * cross -
      withinSum(x, exponent) / ((m * (m - 1)) / 2) -
      withinSum(y, exponent) / ((n * (n - 1)) / 2))
  )
}

function withinSum(v: readonly number[], exponent: number): number {
  let s = 0
  for (let i = 0; i < v.length; i++)
    for (let k = i + 1; k < v.length; k++) s += Math.abs((v[i] ?? 0) - (v[k] ?? 0)) ** exponent
  return s
}

/**
 * The split of `z` with the largest Q̂ and at least `minSegment` points on
 * each side, in O(n²): moving one point from Y to X changes the three sums
 * by that point's distances to the points before and after it.
 */
function bestSplit(z: readonly number[], minSegment: number, exponent: number): { tau: number; q: number } | null {
  const n = z.length
  if (n < 2 * minSegment) return null
  const d = (i: number, j: number): number => Math.abs((z[i] ?? 0) - (z[j] ?? 0)) ** exponent
  // Start with X empty: every pair is within Y.
  let cross = 0
  let within = 0
  let withinY = 0
  for (let i = 0; i < n; i++) for (let j = i + 1; j < n; j++) withinY += d(i, j)
  let best: { tau: number; q: number } | null = null
  for (let t = 0; t < n - minSegment; t++) {
    // Move point t from Y to X: X = z[0, t+1).
    let toX = 0
    for (let i = 0; i < t; i++) toX += d(t, i)
    let toY = 0
    for (let j = t + 1; j < n; j++) toY += d(t, j)
    cross += toY - toX
    within += toX
    withinY -= toY
    const m = t + 1
    const k = n - m
    if (m < minSegment) continue
    const q =
      ((m * k) / (m + k)) * ((2 / (m * k)) * cross - within / ((m * (m - 1)) / 2) - withinY / ((k * (k - 1)) / 2))
    if (best === null || q > best.q) best = { tau: m, q }
  }
  return best
}

/** A shuffled copy (Fisher-Yates). */
function shuffled(v: number[], rng: Rng): number[] {
  for (let i = v.length - 1; i > 0; i--) {
    const j = rng.int(i + 1)
    const t = v[i] ?? 0
    v[i] = v[j] ?? 0
    v[j] = t
  }
  return v
}
