/**
 * bench/accuracy (issue 4): percentiles from merged windows against exact
 * percentiles over the raw events, and what the usual shortcut would report.
 *
 * For each latency distribution, five clients of one run (different speeds,
 * different shares of the events) send their events through the real
 * pipeline: Kafka -> processor (child process, raw storage on) -> embedded
 * ClickHouse. Then, in SQL: p50 ... p99.99 from bs_quantile over
 * sumMap(hist) of every window and client, against the exact value at the
 * same rank (arraySort(groupArray(latency_us))[bs_rank(q, n)]) over the
 * raw events in `ops`. Also the "max of per-client p99" (and the mean of
 * per-client and of per-window p99s) that a report built from per-client or
 * per-window percentiles would show, against the true merged p99.
 *
 * Bound: the histogram keeps 128 linear buckets per power of two and reports
 * a bucket's midpoint, so any quantile above 256 µs is within 1/256 (0.39%)
 * of the exact one, and exact below.
 */
import { rmSync } from 'node:fs'
import { BenchstreamError } from '../services/core/errors.js'
import { OpsBatchWriter } from '../services/core/codec/ops-batch-writer.js'
import { Rng } from '../services/core/workload/random.js'
import {
  createTopic,
  DATABASE,
  deleteTopics,
  derivedTopics,
  fmt,
  fmtGrouped,
  fmtInt,
  gaussian,
  lognormalUs,
  nowMs,
  OP_READ,
  openProducer,
  processorEnv,
  progress,
  runMain,
  shortId,
  STATUS_OK,
  tempDir,
  withBroker,
} from './common.js'
import { KAFKA_FLAGS, parseFlags } from './flags.js'
import { ProcessorProcess } from './processor-process.js'

const BENCH = 'accuracy'
const QUANTILES = [0.5, 0.9, 0.99, 0.999, 0.9999] as const
/** Half a bucket over its lower bound: 0.5 / 128. */
const HISTOGRAM_BOUND = 1 / 256
const MAX_LATENCY_US = 3_600_000_000
const EVENTS_PER_MESSAGE = 4096

/** Five clients: share of the run's events, and a latency scale (a slower machine or network). */
const CLIENTS = [
  { share: 0.28, scale: 0.8 },
  { share: 0.24, scale: 0.9 },
  { share: 0.2, scale: 1.0 },
  { share: 0.16, scale: 1.2 },
  { share: 0.12, scale: 1.6 },
] as const

const DISTRIBUTIONS = {
  /** 100 .. 2,000 µs, flat. */
  uniform: (rng: Rng, scale: number): number => Math.round((100 + rng.next() * 1900) * scale),
  /** Median 800 µs, sigma 0.5: the usual shape of a healthy service. */
  lognormal: (rng: Rng, scale: number): number => lognormalUs(rng, 800 * scale, 0.5),
  /** 92% cache hits around 250 µs, 7.9% misses around 4 ms, 0.1% a Pareto tail from 50 ms (compactions, GC pauses). */
  bimodal: (rng: Rng, scale: number): number => {
    const u = rng.next()
    if (u < 0.92) return Math.max(1, Math.round((250 + 40 * gaussian(rng)) * scale))
    if (u < 0.999) return lognormalUs(rng, 4000 * scale, 0.4)
    return Math.min(10_000_000, Math.round((50_000 * scale) / Math.pow(1 - rng.next(), 1 / 1.2)))
  },
} as const
type Distribution = keyof typeof DISTRIBUTIONS

const FLAGS = {
  events: {
    kind: 'int',
    default: 1_000_000,
    min: 10_000,
    max: 100_000_000,
    help: 'events per distribution (over all five clients)',
  },
  distributions: {
    kind: 'choices',
    default: Object.keys(DISTRIBUTIONS),
    allowed: Object.keys(DISTRIBUTIONS),
    help: 'latency distributions to run',
  },
  'span-s': {
    kind: 'int',
    default: 60,
    min: 1,
    max: 86_400,
    help: 'seconds of event time each run spans (one window per second)',
  },
  partitions: { kind: 'int', default: 4, min: 1, max: 256, help: 'partitions of the topic' },
  seed: { kind: 'int', default: 42, min: 0, max: 2 ** 31, help: 'random seed' },
  ...KAFKA_FLAGS,
} as const

/**
 * All messages of one run, in event-time order: in each round every client
 * sends the next slice of its events, each client's events evenly spaced
 * over the span.
 */
