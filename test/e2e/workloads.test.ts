/**
 * YCSB's six core workloads, exactly as shipped in workloads/ (only record
 * and operation counts made smaller), through the driver against every
 * binding's real datastore, through Kafka and one processor into ClickHouse.
 * For each (workload, binding) run: the driver's per-operation counts equal
 * the op_windows counts and the raw `ops` events exactly, every operation
 * succeeded, and the Redis and PostgreSQL runs carry their server cache
 * counters in server_metrics.
 */
import assert from 'node:assert/strict'
import { randomUUID } from 'node:crypto'
import { after, before, test } from 'node:test'
import { Redis } from 'ioredis'
import pg from 'pg'
import { queryRows } from '../../services/adapters/clickhouse/client.js'
import { createKafka } from '../../services/adapters/kafka/client.js'
import { KafkaEventSink } from '../../services/adapters/kafka/event-sink.js'
import { readInfraConfig } from '../../services/common/infra-config.js'
import { CoreWorkload } from '../../services/core/workload/core-workload.js'
import type { Report } from '../../services/core/reports/ycsb-report.js'
import { runDriver } from '../../services/driver/app.js'
import { BINDING_NAMES, createBinding, type BindingName } from '../../services/adapters/datastores/index.js'
import { parseDriverArgs } from '../../services/driver/config.js'
import { NullSink } from '../../services/core/ports/event-sink.js'
import { runPhase } from '../../services/driver/runner.js'
import { startServer, type Server } from '../../services/server/main.js'
import { testEnv, waitFor, type TestEnv } from '../helpers/env.js'
import { startPostgres, startRedis, type TestServer } from '../helpers/servers.js'

const WORKLOADS = ['a', 'b', 'c', 'd', 'e', 'f'] as const
const BINDINGS = ['memory', 'redis', 'postgres'] as const satisfies readonly BindingName[]
/** Small enough for 18 runs on two shared cores, large enough for every operation type to occur. */
const RECORDS = 500
const OPERATIONS = 2000
const THREADS = 4
/** The counters each binding's sampleServerMetrics reports. */
const SERVER_COUNTERS: Partial<Record<BindingName, readonly string[]>> = {
  redis: ['keyspace_hits', 'keyspace_misses'],
  postgres: ['blks_hit', 'blks_read'],
}

let te: TestEnv
let svc: Server
let redis: TestServer
let postgres: TestServer
let kafka: ReturnType<typeof createKafka>
const suffix = randomUUID().slice(0, 6)

before(async () => {
  te = testEnv()
  ;[redis, postgres] = await Promise.all([startRedis(), startPostgres()])
  svc = await startServer(te.env, { api: false })
  kafka = createKafka(readInfraConfig(te.env).kafka, 'e2e-workloads')
})
after(async () => {
  await svc?.stop()
  await Promise.all([redis?.stop(), postgres?.stop()])
  te?.cleanup()
})

/** Empties the datastore so each workload loads into a fresh table, as a YCSB run would. */
async function resetStore(binding: BindingName): Promise<void> {
  if (binding === 'redis') {
    const r = new Redis({ port: redis.port })
    await r.flushall()
    await r.quit()
  } else if (binding === 'postgres') {
    const c = new pg.Client({ connectionString: postgres.url })
    await c.connect()
    await c.query('DROP TABLE IF EXISTS usertable')
    await c.end()
  }
}

/** Count per operation, and per OP/STATUS, from a driver report. */
function reportCounts(report: Report): { perOp: Record<string, number>; statuses: Record<string, number> } {
  const perOp: Record<string, number> = {}
  const statuses: Record<string, number> = {}
  for (const m of report.measurements) {
    for (const [status, n] of Object.entries(m.returns)) {
      const op = m.name
      perOp[op] = (perOp[op] ?? 0) + n
      statuses[`${op}/${status}`] = n
    }
  }
  return { perOp, statuses }
}

