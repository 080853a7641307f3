/**
 * Summary runs (YCSB's final reports imported as printed) as first-class
 * runs, on reports real YCSB 0.17.0 wrote (test/fixtures/ycsb-0.17.0/
 * releases, history, releases-ms: redis without and with fsync on every
 * write, two clients a run): the report's exact merges and per-client
 * percentiles; compare with 1 + 1 runs (values and change, not testable)
 * and 3 + 3 (tested), the median of clients' percentiles said as such,
 * the 1 ms resolution of (ms) percentiles; workloads paired by workload,
 * label or --by, never pooled; nothing to compare is an error with why;
 * history over an imported release series; the workload recorded at
 * import; the API's report and compare of summary runs. Every expected
 * figure is read from the report's text with a regular expression of its
 * own, not with the parser under test.
 */
import assert from 'node:assert/strict'
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { test } from 'node:test'
import type { ReleaseComparison } from '../../schemas/compare-api.v1.js'
import type { ReportedRun } from '../../schemas/run-reports-api.v1.js'
import type { RunInfo } from '../../schemas/runs-api.v1.js'
import { build } from '../../services/api/app.js'
import { readApiConfig } from '../../services/api/config.js'
import { findWorkload, importYcsbMain, parseImportYcsbArgs, readYcsbFile } from '../../services/cli/import-ycsb.js'
import { formatHistory, releaseHistory, type HistorySource } from '../../services/core/compare/history.js'
import { formatComparison } from '../../services/core/compare/release-format.js'
import { compareRuns, type RunData } from '../../services/core/compare/release.js'
import { reportedRunValues } from '../../services/core/compare/run-values.js'
import { BenchstreamError, isBenchstreamError } from '../../services/core/errors.js'
import type { AdHocQueries } from '../../services/core/ports/ad-hoc-queries.js'
import type { ReadModel, RunFilter } from '../../services/core/ports/read-model.js'
import { formatReportedRun, reportedRunReport } from '../../services/core/reports/reported-report.js'
import {
  CLIENTS,
  FIXTURES,
  HISTORY_VERSIONS,
  importedRunInfo,
  msReport,
  releaseReport,
  releaseRun,
  reportedClient,
  WORKLOADS,
} from '../helpers/ycsb-releases.js'
import { joinRegExp } from '../helpers/regexp.js'

/** A figure as YCSB printed it, read from the file's text: `[READ], 99thPercentileLatency(us), 9215`. */
function printed(file: string, section: string, name: string): number {
  const esc = (s: string): string => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')
  const m = new RegExp(`^\\[${esc(section)}\\], ${esc(name)}, (\\S+)$`, 'm').exec(readFileSync(file, 'utf8'))
  if (m === null) throw new Error(`${file} has no [${section}], ${name}`)
  return Number(m[1])
}

const median2 = (a: number, b: number): number => (a + b) / 2
const change = (a: number, b: number): number => ((b - a) / a) * 100

/** A summary run of releases/ (release, workload, repetition), both clients, and how the runs view lists it. */
function releaseSide(release: 'A' | 'B', ws: readonly string[], reps: readonly number[], info: Partial<RunInfo> = {}) {
  const runs: RunInfo[] = []
  const data: RunData[] = []
  for (const w of ws)
    for (const k of reps) {
      const id = `${release}-${w}-${k}`
      runs.push(importedRunInfo(id, { workload: `workload${w}`, labels: { version: release }, ...info }))
      data.push(
        releaseRun(
          id,
          CLIENTS.map((c) => ({ file: releaseReport(release, w, k, c), clientId: c })),
        ),
      )
    }
  return { runs, data }
}

function compareSides(
  a: ReturnType<typeof releaseSide>,
  b: ReturnType<typeof releaseSide>,
  o: Parameters<typeof compareRuns>[4] = {},
): ReleaseComparison {
  return compareRuns(
    { ref: 'version=A', runs: a.runs },
    { ref: 'version=B', runs: b.runs },
    [...a.data, ...b.data],
    [],
    o,
  )
}

