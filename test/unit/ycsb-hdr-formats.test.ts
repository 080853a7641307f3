/**
 * HdrHistogram interval logs as real YCSB 0.17.0 (HdrHistogram 2.1.4) writes
 * them (V1, cookie 0x1c849382) and as HdrHistogram 2.2.2 re-encodes them
 * (V2), from test/fixtures/ycsb-0.17.0; V0 and the plain (uncompressed)
 * encodings built byte by byte from the same histograms as
 * AbstractHistogram.encodeIntoByteBuffer 2.1.4 lays them out. Measurement
 * names from file names and `#[Logging for:]`, Intended- and CLEANUP logs.
 */
import assert from 'node:assert/strict'
import { readdirSync, readFileSync } from 'node:fs'
import path from 'node:path'
import { test } from 'node:test'
import { deflateSync, inflateSync } from 'node:zlib'
import { isBenchstreamError } from '../../services/core/errors.js'
import {
  decodeHistogram,
  decodeHistogramBase64,
  hdrBucketRange,
  hdrIndexOf,
  hdrLayout,
  parseHdrLog,
  type HdrHistogram,
} from '../../services/core/ycsb/hdr-log.js'
import { groupIntervalLogs, parseIntervalLogFile, parseYcsbFile } from '../../services/core/ycsb/import.js'
import { measurementFromFileName, parseMeasurementName } from '../../services/core/ycsb/measurement-name.js'
import type { IntervalLogReport, SummaryReport } from '../../services/core/ycsb/report-types.js'

const FIXTURES = 'test/fixtures/ycsb-0.17.0'
const read = (rel: string): string => readFileSync(path.join(FIXTURES, rel), 'utf8')
const V1_DIRS = ['hdr-op', 'hdr-both', 'two-clients']

function isDecodeError(re: RegExp): (err: unknown) => boolean {
  return (err: unknown) => {
    assert.ok(isBenchstreamError(err, 'BS_ERR_DECODE'), String(err))
    assert.match(err.message, re)
    return true
  }
}

/** The first histogram line's payload of a fixture log. */
function firstPayload(rel: string): Buffer {
  const line = read(rel)
    .split('\n')
    .find((l) => /^\d/.test(l))!
  return Buffer.from(line.split(',')[3]!, 'base64')
}

test(
  "YCSB 0.17.0's logs are V1 (cookie 0x1c849382, format 1.1) and decode to the same intervals " +
    'as their V2 re-encodings',
  () => {
    let files = 0
    for (const dir of V1_DIRS) {
      for (const f of readdirSync(path.join(FIXTURES, dir)).filter((n) => n.endsWith('.hdr'))) {
        const v1 = parseHdrLog(read(`${dir}/${f}`), f)
        const v2 = parseHdrLog(read(`v2/${dir}/${f}`), `v2/${f}`)
        assert.equal(v1.formatVersion, '1.1', f)
        assert.equal(v2.formatVersion, '1.3', f)
        assert.ok(v1.intervals.length > 0)
        assert.ok(
          v1.intervals.every((iv) => iv.encoding === 'V1' && iv.significantDigits === 3),
          f,
        )
        assert.ok(
          v2.intervals.every((iv) => iv.encoding === 'V2'),
          f,
        )
        assert.equal(v1.startTimeUs, v2.startTimeUs)
        // YCSB writes no BaseTime; its offsets count from StartTime.
        assert.equal(v1.baseTimeUs, undefined)
        assert.equal(v1.intervals[0]!.startUs >= v1.startTimeUs!, true)
        assert.deepEqual(
          v1.intervals.map(({ startUs, lengthUs, total, buckets }) => ({ startUs, lengthUs, total, buckets })),
          v2.intervals.map(({ startUs, lengthUs, total, buckets }) => ({ startUs, lengthUs, total, buckets })),
          f,
        )
        files++
      }
      assert.equal(
        firstPayload(`${dir}/${dir === 'two-clients' ? 'client1-HdrREAD' : 'READ'}.hdr`).readUInt32BE(0),
        0x1c849382,
      )
    }
    assert.equal(files, 15)
  },
)

