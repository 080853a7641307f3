/**
 * Shared pieces of the benchmarks in bench/: statistics, a private Kafka
 * broker, synthetic OPS batches and bulk production (flags: flags.ts).
 *
 * Benchmarks print figures and ratios against a baseline measured in the
 * same run; nothing here asserts on time.
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import type { Kafka, Producer } from 'kafkajs'
import { OPERATIONS, STATUSES } from '../schemas/events.v1.js'
import { createKafka, partitioner } from '../services/adapters/kafka/client.js'
import { startLocalKafka, stopLocalKafka } from '../services/adapters/kafka/local-broker.js'
import { BenchstreamError } from '../services/core/errors.js'
import { quantileRank } from '../services/core/stats/histogram.js'
import { OpsBatchWriter } from '../services/core/codec/ops-batch-writer.js'
import { Rng } from '../services/core/workload/random.js'

/**
 * Runs a bench's main, printing coded errors without a stack trace. Its first line on stdout names the Node.js
 * that runs it (and every process it starts with process.execPath): figures from Node 20 and Node 24 are compared
 * side by side (`BENCH_NODE=/usr/bin/node npm run bench:...`), so each result block says which it is.
 */
export function runMain(main: () => Promise<void>): void {
  process.stdout.write(`Node.js ${process.version} (${process.execPath})\n`)
  main().then(
    () => process.exit(0),
    (err: unknown) => {
      if (err instanceof BenchstreamError) process.stderr.write(`bench: ${err.code}: ${err.message}\n`)
      else process.stderr.write(`bench: ${(err as Error).stack ?? String(err)}\n`)
      process.exit(1)
    },
  )
}

// ---------------------------------------------------------------- statistics and formatting

/** Median of a non-empty list (mean of the middle two for an even count). */
export function median(xs: readonly number[]): number {
  if (xs.length === 0) return Number.NaN
  const s = [...xs].sort((a, b) => a - b)
  const mid = s.length >> 1
  return s.length % 2 === 1 ? s[mid]! : (s[mid - 1]! + s[mid]!) / 2
}

/** Quantile with the pipeline's rank rule (HdrHistogram 2.1.4's): the value at rank quantileRank(q, n). */
export function quantile(xs: readonly number[], q: number): number {
  if (xs.length === 0) return Number.NaN
  const s = [...xs].sort((a, b) => a - b)
  return s[Math.min(s.length, quantileRank(q, s.length)) - 1]!
}

const grouped = new Intl.NumberFormat('en-US', { maximumFractionDigits: 0 })
/** 1234567.8 -> "1,234,568". */
export function fmtInt(n: number): string {
  return grouped.format(n)
}

/** Grouped with fixed decimals: 92952.84 -> "92,952.8". */
export function fmtGrouped(n: number, digits: number): string {
  return new Intl.NumberFormat('en-US', { minimumFractionDigits: digits, maximumFractionDigits: digits }).format(n)
}

/** Fixed decimals, with the sign kept for signed figures. */
export function fmt(n: number, digits: number, signed = false): string {
  const s = n.toFixed(digits)
  return signed && n >= 0 ? `+${s}` : s
}

/** Monotonic wall-clock milliseconds since the Unix epoch, comparable across processes on one machine. */
export function nowMs(): number {
  return performance.timeOrigin + performance.now()
}

export function sleep(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms))
}

/** A short random id for topics, groups and run ids. */
export function shortId(): string {
  return Math.random().toString(36).slice(2, 8)
}

export function tempDir(prefix: string): string {
  return mkdtempSync(path.join(os.tmpdir(), `benchstream-bench-${prefix}-`))
}

/** Prints a progress line on stderr, so stdout holds only the result block. */
export function progress(bench: string, line: string): void {
  process.stderr.write(`[${bench}] ${line}\n`)
}

// ---------------------------------------------------------------- Kafka

