/**
 * The test's own Kafka broker profiled by `benchstream profile capture` while
 * this process produces to it: a CPU profile (cpu-clock, 10 ms, 4 s) and a
 * wall-clock profile of every thread (50 ms, 3 s), stored against one run.
 * Used by the integration test (what is stored, which frames) and the timing
 * test (how many samples a busy-free machine takes).
 */
import { readFileSync } from 'node:fs'
import path from 'node:path'
import type { TestContext } from 'node:test'
import { openClickHouse } from '../../services/adapters/clickhouse/client.js'
import { ClickHouseProfileStore } from '../../services/adapters/clickhouse/profile-store.js'
import { createKafka } from '../../services/adapters/kafka/client.js'
import { profileMain } from '../../services/cli/profile.js'
import { readInfraConfig } from '../../services/common/infra-config.js'
import { testEnv } from './env.js'

export interface BrokerProfiles {
  pid: string
  runId: string
  store: ClickHouseProfileStore
  /** What capture printed. */
  text: string
  /** The exit codes of the two captures. */
  codes: number[]
  /** Records produced while the captures ran. */
  produced: number
}

/** undefined when the broker is not the test's own (an external KAFKA_BROKERS cluster): no pid to profile. */
export async function profileTestBroker(t: TestContext): Promise<BrokerProfiles | undefined> {
  const dataDir = process.env.TEST_KAFKA_DATA_DIR
  if (dataDir === undefined || dataDir === '') return undefined
  const pid = readFileSync(path.join(dataDir, 'kafka.pid'), 'utf8').trim()
  const te = testEnv()
  t.after(te.cleanup)
  const runId = `capture-${Date.now()}`

  // Load: batches of 256-byte records, as fast as the broker acknowledges them, until stopped.
  const infra = readInfraConfig(te.env)
  const kafka = createKafka(infra.kafka, 'profile-load')
  const admin = kafka.admin()
  await admin.connect()
  const topic = `profile-load-${Date.now()}`
  await admin.createTopics({ topics: [{ topic, numPartitions: 4, replicationFactor: 1 }], waitForLeaders: true })
  await admin.disconnect()
  const producer = kafka.producer({ allowAutoTopicCreation: false })
  await producer.connect()
  let stop = false
  let sent = 0
  const value = Buffer.alloc(256, 'x')
  const load = (async () => {
    while (!stop) {
      await producer.send({
        topic,
        acks: 1,
        messages: Array.from({ length: 500 }, (_, i) => ({ key: String(i), value })),
      })
      sent += 500
    }
  })()
  t.after(async () => {
    stop = true
    await load.catch(() => undefined)
    await producer.disconnect()
  })
  await new Promise((r) => setTimeout(r, 3000))

  const out: string[] = []
  const io = { env: te.env, out: (s: string) => out.push(s), err: (s: string) => out.push(s) }
  const before = sent
  const capture = (event: string, seconds: string, interval: string, extra: string[]) =>
    profileMain(
      [
        'capture',
        '--pid',
        pid,
        '--run-id',
        runId,
        '--seconds',
        seconds,
        '--event',
        event,
        '--interval',
        interval,
        ...extra,
      ],
      io,
    )
  const codes = [
    await capture('cpu', '4', '10ms', ['--label', 'role=broker']),
    await capture('wall', '3', '50ms', ['--threads']),
  ]
  stop = true
  await load
  const ch = openClickHouse(readInfraConfig(te.env).clickhouse)
  t.after(() => ch.close())
  return { pid, runId, store: new ClickHouseProfileStore(ch), text: out.join(''), codes, produced: sent - before }
}

/** Wall-clock samples per thread of a `--threads` profile (thread frames look like `[name tid=N]`), ascending. */
export async function wallSamplesPerThread(p: BrokerProfiles, fromMs: number): Promise<number[]> {
  const wallStacks = await p.store.stacks({ runIds: [p.runId], fromMs }, 100_000)
  const perThread = new Map<string, number>()
  for (const [k, n] of wallStacks) {
    const thread = k.slice(0, k.indexOf(';') < 0 ? k.length : k.indexOf(';'))
    if (/^\[.* tid=\d+\]$/.test(thread)) perThread.set(thread, (perThread.get(thread) ?? 0) + n)
  }
  return [...perThread.values()].sort((a, b) => a - b)
}
