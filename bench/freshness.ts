/**
 * bench/freshness (issue 4): how soon a finished window can be queried.
 *
 * A producer sends a steady stream (default 100,000 events/s, one batch every
 * 10 ms, event start times = now) while a processor (child process, embedded
 * ClickHouse) runs. The processor's child polls the newest windows' counts
 * every 50 ms. A window is queryable once its count reaches what was produced
 * for it; its freshness is that moment minus the window's end (when its last
 * event was created). p50 and p99 over the measured windows.
 *
 * Target: p99 < 2 s with 1 s windows.
 */
import { rmSync } from 'node:fs'
import type { Producer } from 'kafkajs'
import { OpsBatchWriter } from '../services/core/codec/event-codec.js'
import { Rng } from '../services/core/workload/random.js'
import {
  createTopic, DATABASE, deleteTopics, derivedTopics, fmt, fmtInt, KAFKA_FLAGS, lognormalUs, nowMs, openProducer, parseFlags, processorEnv, progress, quantile, runMain, shortId, sleep, tempDir, withBroker,
} from './common.js'
import { ProcessorProcess, type WatchResult } from './processor-process.js'

const BENCH = 'freshness'
const TARGET_P99_MS = 2000

const FLAGS = {
  rate: { kind: 'int', default: 100_000, min: 100, max: 10_000_000, help: 'events per second produced' },
  seconds: { kind: 'int', default: 70, min: 10, max: 86_400, help: 'seconds of production' },
  'batch-ms': { kind: 'int', default: 10, min: 1, max: 1000, help: 'one batch (Kafka message) every this many ms' },
  'window-ms': { kind: 'int', default: 1000, min: 100, max: 60_000, help: 'processor window length (WINDOW_MS)' },
  'flush-ms': { kind: 'int', default: 1000, min: 50, max: 60_000, help: 'processor flush interval (FLUSH_INTERVAL_MS; the processor default is 1000)' },
  'poll-ms': { kind: 'int', default: 50, min: 10, max: 5000, help: 'how often the newest windows are queried' },
  'warmup-windows': { kind: 'int', default: 3, min: 0, max: 1000, help: 'first windows left out (processor and JIT warming up)' },
  partitions: { kind: 'int', default: 4, min: 1, max: 256, help: 'partitions of the topic' },
  raw: { kind: 'bool', default: true, help: 'store raw events too (BENCHSTREAM_STORE_RAW_EVENTS; the processor default is on)' },
  ...KAFKA_FLAGS,
} as const

interface Production {
  /** Events produced per window index (event time). */
  perWindow: Map<number, number>
  events: number
  seconds: number
  ackMs: number[]
  /** Largest delay of a tick behind its schedule, ms. */
  maxTickLateMs: number
}

/** Sends `rate` events/s for `seconds`, one message every batchMs, events timed across the tick they belong to. */
async function produce(producer: Producer, topic: string, runId: string, f: { rate: number; seconds: number; 'batch-ms': number; 'window-ms': number; partitions: number }): Promise<Production> {
  const writer = new OpsBatchWriter(runId, 'client-1')
  const rng = new Rng(11)
  const perWindow = new Map<number, number>()
  const windowUs = f['window-ms'] * 1000
  const ackMs: number[] = []
  const pending = new Set<Promise<void>>()
  let failure: unknown
  const t0 = nowMs()
  let lastUs = t0 * 1000
  let events = 0
  let maxTickLateMs = 0
  for (let tick = 1; ; tick++) {
    const due = t0 + tick * f['batch-ms']
    const wait = due - nowMs()
    if (wait > 0) await sleep(wait)
    const now = nowMs()
    maxTickLateMs = Math.max(maxTickLateMs, now - due)
    if (now - t0 >= f.seconds * 1000) break
    // Catch up on the schedule, so a late tick does not lower the rate.
    const n = Math.floor((f.rate * (now - t0)) / 1000) - events
    if (n <= 0) continue
    const nowUs = Math.round(now * 1000)
    for (let i = 1; i <= n; i++) {
      const startUs = Math.round(lastUs + ((nowUs - lastUs) * i) / n)
      const latency = lognormalUs(rng, 300, 0.6)
      const r = rng.nextUint32()
      const op = (r & 1) + 1
      writer.add(r & 7, op, op === 1 ? 1 + ((r >> 1) & 1) : 0, 0, startUs, latency, latency, 100)
      const w = Math.floor(startUs / windowUs)
      perWindow.set(w, (perWindow.get(w) ?? 0) + 1)
    }
    events += n
    lastUs = nowUs
    const sentAt = nowMs()
    const p: Promise<void> = producer.send({ topic, acks: -1, messages: [{ partition: tick % f.partitions, value: writer.finish() }] }).then(
      () => {
        ackMs.push(nowMs() - sentAt)
        pending.delete(p)
      },
      (err: unknown) => {
        failure = err
        pending.delete(p)
      },
    )
    pending.add(p)
    if (failure !== undefined) throw failure
  }
  await Promise.all(pending)
  if (failure !== undefined) throw failure
  return { perWindow, events, seconds: (nowMs() - t0) / 1000, ackMs, maxTickLateMs }
}

