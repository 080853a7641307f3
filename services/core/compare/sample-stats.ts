/**
 * Descriptive statistics of one sample (mean, median, quantiles, spread) and
 * the input checks every comparison function shares.
 */
import { BenchstreamError } from '../errors.js'
import type { SideSummary } from './types.js'

/** Throws BS_ERR_BAD_REQUEST unless every value is a finite number. */
export function requireFinite(name: string, values: readonly number[]): void {
  values.forEach((v, i) => {
    if (!Number.isFinite(v))
      throw new BenchstreamError('BS_ERR_BAD_REQUEST', `${name}[${i}] must be a finite number; got ${String(v)}`)
  })
}

/** Throws BS_ERR_BAD_REQUEST unless `lo < value < hi` (an open interval, as for a significance level). */
export function requireOpenRange(name: string, value: number, lo: number, hi: number): void {
  if (!(value > lo && value < hi))
    throw new BenchstreamError(
      'BS_ERR_BAD_REQUEST',
      `${name} must be greater than ${lo} and less than ${hi}; got ${value}`,
    )
}

/** Throws BS_ERR_BAD_REQUEST unless `lo <= value < hi`. */
export function requireHalfOpenRange(name: string, value: number, lo: number, hi: number): void {
  if (!(value >= lo && value < hi))
    throw new BenchstreamError('BS_ERR_BAD_REQUEST', `${name} must be at least ${lo} and less than ${hi}; got ${value}`)
}

/** Throws BS_ERR_BAD_REQUEST unless `value` is an integer in [lo, hi]. */
export function requireInt(name: string, value: number, lo: number, hi: number): void {
  if (!Number.isInteger(value) || value < lo || value > hi)
    throw new BenchstreamError('BS_ERR_BAD_REQUEST', `${name} must be an integer from ${lo} to ${hi}; got ${value}`)
}

export function mean(xs: readonly number[]): number {
  let s = 0
  for (const x of xs) s += x
  return xs.length === 0 ? Number.NaN : s / xs.length
}

/** Sample variance, n - 1 in the denominator (the unbiased estimate the t-tests use); NaN below 2 values. */
export function variance(xs: readonly number[]): number {
  if (xs.length < 2) return Number.NaN
  const m = mean(xs)
  let s = 0
  for (const x of xs) s += (x - m) * (x - m)
  return s / (xs.length - 1)
}

/**
 * Quantile of an ascending sorted sample with linear interpolation between
 * order statistics (Hyndman and Fan type 7, the default of R and NumPy), so
 * results can be checked with either. NaN for an empty sample.
 */
export function quantileSorted(sorted: readonly number[], q: number): number {
  const n = sorted.length
  if (n === 0) return Number.NaN
  const h = (n - 1) * q
  const lo = Math.floor(h)
  const a = sorted[lo] ?? Number.NaN
  const b = sorted[Math.min(n - 1, lo + 1)] ?? Number.NaN
  return a + (h - lo) * (b - a)
}

export function median(xs: readonly number[]): number {
  return quantileSorted(
    [...xs].sort((a, b) => a - b),
    0.5,
  )
}

/**
 * Relative change of `candidate` against `baseline` (0.05 = +5 %); null when the baseline is 0 or either is not finite.
 */
export function relativeChange(baseline: number, candidate: number): number | null {
  if (!Number.isFinite(baseline) || !Number.isFinite(candidate) || baseline === 0) return null
  return (candidate - baseline) / Math.abs(baseline)
}

/** The summary shown for one side of a comparison (see SideSummary). */
export function summarize(samples: readonly number[], runs: number): SideSummary {
  const sorted = [...samples].sort((a, b) => a - b)
  const med = quantileSorted(sorted, 0.5)
  const lo = sorted[0] ?? Number.NaN
  const hi = sorted[sorted.length - 1] ?? Number.NaN
  const dev = Math.max(Math.abs(hi - med), Math.abs(med - lo))
  return {
    n: samples.length,
    runs,
    median: med,
    mean: mean(samples),
    stddev: samples.length < 2 ? 0 : Math.sqrt(variance(samples)),
    min: lo,
    max: hi,
    spreadPercent: med === 0 || samples.length === 0 ? null : (dev / Math.abs(med)) * 100,
  }
}
