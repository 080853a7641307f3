/**
 * YCSB's raw latencies against YCSB's own printed figures, all from
 * test/fixtures/ycsb-0.17.0 (no figure pinned: every check compares files
 * of the same run, so regenerated fixtures keep passing):
 *
 * - measurementtype=raw output becomes per-operation events (start =
 *   completion timestamp - latency) and agrees with the report after it;
 * - Benchstream's percentile rank (HdrHistogram 2.1.4's) over the raw
 *   latencies gives exactly what YCSB's HdrHistogram report printed (as
 *   highestEquivalentValue, 3 digits); YCSB's raw report uses another rank;
 * - the interval-log import of a run gives YCSB's counts exactly and its
 *   p95/p99 within Benchstream's bucket resolution (0.8%);
 * - two concurrent clients' logs merged give the exact percentiles of both
 *   clients' raw latencies within 1%.
 */
import assert from 'node:assert/strict'
import { readFileSync } from 'node:fs'
import path from 'node:path'
import { test } from 'node:test'
import { isBenchstreamError } from '../../services/core/errors.js'
import { Histogram, quantileRank } from '../../services/core/stats/histogram.js'
import { hdrBucketRange, hdrIndexOf, hdrLayout, type HdrInterval } from '../../services/core/ycsb/hdr-log.js'
import { detectFormat, parseYcsbFile } from '../../services/core/ycsb/import.js'
import { parseRawReport } from '../../services/core/ycsb/raw-report.js'
import type {
  IntervalLogReport,
  RawReport,
  SummaryMeasurement,
  SummaryReport,
} from '../../services/core/ycsb/report-types.js'
import { joinRegExp } from '../helpers/regexp.js'

const FIXTURES = 'test/fixtures/ycsb-0.17.0'
const read = (rel: string): string => readFileSync(path.join(FIXTURES, rel), 'utf8')
const parse = (rel: string): ReturnType<typeof parseYcsbFile> =>
  parseYcsbFile(rel, readFileSync(path.join(FIXTURES, rel)))
const raw = (rel: string): RawReport => parse(rel) as RawReport
const summary = (rel: string): SummaryReport => parse(rel) as SummaryReport
const log = (rel: string): IntervalLogReport => parse(rel) as IntervalLogReport
const measurement = (r: SummaryReport, name: string): SummaryMeasurement =>
  r.measurements.find((m) => m.name.name === name)!
const sortedLatencies = (r: RawReport, name: string): number[] =>
  [...r.series.find((s) => s.name.name === name)!.latencyUs].sort((a, b) => a - b)

/** HdrHistogram 2.1.4 with 3 significant digits, as YCSB 0.17.0 records. */
const HDR3 = hdrLayout(3, 1)
const highestEquivalent = (v: number): number => {
  const { low, width } = hdrBucketRange(HDR3, hdrIndexOf(HDR3, v))
  return low + width - 1
}
const lowestEquivalent = (v: number): number => hdrBucketRange(HDR3, hdrIndexOf(HDR3, v)).low
/** Exact value at Benchstream's (HdrHistogram 2.1.4's) rank. */
const ourPercentile = (sorted: readonly number[], q: number): number => sorted[quantileRank(q, sorted.length) - 1]!

function histogramOf(intervals: readonly HdrInterval[]): Histogram {
  const h = new Histogram()
  for (const iv of intervals) for (const [b, c] of iv.buckets) h.recordBucket(b, c)
  return h
}

/** Benchstream's resolution: a bucket is at most 1/128 of its value wide; 1 µs for the exact buckets. */
function withinResolution(got: number, printed: number, what: string): void {
  assert.ok(
    Math.abs(got - printed) <= Math.max(0.008 * printed, 1),
    `${what}: Benchstream ${got}, YCSB printed ${printed} (${(((got - printed) / printed) * 100).toFixed(3)}%)`,
  )
}

