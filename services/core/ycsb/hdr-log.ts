/**
 * Reader for HdrHistogram interval logs (the files YCSB writes with
 * `measurementtype=hdrhistogram hdrhistogram.fileoutput=true`), converting
 * each interval's histogram into Benchstream's bucket layout
 * (services/core/stats/histogram.ts). Pure: text and bytes in, buckets out.
 *
 * Log format (HdrHistogram's HistogramLogWriter, format version 1.x):
 *
 *   #[Histogram log format version 1.3]
 *   #[StartTime: 1700000000.123 (seconds since epoch), Tue Nov 14 ...]
 *   #[BaseTime: 1700000000.123 (seconds since epoch)]        (optional)
 *   "StartTimestamp","Interval_Length","Interval_Max","Interval_Compressed_Histogram"
 *   [Tag=xxx,]<start s>,<length s>,<max>,<base64 histogram>
 *
 * Histogram encoding (big-endian), the V2 "compressed" form:
 *
 *   i32 cookie 0x1c849304 (| 0x10 word-size flag)   i32 deflated length   zlib bytes
 *
 * inflating to the V2 form (cookie 0x1c849303 | 0x10), which is also accepted as is:
 *
 *   i32 cookie  i32 payload length  i32 normalizing index offset  i32 significant digits
 *   i64 lowest discernible value  i64 highest trackable value  f64 int-to-double ratio
 *   payload: ZigZag LEB128 (at most 9 bytes) counts in index order; a negative
 *   value -n stands for n empty buckets.
 */
import { inflateSync } from 'node:zlib'
import { BenchstreamError } from '../errors.js'
import { bucketIndex, MAX_TRACKABLE_US } from '../stats/histogram.js'

const V2_COOKIE = 0x1c849303
const V2_COMPRESSED_COOKIE = 0x1c849304
/** The word-size nibble (0x10 in practice) is masked off, as HdrHistogram's own reader does. */
const cookieBase = (cookie: number): number => (cookie & ~0xf0) >>> 0
const V2_HEADER_BYTES = 40
/** An inflated histogram larger than this is not a latency histogram (3 digits over 2^63 is ~100 KB). */
const MAX_INFLATED_BYTES = 16 * 1024 * 1024
/** Relative timestamps: HdrHistogram's reader treats a timestamp more than a year before StartTime as relative. */
const RELATIVE_THRESHOLD_S = 365 * 24 * 3600

/** One interval of a log, in Benchstream's buckets. */
export interface HdrInterval {
  /** 1-based line number in the log text. */
  line: number
  /** Interval start, µs since epoch (or since the log's zero when it has no StartTime/BaseTime). */
  startUs: number
  lengthUs: number
  /** `Tag=` of the line, if any. */
  tag: string | undefined
  /** Operations in the interval (sum of the counts). */
  total: number
  /** Benchstream bucket index -> count, sorted by index. */
  buckets: Array<[index: number, count: number]>
}

export interface HdrLog {
  /** µs since epoch from `#[StartTime: ...]`, if present. */
  startTimeUs: number | undefined
  /** µs since epoch from `#[BaseTime: ...]`, if present. */
  baseTimeUs: number | undefined
  intervals: HdrInterval[]
}

/** A decoded HdrHistogram: its layout and its non-empty counts by HdrHistogram index. */
export interface HdrHistogram {
  significantDigits: number
  lowestDiscernibleValue: number
  highestTrackableValue: number
  counts: Array<[hdrIndex: number, count: number]>
}

function decodeError(where: string, what: string, cause?: unknown): BenchstreamError {
  return new BenchstreamError('BS_ERR_DECODE', `${where}: ${what}`, cause === undefined ? undefined : { cause })
}

/**
 * Parses an interval log. `source` names the file in error messages.
 * Throws BS_ERR_DECODE naming the line and what is wrong.
 */
