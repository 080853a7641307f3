/**
 * Welch's t-test (two-sided), defined to match ClickHouse's `welchTTest` (x is
 * its sample 0; NaN where ClickHouse gives NaN): the verdict for 3 + 3 runs,
 * and a cross-check beside Mann-Whitney. Definitions:
 * docs/design/statistical-tests.md#welchs-t-test-welch-t-testts.
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
