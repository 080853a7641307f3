/**
 * Writes real HdrHistogram interval logs the way YCSB does (3 significant
 * digits, timestamps relative to the StartTime comment, one file per
 * operation), with hdr-histogram-js, from latencies the test knows exactly.
 */
import { build, HistogramLogWriter } from 'hdr-histogram-js'
import { quantileRank } from '../../services/core/stats/histogram.js'

/** Deterministic PRNG (mulberry32): the same seed gives the same latencies. */
export function prng(seed: number): () => number {
  let a = seed >>> 0
  return () => {
    a = (a + 0x6d2b79f5) >>> 0
    let t = a
    t = Math.imul(t ^ (t >>> 15), t | 1)
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61)
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296
  }
}

/** Integer µs latencies from a lognormal with the given median and sigma. */
export function lognormalUs(rand: () => number, n: number, medianUs: number, sigma: number): number[] {
  const out: number[] = []
  for (let i = 0; i < n; i++) {
    // Box-Muller; 1 - rand() keeps log() away from 0.
    const z = Math.sqrt(-2 * Math.log(1 - rand())) * Math.cos(2 * Math.PI * rand())
    out.push(Math.max(1, Math.round(medianUs * Math.exp(sigma * z))))
  }
  return out
}

/**
 * One log: `intervals[i]` holds the latencies of interval i, which starts
 * i * intervalS seconds after startMs.
 */
export function writeYcsbHdrLog(
  startMs: number,
  intervalS: number,
  intervals: ReadonlyArray<readonly number[]>,
): string {
  let text = ''
  const writer = new HistogramLogWriter((s) => {
    text += s
  })
  writer.outputLogFormatVersion()
  writer.outputStartTime(startMs)
  writer.outputLegend()
  for (const [i, values] of intervals.entries()) {
    const h = build({ numberOfSignificantValueDigits: 3 })
    for (const v of values) h.recordValue(v)
    writer.outputIntervalHistogram(h, i * intervalS, (i + 1) * intervalS, 1)
    h.destroy()
  }
  return text
}

/** Exact quantile q of values, with the same rank rule as histogram.ts. */
export function exactQuantile(sorted: readonly number[], q: number): number {
  const rank = quantileRank(q, sorted.length)
  return sorted[rank - 1]!
}
