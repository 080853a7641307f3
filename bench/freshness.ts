/**
 * bench/freshness (issues 4 and 9): how soon a finished window can be queried.
 *
 * A producer sends a steady stream (default 100,000 events/s, one batch every
 * 10 ms, event start times = now) while a processor (child process, embedded
 * ClickHouse) runs. The processor's child polls the newest windows' counts
 * every 50 ms. A window is queryable once its count reaches what was produced
 * for it; its freshness is that moment minus the window's end (when its last
 * event was created). p50 and p99 over the measured windows.
 *
 * Target: p99 < 2 s with 1 s windows.
 *
 * --ad-hoc off,on (issue 9): alternating rounds without and with a long ad
 * hoc query running all the time through the server's API (POST
 * /api/v1/query: `SELECT sum(cityHash64(number)) FROM numbers(1e9)`, each
 * stopped by the guard's time limit and sent again). Prints each
 * condition's median p99 over --rounds rounds with the spread, and the
 * ratio; target: with the query within 1.5x of without.
 */
import { rmSync } from 'node:fs'
import os from 'node:os'
import type { Producer } from 'kafkajs'
import { OpsBatchWriter } from '../services/core/codec/ops-batch-writer.js'
import { Rng } from '../services/core/workload/random.js'
import {
  createTopic,
  DATABASE,
  deleteTopics,
  derivedTopics,
  fmt,
  fmtInt,
  lognormalUs,
  nowMs,
  openProducer,
  processorEnv,
  progress,
  quantile,
  runMain,
  shortId,
  sleep,
  tempDir,
  withBroker,
} from './common.js'
import { KAFKA_FLAGS, parseFlags } from './flags.js'
import { ProcessorProcess, type WatchResult } from './processor-process.js'

const BENCH = 'freshness'
const TARGET_P99_MS = 2000

const FLAGS = {
  rate: { kind: 'int', default: 100_000, min: 100, max: 10_000_000, help: 'events per second produced' },
  seconds: { kind: 'int', default: 70, min: 10, max: 86_400, help: 'seconds of production' },
  'batch-ms': { kind: 'int', default: 10, min: 1, max: 1000, help: 'one batch (Kafka message) every this many ms' },
  'window-ms': { kind: 'int', default: 1000, min: 100, max: 60_000, help: 'processor window length (WINDOW_MS)' },
  'flush-ms': {
    kind: 'int',
    default: 1000,
    min: 50,
    max: 60_000,
    help: 'processor flush interval (FLUSH_INTERVAL_MS; the processor default is 1000)',
  },
  'poll-ms': { kind: 'int', default: 50, min: 10, max: 5000, help: 'how often the newest windows are queried' },
  'warmup-windows': {
    kind: 'int',
    default: 3,
    min: 0,
    max: 1000,
    help: 'first windows left out (processor and JIT warming up)',
  },
  partitions: { kind: 'int', default: 4, min: 1, max: 256, help: 'partitions of the topic' },
  raw: {
    kind: 'bool',
    default: true,
    help: 'store raw events too (BENCHSTREAM_STORE_RAW_EVENTS; the processor default is on)',
  },
  'ad-hoc': {
    kind: 'choices',
    default: ['off'],
    allowed: ['off', 'on'],
    help: 'conditions, run in alternating rounds: off = no ad hoc query, on = a long ad hoc query all the time',
  },
  rounds: { kind: 'int', default: 1, min: 1, max: 20, help: 'rounds of each condition' },
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

/**
 * Events in one message at most: a tick that catches up after a stall sends
 * several messages rather than one over the broker's message.max.bytes
 * (1 MB by default; ~10 bytes an event).
 */
const MAX_EVENTS_PER_MESSAGE = 20_000

/**
 * Sends `rate` events/s for `seconds`, one message every batchMs (more if a tick catches up), events timed across the
 * tick they belong to.
 */
async function produce(
  producer: Producer,
  topic: string,
  runId: string,
  f: { rate: number; seconds: number; 'batch-ms': number; 'window-ms': number; partitions: number },
): Promise<Production> {
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
    const messages: Array<{ partition: number; value: Buffer }> = []
    // Start times increase through the tick: count per window in runs, not with a Map update per event.
    let window = Number.NaN
    let inWindow = 0
    for (let i = 1; i <= n; i++) {
      const startUs = Math.round(lastUs + ((nowUs - lastUs) * i) / n)
      const latency = lognormalUs(rng, 300, 0.6)
      const r = rng.nextUint32()
      const op = (r & 1) + 1
      writer.add(r & 7, op, op === 1 ? 1 + ((r >> 1) & 1) : 0, 0, startUs, latency, latency, 100)
      const w = Math.floor(startUs / windowUs)
      if (w !== window) {
        if (inWindow > 0) perWindow.set(window, (perWindow.get(window) ?? 0) + inWindow)
        window = w
        inWindow = 0
      }
      inWindow++
      if (writer.count >= MAX_EVENTS_PER_MESSAGE || i === n)
        messages.push({ partition: (tick + messages.length) % f.partitions, value: writer.finish() })
    }
    if (inWindow > 0) perWindow.set(window, (perWindow.get(window) ?? 0) + inWindow)
    events += n
    lastUs = nowUs
    const sentAt = nowMs()
    // One message per partition a request: kafkajs puts a request's messages for one partition
    // into one record batch, and a tick that catches up after a stall (hundreds of ms on a busy
    // machine, at 500k events/s) would make that batch larger than the broker's message.max.bytes.
    for (let i = 0; i < messages.length; i += f.partitions) {
      const p: Promise<void> = producer.send({ topic, acks: -1, messages: messages.slice(i, i + f.partitions) }).then(
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
    }
    if (failure !== undefined) throw failure
  }
  await Promise.all(pending)
  if (failure !== undefined) throw failure
  return { perWindow, events, seconds: (nowMs() - t0) / 1000, ackMs, maxTickLateMs }
}

/** The long query of --ad-hoc on: one core for as long as the guard lets it (API_QUERY_TIMEOUT_S). */
const LONG_QUERY = 'SELECT sum(cityHash64(number)) FROM numbers(1e9)'
const TARGET_AD_HOC_RATIO = 1.5

type Flags = ReturnType<typeof parseFlags<typeof FLAGS>>

interface Round {
  adHoc: boolean
  p50: number
  p99: number
  windows: number
  wrong: string[]
  queries: number
  lines: string[]
}

/** Sends the long query again and again until stopped; returns how many ran. */
function keepQuerying(apiUrl: string): { stop(): Promise<number> } {
  let running = true
  let n = 0
  const loop = (async () => {
    while (running) {
      const res = await fetch(`${apiUrl}/api/v1/query`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ sql: LONG_QUERY }),
      }).catch(() => undefined)
      await res?.text()
      n++
    }
  })()
  return {
    async stop() {
      running = false
      await loop
      return n
    },
  }
}

