/**
 * Bounds for the seeded statistical tests, computed from distributions rather
 * than read off a run (issue 19: "the bound is derived, not tuned"):
 * - binomial quantiles: a count of independent seeded trials, each an event
 *   of probability at most p, exceeds `binomialAtMost(n, p, tail)` with
 *   probability at most `tail` (and falls below `binomialAtLeast` likewise);
 * - the variance of a mean of consecutive AR(1) values;
 * - the power of Welch's t-test on 3 + 3 normal values (the release
 *   comparison's test on the logarithms of 3 + 3 runs), from the exact
 *   joint distribution of the mean difference and the two sample variances.
 */
import { normalCdf, studentTQuantile } from '../../services/core/compare/distributions.js'

/** The tail probability used for every count bound: a correct implementation fails a bound 1 time in a million. */
export const TAIL = 1e-6

/** P(X = k) for X ~ Binomial(n, p), k = 0..n, summed in log space so that p near 0 or 1 does not underflow. */
function binomialPmf(n: number, p: number): number[] {
  if (!(p > 0 && p < 1)) return Array.from({ length: n + 1 }, (_, k) => (p <= 0 ? +(k === 0) : +(k === n)))
  const out: number[] = []
  let log = n * Math.log1p(-p)
  const odds = Math.log(p) - Math.log1p(-p)
  for (let k = 0; k <= n; k++) {
    out.push(Math.exp(log))
    log += Math.log((n - k) / (k + 1)) + odds
  }
  return out
}

/** The smallest k with P(X > k) <= tail, X ~ Binomial(n, p): a count above k has probability at most `tail`. */
export function binomialAtMost(n: number, p: number, tail = TAIL): number {
  const pmf = binomialPmf(n, p)
  let above = 0
  for (let k = n; k >= 0; k--) {
    if (above + pmf[k]! > tail) return k
    above += pmf[k]!
  }
  return 0
}

/** The largest k with P(X < k) <= tail, X ~ Binomial(n, p): a count below k has probability at most `tail`. */
export function binomialAtLeast(n: number, p: number, tail = TAIL): number {
  const pmf = binomialPmf(n, p)
  let below = 0
  for (let k = 0; k <= n; k++) {
    if (below + pmf[k]! > tail) return k
    below += pmf[k]!
  }
  return n
}

/**
 * Variance of the mean of `w` consecutive values of a stationary AR(1) series
 * with unit variance and coefficient phi: (1/w²) Σ_{i,j} phi^|i-j|. For phi >= 0
 * it is also the largest variance of a mean of any w values of the series at
 * distinct times (spacing them out only lowers the correlations).
 */
export function ar1MeanVariance(phi: number, w: number): number {
  let s = 0
  for (let i = 0; i < w; i++) for (let j = 0; j < w; j++) s += phi ** Math.abs(i - j)
  return s / (w * w)
}

/**
 * For two samples of 3 normal values with the same standard deviation `sd`,
 * whose means differ by delta > 0: P(Welch's two-sided p <= level and the
 * mean difference >= minDelta).
 *
 * Exact up to the numerical integration: the mean difference D is
 * N(delta, 2 sd²/3), independent of the sample variances V_i = sd² u_i / 2 with
 * u_i ~ χ²(2) (exponential with mean 2). Given u_a, u_b, Welch's statistic is
 * D / se with se² = sd² (u_a + u_b) / 6 and df = 2 (u_a + u_b)² / (u_a² + u_b²),
 * so the probability is a normal tail; it is averaged over a `grid` x `grid`
 * midpoint grid of the χ²(2) quantiles (u = -2 ln(1 - q)). The critical value
 * is taken at df rounded down to 0.01, which can only lower the result. With
 * grid 100 the result is within 1e-3 of grid 400.
 */
export function welchPowerThreeAndThree(
  delta: number,
  sd: number,
  level: number,
  minDelta: number,
  grid = 100,
): number {
  const critical = new Map<number, number>()
  const c = (df: number): number => {
    const key = Math.floor(df * 100) / 100
    let v = critical.get(key)
    if (v === undefined) critical.set(key, (v = studentTQuantile(1 - level / 2, key)))
    return v
  }
  const sdD = sd * Math.sqrt(2 / 3)
  let sum = 0
  for (let i = 0; i < grid; i++) {
    const ua = -2 * Math.log(1 - (i + 0.5) / grid)
    for (let j = 0; j < grid; j++) {
      const ub = -2 * Math.log(1 - (j + 0.5) / grid)
      const se = sd * Math.sqrt((ua + ub) / 6)
      const bar = Math.max(c((2 * (ua + ub) ** 2) / (ua * ua + ub * ub)) * se, minDelta)
      sum += 1 - normalCdf((bar - delta) / sdD)
    }
  }
  return sum / (grid * grid)
}

/**
 * An upper bound, with no numerical approximation, of 1 - welchPowerThreeAndThree(delta, sd, level, minDelta).
 * Welch's df is at least n - 1 = 2 whatever the variances, so the critical value c₂ at df 2 is at least the one
 * used; given u = u_a + u_b ~ χ²(4) the miss probability is then at most
 * Φ((max(c₂ se(u), minDelta) - delta) / sd_D), which increases with u. Summed over bins of u at each bin's upper end,
 * plus the probability beyond the last bin.
 */
export function welchMissBoundThreeAndThree(delta: number, sd: number, level: number, minDelta: number): number {
  const c2 = studentTQuantile(1 - level / 2, 2)
  const sdD = sd * Math.sqrt(2 / 3)
  const chi4Cdf = (u: number): number => 1 - Math.exp(-u / 2) * (1 + u / 2)
  const miss = (u: number): number => normalCdf((Math.max(c2 * sd * Math.sqrt(u / 6), minDelta) - delta) / sdD)
  const uMax = 400
  const bins = 20_000
  let bound = 1 - chi4Cdf(uMax)
  for (let k = 0; k < bins; k++) {
    const lo = (k * uMax) / bins
    const hi = ((k + 1) * uMax) / bins
    bound += (chi4Cdf(hi) - chi4Cdf(lo)) * miss(hi)
  }
  return bound
}