export interface Broker {
  /** host:port list for KAFKA_BROKERS. */
  brokers: string
  kafka: Kafka
  /** True when this bench started the broker (and will stop it). */
  own: boolean
  /** The private broker's JVM, for its CPU time (processCpuMs); undefined for a cluster in KAFKA_BROKERS. */
  pid?: number
}

/** Linux's USER_HZ: /proc/<pid>/stat counts CPU time in 1/100 s. */
const CLOCK_TICKS_PER_S = 100

/**
 * CPU seconds (user + system) from a /proc stat file: /proc/<pid>/stat for a
 * process, /proc/<pid>/task/<tid>/stat for one of its threads. Throws when it
 * cannot be read.
 */
export function statCpuSeconds(file: string): number {
  const stat = readFileSync(file, 'utf8')
  // Fields after the command name, which is in parentheses and may hold spaces: utime is field 14, stime 15.
  const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ')
  return (Number(f[11]) + Number(f[12])) / CLOCK_TICKS_PER_S
}

/**
 * CPU time (user + system) a process has used so far, ms; undefined when it
 * cannot be read (not Linux, gone). For the processes a bench starts beside
 * the one it measures (the broker, a datastore), whose CPU on the same cores
 * is part of what a figure costs.
 */
export function processCpuMs(pid: number | undefined): number | undefined {
  if (pid === undefined) return undefined
  try {
    return statCpuSeconds(`/proc/${pid}/stat`) * 1000
  } catch {
    return undefined
  }
}

/**
 * Runs fn with a broker: the cluster in KAFKA_BROKERS if set, else a private
 * single-node broker on `port` with a temporary data directory, stopped and
 * removed afterwards (also on Ctrl-C).
 */
export async function withBroker<T>(bench: string, port: number, fn: (b: Broker) => Promise<T>): Promise<T> {
  const external = process.env.KAFKA_BROKERS
  if (external !== undefined && external !== '') {
    progress(bench, `using the Kafka cluster in KAFKA_BROKERS (${external})`)
    return fn({
      brokers: external,
      kafka: createKafka({ brokers: external.split(','), clientId: `bench-${bench}` }, 'bench'),
      own: false,
    })
  }
  const dataDir = tempDir('kafka')
  const opts = { port, dataDir, log: (l: string) => progress(bench, `kafka: ${l}`) }
  let stopping: Promise<void> | undefined
  const stop = (): Promise<void> =>
    (stopping ??= stopLocalKafka(opts)
      .catch((err: unknown) => progress(bench, `stopping Kafka failed: ${(err as Error).message}`))
      .finally(() => rmSync(dataDir, { recursive: true, force: true })))
  const onSignal = (): void => {
    progress(bench, 'interrupted: stopping the private Kafka broker')
    void stop().finally(() => process.exit(130))
  }
  process.once('SIGINT', onSignal)
  process.once('SIGTERM', onSignal)
  try {
    progress(bench, `starting a private Kafka broker on 127.0.0.1:${port} (data in ${dataDir})`)
    const brokers = await startLocalKafka(opts)
    // kafka.sh keeps the broker's pid in its data directory.
    const pid = Number(readFileSync(path.join(dataDir, 'kafka.pid'), 'utf8').trim())
    return await fn({
      brokers,
      kafka: createKafka({ brokers: [brokers], clientId: `bench-${bench}` }, 'bench'),
      own: true,
      ...(Number.isInteger(pid) && pid > 0 ? { pid } : {}),
    })
  } finally {
    process.off('SIGINT', onSignal)
    process.off('SIGTERM', onSignal)
    await stop()
  }
}

export async function createTopic(kafka: Kafka, topic: string, partitions: number): Promise<void> {
  const admin = kafka.admin()
  await admin.connect()
  try {
    await admin.createTopics({
      waitForLeaders: true,
      topics: [{ topic, numPartitions: partitions, replicationFactor: 1 }],
    })
  } finally {
    await admin.disconnect()
  }
}

