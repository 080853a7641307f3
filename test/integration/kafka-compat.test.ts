/**
 * The pinned broker (deploy/local/kafka-pom.xml) speaks every protocol
 * version Benchstream's kafkajs calls need: idempotent produce, group
 * consume, commit with metadata and fetching it back.
 */
import assert from 'node:assert/strict'
import { readFileSync, existsSync } from 'node:fs'
import path from 'node:path'
import { test } from 'node:test'
import { createKafka, ensureTopics } from '../../services/adapters/kafka/client.js'
import { readInfraConfig } from '../../services/common/infra-config.js'
import { repoRoot } from '../../services/common/repo-root.js'
import { testEnv } from '../helpers/env.js'

test('kafkajs works against the pinned Kafka broker', async (t) => {
  const te = testEnv()
  t.after(te.cleanup)
  const infra = readInfraConfig(te.env)
  const pinned = /<kafka.version>([^<]+)</.exec(readFileSync(path.join(repoRoot(), 'deploy/local/kafka-pom.xml'), 'utf8'))?.[1]
  assert.match(pinned ?? '', /^3\.9\.\d+$/, 'the pinned line is 3.9.x, the last one serving kafkajs 2.2 protocol versions')
  const log = process.env.TEST_KAFKA_DATA_DIR === undefined ? '' : path.join(process.env.TEST_KAFKA_DATA_DIR, 'broker.log')
  if (log !== '' && existsSync(log)) assert.match(readFileSync(log, 'utf8'), new RegExp(`Kafka version: ${pinned!.replaceAll('.', '\\.')}`))

  const kafka = createKafka(infra.kafka, 'compat-test')
  await ensureTopics(kafka, infra.kafka, infra.topics)
  await ensureTopics(kafka, infra.kafka, infra.topics) // idempotent
  const admin = kafka.admin()
  await admin.connect()
  t.after(() => admin.disconnect())
  const meta = await admin.fetchTopicMetadata({ topics: [infra.topics.events] })
  assert.equal(meta.topics[0]!.partitions.length, 3)

  const producer = kafka.producer({ idempotent: true, maxInFlightRequests: 1 })
  await producer.connect()
  await producer.send({ topic: infra.topics.events, acks: -1, messages: [{ key: 'k', value: 'hello', partition: 1 }] })
  await producer.disconnect()

  const groupId = te.env.PROCESSOR_GROUP_ID!
  const consumer = kafka.consumer({ groupId })
  await consumer.connect()
  await consumer.subscribe({ topic: infra.topics.events, fromBeginning: true })
  const got = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error('no message within 30 s')), 30_000)
    void consumer.run({
      autoCommit: false,
      eachMessage: async ({ partition, message }) => {
        await consumer.commitOffsets([{ topic: infra.topics.events, partition, offset: String(Number(message.offset) + 1), metadata: '{"v":1,"end":0}' }])
        clearTimeout(timer)
        resolve(message.value!.toString())
      },
    })
  })
  await consumer.disconnect()
  assert.equal(got, 'hello')
  const offsets = await admin.fetchOffsets({ groupId, topics: [infra.topics.events] })
  const p1 = offsets[0]!.partitions.find((p) => p.partition === 1)!
  assert.equal(p1.offset, '1')
  assert.equal(p1.metadata, '{"v":1,"end":0}')
})
