/**
 * The processor under bad input, a ClickHouse outage, a broker restart and
 * scale-out, against the real broker and the real ClickHouse engine. Every
 * test ends with the same check: what ClickHouse holds equals, exactly, what
 * was produced (counts, latency sums and histogram totals per operation).
 */
import assert from 'node:assert/strict'
import { spawnSync } from 'node:child_process'
import path from 'node:path'
import { test } from 'node:test'
import { InMemorySpanExporter } from '@opentelemetry/sdk-trace-base'
import { ClickHouseWindowStore } from '../../services/adapters/clickhouse/window-store.js'
import { openClickHouse, queryRows, type Connection } from '../../services/adapters/clickhouse/client.js'
import { createKafka, ensureTopics } from '../../services/adapters/kafka/client.js'
import { readInfraConfig } from '../../services/common/infra-config.js'
import { repoRoot } from '../../services/common/repo-root.js'
import { OpsBatchWriter } from '../../services/core/codec/ops-batch-writer.js'
import { readProcessorConfig } from '../../services/processor/config.js'
import { startServer } from '../../services/server/main.js'
import { build as buildProcessor } from '../../services/processor/app.js'
import { ClickHouseRunRegistry } from '../../services/adapters/clickhouse/run-registry.js'
import { KafkaDeadLetterSink } from '../../services/adapters/kafka/dead-letter-sink.js'
import { KafkaPartitionSource } from '../../services/adapters/kafka/partition-source.js'
import { EventProducer } from '../helpers/produce.js'
import { migratedClickHouse } from '../helpers/clickhouse.js'
import { testEnv, waitFor } from '../helpers/env.js'
import { sameAsTruth, sortKeys, stored } from '../helpers/stored.js'

function assertExact(s: Awaited<ReturnType<typeof stored>>, t: EventProducer['truth'], raw = true): void {
  assert.equal(s.events, t.events)
  assert.deepEqual(sortKeys(s.byOp), sortKeys(t.byOp))
  assert.deepEqual(sortKeys(s.latencySumByOp), sortKeys(t.latencySumByOp))
  assert.deepEqual(sortKeys(s.histTotalByOp), sortKeys(t.byOp))
  if (raw) assert.equal(s.raw, t.events)
}

/** Corrupted messages in the bad-input test (the issue asks for at least 100,000). */
const JUNK = Number(process.env.BAD_INPUT_MESSAGES ?? 100_000)