/** Deletes a bench's topics on a shared cluster (a private broker is removed whole). */
export async function deleteTopics(b: Broker, topics: string[]): Promise<void> {
  if (b.own) return
  const admin = b.kafka.admin()
  await admin.connect()
  try {
    const existing = new Set(await admin.listTopics())
    const mine = topics.filter((t) => existing.has(t))
    if (mine.length > 0) await admin.deleteTopics({ topics: mine })
  } finally {
    await admin.disconnect()
  }
}

/**
 * Environment for a processor reading `topic` (its DLQ and alert topics are
 * derived from it), always on the embedded ClickHouse in its own `dataDir`,
 * so that each measurement starts from empty tables. Everything else keeps
 * the processor's defaults (the alert evaluator included), unless set in
 * this process's environment (e.g. ALERTS_ENABLED=false).
 */
export function processorEnv(o: {
  brokers: string
  topic: string
  partitions: number
  dataDir: string
  group: string
  storeRaw: boolean
  flushMs?: number
  windowMs?: number
}): Record<string, string> {
  return {
    KAFKA_BROKERS: o.brokers,
    CLICKHOUSE_URL: '',
    CLICKHOUSE_DATABASE: DATABASE,
    BENCHSTREAM_DATA_DIR: o.dataDir,
    BENCHSTREAM_TOPIC_EVENTS: o.topic,
    BENCHSTREAM_TOPIC_DLQ: `${o.topic}.dlq`,
    BENCHSTREAM_TOPIC_ALERTS: `${o.topic}.alerts`,
    BENCHSTREAM_TOPIC_PARTITIONS: String(o.partitions),
    PROCESSOR_GROUP_ID: o.group,
    BENCHSTREAM_STORE_RAW_EVENTS: String(o.storeRaw),
    ...(o.flushMs === undefined ? {} : { FLUSH_INTERVAL_MS: String(o.flushMs) }),
    ...(o.windowMs === undefined ? {} : { WINDOW_MS: String(o.windowMs) }),
    API_PORT: '0',
    // No /metrics server: several bench processors, and other people's, share this machine's ports.
    METRICS_PORT: '0',
  }
}

/** The ClickHouse database the benches' processors write. */
export const DATABASE = 'benchstream'

/** The topics a processor on `topic` creates besides it. */
export function derivedTopics(topic: string): string[] {
  return [topic, `${topic}.dlq`, `${topic}.alerts`]
}

// ---------------------------------------------------------------- synthetic events

export interface SyntheticOptions {
  runId: string
  clients: number
  /** Event-time rate over all clients, events per second: how fast the simulated benchmark ran. */
  eventsPerSecond: number
  /** Event time of the first event, µs since the epoch. */
  startUs: number
  /** Events per Kafka message (one OPS batch). @default 4096 */
  eventsPerMessage?: number
  seed?: number
}

/**
 * Endless OPS batches as drivers would send them: clients take turns, each
 * message holds one client's next events, event time advances at
 * eventsPerSecond overall, reads and updates half and half, about 1 in 1,000
 * an error, latencies log-normal around 500 µs.
 */
export class SyntheticStream {
  private readonly writers: OpsBatchWriter[]
  private readonly clientUs: number[]
  private readonly stepUs: number
  private readonly perMessage: number
  private readonly rng: Rng
  private turn = 0

  constructor(private readonly o: SyntheticOptions) {
    this.writers = Array.from({ length: o.clients }, (_, c) => new OpsBatchWriter(o.runId, `client-${c + 1}`))
    this.clientUs = Array.from({ length: o.clients }, () => o.startUs)
    // Each client runs at eventsPerSecond / clients.
    this.stepUs = (1e6 * o.clients) / o.eventsPerSecond
    this.perMessage = o.eventsPerMessage ?? 4096
    this.rng = new Rng(o.seed ?? 1)
  }