export function parseHdrLog(text: string, source = 'HdrHistogram log'): HdrLog {
  let startTimeS: number | undefined
  let baseTimeS: number | undefined
  const raw: Array<{ line: number; startS: number; lengthS: number; tag: string | undefined; hist: HdrHistogram }> = []
  const lines = text.split(/\r?\n/)
  for (let n = 0; n < lines.length; n++) {
    const line = lines[n]!.trim()
    const where = `${source} line ${n + 1}`
    if (line === '') continue
    if (line.startsWith('#')) {
      const st = /^#\[StartTime:\s*([0-9.eE+-]+)/.exec(line)
      if (st !== null) startTimeS = seconds(st[1]!, where, 'StartTime')
      const bt = /^#\[BaseTime:\s*([0-9.eE+-]+)/.exec(line)
      if (bt !== null) baseTimeS = seconds(bt[1]!, where, 'BaseTime')
      continue
    }
    // The legend line ("StartTimestamp",...), with or without quotes.
    if (/^"?StartTimestamp"?,/.test(line)) continue
    let rest = line
    let tag: string | undefined
    if (rest.startsWith('Tag=')) {
      const comma = rest.indexOf(',')
      if (comma === -1) throw decodeError(where, 'a Tag= prefix must be followed by ",<start>,<length>,<max>,<histogram>"')
      tag = rest.slice(4, comma)
      rest = rest.slice(comma + 1)
    }
    const fields = rest.split(',')
    if (fields.length !== 4) {
      throw decodeError(where, `expected 4 comma-separated fields [Tag=x,]<start s>,<length s>,<max>,<base64 histogram>; found ${fields.length}`)
    }
    const startS = seconds(fields[0]!, where, 'interval start')
    const lengthS = seconds(fields[1]!, where, 'interval length')
    const hist = decodeHistogramBase64(fields[3]!.trim(), where)
    raw.push({ line: n + 1, startS, lengthS, tag, hist })
  }
  // Where timestamps count from follows HdrHistogram's HistogramLogReader:
  // BaseTime if given; else StartTime when the timestamps are plainly relative
  // (more than a year before it, as YCSB's are); else they are absolute.
  const first = raw[0]
  let zeroS = 0
  if (baseTimeS !== undefined) zeroS = baseTimeS
  else if (startTimeS !== undefined && first !== undefined && first.startS < startTimeS - RELATIVE_THRESHOLD_S) zeroS = startTimeS
  return {
    startTimeUs: startTimeS === undefined ? undefined : Math.round(startTimeS * 1e6),
    baseTimeUs: baseTimeS === undefined ? undefined : Math.round(baseTimeS * 1e6),
    intervals: raw.map((r) => {
      const buckets = toBenchstreamBuckets(r.hist)
      let total = 0
      for (const [, c] of buckets) total += c
      return { line: r.line, startUs: Math.round((zeroS + r.startS) * 1e6), lengthUs: Math.round(r.lengthS * 1e6), tag: r.tag, total, buckets }
    }),
  }
}

function seconds(s: string, where: string, what: string): number {
  const v = Number(s.trim())
  if (s.trim() === '' || !Number.isFinite(v) || v < 0) throw decodeError(where, `${what} ${JSON.stringify(s)} is not a non-negative number of seconds`)
  return v
}

const BASE64 = /^[A-Za-z0-9+/]+={0,2}$/

/** Decodes one base64 histogram (compressed or plain V2). */
export function decodeHistogramBase64(b64: string, where = 'histogram'): HdrHistogram {
  if (b64 === '' || !BASE64.test(b64) || b64.length % 4 === 1) throw decodeError(where, `histogram is not valid base64 (${b64.length} characters, expected A-Z a-z 0-9 + / with = padding)`)
  return decodeHistogram(Buffer.from(b64, 'base64'), where)
}

/** Decodes one histogram from its bytes: the compressed V2 form, or the plain V2 form. */
export function decodeHistogram(bytes: Buffer, where = 'histogram'): HdrHistogram {
  if (bytes.length < 8) throw decodeError(where, `histogram is truncated: ${bytes.length} bytes, the header alone is 8`)
  const cookie = bytes.readUInt32BE(0)
  const base = cookieBase(cookie)
  if (base === V2_COMPRESSED_COOKIE) {
    const len = bytes.readInt32BE(4)
    if (len < 0 || 8 + len > bytes.length) throw decodeError(where, `histogram is truncated: header says ${len} compressed bytes, ${bytes.length - 8} follow`)
    let inflated: Buffer
    try {
      inflated = inflateSync(bytes.subarray(8, 8 + len), { maxOutputLength: MAX_INFLATED_BYTES })
    } catch (err) {
      throw decodeError(where, `compressed histogram does not inflate (zlib: ${(err as Error).message})`, err)
    }
    if (inflated.length < 4 || cookieBase(inflated.readUInt32BE(0)) !== V2_COOKIE) {
      throw decodeError(where, `inflated histogram has cookie 0x${inflated.length < 4 ? '?' : inflated.readUInt32BE(0).toString(16)}; expected V2 0x${V2_COOKIE.toString(16)}`)
    }
    return decodeV2(inflated, where)
  }
  if (base === V2_COOKIE) return decodeV2(bytes, where)
  throw decodeError(where, `histogram cookie 0x${cookie.toString(16)} is not supported; expected V2 compressed 0x${V2_COMPRESSED_COOKIE.toString(16)} or V2 0x${V2_COOKIE.toString(16)} (word-size bits 0xf0 ignored); V0/V1 logs come from HdrHistogram before 2.1.5`)
}

