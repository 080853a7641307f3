/**
 * The whole pipeline on real components: driver -> Kafka -> processor ->
 * ClickHouse (embedded) -> API. Counts must be exact per operation, and
 * percentiles from merged windows within 1% of exact values computed in SQL
 * over the raw events. A malformed message goes to the dead-letter topic
 * with its reason and the counts stay exact.
 */
import assert from 'node:assert/strict'
import { test } from 'node:test'
import { queryRows } from '../../services/adapters/clickhouse/client.js'
import { createKafka } from '../../services/adapters/kafka/client.js'
import { readInfraConfig } from '../../services/common/infra-config.js'
import { quantileRank } from '../../services/core/stats/histogram.js'
import { startServer } from '../../services/server/main.js'
import { driveClient, waitForRun } from '../helpers/driven-run.js'
import { testEnv, waitFor } from '../helpers/env.js'

test('driver events land in ClickHouse exactly, percentiles within 1%, bad input dead-lettered', async (t) => {
  const te = testEnv()
  t.after(te.cleanup)
  const svc = await startServer(te.env, { api: true })
  t.after(() => svc.stop())
  const infra = readInfraConfig(te.env)
  const kafka = createKafka(infra.kafka, 'e2e')

  // Two clients of one run, each with its own store, as two machines would be.
  const runId = `e2e-${Date.now()}`
  const clients = ['client-a', 'client-b']
  const sent: Record<string, number> = {}
  let delivered = 0
  for (const [i, clientId] of clients.entries()) {
    const outcome = await driveClient(kafka, te.env, [
      ...`-P workloads/workloada -p recordcount=2000 -p operationcount=${15_000 + i * 5000}`.split(' '),
      ...`-p memory.cachesize=${300 + i} -threads 4 -db memory`.split(' '),
      ...`--run-id ${runId} --client-id ${clientId} --label test=e2e`.split(' '),
    ])
    assert.equal(outcome.delivery.undelivered, 0)
    assert.equal(outcome.report.operations, 15_000 + i * 5000)
    delivered += outcome.delivery.sentEvents
    for (const [k, n] of Object.entries(outcome.delivery.sent)) sent[k] = (sent[k] ?? 0) + n
  }
  assert.equal(delivered, 35_000)

  // A malformed message in the middle of the stream.
  const producer = kafka.producer()
  await producer.connect()
  await producer.send({
    topic: infra.topics.events,
    messages: [{ key: 'junk', value: Buffer.from('{"op":"READ","latency":12}') }],
  })
  await producer.disconnect()

  const ch = svc.ch
  await waitForRun(ch, runId, { events: delivered, clients: 2 })
  await waitFor('the malformed message in the dead letters', async () => {
    const [r] = await queryRows<{ dl: string }>(ch, `SELECT count() AS dl FROM benchstream.dead_letters`)
    return Number(r!.dl) === 1 ? true : undefined
  })

  // Exact counts per operation and status, against what the drivers sent.
  const perOp = await queryRows<{ op: string; status: string; n: string }>(
    ch,
    `SELECT op, status, sum(count) AS n FROM benchstream.op_windows WHERE run_id = {runId:String} GROUP BY op, status`,
    { runId },
  )
  assert.deepEqual(Object.fromEntries(perOp.map((r) => [`${r.op}/${r.status}`, Number(r.n)])), sent)
  const run = await queryRows<{ sent: Record<string, string>; clients: string }>(
    ch,
    `SELECT sent, clients FROM benchstream.runs WHERE run_id = {runId:String}`,
    { runId },
  )
  assert.equal(Number(run[0]!.clients), 2)
  assert.deepEqual(Object.fromEntries(Object.entries(run[0]!.sent).map(([k, v]) => [k, Number(v)])), sent)

  // Percentiles from merged windows (both clients, whole run) vs exact over raw events.
  const acc = await queryRows<{ op: string; q: number; windows: number; exact: number }>(
    ch,
    `
    SELECT w.op AS op, q, bs_quantile(q, w.h) AS windows,
           e.s[bs_rank(q, length(e.s))] AS exact
    FROM (SELECT op, sumMap(hist) AS h FROM benchstream.op_windows WHERE run_id = {runId:String} GROUP BY op) AS w
    JOIN (SELECT op, arraySort(groupArray(latency_us)) AS s FROM benchstream.ops WHERE run_id = {runId:String}
          GROUP BY op) AS e ON e.op = w.op
    ARRAY JOIN [0.5, 0.95, 0.99, 0.999] AS q`,
    { runId },
  )
  assert.equal(acc.length, 8)
  for (const r of acc) {
    // Below 256 µs buckets are exact; allow the bucket midpoint's half unit.
    const tolerance = Math.max(0.01 * r.exact, 0.5)
    assert.ok(
      Math.abs(r.windows - r.exact) <= tolerance,
      `${r.op} p${r.q * 100}: windows ${r.windows} vs exact ${r.exact}`,
    )
  }

  // The dead letter on its topic, with the reason.
  const dlq = kafka.consumer({ groupId: `${te.env.PROCESSOR_GROUP_ID}-dlq-reader` })
  await dlq.connect()
  await dlq.subscribe({ topic: infra.topics.deadLetter, fromBeginning: true })
  const reason = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error('no dead letter within 30 s')), 30_000)
    void dlq.run({
      eachMessage: async ({ message }) => {
        clearTimeout(timer)
        resolve(String(message.headers?.reason))
      },
    })
  })
  await dlq.disconnect()
  assert.equal(reason, 'bad_magic')

  // The API reads the same numbers.
  const res = await svc.api!.inject({ method: 'GET', url: `/api/v1/runs/${runId}/report` })
  assert.equal(res.statusCode, 200)
  const report = res.json<{ operations: number; completeness: { sent: number; counted: number } }>()
  assert.equal(report.operations, delivered)
  assert.equal(report.completeness.sent, delivered)
  const text = await svc.api!.inject({ method: 'GET', url: `/api/v1/runs/${runId}/report?format=text` })
  assert.match(text.body, /^\[READ\], 99thPercentileLatency\(us\), [\d.]+$/m)
  // Release A vs release B: this run against a second, different run. The
  // expected changes are computed here, independently of the compare code:
  // throughput from the drivers' own counts and run times, averages and p99
  // from the raw events (exact), not from the windows.
  const runB = `${runId}-b`
  const outcomeB = await driveClient(kafka, te.env, [
    ...'-P workloads/workloadb -p recordcount=2000 -p operationcount=12000 -p memory.cachesize=50'.split(' '),
    ...`-threads 2 -db memory --run-id ${runB} --client-id client-c`.split(' '),
  ])
  await waitForRun(ch, runB, { events: outcomeB.delivery.sentEvents, clients: 1 })
  const exact = async (r: string): Promise<Map<string, { n: number; avg: number; p99: number }>> => {
    const rows = await queryRows<{ op: string; n: string; avg: number; s: number[] }>(
      ch,
      `
      SELECT op, count() AS n, avg(latency_us) AS avg, arraySort(groupArray(latency_us)) AS s
      FROM benchstream.ops WHERE run_id = {r:String} AND status = 'OK' GROUP BY op`,
      { r },
    )
    return new Map(
      rows.map((x) => [x.op, { n: Number(x.n), avg: x.avg, p99: Number(x.s[quantileRank(0.99, x.s.length) - 1]) }]),
    )
  }
  const [ea, eb] = [await exact(runId), await exact(runB)]
  // Run times as the drivers reported them in their end records (stored in whole ms).
  const runtimeOf = async (r: string): Promise<number> =>
    Number(
      (
        await queryRows<{ ms: string }>(ch, `SELECT runtime_ms AS ms FROM benchstream.runs WHERE run_id = {r:String}`, {
          r,
        })
      )[0]!.ms,
    )
  const runtimeA = await runtimeOf(runId)
  const runtimeB = await runtimeOf(runB)
  assert.ok(Math.abs(runtimeB - outcomeB.runtimeMs) <= 0.5, "the stored run time is the driver's")
  const pct = (x: number, y: number): number => ((y - x) / x) * 100
  // Two different workloads are not comparable: refused, then compared with force=true.
  const refused = await svc.api!.inject({ method: 'GET', url: `/api/v1/compare?baseline=${runId}&candidate=${runB}` })
  assert.equal(refused.statusCode, 409)
  const cmp = await svc.api!.inject({
    method: 'GET',
    url: `/api/v1/compare?baseline=${runId}&candidate=${runB}&force=true`,
  })
  assert.equal(cmp.statusCode, 200)
  const figs = cmp.json<{ figures: Array<{ op: string; figure: string; changePercent: number | null }> }>().figures
  const change = (op: string, figure: string): number =>
    figs.find((x) => x.op === op && x.figure === figure)!.changePercent!
  const tpA = (delivered * 1000) / runtimeA
  const tpB = (outcomeB.delivery.sentEvents * 1000) / runtimeB
  assert.ok(
    Math.abs(change('OVERALL', 'throughput') - pct(tpA, tpB)) < 0.01,
    `OVERALL throughput change ${change('OVERALL', 'throughput')} vs ${pct(tpA, tpB)}`,
  )
  // OVERALL has no latency rows: a percentile over a mix of operations is not compared (the first version showed 0
  // there).
  assert.deepEqual(
    figs
      .filter((x) => x.op === 'OVERALL')
      .map((x) => x.figure)
      .filter((f) => f !== 'throughput' && f !== 'error_rate' && f !== 'server_cache_hit_ratio'),
    [],
  )
  let checked = 0
  for (const [op, a] of ea) {
    const b = eb.get(op)
    if (b === undefined || !figs.some((x) => x.op === op)) continue
    checked++
    assert.ok(
      Math.abs(change(op, 'throughput') - pct((a.n * 1000) / runtimeA, (b.n * 1000) / runtimeB)) < 0.01,
      `${op} throughput change`,
    )
    assert.ok(
      Math.abs(change(op, 'avg') - pct(a.avg, b.avg)) < 0.01,
      `${op} average latency change ${change(op, 'avg')} vs exact ${pct(a.avg, b.avg)}`,
    )
    // p99 from histograms is within 0.4% of exact on each side: the change within about 1 point.
    assert.ok(
      Math.abs(change(op, 'p99') - pct(a.p99, b.p99)) < 1 + 0.01 * Math.abs(pct(a.p99, b.p99)),
      `${op} p99 change ${change(op, 'p99')} vs exact ${pct(a.p99, b.p99)}`,
    )
  }
  assert.ok(checked >= 2, `operations present in both runs were compared (${checked})`)
  const badCmp = await svc.api!.inject({ method: 'GET', url: '/api/v1/compare?baseline=a%20b&candidate=x' })
  assert.equal(badCmp.statusCode, 400)
  const missing = await svc.api!.inject({ method: 'GET', url: '/api/v1/runs/no-such-run/report' })
  assert.equal(missing.statusCode, 404)
  assert.equal(missing.json<{ code: string }>().code, 'BS_ERR_NOT_FOUND')
  const bad = await svc.api!.inject({
    method: 'POST',
    url: '/api/v1/query',
    payload: { sql: 'DROP TABLE benchstream.ops' },
  })
  assert.equal(bad.statusCode, 400)
})
