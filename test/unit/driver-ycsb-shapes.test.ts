/**
 * YCSB's command-line shapes in `benchstream run/load`: -t/-load, YCSB
 * binding classes, output properties (measurement.interval,
 * hdrhistogram.percentiles, exporter, hdrhistogram.fileoutput) and the
 * properties the driver refuses by name. The interval logs it writes are
 * read back by our parser (exact buckets) and by HdrHistogram's own
 * JavaScript port (hdr-histogram-js), as YCSB users' tools would.
 */
import assert from 'node:assert/strict'
import { test } from 'node:test'
import { HistogramLogReader } from 'hdr-histogram-js'
import { BINDING_NAMES } from '../../services/adapters/datastores/index.js'
import { isBenchstreamError } from '../../services/core/errors.js'
import { NullSink } from '../../services/core/ports/event-sink.js'
import { percentileLabel, renderRecords, ycsbRecords } from '../../services/core/reports/ycsb-exporters.js'
import { buildReport, formatYcsb } from '../../services/core/reports/ycsb-report.js'
import { Histogram, quantileFromEntries } from '../../services/core/stats/histogram.js'
import { parseHdrLog } from '../../services/core/ycsb/hdr-log.js'
import { parseYcsbFile } from '../../services/core/ycsb/import.js'
import type { SummaryReport } from '../../services/core/ycsb/report-types.js'
import { opCodes } from '../../services/core/codec/record-encoders.js'
import { parseDriverArgs } from '../../services/driver/config.js'
import { HdrLogSink } from '../../services/driver/hdr-log-sink.js'
import { lognormalUs, prng } from '../helpers/ycsb-hdr.js'
import { joinRegExp } from '../helpers/regexp.js'

const env = { KAFKA_BROKERS: '127.0.0.1:9092' }
const parse = (phase: 'load' | 'run', argv: string[]) =>
  parseDriverArgs(phase, argv, env, { bindings: BINDING_NAMES, readFile: () => 'recordcount=10\n' })
const fails =
  (code: string, re: RegExp) =>
  (err: unknown): boolean =>
    isBenchstreamError(err) && err.code === code && re.test(err.message)

