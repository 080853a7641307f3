/**
 * The Kafka event sink's sending discipline against a fake kafkajs client:
 * every produce request goes to one partition, a chunk that failed is sent
 * again exactly (same records, same partition) until acknowledged, nothing
 * else is sent meanwhile (a control record waits), and what was acknowledged
 * is never sent again. These are what make the idempotent producer's
 * duplicate detection hold across a partition leader moving
 * (services/adapters/kafka/event-sink.ts); the real broker is in the
 * integration and cluster tiers.
 */
import assert from 'node:assert/strict'
import { test } from 'node:test'
import type { Kafka } from 'kafkajs'
import { RECORD_KIND } from '../../schemas/events.v1.js'
import { KafkaEventSink } from '../../services/adapters/kafka/event-sink.js'
import type { OutageEvent } from '../../services/core/health/outage.js'

interface Sent {
  messages: Array<{ key: string; partition: number | undefined; value: Buffer }>
  ok: boolean
}

/** A kafkajs stand-in: `fail(n)` makes the next n sends fail; every send is recorded with its outcome. */
function fakeKafka(partitions: number): { kafka: Kafka; sends: Sent[]; fail: (n: number) => void } {
  const sends: Sent[] = []
  let failures = 0
  const producer = {
    connect: async () => undefined,
    disconnect: async () => undefined,
    send: async (req: { messages: Array<{ key: string; partition?: number; value: Buffer }> }) => {
      const ok = failures === 0
      if (!ok) failures--
      sends.push({ messages: req.messages.map((m) => ({ key: m.key, partition: m.partition, value: m.value })), ok })
      await new Promise((r) => setTimeout(r, 1))
      if (!ok) throw new Error('Connection error: connect ECONNREFUSED 127.0.0.1:1 (simulated)')
      return []
    },
  }
  const admin = {
    connect: async () => undefined,
    disconnect: async () => undefined,
    fetchTopicMetadata: async () => ({
      topics: [{ partitions: Array.from({ length: partitions }, (_, i) => ({ partitionId: i })) }],
    }),
  }
  const kafka = { producer: () => producer, admin: () => admin } as unknown as Kafka
  return { kafka, sends, fail: (n) => (failures = n) }
}

function record(sink: KafkaEventSink, n: number): void {
  const now = Date.now() * 1000
  for (let i = 0; i < n; i++) sink.record(0, 1, 0, 0, now + i, 100, 100, 0)
}

test('a chunk that failed goes again exactly, to the same partition; acknowledged ones never again', async () => {
  const f = fakeKafka(3)
  const outages: OutageEvent[] = []
  const sink = await KafkaEventSink.open(f.kafka, {
    topic: 't',
    runId: 'r',
    clientId: 'c',
    maxBatchEvents: 10,
    batchesPerRequest: 2,
    lingerMs: 10,
    onOutage: (e) => outages.push(e),
  })
  record(sink, 20)
  await sink.flush(5000)
  f.fail(2)
  record(sink, 40)
  await sink.flush(10_000)
  record(sink, 20)
  await sink.close()

  // Each request: one partition, given explicitly.
  for (const s of f.sends) {
    const parts = new Set(s.messages.map((m) => m.partition))
    assert.equal(parts.size, 1, `one partition per request: ${[...parts].join(',')}`)
    assert.notEqual(s.messages[0]!.partition, undefined)
  }
  // After each failure the very same chunk follows.
  for (const [i, s] of f.sends.entries()) {
    if (s.ok) continue
    const next = f.sends[i + 1]!
    assert.deepEqual(
      next.messages.map((m) => [m.key, m.partition]),
      s.messages.map((m) => [m.key, m.partition]),
    )
    assert.ok(next.messages.every((m, j) => m.value.equals(s.messages[j]!.value)))
  }
  // Every batch acknowledged once: no key twice among acknowledged sends, and all 8 batches there.
  const acked = f.sends.filter((s) => s.ok).flatMap((s) => s.messages.map((m) => m.key))
  assert.equal(new Set(acked).size, acked.length)
  assert.equal(acked.length, 8)
  const stats = sink.stats()
  assert.equal(stats.sentEvents, 80)
  assert.equal(stats.undelivered, 0)
  // Round robin over the partitions, one chunk each.
  const partitions = f.sends.filter((s) => s.ok).map((s) => s.messages[0]!.partition!)
  for (let i = 1; i < partitions.length; i++) assert.equal(partitions[i], (partitions[i - 1]! + 1) % 3)
  // The failures were one outage, reported when it started and when it ended.
  assert.deepEqual(
    outages.map((o) => o.type),
    ['started', 'ended'],
  )
  const ended = outages[1]!
  assert.ok(ended.type === 'ended' && ended.failures === 2 && /ECONNREFUSED/.test(ended.lastProblem))
})

