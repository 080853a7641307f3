/**
 * A log-linear latency histogram (HdrHistogram's layout, 128 sub-buckets per
 * power of two), mergeable by adding counts. Integer µs: exact below 256 µs,
 * within 0.4% above, up to 2^32 µs in 3,328 buckets. The same index function
 * is in SQL (schemas/clickhouse). docs/design/histograms.md.
 */

import { HISTOGRAM_BUCKETS } from '../../../schemas/events.v1.js'

/** log2 of the number of linear sub-buckets per power of two. */
export const SUB_BUCKET_BITS = 7
const SUB = 1 << SUB_BUCKET_BITS // 128
/** Values below this have a bucket of their own. */
const EXACT_LIMIT = SUB * 2 // 256
/** Largest value the layout can hold: 2^32 - 1 µs. */
export const MAX_TRACKABLE_US = 0xffff_ffff
/** One past the largest bucket index: the schema's HISTOGRAM_BUCKETS, which the wire format checks against. */
export const BUCKET_COUNT = (32 - SUB_BUCKET_BITS + 1) * SUB // 3,328: index of 2^32 - 1 is 3,327
if (BUCKET_COUNT !== HISTOGRAM_BUCKETS)
  throw new Error(`histogram layout has ${BUCKET_COUNT} buckets; schemas/events.v1.ts says ${HISTOGRAM_BUCKETS}`)

/** Bucket index of a value in µs; values are clamped to [0, MAX_TRACKABLE_US]. */
export function bucketIndex(valueUs: number): number {
  if (valueUs < EXACT_LIMIT) return valueUs <= 0 ? 0 : Math.floor(valueUs)
  const v = valueUs >= MAX_TRACKABLE_US ? MAX_TRACKABLE_US : Math.floor(valueUs)
  const shift = 31 - Math.clz32(v) - SUB_BUCKET_BITS
  return shift * SUB + (v >>> shift)
}

/** Lowest value in µs that falls into a bucket. */
export function bucketLow(index: number): number {
  if (index < EXACT_LIMIT) return index
  const shift = Math.floor(index / SUB) - 1
  return (index - shift * SUB) * 2 ** shift
}

/** Width of a bucket in µs. */
export function bucketWidth(index: number): number {
  return index < EXACT_LIMIT ? 1 : 2 ** (Math.floor(index / SUB) - 1)
}

/** The value reported for a bucket: the midpoint of the integers it holds. */
export function bucketValue(index: number): number {
  return bucketLow(index) + (bucketWidth(index) - 1) / 2
}

/**
 * Rank (1-based) of quantile q among n values, as HdrHistogram 2.1.4 (the
 * version YCSB 0.17.0 ships, so what YCSB prints) defines it: q*n rounded
 * half up, at least 1 (`(long)(percentile/100 * count + 0.5)`). Newer
 * HdrHistograms round up instead; we follow the one our users compare with.
 * The SQL twin is bs_rank (schemas/clickhouse).
 */
export function quantileRank(q: number, n: number): number {
  return Math.max(1, Math.floor(q * n + 0.5))
}

/**
 * The value reported for a bucket: its midpoint rounded to whole µs (exact
 * below 256 µs). Reports clamp it into [min, max] of the data, so a
 * percentile is a whole number never above the maximum, as YCSB prints.
 */
export function bucketReportValue(index: number): number {
  return Math.round(bucketValue(index))
}

/**
 * Buckets a histogram allocates at first, and the alignment of its range:
 * 8 doubles are 64 bytes, the largest typed array V8 keeps inside the JS
 * heap (--typed-array-max-size-in-heap), so a window of nearby values
 * makes no native allocation at all.
 */
const MIN_SPAN = 8
const NO_COUNTS = new Float64Array(0)

/**
 * Histogram used while aggregating: dense over the index range it has used,
 * from MIN_SPAN buckets, at least doubling when a value falls outside (50,000
 * one-event runs at 3,328 buckets each kept 2.6 GB in RSS: issue 9,
 * docs/design/histograms.md#memory-while-aggregating).
 */
export class Histogram {
  /** Counts of buckets [base, base + counts.length). */
  private counts = NO_COUNTS
  private base = 0
  total = 0
  minIndex = BUCKET_COUNT
  maxIndex = -1

