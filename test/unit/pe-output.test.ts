/**
 * import-pe's reader on what real PerformanceEvaluation printed
 * (test/fixtures/hbase-pe: HBase 2.5.10's PE run here, and published
 * examples of the old form). Every client's figures are checked against a
 * second rendering PE printed of the same numbers, which the reader does
 * not read (the multi-line `Mean      = ...` block, PE's own "Summary of
 * timings" and "Avg TPS/QPS"); merges over clients against the
 * reported-run code that does them for every summary run; hostile input is
 * refused with the line and what was expected.
 */
import assert from 'node:assert/strict'
import { readFileSync } from 'node:fs'
import path from 'node:path'
import { test } from 'node:test'
import type { ReportedRun } from '../../schemas/run-reports-api.v1.js'
import { isBenchstreamError } from '../../services/core/errors.js'
import { pickTest, planPeImport } from '../../services/core/pe/pe-import.js'
import { sampledRows } from '../../services/core/pe/pe-lines.js'
import { parsePeOutput } from '../../services/core/pe/pe-output.js'
import type { PeOutput } from '../../services/core/pe/pe-result.js'
import { reportedRunReport } from '../../services/core/reports/reported-report.js'

const DIR = 'test/fixtures/hbase-pe'
const text = (rel: string): string => readFileSync(path.join(DIR, rel), 'utf8')
const parse = (rel: string): PeOutput => parsePeOutput(readFileSync(path.join(DIR, rel)), rel)

/** PE's pretty block of each client (getPrettyHistogramReport), read here independently of the reader. */
function prettyBlocks(t: string): Map<string, Record<string, number>> {
  const out = new Map<string, Record<string, number>>()
  const re = /\[(TestClient-\d+)\] hbase\.PerformanceEvaluation: Mean {6}= (\S+)\n((?:\S+ +=\s\S+\n){10})/g
  for (const m of t.matchAll(re)) {
    const v: Record<string, number> = { Mean: Number(m[2]) }
    for (const l of m[3]!.trim().split('\n')) {
      const [k, x] = l.split('=').map((s) => s.trim())
      v[k!] = Number(x)
    }
    out.set(m[1]!, v)
  }
  return out
}

function checkCurrent(rel: string, clients: number, test: string, command: string, op: string): void {
  const out = parse(rel)
  const t = text(rel)
  assert.equal(out.tests.length, 1)
  const pe = out.tests[0]!
  assert.equal(pe.test, test)
  assert.equal(pe.command, command)
  assert.equal(pe.op, op)
  assert.equal(pe.form, 'current')
  assert.equal(pe.clients.length, clients)
  assert.deepEqual(
    pe.clients.map((c) => c.name),
    Array.from({ length: clients }, (_, i) => `TestClient-${i}`),
  )
  const pretty = prettyBlocks(t)
  assert.equal(pretty.size, clients, 'one pretty block per client in the file')
  for (const c of pe.clients) {
    const p = pretty.get(c.name)!
    const l = c.latency!
    assert.equal(l.meanUs, p.Mean)
    assert.equal(l.minUs, p.Min)
    assert.equal(l.maxUs, p.Max)
    assert.equal(l.stdDevUs, p.StdDev)
    assert.deepEqual(
      l.percentiles.map((x) => [x.label, x.valueUs]),
      ['50th', '75th', '95th', '99th', '99.9th', '99.99th', '99.999th'].map((k) => [k, p[k]]),
    )
    // PE skips the first row's latency (measureAfter 0 means rows after the first).
    assert.equal(l.measures, c.operations - 1)
    assert.equal(l.sampled, false)
    const finished = new RegExp(`Finished ${c.name} in (\\d+)ms over (\\d+) rows`).exec(t)!
    assert.equal(c.durationMs, Number(finished[1]))
    assert.equal(c.rows, Number(finished[2]))
    assert.equal(c.operations, c.rows)
  }
  // PE's own summary of the test: the same times, and its rows/s are the clients' rows over their times, added.
  assert.deepEqual(
    [...pe.printed.timingsMs!].sort((a, b) => a - b),
    pe.clients.map((c) => c.durationMs).sort((a, b) => a - b),
  )
  const tps = pe.clients.reduce((a, c) => a + (c.rows * 1000) / c.durationMs, 0)
  assert.ok(Math.abs(pe.printed.rowsPerSec! - tps) <= 1, `PE's ${pe.printed.rowsPerSec} rows/s vs ${tps}`)
  assert.equal(pe.options.cmdName, command)
  assert.equal(Number(pe.options.numClientThreads), clients)
  assert.ok(out.ignoredLines > 10, 'PE chatter and the pretty blocks are counted, not read')
}

