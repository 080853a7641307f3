/**
 * Server mode (CLICKHOUSE_URL) end to end against a ClickHouse server: the stand-in test/run.mjs starts with
 * deploy/local/clickhouse.sh (npm run test:server). Two `benchstream server` processes share the server (one
 * consumer group, one database) while an embedded `benchstream server` reads the same topic in a group of its own:
 *
 *  - the migrations, applied by the servers at start (both at once), are all on the server;
 *  - the drivers' operations are counted exactly per operation and status, every raw event once, and the windowed
 *    percentiles are within 1% of exact ones over the raw events (the demo's checks);
 *  - the two replicas split the partitions, and their APIs read the same report; the embedded server, fed the same
 *    events, gives an equal report;
 *  - /api/v1/query and /clickhouse answer from the server, in the formats query tools ask for, and refuse a write.
 *
 * And `benchstream demo` itself in server mode: its checks pass.
 */
import assert from 'node:assert/strict'
import { readdirSync } from 'node:fs'
import path from 'node:path'
import { test } from 'node:test'
import { createKafka } from '../../services/adapters/kafka/client.js'
import { KafkaEventSink } from '../../services/adapters/kafka/event-sink.js'
import { BINDING_NAMES, createBinding } from '../../services/adapters/datastores/index.js'
import { readInfraConfig } from '../../services/common/infra-config.js'
import { repoRoot } from '../../services/common/repo-root.js'
import { NullSink } from '../../services/core/ports/event-sink.js'
import { CoreWorkload } from '../../services/core/workload/core-workload.js'
import { runDriver } from '../../services/driver/app.js'
import { parseDriverArgs } from '../../services/driver/config.js'
import { runPhase } from '../../services/driver/runner.js'
import { waitFor } from '../helpers/env.js'
import {
  benchstream,
  rawClient,
  rows,
  serverTestEnv,
  startServerProcess,
  tierServer,
} from '../helpers/clickhouse-server.js'

const server = tierServer()
const skip = typeof server === 'string' ? server : false

async function getJson<T>(url: string): Promise<T> {
  const r = await fetch(url)
  if (r.status !== 200) throw new Error(`GET ${url}: ${r.status} ${await r.text()}`)
  return (await r.json()) as T
}

