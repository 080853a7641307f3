/**
 * Circular block bootstrap of the difference in means of two sets of
 * per-window series (Politis and Romano 1992): consecutive windows are
 * correlated, so whole blocks are resampled. Block length by Politis and White
 * (2004, corrected 2009), the longest of any run; seeded PRNG, so deterministic.
 * Why: docs/design/statistical-tests.md#circular-block-bootstrap-block-bootstrapts.
 */
import { Rng } from '../workload/random.js'
import { quantileSorted, relativeChange, requireFinite, requireInt, requireOpenRange } from './sample-stats.js'

export interface BlockBootstrapOptions {
  /** Bootstrap replicates; the p-value's resolution is 1 / (replicates + 1). @default 2000 */
  replicates?: number
  /** PRNG seed. @default 1 */
  seed?: number
  /** Level of the confidence interval. @default 0.95 */
  confidenceLevel?: number
  /** Fixed block length; by default chosen from the data (see optimalBlockLength). */
  blockLength?: number
}

export interface BlockBootstrapResult {
  /** mean(candidate windows) - mean(baseline windows). */
  difference: number
  /** difference / |mean(baseline)|; null when the baseline mean is 0. */
  relativeChange: number | null
  /** Two-sided p-value of "the means are equal". */
  pValue: number
  /** Percentile interval of the relative change; null when the baseline mean is 0. */
  ci: { level: number; low: number; high: number } | null
  blockLength: number
  replicates: number
}

const DEFAULT_REPLICATES = 2000
// Politis and White's K_N: this many consecutive insignificant autocorrelations end the search.
const INSIGNIFICANT_RUN = 5

/**
 * Block length for the circular block bootstrap of the mean of `series`
 * (Politis and White 2004; Patton, Politis and White 2009), in
 * [1, ceil(min(3 sqrt(n), n/3))]; 1 for a constant series or fewer than 4
 * values. The three steps: docs/design/statistical-tests.md.
 */
export function optimalBlockLength(series: readonly number[]): number {
  const n = series.length
  if (n < 4) return 1
  const bMax = Math.max(1, Math.ceil(Math.min(3 * Math.sqrt(n), n / 3)))
  const m0 = series.reduce((a, b) => a + b, 0) / n
  const eps = series.map((v) => v - m0)
  const mMax = Math.min(n - 1, Math.ceil(Math.sqrt(n)) + INSIGNIFICANT_RUN)
  const acv: number[] = []
  for (let k = 0; k <= mMax; k++) {
    let s = 0
    for (let i = k; i < n; i++) s += (eps[i] ?? 0) * (eps[i - k] ?? 0)
    acv.push(s / n)
  }
  const acv0 = acv[0] ?? 0
  if (!(acv0 > 0)) return 1
  const critical = 2 * Math.sqrt(Math.log10(n) / n)
  let m: number | null = null
  for (let start = 1; start + INSIGNIFICANT_RUN - 1 <= mMax && m === null; start++) {
    let allSmall = true
    for (let k = start; k < start + INSIGNIFICANT_RUN; k++)
      if (Math.abs((acv[k] ?? 0) / acv0) >= critical) allSmall = false
    if (allSmall) m = start - 1
  }
  const bandwidth = Math.min(mMax, m === null ? mMax : 2 * Math.max(m, 1))
  let g = 0
  let longRun = acv0
  for (let k = 1; k <= bandwidth; k++) {
    const t = k / bandwidth
    const lambda = t <= 0.5 ? 1 : 2 * (1 - t)
    g += 2 * lambda * k * (acv[k] ?? 0)
    longRun += 2 * lambda * (acv[k] ?? 0)
  }
  const d = (4 / 3) * longRun * longRun
  if (!(d > 0)) return bMax
  const b = Math.cbrt((2 * g * g) / d) * Math.cbrt(n)
  return Math.min(bMax, Math.max(1, Math.ceil(b)))
}

/**
 * Circular block bootstrap test and interval for the difference in means of
 * the candidate's windows and the baseline's, each side given as one series
 * per run (blocks never span two runs). Returns the observed difference, a
 * two-sided p-value by the shifted bootstrap distribution
 * (p = (1 + #{|d* - d| >= |d|}) / (B + 1), which approximates the null
 * distribution of d by that of d* - d), and the percentile interval of the
 * relative change of means.
 */
export function blockBootstrapMeans(
  baseline: ReadonlyArray<readonly number[]>,
  candidate: ReadonlyArray<readonly number[]>,
  options: BlockBootstrapOptions = {},
): BlockBootstrapResult {
  const replicates = options.replicates ?? DEFAULT_REPLICATES
  const level = options.confidenceLevel ?? 0.95
  requireInt('replicates', replicates, 1, 1_000_000)
  requireOpenRange('confidenceLevel', level, 0, 1)
  baseline.forEach((s, i) => requireFinite(`baseline[${i}]`, s))
  candidate.forEach((s, i) => requireFinite(`candidate[${i}]`, s))
  const runs = [...baseline, ...candidate].filter((s) => s.length > 0)
  const blockLength = options.blockLength ?? Math.max(1, ...runs.map((s) => optimalBlockLength(s)))
  requireInt('blockLength', blockLength, 1, Number.MAX_SAFE_INTEGER)
  const meanA = pooledMean(baseline)
  const meanB = pooledMean(candidate)
  const difference = meanB - meanA
  const rng = new Rng(options.seed ?? 1)
  const diffs = new Float64Array(replicates)
  const rels: number[] = []
  for (let r = 0; r < replicates; r++) {
    const a = resampledMean(baseline, blockLength, rng)
    const b = resampledMean(candidate, blockLength, rng)
    diffs[r] = b - a
    const rel = relativeChange(a, b)
    if (rel !== null) rels.push(rel)
  }
  let extreme = 0
  for (const d of diffs) if (Math.abs(d - difference) >= Math.abs(difference)) extreme++
  rels.sort((x, y) => x - y)
  const rel = relativeChange(meanA, meanB)
  return {
    difference,
    relativeChange: rel,
    pValue: (1 + extreme) / (replicates + 1),
    ci:
      rel === null || rels.length === 0
        ? null
        : { level, low: quantileSorted(rels, (1 - level) / 2), high: quantileSorted(rels, (1 + level) / 2) },
    blockLength,
    replicates,
  }
}

function pooledMean(runs: ReadonlyArray<readonly number[]>): number {
  let sum = 0
  let n = 0
  for (const s of runs)
    for (const v of s) {
      sum += v
      n++
    }
  return n === 0 ? Number.NaN : sum / n
}

/** Mean of one circular block resample of every run (each keeps its length), pooled over the runs. */
function resampledMean(runs: ReadonlyArray<readonly number[]>, blockLength: number, rng: Rng): number {
  let sum = 0
  let count = 0
  for (const s of runs) {
    const n = s.length
    const b = Math.min(blockLength, n)
    let taken = 0
    while (taken < n) {
      const start = rng.int(n)
      for (let j = 0; j < b && taken < n; j++, taken++) sum += s[(start + j) % n] ?? 0
    }
    count += n
  }
  return count === 0 ? Number.NaN : sum / count
}
