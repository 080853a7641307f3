/**
 * No message can stop the processor, and one stuck partition never blocks
 * the others. Real broker, real ClickHouse engine.
 *
 * Poison records between good events: a run record whose atUs (1e300) no
 * DateTime64 can hold, one carrying 900 KB of text, and one whose label
 * passes every check of ours but that ClickHouse itself refuses (a lone
 * UTF-16 surrogate: CANNOT_PARSE_ESCAPE_SEQUENCE). The good events are all
 * counted exactly; each poison record is in the dead-letter topic and in
 * dead_letters with its reason (the last with ClickHouse's own error), and
 * /healthz stays 200.
 */
import assert from 'node:assert/strict'
import { test } from 'node:test'
import { RECORD_KIND } from '../../schemas/events.v1.js'
import { openClickHouse, queryRows, type Connection } from '../../services/adapters/clickhouse/client.js'
import { createKafka } from '../../services/adapters/kafka/client.js'
import { encodeJsonRecord } from '../../services/core/codec/record-encoders.js'
import { readInfraConfig } from '../../services/common/infra-config.js'
import { startServer } from '../../services/server/main.js'
import { testEnv, waitFor } from '../helpers/env.js'
import { EventProducer } from '../helpers/produce.js'
import { sameAsTruth, sortKeys, stored } from '../helpers/stored.js'

/** Samples /healthz every 100 ms until stopped; returns the longest run of non-200 answers, ms. */
function watchHealth(get: () => Promise<{ status: number; body: string }>): {
  stop(): Promise<{ longestBadMs: number; samples: number; bad: number; seen: string[] }>
} {
  let running = true
  let longest = 0
  let badSince: number | undefined
  let samples = 0
  let bad = 0
  const seen: string[] = []
  const loop = (async () => {
    while (running) {
      const { status, body } = await get()
      samples++
      const now = Date.now()
      if (status !== 200) {
        if (seen.length < 5) seen.push(body.slice(0, 300))
        bad++
        badSince ??= now
        longest = Math.max(longest, now - badSince)
      } else badSince = undefined
      await new Promise((r) => setTimeout(r, 100))
    }
  })()
  return {
    async stop() {
      running = false
      await loop
      return { longestBadMs: longest, samples, bad, seen }
    },
  }
}

