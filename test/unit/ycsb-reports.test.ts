/**
 * YCSB 0.17.0's final reports (text exporter, both JSON exporters) from
 * test/fixtures/ycsb-0.17.0, read back record for record; the same reports
 * as they come out of a mail (commas lost, re-wrapped, quoted, CRLF) read
 * the same; malformed files are errors naming file and line; several
 * clients' summaries make a summary run whose percentiles stay per client.
 */
import assert from 'node:assert/strict'
import { readFileSync } from 'node:fs'
import path from 'node:path'
import { test } from 'node:test'
import { isBenchstreamError } from '../../services/core/errors.js'
import { detectFormat, parseYcsbFile } from '../../services/core/ycsb/import.js'
import { parseJsonReport } from '../../services/core/ycsb/json-report.js'
import type { SummaryReport } from '../../services/core/ycsb/report-types.js'
import { summaryRun } from '../../services/core/ycsb/summary-report.js'
import { parseTextReport } from '../../services/core/ycsb/text-report.js'

const FIXTURES = 'test/fixtures/ycsb-0.17.0'
const read = (rel: string): string => readFileSync(path.join(FIXTURES, rel), 'utf8')
const TEXT_REPORTS = [
  'run-workloada.stdout.txt',
  'run-workloada-target-both.stdout.txt',
  'run-workloada-hdr.stdout.txt',
  'load-workloada.stdout.txt',
  'run-workloade.stdout.txt',
  'two-clients/client1.stdout.txt',
  'two-clients/client2.stdout.txt',
]

function summary(rel: string, text = read(rel)): SummaryReport {
  const r = parseYcsbFile(rel, text)
  assert.equal(r.kind, 'summary', rel)
  return r
}

function isDecodeError(re: RegExp): (err: unknown) => boolean {
  return (err: unknown) => {
    assert.ok(isBenchstreamError(err, 'BS_ERR_DECODE'), String(err))
    assert.match(err.message, re)
    return true
  }
}

/** The report back as `metric|measurement|value` records, in YCSB's own labels. */
function records(r: SummaryReport): string[] {
  const out: string[] = []
  const put = (metric: string, measurement: string, value: number | undefined): void => {
    if (value !== undefined) out.push(`${metric}|${measurement}|${value}`)
  }
  put('OVERALL', 'RunTime(ms)', r.runtimeMs)
  put('OVERALL', 'Throughput(ops/sec)', r.throughputOpsPerSec)
  put('TOTAL_GCs', 'Count', r.gc.count)
  put('TOTAL_GC_TIME', 'Time(ms)', r.gc.timeMs)
  put('TOTAL_GC_TIME_%', 'Time(%)', r.gc.timePercent)
  for (const c of r.gc.collectors) {
    put(`TOTAL_GCS_${c.name}`, 'Count', c.count)
    put(`TOTAL_GC_TIME_${c.name}`, 'Time(ms)', c.timeMs)
    put(`TOTAL_GC_TIME_%_${c.name}`, 'Time(%)', c.timePercent)
  }
  for (const m of r.measurements) {
    const raw = m.writer === 'raw'
    const n = m.name.name
    put(n, raw ? 'Total Operations' : 'Operations', m.operations)
    if (raw) put(n, 'Below is a summary of latency in microseconds:', -1)
    put(n, raw ? 'Average' : 'AverageLatency(us)', m.averageUs)
    put(n, raw ? 'Min' : 'MinLatency(us)', m.minUs)
    put(n, raw ? 'Max' : 'MaxLatency(us)', m.maxUs)
    put(n, 'LatencyVariance(us)', m.varianceUs2)
    for (const p of m.percentiles) put(n, p.label, p.unit === 'ms' ? p.valueUs / 1000 : p.valueUs)
    for (const [s, c] of Object.entries(m.returns)) put(n, `Return=${s}`, c)
    for (const s of m.series) put(n, s.key, s.value)
    for (const o of m.other) put(n, o.measurement, o.value)
  }
  for (const o of r.other) put(o.metric, o.measurement, o.value)
  return out.sort()
}

/** What a strict reading of the file's own lines gives: the oracle for records(). */
function oracle(text: string): string[] {
  return text
    .split('\n')
    .map((l) => /^\[([^\]]+)\], (.+), (\S+)$/.exec(l))
    .filter((m) => m !== null)
    .map((m) => `${m[1]}|${m[2]}|${Number(m[3])}`)
    .sort()
}

