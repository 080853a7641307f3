/**
 * Two YCSB clients' HdrHistogram interval logs (written by the real
 * hdr-histogram-js from known latencies) imported into one run with
 * `benchstream import-ycsb`, through real Kafka and the processor into
 * ClickHouse: counts per operation exact, the merged p99 within 1% of the
 * exact p99 over both clients' latencies.
 */
import assert from 'node:assert/strict'
import { readdirSync, readFileSync, writeFileSync } from 'node:fs'
import path from 'node:path'
import { test } from 'node:test'
import { queryRows } from '../../services/adapters/clickhouse/client.js'
import { importYcsbMain } from '../../services/cli/import-ycsb.js'
import { startServer } from '../../services/server/main.js'
import { isBenchstreamError } from '../../services/core/errors.js'
import { parseYcsbFile } from '../../services/core/ycsb/import.js'
import type { RawReport, SummaryReport } from '../../services/core/ycsb/report-types.js'
import { testEnv, waitFor } from '../helpers/env.js'
import { exactQuantile, lognormalUs, prng, writeYcsbHdrLog } from '../helpers/ycsb-hdr.js'

test('YCSB interval logs of two clients merge into one run: exact counts, p99 within 1%', async (t) => {
  const te = testEnv({ ALERTS_ENABLED: 'false' })
  t.after(te.cleanup)
  const svc = await startServer(te.env, { api: true })
  t.after(() => svc.stop())

  const runId = `ycsb-import-${Date.now()}`
  // Logs start a minute ago: recent enough for the processor's event-age limit.
  const startMs = Date.now() - 60_000
  const rand = prng(7)
  // Client b is slower than client a, so the two p99s differ a lot.
  const clients = {
    'ycsb-a': {
      READ: [0, 1, 2].map(() => lognormalUs(rand, 2500, 400, 0.7)),
      UPDATE: [0, 1, 2].map(() => lognormalUs(rand, 1500, 1200, 0.9)),
    },
    'ycsb-b': {
      READ: [0, 1, 2, 3].map(() => lognormalUs(rand, 2000, 900, 0.7)),
      UPDATE: [0, 1, 2, 3].map(() => lognormalUs(rand, 1000, 3000, 1.0)),
    },
  }
  const output: string[] = []
  for (const [clientId, ops] of Object.entries(clients)) {
    const args = ['--run-id', runId, '--client-id', clientId, '--label', 'test=import-ycsb']
    for (const [op, intervals] of Object.entries(ops)) {
      const file = path.join(te.dataDir, `${clientId}-${op}.hdr`)
      writeFileSync(file, writeYcsbHdrLog(startMs, 2, intervals))
      args.push(`${op.toLowerCase()}=${file}`)
    }
    assert.equal(await importYcsbMain(args, te.env, (s) => output.push(s)), 0)
  }
  assert.match(output[0]!, /interval log \(V2\) of READ, 3 intervals, 7500 operations/)
  assert.match(output[1]!, /interval log \(V2\) of UPDATE, 4 intervals, 4000 operations/)

  const values = (op: 'READ' | 'UPDATE', client?: keyof typeof clients): number[] =>
    Object.entries(clients)
      .filter(([c]) => client === undefined || c === client)
      .flatMap(([, ops]) => ops[op].flat())
      .sort((a, b) => a - b)
  const expected = { READ: values('READ').length, UPDATE: values('UPDATE').length }
  const total = expected.READ + expected.UPDATE

  const ch = svc.ch
  await waitFor('all intervals and both end records in ClickHouse', async () => {
    const [r] = await queryRows<{ n: string; ended: string }>(
      ch,
      `SELECT (SELECT sum(count) FROM benchstream.op_windows WHERE run_id = {runId:String}) AS n, ` +
        `(SELECT count() FROM benchstream.run_clients WHERE run_id = {runId:String} AND phase = 'end') AS ended`,
      { runId },
    )
    return Number(r!.n) === total && Number(r!.ended) === 2 ? true : undefined
  })

  const perOp = await queryRows<{ op: string; status: string; n: string }>(
    ch,
    `SELECT op, status, sum(count) AS n FROM benchstream.op_windows WHERE run_id = {runId:String} ` +
      `GROUP BY op, status ORDER BY op`,
    { runId },
  )
  assert.deepEqual(Object.fromEntries(perOp.map((r) => [`${r.op}/${r.status}`, Number(r.n)])), {
    'READ/OK': expected.READ,
    'UPDATE/OK': expected.UPDATE,
  })
  // The end records carry what each import sent; the run view sums them.
  const run = await queryRows<{ sent: Record<string, string>; clients: string }>(
    ch,
    `SELECT sent, clients FROM benchstream.runs WHERE run_id = {runId:String}`,
    { runId },
  )
  assert.equal(Number(run[0]!.clients), 2)
  assert.deepEqual(Object.fromEntries(Object.entries(run[0]!.sent).map(([k, v]) => [k, Number(v)])), {
    'READ/OK': expected.READ,
    'UPDATE/OK': expected.UPDATE,
  })

  // Windows span the logs' intervals: first start to the end of the last (client b: 4 intervals of 2 s).
  const [span] = await queryRows<{ first: string; last: string }>(
    ch,
    `SELECT toUnixTimestamp64Micro(min(first_start)) AS first, toUnixTimestamp64Micro(max(last_end)) ` +
      `AS last FROM benchstream.op_windows WHERE run_id = {runId:String}`,
    { runId },
  )
  assert.equal(Number(span!.first), startMs * 1000)
  assert.equal(Number(span!.last), startMs * 1000 + 4 * 2_000_000)

  const merged = await queryRows<{ op: string; p99: number }>(
    ch,
    `SELECT op, bs_quantile(0.99, sumMap(hist)) AS p99 FROM benchstream.op_windows WHERE run_id ` +
      `= {runId:String} GROUP BY op ORDER BY op`,
    { runId },
  )
  assert.equal(merged.length, 2)
  for (const r of merged) {
    const op = r.op as 'READ' | 'UPDATE'
    const exact = exactQuantile(values(op), 0.99)
    assert.ok(Math.abs(r.p99 - exact) <= 0.01 * exact, `${op} merged p99 ${r.p99} vs exact ${exact}`)
    // The run's p99 is a quantile of the merged distribution, not the max
    // (nor any mix) of the clients' p99s: here the slow client's p99 is well
    // above it, because only part of the run's requests ran on that client.
    const perClient = Object.keys(clients).map((c) => exactQuantile(values(op, c as keyof typeof clients), 0.99))
    const maxClient = Math.max(...perClient)
    assert.ok(
      exact < maxClient && exact > Math.min(...perClient),
      `${op}: exact merged p99 ${exact}, client p99s ${perClient.join(', ')}`,
    )
    assert.ok(
      maxClient - r.p99 > 0.02 * exact,
      `${op}: max of client p99s ${maxClient} would misreport the run's p99 ${r.p99}`,
    )
    t.diagnostic(
      `${op}: merged p99 ${r.p99} µs (exact ${exact}), client p99s ${perClient.join(' / ')} µs, max-of-clients ` +
        `off by ${(((maxClient - exact) / exact) * 100).toFixed(1)}%`,
    )
  }

  const res = await svc.api!.inject({ method: 'GET', url: `/api/v1/runs/${runId}/report` })
  assert.equal(res.statusCode, 200)
  assert.equal(res.json<{ operations: number }>().operations, total)
})

