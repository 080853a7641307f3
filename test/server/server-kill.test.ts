/**
 * Crash safety in server mode (npm run test:server): the processor, its own process with CLICKHOUSE_URL, is SIGKILLed
 * 5 times while events stream in, and the ClickHouse server itself is SIGKILLed twice in the middle of an insert of
 * the processor and started again on the same data (deploy/local/clickhouse.sh kill, start). At the end the server
 * holds exactly what was produced: per operation counts, latency sums and histogram totals, and every raw event once.
 *
 * What makes that hold on a server: every table keeps a non_replicated_deduplication_window, each insert carries an
 * insert_deduplication_token, and a replay or retry is verified (window-store.ts). Size: SERVER_KILL_EVENTS (default
 * 300,000).
 */
import assert from 'node:assert/strict'
import { test } from 'node:test'
import { openClickHouse } from '../../services/adapters/clickhouse/client.js'
import { createKafka, ensureTopics } from '../../services/adapters/kafka/client.js'
import { readInfraConfig } from '../../services/common/infra-config.js'
import { EventProducer } from '../helpers/produce.js'
import { waitFor } from '../helpers/env.js'
import { sortKeys, stored } from '../helpers/stored.js'
import {
  benchstream,
  clickhouseSh,
  rawClient,
  rows,
  serverTestEnv,
  tierServer,
  type Proc,
} from '../helpers/clickhouse-server.js'

const EVENTS = Number(process.env.SERVER_KILL_EVENTS ?? 300_000)
/** What happens after each chunk of events: the processor or the ClickHouse server is killed; none after the last. */
const ACTIONS = ['processor', 'processor', 'clickhouse', 'processor', 'processor', 'clickhouse', 'processor'] as const

const server = tierServer()

