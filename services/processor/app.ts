/**
 * The stream processor: takes record batches from a PartitionSource, folds
 * them into per-partition state (windows, raw events, dead letters) and
 * writes that state to the WindowStore, then commits the offsets.
 *
 * Exactly-once into the store, with at-least-once delivery underneath:
 *  1. Before writing offsets [a, b] of a partition, it commits offset a again
 *     with metadata {"end": b}: an *intent*.
 *  2. It writes the batch with deduplication token "<group>/<topic>/<p>/<a>-<b>".
 *  3. It commits b + 1.
 * After a crash anywhere in between, whoever owns the partition next reads
 * the committed offset and intent, re-reads exactly a..b, and writes the same
 * token, which the store drops if step 2 had landed. Data that was never
 * flushed is simply read again. So a rebalance or crash loses nothing and
 * counts nothing twice, whatever the source tells about revocations.
 *
 * One hole in step 2 is ClickHouse's: a MergeTree table records the token in
 * its deduplication log before the new part is in place, so a crash between
 * the two leaves a token without rows, and the replay would be dropped. A
 * replay (and a retry) is therefore a verified write: the store counts the
 * batch's rows afterwards and writes missing ones again under a recovery
 * token (ClickHouseWindowStore.writeStep; bench/dedup-crash measures it).
 *
 * A batch the store cannot take now (ClickHouse down, timing out) is kept
 * and retried with backoff while its partition is paused, so one stuck
 * partition never holds up the others; rows the store refuses for what they
 * hold are isolated by the store and dead-lettered here, so no message can
 * stop ingestion.
 *
 * Pipelined: a drained batch is stored in the background while the
 * partition goes on decoding the next range, so the consumer does not wait
 * for ClickHouse (which works on its own threads). One batch per partition is
 * in flight at a time: the next flush (its intent commit) waits for the
 * previous one's final commit, which keeps the protocol above unchanged, and
 * holds memory to two batches a partition.
 *
 * Imports no infrastructure client: Kafka comes in through PartitionSource
 * and DeadLetterSink, ClickHouse through WindowStore and RunWindowRegistry
 * (services/core/ports/); services/server/main.ts wires the adapters.
 */
import { SpanStatusCode, type Tracer } from '@opentelemetry/api'
import { peekRunId } from '../core/codec/event-codec.js'
import { BenchstreamError } from '../core/errors.js'
import type { DeadLetterRecord, DeadLetterSink } from '../core/ports/dead-letter-sink.js'
import type { PartitionSource, SourceBatch } from '../core/ports/partition-source.js'
import type { RunWindowRegistry } from '../core/ports/run-registry.js'
import type { WindowStore } from '../core/ports/window-store.js'
import { PartitionState, type FlushBatch } from '../core/stats/partition-state.js'
import type { Logger } from '../common/logger.js'
import type { ProcessorConfig } from './config.js'
import type { ProcessorMetrics } from './metrics.js'

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
  /** Rows a verified write found missing (ClickHouse took their replay for a duplicate) and wrote again. */
  rowsRewritten: number
  /** Rows a verified write found missing and could not write again safely (logged as errors). */
  rowsUnaccounted: number
}

export interface ProcessorDeps {
  source: PartitionSource
  deadLetters: DeadLetterSink
  store: WindowStore
  runs: RunWindowRegistry
  /** Called after each batch is stored and committed (alerts and live views subscribe here). */
  onFlushed?: (batch: FlushBatch) => void
  /** OpenTelemetry instruments (services/processor/metrics.ts). */
  metrics?: ProcessorMetrics
  /** Each flush becomes a span. */
  tracer?: Tracer
  /** Diagnostics: retries and failures, rate-limited. */
  log?: Logger
}

/** A drained batch waiting to be stored. */
interface PendingFlush {
  batch: FlushBatch
  gen: number
  /** A replay of an interrupted flush (its intent was committed before the crash). */
  replay: boolean
  /** performance.now() of the next attempt. */
  retryAt: number
  waitMs: number
  failures: number
  /** Date.now() of the first failure (health). */
  failingSince: number
  late: number
  deadLettersSent: boolean
}

const INTENT_VERSION = 1
/**
 * Messages held per partition before a flush is forced, whatever they hold (bounds dead letters and control records).
 */