for (const binding of BINDINGS) {
  for (const w of WORKLOADS) {
    test(`workload${w} on ${binding}: driver counts = op_windows = ops`, async () => {
      const runId = `wl-${w}-${binding}-${suffix}`
      const infra = readInfraConfig(te.env)
      await resetStore(binding)
      const connection =
        binding === 'redis'
          ? ['-p', `redis.port=${redis.port}`]
          : binding === 'postgres'
            ? ['-p', `postgres.url=${postgres.url}`]
            : []
      const cfg = parseDriverArgs(
        'run',
        [
          '-P',
          `workloads/workload${w}`,
          '-p',
          `recordcount=${RECORDS}`,
          '-p',
          `operationcount=${OPERATIONS}`,
          ...connection,
          '-threads',
          String(THREADS),
          '-db',
          binding,
          '--run-id',
          runId,
          '--client-id',
          'c1',
        ],
        te.env,
        { bindings: BINDING_NAMES },
      )
      const workload = CoreWorkload.fromProperties(cfg.properties)
      const db = createBinding(cfg.binding, cfg.properties, { threads: cfg.threads })
      await db.init()
      let report: Report
      let sent: Record<string, number>
      try {
        const load = await runPhase(workload, db, new NullSink(), {
          phase: 'load',
          threads: THREADS,
          target: 0,
          operationCount: 0,
          maxExecutionTimeS: 0,
          statusIntervalS: 0,
        })
        assert.deepEqual(reportCounts(load.report).statuses, { [`INSERT/OK`]: RECORDS }, 'load phase')
        const sink = await KafkaEventSink.open(kafka, { topic: infra.topics.events, runId, clientId: 'c1' })
        try {
          const outcome = await runDriver(cfg, { workload, binding: db, sink, status: () => undefined })
          assert.equal(outcome.delivery.undelivered, 0)
          report = outcome.report
          sent = outcome.delivery.sent
        } finally {
          await sink.close()
        }
      } finally {
        await db.cleanup()
      }
      assert.equal(report.operations, OPERATIONS)
      const { perOp, statuses } = reportCounts(report)
      // Every operation of every standard workload succeeds on a correct binding.
      for (const k of Object.keys(statuses)) assert.match(k, /\/OK$/, `${k}: ${statuses[k]}`)
      assert.deepEqual(sent, statuses, 'delivered events by OP/STATUS')

      // Each counter is sampled when the run starts and once more when it ends.
      const counters = SERVER_COUNTERS[binding] ?? []
      await waitFor(
        `run ${runId} in ClickHouse`,
        async () => {
          const [r] = await queryRows<{ windows: string; ops: string; metrics: string }>(
            svc.ch,
            `SELECT
            (SELECT sum(count) FROM benchstream.op_windows WHERE run_id = {runId:String}) AS windows,
            (SELECT count() FROM benchstream.ops WHERE run_id = {runId:String}) AS ops,
            (SELECT countIf(n >= 2) FROM (SELECT name, count() AS n FROM benchstream.server_metrics
                                          WHERE run_id = {runId:String} AND name IN {names:Array(String)}
                                          GROUP BY name)) AS metrics`,
            { runId, names: [...counters] },
          )
          return Number(r!.windows) === OPERATIONS &&
            Number(r!.ops) === OPERATIONS &&
            Number(r!.metrics) === counters.length
            ? true
            : undefined
        },
        60_000,
        250,
      )

      const windows = await queryRows<{ op: string; status: string; n: string }>(
        svc.ch,
        'SELECT op, status, sum(count) AS n FROM benchstream.op_windows WHERE run_id = {runId:String} ' +
          'GROUP BY op, status',
        { runId },
      )
      assert.deepEqual(
        Object.fromEntries(windows.map((r) => [`${r.op}/${r.status}`, Number(r.n)])),
        statuses,
        'op_windows by OP/STATUS',
      )
      const ops = await queryRows<{ op: string; n: string }>(
        svc.ch,
        'SELECT op, count() AS n FROM benchstream.ops WHERE run_id = {runId:String} GROUP BY op',
        { runId },
      )
      assert.deepEqual(Object.fromEntries(ops.map((r) => [r.op, Number(r.n)])), perOp, 'ops by operation')

      if (counters.length > 0) {
        const samples = await queryRows<{ name: string; source: string; n: string; first: number; last: number }>(
          svc.ch,
          'SELECT name, any(source) AS source, count() AS n, argMin(value, at) AS first, argMax(value, ' +
            'at) AS last FROM benchstream.server_metrics WHERE run_id = {runId:String} GROUP BY name ORDER BY name',
          { runId },
        )
        assert.deepEqual(
          samples.map((s) => s.name),
          [...counters].sort(),
        )
        for (const s of samples) {
          assert.equal(s.source, binding)
          assert.ok(Number(s.n) >= 2, `${s.name}: ${s.n} samples`)
          assert.ok(s.last >= s.first, `${s.name} is cumulative: ${s.first} -> ${s.last}`)
        }
        if (binding === 'redis') {
          // Every workload reads (or scans) loaded records: Redis counts each as a hit at once.
          const hits = samples.find((s) => s.name === 'keyspace_hits')!
          assert.ok(hits.last > hits.first, `keyspace_hits grew: ${hits.first} -> ${hits.last}`)
        }
      }
    })
  }
}
