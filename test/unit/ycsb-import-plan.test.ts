/**
 * What import-ycsb sends for real YCSB 0.17.0 files (test/fixtures/ycsb-0.17.0),
 * checked against YCSB's own reports of the same runs: interval logs with
 * their Intended- twins paired into one record per interval, raw data as
 * events, reports as reported figures, CLEANUP never counted; and the
 * follower that tails a log as YCSB writes it, fed the real files in pieces.
 */
import assert from 'node:assert/strict'
import { readdirSync, readFileSync } from 'node:fs'
import path from 'node:path'
import { test } from 'node:test'
import { isBenchstreamError } from '../../services/core/errors.js'
import { IntervalLogFollower } from '../../services/core/ycsb/follow.js'
import { parseYcsbFile } from '../../services/core/ycsb/import.js'
import { planImport, type PlannedInterval } from '../../services/core/ycsb/import-plan.js'
import { measurementFromFileName } from '../../services/core/ycsb/measurement-name.js'
import type { SummaryReport, YcsbFile } from '../../services/core/ycsb/report-types.js'

const FIXTURES = 'test/fixtures/ycsb-0.17.0'
const parse = (rel: string, measurement?: string): YcsbFile =>
  parseYcsbFile(rel, readFileSync(path.join(FIXTURES, rel)), measurement === undefined ? {} : { measurement })
const logsIn = (dir: string): YcsbFile[] =>
  readdirSync(path.join(FIXTURES, dir))
    .filter((f) => f.endsWith('.hdr'))
    .sort()
    .map((f) => parse(`${dir}/${f}`))
const reportOps = (r: SummaryReport, name: string): number =>
  r.measurements.find((m) => m.name.name === name)!.operations!
const total = (ivs: readonly PlannedInterval[], op: string, side: 'buckets' | 'intended'): number =>
  ivs.filter((iv) => iv.op === op).reduce((n, iv) => n + (iv[side] ?? []).reduce((a, [, c]) => a + c, 0), 0)

test(
  'measurement.interval=both logs: one record per interval with measured and intended; counts ' +
    'equal the report, CLEANUP reported only',
  () => {
    const report = parse('run-workloada-target-both.stdout.txt') as SummaryReport
    const plan = planImport(logsIn('hdr-both'))
    assert.deepEqual(plan.sent, { 'READ/OK': reportOps(report, 'READ'), 'UPDATE/OK': reportOps(report, 'UPDATE') })
    for (const op of ['READ', 'UPDATE']) {
      assert.equal(total(plan.intervals, op, 'buckets'), reportOps(report, op))
      assert.equal(total(plan.intervals, op, 'intended'), reportOps(report, `Intended-${op}`))
    }
    assert.ok(
      plan.intervals.every((iv) => iv.intended !== undefined),
      'every record carries the intended section',
    )
    assert.deepEqual(
      plan.cleanup.map((c) => c.operations),
      [reportOps(report, 'CLEANUP')],
    )
    assert.equal(plan.summaries.length, 0)
    assert.equal(plan.raw.length, 0)
    // Intended latency is never below measured over the run (coordinated omission only adds).
    const maxBucket = (side: 'buckets' | 'intended'): number =>
      Math.max(...plan.intervals.flatMap((iv) => (iv[side] ?? []).map(([b]) => b)))
    assert.ok(maxBucket('intended') >= maxBucket('buckets'))
  },
)

test(
  'measurement.interval=op logs carry no intended section; the same logs as OP=FILE under other ' +
    'names import the same',
  () => {
    const plan = planImport(logsIn('hdr-op'))
    assert.ok(plan.intervals.length > 1 && plan.intervals.every((iv) => iv.intended === undefined))
    const renamed = planImport([parse('hdr-op/READ.hdr', 'READ'), parse('hdr-op/UPDATE.hdr', 'UPDATE')])
    assert.deepEqual(renamed.sent, plan.sent)
    assert.deepEqual(renamed.intervals, plan.intervals)
    const report = parse('run-workloada-hdr.stdout.txt') as SummaryReport
    assert.deepEqual(plan.sent, { 'READ/OK': reportOps(report, 'READ'), 'UPDATE/OK': reportOps(report, 'UPDATE') })
    assert.equal(plan.runtimeMs, Math.round((plan.lastUs! - plan.firstUs!) / 1000))
  },
)