test("today's form, one client: every figure as PE printed it, checked against its second rendering", () => {
  checkCurrent('randomRead-1client.txt', 1, 'RandomReadTest', 'randomRead', 'READ')
  checkCurrent('sequentialWrite-1client.txt', 1, 'SequentialWriteTest', 'sequentialWrite', 'INSERT')
})

test("today's form, several clients: each its own, in PE's client order though they finished out of order", () => {
  checkCurrent('randomRead-4clients.txt', 4, 'RandomReadTest', 'randomRead', 'READ')
  checkCurrent('scanRange10-2clients.txt', 2, 'RandomScanWithRange10Test', 'scanRange10', 'SCAN')
  for (const side of ['A', 'B'])
    for (const i of [1, 2, 3])
      checkCurrent(`${side}/randomRead-2clients-${i}.txt`, 2, 'RandomReadTest', 'randomRead', 'READ')
})

test('several clients merge only where exact; percentiles stay per client (not mergeable)', () => {
  const out = parse('randomRead-4clients.txt')
  const plan = planPeImport(out, pickTest(out, undefined), 'node1')
  assert.deepEqual(
    plan.clients.map((c) => c.clientId),
    ['node1.TestClient-0', 'node1.TestClient-1', 'node1.TestClient-2', 'node1.TestClient-3'],
  )
  const pe = out.tests[0]!
  const run: ReportedRun = {
    runId: 'r',
    clients: plan.clients.map((c) => ({
      clientId: c.clientId,
      source: c.body.source,
      format: c.body.format,
      runtimeMs: c.body.runtimeMs ?? null,
      throughputOpsPerSec: c.body.throughputOpsPerSec ?? null,
      measurements: c.body.measurements.map((m) => ({
        name: m.name,
        kind: m.kind,
        op: m.op,
        latency: m.latency,
        status: m.status,
        operations: m.operations ?? null,
        averageUs: m.averageUs ?? null,
        minUs: m.minUs ?? null,
        maxUs: m.maxUs ?? null,
        percentiles: m.percentiles,
        returns: m.returns,
      })),
    })),
  }
  const r = reportedRunReport(run)
  const read = r.measurements.find((m) => m.name === 'READ')!
  assert.equal(read.operations, 2000)
  assert.equal(read.operations, plan.operations)
  assert.equal(read.minUs, Math.min(...pe.clients.map((c) => c.latency!.minUs)))
  assert.equal(read.maxUs, Math.max(...pe.clients.map((c) => c.latency!.maxUs)))
  const weighted = pe.clients.reduce((a, c) => a + c.latency!.meanUs * c.operations, 0) / 2000
  assert.ok(Math.abs(read.averageUs! - weighted) < 1e-9)
  assert.deepEqual(read.percentiles, [], 'no percentile over the clients: not mergeable from summaries')
  assert.equal(r.percentilesPerClient, true)
  assert.equal(r.runtimeMs, Math.max(...pe.clients.map((c) => c.durationMs)))
  assert.ok(Math.abs(r.throughputOpsPerSec! - pe.printed.rowsPerSec!) <= 1, "the run's throughput is PE's TPS")
  // PE's "[ Avg latency (us)]" is the plain mean of the clients' means: not the run's average, and not used.
  const plainMean = pe.clients.reduce((a, c) => a + c.latency!.meanUs, 0) / pe.clients.length
  assert.equal(pe.printed.avgLatencyUs, Math.round(plainMean))
  assert.ok(plan.described.some((d) => d.includes('not mergeable')))
})

