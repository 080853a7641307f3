/**
 * The stream processor: consumes record batches from Kafka, folds them into
 * per-partition state (windows, raw events, dead letters) and writes that
 * state to the WindowStore, then commits the offsets.
 *
 * Exactly-once into ClickHouse, with at-least-once Kafka underneath:
 *  1. Before writing offsets [a, b] of a partition, it commits offset a again
 *     with metadata {"end": b}: an *intent*.
 *  2. It writes the batch with deduplication token "<group>/<topic>/<p>/<a>-<b>".
 *  3. It commits b + 1.
 * After a crash anywhere in between, whoever owns the partition next reads
 * the committed offset and intent, re-reads exactly a..b, and writes the same
 * token, which ClickHouse drops if step 2 had landed. Data that was never
 * flushed is simply read again. So a rebalance or crash loses nothing and
 * counts nothing twice, without a revocation callback (kafkajs has none).
 */
import { SpanStatusCode, type Tracer } from '@opentelemetry/api'
import type { Admin, Consumer, Kafka, Producer } from 'kafkajs'
import { BenchstreamError } from '../core/errors.js'
import type { ProcessorConfig } from './config.js'
import type { ProcessorMetrics } from './metrics.js'
import { PartitionState, type FlushBatch } from '../core/stats/partition-state.js'
import type { WindowStore } from '../core/ports/window-store.js'

/** Counters the processor exposes (metrics, tests, the demo). */
export interface ProcessorStats {
  messages: number
  events: number
  flushes: number
  insertRetries: number
  lateEvents: number
  deadLetters: number
  rejectedByReason: Record<string, number>
  lastFlushMs: number
  /** Sum of flush latencies, ms (with flushes: the mean). */
  flushMsTotal: number
  replays: number
}

export interface ProcessorHooks {
  /** Called after each batch is stored and committed (alerts and live views subscribe here). */
  onFlushed?: (batch: FlushBatch) => void
  /** OpenTelemetry instruments (services/processor/metrics.ts). */
  metrics?: ProcessorMetrics
  /** Each flush becomes a span. */
  tracer?: Tracer
}

const INTENT_VERSION = 1
/** Dead letters per produce request (each carries at most one source message, ≤ ~1 MB together). */
const DEAD_LETTERS_PER_REQUEST = 200
/** Messages held per partition before a flush is forced, whatever they hold (bounds dead letters and control records). */
const MAX_PENDING_MESSAGES = 20_000

export class Processor {
  private consumer: Consumer | undefined
  private admin: Admin | undefined
  private producer: Producer | undefined
  private readonly states = new Map<number, PartitionState>()
  private readonly locks = new Map<number, Promise<void>>()
  private generation = 0
  private timer: NodeJS.Timeout | undefined
  private lagTimer: NodeJS.Timeout | undefined
  /** Work started by timers; stop() waits for it so no client reconnects after disconnect. */
  private readonly inflight = new Set<Promise<unknown>>()
  private running = false
  readonly stats: ProcessorStats = { messages: 0, events: 0, flushes: 0, insertRetries: 0, lateEvents: 0, deadLetters: 0, rejectedByReason: {}, lastFlushMs: 0, flushMsTotal: 0, replays: 0 }

  constructor(
    private readonly config: ProcessorConfig,
    private readonly kafka: Kafka,
    private readonly store: WindowStore,
    private readonly hooks: ProcessorHooks = {},
  ) {}

  async start(): Promise<void> {
    const { topics } = this.config.infra
    this.admin = this.kafka.admin()
    await this.admin.connect()
    this.producer = this.kafka.producer({ idempotent: true, maxInFlightRequests: 1, allowAutoTopicCreation: false })
    await this.producer.connect()
    this.consumer = this.kafka.consumer({ groupId: this.config.groupId, sessionTimeout: 30_000, heartbeatInterval: 3000, maxBytes: 64 * 1024 * 1024, maxBytesPerPartition: 16 * 1024 * 1024 })
    // Any (re)join may change the assignment and kafkajs then re-reads
    // committed offsets: drop unflushed state, it will be read again.
    this.consumer.on(this.consumer.events.GROUP_JOIN, () => {
      this.generation++
      this.states.clear()
    })
    await this.consumer.connect()
    await this.consumer.subscribe({ topic: topics.events, fromBeginning: true })
    this.running = true
    await this.consumer.run({
      autoCommit: false,
      eachBatchAutoResolve: false,
      partitionsConsumedConcurrently: 1,
      eachBatch: async ({ batch, resolveOffset, heartbeat, isRunning, isStale }) => {
        const p = batch.partition
        await this.withLock(p, heartbeat, async () => {
          const gen = this.generation
          const st = this.states.get(p) ?? (await this.initPartition(p, Number(batch.firstOffset() ?? 0)))
          if (gen !== this.generation) return
          const nowUs = Date.now() * 1000
          for (const m of batch.messages) {
            if (!isRunning() || isStale() || gen !== this.generation) return
            const offset = Number(m.offset)
            if (offset < st.startOffset || offset <= st.lastOffset) {
              resolveOffset(m.offset)
              continue
            }
            st.add(m.value, offset, nowUs)
            this.stats.messages++
            this.hooks.metrics?.consumed(1)
            resolveOffset(m.offset)
            if (st.replayEnd !== undefined) {
              // Replaying an interrupted flush: cut exactly where it was cut.
              if (offset >= st.replayEnd) await this.flush(st, heartbeat)
            } else if (st.pendingEvents >= this.config.maxPendingEvents || st.pendingMessages >= MAX_PENDING_MESSAGES) {
              await this.flush(st, heartbeat)
            }
          }
          if (st.replayEnd === undefined && st.pendingMessages > 0 && performance.now() - st.firstAddedAt >= this.config.flushIntervalMs) {
            await this.flush(st, heartbeat)
          }
          await heartbeat()
        })
      },
    })
    // Partitions that stop receiving messages still get flushed on time.
    this.timer = setInterval(() => this.track(this.flushDue()), Math.max(50, Math.floor(this.config.flushIntervalMs / 4)))
    if (this.hooks.metrics !== undefined) this.lagTimer = setInterval(() => this.track(this.refreshLag()), 5000)
  }