test(
  "-t and -load are accepted where they agree with the command; YCSB's Redis class maps to the " +
    'redis binding, said in a note',
  () => {
    assert.equal(parse('run', ['-t', '-P', 'w']).phase, 'run')
    assert.equal(parse('load', ['-load', '-P', 'w']).phase, 'load')
    assert.throws(
      () => parse('run', ['-load']),
      fails('BS_ERR_USAGE', /-load is YCSB's load phase, but this is benchstream run: use benchstream load/),
    )
    assert.throws(
      () => parse('run', ['-p', 'dotransactions=false']),
      fails('BS_ERR_USAGE', /dotransactions=false is YCSB's load phase/),
    )
    const c = parse('run', ['-db', 'site.ycsb.db.RedisClient', '-p', 'redis.port=7000'])
    assert.equal(c.binding, 'redis')
    assert.match(
      c.notes.join('\n'),
      joinRegExp([
        /-db site\.ycsb\.db\.RedisClient: YCSB's class is not part of this driver; /,
        /using its equivalent, binding redis \(.*_bs_keys/,
      ]),
    )
    assert.throws(
      () => parse('run', ['-db', 'site.ycsb.db.MongoDbClient']),
      fails('BS_ERR_USAGE', /unknown binding "site\.ycsb\.db\.MongoDbClient"/),
    )
  },
)

test('output properties are parsed; unsupported YCSB properties and values are refused by name', () => {
  const c = parse('run', [
    '-p',
    'measurement.interval=both',
    '-p',
    'hdrhistogram.percentiles=95,99.9',
    '-p',
    'exporter=site.ycsb.measurements.exporter.JSONArrayMeasurementsExporter',
    '-p',
    'hdrhistogram.fileoutput=true',
    '-p',
    'hdrhistogram.output.path=/tmp/x-',
    '-p',
    'status.interval=2',
    '-p',
    'measurementtype=hdrhistogram',
  ])
  assert.deepEqual(c.ycsb, {
    measurementInterval: 'both',
    percentiles: [95, 99.9],
    exporter: 'json-array',
    hdrLog: { pathPrefix: '/tmp/x-', intervalS: 2 },
  })
  assert.deepEqual(parse('run', []).ycsb, {
    measurementInterval: undefined,
    percentiles: undefined,
    exporter: 'text',
    hdrLog: undefined,
  })
  assert.throws(
    () => parse('run', ['-p', 'measurementtype=raw']),
    fails('BS_ERR_WORKLOAD', /measurementtype=raw is not supported by Benchstream's driver/),
  )
  assert.throws(
    () => parse('run', ['-p', 'measurement.interval=all']),
    fails('BS_ERR_WORKLOAD', /measurement\.interval=all is not allowed: expected op, intended or both/),
  )
  assert.throws(
    () => parse('run', ['-p', 'hdrhistogram.percentiles=97,99']),
    fails('BS_ERR_WORKLOAD', /97 is not supported; the driver's report holds 50, 90, 95, 99, 99\.9, 99\.99/),
  )
  assert.throws(
    () => parse('run', ['-p', 'exporter=Foo']),
    fails(
      'BS_ERR_WORKLOAD',
      joinRegExp([
        /exporter=Foo is not supported: /,
        /expected one of YCSB's site\.ycsb\.measurements\.exporter\.TextMeasurementsExporter/,
      ]),
    ),
  )
  assert.throws(
    () => parse('run', ['-p', 'measurement.trackjvm=true', '-p', 'dataintegrity=true']),
    fails(
      'BS_ERR_WORKLOAD',
      joinRegExp([
        /YCSB properties dataintegrity \(values are not checked on read\), measurement\.trackjvm \(JVM figures .*\) /,
        /not supported by Benchstream's driver; .*benchstream ycsb/,
      ]),
    ),
  )
  assert.throws(
    () => parse('run', ['-db', 'redis', '-p', 'redis.cluster=true']),
    fails('BS_ERR_WORKLOAD', /YCSB property redis\.cluster \(the redis binding talks to one Redis server/),
  )
})

const report = buildReport(
  [
    {
      op: 'READ',
      status: 'OK',
      count: 3,
      sumUs: 1000,
      minUs: 100,
      maxUs: 700,
      hist: [
        [100, 1],
        [200, 1],
        [300, 1],
      ],
      intended: {
        sumUs: 1500,
        minUs: 100,
        maxUs: 900,
        hist: [
          [100, 1],
          [300, 1],
          [400, 1],
        ],
      },
    },
    {
      op: 'UPDATE',
      status: 'ERROR',
      count: 1,
      sumUs: 50,
      minUs: 50,
      maxUs: 50,
      hist: [[50, 1]],
      intended: { sumUs: 50, minUs: 50, maxUs: 50, hist: [[50, 1]] },
    },
  ],
  2000,
  { intended: true },
)

test(
  "YCSB's exporters: text equals the report as printed; JSON array and objects in Jackson's layout, " +
    'read back to the same figures',
  () => {
    assert.equal(renderRecords(ycsbRecords(report), 'text'), formatYcsb(report))
    const text = parseYcsbFile('t', renderRecords(ycsbRecords(report), 'text')) as SummaryReport
    for (const exporter of ['json-array', 'json-objects'] as const) {
      const out = renderRecords(ycsbRecords(report), exporter)
      assert.match(
        out,
        exporter === 'json-array'
          ? /^\[ \{\n {2}"metric" : "OVERALL",\n {2}"measurement" : "RunTime\(ms\)",\n {2}"value" : 2000\n\}, \{\n/
          : /^\{\n {2}"metric" : "OVERALL",\n[^]*\n\} \{\n/,
      )
      assert.match(
        out,
        /"measurement" : "AverageLatency\(us\)",\n {2}"value" : \d+\.\d+\n/,
        'averages are Java doubles',
      )
      const back = parseYcsbFile('j', out) as SummaryReport
      assert.equal(back.format, exporter)
      assert.deepEqual(
        back.measurements.map((m) => [m.name.name, m.operations, m.percentiles.map((p) => p.valueUs), m.returns]),
        text.measurements.map((m) => [m.name.name, m.operations, m.percentiles.map((p) => p.valueUs), m.returns]),
      )
    }
    // The driver's own text report ends with [BENCHSTREAM], RunId, <id>: import-ycsb reads it, skipping those.
    const own = parseYcsbFile(
      'own',
      `${formatYcsb(report)}[BENCHSTREAM], RunId, run-1\n[BENCHSTREAM], ClientId, c1\n[BENCHSTREAM], ` +
        `EventsDelivered, 4\n`,
    ) as SummaryReport
    assert.equal(own.operations, 4)
    assert.equal(own.measurements.find((m) => m.name.name === 'BENCHSTREAM')!.other[0]!.value, 4)
    assert.deepEqual(
      ['95', '1', '11', '22', '99.9', '99.99'].map((p) => percentileLabel(Number(p))),
      [
        '95thPercentileLatency(us)',
        '1stPercentileLatency(us)',
        '11thPercentileLatency(us)',
        '22ndPercentileLatency(us)',
        '99.9PercentileLatency(us)',
        '99.99PercentileLatency(us)',
      ],
    )
  },
)

test('measurement.interval and hdrhistogram.percentiles shape the sections and lines as YCSB does', () => {
  const names = (shape: Parameters<typeof ycsbRecords>[1]): string[] => [
    ...new Set(ycsbRecords(report, shape).map((r) => r.metric)),
  ]
  assert.deepEqual(names({ measurementInterval: 'op' }), ['OVERALL', 'READ', 'UPDATE', 'UPDATE-FAILED'])
  assert.deepEqual(names({ measurementInterval: 'both' }), [
    'OVERALL',
    'READ',
    'UPDATE',
    'UPDATE-FAILED',
    'Intended-READ',
    'Intended-UPDATE-FAILED',
  ])
  const intendedOnly = ycsbRecords(report, { measurementInterval: 'intended' })
  assert.deepEqual(
    intendedOnly.filter((r) => r.metric === 'READ').map((r) => r.measurement),
    ['Return=OK'],
    'measured sections keep their Return= lines only',
  )
  // Unthrottled with both: YCSB prints the intended sections with the measured figures.
  const unthrottled = buildReport(
    [{ op: 'READ', status: 'OK', count: 1, sumUs: 10, minUs: 10, maxUs: 10, hist: [[10, 1]] }],
    1000,
  )
  const both = ycsbRecords(unthrottled, { measurementInterval: 'both' })
  assert.deepEqual(
    both.filter((r) => r.metric === 'Intended-READ' && r.measurement === 'MaxLatency(us)').map((r) => r.value),
    [10],
  )
  const p = ycsbRecords(report, { percentiles: [95, 99.9] })
    .filter((r) => r.metric === 'READ' && r.measurement.includes('Percentile'))
    .map((r) => r.measurement)
  assert.deepEqual(p, ['95thPercentileLatency(us)', '99.9PercentileLatency(us)'])
})

test(
  'hdrhistogram.fileoutput: interval logs per measurement that our parser reads back bucket for ' +
    "bucket and HdrHistogram's reader reads as well",
  async () => {
    const files = new Map<string, string>()
    let now = 1_796_000_000_000
    const sink = new HdrLogSink(new NullSink(), {
      pathPrefix: 'out/r1-',
      intervalMs: 3_600_000,
      measured: true,
      intended: true,
      now: () => now,
      write: (f, text, create) => files.set(f, (create ? '' : (files.get(f) ?? '')) + text),
    })
    const rand = prng(3)
    const expected = new Map<string, Histogram[]>()
    const [read, ok] = opCodes('READ', 'OK', 'UNKNOWN')
    const [, failed] = opCodes('READ', 'TIMEOUT', 'UNKNOWN')
    for (let interval = 0; interval < 3; interval++) {
      const measured = new Histogram()
      const intended = new Histogram()
      for (const v of lognormalUs(rand, 2000, 800, 1.1)) {
        const iv = v + Math.floor(rand() * 5000)
        sink.record(0, read, 0, ok, now * 1000, v, iv, 0)
        measured.record(v)
        intended.record(iv)
      }
      if (interval === 1) sink.record(0, read, 0, failed, now * 1000, 2_000_000, 2_000_000, 0)
      expected.set('READ', [...(expected.get('READ') ?? []), measured])
      expected.set('Intended-READ', [...(expected.get('Intended-READ') ?? []), intended])
      now += 1000
      if (interval < 2) sink.roll()
    }
    await sink.close()
    assert.deepEqual([...files.keys()].sort(), [
      'out/r1-Intended-READ-FAILED.hdr',
      'out/r1-Intended-READ.hdr',
      'out/r1-READ-FAILED.hdr',
      'out/r1-READ.hdr',
    ])
    for (const name of ['READ', 'Intended-READ']) {
      const text = files.get(`out/r1-${name}.hdr`)!
      const log = parseHdrLog(text, name)
      assert.equal(log.loggingFor, name)
      assert.equal(log.formatVersion, '1.3')
      assert.deepEqual(
        log.intervals.map((iv) => [iv.startUs, iv.lengthUs, iv.encoding]),
        [0, 1, 2].map((i) => [(1_796_000_000_000 + i * 1000) * 1000, 1_000_000, 'V2']),
      )
      assert.deepEqual(
        log.intervals.map((iv) => iv.buckets),
        expected.get(name)!.map((h) => h.entries()),
        `${name}: exact buckets back`,
      )
      // HdrHistogram's own reader (the JavaScript port): every interval, the same counts and p99 to its resolution.
      const reader = new HistogramLogReader(text)
      for (const h of expected.get(name)!) {
        const hh = reader.nextIntervalHistogram()!
        assert.equal(hh.totalCount, h.total)
        const ours = quantileFromEntries(h.entries(), 0.99)
        assert.ok(
          Math.abs(hh.getValueAtPercentile(99) - ours) <= 0.008 * ours + 1,
          `${name}: HdrHistogram p99 ${hh.getValueAtPercentile(99)} vs ${ours}`,
        )
      }
      assert.equal(reader.nextIntervalHistogram(), null)
    }
    // A measurement that appears later gets its file then, with an (empty) line for every later interval.
    const failedLog = parseHdrLog(files.get('out/r1-READ-FAILED.hdr')!, 'READ-FAILED')
    assert.deepEqual(
      failedLog.intervals.map((iv) => iv.total),
      [1, 0],
    )
  },
)