/** A report without what legitimately differs between copies of it (line numbers, file name, format, chatter). */
function figures(r: SummaryReport): unknown {
  const { measurements, runtimeMs, throughputOpsPerSec, gc, operations, other } = r
  return JSON.parse(
    JSON.stringify({ measurements, runtimeMs, throughputOpsPerSec, gc, operations, other }, (k, v: unknown) =>
      k === 'line' ? undefined : v,
    ),
  )
}

test('every record of the real text reports lands in its field, with YCSB units and names', () => {
  for (const rel of TEXT_REPORTS) {
    const text = read(rel)
    assert.equal(detectFormat(rel, text), 'text', rel)
    const r = summary(rel, text)
    assert.deepEqual(records(r), oracle(text), rel)
    assert.equal(r.origin, 'reported')
  }
  const a = summary('run-workloada.stdout.txt')
  // -p operationcount=5000 -threads 4: 5000 operations, one CLEANUP per thread kept out of them.
  assert.equal(a.operations, 5000)
  assert.deepEqual(
    a.measurements.map((m) => [m.name.name, m.name.kind, m.writer]),
    [
      ['READ', 'operation', 'hdrhistogram'],
      ['CLEANUP', 'cleanup', 'hdrhistogram'],
      ['UPDATE', 'operation', 'hdrhistogram'],
    ],
  )
  assert.equal(a.measurements.find((m) => m.name.kind === 'cleanup')!.operations, 4)
  assert.deepEqual(
    a.measurements[0]!.percentiles.map((p) => [p.percentile, p.unit, p.label]),
    [
      [95, 'us', '95thPercentileLatency(us)'],
      [99, 'us', '99thPercentileLatency(us)'],
    ],
  )
  assert.equal(a.gc.collectors.length, 2)
  assert.equal(summary('load-workloada.stdout.txt').operations, 1000)
  const e = summary('run-workloade.stdout.txt')
  assert.deepEqual(
    e.measurements
      .filter((m) => m.name.kind === 'operation')
      .map((m) => m.name.op ?? '')
      .sort((x, y) => x.localeCompare(y)),
    ['INSERT', 'SCAN'],
  )
  assert.equal(e.operations, 5000)
  const both = summary('run-workloada-target-both.stdout.txt')
  assert.deepEqual(
    both.measurements
      .filter((m) => m.name.latency === 'intended')
      .map((m) => m.name.name)
      .sort(),
    ['Intended-CLEANUP', 'Intended-READ', 'Intended-UPDATE'],
  )
  assert.equal(both.operations, 5000)
  // hdrhistogram+raw: the Hdr and Raw halves of each measurement; only the Hdr half counts (and carries Return=).
  const c1 = summary('two-clients/client1.stdout.txt')
  assert.equal(c1.operations, 2500)
  assert.deepEqual(
    c1.measurements.map((m) => `${m.name.part}:${m.writer}`),
    ['Hdr:hdrhistogram', 'Raw:raw', 'Hdr:hdrhistogram', 'Raw:raw', 'Hdr:hdrhistogram', 'Raw:raw'],
  )
  assert.equal(c1.ignoredLines, 3) // "Raw data measurement: will output to result file: ..." once per measurement
})

test('both JSON exporters read like the text report; the concatenated objects of JSONMeasurementsExporter too', () => {
  for (const [rel, format] of [
    ['run-workloada.jsonarray.json', 'json-array'],
    ['run-workloada.json', 'json-objects'],
  ] as const) {
    const text = read(rel)
    assert.equal(detectFormat(rel, text), format)
    const r = summary(rel, text)
    assert.equal(r.format, format)
    const fromJson = (
      JSON.parse(format === 'json-array' ? text : `[${text.replace(/\}\s*\{/g, '},{')}]`) as Array<{
        metric: string
        measurement: string
        value: number
      }>
    ).map((o) => `${o.metric}|${o.measurement}|${o.value}`)
    assert.deepEqual(records(r), [...fromJson].sort(), rel)
    assert.equal(r.operations, 5000)
    assert.deepEqual(
      r.measurements.map((m) => m.name.name),
      ['READ', 'CLEANUP', 'UPDATE'],
    )
    // The same report as text gives the same figures.
    const asText = fromJson
      .map((l) => l.split('|'))
      .map(([m, k, v]) => `[${m}], ${k}, ${v}`)
      .join('\n')
    assert.deepEqual(figures(parseTextReport(asText, 'as-text')), figures(r))
  }
})