test(
  'server mode: migrations, exact counts and percentiles, two replicas on one ClickHouse, the same report as ' +
    'embedded, /api/v1/query and /clickhouse',
  { skip, timeout: 600_000 },
  async (t) => {
    const s = server as Exclude<typeof server, string>
    const te = serverTestEnv(t, s, { BENCHSTREAM_TOPIC_PARTITIONS: '4' })
    const db = te.env.CLICKHOUSE_DATABASE!
    const c = rawClient(t, s)
    const [a, b] = await Promise.all([startServerProcess(t, te.env), startServerProcess(t, te.env)])
    const e = await startServerProcess(t, {
      ...te.env,
      CLICKHOUSE_URL: '',
      CLICKHOUSE_DATABASE: 'benchstream',
      BENCHSTREAM_DATA_DIR: path.join(te.dataDir, 'embedded'),
      PROCESSOR_GROUP_ID: `${te.env.PROCESSOR_GROUP_ID}-embedded`,
      BENCHSTREAM_TOPIC_LEADER: `${te.env.BENCHSTREAM_TOPIC_LEADER}-embedded`,
      ALERTS_ENABLED: 'false',
    })

    // Every migration file, applied once the two servers are up (they migrated at the same time).
    const files = readdirSync(path.join(repoRoot(), 'schemas', 'clickhouse'))
      .filter((f) => /^\d{4}-.*\.sql$/.test(f))
      .map((f) => Number(f.slice(0, 4)))
    const versions = await rows<{ version: number }>(
      c,
      `SELECT DISTINCT version FROM ${db}.schema_migrations ORDER BY version`,
    )
    assert.deepEqual(
      versions.map((v) => Number(v.version)),
      files.sort((x, y) => x - y),
    )
    const [ops] = await rows<{ statement: string }>(c, `SHOW CREATE TABLE ${db}.ops`)
    assert.match(ops!.statement, /ENGINE = MergeTree[\s\S]*non_replicated_deduplication_window = 10000/)

    // Two clients of one run, as in the e2e pipeline test.
    const infra = readInfraConfig(te.env)
    const kafka = createKafka(infra.kafka, 'server-mode')
    const runId = `server-${Date.now()}`
    const sent: Record<string, number> = {}
    let delivered = 0
    for (const [i, clientId] of ['client-a', 'client-b'].entries()) {
      const cfg = parseDriverArgs(
        'run',
        [
          '-P',
          'workloads/workloada',
          '-p',
          'recordcount=2000',
          '-p',
          `operationcount=${15_000 + i * 5000}`,
          '-threads',
          '4',
          '-db',
          'memory',
          '--run-id',
          runId,
          '--client-id',
          clientId,
        ],
        te.env,
        { bindings: BINDING_NAMES },
      )
      const workload = CoreWorkload.fromProperties(cfg.properties)
      const binding = createBinding(cfg.binding, cfg.properties)
      await runPhase(workload, binding, new NullSink(), {
        phase: 'load',
        threads: 2,
        target: 0,
        operationCount: 0,
        maxExecutionTimeS: 0,
        statusIntervalS: 0,
      })
      const sink = await KafkaEventSink.open(kafka, { topic: infra.topics.events, runId, clientId })
      const outcome = await runDriver(cfg, { workload, binding, sink, status: () => undefined })
      await sink.close()
      assert.equal(outcome.delivery.undelivered, 0)
      delivered += outcome.delivery.sentEvents
      for (const [k, n] of Object.entries(outcome.delivery.sent)) sent[k] = (sent[k] ?? 0) + n
    }
    assert.equal(delivered, 35_000)

    await waitFor(
      'every event and both end records on the server',
      async () => {
        const [r] = await rows<{ n: string; ended: string }>(
          c,
          `SELECT (SELECT sum(count) FROM ${db}.op_windows WHERE run_id = {r:String}) AS n,
                  (SELECT count() FROM ${db}.run_clients WHERE run_id = {r:String} AND phase = 'end') AS ended`,
          { r: runId },
        )
        return Number(r!.n) === delivered && Number(r!.ended) === 2 ? true : undefined
      },
      180_000,
    ).catch((err: Error) => {
      throw new Error(`${err.message}\nreplica A:\n${a.output().slice(-2000)}\nreplica B:\n${b.output().slice(-2000)}`)
    })
    await waitFor(
      'every event in the embedded server',
      async () =>
        (await getJson<{ operations: number }>(`${e.api}/api/v1/runs/${runId}/report`)).operations === delivered
          ? true
          : undefined,
      180_000,
    )

    // The demo's checks on the server: exact counts, every raw event once, percentiles against exact ones.
    const perOp = await rows<{ k: string; n: string }>(
      c,
      `SELECT concat(op, '/', status) AS k, sum(count) AS n FROM ${db}.op_windows WHERE run_id = {r:String} GROUP BY k`,
      { r: runId },
    )
    assert.deepEqual(Object.fromEntries(perOp.map((r) => [r.k, Number(r.n)])), sent)
    const [raw] = await rows<{ n: string; distinct: string }>(
      c,
      `SELECT count() AS n, uniqExact(src_partition, src_offset, start, thread, client_id) AS distinct
       FROM ${db}.ops WHERE run_id = {r:String}`,
      { r: runId },
    )
    assert.equal(Number(raw!.n), delivered, 'every raw event stored')
    assert.equal(Number(raw!.distinct), delivered, 'no raw event stored twice')
    // SQL functions are global on a server (CREATE FUNCTION has no database).
    const acc = await rows<{ op: string; q: number; windows: number; exact: number }>(
      c,
      `SELECT w.op AS op, q, bs_quantile(q, w.h) AS windows, e.s[bs_rank(q, length(e.s))] AS exact
       FROM (SELECT op, sumMap(hist) AS h FROM ${db}.op_windows WHERE run_id = {r:String} GROUP BY op) AS w
       JOIN (SELECT op, arraySort(groupArray(latency_us)) AS s FROM ${db}.ops WHERE run_id = {r:String} GROUP BY op)
         AS e ON e.op = w.op
       ARRAY JOIN [0.5, 0.95, 0.99, 0.999] AS q`,
      { r: runId },
    )
    assert.equal(acc.length, 8)
    for (const r of acc)
      assert.ok(
        Math.abs(r.windows - r.exact) <= Math.max(0.01 * r.exact, 0.5),
        `${r.op} p${r.q * 100}: windows ${r.windows} vs exact ${r.exact}`,
      )

    // The replicas split the partitions between them.
    type Health = { partitions: { workers: Array<{ partition: number }> } }
    const owned = async (api: string): Promise<number[]> =>
      (await getJson<Health>(`${api}/healthz`)).partitions.workers.map((w) => w.partition)
    const [pa, pb] = [await owned(a.api), await owned(b.api)]
    assert.ok(pa.length > 0 && pb.length > 0, `both replicas consume: A ${pa.join(',')} B ${pb.join(',')}`)
    assert.deepEqual(
      [...pa, ...pb].sort((x, y) => x - y),
      [0, 1, 2, 3],
    )

    // One report, whichever replica is asked, and the embedded server's equal to it.
    const report = (api: string): Promise<Record<string, unknown>> =>
      getJson<Record<string, unknown>>(`${api}/api/v1/runs/${runId}/report`)
    const [ra, rb, re] = [await report(a.api), await report(b.api), await report(e.api)]
    assert.equal(ra.operations, delivered)
    assert.deepEqual(rb, ra, 'both replicas read the same report')
    assert.deepEqual(re, ra, 'the embedded engine reports the same events identically')
    const text = async (api: string): Promise<string> =>
      (await fetch(`${api}/api/v1/runs/${runId}/report?format=text`)).text()
    assert.equal(await text(e.api), await text(a.api), 'the YCSB-format text reports are identical')

    // Ad hoc SQL and the ClickHouse HTTP endpoint, read from the server.
    const q = await fetch(`${a.api}/api/v1/query`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({
        sql: `SELECT op, count() AS n FROM ops WHERE run_id = '${runId}' GROUP BY op ORDER BY op`,
      }),
    })
    assert.equal(q.status, 200, await q.clone().text())
    const qrows = ((await q.json()) as { rows: Array<{ op: string; n: number }> }).rows
    assert.equal(
      qrows.reduce((x, r) => x + Number(r.n), 0),
      delivered,
    )
    const ch = (sql: string): Promise<Response> =>
      fetch(`${a.api}/clickhouse/?${new URLSearchParams({ query: sql }).toString()}`)
    const counts = `SELECT op, count() AS n FROM ops WHERE run_id = '${runId}' GROUP BY op ORDER BY op`
    const expected = Object.entries(
      Object.entries(sent).reduce<Record<string, number>>((m, [k, n]) => {
        const op = k.split('/')[0]!
        m[op] = (m[op] ?? 0) + n
        return m
      }, {}),
    ).sort(([x], [y]) => x.localeCompare(y))
    const tsv = await ch(`${counts} FORMAT TSV`)
    assert.equal(tsv.status, 200)
    assert.equal(await tsv.text(), expected.map(([op, n]) => `${op}\t${n}\n`).join(''))
    for (const [format, pattern] of [
      ['TSVRaw', /^READ\t\d+\n/],
      ['CSVWithNames', /^"op","n"\n"READ",\d+\n/],
      ['JSON', /"data":/],
      ['JSONEachRow', /^\{"op":"READ","n":"?\d+"?\}\n/],
      ['Pretty', /┃ op/],
      ['Vertical', /^Row 1:/],
      ['Markdown', /^\| op \| n \|/],
      ['XML', /^<\?xml/],
      ['Values', /^\('READ',\d+\)/],
    ] as const) {
      const r = await ch(`${counts} FORMAT ${format}`)
      const body = await r.text()
      assert.equal(r.status, 200, `${format}: ${body}`)
      assert.match(body, pattern, format)
    }
    const native = await ch(`${counts} FORMAT Native`)
    assert.equal(native.status, 200)
    assert.ok((await native.arrayBuffer()).byteLength > 0)
    const tables = await (await ch('SELECT name FROM system.tables ORDER BY name FORMAT TSV')).text()
    assert.ok(tables.split('\n').includes('op_windows'), tables)
    const write = await fetch(`${a.api}/clickhouse/`, { method: 'POST', body: `DROP TABLE ${db}.ops` })
    assert.notEqual(write.status, 200)
    const [still] = await rows<{ n: string }>(c, `SELECT count() AS n FROM ${db}.ops WHERE run_id = {r:String}`, {
      r: runId,
    })
    assert.equal(Number(still!.n), delivered)
  },
)