const MAX_PENDING_MESSAGES = 20_000
/** How often consumer lag is read from the source. */
const LAG_REFRESH_MS = 5000
/** A failing write is logged at its first failure and then at most this often. */
const RETRY_LOG_EVERY_MS = 10_000
/** Runs whose window length is remembered; beyond this the oldest are asked for again. */
const MAX_CACHED_RUNS = 10_000
/**
 * After a window ends (wall clock), how long a partition waits for the
 * window's last events to arrive through Kafka before it flushes them: a
 * window is queryable as soon as its last events are stored, so flushes are
 * aligned to window ends instead of running at any phase of the flush
 * interval. Covers the producer's batching and the broker's round trip.
 */
const WINDOW_END_GRACE_MS = 200
/**
 * A partition that has received nothing for this long (the end of a backlog,
 * a run that ended, a pause) flushes what it holds instead of waiting for
 * the flush interval: its last rows land this long after its last message.
 * At most once per quarter flush interval (4 inserts a second per partition
 * by default), so a trickle of messages does not become an insert each.
 */
const QUIET_FLUSH_MS = 100
/**
 * How often the flush timer looks for due partitions, at most (the window-end alignment is only as precise as this).
 */
const FLUSH_TICK_MS = 50

export class Processor {
  private readonly states = new Map<number, PartitionState>()
  private readonly locks = new Map<number, Promise<void>>()
  /** Bumped on every rebalance: work started under an older generation is abandoned. */
  private generation = 0
  private timer: NodeJS.Timeout | undefined
  private lagTimer: NodeJS.Timeout | undefined
  /** Work started by timers; stop() waits for it so no client reconnects after close. */
  private readonly inflight = new Set<Promise<unknown>>()
  private running = false
  /**
   * partition -> a drained batch the store has not taken yet: being stored, or retried with backoff while the partition
   * is paused.
   */
  private readonly pending = new Map<number, PendingFlush>()
  /** partition -> the store attempt running in the background for its pending batch. */
  private readonly storing = new Map<number, Promise<void>>()
  /** partition -> messages between the committed position and the log end, refreshed every LAG_REFRESH_MS. */
  private readonly lag = new Map<number, number>()
  /** partition -> Date.now() of the last commit that moved it forward (or when it was assigned). */
  private readonly advancedAt = new Map<number, number>()
  /** partition -> performance.now() when its last batch was taken, and when its last flush drained the state. */
  private readonly takenAt = new Map<number, number>()
  private readonly drainedAt = new Map<number, number>()
  /** partition -> performance.now() of its last retry log line. */
  private readonly lastRetryLogAt = new Map<number, number>()
  /** partition -> offset a seek was last asked for. */
  private readonly seekedTo = new Map<number, number>()
  /** run id -> the run's window length (ms), as registered. */
  private readonly runWindows = new Map<string, number>()
  readonly stats: ProcessorStats = {
    messages: 0,
    events: 0,
    flushes: 0,
    insertRetries: 0,
    lateEvents: 0,
    deadLetters: 0,
    rejectedByReason: {},
    lastFlushMs: 0,
    flushMsTotal: 0,
    replays: 0,
    rowsRewritten: 0,
    rowsUnaccounted: 0,
  }

  constructor(
    private readonly config: ProcessorConfig,
    private readonly deps: ProcessorDeps,
  ) {}

  async start(): Promise<void> {
    this.running = true
    await this.deps.source.start({
      // Any rebalance may change the assignment and the source then re-reads
      // committed offsets: drop unflushed state, it will be read again.
      onRebalance: () => {
        this.generation++
        this.states.clear()
        // Batches held back are dropped with their state (the offsets were not
        // committed: the partition's owner reads them again); resume their
        // partitions so that reading can start over.
        for (const p of this.pending.keys()) this.deps.source.resume(p)
        this.pending.clear()
      },
      onBatch: (batch) =>
        this.withLock(
          batch.partition,
          () => batch.heartbeat(),
          () => this.take(batch),
        ),
    })
    // Partitions that stop receiving messages still get flushed on time.
    this.timer = setInterval(
      () => this.track(this.flushDue()),
      Math.min(FLUSH_TICK_MS, Math.floor(this.config.flushIntervalMs / 4)),
    )
    this.lagTimer = setInterval(() => this.track(this.refreshLag()), LAG_REFRESH_MS)
  }