/** Mail manglings of a report: each must read to the same figures as the file. */
const MANGLINGS: Array<[string, (s: string) => string]> = [
  ['commas lost', (s) => s.replace(/,/g, '')],
  ['every field on a line of its own', (s) => s.replace(/, /g, ',\n    ')],
  ['re-wrapped to 60 columns', (s) => wrap(s.split('\n').join(' '), 60)],
  ['all on one line, no commas', (s) => s.split('\n').join(' ').replace(/,/g, ' ')],
  [
    'quoted in a reply, CRLF',
    (s) =>
      s
        .split('\n')
        .map((l) => `> ${l}`)
        .join('\r\n'),
  ],
  [
    'quoted twice and wrapped at 45',
    (s) =>
      wrap(s.split('\n').join(' '), 45)
        .split('\n')
        .map((l) => `> > ${l}`)
        .join('\n'),
  ],
  ['inside a mail', (s) => `Hi all,\n\nhere is what YCSB said (Redis, 4 threads):\n\n${s}\n\nCheers,\nAda\n`],
  ['tabs, extra blanks and blank lines', (s) => s.replace(/, /g, ' ,\t ').replace(/\n/g, '\n\n')],
]

/** Greedy word wrap, as a mail client re-flows a paragraph. */
function wrap(s: string, width: number): string {
  const lines: string[] = []
  let line = ''
  for (const word of s.split(/ +/)) {
    if (line !== '' && line.length + 1 + word.length > width) {
      lines.push(line)
      line = word
    } else line = line === '' ? word : `${line} ${word}`
  }
  if (line !== '') lines.push(line)
  return lines.join('\n')
}

test('reports pasted into a mail (re-wrapped, commas lost, quoted) read to the same figures as the files', () => {
  for (const rel of [
    'run-workloada.stdout.txt',
    'run-workloada-target-both.stdout.txt',
    'two-clients/client2.stdout.txt',
    'run-workloada-raw.stdout.txt',
  ]) {
    const text = read(rel)
    const original = rel.includes('raw.stdout') ? parseTextReport(text, rel) : summary(rel, text)
    for (const [what, mangle] of MANGLINGS) {
      const r = parseTextReport(mangle(text), `${rel} ${what}`)
      assert.deepEqual(figures(r), figures(original), `${rel}: ${what}`)
    }
  }
  // Raw data pasted with its report: the raw lines are not records, the report still reads.
  const raw = parseTextReport(read('run-workloada-raw.stdout.txt'), 'raw as text')
  assert.deepEqual(
    raw.measurements.map((m) => `${m.name.name}:${m.writer}`),
    ['READ:raw', 'CLEANUP:raw', 'UPDATE:raw'],
  )
  assert.ok(raw.ignoredLines > 2000)
  // JSON re-wrapped and quoted, a long measurement name broken inside its string.
  const json = read('run-workloada.json')
  const mangled = wrap(json.split('\n').join(' '), 50)
    .split('\n')
    .map((l) => `> ${l}`)
    .join('\n')
  assert.deepEqual(
    figures(parseYcsbFile('mail.json', mangled) as SummaryReport),
    figures(summary('run-workloada.json', json)),
  )
  const broken = parseJsonReport(
    '{ "metric" : "RawREAD", "measurement" : "Below is a summary of\n   latency in microseconds:", ' +
      '"value" : -1 } {"metric":"RawREAD","measurement":"Total Operations","value":3}',
    'x',
    'json-objects',
  )
  assert.equal(broken.measurements[0]!.writer, 'raw')
})

