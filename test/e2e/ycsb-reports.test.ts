/**
 * Every YCSB report a first-class run (issue 20), end to end: reports real
 * YCSB 0.17.0 wrote for two releases of one datastore (test/fixtures/
 * ycsb-0.17.0/releases: redis without and with fsync on every write; two
 * clients a run) and for an eight-release series (history/) go through
 * `import-ycsb`, Kafka and the processor into ClickHouse as summary runs,
 * then `benchstream runs`, `report`, `compare` (1 + 1 and 3 + 3, Markdown
 * and JSON), `history` and the API read them back. Every expected figure is
 * read from the reports' text. The workload is recorded three ways: -P on
 * release A, --workload on release B, and for the series the workload file
 * next to the reports. Comparisons with nothing to compare exit 4 with why.
 */
import assert from 'node:assert/strict'
import { readFileSync, writeFileSync } from 'node:fs'
import path from 'node:path'
import { test } from 'node:test'
import type { ReleaseComparison, ReleaseHistory } from '../../schemas/compare-api.v1.js'
import type { ReportedRun, ReportedRunReport } from '../../schemas/run-reports-api.v1.js'
import type { RunInfo } from '../../schemas/runs-api.v1.js'
import { queryRows } from '../../services/adapters/clickhouse/client.js'
import { ClickHouseReadModel } from '../../services/adapters/clickhouse/read-model.js'
import { generatedDir } from '../../dashboards/index.js'
import { importYcsbMain } from '../../services/cli/import-ycsb.js'
import { formatHistory } from '../../services/core/compare/history.js'
import { formatComparison } from '../../services/core/compare/release-format.js'
import { startServer } from '../../services/server/main.js'
import { cli as runCli } from '../helpers/cli.js'
import { testEnv, waitFor } from '../helpers/env.js'
import { expandQuery } from '../helpers/grafana-macros.js'
import { joinRegExp } from '../helpers/regexp.js'
import { CLIENTS, FIXTURES, HISTORY_VERSIONS, releaseReport, releaseRun, WORKLOADS } from '../helpers/ycsb-releases.js'

function printed(file: string, section: string, name: string): number {
  const esc = (s: string): string => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')
  const m = new RegExp(`^\\[${esc(section)}\\], ${esc(name)}, (\\S+)$`, 'm').exec(readFileSync(file, 'utf8'))
  if (m === null) throw new Error(`${file} has no [${section}], ${name}`)
  return Number(m[1])
}
const sum = (xs: readonly number[]): number => xs.reduce((a, b) => a + b, 0)
/** Imports running at once: each opens its own Kafka producer. */
const IMPORTS_AT_ONCE = 8

