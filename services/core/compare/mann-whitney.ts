/**
 * Mann-Whitney U test (Wilcoxon rank-sum), defined to match ClickHouse's
 * `mannWhitneyUTest` (x is its sample 0; U_x returned; normal approximation
 * with continuity correction and tie correction), so tests can compare the
 * two. `auto` (default) uses the exact distribution for small samples, as
 * benchstat does. Definitions: docs/design/statistical-tests.md.
 */
import { normalUpperTail } from './distributions.js'
import { requireFinite } from './sample-stats.js'

export type Alternative = 'two-sided' | 'less' | 'greater'

export interface MannWhitneyOptions {
  /** @default 'two-sided' */
  alternative?: Alternative
  /** Continuity correction of the normal approximation. @default true (ClickHouse's default) */
  continuityCorrection?: boolean
  /**
   * `exact`: the permutation distribution of the rank sum, ties included.
   * `normal`: the approximation above (ClickHouse's).
   * `auto`: exact while n1 + n2 <= EXACT_LIMIT, normal above.
   * @default 'auto'
   */
  method?: 'auto' | 'exact' | 'normal'
}

export interface MannWhitneyResult {
  /** U_x: pairs with x > y, ties counting 1/2 (ClickHouse's u_statistic). */
  u: number
  pValue: number
  method: 'exact' | 'normal'
  n1: number
  n2: number
}

/**
 * Largest n1 + n2 for which `auto` uses the exact distribution. Its cost is
 * about N * min(n1,n2) * (2 * min(n1,n2) * N) additions: 5e7 at N = 100,
 * tens of milliseconds. Repetitions of a benchmark run never come close.
 */
export const EXACT_LIMIT = 100

/** Mann-Whitney U test of x against y (see the file comment for the definitions). */
export function mannWhitneyU(
  x: readonly number[],
  y: readonly number[],
  options: MannWhitneyOptions = {},
): MannWhitneyResult {
  requireFinite('x', x)
  requireFinite('y', y)
  const n1 = x.length
  const n2 = y.length
  const alternative = options.alternative ?? 'two-sided'
  if (n1 === 0 || n2 === 0) return { u: Number.NaN, pValue: Number.NaN, method: 'normal', n1, n2 }
  const { ranks, tieSum } = midranks([...x, ...y])
  let r1 = 0
  for (let i = 0; i < n1; i++) r1 += ranks[i] ?? 0
  const ux = r1 - (n1 * (n1 + 1)) / 2
  const method =
    options.method === 'exact' || ((options.method ?? 'auto') === 'auto' && n1 + n2 <= EXACT_LIMIT) ? 'exact' : 'normal'
  const pValue =
    method === 'exact'
      ? exactP(ranks, n1, r1, alternative)
      : normalP(ux, n1, n2, tieSum, alternative, options.continuityCorrection ?? true)
  return { u: ux, pValue: Math.min(1, Math.max(0, pValue)), method, n1, n2 }
}

/**
 * The smallest two-sided p-value the exact test can give for these sample
 * sizes (complete separation, no ties): 2 / C(n1 + n2, n1). When it is above
 * the significance level the test cannot find anything, however large the
 * change: 3 + 3 runs give 0.1, 3 + 4 give 0.057, 4 + 4 give 0.029.
 */
export function minimumTwoSidedP(n1: number, n2: number): number {
  // C(n, k) as a running product; exact in doubles for the sizes used here.
  let c = 1
  const k = Math.min(n1, n2)
  for (let i = 1; i <= k; i++) c = (c * (n1 + n2 - k + i)) / i
  return Math.min(1, 2 / c)
}

/** Midranks (1-based) of values in their original order, and sum(t^3 - t) over tie groups. */
function midranks(values: readonly number[]): { ranks: number[]; tieSum: number } {
  const order = values.map((_, i) => i).sort((a, b) => (values[a] ?? 0) - (values[b] ?? 0))
  const ranks = Array.from({ length: values.length }, () => 0)
  let tieSum = 0
  for (let left = 0; left < order.length;) {
    let right = left
    while (right < order.length && values[order[right] ?? 0] === values[order[left] ?? 0]) right++
    const t = right - left
    tieSum += t * t * t - t
    const rank = (left + right + 1) / 2
    for (let i = left; i < right; i++) ranks[order[i] ?? 0] = rank
    left = right
  }
  return { ranks, tieSum }
}

function normalP(ux: number, n1: number, n2: number, tieSum: number, alternative: Alternative, cc: boolean): number {
  const n = n1 + n2
  const uy = n1 * n2 - ux
  const meanRank = (n1 * n2) / 2 + (cc ? 0.5 : 0)
  const tieCorrection = 1 - tieSum / (n * n * n - n)
  const sd = Math.abs(tieCorrection) > Number.EPSILON ? Math.sqrt((tieCorrection * n1 * n2 * (n + 1)) / 12) : 0
  const u = alternative === 'two-sided' ? Math.max(ux, uy) : alternative === 'greater' ? ux : uy
  const z = sd > Number.EPSILON ? (u - meanRank) / sd : 0
  return alternative === 'two-sided' ? 2 * normalUpperTail(Math.abs(z)) : normalUpperTail(z)
}

/**
 * Exact p-value: every way of choosing which n1 of the N pooled values are
 * "x" is equally likely under the null hypothesis. Counts subsets by their
 * sum of doubled midranks (integers, so comparisons are exact) with a
 * knapsack-style table over the smaller sample.
 */
function exactP(ranks: readonly number[], n1: number, r1: number, alternative: Alternative): number {
  const n = ranks.length
  const doubled = ranks.map((r) => Math.round(2 * r))
  // Count subsets of the smaller sample's size; R_y = N(N+1)/2 - R_x converts back.
  const useX = n1 <= n - n1
  const k = useX ? n1 : n - n1
  const total2 = n * (n + 1) // doubled sum of all ranks
  const observed2 = useX ? Math.round(2 * r1) : total2 - Math.round(2 * r1)
  const maxSum = [...doubled]
    .sort((a, b) => b - a)
    .slice(0, k)
    .reduce((a, b) => a + b, 0)
  // counts[j * (maxSum + 1) + s]: subsets of size j with doubled rank sum s.
  const width = maxSum + 1
  const counts = new Float64Array((k + 1) * width)
  counts[0] = 1
  let reached = 0
  for (const w of doubled) {
    reached = Math.min(maxSum, reached + w)
    for (let j = k; j >= 1; j--) {
      const to = j * width
      const from = (j - 1) * width
      for (let s = reached; s >= w; s--) {
        const c = counts[from + s - w] ?? 0
        if (c !== 0) counts[to + s] = (counts[to + s] ?? 0) + c
      }
    }
  }
  let total = 0
  let atMost = 0
  let atLeast = 0
  for (let s = 0; s <= maxSum; s++) {
    const c = counts[k * width + s] ?? 0
    total += c
    if (s <= observed2) atMost += c
    if (s >= observed2) atLeast += c
  }
  // P(R_x >= observed) when counting x; counting y reverses the direction.
  const pXAtLeast = (useX ? atLeast : atMost) / total
  const pXAtMost = (useX ? atMost : atLeast) / total
  if (alternative === 'greater') return pXAtLeast
  if (alternative === 'less') return pXAtMost
  return Math.min(1, 2 * Math.min(pXAtLeast, pXAtMost))
}