  private track(p: Promise<unknown>): void {
    const guarded = p.catch(() => undefined)
    this.inflight.add(guarded)
    void guarded.finally(() => this.inflight.delete(guarded))
  }

  /** Consumer lag per owned partition: the log end minus the next offset to consume. */
  private async refreshLag(): Promise<void> {
    const metrics = this.hooks.metrics!
    const ends = await this.admin!.fetchTopicOffsets(this.config.infra.topics.events)
    metrics.lag.clear()
    for (const st of this.states.values()) {
      const end = ends.find((e) => e.partition === st.partition)
      if (end === undefined) continue
      const next = st.lastOffset >= 0 ? st.lastOffset + 1 : st.startOffset
      metrics.lag.set(st.partition, Math.max(0, Number(end.high) - next))
    }
  }

  /** Flushes every partition that has pending data (used on shutdown and by tests). */
  async flushAll(): Promise<void> {
    for (const st of [...this.states.values()]) {
      await this.withLock(st.partition, async () => undefined, async () => {
        if (st.pendingMessages > 0 && st.replayEnd === undefined && this.states.get(st.partition) === st) await this.flush(st, async () => undefined)
      })
    }
  }

  async stop(): Promise<void> {
    if (!this.running) return
    this.running = false
    if (this.timer !== undefined) clearInterval(this.timer)
    if (this.lagTimer !== undefined) clearInterval(this.lagTimer)
    // Stop fetching first, then write what is held, then leave the group.
    await this.consumer?.stop().catch(() => undefined)
    await Promise.allSettled([...this.inflight])
    await this.flushAll().catch(() => undefined)
    // Every client is closed even if another fails to.
    await Promise.allSettled([this.consumer?.disconnect(), this.producer?.disconnect(), this.admin?.disconnect()])
  }

  private async flushDue(): Promise<void> {
    const now = performance.now()
    // Due partitions flush side by side: their inserts and commits overlap
    // instead of queueing behind each other (each partition has its own lock).
    const due = [...this.states.values()].filter((st) => st.pendingMessages > 0 && st.replayEnd === undefined && now - st.firstAddedAt >= this.config.flushIntervalMs && !this.locks.has(st.partition))
    await Promise.all(
      due.map((st) =>
        this.withLock(st.partition, async () => undefined, async () => {
          if (this.states.get(st.partition) === st && st.pendingMessages > 0 && st.replayEnd === undefined) await this.flush(st, async () => undefined)
        }).catch(() => undefined),
      ),
    )
  }

  /** Reads the committed offset and any flush intent of a newly owned partition. */
  private async initPartition(partition: number, firstFetched: number): Promise<PartitionState> {
    const topic = this.config.infra.topics.events
    const offsets = await this.admin!.fetchOffsets({ groupId: this.config.groupId, topics: [topic] })
    const entry = offsets.find((t) => t.topic === topic)?.partitions.find((x) => x.partition === partition)
    const committed = entry === undefined ? -1 : Number(entry.offset)
    const st = new PartitionState(topic, partition, committed >= 0 ? committed : firstFetched, {
      windowUs: this.config.windowMs * 1000,
      allowedLatenessUs: this.config.allowedLatenessMs * 1000,
      storeRawEvents: this.config.storeRawEvents,
      maxEventAgeUs: this.config.maxEventAgeS * 1e6,
      maxEventFutureUs: this.config.maxEventFutureS * 1e6,
    })
    const intent = parseIntent(entry?.metadata)
    if (intent !== undefined && intent.end >= st.startOffset) {
      st.replayEnd = intent.end
      this.stats.replays++
    }
    this.states.set(partition, st)
    return st
  }