  private async take(batch: SourceBatch): Promise<void> {
    const p = batch.partition
    const gen = this.generation
    const st = this.states.get(p) ?? (await this.initPartition(p, batch.firstOffset))
    if (gen !== this.generation) return
    if (this.isHeldBack(p)) {
      // The partition is paused behind a batch the store has not taken: take
      // nothing more, and have these messages read again after it.
      this.deps.source.seek(p, nextOffset(st))
      return
    }
    if (batch.firstOffset > st.startOffset && st.lastOffset < 0 && this.seekedTo.get(p) !== st.startOffset) {
      // State was dropped (a failed commit) while the source read on: go back
      // to the committed position, or the messages in between would be lost.
      // Once only: a log truncated by retention really starts later.
      this.seekedTo.set(p, st.startOffset)
      this.deps.source.seek(p, st.startOffset)
      return
    }
    await this.retrying(
      () => this.learnRuns(batch),
      () => batch.heartbeat(),
      gen,
    )
    if (gen !== this.generation) return
    this.takenAt.set(p, performance.now())
    const nowUs = Date.now() * 1000
    for (const m of batch.messages) {
      // A failed commit drops the state: the rest is read again from the committed position.
      if (!this.running || !batch.isCurrent() || gen !== this.generation || this.states.get(p) !== st) return
      if (m.offset < st.startOffset || m.offset <= st.lastOffset) continue
      const refusal = this.refusal(m.value)
      if (refusal === undefined) st.add(m.value, m.offset, nowUs)
      else st.refuse(m.value, m.offset, 'window_length_mismatch', refusal.runId, refusal.detail)
      this.stats.messages++
      this.deps.metrics?.consumed(1)
      const cut =
        st.replayEnd !== undefined
          ? m.offset >= st.replayEnd // replaying an interrupted flush: cut exactly where it was cut
          : st.pendingEvents >= this.config.maxPendingEvents || st.pendingMessages >= MAX_PENDING_MESSAGES
      if (cut && !(await this.flush(st))) {
        // Held back: read the rest of this batch again once the store has taken it.
        this.deps.source.seek(p, m.offset + 1)
        return
      }
    }
    this.takenAt.set(p, performance.now())
    if (this.due(st, performance.now())) await this.flush(st)
    await batch.heartbeat()
  }

  /** Registers (or looks up) the window length of every run the batch names that this processor has not seen yet. */
  private async learnRuns(batch: SourceBatch): Promise<void> {
    let unknown: Set<string> | undefined
    for (const m of batch.messages) {
      const runId = peekRunId(m.value)
      if (runId !== undefined && !this.runWindows.has(runId)) (unknown ??= new Set()).add(runId)
    }
    if (unknown === undefined) return
    const claimed = await this.deps.runs.claim([...unknown], this.config.windowMs)
    for (const [runId, ms] of claimed) {
      if (this.runWindows.size >= MAX_CACHED_RUNS) this.runWindows.delete(this.runWindows.keys().next().value!)
      this.runWindows.set(runId, ms)
    }
  }

  private refusal(value: Buffer | null): { runId: string; detail: string } | undefined {
    const runId = peekRunId(value)
    if (runId === undefined) return undefined
    const ms = this.runWindows.get(runId)
    if (ms === undefined || ms === this.config.windowMs) return undefined
    return {
      runId,
      detail:
        `run ${runId} uses ${ms} ms windows (registered by the processor that first saw it); this processor ` +
        `has WINDOW_MS=${this.config.windowMs}. Run every processor of a group with the same WINDOW_MS, ` +
        `or give this processor its own PROCESSOR_GROUP_ID.`,
    }
  }

  private track(p: Promise<unknown>): void {
    const guarded = p.catch(() => undefined)
    this.inflight.add(guarded)
    void guarded.finally(() => this.inflight.delete(guarded))
  }

