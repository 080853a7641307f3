/**
 * HBase PerformanceEvaluation runs as summary runs, end to end: what real PE
 * 2.5.10 printed (test/fixtures/hbase-pe: three randomRead runs of two
 * clients on "release A", three on "release B") goes through `import-pe`,
 * Kafka and the processor into ClickHouse, then `runs`, `report`, `compare`
 * (3 + 3) and `history` read it back like any summary run. Every expected
 * figure is read from PE's text here with a pattern of its own. A file that
 * is not PE's output is refused before anything is sent.
 */
import assert from 'node:assert/strict'
import { readFileSync } from 'node:fs'
import path from 'node:path'
import { test } from 'node:test'
import type { ReleaseComparison, ReleaseHistory } from '../../schemas/compare-api.v1.js'
import type { ReportedRunReport } from '../../schemas/run-reports-api.v1.js'
import type { RunInfo } from '../../schemas/runs-api.v1.js'
import { queryRows } from '../../services/adapters/clickhouse/client.js'
import { importPeMain } from '../../services/cli/import-pe.js'
import { startServer } from '../../services/server/main.js'
import { cli } from '../helpers/cli.js'
import { testEnv, waitFor } from '../helpers/env.js'

const DIR = 'test/fixtures/hbase-pe'
const REPS = [1, 2, 3] as const
const file = (side: 'A' | 'B', k: number): string => path.join(DIR, side, `randomRead-2clients-${k}.txt`)

/** Each client of a PE output, read from its text: rows, time, and its Latency (us) figures. */
function clientsOf(f: string): Array<{ name: string; rows: number; ms: number; lat: Record<string, number> }> {
  const t = readFileSync(f, 'utf8')
  return [...t.matchAll(/\[(TestClient-\d+)\] hbase\.PerformanceEvaluation: Finished \1 in (\d+)ms over (\d+) rows/g)]
    .map((m) => {
      const lat = /\[(TestClient-\d+)\] hbase\.PerformanceEvaluation: Latency \(us\) : (.*)$/gm
      const line = [...t.matchAll(lat)].find((l) => l[1] === m[1])![2]!
      return {
        name: m[1]!,
        ms: Number(m[2]),
        rows: Number(m[3]),
        lat: Object.fromEntries(line.split(', ').map((kv) => [kv.split('=')[0]!, Number(kv.split('=')[1])])),
      }
    })
    .sort((a, b) => a.name.localeCompare(b.name))
}
const throughput = (f: string): number => clientsOf(f).reduce((a, c) => a + (c.rows * 1000) / c.ms, 0)
const median2 = (xs: number[]): number => (xs[0]! + xs[1]!) / 2