  private async flush(st: PartitionState, heartbeat: () => Promise<void>): Promise<void> {
    if (st.pendingMessages === 0) return
    const tracer = this.hooks.tracer
    if (tracer === undefined) return this.flushInner(st, heartbeat)
    return tracer.startActiveSpan('processor.flush', { attributes: { 'messaging.destination.name': st.topic, 'messaging.destination.partition.id': String(st.partition), 'benchstream.first_offset': st.startOffset, 'benchstream.last_offset': st.lastOffset, 'benchstream.replay': st.replayEnd !== undefined } }, async (span) => {
      try {
        await this.flushInner(st, heartbeat, (events, windows) => span.setAttributes({ 'benchstream.events': events, 'benchstream.window_rows': windows }))
      } catch (err) {
        span.recordException(err as Error)
        span.setStatus({ code: SpanStatusCode.ERROR, message: (err as Error).message })
        throw err
      } finally {
        span.end()
      }
    })
  }

  private async flushInner(st: PartitionState, heartbeat: () => Promise<void>, describe?: (events: number, windows: number) => void): Promise<void> {
    const gen = this.generation
    const t0 = performance.now()
    const p = st.partition
    if (st.replayEnd === undefined) {
      await this.commit(p, st.startOffset, JSON.stringify({ v: INTENT_VERSION, end: st.lastOffset }))
    }
    const lateBefore = st.windows.lateTotal
    const batch = st.drain(this.config.groupId)
    const late = st.windows.lateTotal - lateBefore
    this.stats.lateEvents += late
    describe?.(batch.events, batch.windows.length)
    if (batch.deadLetters.length > 0) await this.sendDeadLetters(batch)
    await this.retrying(() => this.store.write(batch), heartbeat, gen)
    if (gen !== this.generation) return
    await this.commit(p, batch.lastOffset + 1, null)
    st.advance()
    const ms = performance.now() - t0
    this.stats.flushes++
    this.stats.events += batch.events
    this.stats.lastFlushMs = ms
    this.stats.flushMsTotal += ms
    this.stats.deadLetters += batch.deadLetters.length
    for (const d of batch.deadLetters) this.stats.rejectedByReason[d.reason] = (this.stats.rejectedByReason[d.reason] ?? 0) + 1
    this.hooks.metrics?.flushed(batch, ms, late)
    this.hooks.onFlushed?.(batch)
  }

  private async commit(partition: number, offset: number, metadata: string | null): Promise<void> {
    try {
      await this.consumer!.commitOffsets([{ topic: this.config.infra.topics.events, partition, offset: String(offset), metadata }])
    } catch (err) {
      // Most often a rebalance took the partition away: drop its state, the new owner replays.
      this.states.delete(partition)
      throw new BenchstreamError('BS_ERR_KAFKA', `committing offset ${offset} of partition ${partition} failed: ${(err as Error).message}`, { cause: err })
    }
  }

  /** Retries a store write with exponential backoff until it succeeds or the processor stops. Blocking here is the back-pressure: nothing more is consumed. */
  private async retrying(fn: () => Promise<void>, heartbeat: () => Promise<void>, gen: number): Promise<void> {
    let wait = this.config.insertRetryMinMs
    for (;;) {
      try {
        await fn()
        return
      } catch (err) {
        if (!this.running || gen !== this.generation) throw err
        this.stats.insertRetries++
        this.hooks.metrics?.retried()
        await new Promise((r) => setTimeout(r, wait))
        wait = Math.min(this.config.insertRetryMaxMs, wait * 2)
        await heartbeat().catch(() => undefined)
      }
    }
  }

  private async sendDeadLetters(batch: FlushBatch): Promise<void> {
    const topic = this.config.infra.topics.deadLetter
    // Chunked: one produce request must stay under the broker's message.max.bytes.
    for (let i = 0; i < batch.deadLetters.length; i += DEAD_LETTERS_PER_REQUEST) {
      await this.producer!.send({
        topic,
        acks: -1,
        messages: batch.deadLetters.slice(i, i + DEAD_LETTERS_PER_REQUEST).map((d) => ({
          // Same key for the same source message: a replay's duplicate can be recognised.
          key: `${batch.topic}/${batch.partition}/${d.offset}`,
          value: d.payload,
          headers: { reason: d.reason, detail: d.detail.slice(0, 1000), 'source-topic': batch.topic, 'source-partition': String(batch.partition), 'source-offset': String(d.offset) },
        })),
      })
    }
  }

  /** Serialises work per partition; a waiter keeps the consumer's session alive. */
  private async withLock(partition: number, heartbeat: () => Promise<void>, fn: () => Promise<void>): Promise<void> {
    for (;;) {
      const held = this.locks.get(partition)
      if (held === undefined) break
      await Promise.race([held.catch(() => undefined), new Promise((r) => setTimeout(r, 1000))])
      await heartbeat().catch(() => undefined)
    }
    const run = fn()
    this.locks.set(partition, run)
    try {
      await run
    } finally {
      this.locks.delete(partition)
    }
  }
}

function parseIntent(metadata: string | null | undefined): { end: number } | undefined {
  if (metadata === null || metadata === undefined || metadata === '') return undefined
  try {
    const v = JSON.parse(metadata) as { v?: unknown; end?: unknown }
    return v.v === INTENT_VERSION && typeof v.end === 'number' ? { end: v.end } : undefined
  } catch {
    return undefined
  }
}