/** V1 plain (encodeIntoByteBuffer 2.1.4) of a histogram, with counts of `wordSize` bytes. */
function encodeV1(h: HdrHistogram, wordSize: 2 | 4 | 8): Buffer {
  const length = Math.max(...h.counts.map(([i]) => i)) + 1
  const b = Buffer.alloc(40 + length * wordSize)
  b.writeUInt32BE(0x1c849301 + (wordSize << 4), 0)
  b.writeInt32BE(length * wordSize, 4)
  b.writeInt32BE(0, 8)
  b.writeInt32BE(h.significantDigits, 12)
  b.writeBigInt64BE(BigInt(h.lowestDiscernibleValue), 16)
  b.writeBigInt64BE(BigInt(h.highestTrackableValue), 24)
  b.writeDoubleBE(1, 32)
  for (const [i, c] of h.counts) writeWord(b, 40 + i * wordSize, wordSize, c)
  return b
}

/** V0 plain (HdrHistogram 1.x, still read by 2.1.4): 32-byte header with the total count, then every count. */
function encodeV0(h: HdrHistogram, wordSize: 2 | 4 | 8, total = h.counts.reduce((n, [, c]) => n + c, 0)): Buffer {
  const length = Math.max(...h.counts.map(([i]) => i)) + 1
  const b = Buffer.alloc(32 + length * wordSize)
  b.writeUInt32BE(0x1c849308 + (wordSize << 4), 0)
  b.writeInt32BE(h.significantDigits, 4)
  b.writeBigInt64BE(BigInt(h.lowestDiscernibleValue), 8)
  b.writeBigInt64BE(BigInt(h.highestTrackableValue), 16)
  b.writeBigInt64BE(BigInt(total), 24)
  for (const [i, c] of h.counts) writeWord(b, 32 + i * wordSize, wordSize, c)
  return b
}

function writeWord(b: Buffer, at: number, wordSize: number, c: number): void {
  if (wordSize === 2) b.writeInt16BE(c, at)
  else if (wordSize === 4) b.writeInt32BE(c, at)
  else b.writeBigInt64BE(BigInt(c), at)
}

/** The compressed form: compressed cookie, deflated length, zlib bytes. */
function compress(plain: Buffer, compressedCookie: number): Buffer {
  const z = deflateSync(plain)
  const head = Buffer.alloc(8)
  head.writeUInt32BE(compressedCookie, 0)
  head.writeInt32BE(z.length, 4)
  return Buffer.concat([head, z])
}

test(
  'V1 plain (what the 0x1c849382 payload inflates to), V1 with 2- and 4-byte counts, V0 plain ' +
    'and compressed all decode to the same counts',
  () => {
    const compressed = firstPayload('hdr-op/UPDATE.hdr')
    const reference = decodeHistogram(compressed)
    assert.equal(reference.encoding, 'V1')
    assert.ok(reference.counts.length > 50)
    // The inflated payload is YCSB's own V1 plain encoding: 8-byte counts, cookie 0x1c849381.
    const inflated = inflateSync(compressed.subarray(8, 8 + compressed.readInt32BE(4)))
    assert.equal(inflated.readUInt32BE(0), 0x1c849381)
    assert.deepEqual(decodeHistogram(inflated).counts, reference.counts)
    const variants: Array<[string, Buffer, string]> = [
      ['V1 8-byte rebuilt', encodeV1(reference, 8), 'V1'],
      ['V1 4-byte', encodeV1(reference, 4), 'V1'],
      ['V1 2-byte', encodeV1(reference, 2), 'V1'],
      ['V1 4-byte compressed', compress(encodeV1(reference, 4), 0x1c849342), 'V1'],
      ['V0 4-byte', encodeV0(reference, 4), 'V0'],
      ['V0 8-byte', encodeV0(reference, 8), 'V0'],
      ['V0 4-byte compressed', compress(encodeV0(reference, 4), 0x1c849309 + (4 << 4)), 'V0'],
    ]
    for (const [what, bytes, encoding] of variants) {
      const h = decodeHistogramBase64(bytes.toString('base64'), what)
      assert.equal(h.encoding, encoding, what)
      assert.deepEqual(h.counts, reference.counts, what)
      assert.equal(h.significantDigits, 3)
      assert.equal(h.highestTrackableValue, reference.highestTrackableValue)
    }
    // The same histograms as lines of a log, with a BaseTime (absolute offsets) and Tag= prefixes.
    const text = [
      '#[Histogram log format version 1.2]',
      '#[BaseTime: 1796289683.000 (seconds since epoch)]',
      '"StartTimestamp","Interval_Length","Interval_Max","Interval_Compressed_Histogram"',
      `Tag=a,1.000,1.000,0.020,${encodeV0(reference, 4).toString('base64')}`,
      `2.000,1.000,0.020,${compress(encodeV0(reference, 2), 0x1c849329).toString('base64')}`,
      `3.000,1.000,0.020,${inflated.toString('base64')}`,
    ].join('\n')
    const log = parseHdrLog(text, 'mixed.hdr')
    assert.deepEqual(
      log.intervals.map((iv) => [iv.tag, iv.encoding, iv.startUs]),
      [
        ['a', 'V0', 1_796_289_684_000_000],
        [undefined, 'V0', 1_796_289_685_000_000],
        [undefined, 'V1', 1_796_289_686_000_000],
      ],
    )
    assert.equal(new Set(log.intervals.map((iv) => JSON.stringify(iv.buckets))).size, 1)
  },
)