test('a control record waits for a failing chunk, and goes after it', async () => {
  const f = fakeKafka(2)
  const sink = await KafkaEventSink.open(f.kafka, {
    topic: 't',
    runId: 'r',
    clientId: 'c',
    maxBatchEvents: 10,
    batchesPerRequest: 4,
    lingerMs: 10,
  })
  f.fail(1)
  record(sink, 10)
  // Sealed and in its first (failing) attempt before the record comes.
  await new Promise((r) => setTimeout(r, 30))
  await sink.sendRecord({
    kind: RECORD_KIND.SERVER_METRICS,
    runId: 'r',
    clientId: 'c',
    atUs: Date.now() * 1000,
    source: 'memory',
    values: { records: 1 },
  })
  await sink.close()
  assert.deepEqual(
    f.sends.map((s) => [s.ok, s.messages[0]!.key.endsWith(':ctl') ? 'ctl' : 'events']),
    [
      [false, 'events'],
      [true, 'events'],
      [true, 'ctl'],
    ],
  )
  assert.equal(sink.stats().undeliveredRecords, 0)
})

test('batches wait until they fill a request, or until the linger, and then go out together', async (t) => {
  const f = fakeKafka(2)
  const sink = await KafkaEventSink.open(f.kafka, {
    topic: 't',
    runId: 'r',
    clientId: 'c',
    maxBatchEvents: 10,
    batchesPerRequest: 4,
    // Longer than the test: only a full request, flush() and close() send.
    lingerMs: 60_000,
  })
  t.after(() => sink.close())
  record(sink, 30)
  // Three batches: less than a request, so nothing goes yet.
  await new Promise((r) => setTimeout(r, 20))
  assert.equal(f.sends.length, 0)
  record(sink, 70)
  await new Promise((r) => setTimeout(r, 20))
  // Ten batches: two full requests went; the last two wait.
  assert.deepEqual(
    f.sends.map((s) => s.messages.length),
    [4, 4],
  )
  await sink.flush(5000)
  assert.deepEqual(
    f.sends.map((s) => s.messages.length),
    [4, 4, 2],
  )
  assert.equal(sink.stats().sentEvents, 100)
})

test("the linger sends what waits; a request stays under the broker's record batch limit", async (t) => {
  const f = fakeKafka(1)
  const sink = await KafkaEventSink.open(f.kafka, { topic: 't', runId: 'r', clientId: 'c', lingerMs: 30 })
  t.after(() => sink.close())
  record(sink, 5)
  await new Promise((r) => setTimeout(r, 150))
  assert.deepEqual(
    f.sends.map((s) => s.messages.length),
    [1],
    'a partial batch went with the linger',
  )
  // 20 batches of 4,096 events of ~22 bytes (large values): 16 of them would exceed 1 MiB.
  const now = Date.now() * 1000
  for (let i = 0; i < 20 * 4096; i++) sink.record(500, 1, 0, 0, now + i * 100_000, 3_000_000, 9_000_000, 2e9)
  await sink.flush(5000)
  const sizes = f.sends.slice(1).map((s) => s.messages.reduce((n, m) => n + m.value.length, 0))
  assert.ok(sizes.length >= 2, `${sizes.length} requests`)
  for (const bytes of sizes) assert.ok(bytes <= 240 * 1024, `a request of ${bytes} bytes`)
  assert.equal(
    f.sends.slice(1).reduce((n, s) => n + s.messages.length, 0),
    20,
  )
  assert.equal(sink.stats().sentEvents, 5 + 20 * 4096)
})