test('poison records are dead-lettered with their reason and every good event around them is counted', async (t) => {
  const te = testEnv({ HEALTH_FAILING_MS: '5000' })
  t.after(te.cleanup)
  const svc = await startServer(te.env, { api: true })
  t.after(() => svc.stop())
  const health = watchHealth(async () => {
    const r = await svc.api!.inject({ method: 'GET', url: '/healthz' })
    return { status: r.statusCode, body: r.body }
  })
  const infra = readInfraConfig(te.env)
  const kafka = createKafka(infra.kafka, 'poison')
  const p = await EventProducer.open(kafka, infra.topics.events, 'poison-run')
  t.after(() => p.close())
  const now = Date.now() * 1000
  const start = {
    kind: RECORD_KIND.RUN_LIFECYCLE,
    phase: 'start',
    runId: 'poison-run',
    clientId: 'client-0',
    atUs: now,
    labels: {},
    workload: 'w',
    binding: 'memory',
    threads: 1,
    target: 0,
  } as const
  const poison = [
    { reason: 'timestamp_out_of_range', value: encodeJsonRecord({ ...start, atUs: 1e300 }) },
    // 900 KB: as much text as fits a message under the broker's default message.max.bytes (1 MB).
    { reason: 'record_too_large', value: encodeJsonRecord({ ...start, workload: 'x'.repeat(900 * 1024) }) },
    {
      reason: 'store_rejected',
      value: encodeJsonRecord({ ...start, clientId: 'client-9', labels: { broken: 'half a pair \ud800' } }),
    },
    {
      reason: 'store_rejected',
      value: encodeJsonRecord({
        kind: RECORD_KIND.SERVER_METRICS,
        runId: 'poison-run',
        clientId: 'client-9',
        atUs: now,
        source: 'redis \ud800',
        values: { hits: 1 },
      }),
    },
  ]
  await p.sendRaw([encodeJsonRecord(start)])
  for (const x of poison) {
    await p.send(5000)
    await p.sendRaw([x.value])
  }
  await p.send(5000)

  const ch = svc.ch
  let last = ''
  await waitFor(
    'good events and dead letters',
    async () => {
      const s = await stored(ch, 'poison-run')
      const dl = await queryRows<{ n: string }>(ch, 'SELECT count() AS n FROM benchstream.dead_letters')
      last =
        `stored ${s.events}/${p.truth.events}, dead letters ${dl[0]!.n}/${poison.length}, processor ` +
        `${JSON.stringify(svc.processor.stats)}`
      return sameAsTruth(s, p.truth) && Number(dl[0]!.n) === poison.length ? true : undefined
    },
    120_000,
  ).catch((err: Error) => {
    throw new Error(`${err.message}; last: ${last}`)
  })
  const s = await stored(ch, 'poison-run')
  assert.equal(s.events, p.truth.events)
  assert.deepEqual(sortKeys(s.byOp), sortKeys(p.truth.byOp))
  assert.equal(s.raw, p.truth.events)
  // The good start record of client-0 is stored; the refused one of client-9 is not.
  const clients = await queryRows<{ client_id: string }>(
    ch,
    `SELECT client_id FROM benchstream.run_clients WHERE run_id = 'poison-run'`,
  )
  assert.deepEqual(
    clients.map((c) => c.client_id),
    ['client-0'],
  )

  const byReason = await queryRows<{ reason: string; n: string; detail: string }>(
    ch,
    'SELECT reason, count() AS n, any(detail) AS detail FROM benchstream.dead_letters GROUP BY reason ORDER BY reason',
  )
  assert.deepEqual(
    byReason.map((r) => [r.reason, Number(r.n)]),
    [
      ['record_too_large', 1],
      ['store_rejected', 2],
      ['timestamp_out_of_range', 1],
    ],
  )
  const rejected = byReason.find((r) => r.reason === 'store_rejected')!
  assert.match(
    rejected.detail,
    /^benchstream\.(run_clients|server_metrics): .*CANNOT_PARSE_ESCAPE_SEQUENCE|surrogate/i,
    "the dead letter carries ClickHouse's own error",
  )
  assert.equal(svc.processor.stats.rejectedByReason.store_rejected, 2)

  // The topic has each poison message, keyed by where it came from, with the reason in a header.
  const reasons: string[] = []
  const consumer = kafka.consumer({ groupId: `${te.env.PROCESSOR_GROUP_ID}-dlq` })
  await consumer.connect()
  await consumer.subscribe({ topic: infra.topics.deadLetter, fromBeginning: true })
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`dead-letter topic: ${reasons.join(',')}`)), 30_000)
    void consumer.run({
      eachMessage: async ({ message }) => {
        reasons.push(String(message.headers?.reason))
        if (reasons.length >= poison.length) {
          clearTimeout(timer)
          resolve()
        }
      },
    })
  })
  await consumer.disconnect()
  assert.deepEqual(reasons.sort(), poison.map((x) => x.reason).sort())

  const h = await health.stop()
  assert.ok(
    h.samples >= 5 && h.longestBadMs === 0,
    `/healthz stayed 200 (${h.bad} of ${h.samples} samples were not: ${h.seen.join(' | ')})`,
  )
})