function* runMessages(
  runId: string,
  dist: Distribution,
  events: number,
  spanS: number,
  startUs: number,
  seed: number,
): Generator<Buffer> {
  const counts = CLIENTS.map((c) => Math.round(c.share * events))
  counts[0]! += events - counts.reduce((a, b) => a + b, 0)
  const rounds = Math.ceil(Math.max(...counts) / EVENTS_PER_MESSAGE)
  const gen = DISTRIBUTIONS[dist]
  const clients = CLIENTS.map((c, i) => ({
    ...c,
    writer: new OpsBatchWriter(runId, `client-${i + 1}`),
    rng: new Rng(seed * 16 + i),
    n: counts[i]!,
    next: 0,
    stepUs: (spanS * 1e6) / counts[i]!,
  }))
  for (let r = 1; r <= rounds; r++) {
    for (const c of clients) {
      const until = Math.round((c.n * r) / rounds)
      for (; c.next < until; c.next++) {
        const lat = Math.min(MAX_LATENCY_US, Math.max(1, gen(c.rng, c.scale)))
        c.writer.add(c.next & 15, OP_READ, 0, STATUS_OK, Math.round(startUs + c.next * c.stepUs), lat, lat, 100)
      }
      if (c.writer.count > 0) yield c.writer.finish()
    }
  }
}

interface QuantileRow {
  run: string
  q: number
  windows: number
  exact: number
  n: string
}

interface ShortcutRow {
  run: string
  clients: string
  max_client_p99: number
  mean_client_p99: number
}

interface WindowP99Row {
  run: string
  mean_window_p99: number
}