async function main(): Promise<void> {
  const f = parseFlags(BENCH, 'Time from a window\'s end to its complete row being queryable in ClickHouse, under a steady stream.', process.argv.slice(2), process.env, FLAGS)
  const id = shortId()
  const topic = `bench-freshness-${id}`
  const runId = `freshness-${id}`
  const windowMs = f['window-ms']
  await withBroker(BENCH, f['kafka-port'], async (b) => {
    await createTopic(b.kafka, topic, f.partitions)
    const dataDir = tempDir('freshness')
    try {
      progress(BENCH, 'starting the processor')
      const p = await ProcessorProcess.start(processorEnv({ brokers: b.brokers, topic, partitions: f.partitions, dataDir, group: `bench-freshness-${id}`, storeRaw: f.raw, flushMs: f['flush-ms'], windowMs }))
      await p.watch(
        `SELECT toString(intDiv(toUnixTimestamp64Milli(window_start), ${windowMs})) AS k, sum(count) AS v FROM ${DATABASE}.op_windows ` +
          `WHERE run_id = '${runId}' AND window_start >= now64(3) - toIntervalSecond(${Math.ceil((10 * windowMs) / 1000) + 20}) GROUP BY k`,
        f['poll-ms'],
      )
      const producer = await openProducer(b.kafka)
      progress(BENCH, `producing ${fmtInt(f.rate)} events/s for ${f.seconds} s`)
      const prod = await produce(producer, topic, runId, f)
      await producer.disconnect()

      // The first windows are warm-up; the first and last are partial.
      const all = [...prod.perWindow.keys()].sort((a, b) => a - b)
      const measured = all.slice(1 + f['warmup-windows'], -1)
      progress(BENCH, `produced ${fmtInt(prod.events)} events; waiting for ${measured.length} windows to be complete`)
      let watched: WatchResult
      const deadline = nowMs() + 30_000 + 10 * f['flush-ms']
      for (;;) {
        watched = await p.watched()
        const w = watched
        if (measured.every((k) => w.entries[String(k)]?.v === prod.perWindow.get(k)) || nowMs() > deadline) break
        await sleep(500)
      }
      const stats = await p.stats()
      await p.stop()
      await deleteTopics(b, derivedTopics(topic))

      const fresh: number[] = []
      const wrong: string[] = []
      for (const k of measured) {
        const e = watched.entries[String(k)]
        const want = prod.perWindow.get(k)!
        if (e === undefined || e.v !== want) wrong.push(`window ${new Date(k * windowMs).toISOString()}: ${e?.v ?? 0} of ${want}`)
        else fresh.push(e.changedAtMs - (k + 1) * windowMs)
      }
      const p50 = quantile(fresh, 0.5)
      const p99 = quantile(fresh, 0.99)
      const out = [
        `${BENCH}: ${fmtInt(f.rate)} events/s for ${f.seconds} s (one batch every ${f['batch-ms']} ms, ${f.partitions} partitions), ${windowMs} ms windows, processor flush interval ${f['flush-ms']} ms, raw storage ${f.raw ? 'on' : 'off'}, newest windows polled every ${f['poll-ms']} ms`,
        `  windows measured : ${fresh.length} (${f['warmup-windows']} warm-up and the partial first and last left out)${wrong.length === 0 ? '; every count exact' : `; ${wrong.length} INCOMPLETE or wrong: ${wrong.slice(0, 5).join('; ')}`}`,
        `  window end -> queryable: p50 ${fmtInt(p50)} ms   p99 ${fmtInt(p99)} ms   min ${fmtInt(Math.min(...fresh))} ms   max ${fmtInt(Math.max(...fresh))} ms   (target p99 < ${TARGET_P99_MS} ms) -> ${fresh.length >= 60 && wrong.length === 0 && p99 < TARGET_P99_MS ? 'met' : fresh.length < 60 ? `NOT judged: fewer than 60 windows` : 'NOT met'}`,
        `  producer: ${fmtInt(prod.events / prod.seconds)} events/s achieved, Kafka ack p50 ${fmt(quantile(prod.ackMs, 0.5), 1)} ms p99 ${fmt(quantile(prod.ackMs, 0.99), 1)} ms, ticks at most ${fmt(prod.maxTickLateMs, 1)} ms late`,
        `  processor: ${stats.processor.flushes} flushes, mean ${fmt(stats.processor.flushMsTotal / Math.max(1, stats.processor.flushes), 0)} ms, ${fmtInt(stats.processor.lateEvents)} late events; poll query median ${fmt(watched.pollMsMedian, 1)} ms, max ${fmt(watched.pollMsMax, 1)} ms over ${fmtInt(watched.polls)} polls`,
        `  freshness per window, ms (in order): ${fresh.map((x) => fmtInt(x)).join(' ')}`,
      ]
      process.stdout.write(out.join('\n') + '\n')
    } finally {
      rmSync(dataDir, { recursive: true, force: true })
    }
  })
}

runMain(main)
