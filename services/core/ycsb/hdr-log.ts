/**
 * Reader for HdrHistogram interval logs (YCSB's hdrhistogram.fileoutput=true),
 * log formats 1.1 to 1.3 and histogram encodings V0, V1 (YCSB 0.17.0) and V2,
 * plain or compressed, converted into Benchstream's buckets. Pure. Counts are
 * in logical index order, so the normalizing offset is not applied. The
 * formats: docs/design/ycsb-files.md.
 */
import { inflateSync } from 'node:zlib'
import { BenchstreamError } from '../errors.js'
import { bucketIndex, MAX_TRACKABLE_US } from '../stats/histogram.js'

const V0_COOKIE = 0x1c849308
const V0_COMPRESSED_COOKIE = 0x1c849309
const V1_COOKIE = 0x1c849301
const V1_COMPRESSED_COOKIE = 0x1c849302
const V2_COOKIE = 0x1c849303
const V2_COMPRESSED_COOKIE = 0x1c849304
const DOUBLE_COOKIES = new Set([0x0c72124e, 0x0c72124f])
const cookieBase = (cookie: number): number => (cookie & ~0xf0) >>> 0
const cookieWordSize = (cookie: number): number => (cookie & 0xf0) >>> 4
const hex = (n: number): string => `0x${(n >>> 0).toString(16)}`
const V0_HEADER_BYTES = 32
const V1_V2_HEADER_BYTES = 40
/**
 * An inflated histogram larger than this is not a latency histogram (3 digits over 2^63 with 8-byte counts is ~0.4 MB).
 */
const MAX_INFLATED_BYTES = 16 * 1024 * 1024
/** Relative timestamps: HdrHistogram's reader treats a timestamp more than a year before StartTime as relative. */
const RELATIVE_THRESHOLD_S = 365 * 24 * 3600

/** Encoding version of a histogram: V0 (the oldest), V1 (up to HdrHistogram 2.1.4, YCSB 0.17.0), V2 (2.1.5+). */
export type HdrEncoding = 'V0' | 'V1' | 'V2'

/** One interval of a log, in Benchstream's buckets. */
export interface HdrInterval {
  /** 1-based line number in the log text. */
  line: number
  /** Interval start, µs since epoch (or since the log's zero when it has no StartTime/BaseTime). */
  startUs: number
  lengthUs: number
  /** `Tag=` of the line, if any. */
  tag: string | undefined
  /**
   * The Interval_Max column as written, in the log's max unit (YCSB: µs / 1,000,000, 3 decimals, so `0.000` below 1
   * ms).
   */
  maxColumn: number
  encoding: HdrEncoding
  significantDigits: number
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
  /** From `#[Histogram log format version X]`, if present (YCSB 0.17.0: "1.1"; HdrHistogram 2.1.5+: "1.2"/"1.3"). */
  formatVersion: string | undefined
  /** From YCSB's `#[Logging for: NAME]` comment, if present: the measurement name. */
  loggingFor: string | undefined
  intervals: HdrInterval[]
}