test(
  'YCSB reports as summary runs through Kafka: runs, report, compare 1 + 1 and 3 + 3, history and the API ' +
    'read them as printed; nothing to compare exits 4',
  { timeout: 300_000 },
  async (t) => {
    // The reports carry no time of their own: they are stored at import time.
    const te = testEnv({ ALERTS_ENABLED: 'false' })
    t.after(te.cleanup)
    const t0 = Date.now()
    const svc = await startServer(te.env, { api: true })
    t.after(() => svc.stop())
    t.diagnostic(`server started in ${((Date.now() - t0) / 1000).toFixed(1)} s`)
    const cli = async (env: Record<string, string>, args: string[]) => {
      const at = Date.now()
      const r = await runCli(env, args)
      t.diagnostic(`benchstream ${args.join(' ')}: ${((Date.now() - at) / 1000).toFixed(1)} s`)
      return r
    }
    // The data directory is this test's own: run ids as a user would give them (the guide shows this output).
    const id = (name: string): string => name

    /** What each import printed, by `run/client`; imports run a few at a time (each is its own Kafka producer). */
    const imported = new Map<string, string>()
    const jobs: Array<() => Promise<void>> = []
    const runIds: string[] = []
    const importRun = (runId: string, files: string[], flags: string[]): void => {
      runIds.push(runId)
      files.forEach((file, i) =>
        jobs.push(async () => {
          const out: string[] = []
          const client = CLIENTS[i] ?? `client${i + 1}`
          const args = ['--run-id', runId, '--client-id', client, ...flags, file]
          assert.equal(await importYcsbMain(args, te.env, (x) => out.push(x)), 0)
          imported.set(`${runId}/${client}`, out.join(''))
        }),
      )
    }
    const both = (release: 'A' | 'B', w: string, k: number): string[] =>
      CLIENTS.map((c) => releaseReport(release, w, k, c))
    // Release A names each workload with -P, release B with --workload: both record workloada ... workloadf.
    // version=A/B: repetition 1 of workloads A to F (1 + 1); rel=A/B: the 3 repetitions of workload A (3 + 3).
    const release = (r: 'A' | 'B', w: string, k: number, labels: string[]): void => {
      const named = r === 'A' ? ['-P', `workloads/workload${w}`] : ['--workload', w]
      importRun(id(`${r}-${w}-${k}`), both(r, w, k), [...named, ...labels.flatMap((l) => ['--label', l])])
    }
    for (const w of WORKLOADS)
      for (const r of ['A', 'B'] as const) release(r, w, 1, w === 'a' ? [`version=${r}`, `rel=${r}`] : [`version=${r}`])
    for (const k of [2, 3]) for (const r of ['A', 'B'] as const) release(r, 'a', k, [`rel=${r}`])
    // YCSB's output saved with 2>&1 holds its Command line: the workload comes from there.
    const saved = CLIENTS.map((c) => {
      const f = path.join(te.dataDir, `c-${c}.txt`)
      const report = releaseReport('B', 'c', 2, c)
      writeFileSync(f, readFileSync(report.replace('.stdout.', '.stderr.'), 'utf8') + readFileSync(report, 'utf8'))
      return f
    })
    importRun(id('C-c'), saved, ['--label', 'version=C'])
    importRun(id('C-e'), both('B', 'e', 2), ['--workload', 'e', '--label', 'version=C'])
    // The series: the workload file next to the reports names the workload.
    for (const v of HISTORY_VERSIONS)
      importRun(
        id(`h-${v}`),
        [path.join(FIXTURES, 'history', `${v}.stdout.txt`)],
        ['--label', `version=${v}`, '--label', 'series=h'],
      )
    const started = Date.now()
    for (let at = 0; at < jobs.length; at += IMPORTS_AT_ONCE)
      await Promise.all(jobs.slice(at, at + IMPORTS_AT_ONCE).map((j) => j()))
    assert.match(imported.get('A-a-1/client1')!, /^ {2}workload: workloada \(from -P workloads\/workloada\)$/m)
    assert.match(imported.get('B-a-1/client1')!, /^ {2}workload: workloada \(from --workload\)$/m)
    assert.match(
      imported.get('C-c/client1')!,
      /^ {2}workload: workloadc \(from .*c-client1\.txt's Command line: -P workloads\/workloadc\)$/m,
    )
    assert.match(
      imported.get('h-0.9.15/client1')!,
      /^ {2}workload: workloada \(from test\/fixtures\/ycsb-0\.17\.0\/history\/workloada\)$/m,
    )

    const clientsOf = (runId: string): number => (runId.startsWith('h-') ? 1 : 2)
    await waitFor('every report stored and every client ended', async () => {
      const [r] = await queryRows<{ reports: string; ended: string }>(
        svc.ch,
        `SELECT (SELECT uniqExact(run_id, client_id) FROM benchstream.reported_measurements
                 WHERE run_id IN {ids:Array(String)}) AS reports,
                (SELECT count() FROM benchstream.run_clients
                 WHERE run_id IN {ids:Array(String)} AND phase = 'end') AS ended`,
        { ids: runIds },
      )
      const want = sum(runIds.map((r2) => clientsOf(r2)))
      return Number(r!.reports) === want && Number(r!.ended) === want ? true : undefined
    })

    t.diagnostic(`${jobs.length} imports stored in ${((Date.now() - started) / 1000).toFixed(1)} s`)

    // Stored as printed: the read model gives back exactly what the reports say.
    const rm = new ClickHouseReadModel(svc.ch)
    const [stored] = await rm.reportedRuns([id('A-a-1')])
    // The store keeps no order of sections: compare them by name.
    const byName = (r: ReportedRun): ReportedRun => ({
      ...r,
      clients: r.clients.map((c) => ({
        ...c,
        measurements: [...c.measurements].sort((x, y) => x.name.localeCompare(y.name)),
      })),
    })
    assert.deepEqual(
      byName(stored!),
      byName(
        releaseRun(
          id('A-a-1'),
          CLIENTS.map((c, i) => ({ file: both('A', 'a', 1)[i]!, clientId: c })),
        ),
      ),
    )

    // runs: listed, marked as reported, with the operations the reports count.
    const runs = await cli(te.env, ['runs', '--label', 'version=A', '--json'])
    assert.equal(runs.code, 0, runs.stderr)
    const listed = JSON.parse(runs.stdout) as Array<RunInfo & { operations: number }>
    assert.deepEqual(
      listed.map((r) => [r.run_id, r.origin, r.workload]).sort((x, y) => String(x[0]).localeCompare(String(y[0]))),
      WORKLOADS.map((w) => [id(`A-${w}-1`), 'reported', `workload${w}`]),
    )
    const a1 = listed.find((r) => r.run_id === id('A-a-1'))!
    assert.equal(
      Number(a1.operations),
      sum(both('A', 'a', 1).flatMap((f) => ['READ', 'UPDATE'].map((op) => printed(f, op, 'Operations')))),
    )
    assert.equal(a1.properties.readproportion, '0.5', "-P records the workload file's properties")

    // Grafana's run pickers: a summary run shown marked, its value the run id (the query as Grafana sends it).
    const liveDashboard = JSON.parse(readFileSync(path.join(generatedDir(), 'benchstream-live.json'), 'utf8')) as {
      templating: { list: Array<{ name: string; query: string }> }
    }
    const picker = liveDashboard.templating.list.find((v) => v.name === 'run')!.query
    const options = await queryRows<{ __text: string; __value: string }>(
      svc.ch,
      expandQuery(picker, {
        fromMs: Date.now() - 3_600_000,
        toMs: Date.now() + 60_000,
        intervalMs: 1000,
        variables: {},
      }),
    )
    assert.deepEqual(
      options.find((o) => o.__value === id('A-a-1')),
      { __text: `${id('A-a-1')} (reported)`, __value: id('A-a-1') },
    )
    assert.equal(options.length, runIds.length)

    // report: YCSB's layout, the exact merges, each client's report as printed.
    const report = await cli(te.env, ['report', id('A-a-1')])
    assert.equal(report.code, 0, report.stderr)
    process.stdout.write(`# benchstream report A-a-1:\n${report.stdout.replace(/^/gm, '#   ')}\n`)
    const files = both('A', 'a', 1)
    assert.match(report.stdout, /^\[BENCHSTREAM\], Origin, reported$/m)
    assert.match(
      report.stdout,
      new RegExp(
        `^\\[OVERALL\\], RunTime\\(ms\\), ${Math.max(...files.map((f) => printed(f, 'OVERALL', 'RunTime(ms)')))}$`,
        'm',
      ),
    )
    for (const op of ['READ', 'UPDATE']) {
      assert.match(
        report.stdout,
        new RegExp(`^\\[${op}\\], Operations, ${sum(files.map((f) => printed(f, op, 'Operations')))}$`, 'm'),
      )
      assert.match(
        report.stdout,
        new RegExp(
          `^\\[${op}\\], MaxLatency\\(us\\), ${Math.max(...files.map((f) => printed(f, op, 'MaxLatency(us)')))}$`,
          'm',
        ),
      )
    }
    const blocks = report.stdout.split(/^# client /m).slice(1)
    assert.deepEqual(
      blocks.map((b) =>
        b
          .split('\n')
          .filter((l) => l.startsWith('['))
          .sort(),
      ),
      files.map((f) =>
        readFileSync(f, 'utf8')
          .split('\n')
          .filter((l) => l.startsWith('[') && !l.startsWith('[TOTAL_GC'))
          .sort(),
      ),
    )
    const apiReport = await svc.api!.inject({ method: 'GET', url: `/api/v1/runs/${id('A-a-1')}/report` })
    assert.equal(apiReport.statusCode, 200)
    const rj = apiReport.json<ReportedRunReport>()
    assert.equal(rj.origin, 'reported')
    assert.equal(rj.throughputOpsPerSec, sum(files.map((f) => printed(f, 'OVERALL', 'Throughput(ops/sec)'))))
    assert.equal(rj.run?.workload, 'workloada')

    // compare 1 + 1 (one run of each release, workloads A to F): the Markdown of a release email.
    const md = await cli(te.env, ['compare', 'version=A', 'version=B', '--format', 'markdown'])
    // Undecided: one run a side tests nothing, and the exit code says so (5), as the headline does.
    assert.equal(md.code, 5, md.stderr)
    process.stdout.write(
      `# benchstream compare version=A version=B --format markdown:\n${md.stdout.replace(/^/gm, '#   ')}\n`,
    )
    const overall = (release: 'A' | 'B', w: string, k: number): number =>
      sum(both(release, w, k).map((f) => printed(f, 'OVERALL', 'Throughput(ops/sec)')))
    assert.match(md.stdout, /^\*\*Undecided:\*\* \d+ of \d+ figures could not be tested \(n = 1 \+ 1\)\. /m)
    assert.doesNotMatch(md.stdout, /nothing, of|No regression/)
    // As JSON (no headline there), why it is undecided goes to stderr, with the same exit code.
    const json = await cli(te.env, ['compare', 'version=A', 'version=B', '--json'])
    assert.equal(json.code, 5, json.stderr)
    assert.match(
      json.stderr,
      /^benchstream: undecided \(exit 5\): \d+ of \d+ figures could not be tested \(n = 1 \+ 1\)$/m,
    )
    assert.equal((JSON.parse(json.stdout) as ReleaseComparison).summary.regressions, 0)
    // Release B's runs were imported with --workload only: their properties are unknown, not different.
    assert.match(md.stdout, /^_Note: setups compared only where recorded: .* are summary runs imported without -P/m)
    for (const w of WORKLOADS) {
      assert.match(
        md.stdout,
        new RegExp(
          `^#### workload \`workload${w}\`: summary runs \\(YCSB reports as printed\\), n = 1 \\+ 1: not testable`,
          'm',
        ),
      )
      const change = ((overall('B', w, 1) - overall('A', w, 1)) / overall('A', w, 1)) * 100
      assert.ok(
        md.stdout.includes(`| ${change >= 0 ? '+' : ''}${change.toFixed(2)}% | n = 1 + 1: not testable |`),
        `workload${w} OVERALL`,
      )
    }
    const json1 = await svc.api!.inject({
      method: 'GET',
      url: '/api/v1/compare?baseline=version=A&candidate=version=B',
    })
    assert.equal(json1.statusCode, 200)
    const c1 = json1.json<ReleaseComparison>()
    const p99 = c1.figures.find((f) => f.workload === 'workloade' && f.label === 'SCAN p99 (µs)')!
    const scan = (release: 'A' | 'B'): number[] =>
      both(release, 'e', 1).map((f) => printed(f, 'SCAN', '99thPercentileLatency(us)'))
    assert.deepEqual(
      p99.baseline.perClient!.map((x) => x.value),
      scan('A'),
    )
    assert.equal(p99.baseline.center, (scan('A')[0]! + scan('A')[1]!) / 2)
    assert.equal(p99.candidate.center, (scan('B')[0]! + scan('B')[1]!) / 2)
    assert.equal(p99.verdict, 'insufficient data')

    // compare 3 + 3 on workload A: the repetitions are the samples; every write waiting for fsync is a regression.
    const three = await cli(te.env, ['compare', 'rel=A', 'rel=B', '--json'])
    assert.equal(three.code, 0, three.stderr)
    const c3 = JSON.parse(three.stdout) as ReleaseComparison
    const tp = c3.figures.find((f) => f.label === 'OVERALL throughput (ops/s)')!
    assert.deepEqual(
      tp.baseline.values,
      [1, 2, 3].map((k) => overall('A', 'a', k)),
    )
    assert.deepEqual(
      tp.candidate.values,
      [1, 2, 3].map((k) => overall('B', 'a', k)),
    )
    assert.deepEqual([tp.samples, tp.method, tp.verdict], ['repetitions', 'welch-t', 'regression'])
    process.stdout.write(
      '# benchstream compare rel=A rel=B --format markdown:\n' +
        `${formatComparison(c3, 'markdown').replace(/^/gm, '#   ')}\n`,
    )

    // history over the imported series: natural order, each release's figure as printed, the change at 0.9.12.
    const hist = await cli(te.env, [
      'history',
      '--label',
      'version',
      '--filter',
      'series=h',
      '--op',
      'UPDATE',
      '--figure',
      'avg',
      '--json',
    ])
    assert.equal(hist.code, 0, hist.stderr)
    const h = JSON.parse(hist.stdout) as ReleaseHistory
    const series = (v: string): string => path.join(FIXTURES, 'history', `${v}.stdout.txt`)
    assert.deepEqual(
      h.points.map((p) => [p.value, p.center]),
      HISTORY_VERSIONS.map((v) => [v, printed(series(v), 'UPDATE', 'AverageLatency(us)')]),
    )
    assert.deepEqual(
      h.changePoints.map((c) => c.value),
      ['0.9.12'],
    )
    process.stdout.write(
      `# benchstream history --label version --filter series=h --op UPDATE --figure avg:\n` +
        `${formatHistory(h).replace(/^/gm, '#   ')}\n`,
    )
    const apiHist = await svc.api!.inject({ method: 'GET', url: '/api/v1/history?label=version&filter=series=h' })
    assert.deepEqual(
      apiHist.json<ReleaseHistory>().points.map((p) => p.center),
      HISTORY_VERSIONS.map((v) => printed(series(v), 'OVERALL', 'Throughput(ops/sec)')),
    )

    // Nothing to compare: exit 4, why, and what to do.
    const noWorkload = await cli(te.env, ['compare', 'version=C', 'rel=A'])
    assert.equal(noWorkload.code, 4, noWorkload.stderr)
    assert.match(
      noWorkload.stderr,
      joinRegExp(
        [
          /^benchstream: BS_ERR_NOTHING_TO_COMPARE: nothing to compare: the sides have no workload in common /,
          /\(baseline: workloadc, workloade; candidate: workloada\)\. Compare runs of the same workload/,
        ],
        'm',
      ),
    )
    const noOp = await cli(te.env, ['compare', 'version=C,workload=c', 'version=A,workload=e', '--force'])
    assert.equal(noOp.code, 4, noOp.stderr)
    assert.match(
      noOp.stderr,
      /workloadc vs workloade: no operation in common \(baseline READ; candidate INSERT, SCAN\)/,
    )
    const apiNone = await svc.api!.inject({
      method: 'GET',
      url:
        `/api/v1/compare?baseline=${encodeURIComponent('version=C,workload=c')}&` +
        `candidate=${encodeURIComponent('version=A,workload=e')}&force=true`,
    })
    assert.equal(apiNone.statusCode, 422)
  },
)