  /** Consumer lag per owned partition: the log end minus the committed position (what is not yet stored). */
  private async refreshLag(): Promise<void> {
    const ends = await this.deps.source.endOffsets()
    this.lag.clear()
    for (const st of this.states.values()) {
      const end = ends.get(st.partition)
      if (end !== undefined) this.lag.set(st.partition, Math.max(0, end - this.committedPosition(st)))
    }
    const metrics = this.deps.metrics
    if (metrics !== undefined) {
      metrics.lag.clear()
      for (const st of this.states.values()) {
        const end = ends.get(st.partition)
        if (end === undefined) continue
        metrics.lag.set(st.partition, Math.max(0, end - nextOffset(st)))
      }
    }
  }

  /**
   * What is wrong with ingestion now, in words, for /healthz: a partition
   * whose batch the store has not taken for longer than `failingMs`, and a
   * partition with lag whose committed position has not moved for longer
   * than `stallMs`. Empty when all is well.
   */
  health(bounds: { failingMs: number; stallMs: number }, now = Date.now()): string[] {
    const problems: string[] = []
    for (const [p, f] of this.pending) {
      if (f.failures > 0 && now - f.failingSince > bounds.failingMs)
        problems.push(
          `partition ${p}: ClickHouse has refused its writes for ${Math.round((now - f.failingSince) / 1000)} ` +
            `s (${f.failures} attempts)`,
        )
    }
    for (const st of this.states.values()) {
      const lag = this.lag.get(st.partition) ?? 0
      const since = this.advancedAt.get(st.partition) ?? now
      if (lag > 0 && now - since > bounds.stallMs && !this.pending.has(st.partition))
        problems.push(
          `partition ${st.partition}: ${lag} messages behind and not advanced ` +
            `for ${Math.round((now - since) / 1000)} s`,
        )
    }
    return problems
  }

  /**
   * Flushes every partition that has pending data and waits until it is stored or held back (used on shutdown and by
   * tests).
   */
  async flushAll(): Promise<void> {
    for (const st of Array.from(this.states.values())) {
      await this.withLock(
        st.partition,
        async () => undefined,
        async () => {
          const p = st.partition
          await this.storing.get(p)
          if (this.states.get(p) !== st) return
          if (this.pending.has(p)) await this.retryPending(st)
          if (!this.pending.has(p) && st.pendingMessages > 0 && st.replayEnd === undefined) await this.flush(st)
          await this.storing.get(p)
        },
      )
    }
  }

  async stop(): Promise<void> {
    if (!this.running) return
    this.running = false
    if (this.timer !== undefined) clearInterval(this.timer)
    if (this.lagTimer !== undefined) clearInterval(this.lagTimer)
    // Stop fetching first, then write what is held, then leave the group.
    await this.deps.source.stop().catch(() => undefined)
    await Promise.allSettled(this.inflight)
    await this.flushAll().catch(() => undefined)
    await this.deps.source.close().catch(() => undefined)
  }

  /** Partitions whose batch the store has not taken, with how long they have been failing (health). */
  heldBack(): Array<{ partition: number; failures: number; failingForMs: number }> {
    const now = Date.now()
    return [...this.pending]
      .filter(([, f]) => f.failures > 0)
      .map(([partition, f]) => ({ partition, failures: f.failures, failingForMs: now - f.failingSince }))
  }

  /** Whether the partition is paused behind a batch the store failed to take (not one merely being stored). */
  private isHeldBack(partition: number): boolean {
    return (this.pending.get(partition)?.failures ?? 0) > 0
  }

  /**
   * Whether a partition's accumulated messages should be flushed now: the
   * flush interval has passed since the first of them, or the partition has
   * been quiet for QUIET_FLUSH_MS, or a window has ended (wall clock) since
   * the first of them and its events have had WINDOW_END_GRACE_MS to arrive.
   * Never during a replay, which is cut exactly where it was.
   */
  private due(st: PartitionState, nowPerf: number): boolean {
    if (st.pendingMessages === 0 || st.replayEnd !== undefined) return false
    if (nowPerf - st.firstAddedAt >= this.config.flushIntervalMs) return true
    const p = st.partition
    if (
      nowPerf - (this.takenAt.get(p) ?? nowPerf) >= QUIET_FLUSH_MS &&
      nowPerf - (this.drainedAt.get(p) ?? Number.NEGATIVE_INFINITY) >= this.config.flushIntervalMs / 4
    )
      return true
    const W = this.config.windowMs
    const firstWall = performance.timeOrigin + st.firstAddedAt
    return performance.timeOrigin + nowPerf >= (Math.floor(firstWall / W) + 1) * W + WINDOW_END_GRACE_MS
  }

