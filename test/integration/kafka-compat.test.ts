/**
 * kafkajs 2.2 against the test broker (the default 4.x line, or the one
 * TEST_KAFKA_VERSION names, e.g. 3.9.1): every protocol version Benchstream's
 * calls use is one the broker accepts (Kafka 4 removed old versions under
 * KIP-896), and the calls themselves work: admin, idempotent produce with
 * acks=-1, group consume, commit with metadata and fetching it back.
 */
import assert from 'node:assert/strict'
import { readFileSync, existsSync } from 'node:fs'
import path from 'node:path'
import { test } from 'node:test'
import { createKafka, ensureTopics } from '../../services/adapters/kafka/client.js'
import { readInfraConfig } from '../../services/common/infra-config.js'
import { repoRoot } from '../../services/common/repo-root.js'
import { brokerApiVersions, KAFKAJS_APIS_USED, unsupportedByBroker } from '../helpers/api-versions.js'
import { testEnv } from '../helpers/env.js'

test('kafkajs works against the test Kafka broker', async (t) => {
  const te = testEnv()
  t.after(te.cleanup)
  const infra = readInfraConfig(te.env)
  const byDefault = /<kafka.version>([^<]+)<\/kafka.version>/.exec(
    readFileSync(path.join(repoRoot(), 'deploy/local/kafka-pom.xml'), 'utf8'),
  )?.[1]
  assert.match(byDefault ?? '', /^4\.\d+\.\d+$/, 'the default local broker is a 4.x release (what users run today)')
  // test/run.mjs says which version it started; the broker's own log must agree.
  const expected = process.env.TEST_KAFKA_VERSION ?? byDefault!
  const log =
    process.env.TEST_KAFKA_DATA_DIR === undefined ? '' : path.join(process.env.TEST_KAFKA_DATA_DIR, 'broker.log')
  if (log !== '' && existsSync(log))
    assert.match(readFileSync(log, 'utf8'), new RegExp(`Kafka version: ${expected.replaceAll('.', '\\.')}\\b`))

  const versions = await brokerApiVersions(infra.kafka.brokers[0]!)
  assert.deepEqual(
    unsupportedByBroker(versions, KAFKAJS_APIS_USED),
    [],
    'kafkajs would send these at a version the broker rejects',
  )

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
  const ends = await admin.fetchTopicOffsets(infra.topics.events)
  assert.equal(ends.find((e) => e.partition === 1)?.high, '1')

  const groupId = te.env.PROCESSOR_GROUP_ID!
  const consumer = kafka.consumer({ groupId })
  await consumer.connect()
  await consumer.subscribe({ topic: infra.topics.events, fromBeginning: true })
  const got = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error('no message within 30 s')), 30_000)
    void consumer.run({
      autoCommit: false,
      eachMessage: async ({ partition, message }) => {
        await consumer.commitOffsets([
          {
            topic: infra.topics.events,
            partition,
            offset: String(Number(message.offset) + 1),
            metadata: '{"v":1,"end":0}',
          },
        ])
        clearTimeout(timer)
        resolve(message.value!.toString())
      },
    })
  })
  const described = await admin.describeGroups([groupId])
  assert.equal(described.groups[0]?.state, 'Stable')
  assert.equal(described.groups[0]?.protocolType, 'consumer')
  await consumer.disconnect()
  assert.equal(got, 'hello')
  const offsets = await admin.fetchOffsets({ groupId, topics: [infra.topics.events] })
  const p1 = offsets[0]!.partitions.find((p) => p.partition === 1)!
  assert.equal(p1.offset, '1')
  assert.equal(p1.metadata, '{"v":1,"end":0}')
})
