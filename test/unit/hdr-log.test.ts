/**
 * HdrHistogram interval logs, written by the real hdr-histogram-js (3
 * significant digits, as YCSB) from known latencies, decoded by
 * services/core/ycsb/hdr-log.ts: counts exact, percentiles within 1% of the exact
 * quantiles of the recorded values, malformed lines rejected by line number.
 */
import assert from 'node:assert/strict'
import { test } from 'node:test'
import { inflateSync } from 'node:zlib'
import { build, encodeIntoCompressedBase64 } from 'hdr-histogram-js'
import { parseImportYcsbArgs } from '../../services/cli/import-ycsb-args.js'
import { isBenchstreamError } from '../../services/core/errors.js'
import { decodeHistogramBase64, hdrBucketRange, hdrLayout, parseHdrLog } from '../../services/core/ycsb/hdr-log.js'
import { Histogram, quantileFromEntries } from '../../services/core/stats/histogram.js'
import { exactQuantile, lognormalUs, prng, writeYcsbHdrLog } from '../helpers/ycsb-hdr.js'

const START_MS = 1_764_000_000_123
const QUANTILES = [0.5, 0.9, 0.95, 0.99, 0.999] as const

function within1Percent(got: number, exact: number, what: string): void {
  // Below 256 µs buckets are exact; the midpoint of a one-unit bucket may sit half a unit off.
  const tolerance = Math.max(0.01 * exact, 0.5)
  assert.ok(Math.abs(got - exact) <= tolerance, `${what}: from buckets ${got}, exact ${exact}`)
}

test('a YCSB-style log decodes to exact counts per interval and percentiles within 1%', () => {
  const rand = prng(42)
  const ops = {
    READ: [0, 1, 2, 3].map(() => lognormalUs(rand, 4000, 450, 0.8)),
    // Heavier tail, some values in the seconds: exercises HDR buckets far above 2^20.
    UPDATE: [0, 1, 2].map(() => lognormalUs(rand, 3000, 2500, 1.6)),
  }
  for (const [op, intervals] of Object.entries(ops)) {
    const log = parseHdrLog(writeYcsbHdrLog(START_MS, 10, intervals), `${op}.hdr`)
    assert.equal(log.startTimeUs, START_MS * 1000)
    assert.equal(log.intervals.length, intervals.length)
    const merged = new Histogram()
    for (const [i, iv] of log.intervals.entries()) {
      const values = intervals[i]!
      assert.equal(iv.total, values.length, `${op} interval ${i} total`)
      assert.equal(
        iv.buckets.reduce((n, [, c]) => n + c, 0),
        values.length,
      )
      // Timestamps were written relative to StartTime, as YCSB writes them.
      assert.equal(iv.startUs, START_MS * 1000 + i * 10_000_000)
      assert.equal(iv.lengthUs, 10_000_000)
      const sorted = [...values].sort((a, b) => a - b)
      for (const q of QUANTILES)
        within1Percent(quantileFromEntries(iv.buckets, q), exactQuantile(sorted, q), `${op} interval ${i} p${q * 100}`)
      for (const [b, c] of iv.buckets) merged.recordBucket(b, c)
    }
    const all = intervals.flat().sort((a, b) => a - b)
    assert.equal(merged.total, all.length)
    for (const q of QUANTILES) within1Percent(merged.quantile(q), exactQuantile(all, q), `${op} whole log p${q * 100}`)
  }
})

test('every decoded HDR bucket range holds exactly the values recorded into it', () => {
  const values = [
    1,
    2,
    2,
    3,
    1023,
    1024,
    2047,
    2048,
    2049,
    4095,
    4096,
    100_000,
    1_000_003,
    2 ** 31 + 7,
    2 ** 33 + 12345,
    9_000_000_000_000,
  ]
  const h = build({ numberOfSignificantValueDigits: 3 })
  for (const v of values) h.recordValue(v)
  const decoded = decodeHistogramBase64(encodeIntoCompressedBase64(h))
  h.destroy()
  assert.equal(decoded.significantDigits, 3)
  const layout = hdrLayout(decoded.significantDigits, decoded.lowestDiscernibleValue)
  assert.equal(layout.subBucketHalfCount, 1024)
  let total = 0
  for (const [i, c] of decoded.counts) {
    const { low, width } = hdrBucketRange(layout, i)
    assert.equal(values.filter((v) => v >= low && v < low + width).length, c, `HDR index ${i} [${low}, ${low + width})`)
    total += c
  }
  assert.equal(total, values.length)
})