test(
  `SIGKILL the processor 5 times and the ClickHouse server twice mid-insert during ${EVENTS} events: nothing lost, ` +
    'nothing counted twice',
  { skip: typeof server === 'string' ? server : false, timeout: 900_000 },
  async (t) => {
    const s = server as Exclude<typeof server, string>
    const te = serverTestEnv(t, s, { METRICS_PORT: '0', FLUSH_INTERVAL_MS: '200', ALERTS_ENABLED: 'false' })
    const db = te.env.CLICKHOUSE_DATABASE!
    const infra = readInfraConfig(te.env)
    const kafka = createKafka(infra.kafka, 'server-kill')
    await ensureTopics(kafka, infra.kafka, infra.topics)
    const c = rawClient(t, s)
    const logs: string[] = []
    // A processor is killed only once it runs (migrated, in its group): under load its start alone can outlast the
    // random delay before a kill.
    const startProcessor = async (): Promise<Proc> => {
      const p = benchstream(['processor', '--no-api'], te.env)
      logs.push('')
      const at = logs.length - 1
      const keep = (d: Buffer): void => void (logs[at] += d.toString())
      p.child.stdout?.on('data', keep)
      p.child.stderr?.on('data', keep)
      await waitFor(
        'the processor to run',
        async () => {
          if (p.child.exitCode !== null || p.child.signalCode !== null)
            throw new Error(`the processor exited: ${p.output().slice(-3000)}`)
          return /"msg":"server running"/.test(p.output()) ? true : undefined
        },
        120_000,
      )
      return p
    }
    let proc = await startProcessor()
    t.after(async () => {
      proc.child.kill('SIGKILL')
      await proc.exited()
    })

    const producer = await EventProducer.open(kafka, infra.topics.events, 'server-kill-run', 17)
    t.after(() => producer.close())
    let seed = 7
    const rnd = (): number => (seed = (seed * 48271) % 2147483647) / 2147483647
    const chunk = Math.ceil(EVENTS / (ACTIONS.length + 1))
    let produced = 0
    let processorKills = 0
    const clickhouseKills: Array<{ insertInFlight: boolean; polls: number; downMs: number }> = []
    for (let i = 0; produced < EVENTS; i++) {
      const n = Math.min(chunk, EVENTS - produced)
      const sending = producer.send(n, { clients: 5, perMessage: 2000 })
      const action = ACTIONS[i]
      // The server is killed as soon as an insert is seen, while the chunk streams in; the processor at a random
      // moment.
      if (action !== 'clickhouse') await new Promise((r) => setTimeout(r, 700 + rnd() * 2500))
      if (action === 'processor') {
        proc.child.kill('SIGKILL')
        await proc.exited()
        processorKills++
        await sending
        proc = await startProcessor()
      } else if (action === 'clickhouse') {
        // Wait for an insert of ours to be in flight on the server, then kill the server at once.
        let insertInFlight = false
        let polls = 0
        const until = Date.now() + 10_000
        while (!insertInFlight && Date.now() < until) {
          polls++
          const [r] = await rows<{ n: string }>(
            c,
            `SELECT count() AS n FROM system.processes
             WHERE query_kind = 'Insert' AND position(query, {db:String}) > 0`,
            { db: `${db}.` },
          )
          insertInFlight = Number(r!.n) > 0
          if (!insertInFlight) await new Promise((r) => setTimeout(r, 10))
        }
        const down = Date.now()
        clickhouseSh(s, 'kill')
        await new Promise((r) => setTimeout(r, 1500))
        clickhouseSh(s, 'start')
        clickhouseKills.push({ insertInFlight, polls, downMs: Date.now() - down })
        await sending
      } else {
        await sending
      }
      produced += n
    }
    assert.equal(processorKills, 5)
    assert.equal(clickhouseKills.length, 2)
    assert.ok(
      clickhouseKills.some((k) => k.insertInFlight),
      `an insert of the processor was in flight when the server was killed: ${JSON.stringify(clickhouseKills)}`,
    )

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
      throw new Error(`${err.message}\nprocessor output:\n${logs.at(-1)!.slice(-4000)}`)
    })
    proc.child.kill('SIGTERM')
    await proc.exited()

    const lines = logs.join('').split('\n')
    const failedWrites = lines.filter((l) => l.includes('ClickHouse write failed; partition paused'))
    const rewritten = lines.filter((l) => l.includes('as a duplicate of an insert that never landed'))
    const unaccounted = lines.filter((l) => l.includes('could not be written again'))
    process.stdout.write(
      `# ${processorKills} processor kills, ClickHouse kills ${JSON.stringify(clickhouseKills)}: ` +
        `${failedWrites.length} failed-write log lines, ${rewritten.length} table writes of a replay found ` +
        `dropped and written again, ${unaccounted.length} not restorable\n`,
    )
    for (const l of [...rewritten, ...unaccounted]) process.stdout.write(`# ${l.slice(0, 400)}\n`)
    const problems = lines.filter((l) => /"level":[45]0/.test(l))
    assert.ok(
      failedWrites.length > 0,
      `the processor saw its writes fail while the server was down; its warnings and errors:\n` +
        problems.slice(-30).join('\n').slice(-6000),
    )
    assert.deepEqual(unaccounted, [], 'every missing row of a replay was written again')

    const ch = openClickHouse(infra.clickhouse)
    t.after(() => ch.close())
    const got = await stored(ch, 'server-kill-run')
    const truth = producer.truth
    assert.equal(truth.events, EVENTS)
    assert.equal(got.events, truth.events, `windows hold ${got.events} events, produced ${truth.events}`)
    assert.deepEqual(sortKeys(got.byOp), sortKeys(truth.byOp))
    assert.deepEqual(sortKeys(got.latencySumByOp), sortKeys(truth.latencySumByOp))
    assert.deepEqual(sortKeys(got.histTotalByOp), sortKeys(truth.byOp))
    assert.equal(got.raw, truth.events, 'every raw event stored once')
  },
)