test("a summary run's report: exact merges over its clients, percentiles per client, as YCSB printed them", () => {
  const files = CLIENTS.map((c) => releaseReport('A', 'a', 1, c))
  const r = reportedRunReport(
    releaseRun(
      'A-a-1',
      CLIENTS.map((c, i) => ({ file: files[i]!, clientId: c })),
    ),
  )
  const both = (section: string, name: string): number[] => files.map((f) => printed(f, section, name))
  assert.equal(r.origin, 'reported')
  assert.equal(r.clients, 2)
  assert.equal(r.percentilesPerClient, true)
  assert.equal(r.runtimeMs, Math.max(...both('OVERALL', 'RunTime(ms)')))
  assert.equal(
    r.throughputOpsPerSec,
    both('OVERALL', 'Throughput(ops/sec)').reduce((x, y) => x + y),
  )
  for (const op of ['READ', 'UPDATE']) {
    const m = r.measurements.find((x) => x.name === op)!
    const ops = both(op, 'Operations')
    const avg = both(op, 'AverageLatency(us)')
    assert.equal(m.operations, ops[0]! + ops[1]!)
    assert.ok(Math.abs(m.averageUs! - (avg[0]! * ops[0]! + avg[1]! * ops[1]!) / (ops[0]! + ops[1]!)) < 1e-9)
    assert.equal(m.minUs, Math.min(...both(op, 'MinLatency(us)')))
    assert.equal(m.maxUs, Math.max(...both(op, 'MaxLatency(us)')))
    assert.deepEqual(m.returns, { OK: both(op, 'Return=OK').reduce((x, y) => x + y) })
    // Never merged, never the larger of the two: per client only.
    assert.deepEqual(m.percentiles, [])
  }
  assert.equal(
    r.operations,
    [...both('READ', 'Operations'), ...both('UPDATE', 'Operations')].reduce((x, y) => x + y),
  )

  const text = formatReportedRun(r)
  assert.match(text, /^\[BENCHSTREAM\], Origin, reported$/m)
  assert.match(
    text,
    new RegExp(`^\\[READ\\], Operations, ${r.measurements.find((x) => x.name === 'READ')!.operations}$`, 'm'),
  )
  assert.doesNotMatch(text.split('# client')[0]!, /PercentileLatency/)
  // Each client's block is its report as printed, line for line (GC lines aside: they are not stored).
  const blocks = text.split(/^# client /m).slice(1)
  assert.equal(blocks.length, 2)
  blocks.forEach((b, i) => {
    const lines = b.split('\n').filter((l) => l.startsWith('['))
    const original = readFileSync(files[i]!, 'utf8')
      .split('\n')
      .filter((l) => l.startsWith('[') && !l.startsWith('[TOTAL_GC'))
    assert.deepEqual([...lines].sort(), [...original].sort(), files[i])
    assert.match(b, new RegExp(`^${CLIENTS[i]}: ${files[i]!.replace(/[.]/g, '\\.')} \\(text\\)$`, 'm'))
  })

  // One client: its percentiles are the run's, printed where YCSB prints them.
  const one = reportedRunReport(releaseRun('A-a-1-c1', [{ file: files[0]!, clientId: 'client1' }]))
  const p99 = one.measurements.find((x) => x.name === 'UPDATE')!.percentiles.find((p) => p.percentile === 99)!
  assert.equal(p99.valueUs, printed(files[0]!, 'UPDATE', '99thPercentileLatency(us)'))
  assert.match(formatReportedRun(one), /^\[UPDATE\], 99thPercentileLatency\(us\), \d+$/m)
})

test('compare 1 + 1: both values and the change per workload, "n = 1 + 1: not testable", never an empty table', () => {
  const a = releaseSide('A', ['a', 'e'], [1])
  const b = releaseSide('B', ['a', 'e'], [1])
  const c = compareSides(a, b)
  assert.deepEqual(
    c.workloads.map((w) => [w.baseline, w.baselineRuns, w.candidateRuns, w.reportedRuns]),
    [
      ['workloada', ['A-a-1'], ['B-a-1'], { baseline: 1, candidate: 1 }],
      ['workloade', ['A-e-1'], ['B-e-1'], { baseline: 1, candidate: 1 }],
    ],
  )
  const row = (w: string, label: string) => c.figures.find((f) => f.workload === w && f.label === label)!
  const sum = (release: 'A' | 'B', w: string, section: string, name: string): number =>
    CLIENTS.map((k) => printed(releaseReport(release, w, 1, k), section, name)).reduce((x, y) => x + y)
  for (const w of ['a', 'e']) {
    const t = row(`workload${w}`, 'OVERALL throughput (ops/s)')
    const ta = sum('A', w, 'OVERALL', 'Throughput(ops/sec)')
    const tb = sum('B', w, 'OVERALL', 'Throughput(ops/sec)')
    assert.deepEqual([t.baseline.values, t.candidate.values], [[ta], [tb]])
    assert.ok(Math.abs(t.changePercent! - change(ta, tb)) < 1e-9)
    assert.equal(t.verdict, 'insufficient data')
    assert.equal(t.samples, 'none')
    assert.equal(t.pValue, null)
    assert.match(t.reason, /^n = 1 \+ 1: not testable/)
  }
  // A percentile of two clients: the median of their printed ones, each client's kept, and said so.
  for (const [w, op] of [
    ['a', 'UPDATE'],
    ['e', 'SCAN'],
  ] as const) {
    const p = row(`workload${w}`, `${op} p99 (µs)`)
    for (const [side, release] of [
      [p.baseline, 'A'],
      [p.candidate, 'B'],
    ] as const) {
      const each = CLIENTS.map((k) => printed(releaseReport(release, w, 1, k), op, '99thPercentileLatency(us)'))
      assert.deepEqual(
        side.perClient,
        CLIENTS.map((k, i) => ({ runId: `${release}-${w}-1`, clientId: k, value: each[i] })),
      )
      assert.equal(side.center, median2(each[0]!, each[1]!))
    }
    assert.equal(p.clientMedian, 2)
    assert.match(p.note!, /median of 2 clients/)
  }
  // Errors: Return= lines that are not OK; these runs had none, on both sides.
  assert.equal(row('workloada', 'UPDATE errors').verdict, 'no significant change')
  assert.deepEqual(row('workloada', 'UPDATE errors').baseline.values, [0])

  const md = formatComparison(c, 'markdown')
  const t = row('workloada', 'OVERALL throughput (ops/s)')
  assert.match(
    md,
    new RegExp(
      `^\\| OVERALL throughput \\(ops/s\\) \\| [\\d.k]+ \\| [\\d.k]+ \\| ` +
        `${t.changePercent!.toFixed(2)}% \\| n = 1 \\+ 1: not testable \\|$`,
      'm',
    ),
  )
  assert.match(
    md,
    /^\| UPDATE p99 \(µs\) \| [\d.k]+ \| [\d.k]+ \| \+[\d.]+% \| n = 1 \+ 1: not testable; median of 2 clients \|$/m,
  )
  // The email's table: throughput and the printed percentiles; no avg, min, max or zero error rows.
  assert.doesNotMatch(md, /\| (READ|UPDATE|SCAN|INSERT) (avg|min|max|errors|error rate)/)
  assert.match(md, /^#### workload `workloade`: summary runs \(YCSB reports as printed\), n = 1 \+ 1: not testable/m)
  assert.match(
    md,
    joinRegExp(
      [
        /^\*\*Undecided:\*\* \d+ of \d+ figures could not be tested \(n = 1 \+ 1\)\. /,
        /Largest changes for the worse, untested: workloada: OVERALL throughput -[\d.]+%/,
      ],
      'm',
    ),
  )
  // The terminal table keeps every figure.
  assert.match(formatComparison(c, 'terminal'), /^UPDATE min \(µs\) +\d+ +\d+ /m)
})

test('compare 3 + 3: the runs are the samples (Welch on logarithms); fsync on every write is a regression', () => {
  const c = compareSides(releaseSide('A', ['a', 'c'], [1, 2, 3]), releaseSide('B', ['a', 'c'], [1, 2, 3]))
  const row = (w: string, label: string) => c.figures.find((f) => f.workload === w && f.label === label)!
  const t = row('workloada', 'OVERALL throughput (ops/s)')
  for (const [side, release] of [
    [t.baseline, 'A'],
    [t.candidate, 'B'],
  ] as const)
    assert.deepEqual(
      side.values,
      [1, 2, 3].map((k) =>
        CLIENTS.map((c2) => printed(releaseReport(release, 'a', k, c2), 'OVERALL', 'Throughput(ops/sec)')).reduce(
          (x, y) => x + y,
        ),
      ),
    )
  assert.deepEqual([t.samples, t.method, t.baseline.n, t.candidate.n], ['repetitions', 'welch-t', 3, 3])
  assert.equal(t.verdict, 'regression')
  assert.equal(row('workloada', 'UPDATE avg (µs)').verdict, 'regression')
  // Workload C only reads, which fsync does not touch: nothing called there.
  for (const f of c.figures.filter((x) => x.workload === 'workloadc'))
    assert.ok(f.verdict !== 'regression' && f.verdict !== 'improvement', `${f.label}: ${f.verdict}`)
  const md = formatComparison(c, 'markdown')
  assert.match(md, /^\*\*Regressed:\*\* workloada: OVERALL throughput -[\d.]+%/m)
  assert.match(
    md,
    joinRegExp(
      [
        /^\| OVERALL throughput \(ops\/s\) \| [\d.k]+ ± \d+% \| [\d.k]+ ± \d+% \| /,
        /-[\d.]+% \| regression \(p=[\d.e-]+ n=3\+3\) \|$/,
      ],
      'm',
    ),
  )
})

test("YCSB's (ms) percentiles: 1 ms resolution, and a smaller change is never called", () => {
  // The (ms) files are the real reports with each percentile truncated to whole ms (regenerate-releases.sh).
  const side = (release: 'A' | 'B') => {
    const runs = [1, 2, 3].map((k) => importedRunInfo(`${release}-ms-${k}`, { workload: 'workloada' }))
    const data = [1, 2, 3].map((k) =>
      releaseRun(
        `${release}-ms-${k}`,
        CLIENTS.map((c) => ({ file: msReport(release, k, c), clientId: c })),
      ),
    )
    return { runs, data }
  }
  const c = compareSides(side('A'), side('B'))
  const p95 = c.figures.find((f) => f.label === 'READ p95 (µs)')!
  assert.equal(p95.resolutionUs, 1000)
  assert.deepEqual(
    p95.baseline.perClient!.map((x) => x.value),
    [1, 2, 3].flatMap((k) =>
      CLIENTS.map(
        (cl) => Math.trunc(printed(releaseReport('A', 'a', k, cl), 'READ', '95thPercentileLatency(us)') / 1000) * 1000,
      ),
    ),
  )
  for (const f of c.figures.filter((x) => x.resolutionUs > 0 && x.baseline.center !== null))
    if (Math.abs(f.candidate.center! - f.baseline.center!) < 1000)
      assert.ok(f.verdict !== 'regression' && f.verdict !== 'improvement', f.label)

  // The rule itself: medians of two clients' whole-ms p99s, 3.0 ms vs 3.5 ms on 12 runs a side. In µs the test calls
  // it; in ms it is below what the reports can tell.
  const synthetic = (id: string, p99s: readonly [number, number], unit: 'us' | 'ms'): ReportedRun => ({
    runId: id,
    clients: p99s.map((v, i) => ({
      clientId: `c${i}`,
      source: `${id}-c${i}.txt`,
      format: 'text',
      runtimeMs: 1000,
      throughputOpsPerSec: 1000,
      measurements: [
        {
          name: 'READ',
          kind: 'operation' as const,
          op: 'READ',
          latency: 'measured' as const,
          status: 'OK',
          operations: 1000,
          averageUs: 500,
          minUs: 100,
          maxUs: 9000,
          percentiles: [{ percentile: 99, valueUs: v, unit }],
          returns: { OK: 1000 },
        },
      ],
    })),
  })
  const runsOf = (p: string, medians: number[], unit: 'us' | 'ms') => ({
    runs: medians.map((_, i) => importedRunInfo(`${p}${i}`, { workload: 'workloada' })),
    data: medians.map((m, i) => synthetic(`${p}${i}`, m % 1000 === 0 ? [m, m] : [m - 500, m + 500], unit)),
  })
  const lo = [...Array<number>(11).fill(3000), 3500]
  const hi = [...Array<number>(11).fill(3500), 3000]
  const us = compareSides(runsOf('a', lo, 'us'), runsOf('b', hi, 'us'))
  const ms = compareSides(runsOf('a', lo, 'ms'), runsOf('b', hi, 'ms'))
  const p99 = (x: ReleaseComparison) => x.figures.find((f) => f.label === 'READ p99 (µs)')!
  assert.equal(p99(us).verdict, 'regression')
  assert.equal(p99(ms).verdict, 'no significant change')
  assert.equal(p99(ms).pValue, p99(us).pValue)
  assert.match(p99(ms).note!, /within the 1 ms resolution/)
  assert.match(p99(ms).reason, /below the 1 ms resolution of the printed figures: not called/)
  assert.match(formatComparison(ms, 'markdown'), /1 ms resolution: a smaller change is never called/)
})

test("YCSB's (ms) percentiles under 1 ms: printed `< 1 ms` in every table and history, never 0 µs", async () => {
  // history-ms/: the one-thread history reports in the (ms) format; READ p95 is printed 0 in each of them.
  const file = (v: string): string => path.join(FIXTURES, 'history-ms', `${v}.txt`)
  const printedMs = (v: string, op: string, q: number): number => printed(file(v), op, `${q}thPercentileLatency(ms)`)
  assert.ok(HISTORY_VERSIONS.every((v) => printedMs(v, 'READ', 95) === 0))
  const side = (versions: readonly string[]) => ({
    runs: versions.map((v) => importedRunInfo(`h-${v}`, { clients: 1, workload: 'workloada' })),
    data: versions.map((v) => releaseRun(`h-${v}`, [{ file: file(v), clientId: 'c1' }])),
  })
  const a = ['0.9.8', '0.9.9', '0.9.10']
  const b = ['0.9.12', '0.9.13', '0.9.14']
  const c = compareSides(side(a), side(b))
  // JSON (the API's and --format json): the value in µs as printed (0 ms is 0), with the resolution that says what it
  // means.
  const p95 = c.figures.find((f) => f.label === 'READ p95 (µs)')!
  assert.equal(p95.resolutionUs, 1000)
  assert.equal(p95.baseline.center, 0)
  assert.equal(p95.candidate.center, 0)
  const cell = (x: number): string => (x === 0 ? '< 1 ms' : `${x} ms`)
  const medianMs = (vs: readonly string[], op: string, q: number): number => {
    const xs = vs.map((v) => printedMs(v, op, q)).sort((x, y) => x - y)
    return xs[1]!
  }
  for (const format of ['markdown', 'terminal'] as const) {
    const text = formatComparison(c, format)
    const row = (label: string): string => {
      const esc = label.replace(/[()]/g, '\\$&')
      const m = new RegExp(`^\\|? ?${esc}.*$`, 'm').exec(text)
      assert.ok(m !== null, `${format}: no row ${label}:\n${text}`)
      return m[0]
    }
    for (const [op, q] of [
      ['READ', 95],
      ['READ', 99],
      ['UPDATE', 95],
      ['UPDATE', 99],
    ] as const) {
      const r = row(`${op} p${q} (µs)`)
      // Both sides as printed, in ms: a printed 0 is "< 1 ms", never a number of µs.
      assert.ok(r.includes(cell(medianMs(a, op, q))), `${format}: ${r}`)
      assert.ok(r.includes(cell(medianMs(b, op, q))), `${format}: ${r}`)
      assert.doesNotMatch(r, /(^|[|\s])0(\s|\||$)/, `${format}: ${r}`)
    }
    assert.match(row('READ p95 (µs)'), format === 'markdown' ? /\| < 1 ms \| < 1 ms \|/ : / < 1 ms +< 1 ms /)
    assert.match(text, /shown as printed, in ms \(< 1 ms where it printed 0\)/)
  }
  // A history of a percentile printed in whole ms: each point as printed.
  const runs = HISTORY_VERSIONS.map((v, i) =>
    importedRunInfo(`h-${v}`, {
      clients: 1,
      workload: 'workloada',
      labels: { version: v },
      started_at: `2026-12-04 16:00:0${7 - i}.000000`,
    }),
  )
  const src: HistorySource = {
    listRuns: async () => runs.map((r) => ({ ...r, operations: 1 })),
    runFigures: async () => [],
    reportedRuns: async (ids) => ids.map((id) => ({ runId: id, clients: [reportedClient(file(id.slice(2)), 'c1')] })),
  }
  for (const [op, q] of [
    ['READ', 95],
    ['UPDATE', 99],
  ] as const) {
    const h = await releaseHistory(src, { label: 'version', op, figure: `p${q}` })
    assert.ok(h.points.every((p) => p.resolutionUs === 1000))
    const text = formatHistory(h)
    for (const v of HISTORY_VERSIONS)
      assert.match(
        text,
        new RegExp(`^${v.replace(/\./g, '\\.')} +1 +${cell(printedMs(v, op, q))}( |$)`, 'm'),
        `${op} p${q} ${v}:\n${text}`,
      )
  }
})

test('workloads are paired, never pooled: by workload, else the workload label, or --by KEY', () => {
  // Six workloads a release imported with --label workload=a..f and no recorded workload: paired by the label.
  const labelled = (release: 'A' | 'B') => {
    const s = releaseSide(release, WORKLOADS, [1])
    s.runs = s.runs.map((r) => ({ ...r, workload: '', labels: { version: release, workload: r.workload.slice(-1) } }))
    return s
  }
  const c = compareSides(labelled('A'), labelled('B'))
  assert.deepEqual(
    c.workloads.map((w) => [w.baseline, w.baselineRuns]),
    WORKLOADS.map((w) => [`workload${w}`, [`A-${w}-1`]]),
  )
  // --by a label of the user's own.
  const wl = (release: 'A' | 'B') => {
    const s = releaseSide(release, ['a', 'e'], [1])
    s.runs = s.runs.map((r) => ({ ...r, workload: '', labels: { wl: r.workload } }))
    return s
  }
  const by = compareSides(wl('A'), wl('B'), { by: 'wl' })
  assert.equal(by.by, 'wl')
  assert.deepEqual(
    by.workloads.map((w) => w.baseline),
    ['workloada', 'workloade'],
  )
  assert.match(formatComparison(by, 'markdown'), /^#### wl `workloada`: /m)
  // Nothing tells several runs' workloads apart: refused, never one sample.
  const unknown = (release: 'A' | 'B') => {
    const s = releaseSide(release, ['a', 'e'], [1])
    s.runs = s.runs.map((r) => ({ ...r, workload: '', labels: {} }))
    return s
  }
  assert.throws(
    () => compareSides(unknown('A'), unknown('B'), { force: true }),
    (e: unknown) =>
      isBenchstreamError(e, 'BS_ERR_NOT_COMPARABLE') &&
      joinRegExp([
        /the baseline's runs A-a-1, A-e-1 have no recorded workload .*never pooled into one sample\. /,
        /Record the workload when importing \(import-ycsb --workload NAME, -P FILE/,
      ]).test(e.message),
  )
  assert.throws(
    () => compareSides(wl('A'), unknown('B'), { by: 'wl' }),
    (e: unknown) => isBenchstreamError(e, 'BS_ERR_NOT_COMPARABLE') && /have no wl label/.test(e.message),
  )
})

test('nothing to compare is BS_ERR_NOTHING_TO_COMPARE, saying why and what to do', () => {
  assert.throws(
    () => compareSides(releaseSide('A', ['a', 'b'], [1]), releaseSide('B', ['c', 'd'], [1])),
    (e: unknown) =>
      isBenchstreamError(e, 'BS_ERR_NOTHING_TO_COMPARE') &&
      joinRegExp([
        /no workload in common \(baseline: workloada, workloadb; candidate: workloadc, workloadd\)\. /,
        /Compare runs of the same workload/,
      ]).test(e.message),
  )
  // Workload C only reads, E scans and inserts: forced together, still no operation in common.
  assert.throws(
    () => compareSides(releaseSide('A', ['c'], [1]), releaseSide('B', ['e'], [1]), { force: true }),
    (e: unknown) =>
      isBenchstreamError(e, 'BS_ERR_NOTHING_TO_COMPARE') &&
      /workloadc vs workloade: no operation in common \(baseline READ; candidate INSERT, SCAN\)/.test(e.message),
  )
  // Runs that hold nothing (no events, no report).
  assert.throws(
    () =>
      compareRuns(
        { ref: 'x', runs: [importedRunInfo('x', { workload: 'workloada' })] },
        { ref: 'y', runs: [importedRunInfo('y', { workload: 'workloada' })] },
        [],
        [],
      ),
    (e: unknown) =>
      isBenchstreamError(e, 'BS_ERR_NOTHING_TO_COMPARE') &&
      joinRegExp([
        /no operation in common \(baseline none; candidate none\)\. Runs x, y hold no figures /,
        /\(no events and no YCSB report\): import their reports with `benchstream import-ycsb`/,
      ]).test(e.message),
  )
  // One workload in common, one not: compared, the other listed.
  const part = compareSides(releaseSide('A', ['a', 'b'], [1]), releaseSide('B', ['a', 'c'], [1]))
  assert.deepEqual(part.unpaired, ['workloadb (baseline only)', 'workloadc (candidate only)'])
})

test('history over an imported release series: natural version order, values as printed, change points', async () => {
  // Reports of eight releases imported one run each, listed newest first as the runs view does.
  const runs = HISTORY_VERSIONS.map((v, i) =>
    importedRunInfo(`h-${v}`, {
      clients: 1,
      workload: 'workloada',
      labels: { version: v },
      started_at: `2026-12-04 16:00:0${7 - i}.000000`,
    }),
  ).reverse()
  const file = (id: string): string => path.join(FIXTURES, 'history', `${id.slice(2)}.stdout.txt`)
  const src: HistorySource = {
    listRuns: async () => runs.map((r) => ({ ...r, operations: 1 })),
    runFigures: async () => [],
    reportedRuns: async (ids) => ids.map((id) => ({ runId: id, clients: [reportedClient(file(id), 'c1')] })),
  }
  const h = await releaseHistory(src, { label: 'version' })
  assert.deepEqual(
    h.points.map((p) => p.value),
    HISTORY_VERSIONS,
  )
  assert.deepEqual(
    h.points.map((p) => p.center),
    HISTORY_VERSIONS.map((v) => printed(file(`h-${v}`), 'OVERALL', 'Throughput(ops/sec)')),
  )
  // Every write waits for fsync from 0.9.12 on: throughput and the UPDATE average change there; reads do not.
  assert.deepEqual(
    h.changePoints.map((c) => c.value),
    ['0.9.12'],
  )
  const avg = await releaseHistory(src, { label: 'version', op: 'UPDATE', figure: 'avg' })
  assert.deepEqual(
    avg.changePoints.map((c) => [c.value, c.changePercent! > 100]),
    [['0.9.12', true]],
  )
  assert.deepEqual(
    avg.points.map((p) => p.center),
    HISTORY_VERSIONS.map((v) => printed(file(`h-${v}`), 'UPDATE', 'AverageLatency(us)')),
  )
  const reads = await releaseHistory(src, { label: 'version', op: 'READ', figure: 'p95', workload: 'a' })
  assert.deepEqual(reads.changePoints, [])
  assert.match(formatHistory(avg), /^0\.9\.12 +1 +\d+ +\+[\d.]+% +◆ \+[\d.]+% \(mean [\d.]+ → [\d.]+, p=0\.\d+\)$/m)
})

test('import-ycsb records the workload: --workload, -P, a workload file by the report, a Command line', async () => {
  const report = releaseReport('A', 'e', 1, 'client1')
  const args = (more: string[]) => parseImportYcsbArgs(['--run-id', 'r', '--client-id', 'c', ...more, report])
  const files = [readYcsbFile(report, undefined)]
  assert.deepEqual(findWorkload(args(['--workload', 'e']), files), {
    name: 'workloade',
    properties: undefined,
    from: '--workload',
  })
  const p = findWorkload(args(['-P', 'workloads/workloade']), files)
  assert.equal(p.name, 'workloade')
  assert.equal(p.properties!.scanproportion, '0.95')
  assert.equal(p.from, '-P workloads/workloade')
  // Nothing says: not recorded, and the summary says what to give.
  assert.match(findWorkload(args([]), files).from, /^not recorded: give --workload NAME or -P FILE/)

  // YCSB's output saved with 2>&1: its Command line names the -P file.
  const dir = mkdtempSync(path.join(os.tmpdir(), 'bs-workload-'))
  try {
    const saved = path.join(dir, 'run-e.txt')
    writeFileSync(saved, readFileSync(report.replace('.stdout.', '.stderr.'), 'utf8') + readFileSync(report, 'utf8'))
    const fromCmd = findWorkload(
      { workload: undefined, workloadFiles: [], files: [{ path: saved, measurement: undefined }] },
      [readYcsbFile(saved, undefined)],
    )
    assert.deepEqual([fromCmd.name, fromCmd.from], ['workloade', `${saved}'s Command line: -P workloads/workloade`])
    // <report>.properties next to it wins, named by its benchstream.workload.
    writeFileSync(
      path.join(dir, 'run-e.properties'),
      'benchstream.workload=e-short\nrecordcount=1000\nscanproportion=0.95\n',
    )
    const near = findWorkload(
      { workload: undefined, workloadFiles: [], files: [{ path: saved, measurement: undefined }] },
      [],
    )
    assert.deepEqual(
      [near.name, near.from, near.properties!.recordcount],
      ['e-short', path.join(dir, 'run-e.properties'), '1000'],
    )
  } finally {
    rmSync(dir, { recursive: true, force: true })
  }

  // history/ keeps the stock workload file next to the reports: named by its "# Workload A:" line.
  const out: string[] = []
  const code = await importYcsbMain(
    ['--run-id', 'h', '--client-id', 'c', '--dry-run', path.join(FIXTURES, 'history', '0.9.8.stdout.txt')],
    {},
    (s) => out.push(s),
  )
  assert.equal(code, 0)
  assert.match(
    out.join(''),
    new RegExp(
      `^  workload: workloada \\(from ${path.join(FIXTURES, 'history', 'workloada').replace(/[.]/g, '\\.')}\\)$`,
      'm',
    ),
  )
  // releases/ has none: the reports there are not workload files, however they are named.
  const none: string[] = []
  await importYcsbMain(['--run-id', 'r', '--client-id', 'c', '--dry-run', report], {}, (s) => none.push(s))
  assert.match(none.join(''), /^ {2}workload: not recorded: give --workload NAME or -P FILE/m)
  assert.throws(
    () => parseImportYcsbArgs(['--run-id', 'r', '--client-id', 'c', '--workload', 'a b', report]),
    (e: unknown) => isBenchstreamError(e, 'BS_ERR_USAGE') && /--workload "a b" is not allowed/.test(e.message),
  )
})

test("the API: a summary run's report (JSON and YCSB text), its compare, and 422 when nothing compares", async () => {
  const a = releaseSide('A', ['a', 'c'], [1])
  const b = releaseSide('B', ['a', 'e'], [1])
  const all = [...a.runs, ...b.runs]
  const data = new Map([...a.data, ...b.data].map((d) => [d.runId, d as ReportedRun]))
  const readModel = {
    getRun: async (id: string) => all.find((r) => r.run_id === id),
    listRuns: async (_limit: number, filter: RunFilter = {}) =>
      all
        .filter((r) => Object.entries(filter.labels ?? {}).every(([k, v]) => r.labels[k] === v))
        .map((r) => ({ ...r, operations: 1 })),
    runReport: async (id: string) => {
      throw new BenchstreamError('BS_ERR_NOT_FOUND', `run ${id} has no data`)
    },
    runFigures: async () => [],
    windowFigures: async () => [],
    reportedRuns: async (ids: readonly string[]) => ids.flatMap((id) => data.get(id) ?? []),
  } as unknown as ReadModel
  const adHoc = { stream: async () => assert.fail('no SQL'), close: async () => undefined } as unknown as AdHocQueries
  const app = build(readApiConfig({ API_PORT: '0' }), { readModel, adHoc, database: 'benchstream' })
  try {
    const json = await app.inject({ method: 'GET', url: '/api/v1/runs/A-a-1/report' })
    assert.equal(json.statusCode, 200)
    const r = json.json<{ origin: string; operations: number; perClient: Array<{ clientId: string }> }>()
    assert.equal(r.origin, 'reported')
    assert.equal(
      r.operations,
      CLIENTS.flatMap((c) =>
        ['READ', 'UPDATE'].map((op) => printed(releaseReport('A', 'a', 1, c), op, 'Operations')),
      ).reduce((x, y) => x + y),
    )
    assert.deepEqual(
      r.perClient.map((c) => c.clientId),
      [...CLIENTS],
    )
    const text = await app.inject({ method: 'GET', url: '/api/v1/runs/A-a-1/report?format=text' })
    assert.match(text.body, /^\[BENCHSTREAM\], Origin, reported$/m)
    const cmp = await app.inject({
      method: 'GET',
      url: '/api/v1/compare?baseline=version=A&candidate=version=B&format=markdown',
    })
    assert.equal(cmp.statusCode, 200)
    assert.match(cmp.body, /^Not compared: workloadc \(baseline only\); workloade \(candidate only\)$/m)
    assert.match(cmp.body, /n = 1 \+ 1: not testable/)
    const none = await app.inject({ method: 'GET', url: '/api/v1/compare?baseline=A-c-1&candidate=B-e-1&force=true' })
    assert.equal(none.statusCode, 422)
    assert.equal(none.json<{ code: string }>().code, 'BS_ERR_NOTHING_TO_COMPARE')
  } finally {
    await app.close()
  }
})

test('the figures of a summary run: throughput per operation from its clients, OVERALL as printed', () => {
  const files = CLIENTS.map((c) => releaseReport('B', 'f', 2, c))
  const v = reportedRunValues(
    releaseRun(
      'B-f-2',
      CLIENTS.map((c, i) => ({ file: files[i]!, clientId: c })),
    ),
  )
  const rt = files.map((f) => printed(f, 'OVERALL', 'RunTime(ms)'))
  for (const op of ['READ', 'UPDATE', 'READ-MODIFY-WRITE']) {
    const ops = files.map((f) => printed(f, op, 'Operations'))
    assert.ok(
      Math.abs(v.ops.get(op)!.get('throughput')!.value - ((ops[0]! * 1000) / rt[0]! + (ops[1]! * 1000) / rt[1]!)) <
        1e-9,
    )
    assert.equal(v.ops.get(op)!.get('min')!.value, Math.min(...files.map((f) => printed(f, op, 'MinLatency(us)'))))
  }
  assert.equal(
    v.ops.get('OVERALL')!.get('throughput')!.value,
    files.map((f) => printed(f, 'OVERALL', 'Throughput(ops/sec)')).reduce((x, y) => x + y),
  )
  // CLEANUP is reported, never compared as an operation.
  assert.equal(v.ops.has('CLEANUP'), false)
})