  /** The committed position of a partition: where its owner resumes after a crash. */
  private committedPosition(st: PartitionState): number {
    return this.pending.get(st.partition)?.batch.firstOffset ?? st.startOffset
  }

  private async flushDue(): Promise<void> {
    const now = performance.now()
    // Due partitions flush side by side: their inserts and commits overlap
    // instead of queueing behind each other (each partition has its own lock).
    // Held-back batches are retried here when their backoff has passed.
    // A partition whose batch is being stored is left alone: its next flush would only wait for it.
    const due = [...this.states.values()].filter(
      (st) =>
        !this.locks.has(st.partition) &&
        !this.storing.has(st.partition) &&
        (this.pending.has(st.partition) ? this.pending.get(st.partition)!.retryAt <= now : this.due(st, now)),
    )
    await Promise.all(
      due.map((st) =>
        this.withLock(
          st.partition,
          async () => undefined,
          async () => {
            if (this.states.get(st.partition) !== st || this.storing.has(st.partition)) return
            if (this.pending.has(st.partition)) await this.retryPending(st)
            else if (this.due(st, performance.now())) await this.flush(st)
          },
        ).catch(() => undefined),
      ),
    )
  }

  /** Reads the committed offset and any flush intent of a newly owned partition. */
  private async initPartition(partition: number, firstFetched: number): Promise<PartitionState> {
    const committed = await this.deps.source.committed(partition)
    const st = new PartitionState(
      this.config.infra.topics.events,
      partition,
      committed.offset >= 0 ? committed.offset : firstFetched,
      {
        windowUs: this.config.windowMs * 1000,
        allowedLatenessUs: this.config.allowedLatenessMs * 1000,
        storeRawEvents: this.config.storeRawEvents,
        maxEventAgeUs: this.config.maxEventAgeS * 1e6,
        maxEventFutureUs: this.config.maxEventFutureS * 1e6,
      },
    )
    const intent = parseIntent(committed.metadata)
    if (intent !== undefined && intent.end >= st.startOffset) {
      st.replayEnd = intent.end
      this.stats.replays++
    }
    this.states.set(partition, st)
    this.advancedAt.set(partition, Date.now())
    return st
  }

  /**
   * Waits for the partition's batch in flight, then commits the intent,
   * drains the partition's state into a batch and starts storing it in the
   * background; the state goes on from the next offset meanwhile. False when
   * the partition is held back (its previous batch failed: the partition is
   * paused and that batch retried by the timer), so nothing was drained.
   */
  private async flush(st: PartitionState): Promise<boolean> {
    const p = st.partition
    await this.storing.get(p)
    if (this.pending.has(p)) return false
    if (st.pendingMessages === 0 || this.states.get(p) !== st) return true
    const replay = st.replayEnd !== undefined
    if (!replay) {
      await this.commit(st, st.startOffset, JSON.stringify({ v: INTENT_VERSION, end: st.lastOffset }))
    }
    const lateBefore = st.windows.lateTotal
    const batch = st.drain(this.config.groupId)
    this.drainedAt.set(p, performance.now())
    // From here the state covers the offsets after the batch (and a replay is over).
    st.advance()
    const late = st.windows.lateTotal - lateBefore
    this.stats.lateEvents += late
    const f: PendingFlush = {
      batch,
      gen: this.generation,
      replay,
      retryAt: 0,
      waitMs: this.config.insertRetryMinMs,
      failures: 0,
      failingSince: 0,
      late,
      deadLettersSent: false,
    }
    this.pending.set(p, f)
    this.storeInBackground(st, f)
    return true
  }

  /**
   * One store attempt off the caller's path, registered in `storing` until it settles (stop() and flushAll() wait for
   * it).
   */
  private storeInBackground(st: PartitionState, f: PendingFlush): void {
    const p = st.partition
    const run = this.store(st, f)
      .then(
        (stored) => {
          if (stored && f.failures > 0) this.deps.source.resume(p)
        },
        () => {
          // A failed commit (most often a rebalance: the state was dropped and
          // the partition's owner replays from the committed position) or a
          // stop: this batch is abandoned with its state.
          if (this.pending.get(p) === f) this.pending.delete(p)
          if (f.failures > 0) this.deps.source.resume(p)
        },
      )
      .finally(() => {
        if (this.storing.get(p) === run) this.storing.delete(p)
      })
    this.storing.set(p, run)
    this.track(run)
  }

