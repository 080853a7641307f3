/**
 * Crash safety: the processor runs as its own process and is killed with
 * SIGKILL at random moments while events stream in, then restarted. At the
 * end ClickHouse must hold exactly what was produced: per operation counts,
 * latency sums and histogram totals, and every raw event once.
 *
 * Size: KILL_TEST_EVENTS (default 250,000 here, a share of npm test's time; `npm run test:kill` runs the
 * issue's full 2,000,000) and KILL_TEST_KILLS (default 5).
 */
import assert from 'node:assert/strict'
import { spawn, type ChildProcess } from 'node:child_process'
import path from 'node:path'
import { test } from 'node:test'
import { openClickHouse } from '../../services/adapters/clickhouse/client.js'
import { createKafka, ensureTopics } from '../../services/adapters/kafka/client.js'
import { readInfraConfig } from '../../services/common/infra-config.js'
import { repoRoot } from '../../services/common/repo-root.js'
import { EventProducer } from '../helpers/produce.js'
import { testEnv, waitFor } from '../helpers/env.js'
import { sortKeys, stored } from '../helpers/stored.js'

const EVENTS = Number(process.env.KILL_TEST_EVENTS ?? 250_000)
const KILLS = Number(process.env.KILL_TEST_KILLS ?? 5)

test(
  `SIGKILL the processor ${KILLS} times during ${EVENTS} events: nothing lost, nothing counted twice`,
  { timeout: 900_000 },
  async (t) => {
    const te = testEnv({ METRICS_PORT: '0', FLUSH_INTERVAL_MS: '200', ALERTS_ENABLED: 'false' })
    t.after(te.cleanup)
    const infra = readInfraConfig(te.env)
    const kafka = createKafka(infra.kafka, 'kill-test')
    await ensureTopics(kafka, infra.kafka, infra.topics)
    let log = ''
    const startProcessor = (): ChildProcess => {
      const child = spawn(process.execPath, [path.join(repoRoot(), 'bin', 'benchstream.js'), 'processor', '--no-api'], {
        env: { ...process.env, ...te.env },
        stdio: ['ignore', 'pipe', 'pipe'],
      })
      child.stdout.on('data', (d: Buffer) => (log += d.toString()))
      child.stderr.on('data', (d: Buffer) => (log += d.toString()))
      return child
    }
    const exited = (c: ChildProcess): Promise<void> =>
      new Promise((r) => (c.exitCode !== null || c.signalCode !== null ? r() : c.once('exit', () => r())))

    const producer = await EventProducer.open(kafka, infra.topics.events, 'kill-run', 11)
    t.after(() => producer.close())
    let seed = 5
    const rnd = (): number => (seed = (seed * 48271) % 2147483647) / 2147483647
    const chunk = Math.ceil(EVENTS / (KILLS + 1))
    let child = startProcessor()
    let produced = 0
    let kills = 0
    while (produced < EVENTS) {
      const n = Math.min(chunk, EVENTS - produced)
      // Produce while the processor is consuming, then kill it at a random moment.
      const sending = producer.send(n, { clients: 5, perMessage: 2000 })
      await new Promise((r) => setTimeout(r, 700 + rnd() * 2500))
      if (kills < KILLS) {
        child.kill('SIGKILL')
        await exited(child)
        kills++
        await sending
        child = startProcessor()
      } else {
        await sending
      }
      produced += n
    }
    assert.equal(kills, KILLS)
    // Wait until the group has committed the end of every partition, then stop cleanly.
    const admin = kafka.admin()
    await admin.connect()
    t.after(() => admin.disconnect())
    await waitFor(
      'the processor to commit everything',
      async () => {
        const ends = await admin.fetchTopicOffsets(infra.topics.events)
        const committed = await admin.fetchOffsets({
          groupId: te.env.PROCESSOR_GROUP_ID!,
          topics: [infra.topics.events],
        })
        const parts = committed[0]?.partitions ?? []
        return ends.every(
          (e) => Number(parts.find((p) => p.partition === e.partition)?.offset ?? -1) === Number(e.high),
        )
          ? true
          : undefined
      },
      600_000,
      500,
    ).catch((err: Error) => {
      throw new Error(`${err.message}\nprocessor output:\n${log.slice(-4000)}`)
    })
    child.kill('SIGTERM')
    await exited(child)
    // How often a replay met ClickHouse's deduplication record of an insert that the kill had cut
    // before its part was in place (the store writes those rows again; see window-store.ts).
    const lines = log.split('\n')
    const rewritten = lines.filter((l) => l.includes('as a duplicate of an insert that never landed'))
    const unaccounted = lines.filter((l) => l.includes('could not be written again'))
    process.stdout.write(
      `# ${kills} kills: ${rewritten.length} table writes of a replay found dropped and written again, ` +
        `${unaccounted.length} not restorable\n`,
    )
    for (const l of [...rewritten, ...unaccounted]) process.stdout.write(`# ${l.slice(0, 400)}\n`)
    assert.deepEqual(unaccounted, [], 'every missing row of a replay was written again')

    // The processor process is gone: this process may open the embedded data directory now.
    const ch = openClickHouse(infra.clickhouse)
    t.after(() => ch.close())
    const s = await stored(ch, 'kill-run')
    const truth = producer.truth
    assert.equal(truth.events, EVENTS)
    assert.equal(s.events, truth.events, `windows hold ${s.events} events, produced ${truth.events}`)
    assert.deepEqual(sortKeys(s.byOp), sortKeys(truth.byOp))
    assert.deepEqual(sortKeys(s.latencySumByOp), sortKeys(truth.latencySumByOp))
    assert.deepEqual(sortKeys(s.histTotalByOp), sortKeys(truth.byOp))
    assert.equal(s.raw, truth.events, 'every raw event stored once')
  },
)
