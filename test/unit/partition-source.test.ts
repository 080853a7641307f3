/**
 * The Kafka partition source's commits against a stand-in for the kafkajs
 * consumer: a commit counts only when kafkajs reports it sent (COMMIT_OFFSETS).
 * kafkajs 2.2 returns from commitOffsets without committing and without an
 * error while its consumer is not running (rejoining the group, restarting
 * after a crash: runner.js, `if (!this.running) return`); the stand-in does
 * the same, and the source must refuse such a commit, or the processor would
 * write a batch whose intent was never committed.
 */
import assert from 'node:assert/strict'
import { EventEmitter } from 'node:events'
import { test } from 'node:test'
import type { Kafka } from 'kafkajs'
import { KafkaPartitionSource } from '../../services/adapters/kafka/partition-source.js'
import { isBenchstreamError } from '../../services/core/errors.js'

const EVENTS = { GROUP_JOIN: 'join', CRASH: 'crash', COMMIT_OFFSETS: 'commit' } as const

function fakeKafka(): {
  kafka: Kafka
  running: { value: boolean }
  committed: string[]
  runs: { value: number }
  emitter: EventEmitter
} {
  const emitter = new EventEmitter()
  const running = { value: true }
  const committed: string[] = []
  const runs = { value: 0 }
  const consumer = {
    events: EVENTS,
    on: (event: string, listener: (e: unknown) => void) => emitter.on(event, listener),
    connect: async () => undefined,
    subscribe: async () => undefined,
    run: async () => {
      runs.value++
    },
    stop: async () => undefined,
    disconnect: async () => undefined,
    commitOffsets: async (offsets: Array<{ topic: string; partition: number; offset: string }>) => {
      // As kafkajs: nothing sent, nothing said, while the consumer is not running.
      if (!running.value) return
      for (const o of offsets) committed.push(`${o.partition}@${o.offset}`)
      emitter.emit(EVENTS.COMMIT_OFFSETS, {
        payload: {
          topics: [
            {
              topic: offsets[0]!.topic,
              partitions: offsets.map((o) => ({ partition: o.partition, offset: o.offset })),
            },
          ],
        },
      })
    },
  }
  const admin = { connect: async () => undefined, disconnect: async () => undefined }
  return {
    kafka: { consumer: () => consumer, admin: () => admin } as unknown as Kafka,
    running,
    committed,
    runs,
    emitter,
  }
}

test('a consumer kafkajs gave up on (restart: false) is started again; one it restarts is left to it', async () => {
  const f = fakeKafka()
  const source = new KafkaPartitionSource(f.kafka, { topic: 't', groupId: 'g', restartBackoffMs: 5 })
  await source.start({ onBatch: async () => undefined, onRebalance: () => undefined })
  assert.equal(f.runs.value, 1)
  const crash = (restart: boolean): void =>
    void f.emitter.emit(EVENTS.CRASH, { payload: { error: new Error('Request Fetch timed out'), restart } })
  crash(true)
  await new Promise((r) => setTimeout(r, 50))
  assert.equal(f.runs.value, 1, 'kafkajs restarts it: not started twice')
  assert.match(source.outage()?.problem ?? '', /failed and is restarting/)
  crash(false)
  for (let i = 0; i < 200 && f.runs.value < 2; i++) await new Promise((r) => setTimeout(r, 5))
  assert.equal(f.runs.value, 2, 'started again after kafkajs gave up')
  assert.equal(source.restarts, 1)
  await source.stop()
  crash(false)
  await new Promise((r) => setTimeout(r, 50))
  assert.equal(f.runs.value, 2, 'a stopped source is not started again')
})

test('a commit kafkajs did not send (its consumer not running) is an error, not a success', async () => {
  const f = fakeKafka()
  const source = new KafkaPartitionSource(f.kafka, { topic: 't', groupId: 'g' })
  await source.start({ onBatch: async () => undefined, onRebalance: () => undefined })
  await source.commit(0, 5, '{"v":1,"end":9}')
  await source.commit(0, 10, null)
  f.running.value = false
  await assert.rejects(source.commit(0, 10, '{"v":1,"end":20}'), (e: unknown) => {
    assert.ok(isBenchstreamError(e, 'BS_ERR_KAFKA'))
    assert.match((e as Error).message, /was not sent: the consumer is not running/)
    return true
  })
  f.running.value = true
  await source.commit(0, 10, '{"v":1,"end":20}')
  assert.deepEqual(f.committed, ['0@5', '0@10', '0@10'])
})