test(
  '100,000 corrupted messages go to the dead-letter topic by reason; ' + 'good events around them are all counted',
  async (t) => {
    const te = testEnv()
    t.after(te.cleanup)
    const spans = new InMemorySpanExporter()
    const svc = await startServer(te.env, { api: true, spanExporter: spans })
    t.after(() => svc.stop())
    const infra = readInfraConfig(te.env)
    const p = await EventProducer.open(createKafka(infra.kafka, 'bad-input'), infra.topics.events, 'bad-input-run')
    t.after(() => p.close())
    let seed = 99
    const rnd = (): number => (seed = (seed * 48271) % 2147483647) / 2147483647
    const good = new OpsBatchWriter('bad-input-run', 'client-x')
    good.add(0, 1, 0, 0, Date.now() * 1000, 10, 10, 0)
    const template = good.finish()
    const junk: Buffer[] = []
    const expected: Record<string, number> = {}
    for (let i = 0; i < JUNK; i++) {
      let b: Buffer
      let reason: string
      switch (i % 5) {
        case 0:
          b = Buffer.from(Array.from({ length: 4 + Math.floor(rnd() * 40) }, () => Math.floor(rnd() * 256)))
          b[0] = 0x7b
          reason = 'bad_magic'
          break
        case 1:
          b = Buffer.from(template)
          b[2] = 2 + (i % 200)
          reason = 'unknown_schema_version'
          break
        case 2:
          b = template.subarray(0, 4 + Math.floor(rnd() * (template.length - 5)))
          reason = 'truncated'
          break
        case 3:
          b = Buffer.concat([template, Buffer.from([1, 2])])
          reason = 'trailing_bytes'
          break
        default: {
          const w = new OpsBatchWriter('bad-input-run', 'client-x')
          w.add(0, 1, 0, 0, Date.now() * 1000 + 7200e6, 10, 10, 0)
          b = w.finish()
          reason = 'timestamp_out_of_range'
        }
      }
      junk.push(b)
      expected[reason] = (expected[reason] ?? 0) + 1
    }
    await p.send(20_000)
    await p.sendRaw(junk.slice(0, JUNK / 2))
    await p.send(20_000)
    await p.sendRaw(junk.slice(JUNK / 2))
    await p.send(20_000)
    const ch = svc.ch
    let last = ''
    await waitFor(
      'good events and dead letters',
      async () => {
        const s = await stored(ch, 'bad-input-run')
        const dl = await queryRows<{ n: string }>(ch, 'SELECT count() AS n FROM benchstream.dead_letters')
        last =
          `stored ${s.events}/${p.truth.events} events, ${dl[0]!.n}/${JUNK} ` +
          `dead letters, processor ${JSON.stringify(svc.processor.stats)}`
        return sameAsTruth(s, p.truth) && Number(dl[0]!.n) === JUNK ? true : undefined
      },
      180_000,
      500,
    ).catch((err: Error) => {
      throw new Error(`${err.message}; last: ${last}`)
    })
    assertExact(await stored(ch, 'bad-input-run'), p.truth)
    const byReason = await queryRows<{ reason: string; n: string }>(
      ch,
      'SELECT reason, count() AS n FROM benchstream.dead_letters GROUP BY reason',
    )
    assert.deepEqual(sortKeys(Object.fromEntries(byReason.map((r) => [r.reason, Number(r.n)]))), sortKeys(expected))
    assert.deepEqual(sortKeys(svc.processor.stats.rejectedByReason), sortKeys(expected))
    // The dead-letter topic holds them all (possibly more after a replay, never fewer).
    const admin = createKafka(infra.kafka, 'dlq-count').admin()
    await admin.connect()
    const ends = await admin.fetchTopicOffsets(infra.topics.deadLetter)
    await admin.disconnect()
    assert.ok(ends.reduce((a, e) => a + Number(e.high), 0) >= JUNK)
    // Self-observability: the Prometheus endpoint counts them by reason, and flushes are traced.
    const metrics = await svc.api!.inject({ method: 'GET', url: '/metrics' })
    assert.equal(metrics.statusCode, 200)
    assert.match(
      metrics.body,
      new RegExp(`benchstream_processor_dead_letters_total\\{reason="bad_magic"[^}]*\\} ${JUNK / 5}\\b`),
    )
    assert.match(metrics.body, /benchstream_operations_total\{run_id="bad-input-run",op="READ",status="OK"[^}]*\} \d+/)
    // Reads of the embedded engine retried after racing a merge: exported, whatever their number.
    assert.match(metrics.body, /^benchstream_clickhouse_read_retries_total(\{[^}]*\})? \d+/m)
    assert.ok(
      spans
        .getFinishedSpans()
        .some((s) => s.name === 'processor.flush' && Number(s.attributes['benchstream.events']) > 0),
    )
  },
)

test('a ClickHouse outage: retries with backoff, consumption pauses, nothing lost when it returns', async (t) => {
  const te = testEnv({ INSERT_RETRY_MIN_MS: '50', INSERT_RETRY_MAX_MS: '400' })
  t.after(te.cleanup)
  const infra = readInfraConfig(te.env)
  let down = false
  let refused = 0
  // A failing connection in front of the real engine: inserts fail while "down".
  const ch = openClickHouse(infra.clickhouse, {
    wrapConnection: (c: Connection): Connection =>
      new Proxy(c, {
        get(target, prop, receiver) {
          const v = Reflect.get(target, prop, receiver) as unknown
          if (prop === 'insert' && typeof v === 'function') {
            return (...args: unknown[]) => {
              if (down) {
                refused++
                return Promise.reject(new Error('connect ECONNREFUSED 127.0.0.1:8123 (simulated outage)'))
              }
              return (v as (...a: unknown[]) => unknown).apply(target, args)
            }
          }
          return typeof v === 'function' ? (v as (...a: unknown[]) => unknown).bind(target) : v
        },
      }),
  })
  const svc = await startServer(te.env, { api: false, clickhouse: ch })
  t.after(() => svc.stop())
  const p = await EventProducer.open(createKafka(infra.kafka, 'outage'), infra.topics.events, 'outage-run')
  t.after(() => p.close())
  await p.send(30_000)
  await waitFor('first events stored', async () => ((await stored(ch, 'outage-run')).events > 0 ? true : undefined))
  down = true
  const before = svc.processor.stats.messages
  await p.send(60_000)
  await waitFor('insert retries during the outage', async () =>
    svc.processor.stats.insertRetries >= 5 ? true : undefined,
  )
  const during = (await stored(ch, 'outage-run')).events
  // Paused: while the write is retried, the partition consumes nothing more.
  const consumedDuring = svc.processor.stats.messages - before
  await new Promise((r) => setTimeout(r, 1500))
  assert.ok(
    svc.processor.stats.messages - before <= consumedDuring + 3 * 30,
    'consumption does not run ahead while ClickHouse is down',
  )
  assert.equal((await stored(ch, 'outage-run')).events, during, 'nothing is written while down')
  down = false
  await waitFor(
    'catch-up after the outage',
    async () => (sameAsTruth(await stored(ch, 'outage-run'), p.truth) ? true : undefined),
    120_000,
  )
  assertExact(await stored(ch, 'outage-run'), p.truth)
  assert.ok(refused >= 5)
})