test(
  'bad encodings are named: V0 total that does not add up, odd word sizes, DoubleHistogram, counts ' +
    'past the highest trackable value',
  () => {
    const reference = decodeHistogram(firstPayload('hdr-op/READ.hdr'))
    assert.throws(
      () => decodeHistogram(encodeV0(reference, 4, 7), 'x'),
      isDecodeError(/^x: V0 header says 7 values, the counts add up to \d+$/),
    )
    const odd = encodeV1(reference, 4)
    odd.writeUInt32BE(0x1c849331, 0)
    assert.throws(() => decodeHistogram(odd), isDecodeError(/gives 3-byte counts; HdrHistogram writes 2, 4 or 8/))
    const double = Buffer.alloc(16)
    double.writeUInt32BE(0x0c72124f, 0)
    assert.throws(() => decodeHistogram(double), isDecodeError(/DoubleHistogram, which is not supported/))
    const small = encodeV1({ ...reference, highestTrackableValue: 2048 }, 8)
    assert.throws(() => decodeHistogram(small), isDecodeError(/beyond the highest trackable value 2048/))
    const negative = encodeV1(reference, 4)
    negative.writeInt32BE(-1, 40 + reference.counts[0]![0] * 4)
    assert.throws(() => decodeHistogram(negative), isDecodeError(/is negative/))
    const mismatched = compress(encodeV1(reference, 4), 0x1c849382)
    assert.throws(
      () => decodeHistogram(mismatched),
      isDecodeError(/4-byte counts, its compressed cookie 0x1c849382 says 8/),
    )
  },
)

test('hdrIndexOf inverts hdrBucketRange for 3 significant digits (YCSB), so equivalent values can be computed', () => {
  const layout = hdrLayout(3, 1)
  for (const v of [0, 1, 2047, 2048, 2049, 4095, 4096, 21_865, 1_000_003, 2 ** 31 + 7, 2 ** 40 + 12_345]) {
    const { low, width } = hdrBucketRange(layout, hdrIndexOf(layout, v))
    assert.ok(v >= low && v < low + width, `${v} in [${low}, ${low + width})`)
  }
  // HdrHistogram's highestEquivalentValue(21865) is 21871: what YCSB printed as MaxLatency(us) for a raw max of 21865.
  const { low, width } = hdrBucketRange(layout, hdrIndexOf(layout, 21_865))
  assert.equal(low + width - 1, 21_871)
})

test(
  'measurement names: [Hdr|Raw|Bucket][Intended-]OP[-STATUS]; CLEANUP is its own kind; file names ' +
    'carry any prefix',
  () => {
    assert.deepEqual(parseMeasurementName('Intended-READ-MODIFY-WRITE'), {
      name: 'Intended-READ-MODIFY-WRITE',
      kind: 'operation',
      op: 'READ-MODIFY-WRITE',
      latency: 'intended',
      ycsbStatus: undefined,
      status: 'OK',
      part: undefined,
    })
    assert.deepEqual(parseMeasurementName('HdrREAD-FAILED'), {
      name: 'HdrREAD-FAILED',
      kind: 'operation',
      op: 'READ',
      latency: 'measured',
      ycsbStatus: 'FAILED',
      status: 'ERROR',
      part: 'Hdr',
    })
    assert.equal(parseMeasurementName('UPDATE-NOT_FOUND').status, 'NOT_FOUND')
    assert.equal(parseMeasurementName('Intended-CLEANUP').kind, 'cleanup')
    assert.equal(parseMeasurementName('Intended-CLEANUP').latency, 'intended')
    assert.equal(parseMeasurementName('MY_BINDING_STAT').kind, 'other')
    const cases: Array<[string, string | undefined, string | undefined]> = [
      ['test/fixtures/ycsb-0.17.0/two-clients/client1-HdrREAD.hdr', 'HdrREAD', 'client1-'],
      ['Intended-UPDATE.hdr', 'Intended-UPDATE', ''],
      ['ycsb-READ-MODIFY-WRITE.hdr', 'READ-MODIFY-WRITE', 'ycsb-'],
      ['READ-UPDATE.hdr', 'UPDATE', 'READ-'],
      ['run1\\ycsb-SCAN-FAILED.hdr', 'SCAN-FAILED', 'ycsb-'],
      ['CLEANUP.hdr', 'CLEANUP', ''],
      ['latencies.hdr', undefined, undefined],
    ]
    for (const [file, name, prefix] of cases) {
      const m = measurementFromFileName(file)
      assert.equal(m?.name.name, name, file)
      assert.equal(m?.prefix, prefix, file)
    }
  },
)