/** A decoded HdrHistogram: its layout and its non-empty counts by HdrHistogram index. */
export interface HdrHistogram {
  encoding: HdrEncoding
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
 * Throws BS_ERR_DECODE naming the line and what is wrong; returns nothing partial.
 */
export function parseHdrLog(text: string, source = 'HdrHistogram log'): HdrLog {
  let startTimeS: number | undefined
  let baseTimeS: number | undefined
  let formatVersion: string | undefined
  let loggingFor: string | undefined
  const raw: Array<{
    line: number
    startS: number
    lengthS: number
    maxColumn: number
    tag: string | undefined
    hist: HdrHistogram
  }> = []
  const lines = text.split(/\r?\n|\r/)
  for (let n = 0; n < lines.length; n++) {
    const line = lines[n]!.trim()
    const where = `${source} line ${n + 1}`
    if (line === '') continue
    if (line.startsWith('#')) {
      const st = /^#\[StartTime:\s*([0-9.eE+-]+)/.exec(line)
      if (st !== null) startTimeS = seconds(st[1]!, where, 'StartTime')
      const bt = /^#\[BaseTime:\s*([0-9.eE+-]+)/.exec(line)
      if (bt !== null) baseTimeS = seconds(bt[1]!, where, 'BaseTime')
      const fv = /^#\[Histogram log format version\s+([^\]\s]+)\s*\]/.exec(line)
      if (fv !== null) formatVersion = fv[1]
      const lf = /^#\[Logging for:\s*([^\]]*?)\s*\]/.exec(line)
      if (lf !== null) loggingFor = lf[1]
      continue
    }
    // The legend line ("StartTimestamp",... or the older "Timestamp",...), with or without quotes.
    if (/^"?(?:Start)?Timestamp"?\s*,/.test(line)) continue
    let rest = line
    let tag: string | undefined
    if (rest.startsWith('Tag=')) {
      const comma = rest.indexOf(',')
      if (comma === -1)
        throw decodeError(where, 'a Tag= prefix must be followed by ",<start>,<length>,<max>,<histogram>"')
      tag = rest.slice(4, comma)
      rest = rest.slice(comma + 1)
    }
    const fields = rest.split(',')
    if (fields.length !== 4) {
      throw decodeError(
        where,
        `expected 4 comma-separated fields [Tag=x,]<start s>,<length s>,<max>,<base64 histogram>; found ` +
          `${fields.length}`,
      )
    }
    const startS = seconds(fields[0]!, where, 'interval start')
    const lengthS = seconds(fields[1]!, where, 'interval length')
    const maxColumn = seconds(fields[2]!, where, 'interval max')
    const hist = decodeHistogramBase64(fields[3]!.trim(), where)
    raw.push({ line: n + 1, startS, lengthS, maxColumn, tag, hist })
  }
  // Where timestamps count from follows HdrHistogram's HistogramLogReader:
  // BaseTime if given; else StartTime when the timestamps are plainly relative
  // (more than a year before it, as YCSB's are); else they are absolute.
  const first = raw[0]
  let zeroS = 0
  if (baseTimeS !== undefined) zeroS = baseTimeS
  else if (startTimeS !== undefined && first !== undefined && first.startS < startTimeS - RELATIVE_THRESHOLD_S)
    zeroS = startTimeS
  return {
    startTimeUs: startTimeS === undefined ? undefined : Math.round(startTimeS * 1e6),
    baseTimeUs: baseTimeS === undefined ? undefined : Math.round(baseTimeS * 1e6),
    formatVersion,
    loggingFor,
    intervals: raw.map((r) => {
      const buckets = toBenchstreamBuckets(r.hist)
      let total = 0
      for (const [, c] of buckets) total += c
      return {
        line: r.line,
        startUs: Math.round(zeroS * 1e6 + r.startS * 1e6),
        lengthUs: Math.round(r.lengthS * 1e6),
        tag: r.tag,
        maxColumn: r.maxColumn,
        encoding: r.hist.encoding,
        significantDigits: r.hist.significantDigits,
        total,
        buckets,
      }
    }),
  }
}

function seconds(s: string, where: string, what: string): number {
  const v = Number(s.trim())
  if (s.trim() === '' || !Number.isFinite(v) || v < 0)
    throw decodeError(where, `${what} ${JSON.stringify(s)} is not a non-negative number of seconds`)
  return v
}

const BASE64 = /^[A-Za-z0-9+/]+={0,2}$/

/** Decodes one base64 histogram (any of the encodings above). */
export function decodeHistogramBase64(b64: string, where = 'histogram'): HdrHistogram {
  if (b64 === '' || !BASE64.test(b64) || b64.length % 4 === 1)
    throw decodeError(
      where,
      `histogram is not valid base64 (${b64.length} characters, expected A-Z a-z 0-9 + / with = padding)`,
    )
  return decodeHistogram(Buffer.from(b64, 'base64'), where)
}

/** Decodes one histogram from its bytes: V0, V1 or V2, compressed or plain. */
export function decodeHistogram(bytes: Buffer, where = 'histogram'): HdrHistogram {
  if (bytes.length < 8) throw decodeError(where, `histogram is truncated: ${bytes.length} bytes, the header alone is 8`)
  const cookie = bytes.readUInt32BE(0)
  const base = cookieBase(cookie)
  const plainOf: Record<number, number> = {
    [V0_COMPRESSED_COOKIE]: V0_COOKIE,
    [V1_COMPRESSED_COOKIE]: V1_COOKIE,
    [V2_COMPRESSED_COOKIE]: V2_COOKIE,
  }
  const plain = plainOf[base]
  if (plain !== undefined) {
    const len = bytes.readInt32BE(4)
    if (len < 0 || 8 + len > bytes.length)
      throw decodeError(
        where,
        `histogram is truncated: header says ${len} compressed bytes, ${bytes.length - 8} follow`,
      )
    let inflated: Buffer
    try {
      inflated = inflateSync(bytes.subarray(8, 8 + len), { maxOutputLength: MAX_INFLATED_BYTES })
    } catch (err) {
      throw decodeError(where, `compressed histogram does not inflate (zlib: ${(err as Error).message})`, err)
    }
    const inner = inflated.length < 4 ? undefined : inflated.readUInt32BE(0)
    if (inner === undefined || cookieBase(inner) !== plain) {
      throw decodeError(
        where,
        `inflated histogram has cookie ${inner === undefined ? '(none)' : hex(inner)}; a compressed ` +
          `${hex(cookie)} must hold ${hex(plain)} (word-size bits 0xf0 aside)`,
      )
    }
    if (plain !== V2_COOKIE && cookieWordSize(inner) !== cookieWordSize(cookie)) {
      throw decodeError(
        where,
        `inflated histogram has ${cookieWordSize(inner)}-byte counts, its compressed cookie ${hex(cookie)} ` +
          `says ${cookieWordSize(cookie)}`,
      )
    }
    return decodePlain(inflated, where)
  }
  if (base === V0_COOKIE || base === V1_COOKIE || base === V2_COOKIE) return decodePlain(bytes, where)
  if (DOUBLE_COOKIES.has(cookie))
    throw decodeError(
      where,
      `histogram cookie ${hex(cookie)} is a DoubleHistogram, which is not supported; expected an integer ` +
        `Histogram of latencies`,
    )
  throw decodeError(
    where,
    `histogram cookie ${hex(cookie)} is not supported; expected V2 ${hex(V2_COOKIE)}/${hex(V2_COMPRESSED_COOKIE)}, ` +
      `V1 ${hex(V1_COOKIE)}/${hex(V1_COMPRESSED_COOKIE)} or V0 ${hex(V0_COOKIE)}/${hex(V0_COMPRESSED_COOKIE)}, ` +
      `with word-size bits 0xf0 (YCSB 0.17.0 writes V1 compressed 0x1c849382)`,
  )
}

function decodePlain(b: Buffer, where: string): HdrHistogram {
  const cookie = b.readUInt32BE(0)
  const base = cookieBase(cookie)
  const encoding: HdrEncoding = base === V0_COOKIE ? 'V0' : base === V1_COOKIE ? 'V1' : 'V2'
  const headerBytes = encoding === 'V0' ? V0_HEADER_BYTES : V1_V2_HEADER_BYTES
  if (b.length < headerBytes)
    throw decodeError(
      where,
      `histogram is truncated: ${b.length} bytes, the ${encoding} header alone is ${headerBytes}`,
    )
  let significantDigits: number
  let lowest: number
  let highest: number
  let payloadEnd: number
  let v0Total: bigint | undefined
  if (encoding === 'V0') {
    significantDigits = b.readInt32BE(4)
    lowest = Number(b.readBigInt64BE(8))
    highest = Number(b.readBigInt64BE(16))
    v0Total = b.readBigInt64BE(24)
    payloadEnd = b.length // V0 has no payload length: the counts run to the end.
  } else {
    const payloadLength = b.readInt32BE(4)
    significantDigits = b.readInt32BE(12)
    lowest = Number(b.readBigInt64BE(16))
    highest = Number(b.readBigInt64BE(24))
    if (payloadLength < 0 || V1_V2_HEADER_BYTES + payloadLength > b.length) {
      throw decodeError(
        where,
        `histogram is truncated: header says ${payloadLength} payload bytes, ${b.length - V1_V2_HEADER_BYTES} follow`,
      )
    }
    payloadEnd = V1_V2_HEADER_BYTES + payloadLength
  }
  if (!(significantDigits >= 0 && significantDigits <= 5))
    throw decodeError(where, `significant digits ${significantDigits}; HdrHistogram allows 0..5`)
  if (!(lowest >= 1)) throw decodeError(where, `lowest discernible value ${lowest}; must be >= 1`)
  if (!(highest >= 2 * lowest))
    throw decodeError(where, `highest trackable value ${highest}; must be >= 2 * lowest (${2 * lowest})`)
  const counts =
    encoding === 'V2'
      ? readZigZagCounts(b, headerBytes, payloadEnd, where)
      : readWordCounts(b, headerBytes, payloadEnd, cookieWordSize(cookie), where)
  const layout = hdrLayout(significantDigits, lowest)
  const length = hdrCountsLength(layout, highest)
  let total = 0
  for (const [i, c] of counts) {
    if (i >= length)
      throw decodeError(
        where,
        `count at HdrHistogram index ${i} lies beyond the highest trackable value ${highest} (${length} indexes)`,
      )
    total += c
  }
  if (v0Total !== undefined && v0Total !== BigInt(total))
    throw decodeError(where, `V0 header says ${v0Total} values, the counts add up to ${total}`)
  return { encoding, significantDigits, lowestDiscernibleValue: lowest, highestTrackableValue: highest, counts }
}

function readWordCounts(
  b: Buffer,
  start: number,
  end: number,
  wordSize: number,
  where: string,
): Array<[number, number]> {
  if (wordSize !== 2 && wordSize !== 4 && wordSize !== 8)
    throw decodeError(
      where,
      `cookie ${hex(b.readUInt32BE(0))} gives ${wordSize}-byte counts; HdrHistogram writes 2, 4 or 8`,
    )
  if ((end - start) % wordSize !== 0)
    throw decodeError(
      where,
      `histogram payload of ${end - start} bytes is not a whole number of ${wordSize}-byte counts`,
    )
  const counts: Array<[number, number]> = []
  for (let pos = start, index = 0; pos < end; pos += wordSize, index++) {
    const c = wordSize === 2 ? b.readInt16BE(pos) : wordSize === 4 ? b.readInt32BE(pos) : Number(b.readBigInt64BE(pos))
    if (c < 0 || c > Number.MAX_SAFE_INTEGER)
      throw decodeError(
        where,
        `histogram count ${c} at HdrHistogram index ${index} is ${c < 0 ? 'negative' : 'beyond 2^53'}`,
      )
    if (c > 0) counts.push([index, c])
  }
  return counts
}

function readZigZagCounts(b: Buffer, start: number, end: number, where: string): Array<[number, number]> {
  const counts: Array<[number, number]> = []
  let pos = start
  let index = 0
  while (pos < end) {
    // ZigZag over LEB128-64b9B: 8 bytes of 7 bits, a 9th byte of 8 bits.
    let u = 0
    let mul = 1
    for (let i = 0; ; i++) {
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
  return counts
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

/**
 * Length of the counts array for a highest trackable value (getBucketsNeededToCoverValue, getLengthForNumberOfBuckets).
 */
function hdrCountsLength(layout: HdrLayout, highestTrackableValue: number): number {
  let smallestUntrackable = 2 * layout.subBucketHalfCount * 2 ** layout.unitMagnitude
  let buckets = 1
  while (smallestUntrackable <= highestTrackableValue) {
    if (smallestUntrackable > 2 ** 62) return (buckets + 2) * layout.subBucketHalfCount
    smallestUntrackable *= 2
    buckets++
  }
  return (buckets + 1) * layout.subBucketHalfCount
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

/** Counts index of a value (AbstractHistogram.countsArrayIndex), for integer values >= 0 up to 2^53. */
export function hdrIndexOf(layout: HdrLayout, value: number): number {
  const mask = (2 * layout.subBucketHalfCount - 1) * 2 ** layout.unitMagnitude
  const msb = (x: number): number => x.toString(2).length - 1
  const bucket =
    Math.max(msb(Math.max(value, 1)), msb(mask)) - layout.unitMagnitude - layout.subBucketHalfCountMagnitude
  const sub = Math.floor(value / 2 ** (bucket + layout.unitMagnitude))
  return (bucket + 1) * layout.subBucketHalfCount + (sub - layout.subBucketHalfCount)
}

/**
 * Converts HdrHistogram counts to Benchstream buckets: each HDR bucket's
 * median equivalent value (low + width/2, as HdrHistogram reports it) goes to
 * the Benchstream bucket holding it. With 2 or more significant digits (YCSB
 * uses 3) and a lowest discernible value of 1, each HDR bucket lies wholly
 * inside one Benchstream bucket (both cut powers of two into power-of-two
 * parts, HDR's at least 128 of them), so no count changes bucket by this
 * choice. Values above the Benchstream range are clamped to its last bucket.
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