async function round(b: Parameters<Parameters<typeof withBroker>[2]>[0], f: Flags, adHoc: boolean): Promise<Round> {
  const id = shortId()
  const topic = `bench-freshness-${id}`
  const runId = `freshness-${id}`
  const windowMs = f['window-ms']
  await createTopic(b.kafka, topic, f.partitions)
  const dataDir = tempDir('freshness')
  let p: ProcessorProcess | undefined
  try {
    progress(BENCH, `starting the processor${adHoc ? ' with its API (a long ad hoc query will run all the time)' : ''}`)
    p = await ProcessorProcess.start({
      ...processorEnv({
        brokers: b.brokers,
        topic,
        partitions: f.partitions,
        dataDir,
        group: `bench-freshness-${id}`,
        storeRaw: f.raw,
        flushMs: f['flush-ms'],
        windowMs,
      }),
      ...(adHoc ? { BENCH_API: '1', API_PORT: '0' } : {}),
    })
    await p.watch(
      `SELECT toString(intDiv(toUnixTimestamp64Milli(window_start), ${windowMs})) AS k, sum(count) ` +
        `AS v FROM ${DATABASE}.op_windows ` +
        (`WHERE run_id = '${runId}' AND window_start ` +
          `>= now64(3) - toIntervalSecond(${Math.ceil((10 * windowMs) / 1000) + 20}) ` +
          `GROUP BY k`),
      f['poll-ms'],
    )
    const querying = adHoc ? keepQuerying(p.apiUrl) : undefined
    const loadBefore = os.loadavg()[0]!
    const producer = await openProducer(b.kafka)
    progress(BENCH, `producing ${fmtInt(f.rate)} events/s for ${f.seconds} s`)
    const prod = await produce(producer, topic, runId, f)
    await producer.disconnect()

    // The first windows are warm-up; the first and last are partial.
    const all = [...prod.perWindow.keys()].sort((x, y) => x - y)
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
    const queries = (await querying?.stop()) ?? 0
    const stats = await p.stats()
    const loadAfter = os.loadavg()[0]!
    await p.stop()
    await deleteTopics(b, derivedTopics(topic))

    const fresh: number[] = []
    const wrong: string[] = []
    for (const k of measured) {
      const e = watched.entries[String(k)]
      const want = prod.perWindow.get(k)!
      if (e === undefined || e.v !== want)
        wrong.push(`window ${new Date(k * windowMs).toISOString()}: ${e?.v ?? 0} of ${want}`)
      else fresh.push(e.changedAtMs - (k + 1) * windowMs)
    }
    const p50 = quantile(fresh, 0.5)
    const p99 = quantile(fresh, 0.99)
    const lines = [
      `  round${adHoc ? ' with a long ad hoc query' : ''}: ` +
        `windows ${fresh.length}` +
        (wrong.length === 0
          ? ', every count exact'
          : `, ${wrong.length} INCOMPLETE or wrong: ${wrong.slice(0, 5).join('; ')}`) +
        '; ' +
        `window end -> queryable p50 ${fmtInt(p50)} ms p99 ${fmtInt(p99)} ms (min ${fmtInt(Math.min(...fresh))}, ` +
        `max ${fmtInt(Math.max(...fresh))})${adHoc ? `; ${queries} long queries ran` : ''}`,
      `    producer ${fmtInt(prod.events / prod.seconds)} events/s, ` +
        `Kafka ack p50 ${fmt(quantile(prod.ackMs, 0.5), 1)} ` +
        `ms p99 ${fmt(quantile(prod.ackMs, 0.99), 1)} ms, ticks at most ${fmt(prod.maxTickLateMs, 1)} ` +
        (`ms late; processor ${stats.processor.flushes} ` +
          `flushes, mean ${fmt(stats.processor.flushMsTotal / Math.max(1, stats.processor.flushes), 0)} `) +
        `ms, ${fmtInt(stats.processor.lateEvents)} late events; poll median ${fmt(watched.pollMsMedian, 1)} ` +
        `ms, max ${fmt(watched.pollMsMax, 1)} ms; load average ${fmt(loadBefore, 2)} -> ${fmt(loadAfter, 2)}`,
      `    freshness per window, ms: ${fresh.map((x) => fmtInt(x)).join(' ')}`,
    ]
    return { adHoc, p50, p99, windows: fresh.length, wrong, queries, lines }
  } finally {
    // A failed round still stops its processor before its data directory goes.
    await p?.stop()
    rmSync(dataDir, { recursive: true, force: true })
  }
}

