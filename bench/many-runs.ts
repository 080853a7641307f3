/**
 * bench/many-runs (issue 9): per-run state must not outlive the runs.
 *
 * A processor (child process, embedded ClickHouse, --expose-gc) first takes
 * a warm-up of runs, then --runs runs of one event each, each in its own
 * message with its own run id (the shape that once left a processor at
 * 1.7 GB RSS for 50,000 runs). RSS and heap are sampled after a forced GC
 * and an idle settle: before the runs (after the warm-up) and after they
 * were all stored. Target: RSS after within 1.2x of before.
 *
 * The per-run state this bounds: the event-time watermark of each run
 * (forgotten when idle), the run window-length cache (an LRU of 10,000), the
 * per-run metric series (capped at 200 runs), the alert evaluator's runs
 * (dropped when judged).
 */
import { rmSync } from 'node:fs'
import type { Producer } from 'kafkajs'
import { OpsBatchWriter } from '../services/core/codec/event-codec.js'
import { BenchstreamError } from '../services/core/errors.js'
import { createTopic, DATABASE, deleteTopics, derivedTopics, fmt, fmtInt, KAFKA_FLAGS, nowMs, OP_READ, openProducer, parseFlags, processorEnv, progress, runMain, shortId, sleep, STATUS_OK, tempDir, withBroker } from './common.js'
import { ProcessorProcess, type MemorySample } from './processor-process.js'

const BENCH = 'many-runs'
const MB = 1024 * 1024
const TARGET_RATIO = 1.2

const FLAGS = {
  runs: { kind: 'int', default: 50_000, min: 100, max: 10_000_000, help: 'runs of one event each' },
  'warmup-runs': { kind: 'int', default: 2000, min: 0, max: 1_000_000, help: 'runs of one event each before the first sample (JIT, pools and caches warmed up)' },
  partitions: { kind: 'int', default: 4, min: 1, max: 256, help: 'partitions of the topic' },
  'settle-s': { kind: 'int', default: 5, min: 0, max: 600, help: 'idle seconds before each sample (flushes and merges finish)' },
  raw: { kind: 'bool', default: true, help: 'store raw events too (the processor default is on)' },
  ...KAFKA_FLAGS,
} as const

/** Sends `n` runs of one event each, run ids `<prefix>-<i>`, 500 messages per request. */
async function produceRuns(producer: Producer, topic: string, prefix: string, from: number, n: number, partitions: number): Promise<void> {
  const atUs = (Date.now() - 60_000) * 1000
  let batch: Array<{ partition: number; value: Buffer }> = []
  for (let i = from; i < from + n; i++) {
    const w = new OpsBatchWriter(`${prefix}-${i}`, 'c1')
    w.add(0, OP_READ, 0, STATUS_OK, atUs + i, 100, 100, 10)
    batch.push({ partition: i % partitions, value: w.finish() })
    if (batch.length === 500) {
      await producer.send({ topic, acks: -1, messages: batch })
      batch = []
    }
  }
  if (batch.length > 0) await producer.send({ topic, acks: -1, messages: batch })
}

async function main(): Promise<void> {
  const f = parseFlags(BENCH, 'Processor RSS before and after many runs of one event each: per-run state must be released.', process.argv.slice(2), process.env, FLAGS)
  const id = shortId()
  const topic = `bench-many-runs-${id}`
  const prefix = `mr-${id}`
  await withBroker(BENCH, f['kafka-port'], async (b) => {
    await createTopic(b.kafka, topic, f.partitions)
    const dataDir = tempDir('many-runs')
    try {
      const p = await ProcessorProcess.start(processorEnv({ brokers: b.brokers, topic, partitions: f.partitions, dataDir, group: `bench-many-runs-${id}`, storeRaw: f.raw }), ['--expose-gc'])
      await p.watch(`SELECT 'all' AS k, sum(count) AS v FROM ${DATABASE}.op_windows`, 500)
      const started = await p.memory(true)
      const producer = await openProducer(b.kafka)
      const sample = async (total: number): Promise<MemorySample> => {
        const done = await p.waitForValue('all', total, { stallMs: 180_000 })
        if (!done.reached) throw new BenchstreamError('BS_ERR_TIMEOUT', `the processor counted ${done.v} of ${total} events and then stopped moving`)
        await sleep(f['settle-s'] * 1000)
        return p.memory(true)
      }
      progress(BENCH, `warm-up: ${fmtInt(f['warmup-runs'])} runs`)
      await produceRuns(producer, topic, `${prefix}-warm`, 0, f['warmup-runs'], f.partitions)
      const before = await sample(f['warmup-runs'])
      progress(BENCH, `${fmtInt(f.runs)} runs of one event each`)
      const t0 = nowMs()
      await produceRuns(producer, topic, prefix, 0, f.runs, f.partitions)
      const after = await sample(f['warmup-runs'] + f.runs)
      const seconds = (nowMs() - t0) / 1000
      const runs = await p.query<{ n: string }>(`SELECT count() AS n FROM ${DATABASE}.runs`)
      const stats = await p.stats()
      await producer.disconnect()
      await p.stop()
      await deleteTopics(b, derivedTopics(topic))

      const ratio = after.rss / before.rss
      const row = (label: string, s: MemorySample): string =>
        `  ${label.padEnd(34)} RSS ${fmt(s.rss / MB, 1).padStart(7)} MiB   heap used ${fmt(s.heapUsed / MB, 1).padStart(6)} MiB   heap total ${fmt(s.heapTotal / MB, 1).padStart(6)} MiB   external ${fmt(s.external / MB, 1).padStart(6)} MiB`
      process.stdout.write([
        `${BENCH}: one processor (embedded ClickHouse in the same process), ${fmtInt(f.runs)} runs of one event each after ${fmtInt(f['warmup-runs'])} warm-up runs, ${f.partitions} partitions, raw storage ${f.raw ? 'on' : 'off'}; samples after a forced GC${after.gc ? '' : ' (gc unavailable!)'} and ${f['settle-s']} s idle`,
        row('after start-up', started),
        row(`before (after ${fmtInt(f['warmup-runs'])} warm-up runs)`, before),
        row(`after ${fmtInt(f.runs)} more runs`, after),
        `  ${fmtInt(Number(runs[0]?.n ?? 0))} runs listed; ${fmtInt(stats.processor.events)} events in ${fmtInt(stats.processor.flushes)} flushes, ${fmt(seconds, 0)} s (${fmtInt(f.runs / seconds)} runs/s)`,
        `  RSS after / before: ${fmt(ratio, 3)}; heap used after / before: ${fmt(after.heapUsed / before.heapUsed, 3)} (target RSS <= ${TARGET_RATIO}x) -> ${ratio <= TARGET_RATIO ? 'met' : 'NOT met'}`,
      ].join('\n') + '\n')
    } finally {
      rmSync(dataDir, { recursive: true, force: true })
    }
  })
}

runMain(main)