test('one client: its id as given, its percentiles are the run', () => {
  const out = parse('randomRead-1client.txt')
  const plan = planPeImport(out, pickTest(out, undefined), 'node1')
  assert.deepEqual(
    plan.clients.map((c) => c.clientId),
    ['node1'],
  )
  const m = plan.clients[0]!.body.measurements[0]!
  assert.equal(plan.clients[0]!.body.format, 'pe')
  assert.deepEqual(
    m.percentiles.map((p) => p.valueUs),
    out.tests[0]!.clients[0]!.latency!.percentiles.map((p) => p.valueUs),
  )
  assert.equal(plan.workload, 'randomRead')
  assert.equal(plan.properties['pe.cmdName'], 'randomRead')
})

test('the old form: grep of PE\'s "Finished <test> in Nms at offset O for R rows" lines, one client each', () => {
  const out = parse('old/finished-lines-randomRead-4clients.txt')
  const current = parse('randomRead-4clients.txt').tests[0]!
  const t = out.tests[0]!
  assert.equal(out.tests.length, 1)
  assert.equal(t.form, 'old')
  assert.equal(t.command, 'randomRead')
  assert.equal(t.clients.length, 4)
  // The same times and rows as the full output's clients, without latencies.
  assert.deepEqual(
    t.clients.map((c) => [c.offset, c.durationMs, c.rows]).sort((a, b) => a[0]! - b[0]!),
    current.clients.map((c) => [c.offset, c.durationMs, c.rows]).sort((a, b) => a[0]! - b[0]!),
  )
  assert.ok(t.clients.every((c) => c.latency === undefined && c.mbPerSec !== undefined))
  assert.deepEqual(
    t.clients.map((c) => c.name),
    ['client-1', 'client-2', 'client-3', 'client-4'],
  )
  // As concatenated map task logs give them, each line of thread `main`: still four clients, each its own id.
  const tasks = text('old/finished-lines-randomRead-4clients.txt').replace(
    /^/gm,
    '2008-01-12 10:01:02,345 INFO [main] hbase.PerformanceEvaluation: ',
  )
  const fromTasks = parsePeOutput(tasks.slice(0, tasks.lastIndexOf('\n') + 1), 'tasks.log')
  const ids = planPeImport(fromTasks, fromTasks.tests[0]!, 'mr').clients.map((c) => c.clientId)
  assert.deepEqual(ids, ['mr.client-1', 'mr.client-2', 'mr.client-3', 'mr.client-4'])
})

test('the old form as published: the HBase wiki (MapFilePerformanceEvaluation, 2009) and HBASE-252', () => {
  const wiki = parse('old/mapfile-wiki-2009-02-06.txt')
  const took = [...text('old/mapfile-wiki-2009-02-06.txt').matchAll(/Running (\w+) for (\d+) rows took (\d+)ms/g)]
  assert.equal(took.length, 5)
  assert.deepEqual(
    wiki.tests.map((t) => [t.test, t.clients[0]!.rows, t.clients[0]!.durationMs]),
    took.map((m) => [m[1], Number(m[2]), Number(m[3])]),
  )
  assert.deepEqual(
    wiki.tests.map((t) => t.op),
    ['INSERT', 'SCAN', 'READ', 'READ', 'READ'],
  )
  // The "Running X for N rows." lines before each and the NativeCodeLoader warning are not results.
  assert.equal(wiki.ignoredLines, 6)
  assert.throws(() => pickTest(wiki, undefined), /holds 5 PE tests .*name it with --test/)
  const picked = pickTest(wiki, 'UniformRandomReadBenchmark')
  const plan = planPeImport(wiki, picked, 'laptop')
  assert.equal(plan.workload, 'uniform-random-read-benchmark')
  assert.equal(plan.clients[0]!.body.measurements[0]!.averageUs, undefined, 'the old form has no latencies')
  assert.equal(plan.clients[0]!.body.throughputOpsPerSec, (100000 * 1000) / 7418)

  const issue = parse('old/hbase-252-issue.txt')
  assert.equal(issue.tests.length, 1)
  const t = issue.tests[0]!
  assert.deepEqual(
    [t.test, t.op, t.clients[0]!.rows, t.clients[0]!.durationMs],
    ['Reading random records', 'READ', 100000, 129879],
  )
  assert.equal(planPeImport(issue, t, 'c').workload, 'reading-random-records')
})