test(
  'older and other report shapes: (ms) percentiles converted and marked, custom percentiles, histogram ' +
    'buckets, old Return= codes',
  () => {
    // Derived from the real report by editing lines: no YCSB before 0.4.0 (which printed "(ms)") is on Maven Central.
    const old = read('run-workloada.stdout.txt')
      .replace('[READ], 95thPercentileLatency(us), 1246', '[READ], 95thPercentileLatency(ms), 1')
      .replace(
        '[READ], 99thPercentileLatency(us), 2967',
        '[READ], 99thPercentileLatency(ms), 2\n[READ], 99.9PercentileLatency(us), ' +
          '7040\n[READ], 50thPercentileLatency(us), 180',
      )
      .replace('[READ], Return=OK, 2504', '[READ], Return=0, 2500\n[READ], Return=-1, 4')
    const read1 = parseTextReport(old, 'old.txt').measurements[0]!
    assert.deepEqual(
      read1.percentiles.map((p) => [p.percentile, p.valueUs, p.unit]),
      [
        [95, 1000, 'ms'],
        [99, 2000, 'ms'],
        [99.9, 7040, 'us'],
        [50, 180, 'us'],
      ],
    )
    assert.deepEqual(read1.returns, { '0': 2500, '-1': 4 })
    // measurementtype=histogram (OneMeasurementHistogram): variance, 1 ms buckets, overflow.
    const hist = parseTextReport(
      '[READ], Operations, 10\n[READ], AverageLatency(us), 812.5\n[READ], LatencyVariance(us), 4.5\n[READ], ' +
        'MinLatency(us), 100\n[READ], MaxLatency(us), 1900\n[READ], 95thPercentileLatency(us), 1000\n[READ], ' +
        '99thPercentileLatency(us), 1000\n[READ], Return=OK, 10\n[READ], 0, 6\n[READ], 1, 4\n[READ], >1000, 0',
      'histogram.txt',
    ).measurements[0]!
    assert.equal(hist.writer, 'histogram')
    assert.equal(hist.varianceUs2, 4.5)
    assert.deepEqual(
      hist.series.map((s) => [s.key, s.value]),
      [
        ['0', 6],
        ['1', 4],
        ['>1000', 0],
      ],
    )
    // A failed operation's own measurement, and a binding's own name, kept.
    const failed = parseTextReport(
      '[READ-FAILED], Operations, 3\n[READ-FAILED], AverageLatency(us), 12.0\n[MY_STAT], Widgets, 7',
      'f.txt',
    )
    assert.deepEqual(
      failed.measurements.map((m) => [m.name.op, m.name.status, m.name.kind]),
      [
        ['READ', 'ERROR', 'operation'],
        [undefined, 'OK', 'other'],
      ],
    )
    assert.equal(failed.operations, 3)
    assert.deepEqual(
      failed.measurements[1]!.other.map((o) => [o.measurement, o.value]),
      [['Widgets', 7]],
    )
    // A run of no operation (operationcount=0): YCSB divides by a 0 ms run time and prints NaN
    // for the throughput and the GC time shares (derived from the real load report by editing those lines).
    const empty = read('load-workloada.stdout.txt')
      .replace(/\[OVERALL\], RunTime\(ms\), \d+/, '[OVERALL], RunTime(ms), 0')
      .replace(/\[OVERALL\], Throughput\(ops\/sec\), [\d.]+/, '[OVERALL], Throughput(ops/sec), NaN')
      .replace(/(\[TOTAL_GC_TIME_%[^\]]*\], Time\(%\), )[\d.E-]+/g, '$1NaN')
    assert.match(empty, /TOTAL_GC_TIME_%\], Time\(%\), NaN/)
    const zero = summary('empty.txt', empty)
    assert.equal(zero.throughputOpsPerSec, undefined)
    assert.equal(zero.gc.timePercent, undefined)
    assert.ok(zero.gc.collectors.length > 0 && zero.gc.collectors.every((c) => c.timePercent === undefined))
  },
)

