/**
 * The comparison's ClickHouse side against the real engine (embedded chDB):
 * - the views compare, sweep and Grafana read (run_op_figures,
 *   op_window_figures) give the same numbers as the run's report and as the
 *   TypeScript histogram code over the same windows;
 * - our Mann-Whitney U and Welch's t-test (the verdict's cross-check) equal
 *   ClickHouse's mannWhitneyUTest and welchTTest on the same samples: real
 *   per-window p99s read from the view, and synthetic samples with ties.
 * Windows are written by the processor's own store from encoded events of
 * two clients per run, with failed operations and cache outcomes.
 */
import assert from 'node:assert/strict'
import { test } from 'node:test'
import { queryRows, type ClickHouse } from '../../services/adapters/clickhouse/client.js'
import { ClickHouseReadModel } from '../../services/adapters/clickhouse/read-model.js'
import { ClickHouseWindowStore } from '../../services/adapters/clickhouse/window-store.js'
import { readInfraConfig } from '../../services/common/infra-config.js'
import { OpsBatchWriter } from '../../services/core/codec/ops-batch-writer.js'
import { mannWhitneyU } from '../../services/core/compare/mann-whitney.js'
import { compareFigure } from '../../services/core/compare/verdict.js'
import { welchTTest } from '../../services/core/compare/welch-t-test.js'
import { entriesFromMap, quantileFromEntries } from '../../services/core/stats/histogram.js'
import { PartitionState } from '../../services/core/stats/partition-state.js'
import { Rng } from '../../services/core/workload/random.js'
import { migratedClickHouse } from '../helpers/clickhouse.js'
import { testEnv } from '../helpers/env.js'

/** ClickHouse's named tuples, as JSON objects. */
interface MW {
  u_statistic: number
  p_value: number
}
interface Welch {
  t_statistic: number
  p_value: number
}

const NOW_US = Math.floor(Date.now() / 1000) * 1_000_000
const SECONDS = 20

/**
 * Writes `SECONDS` s of READ (OK, and NOT_FOUND now and then) and SCAN events of two clients into op_windows, and their
 * lifecycle rows.
 */
async function writeRun(ch: ClickHouse, runId: string, scanUs: number, seed: number, offset: number): Promise<void> {
  const st = new PartitionState('topic', 0, offset, {
    windowUs: 1_000_000,
    allowedLatenessUs: 0,
    storeRawEvents: true,
    maxEventAgeUs: 86_400e6,
    maxEventFutureUs: 600e6,
  })
  const rng = new Rng(seed)
  for (const client of ['c1', 'c2']) {
    const w = new OpsBatchWriter(runId, client)
    for (let i = 0; i < SECONDS * 200; i++) {
      const start = NOW_US + i * 5000 + (client === 'c2' ? 1700 : 0)
      const scan = i % 5 === 0
      // Latencies with a long tail; one read in 50 does not find its record.
      const base = scan ? scanUs : 40
      const latency = Math.round(base * (1 + rng.next()) * (rng.next() < 0.02 ? 8 : 1))
      const status = !scan && i % 50 === 7 ? 2 : 0
      const cache = scan ? 0 : rng.next() < 0.3 ? 1 : 2
      w.add(i % 4, scan ? 4 : 1, cache, status, start, latency, latency, 100)
    }
    st.add(w.finish(), offset++, NOW_US)
  }
  await new ClickHouseWindowStore(ch).write(st.drain('g'))
  await ch.client.insert({
    table: `${ch.database}.run_settings`,
    format: 'JSONEachRow',
    values: [{ run_id: runId, window_ms: 1000, claimed_by: 'test' }],
  })
  const at = (us: number): string => (us / 1e6).toFixed(6)
  await ch.client.insert({
    table: `${ch.database}.run_clients`,
    format: 'JSONEachRow',
    values: ['c1', 'c2'].flatMap((client) => [
      {
        run_id: runId,
        client_id: client,
        phase: 'start',
        at: at(NOW_US),
        workload: 'workloadx',
        binding: 'memory',
        threads: 4,
        target: 0,
        group_id: 'g',
        repeat: 1,
        properties: { recordcount: '1000' },
      },
      {
        run_id: runId,
        client_id: client,
        phase: 'end',
        at: at(NOW_US + SECONDS * 1e6),
        runtime_ms: SECONDS * 1000 + (client === 'c2' ? 3 : 0),
        sent: {},
      },
    ]),
  })
}