test('raw output (measurementtype=raw to stdout) becomes per-operation events; its report is kept and agrees', () => {
  const rel = 'run-workloada-raw.stdout.txt'
  assert.equal(detectFormat(rel, read(rel)), 'raw')
  const r = raw(rel)
  assert.deepEqual(
    r.series.map((s) => s.name.name),
    ['READ', 'CLEANUP', 'UPDATE'],
  )
  // -p operationcount=2000 -threads 4.
  assert.equal(
    r.series.filter((s) => s.name.kind === 'operation').reduce((n, s) => n + s.count, 0),
    2000,
  )
  assert.equal(r.series.find((s) => s.name.kind === 'cleanup')!.count, 4)
  const lines = read(rel).split('\n')
  for (const s of r.series) {
    // Each series' values, in file order, are the file's own lines.
    const mine = lines.filter((l) => l.startsWith(`${s.name.name},`)).map((l) => l.split(',').map(Number))
    assert.equal(mine.length, s.count)
    for (const [i, [, ts, lat]] of mine.entries()) {
      assert.equal(s.endMs[i], ts)
      assert.equal(s.latencyUs[i], lat)
      // The timestamp is when YCSB recorded the latency, after the operation: the start is that minus the latency.
      assert.equal(s.startUs[i], ts! * 1000 - lat!)
    }
    assert.equal(lines[s.line - 1], `${s.name.name} latency raw data: op, timestamp(ms), latency(us)`)
    const m = measurement(r.summary!, s.name.name)
    assert.equal(m.writer, 'raw')
    assert.equal(m.operations, s.count)
    const sorted = [...s.latencyUs].sort((a, b) => a - b)
    assert.equal(m.minUs, sorted[0])
    assert.equal(m.maxUs, sorted.at(-1))
    assert.ok(Math.abs(m.averageUs! - sorted.reduce((a, b) => a + b, 0) / sorted.length) < 1e-9)
  }
  assert.equal(r.summary!.operations, 2000)
  // measurement.raw.output_file: all measurements appended to one file, Raw-prefixed under hdrhistogram+raw, no report.
  const file = raw('two-clients/client1-raw.txt')
  assert.equal(file.summary, undefined)
  assert.deepEqual(
    file.series.map((s) => [s.name.name, s.name.part, s.name.op ?? s.name.kind]),
    [
      ['RawREAD', 'Raw', 'READ'],
      ['RawCLEANUP', 'Raw', 'cleanup'],
      ['RawUPDATE', 'Raw', 'UPDATE'],
    ],
  )
  assert.equal(
    file.series.reduce((n, s) => n + (s.name.kind === 'operation' ? s.count : 0), 0),
    2500,
  )
})

test('raw files that were appended to twice, truncated or interleaved are errors naming the line', () => {
  const text = read('two-clients/client1-raw.txt')
  const isDecode = (re: RegExp) => (err: unknown) => {
    assert.ok(isBenchstreamError(err, 'BS_ERR_DECODE'), String(err))
    assert.match(err.message, re)
    return true
  }
  assert.throws(
    () => parseRawReport(text + text, 'raw.txt'),
    isDecode(
      new RegExp(
        `^raw\\.txt line ${text.split('\n').length}: a second "RawREAD latency raw data" header \\(the ` +
          `first is at line 1\\): the file holds more than one run`,
      ),
    ),
  )
  const stdout = read('run-workloada-raw.stdout.txt')
  const cut = stdout.replace(/^UPDATE,\d+,\d+\n/m, '')
  assert.throws(
    () => parseRawReport(cut, 'cut.txt'),
    isDecode(
      joinRegExp([
        /^cut\.txt line \d+: \d+ UPDATE raw data lines from here, /,
        /but the report says Total Operations \d+ \(truncated or joined file\?\)/,
      ]),
    ),
  )
  const interleaved = 'READ latency raw data: op, timestamp(ms), latency(us)\nREAD,1,2\nUPDATE,1,3\nREAD,1,4\n'
  assert.throws(
    () => parseRawReport(interleaved, 'i.txt'),
    isDecode(/^i\.txt line 4: a READ line inside the UPDATE data started at line 3/),
  )
})