test('the uncompressed V2 encoding, Tag= prefixes and absolute timestamps are read too', () => {
  const h = build({ numberOfSignificantValueDigits: 3 })
  for (const v of [10, 20, 20, 30_000]) h.recordValue(v)
  const compressed = Buffer.from(encodeIntoCompressedBase64(h), 'base64')
  h.destroy()
  const plain = inflateSync(compressed.subarray(8, 8 + compressed.readInt32BE(4))).toString('base64')
  const text =
    '"StartTimestamp","Interval_Length","Interval_Max","Interval_Compressed_Histogram"\n' +
    `Tag=READ,1764000000.500,2.000,30000.000,${plain}\n`
  const log = parseHdrLog(text)
  assert.equal(log.startTimeUs, undefined)
  const [iv] = log.intervals
  assert.equal(iv!.tag, 'READ')
  assert.equal(iv!.startUs, 1_764_000_000_500_000)
  assert.equal(iv!.lengthUs, 2_000_000)
  assert.equal(iv!.total, 4)
  assert.deepEqual(
    iv!.buckets.map(([, c]) => c),
    [1, 2, 1],
  )
})

test('malformed lines give BS_ERR_DECODE naming the line and the problem', () => {
  const good = writeYcsbHdrLog(START_MS, 1, [[100, 200]]).trimEnd()
  const goodLines = good.split('\n').length
  const goodB64 = good.split('\n').at(-1)!.split(',')[3]!
  const cases: Array<[string, RegExp]> = [
    ['0.000,1.000,5.0,@@not*base64@@', /not valid base64/],
    [`0.000,1.000,5.0,${Buffer.from('0123456789abcdefXYZ').toString('base64')}`, /cookie 0x30313233 is not supported/],
    [`0.000,1.000,5.0,${goodB64.slice(0, 24)}`, /truncated/],
    [`0.000,1.000,${goodB64}`, /expected 4 comma-separated fields/],
    [`soon,1.000,5.0,${goodB64}`, /interval start "soon"/],
  ]
  for (const [line, why] of cases) {
    assert.throws(
      () => parseHdrLog(`${good}\n${line}\n`, 'READ.hdr'),
      (err: unknown) => {
        assert.ok(isBenchstreamError(err, 'BS_ERR_DECODE'), String(err))
        assert.match(err.message, new RegExp(`^READ\\.hdr line ${goodLines + 1}: `))
        assert.match(err.message, why)
        return true
      },
    )
  }
})

test(
  'import-ycsb arguments: OP=FILE measurements case-insensitive (Intended- and CLEANUP too), plain ' +
    'files, bad ones named',
  () => {
    const a = parseImportYcsbArgs([
      '--run-id',
      'r1',
      '--client-id',
      'c1',
      '--label',
      'db=hbase',
      'read=a.hdr',
      'Read-Modify-Write=b.hdr',
      'intended-update=c.hlog',
      'cleanup=d',
      'report.txt',
    ])
    assert.deepEqual(a.files, [
      { path: 'a.hdr', measurement: 'READ' },
      { path: 'b.hdr', measurement: 'READ-MODIFY-WRITE' },
      { path: 'c.hlog', measurement: 'Intended-UPDATE' },
      { path: 'd', measurement: 'CLEANUP' },
      { path: 'report.txt', measurement: undefined },
    ])
    assert.deepEqual(a.labels, { db: 'hbase' })
    assert.equal(a.follow, undefined)
    assert.throws(
      () => parseImportYcsbArgs(['--run-id', 'r1', '--client-id', 'c1', 'GET=a.hdr']),
      /measurement "GET" in "GET=a.hdr" is not allowed: expected \[Intended-\]OP or CLEANUP/,
    )
    assert.throws(() => parseImportYcsbArgs(['--client-id', 'c1', 'READ=a.hdr']), /--run-id is required/)
    assert.throws(() => parseImportYcsbArgs(['--run-id', 'r1', '--client-id', 'c1']), /at least one FILE is required/)
    assert.throws(
      () => parseImportYcsbArgs(['--run-id', 'r1', '--client-id', 'c1', '--pid', '12', 'a.hdr']),
      /--pid goes with --follow/,
    )
    const f = parseImportYcsbArgs(['--run-id', 'r1', '--client-id', 'c1', '--follow', '--pid', '4242', '/tmp/run1-'])
    assert.deepEqual(f.follow, { prefix: '/tmp/run1-', pid: 4242, idleTimeoutS: 0 })
    assert.equal(
      parseImportYcsbArgs(['--run-id', 'r1', '--client-id', 'c1', '--follow', 'logs/']).follow?.idleTimeoutS,
      60,
    )
    assert.throws(
      () => parseImportYcsbArgs(['--run-id', 'r1', '--client-id', 'c1', '--follow', 'a-', 'b-']),
      /--follow takes one PREFIX/,
    )
    assert.throws(
      () => parseImportYcsbArgs(['--run-id', 'r1', '--client-id', 'c1', '--follow', '--idle-timeout', '0', 'a-']),
      /--idle-timeout "0" is not allowed: expected an integer from 1 to 86400/,
    )
  },
)
