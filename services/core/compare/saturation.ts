/**
 * Where a sweep stops scaling: saturation (by threads: growth below `minGrowth`
 * to the next point; by target: the last point that met its target) and the
 * knee (p99 more than `kneeFactor` times the previous point's). Points are
 * sorted by x, ties kept in input order. Why these rules: docs/design/sweeps.md.
 */
import { BenchstreamError } from '../errors.js'
import { requireFinite } from './sample-stats.js'
import { DEFAULT_TARGET_TOLERANCE } from './throttled.js'

export interface SweepPoint {
  /** Threads or target ops/s. */
  x: number
  /** Throughput at this point, ops/s. */
  throughput: number
  /** p99 latency at this point, µs; null when unknown. */
  p99Us: number | null
}

export interface SaturationOptions {
  /** What x is: a number of threads (or clients), or a target in ops/s. @default 'threads' */
  x?: 'threads' | 'target'
  /** Thread sweeps: relative throughput growth to the next point below which the sweep has saturated. @default 0.05 */
  minGrowth?: number
  /** p99 growth factor from one point to the next that marks the knee. @default 2 */
  kneeFactor?: number
  /** For target sweeps: fraction of the target a point must reach to have met it. @default 0.99 */
  targetTolerance?: number
}

export interface SweepAnalysis {
  /** The points, sorted by x. */
  points: SweepPoint[]
  /**
   * The last point that still scaled; null while the sweep still scales at its
   * last point. nextGrowth: relative throughput change to the next point
   * (null when there is none, i.e. a target sweep that missed its first target).
   */
  saturation: { index: number; x: number; throughput: number; nextGrowth: number | null } | null
  /** The first point whose p99 is more than kneeFactor × the previous one; null when there is none. */
  knee: { index: number; x: number; p99Us: number; previousP99Us: number; factor: number } | null
  /** Index of the point with the highest throughput. */
  peak: { index: number; x: number; throughput: number }
}

/** Finds saturation and the knee of a sweep (see the file comment); throws BS_ERR_BAD_REQUEST for an empty sweep. */
export function analyzeSweep(points: readonly SweepPoint[], options: SaturationOptions = {}): SweepAnalysis {
  const minGrowth = options.minGrowth ?? 0.05
  const kneeFactor = options.kneeFactor ?? 2
  if (points.length === 0) throw new BenchstreamError('BS_ERR_BAD_REQUEST', 'a sweep needs at least one point')
  const tolerance = options.targetTolerance ?? DEFAULT_TARGET_TOLERANCE
  if (!(minGrowth >= 0) || !(kneeFactor > 1) || !(tolerance > 0 && tolerance <= 1))
    throw new BenchstreamError(
      'BS_ERR_BAD_REQUEST',
      `minGrowth must be at least 0, kneeFactor greater than 1 and targetTolerance in (0, 1]; got ` +
        `${minGrowth}, ${kneeFactor} and ${tolerance}`,
    )
  requireFinite(
    'x',
    points.map((p) => p.x),
  )
  requireFinite(
    'throughput',
    points.map((p) => p.throughput),
  )
  const sorted = points
    .map((p, i) => ({ p, i }))
    .sort((a, b) => a.p.x - b.p.x || a.i - b.i)
    .map((e) => ({ ...e.p }))

  const saturation = options.x === 'target' ? targetSaturation(sorted, tolerance) : threadSaturation(sorted, minGrowth)

  let knee: SweepAnalysis['knee'] = null
  for (let i = 1; i < sorted.length && knee === null; i++) {
    const prev = sorted[i - 1]?.p99Us
    const cur = sorted[i]?.p99Us
    if (prev === null || prev === undefined || cur === null || cur === undefined || !(prev > 0)) continue
    if (cur > kneeFactor * prev)
      knee = { index: i, x: sorted[i]?.x ?? 0, p99Us: cur, previousP99Us: prev, factor: cur / prev }
  }

  let peakIndex = 0
  sorted.forEach((p, i) => {
    if (p.throughput > (sorted[peakIndex]?.throughput ?? Number.NEGATIVE_INFINITY)) peakIndex = i
  })
  const peak = sorted[peakIndex] ?? sorted[0]
  return {
    points: sorted,
    saturation,
    knee,
    peak: { index: peakIndex, x: peak?.x ?? 0, throughput: peak?.throughput ?? 0 },
  }
}

function growth(a: SweepPoint, b: SweepPoint): number {
  if (a.throughput > 0) return (b.throughput - a.throughput) / a.throughput
  return b.throughput > a.throughput ? Number.POSITIVE_INFINITY : 0
}

function threadSaturation(sorted: readonly SweepPoint[], minGrowth: number): SweepAnalysis['saturation'] {
  for (let i = 0; i + 1 < sorted.length; i++) {
    const a = sorted[i]
    const b = sorted[i + 1]
    // A repeated x says nothing about scaling.
    if (a === undefined || b === undefined || a.x === b.x) continue
    const g = growth(a, b)
    if (g < minGrowth) return { index: i, x: a.x, throughput: a.throughput, nextGrowth: g }
  }
  return null
}

function targetSaturation(sorted: readonly SweepPoint[], tolerance: number): SweepAnalysis['saturation'] {
  const missed = sorted.findIndex((p) => p.throughput < tolerance * p.x)
  if (missed === -1) return null
  const i = Math.max(0, missed - 1)
  const a = sorted[i]
  const b = sorted[i + 1]
  if (a === undefined) return null
  return {
    index: i,
    x: a.x,
    throughput: a.throughput,
    nextGrowth: missed === 0 || b === undefined ? null : growth(a, b),
  }
}
