/**
 * Two YCSB clients' HdrHistogram interval logs (written by the real
 * hdr-histogram-js from known latencies) imported into one run with
 * `benchstream import-ycsb`, through real Kafka and the processor into
 * ClickHouse: counts per operation exact, the merged p99 within 1% of the
 * exact p99 over both clients' latencies.
 */
import assert from 'node:assert/strict'
import { writeFileSync } from 'node:fs'
import path from 'node:path'
import { test } from 'node:test'
import { queryRows } from '../../services/adapters/clickhouse/client.js'
import { importYcsbMain } from '../../services/cli/import-ycsb.js'
import { startServer } from '../../services/server/main.js'
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
    'ycsb-a': { READ: [0, 1, 2].map(() => lognormalUs(rand, 2500, 400, 0.7)), UPDATE: [0, 1, 2].map(() => lognormalUs(rand, 1500, 1200, 0.9)) },
    'ycsb-b': { READ: [0, 1, 2, 3].map(() => lognormalUs(rand, 2000, 900, 0.7)), UPDATE: [0, 1, 2, 3].map(() => lognormalUs(rand, 1000, 3000, 1.0)) },
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
  assert.match(output[0]!, /READ: 3 intervals, 7500 operations/)
  assert.match(output[1]!, /UPDATE: 4 intervals, 4000 operations/)

  const values = (op: 'READ' | 'UPDATE', client?: keyof typeof clients): number[] =>
    Object.entries(clients).filter(([c]) => client === undefined || c === client).flatMap(([, ops]) => ops[op].flat()).sort((a, b) => a - b)
  const expected = { READ: values('READ').length, UPDATE: values('UPDATE').length }
  const total = expected.READ + expected.UPDATE

  const ch = svc.ch
  await waitFor('all intervals and both end records in ClickHouse', async () => {
    const [r] = await queryRows<{ n: string; ended: string }>(ch, `SELECT (SELECT sum(count) FROM benchstream.op_windows WHERE run_id = {runId:String}) AS n, (SELECT count() FROM benchstream.run_clients WHERE run_id = {runId:String} AND phase = 'end') AS ended`, { runId })
    return Number(r!.n) === total && Number(r!.ended) === 2 ? true : undefined
  })

  const perOp = await queryRows<{ op: string; status: string; n: string }>(ch, `SELECT op, status, sum(count) AS n FROM benchstream.op_windows WHERE run_id = {runId:String} GROUP BY op, status ORDER BY op`, { runId })
  assert.deepEqual(Object.fromEntries(perOp.map((r) => [`${r.op}/${r.status}`, Number(r.n)])), { 'READ/OK': expected.READ, 'UPDATE/OK': expected.UPDATE })
  // The end records carry what each import sent; the run view sums them.
  const run = await queryRows<{ sent: Record<string, string>; clients: string }>(ch, `SELECT sent, clients FROM benchstream.runs WHERE run_id = {runId:String}`, { runId })
  assert.equal(Number(run[0]!.clients), 2)
  assert.deepEqual(Object.fromEntries(Object.entries(run[0]!.sent).map(([k, v]) => [k, Number(v)])), { 'READ/OK': expected.READ, 'UPDATE/OK': expected.UPDATE })

  // Windows span the logs' intervals: first start to the end of the last (client b: 4 intervals of 2 s).
  const [span] = await queryRows<{ first: string; last: string }>(ch, `SELECT toUnixTimestamp64Micro(min(first_start)) AS first, toUnixTimestamp64Micro(max(last_end)) AS last FROM benchstream.op_windows WHERE run_id = {runId:String}`, { runId })
  assert.equal(Number(span!.first), startMs * 1000)
  assert.equal(Number(span!.last), startMs * 1000 + 4 * 2_000_000)

  const merged = await queryRows<{ op: string; p99: number }>(ch, `SELECT op, bs_quantile(0.99, sumMap(hist)) AS p99 FROM benchstream.op_windows WHERE run_id = {runId:String} GROUP BY op ORDER BY op`, { runId })
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
    assert.ok(exact < maxClient && exact > Math.min(...perClient), `${op}: exact merged p99 ${exact}, client p99s ${perClient.join(', ')}`)
    assert.ok(maxClient - r.p99 > 0.02 * exact, `${op}: max of client p99s ${maxClient} would misreport the run's p99 ${r.p99}`)
    t.diagnostic(`${op}: merged p99 ${r.p99} µs (exact ${exact}), client p99s ${perClient.join(' / ')} µs, max-of-clients off by ${(((maxClient - exact) / exact) * 100).toFixed(1)}%`)
  }

  const res = await svc.api!.inject({ method: 'GET', url: `/api/v1/runs/${runId}/report` })
  assert.equal(res.statusCode, 200)
  assert.equal(res.json<{ operations: number }>().operations, total)
})