  record(valueUs: number): void {
    const i = bucketIndex(valueUs)
    const counts = this.counts
    const j = i - this.base
    // The per-event path: a value inside the range held. Anything else takes recordBucket, which grows the range.
    if (j >= 0 && j < counts.length) {
      counts[j]! += 1
      this.total += 1
      if (i < this.minIndex) this.minIndex = i
      if (i > this.maxIndex) this.maxIndex = i
    } else {
      this.recordBucket(i, 1)
    }
  }

  recordBucket(index: number, count: number): void {
    let j = index - this.base
    if (j < 0 || j >= this.counts.length) {
      this.cover(index, index)
      j = index - this.base
    }
    this.counts[j]! += count
    this.total += count
    if (index < this.minIndex) this.minIndex = index
    if (index > this.maxIndex) this.maxIndex = index
  }

  /** Buckets allocated: the range held, not the layout (memory per window row). */
  get heldBuckets(): number {
    return this.counts.length
  }

  /** Count of one bucket (0 outside the range held). */
  countAt(index: number): number {
    return this.counts[index - this.base] ?? 0
  }

  merge(other: Histogram): void {
    if (other.maxIndex < 0) return
    this.cover(other.minIndex, other.maxIndex)
    for (let i = other.minIndex; i <= other.maxIndex; i++) {
      const c = other.counts[i - other.base]!
      if (c !== 0) this.recordBucket(i, c)
    }
  }

  /** Non-empty buckets as [index, count] pairs in index order. */
  entries(): Array<[number, number]> {
    const out: Array<[number, number]> = []
    for (let i = this.minIndex; i <= this.maxIndex; i++) {
      const c = this.counts[i - this.base]!
      if (c !== 0) out.push([i, c])
    }
    return out
  }

  /** Bucket map as ClickHouse's Map(UInt16, UInt64) takes it in JSONEachRow. */
  toMap(): Record<string, number> {
    const out: Record<string, number> = {}
    for (let i = this.minIndex; i <= this.maxIndex; i++) {
      const c = this.counts[i - this.base]!
      if (c !== 0) out[i] = c
    }
    return out
  }

  /** Grows the range held to include buckets [lo, hi] (valid indexes), at least doubling it, aligned to MIN_SPAN. */
  private cover(lo: number, hi: number): void {
    const held = this.counts.length
    const oldLo = this.base
    const oldHi = this.base + held
    if (held > 0 && lo >= oldLo && hi < oldHi) return
    let from = Math.floor(Math.min(lo, held > 0 ? oldLo : lo) / MIN_SPAN) * MIN_SPAN
    let to = Math.min(BUCKET_COUNT, Math.ceil((Math.max(hi, held > 0 ? oldHi - 1 : hi) + 1) / MIN_SPAN) * MIN_SPAN)
    // Doubling keeps the copies few when values spread out one bucket at a time; grow towards the new values.
    const want = Math.min(BUCKET_COUNT, Math.max(MIN_SPAN, 2 * held))
    if (to - from < want) {
      if (held > 0 && lo < oldLo) from = Math.max(0, to - want)
      else to = Math.min(BUCKET_COUNT, from + want)
      if (to - from < want) from = Math.max(0, to - want)
    }
    const counts = new Float64Array(to - from)
    if (held > 0) counts.set(this.counts, oldLo - from)
    this.counts = counts
    this.base = from
  }

  quantile(q: number): number {
    return quantileFromEntries(this.entries(), q)
  }
}

/**
 * Quantile q (0..1) from [index, count] pairs sorted by index: the report
 * value (whole µs) of the bucket holding rank quantileRank(q, n), clamped
 * into [minUs, maxUs] when the exact extremes are known; 0 when empty.
 */
export function quantileFromEntries(
  entries: ReadonlyArray<readonly [number, number]>,
  q: number,
  minUs = 0,
  maxUs = Number.POSITIVE_INFINITY,
): number {
  let n = 0
  for (const [, c] of entries) n += c
  if (n === 0) return 0
  const rank = quantileRank(q, n)
  let seen = 0
  let index = entries[entries.length - 1]![0]
  for (const [i, c] of entries) {
    seen += c
    if (seen >= rank) {
      index = i
      break
    }
  }
  return Math.min(maxUs, Math.max(minUs, bucketReportValue(index)))
}

/** Entries from a ClickHouse Map as returned in JSON (`{"12": 3}`), sorted by index. */
export function entriesFromMap(map: Record<string, number | string>): Array<[number, number]> {
  return Object.entries(map)
    .map(([k, v]): [number, number] => [Number(k), Number(v)])
    .sort((a, b) => a[0] - b[0])
}