test("views equal the report and the TypeScript histograms; our U and Welch tests equal ClickHouse's", async (t) => {
  const te = testEnv({ KAFKA_BROKERS: '127.0.0.1:1' })
  t.after(te.cleanup)
  const ch = await migratedClickHouse(t, readInfraConfig(te.env).clickhouse)
  await writeRun(ch, 'ra', 300, 1, 0)
  await writeRun(ch, 'rb', 330, 2, 10)
  const rm = new ClickHouseReadModel(ch)

  // run_op_figures (through runFigures) = the report, figure by figure.
  const figures = await rm.runFigures(['ra', 'rb'])
  assert.deepEqual(
    figures.map((f) => f.runId),
    ['ra', 'rb'],
  )
  for (const f of figures) {
    const report = await rm.runReport(f.runId)
    assert.equal(f.runtimeMs, report.runtimeMs)
    const overall = f.ops.find((o) => o.op === 'OVERALL')!
    assert.equal(overall.opsPerSec, report.throughputOpsPerSec)
    for (const op of ['READ', 'SCAN']) {
      const m = report.measurements.find((x) => x.name === op)!
      const failed = report.measurements.find((x) => x.name === `${op}-FAILED`)
      const o = f.ops.find((x) => x.op === op)!
      assert.equal(o.operations, m.operations)
      assert.equal(o.errors, failed?.operations ?? 0)
      assert.equal(o.errorRate, (failed?.operations ?? 0) / (m.operations + (failed?.operations ?? 0)))
      assert.equal(o.opsPerSec, (m.operations * 1000) / report.runtimeMs)
      assert.ok(Math.abs(o.avgUs! - m.averageLatencyUs) < 1e-9)
      assert.deepEqual(
        [o.minUs, o.maxUs, o.p50Us, o.p90Us, o.p95Us, o.p99Us, o.p999Us, o.p9999Us],
        [
          m.minLatencyUs,
          m.maxLatencyUs,
          m.p50LatencyUs,
          m.p90LatencyUs,
          m.p95LatencyUs,
          m.p99LatencyUs,
          m.p999LatencyUs,
          m.p9999LatencyUs,
        ],
        `${f.runId} ${op}`,
      )
      assert.equal(o.cacheHitRatio, report.cacheHitRatio[op] ?? null)
    }
    assert.ok(f.ops.find((x) => x.op === 'READ')!.errors > 0, 'the run has failed reads')
  }

  // op_window_figures (through windowFigures): each window's p99 from the window's histogram merged over both clients.
  const windows = await rm.windowFigures(['ra', 'rb'])
  const raw = await queryRows<{
    run_id: string
    t: string
    op: string
    hist: Record<string, string>
    min_us: string
    max_us: string
  }>(
    ch,
    `
    SELECT run_id, toUnixTimestamp64Milli(window_start) AS t, op,
           sumMap(hist) AS hist, min(min_us) AS min_us, max(max_us) AS max_us
    FROM benchstream.op_windows WHERE status = 'OK' GROUP BY run_id, t, op`,
  )
  const first = new Map<string, number>()
  for (const r of raw) first.set(r.run_id, Math.min(first.get(r.run_id) ?? Number.POSITIVE_INFINITY, Number(r.t)))
  assert.equal(windows.length, raw.length)
  for (const r of raw) {
    const w = windows.find(
      (x) => x.runId === r.run_id && x.op === r.op && x.tS === (Number(r.t) - first.get(r.run_id)!) / 1000,
    )!
    const e = entriesFromMap(r.hist)
    assert.equal(w.p99Us, quantileFromEntries(e, 0.99, Number(r.min_us), Number(r.max_us)))
    assert.equal(w.p50Us, quantileFromEntries(e, 0.5, Number(r.min_us), Number(r.max_us)))
  }
  assert.ok(windows.filter((w) => w.runId === 'ra' && w.op === 'READ').length >= SECONDS)

  // Cross-check 1: per-window p99 of SCAN, run A against run B, straight from the view in SQL and through our code.
  const [sql] = await queryRows<{ mw: MW; welch: Welch }>(
    ch,
    `
    SELECT mannWhitneyUTest('two-sided', 1)(p99_us, toUInt8(run_id = 'rb')) AS mw,
           welchTTest(p99_us, toUInt8(run_id = 'rb')) AS welch
    FROM benchstream.op_window_figures WHERE run_id IN ('ra', 'rb') AND op = 'SCAN'`,
  )
  const xa = windows.filter((w) => w.runId === 'ra' && w.op === 'SCAN').map((w) => w.p99Us!)
  const xb = windows.filter((w) => w.runId === 'rb' && w.op === 'SCAN').map((w) => w.p99Us!)
  const close = (ours: number, theirs: number, what: string): void =>
    assert.ok(
      Math.abs(ours - theirs) <= 1e-9 * Math.max(1, Math.abs(theirs)),
      `${what}: ours ${ours}, ClickHouse ${theirs}`,
    )
  const mw = mannWhitneyU(xa, xb, { method: 'normal', continuityCorrection: true })
  close(mw.u, sql!.mw.u_statistic, 'U on window p99s')
  close(mw.pValue, sql!.mw.p_value, 'Mann-Whitney p on window p99s')
  const wt = welchTTest(xa, xb)
  close(wt.t, sql!.welch.t_statistic, 'Welch t on window p99s')
  close(wt.pValue, sql!.welch.p_value, 'Welch p on window p99s')
  // The verdict carries the same cross-check (on the windows it used).
  const v = compareFigure({ runs: [1], windows: [xa] }, { runs: [1], windows: [xb] }, { direction: 'lower-is-better' })
  assert.equal(v.samples, 'windows')
  close(v.crossCheck!.mannWhitney.pValue, sql!.mw.p_value, 'verdict cross-check U')
  close(v.crossCheck!.welch.pValue, sql!.welch.p_value, 'verdict cross-check Welch')
  process.stdout.write(
    `# window p99 of SCAN, ${xa.length} + ${xb.length} windows: U ${mw.u} p ${mw.pValue.toPrecision(6)} ` +
      `(ClickHouse ${sql!.mw.p_value.toPrecision(6)}), Welch t ${wt.t.toPrecision(6)} p ${wt.pValue.toPrecision(6)} ` +
      `(ClickHouse ${sql!.welch.p_value.toPrecision(6)}); verdict ${v.verdict} by ${v.method}\n`,
  )

  // Cross-check 2: synthetic samples, ties and all, of the sizes repetitions have.
  const rng = new Rng(7)
  const cases: Array<[number[], number[]]> = [
    [
      [10, 11, 12],
      [13, 14, 15],
    ],
    [
      [10, 10, 12, 12, 12],
      [12, 13, 13, 10, 14],
    ],
    [
      Array.from({ length: 30 }, () => Math.round(rng.next() * 20)),
      Array.from({ length: 25 }, () => Math.round(3 + rng.next() * 20)),
    ],
    [
      Array.from({ length: 8 }, () => 1000 * (1 + rng.next())),
      Array.from({ length: 11 }, () => 1100 * (1 + rng.next())),
    ],
  ]
  for (const [x, y] of cases) {
    const [r] = await queryRows<{ mw: MW; welch: Welch }>(
      ch,
      `
      SELECT mannWhitneyUTest('two-sided', 1)(v, g) AS mw, welchTTest(v, g) AS welch
      FROM (SELECT arrayJoin(arrayConcat(arrayMap(a -> (a, toUInt8(0)), {x:Array(Float64)}),
                                         arrayMap(b -> (b, toUInt8(1)), {y:Array(Float64)}))) AS p,
                   p.1 AS v, p.2 AS g)`,
      { x, y },
    )
    const m = mannWhitneyU(x, y, { method: 'normal', continuityCorrection: true })
    close(m.u, r!.mw.u_statistic, `U ${x.length}+${y.length}`)
    close(m.pValue, r!.mw.p_value, `Mann-Whitney p ${x.length}+${y.length}`)
    const w = welchTTest(x, y)
    close(w.t, r!.welch.t_statistic, `Welch t ${x.length}+${y.length}`)
    close(w.pValue, r!.welch.p_value, `Welch p ${x.length}+${y.length}`)
  }
})