  private async retryPending(st: PartitionState): Promise<void> {
    const f = this.pending.get(st.partition)
    if (f === undefined || this.storing.has(st.partition)) return
    if (f.gen !== this.generation) {
      this.pending.delete(st.partition)
      return
    }
    this.storeInBackground(st, f)
    await this.storing.get(st.partition)
  }

  /** One attempt at storing a drained batch; on success commits it and forgets it. */
  private async store(st: PartitionState, f: PendingFlush): Promise<boolean> {
    const tracer = this.deps.tracer
    const attempt = (describe?: (events: number, windows: number) => void): Promise<boolean> =>
      this.storeOnce(st, f, describe)
    if (tracer === undefined) return attempt()
    return tracer.startActiveSpan(
      'processor.flush',
      {
        attributes: {
          'messaging.destination.name': st.topic,
          'messaging.destination.partition.id': String(st.partition),
          'benchstream.first_offset': f.batch.firstOffset,
          'benchstream.last_offset': f.batch.lastOffset,
          'benchstream.replay': f.replay,
          'benchstream.attempt': f.failures + 1,
        },
      },
      async (span) => {
        try {
          const ok = await attempt((events, windows) =>
            span.setAttributes({ 'benchstream.events': events, 'benchstream.window_rows': windows }),
          )
          if (!ok)
            span.setStatus({ code: SpanStatusCode.ERROR, message: 'held back: the store did not take the batch' })
          return ok
        } catch (err) {
          span.recordException(err as Error)
          span.setStatus({ code: SpanStatusCode.ERROR, message: (err as Error).message })
          throw err
        } finally {
          span.end()
        }
      },
    )
  }

  private async storeOnce(
    st: PartitionState,
    f: PendingFlush,
    describe?: (events: number, windows: number) => void,
  ): Promise<boolean> {
    const t0 = performance.now()
    const { batch } = f
    const p = st.partition
    describe?.(batch.events, batch.windows.length)
    let refused: DeadLetterRecord[] = []
    try {
      if (!f.deadLettersSent && batch.deadLetters.length > 0) {
        await this.deps.deadLetters.send(
          batch.deadLetters.map((d) => ({
            sourceTopic: batch.topic,
            sourcePartition: p,
            sourceOffset: d.offset,
            reason: d.reason,
            detail: d.detail,
            payload: d.payload,
          })),
        )
        f.deadLettersSent = true
      }
      // A replay, or a retry after a failed attempt, may meet a deduplication record of an
      // insert that never landed: the store checks those batches and writes such rows again.
      const result = await this.deps.store.write(batch, { verify: f.replay || f.failures > 0 })
      for (const m of result.missing) {
        this.stats.rowsRewritten += m.restored ? m.expected : 0
        this.stats.rowsUnaccounted += m.restored ? 0 : m.expected - m.found
        this.deps.metrics?.replayMissing(m.table, m.restored ? m.expected : 0, m.restored ? 0 : m.expected - m.found)
        const where = {
          partition: p,
          offsets: `${batch.firstOffset}-${batch.lastOffset}`,
          table: m.table,
          expected: m.expected,
          found: m.found,
        }
        if (m.restored)
          this.deps.log?.warn(
            where,
            'ClickHouse dropped the replay of a batch as a duplicate of an insert that never landed (a crash ' +
              'between its deduplication record and its part); written again',
          )
        else
          this.deps.log?.error(
            where,
            'rows of a replayed batch are missing in ClickHouse and could not be written again safely',
          )
      }
      refused = result.refused.map((r) => ({
        sourceTopic: batch.topic,
        sourcePartition: p,
        sourceOffset: Math.max(0, r.offset),
        reason: 'store_rejected',
        detail: `${r.table}: ${r.error}`,
        payload: r.payload,
      }))
      if (refused.length > 0) {
        await this.deps.deadLetters.send(refused)
        this.deps.log?.warn(
          { partition: p, refused: refused.length, first: refused[0]!.detail.slice(0, 300) },
          'ClickHouse refused rows of a batch: dead-lettered, the rest stored',
        )
      }
    } catch (err) {
      if (!this.running || f.gen !== this.generation) throw err
      this.holdBack(st, f, err)
      return false
    }
    if (f.gen !== this.generation) return false
    await this.commit(st, batch.lastOffset + 1, null)
    this.advancedAt.set(p, Date.now())
    this.pending.delete(p)
    if (f.failures > 0)
      this.deps.log?.info(
        { partition: p, failures: f.failures },
        'ClickHouse write succeeded after retries; partition resumed',
      )
    const ms = performance.now() - t0
    const dead = batch.deadLetters.length + refused.length
    this.stats.flushes++
    this.stats.events += batch.events
    this.stats.lastFlushMs = ms
    this.stats.flushMsTotal += ms
    this.stats.deadLetters += dead
    for (const d of batch.deadLetters)
      this.stats.rejectedByReason[d.reason] = (this.stats.rejectedByReason[d.reason] ?? 0) + 1
    if (refused.length > 0)
      this.stats.rejectedByReason.store_rejected = (this.stats.rejectedByReason.store_rejected ?? 0) + refused.length
    this.deps.metrics?.flushed(batch, ms, f.late, refused.length)
    this.deps.onFlushed?.(batch)
    return true
  }