test(
  'raw output: one event per operation starting at completion ms*1000 - latency, its report stored ' +
    'as reported; the logs and a report of the same client combine',
  () => {
    const plan = planImport([parse('run-workloada-raw.stdout.txt')])
    const report = (parse('run-workloada-raw.stdout.txt') as { summary: SummaryReport }).summary
    const read = plan.raw.find((s) => s.op === 'READ')!
    assert.equal(read.startUs.length, reportOps(report, 'READ'))
    const firstLine = /^READ,(\d+),(\d+)$/m.exec(
      readFileSync(path.join(FIXTURES, 'run-workloada-raw.stdout.txt'), 'utf8'),
    )!
    assert.equal(read.startUs[0], Number(firstLine[1]) * 1000 - Number(firstLine[2]))
    assert.deepEqual([...read.intendedUs], [...read.latencyUs], 'unthrottled: intended = measured')
    assert.equal(plan.summaries.length, 1)
    assert.equal(plan.summaries[0]!.format, 'raw')
    assert.deepEqual(plan.sent, { 'READ/OK': reportOps(report, 'READ'), 'UPDATE/OK': reportOps(report, 'UPDATE') })
    // A text report alongside interval logs: logs are sent, the report is kept as reported.
    const both = planImport([...logsIn('hdr-op'), parse('run-workloada-hdr.stdout.txt')])
    assert.equal(both.summaries.length, 1)
    assert.equal(both.summaries[0]!.measurements.find((m) => m.name === 'READ')!.operations, both.sent['READ/OK'])
  },
)

test('files that contradict each other are refused before anything is sent', () => {
  const isDecode =
    (re: RegExp) =>
    (err: unknown): boolean =>
      isBenchstreamError(err, 'BS_ERR_DECODE') && re.test(err.message)
  // The same operation by raw data and by an interval log of the same client: it would count twice.
  assert.throws(
    () => planImport([parse('two-clients/client1-raw.txt'), parse('v2/from-raw/READ.hdr')]),
    isDecode(/measures READ again/),
  )
  assert.throws(
    () => planImport([parse('run-workloada.stdout.txt'), parse('run-workloade.stdout.txt')]),
    isDecode(/second final report for this client/),
  )
})

test('JSON exporters and old text reports become SUMMARY_REPORT bodies with the figures as printed', () => {
  const plan = planImport([parse('run-workloada.jsonarray.json')])
  assert.equal(plan.intervals.length + plan.raw.length, 0)
  const s = plan.summaries[0]!
  assert.equal(s.format, 'json-array')
  const read = s.measurements.find((m) => m.name === 'READ')!
  assert.equal(read.kind, 'operation')
  assert.ok(read.percentiles.some((p) => p.percentile === 99 && p.unit === 'us'))
  assert.equal(s.measurements.find((m) => m.name === 'CLEANUP')!.kind, 'cleanup')
  assert.ok(plan.cleanup.length === 1 && plan.cleanup[0]!.operations > 0)
  assert.equal(plan.runtimeMs, s.runtimeMs)
})

/** Feeds every log of a directory in small pieces, as a growing file is read; returns all records handed out. */
function followInPieces(
  dir: string,
  pieceChars: number,
  existsFrom: (file: string) => boolean = () => true,
): { records: PlannedInterval[]; follower: IntervalLogFollower } {
  const follower = new IntervalLogFollower()
  const files = readdirSync(path.join(FIXTURES, dir))
    .filter((f) => f.endsWith('.hdr'))
    .sort()
  const texts = new Map(files.map((f) => [f, readFileSync(path.join(FIXTURES, dir, f), 'latin1')]))
  const pos = new Map(files.map((f) => [f, 0]))
  const records: PlannedInterval[] = []
  for (let round = 0; [...pos].some(([f, p]) => p < texts.get(f)!.length); round++) {
    for (const f of files) {
      if (!existsFrom(f) && round === 0) continue
      const p = pos.get(f)!
      const text = texts.get(f)!
      if (p >= text.length) continue
      follower.add(f, measurementFromFileName(f)!.name)
      follower.feed(f, text.slice(p, p + pieceChars))
      pos.set(f, p + pieceChars)
    }
    records.push(...follower.ready(false))
  }
  records.push(...follower.ready(true))
  return { records, follower }
}