test(
  'interval log files: the name from the file, else from "#[Logging for:]"; a disagreement or ' +
    'no name at all is an error',
  () => {
    const text = read('hdr-op/UPDATE.hdr')
    const fromFile = parseIntervalLogFile('ycsb-UPDATE.hdr', text)
    assert.equal(fromFile.nameFrom, 'file-name')
    assert.equal(fromFile.prefix, 'ycsb-')
    const fromLog = parseIntervalLogFile('client7.hdr', text)
    assert.equal(fromLog.nameFrom, 'log-comment')
    assert.equal(fromLog.name.op, 'UPDATE')
    assert.equal(fromLog.total, fromFile.total)
    assert.equal(parseIntervalLogFile('x.hdr', text, 'UPDATE').nameFrom, 'given')
    assert.throws(
      () => parseIntervalLogFile('READ.hdr', text),
      isDecodeError(/^READ\.hdr: the file name says READ but the log says "#\[Logging for: UPDATE\]"/),
    )
    const anonymous = text.replace(/^#\[Logging for: .*\]\n/m, '')
    assert.throws(
      () => parseIntervalLogFile('client7.hdr', anonymous),
      isDecodeError(/cannot tell which measurement this log holds/),
    )
    assert.throws(
      () => parseIntervalLogFile('client7.hdr', anonymous, 'GET'),
      isDecodeError(/"GET" is not a YCSB measurement/),
    )
  },
)

test(
  'Intended-OP logs land in the intended histogram of OP, CLEANUP apart; totals equal the text ' +
    'report of the same run',
  () => {
    const report = parseYcsbFile(
      'run-workloada-target-both.stdout.txt',
      read('run-workloada-target-both.stdout.txt'),
    ) as SummaryReport
    const logs = readdirSync(path.join(FIXTURES, 'hdr-both'))
      .filter((f) => f.endsWith('.hdr'))
      .map((f) => parseYcsbFile(`hdr-both/${f}`, readFileSync(path.join(FIXTURES, 'hdr-both', f))) as IntervalLogReport)
    assert.equal(logs.length, 6)
    for (const l of logs) {
      const m = report.measurements.find((x) => x.name.name === l.name.name)!
      assert.equal(l.total, m.operations, l.name.name)
    }
    const grouped = groupIntervalLogs(logs)
    const sum = (ivs: ReadonlyArray<{ total: number }>): number => ivs.reduce((n, iv) => n + iv.total, 0)
    const ops = (name: string): number => report.measurements.find((m) => m.name.name === name)!.operations!
    assert.deepEqual(grouped.operations.map((o) => o.op).sort(), ['READ', 'UPDATE'])
    for (const o of grouped.operations) {
      assert.equal(o.status, 'OK')
      assert.equal(sum(o.measured), ops(o.op))
      assert.equal(sum(o.intended), ops(`Intended-${o.op}`))
    }
    assert.equal(sum(grouped.cleanup!.measured), ops('CLEANUP'))
    assert.equal(sum(grouped.cleanup!.intended), ops('Intended-CLEANUP'))
    // YCSB runs one cleanup() per client thread (-threads 4): never an operation.
    assert.equal(sum(grouped.cleanup!.measured), 4)
    assert.equal(report.operations, ops('READ') + ops('UPDATE'))
    assert.throws(() => groupIntervalLogs([logs[0]!, logs[0]!]), isDecodeError(/measures .* again/))
  },
)