test('a Kafka broker restart mid-stream is survived, exactly', async (t) => {
  const port = process.env.TEST_KAFKA_PORT
  const dataDir = process.env.TEST_KAFKA_DATA_DIR
  if (port === undefined || dataDir === undefined) return t.skip('needs the broker started by test/run.mjs')
  const te = testEnv()
  t.after(te.cleanup)
  const svc = await startServer(te.env, { api: false })
  t.after(() => svc.stop())
  const infra = readInfraConfig(te.env)
  const p = await EventProducer.open(createKafka(infra.kafka, 'restart'), infra.topics.events, 'restart-run')
  t.after(() => p.close())
  await p.send(40_000)
  const r = spawnSync('bash', [path.join(repoRoot(), 'deploy/local/kafka.sh'), 'restart'], {
    env: { ...process.env, KAFKA_PORT: port, KAFKA_DATA_DIR: dataDir },
    encoding: 'utf8',
  })
  assert.equal(r.status, 0, r.stderr)
  await p.send(40_000)
  await waitFor(
    'all events after the restart',
    async () => (sameAsTruth(await stored(svc.ch, 'restart-run'), p.truth) ? true : undefined),
    120_000,
  ).catch((err: unknown) => {
    // What the processor was doing when it did not get there: for the defect's report.
    process.stdout.write(
      `# stats ${JSON.stringify(svc.processor.stats)} ` + `partitions ${JSON.stringify(svc.processor.partitions())}\n`,
    )
    throw err
  })
  assertExact(await stored(svc.ch, 'restart-run'), p.truth)
})

test('two processors in one group split the partitions; rebalances lose and duplicate nothing', async (t) => {
  const te = testEnv({ BENCHSTREAM_TOPIC_PARTITIONS: '6' })
  t.after(te.cleanup)
  const cfg = readProcessorConfig(te.env)
  const ch = await migratedClickHouse(t, cfg.infra.clickhouse)
  const kafka = createKafka(cfg.infra.kafka, 'scale')
  await ensureTopics(kafka, cfg.infra.kafka, cfg.infra.topics)
  const store = new ClickHouseWindowStore(ch)
  const deadLetters = await KafkaDeadLetterSink.open(kafka, cfg.infra.topics.deadLetter)
  t.after(() => deadLetters.close())
  const instance = (name: string) =>
    buildProcessor(cfg, {
      source: new KafkaPartitionSource(createKafka(cfg.infra.kafka, name), {
        topic: cfg.infra.topics.events,
        groupId: cfg.groupId,
      }),
      deadLetters,
      store,
      runs: new ClickHouseRunRegistry(ch, name),
    })
  const a = instance('scale-a')
  const b = instance('scale-b')
  t.after(async () => {
    await a.stop()
    await b.stop()
  })
  const p = await EventProducer.open(kafka, cfg.infra.topics.events, 'scale-run')
  t.after(() => p.close())
  await a.start()
  await p.send(40_000, { clients: 5 })
  await b.start() // rebalance: a gives up partitions it may hold unflushed data for
  await p.send(40_000, { clients: 5 })
  await waitFor(
    'both instances consuming',
    async () => (a.stats.events > 0 && b.stats.events > 0 ? true : undefined),
    60_000,
  )
  await a.stop() // rebalance again: b takes everything
  await p.send(40_000, { clients: 5 })
  await waitFor(
    'all events with one survivor',
    async () => (sameAsTruth(await stored(ch, 'scale-run'), p.truth) ? true : undefined),
    120_000,
  )
  assertExact(await stored(ch, 'scale-run'), p.truth)
  assert.ok(a.stats.events > 0 && b.stats.events > 0, `both wrote: a=${a.stats.events} b=${b.stats.events}`)
})