test(
  'malformed reports are BS_ERR_DECODE naming the file, the line and what was expected; nothing ' +
    'partial comes back',
  () => {
    const text = read('run-workloada.stdout.txt')
    const lineOf = (needle: string): number => text.slice(0, text.indexOf(needle)).split('\n').length
    const cases: Array<[string, string, RegExp]> = [
      [
        'garbled value',
        text.replace('[READ], MaxLatency(us), 33951', '[READ], MaxLatency(us), lots'),
        new RegExp(
          `^r\\.txt line ${lineOf('[READ], MaxLatency')}: expected a measurement and a number after \\[READ\\]`,
        ),
      ],
      [
        'a count that is not whole',
        text.replace('[READ], Operations, 2504', '[READ], Operations, 2504.5'),
        new RegExp(
          `^r\\.txt line ${lineOf('[READ], Operations')}: \\[READ\\], Operations is 2504\\.5; expected ` +
            `a whole number of operations`,
        ),
      ],
      [
        'two reports in one file',
        `${text}\n${text}`,
        new RegExp(
          `^r\\.txt line ${text.split('\n').length + 1}: \\[OVERALL\\], RunTime\\(ms\\) appears again ` +
            `\\(first at line 1\\)`,
        ),
      ],
      [
        'negative latency',
        text.replace('[UPDATE], MinLatency(us), 21', '[UPDATE], MinLatency(us), -21'),
        /MinLatency\(us\) is -21; expected a finite number >= 0/,
      ],
      ['no record at all', 'YCSB Client 0.17.0\nLoading workload...\n', /^r\.txt line 1: holds no YCSB report record/],
    ]
    for (const [what, bad, re] of cases) assert.throws(() => parseTextReport(bad, 'r.txt'), isDecodeError(re), what)
    const json = read('run-workloada.jsonarray.json')
    const jsonCases: Array<[string, string, 'json-array' | 'json-objects', RegExp]> = [
      ['truncated array', json.slice(0, -20), 'json-array', /^a\.json line \d+: the array is not closed by "\]"/],
      [
        'a value that is a word',
        json.replace('"value" : 663', '"value" : "663ms"'),
        'json-array',
        /^a\.json line 1: expected \{"metric": string, "measurement": string, "value": number\}/,
      ],
      [
        'missing comma',
        json.replace('}, {', '} {'),
        'json-array',
        /^a\.json line 5: expected "," between array elements/,
      ],
      [
        'invalid JSON inside an object',
        read('run-workloada.json').replace('"measurement" : "Count"', '"measurement" : Count'),
        'json-objects',
        /^a\.json line 9: the object starting here is not valid JSON \(Unexpected token/,
      ],
      [
        'truncated object',
        read('run-workloada.json').slice(0, -3),
        'json-objects',
        /the object starting here is not closed \(truncated\?\)/,
      ],
    ]
    for (const [what, bad, format, re] of jsonCases)
      assert.throws(() => parseJsonReport(bad, 'a.json', format), isDecodeError(re), what)
    assert.throws(
      () => detectFormat('run.stderr.txt', read('run-workloada.stderr.txt')),
      isDecodeError(/^run\.stderr\.txt line 1: is not a YCSB file; expected a text report/),
    )
    assert.throws(() => detectFormat('empty.txt', '\n\n'), isDecodeError(/^empty\.txt line 1: is empty/))
    assert.throws(
      () => detectFormat('bin.hdr', new Uint8Array([0x1c, 0x84, 0x93, 0x82, 0, 0, 0, 5])),
      isDecodeError(/^bin\.hdr: is not UTF-8 text|^bin\.hdr line 1: holds a NUL byte/),
    )
    assert.throws(
      () => detectFormat('latin1.txt', new Uint8Array([0x5b, 0xe9, 0xff])),
      isDecodeError(/^latin1\.txt: is not UTF-8 text/),
    )
  },
)

test(
  'a summary run: counts and throughput add up, averages weigh by operations, percentiles stay ' +
    'per client when there are several',
  () => {
    const clients = ['client1', 'client2'].map((c) => ({ clientId: c, report: summary(`two-clients/${c}.stdout.txt`) }))
    const run = summaryRun(clients)
    assert.equal(run.kind, 'summary-run')
    assert.equal(run.origin, 'reported')
    assert.equal(run.percentilesPerClient, true)
    assert.equal(run.operations, 5000)
    assert.equal(run.runtimeMs, Math.max(...clients.map((c) => c.report.runtimeMs!)))
    assert.equal(
      run.throughputOpsPerSec,
      clients[0]!.report.throughputOpsPerSec! + clients[1]!.report.throughputOpsPerSec!,
    )
    for (const m of run.measurements) {
      const parts = clients.map((c) => c.report.measurements.find((x) => x.name.name === m.name.name)!)
      assert.equal(m.clients, 2)
      assert.equal(m.operations, parts[0]!.operations! + parts[1]!.operations!)
      assert.deepEqual(m.percentiles, [], `${m.name.name}: no merged percentiles`)
      assert.equal(m.minUs, Math.min(parts[0]!.minUs!, parts[1]!.minUs!))
      assert.equal(m.maxUs, Math.max(parts[0]!.maxUs!, parts[1]!.maxUs!))
      const avg =
        (parts[0]!.averageUs! * parts[0]!.operations! + parts[1]!.averageUs! * parts[1]!.operations!) / m.operations
      assert.ok(Math.abs(m.averageUs! - avg) < 1e-9)
      if (m.name.part === 'Hdr' && m.name.kind === 'operation') assert.equal(m.returns.OK, m.operations)
    }
    const one = summaryRun([{ clientId: 'only', report: summary('run-workloada.stdout.txt') }])
    assert.equal(one.percentilesPerClient, false)
    assert.deepEqual(
      one.measurements.find((m) => m.name.name === 'READ')!.percentiles.map((p) => p.percentile),
      [95, 99],
    )
  },
)