test('sampled rows are the multiples of the interval in [offset, offset + rows)', () => {
  const brute = (offset: number, rows: number, n: number): number => {
    let k = 0
    for (let i = offset; i < offset + rows; i++) if (i % n === 0) k++
    return k
  }
  for (const [o, r, n] of [
    [0, 1000, 10],
    [500, 500, 3],
    [7, 13, 5],
    [1500, 500, 1],
    [1, 1, 2],
  ] as const)
    assert.equal(sampledRows(o, r, n), brute(o, r, n), `${o} ${r} ${n}`)
})

/** The real randomRead-4clients.txt with one edit, and the error expected. */
function refuses(edit: (t: string) => string, expected: RegExp): void {
  const t = edit(text('randomRead-4clients.txt'))
  assert.throws(
    () => parsePeOutput(t, 'edited.txt'),
    (err: unknown) => isBenchstreamError(err, 'BS_ERR_DECODE') && expected.test(err.message),
  )
}

test('malformed or hostile input is refused with the line and what PE prints', () => {
  // A figure that is no number, a negative one, a percentile out of order, an unknown figure.
  refuses(
    (t) => t.replace(/(TestClient-2\] \S+: Latency \(us\) : mean=)[\d.]+/, '$1abc'),
    /edited\.txt line \d+: mean latency is "abc"/,
  )
  refuses(
    (t) => t.replace(/(TestClient-2\] \S+: Latency \(us\) : mean=[\d.]+, min=)[\d.]+/, '$1-5'),
    /min latency is "-5"/,
  )
  refuses((t) => t.replace(/(TestClient-1\] \S+: Latency [^\n]*, 99th=)[\d.]+/, '$10.5'), /99th=0.5 lies outside/)
  refuses((t) => t.replace(/(TestClient-0\] \S+: Latency \(us\) : )/, '$1p42=7, '), /has p42; PE prints mean, min/)
  refuses((t) => t.replace(/(TestClient-0\] \S+: Latency \(us\) : mean=[\d.]+)/, '$1, mean=1'), /gives mean twice/)
  refuses(
    (t) => t.replace(/(TestClient-0\] \S+: Latency \(us\) : mean=)[\d.]+/, '$1Infinity'),
    /mean latency is "Infinity"/,
  )
  refuses(
    (t) => t.replace(/(TestClient-0\] \S+: Latency \(us\) : mean=)[\d.]+/, '$1' + '9'.repeat(400)),
    /mean latency is/,
  )
  // More latencies than operations.
  refuses(
    (t) => t.replace(/(TestClient-3\] \S+: Num measures \(latency\) : )\d+/, '$1600'),
    /measured 600 latencies but ran 500/,
  )
  // A client that never finished (cut output): its Finished line gone.
  refuses((t) => t.replace(/^.*Finished TestClient-2 in .*$/m, ''), /TestClient-2 of RandomReadTest never finished/)
  // Two runs mixed: PE's own summary does not list these clients' times.
  refuses(
    (t) => t.replace(/Summary of timings \(ms\): \[(\d+),/, 'Summary of timings (ms): [1,'),
    /PE's summary lists 4 client timings/,
  )
  // A second Latency line for one client, a Latency line of no client.
  refuses(
    (t) => t.replace(/^(.*TestClient-1\] \S+: Latency \(us\) : .*)$/m, '$1\n$1'),
    /a second "Latency \(us\)" line for TestClient-1/,
  )
  refuses(() => 'Latency (us) : mean=1.00, min=1.00, max=1.00\n', /line 1: a "Latency \(us\)" line of no client/)
  // Options that are not JSON.
  refuses(
    (t) => t.replace(/test run options=\{/, 'test run options={oops'),
    /PE's options of RandomReadTest are not JSON/,
  )
  // Durations and row counts that are no whole numbers in range.
  refuses((t) => t.replace(/Finished TestClient-0 in \d+ms/, 'Finished TestClient-0 in 1e9ms'), /the duration is "1e9"/)
  refuses(
    (t) =>
      t.replace(
        /Finished TestClient-0 in \d+ms over \d+ rows/,
        'Finished TestClient-0 in 5ms over 99999999999999999 rows',
      ),
    /the number of rows is/,
  )
})