test(
  'benchstream demo in server mode: its checks pass (counts exact, percentiles within 1%)',
  { skip, timeout: 300_000 },
  async (t) => {
    const s = server as Exclude<typeof server, string>
    const te = serverTestEnv(t, s)
    const demo = benchstream(['demo', '--seconds', '6', '--target', '4000', '--records', '10000'], {
      ...te.env,
      API_PORT: '0',
      METRICS_PORT: '0',
    })
    await demo.exited()
    const out = demo.output()
    assert.equal(demo.child.exitCode, 0, out.slice(-4000))
    assert.match(out, new RegExp(`stored in ClickHouse \\(${s.url.replace(/[.]/g, '\\.')}/?\\)`))
    const exact = [...out.matchAll(/^ {2}(\S+\/\S+)\s+driver sent\s+(\d+)\s+windows hold\s+(\d+)\s+(.*)$/gm)]
    assert.ok(exact.length >= 2, out.slice(-3000))
    for (const m of exact) assert.equal(m[4], 'exact match', m[0])
    const errors = [...out.matchAll(/^ {2}(\S+)\s+p([\d.]+)\s+windows .* error ([\d.]+)%$/gm)]
    assert.ok(errors.length >= 8, out.slice(-3000))
    for (const m of errors) assert.ok(Number(m[3]) <= 1, m[0])
  },
)