test(
  'a partition whose writes fail is paused and retried alone; the others go on; /healthz says ' +
    'which, then recovers',
  async (t) => {
    const te = testEnv({
      HEALTH_FAILING_MS: '1500',
      INSERT_RETRY_MIN_MS: '100',
      INSERT_RETRY_MAX_MS: '400',
      BENCHSTREAM_TOPIC_PARTITIONS: '3',
    })
    t.after(te.cleanup)
    const infra = readInfraConfig(te.env)
    let stuck = true
    let refusedInserts = 0
    // A connection in front of the real engine that fails every insert of partition 0's batches.
    const ch = openClickHouse(infra.clickhouse, {
      wrapConnection: (c: Connection): Connection =>
        new Proxy(c, {
          get(target, prop, receiver) {
            const v = Reflect.get(target, prop, receiver) as unknown
            if (prop === 'insert' && typeof v === 'function') {
              return (
                params: { clickhouse_settings?: { insert_deduplication_token?: string } },
                ...rest: unknown[]
              ) => {
                if (stuck && /\/0\/\d+-\d+:/.test(params.clickhouse_settings?.insert_deduplication_token ?? '')) {
                  refusedInserts++
                  return Promise.reject(new Error('read ECONNRESET (simulated: partition 0 cannot be written)'))
                }
                return (v as (...a: unknown[]) => unknown).apply(target, [params, ...rest])
              }
            }
            return typeof v === 'function' ? (v as (...a: unknown[]) => unknown).bind(target) : v
          },
        }),
    })
    const svc = await startServer(te.env, { api: true, clickhouse: ch })
    t.after(() => svc.stop())
    const p = await EventProducer.open(createKafka(infra.kafka, 'stuck'), infra.topics.events, 'stuck-run')
    t.after(() => p.close())
    await p.send(60_000, { clients: 12 })
    const perPartition = async (): Promise<Map<number, number>> =>
      new Map(
        (
          await queryRows<{ p: number; n: string }>(
            ch,
            `SELECT src_partition AS p, sum(count) AS n FROM benchstream.op_windows ` +
              `WHERE run_id = 'stuck-run' GROUP BY p`,
          )
        ).map((r) => [Number(r.p), Number(r.n)]),
      )
    // The other partitions are written while partition 0 fails.
    await waitFor(
      'partitions 1 and 2 stored while 0 fails',
      async () => {
        const m = await perPartition()
        return (m.get(1) ?? 0) > 0 && (m.get(2) ?? 0) > 0 && refusedInserts >= 3 ? true : undefined
      },
      60_000,
    )
    assert.equal((await perPartition()).get(0) ?? 0, 0, 'nothing of partition 0 is written while it fails')
    const held = svc.processor.heldBack()
    assert.deepEqual(
      held.map((h) => h.partition),
      [0],
    )
    // Health says which partition, once it has failed longer than HEALTH_FAILING_MS.
    const sick = await waitFor(
      '/healthz 503',
      async () => {
        const r = await svc.api!.inject({ method: 'GET', url: '/healthz' })
        return r.statusCode === 503 ? r.json<{ ok: boolean; problems: string[] }>() : undefined
      },
      20_000,
    )
    assert.equal(sick.ok, false)
    assert.match(sick.problems.join('\n'), /partition 0: ClickHouse has refused its writes for \d+ s/)
    // More events keep flowing to the healthy partitions.
    const before = await perPartition()
    await p.send(30_000, { clients: 12 })
    await waitFor(
      'healthy partitions keep going',
      async () => {
        const m = await perPartition()
        return (m.get(1) ?? 0) > (before.get(1) ?? 0) && (m.get(2) ?? 0) > (before.get(2) ?? 0) ? true : undefined
      },
      60_000,
    )
    stuck = false
    await waitFor(
      'everything exact after recovery',
      async () => (sameAsTruth(await stored(ch, 'stuck-run'), p.truth) ? true : undefined),
      60_000,
    )
    const s = await stored(ch, 'stuck-run')
    assert.deepEqual(sortKeys(s.byOp), sortKeys(p.truth.byOp))
    assert.equal(s.raw, p.truth.events)
    await waitFor(
      '/healthz 200 again',
      async () => ((await svc.api!.inject({ method: 'GET', url: '/healthz' })).statusCode === 200 ? true : undefined),
      20_000,
    )
    assert.deepEqual(svc.processor.heldBack(), [])
  },
)