test('what is not PE output at all is refused whole, and counted nowhere as a run', () => {
  for (const [input, expected] of [
    ['', /holds no PerformanceEvaluation result/],
    ['[OVERALL], RunTime(ms), 727\n[READ], Operations, 10\n', /holds no PerformanceEvaluation result/],
    ['just some words\n', /holds no PerformanceEvaluation result/],
  ] as const)
    assert.throws(
      () => parsePeOutput(input, 'x.txt'),
      (err: unknown) => isBenchstreamError(err, 'BS_ERR_DECODE') && expected.test(err.message),
    )
  assert.throws(
    () => parsePeOutput(Buffer.from([0x46, 0x69, 0x00, 0x6e]), 'bin'),
    (err: unknown) => isBenchstreamError(err, 'BS_ERR_DECODE') && /NUL byte/.test(err.message),
  )
  assert.throws(
    () => parsePeOutput(Buffer.from([0xff, 0xfe, 0x41]), 'latin'),
    (err: unknown) => isBenchstreamError(err, 'BS_ERR_DECODE') && /not UTF-8/.test(err.message),
  )
})

test('a decimal comma (a JVM with a German locale) reads as the same numbers', () => {
  const t = text('randomRead-1client.txt')
  const comma = t.replace(
    /(Latency \(us\) : )(.*)$/m,
    (_, head: string, rest: string) => head + rest.replace(/(\d)\.(\d\d)\b/g, '$1,$2'),
  )
  assert.notEqual(comma, t)
  assert.deepEqual(
    parsePeOutput(comma, 'de.txt').tests[0]!.clients[0]!.latency!.percentiles,
    parse('randomRead-1client.txt').tests[0]!.clients[0]!.latency!.percentiles,
  )
})

test('a file of two runs appended is two tests; --test picks neither when both match', () => {
  const twice = text('A/randomRead-2clients-1.txt') + text('A/randomRead-2clients-2.txt')
  const out = parsePeOutput(twice, 'twice.txt')
  assert.equal(out.tests.length, 2)
  assert.throws(() => pickTest(out, 'randomRead'), /holds 2 runs of randomRead/)
  assert.throws(() => pickTest(out, 'scan'), /holds no PE test "scan"; it holds randomRead \(line 1\), randomRead/)
  const write = parsePeOutput(text('sequentialWrite-1client.txt') + text('randomRead-1client.txt'), 'both.txt')
  assert.equal(pickTest(write, 'SequentialWriteTest').command, 'sequentialWrite')
  assert.equal(pickTest(write, 'randomread').command, 'randomRead')
})

test('a client id that would break the id rule is refused before anything is sent', () => {
  const out = parse('randomRead-4clients.txt')
  assert.throws(
    () => planPeImport(out, out.tests[0]!, 'x'.repeat(60)),
    (err: unknown) => isBenchstreamError(err, 'BS_ERR_USAGE') && /breaks the id rule/.test(err.message),
  )
})