test(
  "Benchstream's rank rule over the raw latencies gives exactly the percentiles YCSB's HdrHistogram " +
    'printed (single client, hdrhistogram+raw)',
  () => {
    let checked = 0
    for (const c of ['client1', 'client2']) {
      const report = summary(`two-clients/${c}.stdout.txt`)
      const rawData = raw(`two-clients/${c}-raw.txt`)
      for (const op of ['READ', 'UPDATE', 'CLEANUP']) {
        const hdr = measurement(report, `Hdr${op}`)
        const sorted = sortedLatencies(rawData, `Raw${op}`)
        assert.equal(sorted.length, hdr.operations, `${c} ${op}: one raw latency per operation`)
        assert.equal(hdr.minUs, lowestEquivalent(sorted[0]!))
        assert.equal(hdr.maxUs, highestEquivalent(sorted.at(-1)!))
        for (const p of hdr.percentiles) {
          // YCSB prints getValueAtPercentile: the highest value equivalent (3 digits) to the value at rank (long)(q*n +
          // 0.5).
          assert.equal(
            highestEquivalent(ourPercentile(sorted, p.percentile / 100)),
            p.valueUs,
            `${c} Hdr${op} ${p.label}`,
          )
          checked++
        }
      }
    }
    assert.equal(checked, 12)
  },
)

test(
  "YCSB's raw report ranks differently (sorted[(int)(n*q)]): equal " + 'to ours exactly where the two ranks agree',
  () => {
    let differ = 0
    let agree = 0
    const files: Array<[RawReport, SummaryReport]> = [
      [raw('run-workloada-raw.stdout.txt'), raw('run-workloada-raw.stdout.txt').summary!],
      [raw('two-clients/client1-raw.txt'), summary('two-clients/client1.stdout.txt')],
      [raw('two-clients/client2-raw.txt'), summary('two-clients/client2.stdout.txt')],
    ]
    for (const [data, report] of files) {
      for (const m of report.measurements.filter((x) => x.writer === 'raw')) {
        const sorted = sortedLatencies(data, m.name.name)
        const n = sorted.length
        assert.deepEqual(
          m.percentiles.map((p) => p.percentile),
          [1, 5, 50, 90, 95, 99, 99.9, 99.99],
        )
        for (const p of m.percentiles) {
          const q = p.percentile / 100
          // OneMeasurementRaw: measurements.get((int) (totalOps * q)), a 0-based index: rank floor(n*q) + 1.
          assert.equal(sorted[Math.floor(n * q)], p.valueUs, `${m.name.name} ${p.label}`)
          if (quantileRank(q, n) === Math.floor(n * q) + 1) {
            assert.equal(ourPercentile(sorted, q), p.valueUs)
            agree++
          } else {
            // The fraction of n*q is below one half (or n*q is whole): HdrHistogram's rank is one lower.
            assert.ok(n * q - Math.floor(n * q) < 0.5)
            assert.ok(ourPercentile(sorted, q) <= p.valueUs)
            differ++
          }
        }
      }
    }
    assert.equal(agree + differ, 9 * 8)
    assert.ok(agree > 0)
  },
)

test("the interval-log import of a run gives YCSB's counts exactly and its p95/p99 within 0.8%", () => {
  const runs: Array<[string, string, string]> = [
    ['two-clients/client1.stdout.txt', 'two-clients/client1-', 'Hdr'],
    ['two-clients/client2.stdout.txt', 'two-clients/client2-', 'Hdr'],
    ['run-workloada-hdr.stdout.txt', 'hdr-op/', ''],
    ['run-workloada-target-both.stdout.txt', 'hdr-both/', ''],
    ['run-workloada-target-both.stdout.txt', 'hdr-both/Intended-', ''],
  ]
  for (const [reportFile, prefix, part] of runs) {
    const report = summary(reportFile)
    for (const op of ['READ', 'UPDATE', 'CLEANUP']) {
      for (const v of ['', 'v2/']) {
        const l = log(`${v}${prefix}${part}${op}.hdr`)
        const m = measurement(report, l.name.name)
        assert.equal(l.total, m.operations, `${l.source}: total`)
        if (m.returns.OK !== undefined) assert.equal(l.total, m.returns.OK)
        const h = histogramOf(l.log.intervals)
        for (const p of m.percentiles)
          withinResolution(h.quantile(p.percentile / 100), p.valueUs, `${l.source} ${p.label}`)
      }
    }
  }
})