function decodeV2(b: Buffer, where: string): HdrHistogram {
  if (b.length < V2_HEADER_BYTES) throw decodeError(where, `histogram is truncated: ${b.length} bytes, the V2 header alone is ${V2_HEADER_BYTES}`)
  const payloadLength = b.readInt32BE(4)
  // Bytes 8..11 (normalizing index offset) and 32..39 (int-to-double ratio)
  // only matter for DoubleHistogram, which has a wrapper cookie of its own;
  // hdr-histogram-js also writes them differently (1 and an integer 1).
  const significantDigits = b.readInt32BE(12)
  const lowest = Number(b.readBigInt64BE(16))
  const highest = Number(b.readBigInt64BE(24))
  if (payloadLength < 0 || V2_HEADER_BYTES + payloadLength > b.length) {
    throw decodeError(where, `histogram is truncated: header says ${payloadLength} payload bytes, ${b.length - V2_HEADER_BYTES} follow`)
  }
  if (!(significantDigits >= 0 && significantDigits <= 5)) throw decodeError(where, `significant digits ${significantDigits}; HdrHistogram allows 0..5`)
  if (!(lowest >= 1)) throw decodeError(where, `lowest discernible value ${lowest}; must be >= 1`)
  if (!(highest >= 2 * lowest)) throw decodeError(where, `highest trackable value ${highest}; must be >= 2 * lowest (${2 * lowest})`)
  const counts: Array<[number, number]> = []
  const end = V2_HEADER_BYTES + payloadLength
  let pos = V2_HEADER_BYTES
  let index = 0
  while (pos < end) {
    // ZigZag over LEB128-64b9B: 8 bytes of 7 bits, a 9th byte of 8 bits.
    let u = 0
    let mul = 1
    let i = 0
    for (;; i++) {
      if (pos >= end) throw decodeError(where, `histogram payload is truncated inside a count at byte ${pos}`)
      const byte = b[pos++]!
      if (i === 8) {
        u += byte * mul
        break
      }
      u += (byte & 0x7f) * mul
      mul *= 0x80
      if (byte < 0x80) break
    }
    if (u > Number.MAX_SAFE_INTEGER) throw decodeError(where, `histogram count ${u} is beyond 2^53`)
    const v = u % 2 === 0 ? u / 2 : -(u + 1) / 2
    if (v < 0) index += -v
    else {
      if (v > 0) counts.push([index, v])
      index++
    }
  }
  return { significantDigits, lowestDiscernibleValue: lowest, highestTrackableValue: highest, counts }
}

/** The layout of an HdrHistogram, from its parameters (HdrHistogram's AbstractHistogram.init). */
export interface HdrLayout {
  unitMagnitude: number
  subBucketHalfCountMagnitude: number
  subBucketHalfCount: number
}

export function hdrLayout(significantDigits: number, lowestDiscernibleValue: number): HdrLayout {
  const largestSingleUnit = 2 * 10 ** significantDigits
  const unitMagnitude = Math.floor(Math.log2(lowestDiscernibleValue))
  const subBucketCountMagnitude = Math.ceil(Math.log2(largestSingleUnit))
  const subBucketHalfCountMagnitude = Math.max(subBucketCountMagnitude, 1) - 1
  return { unitMagnitude, subBucketHalfCountMagnitude, subBucketHalfCount: 2 ** subBucketHalfCountMagnitude }
}

/** Value range [low, low + width) of the HdrHistogram bucket at a counts index. */
export function hdrBucketRange(layout: HdrLayout, index: number): { low: number; width: number } {
  // Powers of two by multiplication: values pass 2^31, where JS shifts wrap.
  let bucket = Math.floor(index / layout.subBucketHalfCount) - 1
  let sub = (index % layout.subBucketHalfCount) + layout.subBucketHalfCount
  if (bucket < 0) {
    sub -= layout.subBucketHalfCount
    bucket = 0
  }
  const width = 2 ** (bucket + layout.unitMagnitude)
  return { low: sub * width, width }
}

/**
 * Converts HdrHistogram counts to Benchstream buckets: each HDR bucket's
 * median equivalent value (low + width/2, as HdrHistogram reports it) goes to
 * the Benchstream bucket holding it. With 3 significant digits an HDR bucket
 * is at most 1/1024 of its value wide, well inside a Benchstream bucket (1/128).
 * Values above the Benchstream range are clamped to its last bucket.
 */
export function toBenchstreamBuckets(h: HdrHistogram): Array<[index: number, count: number]> {
  const layout = hdrLayout(h.significantDigits, h.lowestDiscernibleValue)
  const byIndex = new Map<number, number>()
  for (const [i, c] of h.counts) {
    const { low, width } = hdrBucketRange(layout, i)
    const median = low + Math.floor(width / 2)
    const bi = bucketIndex(Math.min(median, MAX_TRACKABLE_US))
    byIndex.set(bi, (byIndex.get(bi) ?? 0) + c)
  }
  return [...byIndex].sort((a, b) => a[0] - b[0])
}