const FIXTURES = 'test/fixtures/ycsb-0.17.0'

test(
  'real YCSB 0.17.0 files through Kafka: logs with Intended- twins, raw data, a JSON report; counts ' +
    "equal YCSB's report, CLEANUP not counted, a bad file sends nothing",
  async (t) => {
    // The fixtures were written on one day; keep them inside the event-age limit whenever this runs.
    const te = testEnv({ ALERTS_ENABLED: 'false', MAX_EVENT_AGE_S: '315360000' })
    t.after(te.cleanup)
    const svc = await startServer(te.env, { api: true })
    t.after(() => svc.stop())
    const ch = svc.ch
    const runId = `ycsb-real-${Date.now()}`
    const out: string[] = []
    const hdrBoth = readdirSync(path.join(FIXTURES, 'hdr-both')).map((f) => path.join(FIXTURES, 'hdr-both', f))
    // Client a: the six interval logs of a -target run with measurement.interval=both, and YCSB's text report of it.
    assert.equal(
      await importYcsbMain(
        [
          '--run-id',
          runId,
          '--client-id',
          'a',
          ...hdrBoth,
          path.join(FIXTURES, 'run-workloada-target-both.stdout.txt'),
        ],
        te.env,
        (s) => out.push(s),
      ),
      0,
    )
    // Client b: raw data (its report comes with it). Client c: a JSONArrayMeasurementsExporter report only.
    assert.equal(
      await importYcsbMain(
        ['--run-id', runId, '--client-id', 'b', path.join(FIXTURES, 'run-workloada-raw.stdout.txt')],
        te.env,
        (s) => out.push(s),
      ),
      0,
    )
    assert.equal(
      await importYcsbMain(
        ['--run-id', runId, '--client-id', 'c', path.join(FIXTURES, 'run-workloada.jsonarray.json')],
        te.env,
        (s) => out.push(s),
      ),
      0,
    )
    assert.match(out[0]!, /CLEANUP: 4 in .*CLEANUP\.hdr \(reported, not counted as operations\)/)
    assert.match(out[2]!, /final reports: 1, stored as reported/)

    // A file that fails sends nothing at all, not even the good files before it.
    const bad = path.join(te.dataDir, 'bad-report.txt')
    writeFileSync(bad, '[OVERALL], RunTime(ms), 100\n[READ], Operations\n')
    await assert.rejects(
      importYcsbMain(['--run-id', `${runId}-bad`, '--client-id', 'x', hdrBoth[0]!, bad], te.env, () => undefined),
      (err: unknown) =>
        isBenchstreamError(err, 'BS_ERR_DECODE') &&
        /bad-report\.txt line 2: expected a measurement and a number after \[READ\]/.test((err as Error).message),
    )

    const report = (rel: string): SummaryReport =>
      parseYcsbFile(rel, readFileSync(path.join(FIXTURES, rel))) as SummaryReport
    const both = report('run-workloada-target-both.stdout.txt')
    const rawReport = (
      parseYcsbFile('raw', readFileSync(path.join(FIXTURES, 'run-workloada-raw.stdout.txt'))) as RawReport
    ).summary!
    const ops = (r: SummaryReport, name: string): number =>
      r.measurements.find((m) => m.name.name === name)!.operations!
    const expected: Record<string, number> = {}
    for (const r of [both, rawReport])
      for (const op of ['READ', 'UPDATE']) expected[op] = (expected[op] ?? 0) + ops(r, op)
    await waitFor('every client ended, the windows and the reported rows stored', async () => {
      const [r] = await queryRows<{ n: string; ended: string; reported: string }>(
        ch,
        `SELECT (SELECT sum(count) FROM benchstream.op_windows WHERE run_id = {runId:String}) AS n,
      (SELECT count() FROM benchstream.run_clients WHERE run_id = {runId:String} AND phase = 'end') AS ended,
      (SELECT count() FROM benchstream.reported_measurements WHERE run_id = {runId:String}) AS reported`,
        { runId },
      )
      return Number(r!.n) === expected.READ! + expected.UPDATE! && Number(r!.ended) === 3 && Number(r!.reported) > 0
        ? true
        : undefined
    })
    const perClient = await queryRows<{ client_id: string; op: string; n: string; intended: string }>(
      ch,
      `SELECT client_id, op, sum(count) AS n, sum(arraySum(mapValues(intended_hist))) AS intended ` +
        `FROM benchstream.op_windows WHERE run_id = {runId:String} GROUP BY client_id, op ORDER BY client_id, op`,
      { runId },
    )
    assert.deepEqual(
      perClient.map((r) => [r.client_id, r.op, Number(r.n), Number(r.intended)]),
      [
        ['a', 'READ', ops(both, 'READ'), ops(both, 'Intended-READ')],
        ['a', 'UPDATE', ops(both, 'UPDATE'), ops(both, 'Intended-UPDATE')],
        ['b', 'READ', ops(rawReport, 'READ'), ops(rawReport, 'READ')],
        ['b', 'UPDATE', ops(rawReport, 'UPDATE'), ops(rawReport, 'UPDATE')],
      ],
    )
    // Client a's intended p99 over the run from the merged intended histograms is YCSB's Intended-READ p99 within
    // resolution.
    const [ip] = await queryRows<{ p99: number }>(
      ch,
      `SELECT bs_quantile(0.99, sumMap(intended_hist)) AS p99 FROM benchstream.op_windows WHERE run_id ` +
        `= {runId:String} AND client_id = 'a' AND op = 'READ'`,
      { runId },
    )
    const printed = both.measurements
      .find((m) => m.name.name === 'Intended-READ')!
      .percentiles.find((p) => p.percentile === 99)!.valueUs
    assert.ok(
      Math.abs(ip!.p99 - printed) <= Math.max(0.008 * printed, 1),
      `Intended-READ p99: ${ip!.p99} vs YCSB ${printed}`,
    )
    // Reported figures: as printed, per client, origin 'reported'; CLEANUP kept apart.
    const rows = await queryRows<{
      client_id: string
      measurement: string
      kind: string
      origin: string
      operations: string
      p99: number
      format: string
    }>(
      ch,
      `SELECT client_id, measurement, kind, origin, operations, percentiles_us['99'] AS p99, format ` +
        `FROM benchstream.reported_measurements WHERE run_id = {runId:String} ORDER BY client_id, measurement`,
      { runId },
    )
    const json = report('run-workloada.jsonarray.json')
    const c = rows.filter((r) => r.client_id === 'c')
    assert.deepEqual(
      c.map((r) => r.measurement),
      json.measurements.map((m) => m.name.name).sort(),
    )
    for (const r of c) {
      const m = json.measurements.find((x) => x.name.name === r.measurement)!
      assert.equal(Number(r.operations), m.operations, r.measurement)
      assert.equal(r.origin, 'reported')
      assert.equal(r.format, 'json-array')
      assert.equal(r.kind, r.measurement.endsWith('CLEANUP') ? 'cleanup' : 'operation')
      if (m.percentiles.some((p) => p.percentile === 99))
        assert.equal(r.p99, m.percentiles.find((p) => p.percentile === 99)!.valueUs)
    }
    assert.ok(rows.some((r) => r.client_id === 'b' && r.format === 'raw'))
    const summary = await queryRows<{
      measurement: string
      clients: string
      operations: string
      percentiles_per_client: number
    }>(
      ch,
      `SELECT measurement, clients, operations, percentiles_per_client FROM benchstream.reported_summary ` +
        `WHERE run_id = {runId:String} AND measurement = 'READ'`,
      { runId },
    )
    assert.deepEqual(
      summary.map((r) => [Number(r.clients), Number(r.operations), Number(r.percentiles_per_client)]),
      [[3, ops(both, 'READ') + ops(rawReport, 'READ') + ops(json, 'READ'), 1]],
    )
    const badRows = await queryRows<{ n: string }>(
      ch,
      `SELECT count() AS n FROM benchstream.run_clients WHERE run_id = {runId:String}`,
      { runId: `${runId}-bad` },
    )
    assert.equal(Number(badRows[0]!.n), 0)
  },
)