  /** The next message, holding `count` (default eventsPerMessage) events. */
  next(count = this.perMessage): Buffer {
    const c = this.turn
    this.turn = (this.turn + 1) % this.o.clients
    const w = this.writers[c]!
    const rng = this.rng
    let t = this.clientUs[c]!
    for (let i = 0; i < count; i++) {
      const r = rng.nextUint32()
      const latency = lognormalUs(rng, 500, 0.7)
      const status = r % 1000 === 0 ? 1 : 0
      const op = (r & 1024) === 0 ? 1 : 2
      const cache = op === 1 ? (r & 2048 ? 1 : 2) : 0
      w.add(r & 7, op, cache, status, Math.round(t), latency, latency, op === 1 ? 1000 : 100)
      t += this.stepUs
    }
    this.clientUs[c] = t
    return w.finish()
  }
}

/** A log-normal latency in whole µs with the given median and shape, at least 1. */
export function lognormalUs(rng: Rng, medianUs: number, sigma: number): number {
  return Math.max(1, Math.min(3_600_000_000, Math.round(medianUs * Math.exp(sigma * gaussian(rng)))))
}

/** Standard normal variate (Box-Muller). */
export function gaussian(rng: Rng): number {
  const u = 1 - rng.next()
  return Math.sqrt(-2 * Math.log(u)) * Math.cos(2 * Math.PI * rng.next())
}

export const OP_READ = OPERATIONS.indexOf('READ') + 1
export const STATUS_OK = STATUSES.indexOf('OK')

// ---------------------------------------------------------------- bulk production

export interface ProduceResult {
  messages: number
  events: number
  ms: number
}

/** A plain producer for benches: explicit partitions, no idempotence, several requests in flight. */
export async function openProducer(kafka: Kafka): Promise<Producer> {
  const producer = kafka.producer({ allowAutoTopicCreation: false, createPartitioner: partitioner })
  await producer.connect()
  return producer
}

/**
 * Sends `events` events from `next(count)` in messages of up to
 * eventsPerMessage, round-robin over the partitions, `perRequest` messages a
 * request and up to `inFlight` requests at once.
 */
export async function produceEvents(
  producer: Producer,
  topic: string,
  partitions: number,
  events: number,
  next: (count: number) => Buffer,
  o: { eventsPerMessage?: number; perRequest?: number; inFlight?: number; onProgress?: (events: number) => void } = {},
): Promise<ProduceResult> {
  const perMessage = o.eventsPerMessage ?? 4096
  const perRequest = o.perRequest ?? 16
  const inFlight = o.inFlight ?? 4
  const t0 = performance.now()
  let produced = 0
  let messages = 0
  let partition = 0
  const pending = new Set<Promise<void>>()
  let failure: unknown
  while (produced < events) {
    const chunk: Array<{ partition: number; value: Buffer }> = []
    while (chunk.length < perRequest && produced < events) {
      const n = Math.min(perMessage, events - produced)
      chunk.push({ partition, value: next(n) })
      partition = (partition + 1) % partitions
      produced += n
      messages++
    }
    const p: Promise<void> = producer.send({ topic, acks: -1, messages: chunk }).then(
      () => void pending.delete(p),
      (err: unknown) => {
        failure = err
        pending.delete(p)
      },
    )
    pending.add(p)
    if (pending.size >= inFlight) await Promise.race(pending)
    if (failure !== undefined)
      throw new BenchstreamError('BS_ERR_KAFKA', `producing to ${topic} failed: ${(failure as Error).message}`, {
        cause: failure,
      })
    o.onProgress?.(produced)
  }
  await Promise.all(pending)
  if (failure !== undefined)
    throw new BenchstreamError('BS_ERR_KAFKA', `producing to ${topic} failed: ${(failure as Error).message}`, {
      cause: failure,
    })
  return { messages, events: produced, ms: performance.now() - t0 }
}
