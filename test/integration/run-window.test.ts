/**
 * The window length belongs to the run. Two processors with different
 * WINDOW_MS read the same events (two consumer groups, one ClickHouse): the
 * first to see a run registers its length, every reader (runs view, report,
 * timeline) uses it, and the other processor refuses that run's messages to
 * the dead-letter topic with reason window_length_mismatch instead of
 * writing windows of another length into the run. Real broker, real engine.
 */
import assert from 'node:assert/strict'
import { test } from 'node:test'
import { queryRows } from '../../services/adapters/clickhouse/client.js'
import { ClickHouseReadModel } from '../../services/adapters/clickhouse/read-model.js'
import { ClickHouseRunRegistry } from '../../services/adapters/clickhouse/run-registry.js'
import { ClickHouseWindowStore } from '../../services/adapters/clickhouse/window-store.js'
import { createKafka, ensureTopics } from '../../services/adapters/kafka/client.js'
import { KafkaDeadLetterSink } from '../../services/adapters/kafka/dead-letter-sink.js'
import { KafkaPartitionSource } from '../../services/adapters/kafka/partition-source.js'
import { build as buildProcessor, type Processor } from '../../services/processor/app.js'
import { readProcessorConfig } from '../../services/processor/config.js'
import { migratedClickHouse } from '../helpers/clickhouse.js'
import { testEnv, waitFor } from '../helpers/env.js'
import { EventProducer } from '../helpers/produce.js'
import { sameAsTruth, stored } from '../helpers/stored.js'

test(
  'a run keeps the window length it was registered with; a processor ' + 'with another WINDOW_MS dead-letters it',
  async (t) => {
    const te = testEnv()
    t.after(te.cleanup)
    const base = readProcessorConfig(te.env)
    const ch = await migratedClickHouse(t, base.infra.clickhouse)
    const kafka = createKafka(base.infra.kafka, 'run-window')
    await ensureTopics(kafka, base.infra.kafka, base.infra.topics)
    const deadLetters = await KafkaDeadLetterSink.open(kafka, base.infra.topics.deadLetter)
    t.after(() => deadLetters.close())
    const start = async (windowMs: number, group: string): Promise<Processor> => {
      const cfg = readProcessorConfig({ ...te.env, WINDOW_MS: String(windowMs), PROCESSOR_GROUP_ID: group })
      const p = buildProcessor(cfg, {
        source: new KafkaPartitionSource(createKafka(cfg.infra.kafka, group), {
          topic: cfg.infra.topics.events,
          groupId: group,
        }),
        deadLetters,
        store: new ClickHouseWindowStore(ch),
        runs: new ClickHouseRunRegistry(ch, group),
      })
      await p.start()
      t.after(() => p.stop())
      return p
    }
    const second = await EventProducer.open(kafka, base.infra.topics.events, 'win-second')
    const first = await EventProducer.open(kafka, base.infra.topics.events, 'win-first')
    t.after(async () => {
      await first.close()
      await second.close()
    })

    // Run win-first is seen first by the 1000 ms processor.
    await first.send(20_000, { clients: 3 })
    const p1000 = await start(1000, `${te.env.PROCESSOR_GROUP_ID}-1000`)
    await waitFor(
      'win-first stored by the 1000 ms processor',
      async () => (sameAsTruth(await stored(ch, 'win-first'), first.truth) ? true : undefined),
      60_000,
    )
    // Then a 500 ms processor in another group reads the same topic from the start.
    const p500 = await start(500, `${te.env.PROCESSOR_GROUP_ID}-500`)
    await waitFor(
      'the 500 ms processor has read the topic',
      async () => (p500.stats.messages >= p1000.stats.messages ? true : undefined),
      60_000,
    )
    // Run win-second appears while both run: whoever registers it first decides.
    await second.send(10_000, { clients: 2 })
    await waitFor(
      'win-second stored',
      async () => (sameAsTruth(await stored(ch, 'win-second'), second.truth) ? true : undefined),
      60_000,
    )
    await p500.flushAll()
    await p1000.flushAll()

    const windows = await queryRows<{ run_id: string; lengths: number[] }>(
      ch,
      `SELECT run_id, groupUniqArray(window_ms) AS lengths FROM benchstream.op_windows GROUP BY run_id ORDER BY run_id`,
    )
    const runs = await queryRows<{ run_id: string; window_ms: number }>(
      ch,
      `SELECT run_id, window_ms FROM benchstream.runs ORDER BY run_id`,
    )
    const registered = Object.fromEntries(runs.map((r) => [r.run_id, Number(r.window_ms)]))
    assert.equal(registered['win-first'], 1000, 'the first processor to see the run registered its length')
    // One length per run in the windows, the registered one; counts are exact, never doubled.
    for (const w of windows)
      assert.deepEqual(w.lengths.map(Number), [registered[w.run_id]], `run ${w.run_id} has windows of one length only`)
    assert.equal((await stored(ch, 'win-first')).events, first.truth.events)
    assert.equal((await stored(ch, 'win-second')).events, second.truth.events)

    // The refusing processor dead-lettered every message of the run it does not own the length of.
    const refusedBy500 = p500.stats.rejectedByReason.window_length_mismatch ?? 0
    assert.ok(
      refusedBy500 >= first.truth.messages,
      `the 500 ms processor refused win-first's ${first.truth.messages} messages (refused ${refusedBy500})`,
    )
    const dl = await queryRows<{ run_id: string; detail: string }>(
      ch,
      `SELECT run_id, any(detail) AS detail FROM benchstream.dead_letters WHERE reason = 'window_length_mismatch' ` +
        `GROUP BY run_id`,
    )
    const detail = dl.find((d) => d.run_id === 'win-first')?.detail ?? ''
    assert.match(detail, /run win-first uses 1000 ms windows .* WINDOW_MS=500/)

    // Readers use the run's length: the timeline's ops/s of a 1000 ms run is the window count.
    const rm = new ClickHouseReadModel(ch)
    const info = await rm.getRun('win-first')
    assert.equal(
      info?.window_ms,
      1000,
      'the runs view lists a run without lifecycle records, with its registered length',
    )
    assert.equal(info?.started_at, null)
    const points = await rm.timeline('win-second', 0)
    const perWindow = await queryRows<{ t: string; n: string }>(
      ch,
      `SELECT toUnixTimestamp64Milli(window_start) AS t, sum(count) AS n FROM benchstream.op_windows ` +
        `WHERE run_id = 'win-second' GROUP BY t`,
    )
    const secondMs = registered['win-second']!
    for (const w of perWindow) {
      const ops = points.filter((p) => p.t === Number(w.t)).reduce((a, p) => a + p.ops, 0)
      assert.ok(
        Math.abs(ops - (Number(w.n) * 1000) / secondMs) < 1e-6,
        `ops/s of window ${w.t} uses the run's ${secondMs} ms`,
      )
    }
  },
)