test(
  'following logs as they grow (pieces of any size) hands out the ' + 'same records as importing the finished files',
  () => {
    for (const dir of ['hdr-both', 'hdr-op', 'v2/hdr-both']) {
      const whole = planImport(logsIn(dir)).intervals
      for (const piece of [7, 100, 100_000]) {
        const { records } = followInPieces(dir, piece)
        const key = (iv: PlannedInterval): string => `${iv.op}/${iv.intervalStartUs}`
        assert.deepEqual(records.map(key).sort(), whole.map(key).sort(), `${dir}, pieces of ${piece}`)
        assert.deepEqual(
          [...records].sort((a, b) => key(a).localeCompare(key(b))),
          [...whole].sort((a, b) => key(a).localeCompare(key(b))),
          `${dir}, pieces of ${piece}`,
        )
      }
    }
  },
)

test('a measured interval waits for its intended twin while an Intended- log exists, and not when none does', () => {
  const follower = new IntervalLogFollower()
  const read = readFileSync(path.join(FIXTURES, 'hdr-both/READ.hdr'), 'latin1')
  const intended = readFileSync(path.join(FIXTURES, 'hdr-both/Intended-READ.hdr'), 'latin1')
  follower.add('READ.hdr', measurementFromFileName('READ.hdr')!.name)
  follower.feed('READ.hdr', read)
  assert.ok(follower.ready(false).length > 0, 'no Intended-READ log: the measured intervals go at once')
  const f2 = new IntervalLogFollower()
  f2.add('READ.hdr', measurementFromFileName('READ.hdr')!.name)
  f2.add('Intended-READ.hdr', measurementFromFileName('Intended-READ.hdr')!.name)
  f2.feed('READ.hdr', read)
  assert.equal(f2.ready(false).length, 0, 'the Intended-READ log exists: wait for its intervals')
  f2.feed('Intended-READ.hdr', intended)
  const out = f2.ready(false)
  assert.ok(out.length > 0 && out.every((iv) => iv.intended !== undefined))
  // A malformed line names the file and its own line number.
  const f3 = new IntervalLogFollower()
  f3.add('UPDATE.hdr', measurementFromFileName('UPDATE.hdr')!.name)
  const lines = readFileSync(path.join(FIXTURES, 'hdr-op/UPDATE.hdr'), 'latin1').split('\n')
  f3.feed('UPDATE.hdr', lines.slice(0, 6).join('\n') + '\n')
  assert.throws(
    () => f3.feed('UPDATE.hdr', '0.5,1.0,0.1,NOT-BASE64!\n'),
    (err: unknown) => isBenchstreamError(err, 'BS_ERR_DECODE') && err.message.startsWith('UPDATE.hdr line 7: '),
  )
})

test(
  "a log truncated and written anew before its first interval (YCSB's second writer of one measurement) is read " +
    'again from the start; after an interval it is refused',
  () => {
    const dir = 'hdr-both'
    const file = readdirSync(path.join(FIXTURES, dir)).find((f) => f.endsWith('READ.hdr'))!
    const text = readFileSync(path.join(FIXTURES, dir, file), 'latin1')
    const headerEnd = text.indexOf('\n', text.indexOf('StartTimestamp')) + 1
    const whole = planImport([parse(`${dir}/${file}`)]).intervals
    const follower = new IntervalLogFollower()
    follower.add(file, measurementFromFileName(file)!.name)
    // The first writer's header, part of it: then the second writer truncates and writes the whole log.
    follower.feed(file, text.slice(0, headerEnd - 5))
    assert.equal(follower.rewind(file), true)
    follower.feed(file, text)
    const records = follower.ready(true)
    assert.equal(records.length, whole.length)
    assert.deepEqual(
      records.map((r) => r.buckets),
      whole.map((r) => r.buckets),
    )
    // Once it gave intervals, a truncated log is another run's: no rewind.
    assert.equal(follower.rewind(file), false)
  },
)