async function main(): Promise<void> {
  const f = parseFlags(
    BENCH,
    "Time from a window's end to its complete row being queryable in ClickHouse, under a steady " +
      'stream (optionally with a long ad hoc query running).',
    process.argv.slice(2),
    process.env,
    FLAGS,
  )
  const conditions = f['ad-hoc'].map((x) => x === 'on')
  await withBroker(BENCH, f['kafka-port'], async (b) => {
    const rounds: Round[] = []
    for (let r = 0; r < f.rounds; r++)
      for (const adHoc of r % 2 === 0 ? conditions : [...conditions].reverse()) rounds.push(await round(b, f, adHoc))
    const out = [
      `${BENCH}: ${fmtInt(f.rate)} events/s for ${f.seconds} s (one batch every ${f['batch-ms']} ms, ` +
        `${f.partitions} partitions), ${f['window-ms']} ms windows, processor flush interval ${f['flush-ms']} ` +
        `ms, raw storage ${f.raw ? 'on' : 'off'}, newest windows polled every ${f['poll-ms']} ms; ${f.rounds} ` +
        `round(s) of ${f['ad-hoc'].join(', ')}, alternating`,
    ]
    for (const r of rounds) out.push(...r.lines)
    const summary = (adHoc: boolean): { median: number; min: number; max: number; n: number } | undefined => {
      const p99s = rounds.filter((r) => r.adHoc === adHoc).map((r) => r.p99)
      return p99s.length === 0
        ? undefined
        : { median: quantile(p99s, 0.5), min: Math.min(...p99s), max: Math.max(...p99s), n: p99s.length }
    }
    const off = summary(false)
    const on = summary(true)
    const ok = rounds.every((r) => r.wrong.length === 0 && r.windows >= 60)
    if (off !== undefined) {
      const verdict =
        ok && off.median < TARGET_P99_MS ? 'met' : ok ? 'NOT met' : 'NOT judged: incomplete windows or fewer than 60'
      out.push(
        `  without ad hoc queries: p99 median ${fmtInt(off.median)} ms (min ${fmtInt(off.min)}, max ` +
          `${fmtInt(off.max)}, ${off.n} rounds) (target p99 < ${TARGET_P99_MS} ms) -> ${verdict}`,
      )
    }
    if (on !== undefined)
      out.push(
        `  with a long ad hoc query: p99 median ${fmtInt(on.median)} ms (min ${fmtInt(on.min)}, max ` +
          `${fmtInt(on.max)}, ${on.n} rounds)`,
      )
    if (off !== undefined && on !== undefined)
      out.push(
        `  ratio with/without: ${fmt(on.median / off.median, 2)} (target <= ${TARGET_AD_HOC_RATIO}) ` +
          `-> ${ok && on.median / off.median <= TARGET_AD_HOC_RATIO ? 'met' : ok ? 'NOT met' : 'NOT judged'}`,
      )
    process.stdout.write(out.join('\n') + '\n')
  })
}

runMain(main)