test(
  'PE output as summary runs through Kafka: runs, report, compare 3 + 3 and history read what PE printed',
  { timeout: 240_000 },
  async (t) => {
    const te = testEnv({ ALERTS_ENABLED: 'false' })
    t.after(te.cleanup)
    const svc = await startServer(te.env, { api: true })
    t.after(() => svc.stop())

    const printed = new Map<string, string>()
    const runIds: string[] = []
    await Promise.all(
      (['A', 'B'] as const).flatMap((side) =>
        REPS.map(async (k) => {
          const runId = `pe-${side}-${k}`
          runIds.push(runId)
          const out: string[] = []
          const code = await importPeMain(
            ['--run-id', runId, '--client-id', 'node1', '--label', `rel=${side}`, file(side, k)],
            te.env,
            (x) => out.push(x),
          )
          assert.equal(code, 0)
          printed.set(runId, out.join(''))
        }),
      ),
    )
    assert.match(
      printed.get('pe-A-1')!,
      new RegExp(
        '^imported run pe-A-1: PE RandomReadTest as workload randomRead, 2 clients ' +
          '\\(node1\\.TestClient-0, node1\\.TestClient-1\\)',
      ),
    )
    assert.match(printed.get('pe-A-1')!, /percentiles stay per client: not mergeable from summaries/)

    // Not PE's output: refused whole, nothing sent.
    const refused = await cli(te.env, [
      'import-pe',
      '--run-id',
      'not-pe',
      '--client-id',
      'c',
      'test/fixtures/ycsb-0.17.0/run-workloada.stdout.txt',
    ])
    assert.equal(refused.code, 1, refused.stderr)
    assert.match(refused.stderr, /BS_ERR_DECODE: .*run-workloada\.stdout\.txt: holds no PerformanceEvaluation result/)

    await waitFor('every PE client stored and ended', async () => {
      const [r] = await queryRows<{ reports: string; ended: string }>(
        svc.ch,
        `SELECT (SELECT uniqExact(run_id, client_id) FROM benchstream.reported_measurements
                 WHERE run_id IN {ids:Array(String)}) AS reports,
                (SELECT count() FROM benchstream.run_clients
                 WHERE run_id IN {ids:Array(String)} AND phase = 'end') AS ended`,
        { ids: runIds },
      )
      return Number(r!.reports) === 12 && Number(r!.ended) === 12 ? true : undefined
    })
    const [none] = await queryRows<{ n: string }>(
      svc.ch,
      `SELECT count() AS n FROM benchstream.run_clients WHERE run_id = 'not-pe'`,
    )
    assert.equal(Number(none!.n), 0)

    // runs: summary runs of workload randomRead, the operations PE ran.
    const runs = await cli(te.env, ['runs', '--label', 'rel=A', '--json'])
    assert.equal(runs.code, 0, runs.stderr)
    const listed = (JSON.parse(runs.stdout) as Array<RunInfo & { operations: number }>).sort((a, b) =>
      a.run_id.localeCompare(b.run_id),
    )
    assert.deepEqual(
      listed.map((r) => [r.run_id, r.origin, r.workload, Number(r.operations)]),
      REPS.map((k) => [`pe-A-${k}`, 'reported', 'randomRead', clientsOf(file('A', k)).reduce((a, c) => a + c.rows, 0)]),
    )
    assert.equal(listed[0]!.properties['pe.cmdName'], 'randomRead', "PE's options are the run's properties")

    // report: the exact merges, and each client's percentiles as PE printed them.
    const api = await svc.api!.inject({ method: 'GET', url: '/api/v1/runs/pe-A-1/report' })
    assert.equal(api.statusCode, 200)
    const rep = api.json<ReportedRunReport>()
    const a1 = clientsOf(file('A', 1))
    const read = rep.measurements.find((m) => m.name === 'READ')!
    assert.equal(
      read.operations,
      a1.reduce((a, c) => a + c.rows, 0),
    )
    assert.equal(read.maxUs, Math.max(...a1.map((c) => c.lat.max!)))
    assert.equal(read.minUs, Math.min(...a1.map((c) => c.lat.min!)))
    assert.deepEqual(read.percentiles, [])
    assert.equal(rep.percentilesPerClient, true)
    assert.deepEqual(
      rep.perClient.map((c) => [
        c.clientId,
        c.format,
        c.measurements[0]!.percentiles.find((p) => p.percentile === 99)!.valueUs,
      ]),
      a1.map((c) => [`node1.${c.name}`, 'pe', c.lat['99th']]),
    )
    const text = await cli(te.env, ['report', 'pe-A-1'])
    assert.equal(text.code, 0, text.stderr)
    assert.match(text.stdout, /^\[READ\], Operations, 2000$/m)
    assert.match(text.stdout, /^# A summary run: PE's figures as printed, merged over the 2 clients only where/m)

    // compare 3 + 3: the repetitions are the samples; each run's throughput its clients' rows over their times.
    const cmp = await cli(te.env, ['compare', 'rel=A', 'rel=B', '--json'])
    assert.equal(cmp.code, 0, cmp.stderr)
    const c = JSON.parse(cmp.stdout) as ReleaseComparison
    const tp = c.figures.find((f) => f.workload === 'randomRead' && f.label === 'OVERALL throughput (ops/s)')!
    for (const [side, got] of [
      ['A', tp.baseline.values],
      ['B', tp.candidate.values],
    ] as const)
      REPS.forEach((k, i) => assert.ok(Math.abs(got[i]! - throughput(file(side, k))) < 1e-6, `${side}-${k}`))
    assert.equal(tp.samples, 'repetitions')
    // A percentile of two clients: the median of their printed ones, said so, never merged or the largest.
    const p99 = c.figures.find((f) => f.workload === 'randomRead' && f.label === 'READ p99 (µs)')!
    assert.deepEqual(
      p99.baseline.values,
      REPS.map((k) => median2(clientsOf(file('A', k)).map((x) => x.lat['99th']!))),
    )
    assert.deepEqual(
      p99.candidate.values,
      REPS.map((k) => median2(clientsOf(file('B', k)).map((x) => x.lat['99th']!))),
    )
    const md = await cli(te.env, ['compare', 'rel=A', 'rel=B', '--format', 'markdown'])
    assert.equal(md.code, 0, md.stderr)
    process.stdout.write(`# benchstream compare rel=A rel=B --format markdown:\n${md.stdout.replace(/^/gm, '#   ')}\n`)
    assert.match(
      md.stdout,
      /^#### workload `randomRead`: summary runs \(PE output as printed\), repetitions as samples/m,
    )

    // history over the two releases: each one's READ average, weighted by operations over its clients and runs.
    const hist = await cli(te.env, ['history', '--label', 'rel', '--op', 'READ', '--figure', 'avg', '--json'])
    assert.equal(hist.code, 0, hist.stderr)
    const h = JSON.parse(hist.stdout) as ReleaseHistory
    assert.deepEqual(
      h.points.map((p) => p.value),
      ['A', 'B'],
    )
    const weighted = (f: string): number => {
      const cs = clientsOf(f)
      return cs.reduce((a, x) => a + x.lat.mean! * x.rows, 0) / cs.reduce((a, x) => a + x.rows, 0)
    }
    for (const [i, side] of (['A', 'B'] as const).entries()) {
      const got = h.points[i]!.values.map((v) => v!).sort((x, y) => x - y)
      const want = REPS.map((k) => weighted(file(side, k))).sort((x, y) => x - y)
      assert.equal(got.length, 3)
      got.forEach((v, j) => assert.ok(Math.abs(v - want[j]!) < 1e-6, `${side}: ${v} vs ${want[j]}`))
    }
  },
)