test(
  "every HdrHistogram bucket of YCSB's logs falls inside one Benchstream bucket: the logs give " +
    'the same buckets as the raw latencies',
  () => {
    for (const c of ['client1', 'client2']) {
      const rawData = raw(`two-clients/${c}-raw.txt`)
      for (const op of ['READ', 'UPDATE', 'CLEANUP']) {
        const fromRaw = new Histogram()
        for (const v of rawData.series.find((s) => s.name.name === `Raw${op}`)!.latencyUs) fromRaw.record(v)
        assert.deepEqual(
          histogramOf(log(`two-clients/${c}-Hdr${op}.hdr`).log.intervals).entries(),
          fromRaw.entries(),
          `${c} ${op}`,
        )
      }
    }
    // The V2 log HdrHistogram 2.2.2 recorded from run-workloada-raw's latencies, 1 s intervals by completion time.
    const r = raw('run-workloada-raw.stdout.txt')
    for (const s of r.series) {
      const l = log(`v2/from-raw/${s.name.name}.hdr`)
      assert.equal(l.total, s.count)
      for (const iv of l.log.intervals) {
        const inInterval = [...s.endMs].filter(
          (e) => e * 1000 >= iv.startUs && e * 1000 < iv.startUs + iv.lengthUs,
        ).length
        assert.equal(iv.total, inInterval, `${s.name.name} interval at line ${iv.line}`)
      }
      const fromRaw = new Histogram()
      for (const v of s.latencyUs) fromRaw.record(v)
      assert.deepEqual(histogramOf(l.log.intervals).entries(), fromRaw.entries())
    }
  },
)

test(
  'two concurrent clients: merged logs give the exact percentiles of both raw files within 1%, ' +
    'bounded by the clients own',
  () => {
    const QUANTILES = [0.5, 0.9, 0.95, 0.99, 0.999]
    for (const v of ['', 'v2/']) {
      for (const op of ['READ', 'UPDATE']) {
        const clients = ['client1', 'client2'].map((c) =>
          histogramOf(log(`${v}two-clients/${c}-Hdr${op}.hdr`).log.intervals),
        )
        const merged = new Histogram()
        for (const h of clients) merged.merge(h)
        const exact = ['client1', 'client2']
          .flatMap((c) => [
            ...raw(`two-clients/${c}-raw.txt`).series.find((s) => s.name.name === `Raw${op}`)!.latencyUs,
          ])
          .sort((a, b) => a - b)
        assert.equal(merged.total, exact.length)
        assert.equal(merged.total, clients[0]!.total + clients[1]!.total)
        for (const q of QUANTILES) {
          const got = merged.quantile(q)
          const want = ourPercentile(exact, q)
          assert.ok(
            Math.abs(got - want) <= 0.01 * want,
            `${v}${op} p${q * 100}: merged logs ${got}, exact over both raw files ${want}`,
          )
          // Between the clients' own: at ranks floor(q*n_i) and ceil(q*n_i). With the rounded rank of
          // each client alone the merge can lie above both (two ranks rounded down leave one value short).
          const low = Math.min(...clients.map((h) => valueAtRank(h, Math.max(1, Math.floor(q * h.total)))))
          const high = Math.max(...clients.map((h) => valueAtRank(h, Math.ceil(q * h.total))))
          assert.ok(
            low <= got && got <= high,
            `${v}${op} p${q * 100}: merged ${got} outside the clients' [${low}, ${high}]`,
          )
        }
      }
    }
  },
)

/** Report value of the bucket holding the rank-th value (1-based). */
function valueAtRank(h: Histogram, rank: number): number {
  let seen = 0
  for (const [i, c] of h.entries()) {
    seen += c
    if (seen >= rank) {
      const one = new Histogram()
      one.recordBucket(i, 1)
      return one.quantile(0.5)
    }
  }
  throw new Error(`rank ${rank} beyond ${h.total}`)
}
