/**
 * Welch's t-test: do two samples have the same mean, without assuming the
 * same variance? Used for the verdict when there are too few repetitions for
 * Mann-Whitney to reach the significance level (3 + 3 runs), and reported
 * beside it as a cross-check.
 *
 * Definitions, chosen to match ClickHouse's `welchTTest`
 * (src/AggregateFunctions/AggregateFunctionWelchTTest.cpp, AggregateFunctionTTest.h),
 * x being its first sample (sample_index 0):
 * - s_x^2, s_y^2: sample variances with n - 1 in the denominator.
 * - se = sqrt(s_x^2/n_x + s_y^2/n_y); t = (mean_x - mean_y) / se.
 * - Degrees of freedom (Welch-Satterthwaite):
 *   df = (s_x^2/n_x + s_y^2/n_y)^2 / (s_x^4/(n_x^2 (n_x-1)) + s_y^4/(n_y^2 (n_y-1))).
 * - p = 2 * P(T_df <= -|t|), two-sided only.
 * - With a confidence level L: the interval of mean_x - mean_y,
 *   (mean_x - mean_y) ± t_{(1+L)/2, df} * se.
 * - Undefined (NaN) when either sample has fewer than 2 values, or when t is
 *   not finite (both variances 0): ClickHouse returns NaN there too.
 * ClickHouse computes the variances from running sums (sum x, sum x^2), we
 * from the mean; the results agree to rounding for data of sane magnitude.
 */
import { studentTQuantile, studentTTwoSided } from './distributions.js'
import { mean, requireFinite, requireOpenRange, variance } from './sample-stats.js'

export interface WelchResult {
  /** (mean_x - mean_y) / se. */
  t: number
  /** Welch-Satterthwaite degrees of freedom. */
  df: number
  pValue: number
  /** mean_x - mean_y. */
  difference: number
  /** Confidence interval of mean_x - mean_y, when a level was given. */
  ci: { level: number; low: number; high: number } | null
}

/** Welch's two-sided t-test of x against y; `confidenceLevel` in (0, 1) adds the interval of mean_x - mean_y. */
export function welchTTest(x: readonly number[], y: readonly number[], confidenceLevel?: number): WelchResult {
  requireFinite('x', x)
  requireFinite('y', y)
  if (confidenceLevel !== undefined) requireOpenRange('confidenceLevel', confidenceLevel, 0, 1)
  const nx = x.length
  const ny = y.length
  const difference = mean(x) - mean(y)
  const undefinedResult: WelchResult = { t: Number.NaN, df: Number.NaN, pValue: Number.NaN, difference, ci: null }
  if (nx < 2 || ny < 2) return undefinedResult
  const vx = variance(x) / nx
  const vy = variance(y) / ny
  const se = Math.sqrt(vx + vy)
  const t = difference / se
  if (!Number.isFinite(t)) return undefinedResult
  const df = ((vx + vy) * (vx + vy)) / ((vx * vx) / (nx - 1) + (vy * vy) / (ny - 1))
  const pValue = Math.min(1, studentTTwoSided(t, df))
  let ci: WelchResult['ci'] = null
  if (confidenceLevel !== undefined) {
    const half = studentTQuantile((1 + confidenceLevel) / 2, df) * se
    ci = { level: confidenceLevel, low: difference - half, high: difference + half }
  }
  return { t, df, pValue, difference, ci }
}