  /** A failed attempt: pause the partition and schedule the next one with backoff. */
  private holdBack(st: PartitionState, f: PendingFlush, err: unknown): void {
    const now = performance.now()
    if (f.failures === 0) {
      f.failingSince = Date.now()
      this.deps.source.pause(st.partition)
    }
    f.failures++
    this.stats.insertRetries++
    this.deps.metrics?.retried()
    // First failure, then at most every RETRY_LOG_EVERY_MS: a storm is one line a while, not thousands.
    if (f.failures === 1 || now - (this.lastRetryLogAt.get(st.partition) ?? 0) >= RETRY_LOG_EVERY_MS) {
      this.lastRetryLogAt.set(st.partition, now)
      this.deps.log?.warn(
        {
          partition: st.partition,
          offsets: `${f.batch.firstOffset}-${f.batch.lastOffset}`,
          failures: f.failures,
          nextRetryMs: f.waitMs,
          err: (err as Error).message,
        },
        'ClickHouse write failed; partition paused, retrying with backoff',
      )
    }
    f.retryAt = now + f.waitMs
    f.waitMs = Math.min(this.config.insertRetryMaxMs, f.waitMs * 2)
  }

  private async commit(st: PartitionState, offset: number, metadata: string | null): Promise<void> {
    try {
      await this.deps.source.commit(st.partition, offset, metadata)
    } catch (err) {
      // Most often a rebalance took the partition away. Either way this
      // state cannot be trusted any more: drop it and read the partition
      // again from its committed position (the new owner, or we, replay).
      if (this.states.get(st.partition) === st) this.states.delete(st.partition)
      throw new BenchstreamError(
        'BS_ERR_KAFKA',
        `committing offset ${offset} of partition ${st.partition} failed: ${(err as Error).message}`,
        { cause: err },
      )
    }
  }

  /** Retries a lookup with exponential backoff until it succeeds or the processor stops or rebalances. */
  private async retrying(fn: () => Promise<void>, heartbeat: () => Promise<void>, gen: number): Promise<void> {
    let wait = this.config.insertRetryMinMs
    for (;;) {
      try {
        await fn()
        return
      } catch (err) {
        if (!this.running || gen !== this.generation) throw err
        this.deps.log?.warn({ err: (err as Error).message, nextRetryMs: wait }, 'ClickHouse lookup failed; retrying')
        await new Promise((r) => setTimeout(r, wait))
        wait = Math.min(this.config.insertRetryMaxMs, wait * 2)
        await heartbeat().catch(() => undefined)
      }
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

/** Builds a processor from its config and ports; nothing starts until start(). */
export function build(config: ProcessorConfig, deps: ProcessorDeps): Processor {
  return new Processor(config, deps)
}

/** The next offset a partition's state expects: after the last message added, or where the state starts. */
function nextOffset(st: PartitionState): number {
  return st.lastOffset >= 0 ? st.lastOffset + 1 : st.startOffset
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
