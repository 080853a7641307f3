/**
 * Writes HdrHistogram interval logs as HdrHistogram 2.1.5+ does (log format
 * 1.3, V2 compressed, cookie 0x1c849314), each Benchstream bucket at its
 * report value, so hdr-log.ts reads back exactly the buckets written. The
 * encoding: docs/design/ycsb-files.md.
 */
import { deflateSync } from 'node:zlib'
import { MAX_LATENCY_US } from '../../../schemas/events.v1.js'
import { bucketReportValue } from '../stats/histogram.js'
import { hdrIndexOf, hdrLayout } from './hdr-log.js'

const V2_COOKIE = 0x1c849313
const V2_COMPRESSED_COOKIE = 0x1c849314
/** YCSB records with 3 significant digits (new Recorder(3)). */
const SIGNIFICANT_DIGITS = 3
const LAYOUT = hdrLayout(SIGNIFICANT_DIGITS, 1)
const LEGEND = '"StartTimestamp","Interval_Length","Interval_Max","Interval_Compressed_Histogram"'
/** HistogramLogWriter's default: the Interval_Max column is the max value / 1,000,000 (µs as seconds). */
const MAX_VALUE_UNIT_RATIO = 1_000_000

/**
 * The lines a log starts with: YCSB's `#[Logging for: NAME]`, the format version, start and base time (ms since epoch),
 * the legend.
 */
export function hdrLogHeader(measurement: string, startMs: number): string {
  const s = (startMs / 1000).toFixed(3)
  return (
    `#[Logging for: ${measurement}]\n#[Histogram log format version 1.3]\n#[StartTime: ${s} (seconds ` +
    `since epoch), ${new Date(startMs).toUTCString()}]\n#[BaseTime: ${s} (seconds since epoch)]\n${LEGEND}\n`
  )
}

/** One interval line; times in ms relative to the base time, `buckets` Benchstream's [index, count]. */
export function hdrLogLine(
  startMs: number,
  lengthMs: number,
  buckets: ReadonlyArray<readonly [number, number]>,
): string {
  let max = 0
  for (const [i, c] of buckets) if (c > 0) max = Math.max(max, bucketReportValue(i))
  const fields = [
    (startMs / 1000).toFixed(3),
    (lengthMs / 1000).toFixed(3),
    (max / MAX_VALUE_UNIT_RATIO).toFixed(3),
    encodeCompressedV2(buckets).toString('base64'),
  ]
  return `${fields.join(',')}\n`
}

/** Benchstream buckets as one compressed V2 HdrHistogram. */
export function encodeCompressedV2(buckets: ReadonlyArray<readonly [number, number]>): Buffer {
  const counts = new Map<number, number>()
  let maxValue = 0
  for (const [i, c] of buckets) {
    if (c <= 0) continue
    const v = bucketReportValue(i)
    maxValue = Math.max(maxValue, v)
    const hi = hdrIndexOf(LAYOUT, v)
    counts.set(hi, (counts.get(hi) ?? 0) + c)
  }
  const sorted = [...counts].sort((a, b) => a[0] - b[0])
  const payload: number[] = []
  let next = 0
  for (const [index, c] of sorted) {
    const zeros = index - next
    if (zeros === 1) zigzag(payload, 0)
    else if (zeros > 1) zigzag(payload, -zeros)
    zigzag(payload, c)
    next = index + 1
  }
  const plain = Buffer.alloc(40 + payload.length)
  plain.writeUInt32BE(V2_COOKIE, 0)
  plain.writeInt32BE(payload.length, 4)
  plain.writeInt32BE(0, 8)
  plain.writeInt32BE(SIGNIFICANT_DIGITS, 12)
  plain.writeBigInt64BE(1n, 16)
  // Highest trackable value: Benchstream's accepted range, wider when a bucket's value lies above it.
  plain.writeBigInt64BE(BigInt(Math.max(MAX_LATENCY_US, 2 * maxValue)), 24)
  plain.writeDoubleBE(1, 32)
  Buffer.from(payload).copy(plain, 40)
  const deflated = deflateSync(plain)
  const out = Buffer.alloc(8 + deflated.length)
  out.writeUInt32BE(V2_COMPRESSED_COOKIE, 0)
  out.writeInt32BE(deflated.length, 4)
  deflated.copy(out, 8)
  return out
}

/** ZigZag LEB128 as HdrHistogram's ZigZagEncoding.putLong: 7 bits a byte, the 9th byte whole; values up to 2^53. */
function zigzag(out: number[], v: number): void {
  let u = v >= 0 ? v * 2 : -v * 2 - 1
  for (let i = 0; i < 8; i++) {
    if (u < 0x80) {
      out.push(u)
      return
    }
    out.push((u % 0x80) | 0x80)
    u = Math.floor(u / 0x80)
  }
  out.push(u)
}