async function main(): Promise<void> {
  const f = parseFlags(
    BENCH,
    'Merged-window percentiles vs exact percentiles over raw events, and the error of max-of-per-client p99.',
    process.argv.slice(2),
    process.env,
    FLAGS,
  )
  const id = shortId()
  const topic = `bench-accuracy-${id}`
  const dists = f.distributions as Distribution[]
  const runOf = (d: Distribution): string => `accuracy-${d}-${id}`
  await withBroker(BENCH, f['kafka-port'], async (b) => {
    await createTopic(b.kafka, topic, f.partitions)
    const dataDir = tempDir('accuracy')
    try {
      const p = await ProcessorProcess.start(
        processorEnv({
          brokers: b.brokers,
          topic,
          partitions: f.partitions,
          dataDir,
          group: `bench-accuracy-${id}`,
          storeRaw: true,
        }),
      )
      const runs = dists.map((d) => `'${runOf(d)}'`).join(', ')
      await p.watch(`SELECT 'all' AS k, sum(count) AS v FROM ${DATABASE}.op_windows WHERE run_id IN (${runs})`, 200)
      const producer = await openProducer(b.kafka)
      const startUs = (Date.now() - 120_000 - f['span-s'] * 1000) * 1000
      let partition = 0
      for (const [i, d] of dists.entries()) {
        progress(BENCH, `producing ${fmtInt(f.events)} ${d} events from ${CLIENTS.length} clients`)
        let chunk: Array<{ partition: number; value: Buffer }> = []
        for (const value of runMessages(runOf(d), d, f.events, f['span-s'], startUs, f.seed + i)) {
          chunk.push({ partition, value })
          partition = (partition + 1) % f.partitions
          if (chunk.length === 16) {
            await producer.send({ topic, acks: -1, messages: chunk })
            chunk = []
          }
        }
        if (chunk.length > 0) await producer.send({ topic, acks: -1, messages: chunk })
      }
      await producer.disconnect()
      const total = f.events * dists.length
      let lastReport = 0
      const done = await p.waitForValue('all', total, {
        stallMs: 120_000,
        onProgress: (v) => {
          if (nowMs() - lastReport > 5000) {
            lastReport = nowMs()
            progress(BENCH, `${fmtInt(v)} of ${fmtInt(total)} events counted`)
          }
        },
      })
      if (!done.reached)
        throw new BenchstreamError(
          'BS_ERR_TIMEOUT',
          `the processor counted ${done.v} events of ${total} and then stopped moving`,
        )
      const [raw] = await p.query<{ n: string }>(`SELECT count() AS n FROM ${DATABASE}.ops WHERE run_id IN (${runs})`)
      if (Number(raw?.n) !== total)
        throw new BenchstreamError('BS_ERR_CLICKHOUSE', `ops holds ${raw?.n} raw events of ${total} produced`)

      progress(BENCH, 'querying merged-window and exact percentiles')
      const rank = (q: string, s: string): string => `${s}[bs_rank(${q}, length(${s}))]`
      const rows = await p.query<QuantileRow>(`
        SELECT w.run_id AS run, q, bs_quantile(q, w.h) AS windows, ${rank('q', 'e.s')} AS exact,
               toString(length(e.s)) AS n
        FROM (SELECT run_id, sumMap(hist) AS h FROM ${DATABASE}.op_windows WHERE run_id IN (${runs})
              GROUP BY run_id) AS w
        JOIN (SELECT run_id, arraySort(groupArray(latency_us)) AS s FROM ${DATABASE}.ops WHERE run_id IN (${runs})
              GROUP BY run_id) AS e ON e.run_id = w.run_id
        ARRAY JOIN [${QUANTILES.join(', ')}] AS q`)
      const shortcuts = await p.query<ShortcutRow>(`
        SELECT run, toString(count()) AS clients, max(p99) AS max_client_p99, avg(p99) AS mean_client_p99
        FROM (SELECT run_id AS run, ${rank('0.99', 'arraySort(groupArray(latency_us))')} AS p99
              FROM ${DATABASE}.ops WHERE run_id IN (${runs}) GROUP BY run_id, client_id)
        GROUP BY run`)
      const windowP99 = await p.query<WindowP99Row>(`
        SELECT run, avg(p) AS mean_window_p99
        FROM (SELECT run_id AS run, window_start, bs_quantile(0.99, sumMap(hist)) AS p
              FROM ${DATABASE}.op_windows WHERE run_id IN (${runs}) GROUP BY run_id, window_start)
        GROUP BY run`)
      await p.stop()
      await deleteTopics(b, derivedTopics(topic))

      const label = (q: number): string => `p${fmt(q * 100, q >= 0.999 ? (q >= 0.9999 ? 2 : 1) : 0)}`
      const rel = (a: number, exact: number): number => (a - exact) / exact
      const out = [
        `${BENCH}: ${dists.length} distributions x ${fmtInt(f.events)} events, ${CLIENTS.length} clients ` +
          `of one run each (shares ${CLIENTS.map((c) => `${Math.round(c.share * 100)}%`).join('/')}, latency ` +
          `scale ${CLIENTS.map((c) => `x${c.scale}`).join('/')}), ${f['span-s']} s of event time in 1 ` +
          `s windows; Kafka -> processor -> embedded ClickHouse`,
        `  merged windows (bs_quantile over sumMap(hist)) vs exact over ` +
          `raw events (arraySort(groupArray(latency_us))[bs_rank(q, n)]):`,
        `  ${'distribution'.padEnd(12)}  ${'quantile'.padEnd(8)}  ${'exact µs'.padStart(12)} ` +
          ` ${'windows µs'.padStart(12)} ` +
          ` ${'rel. error'.padStart(10)}`,
      ]
      let worst = 0
      for (const d of dists) {
        for (const q of QUANTILES) {
          const r = rows.find((x) => x.run === runOf(d) && Math.abs(x.q - q) < 1e-9)
          if (r === undefined) throw new Error(`no quantile row for ${d} q=${q}`)
          const e = rel(r.windows, r.exact)
          // Below 256 µs buckets hold one value each; the midpoint rule then matches exactly.
          worst = Math.max(worst, Math.abs(e))
          out.push(
            `  ${d.padEnd(12)}  ${label(q).padEnd(8)}  ${fmtGrouped(r.exact, 1).padStart(12)} ` +
              ` ${fmtGrouped(r.windows, 1).padStart(12)} ` +
              ` ${(fmt(100 * e, 3, true) + '%').padStart(10)}`,
          )
        }
      }
      out.push(
        `  largest |error| ${fmt(100 * worst, 3)}% (bound from the histogram ` +
          `layout: ${fmt(100 * HISTOGRAM_BOUND, 3)}%) ` +
          `-> ${worst <= HISTOGRAM_BOUND + 1e-9 ? 'within' : 'OUTSIDE'} the bound`,
      )
      out.push(
        `  p99 as a report built from per-client or per-window percentiles would show it (exact per-client ` +
          `p99s, from raw events):`,
      )
      out.push(
        `  ${'distribution'.padEnd(12)}  ${'true p99 µs'.padStart(12)}  ${'max client p99'.padStart(22)} ` +
          ` ${'mean client p99'.padStart(22)}  ${'mean 1-s window p99'.padStart(22)}`,
      )
      for (const d of dists) {
        const truth = rows.find((x) => x.run === runOf(d) && Math.abs(x.q - 0.99) < 1e-9)!.exact
        const s = shortcuts.find((x) => x.run === runOf(d))
        const w = windowP99.find((x) => x.run === runOf(d))
        if (s === undefined || w === undefined) throw new Error(`no per-client or per-window p99 for ${d}`)
        const cell = (v: number): string => `${fmtGrouped(v, 1)} (${fmt(100 * rel(v, truth), 1, true)}%)`
        out.push(
          `  ${d.padEnd(12)}  ${fmtGrouped(truth, 1).padStart(12)}  ${cell(s.max_client_p99).padStart(22)} ` +
            ` ${cell(s.mean_client_p99).padStart(22)}  ${cell(w.mean_window_p99).padStart(22)}`,
        )
      }
      process.stdout.write(out.join('\n') + '\n')
    } finally {
      rmSync(dataDir, { recursive: true, force: true })
    }
  })
}

runMain(main)
