/**
 * One assigned partition of the events topic, from its committed position
 * to its revocation: the PartitionState being built, the batch the store has
 * not taken yet, and the exactly-once protocol that moves one into the other
 * (docs/design/exactly-once.md explains it at length):
 *  1. intent: commit offset a again with metadata {"v":1,"end":b};
 *  2. write the batch under the token "<group>/<topic>/<p>/<a>-<b>";
 *  3. commit b + 1.
 * Whoever owns the partition next and finds an intent re-reads exactly a..b
 * and writes the same token as a verified write (the store counts the rows
 * and writes again what ClickHouse dropped as a duplicate of an insert that
 * never landed); data never flushed is simply read again.
 *
 * The protocol is a state machine with its phase in one field (`current`);
 * every change goes through move(), which refuses one the protocol does not
 * have (BS_ERR_INTERNAL: a bug in this file):
 *
 *   closed ──open──> accumulating, or replaying (an intent was found)
 *   accumulating ──flush──> intent-committing ──intent committed──> storing
 *   replaying ──cut at b──> storing                  (no intent: it is there)
 *   storing ──written──> committing ──b+1 committed──> accumulating
 *   storing ──write failed──> held-back ──backoff passed──> storing
 *   intent-committing, committing ──commit failed──> closed  (state dropped)
 *   storing ──write failed while stopping──> closed          (batch abandoned)
 *   every phase but revoked ──revoke──> revoked              (final)
 *
 * Decoding runs beside the phases: while a batch is storing (in the
 * background) the next range accumulates, so the consumer never waits for
 * ClickHouse; one batch is in flight at a time, which bounds memory to two a
 * partition. A batch the store cannot take now is held back while its
 * partition is paused, so one stuck partition never holds up the others;
 * rows the store refuses for what they hold are dead-lettered, so no message
 * can stop ingestion. A revoked worker never writes, commits, seeks or
 * resumes again: its background store checks for it between each step.
 */
import { SpanStatusCode, type Tracer } from '@opentelemetry/api'
import { BenchstreamError, isBenchstreamError } from '../core/errors.js'
import type { DeadLetterRecord, DeadLetterSink } from '../core/ports/dead-letter-sink.js'
import type { PartitionSource, SourceBatch } from '../core/ports/partition-source.js'
import type { WindowStore } from '../core/ports/window-store.js'
import { PartitionState, type FlushBatch } from '../core/stats/partition-state.js'
import type { Logger } from '../common/logger.js'
import type { ProcessorConfig } from './config.js'
import type { ProcessorMetrics } from './metrics.js'
import type { RunWindows } from './run-windows.js'

/** Counters the processor exposes (metrics, tests, the demo); its workers add to one shared object. */
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

export function newProcessorStats(): ProcessorStats {
  return {
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
}

/** The ports a worker uses: the processor's, less the run registry (its RunWindows are shared). */
export interface WorkerPorts {
  source: PartitionSource
  deadLetters: DeadLetterSink
  store: WindowStore
  /** Called after each batch is stored and committed (alerts and live views subscribe here). */
  onFlushed?: (batch: FlushBatch) => void
  /** OpenTelemetry instruments (services/processor/metrics.ts). */
  metrics?: ProcessorMetrics
  /** Each flush becomes a span. */
  tracer?: Tracer
  /** Diagnostics: retries and failures, rate-limited. */
  log?: Logger
}

/** What all workers of one processor share. */
export interface WorkerContext {
  config: ProcessorConfig
  ports: WorkerPorts
  stats: ProcessorStats
  runs: RunWindows
  /** False once the processor stops: a failing write is then abandoned instead of retried. */
  running: () => boolean
  /** Registers work started off the caller's path (the processor's stop() waits for it). */
  track: (work: Promise<unknown>) => void
}

/** The phases of the flush protocol (see the file comment). */
export type WorkerPhase =
  | 'closed'
  | 'accumulating'
  | 'replaying'
  | 'intent-committing'
  | 'storing'
  | 'committing'
  | 'held-back'
  | 'revoked'

/** A drained batch the store has not taken yet. */
interface InFlightBatch {
  batch: FlushBatch
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
/** A failing write is logged at its first failure and then at most this often. */
const RETRY_LOG_EVERY_MS = 10_000
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
/** How long a waiter for the worker's lock waits before it heartbeats again. */
const LOCK_HEARTBEAT_MS = 1000

const ALL_BUT_REVOKED: readonly WorkerPhase[] = [
  'closed',
  'accumulating',
  'replaying',
  'intent-committing',
  'storing',
  'committing',
  'held-back',
]

/** A worker's state in figures (PartitionWorker.snapshot). */
export interface PartitionSnapshot {
  partition: number
  phase: WorkerPhase
  /** Where the state starts (the committed position when it was opened or last committed); null before. */
  committed: number | null
  /** The last offset taken; null before any. */
  read: number | null
  /** The batch the store has not taken yet, as its offsets. */
  inFlight: string | null
  failures: number
  /** A store (or a predecessor's) is still running. */
  background: boolean
  lag: number
  sinceAdvancedMs: number
}

export class PartitionWorker {
  /** The protocol's phase: the one field that says where the partition is (see the file comment). */
  private current: WorkerPhase = 'closed'
  /** What was read since the committed position; undefined while closed (and once revoked). */
  private st: PartitionState | undefined
  /** The drained batch in storing, held-back or committing. */
  private batch: InFlightBatch | undefined
  /** The work holding this partition (a batch being taken, a flush, a retry): one at a time. */
  private lock: Promise<void> | undefined
  /** The store running in the background: this worker's, or at first the one its revoked predecessor left running. */
  private background: Promise<void> | undefined
  /** Messages between the committed position and the log end, as last observed. */
  private lag = 0
  /** Date.now() of the last commit that moved the partition forward (or when it was opened). */
  private advancedAt = Date.now()
  /** performance.now() when the last source batch was taken, and when the last flush drained the state. */
  private takenAt: number | undefined
  private drainedAt: number | undefined
  /** performance.now() of the last retry log line. */
  private lastRetryLogAt = 0
  /** The offset a seek back to the committed position was last asked for (until a batch starts there). */
  private seekedTo: number | undefined
  /**
   * Where the first state this worker dropped began: a partition that has never had a commit is read again from
   * there (not from wherever the source had read on to).
   */
  private droppedFrom: number | undefined

  /**
   * @param predecessor settles when the revoked worker this one replaces has stopped writing: this worker writes
   *   nothing before (a replay verified while the old insert is still landing would write its rows twice).
   */
  constructor(
    readonly partition: number,
    private readonly ctx: WorkerContext,
    predecessor?: Promise<void>,
  ) {
    if (predecessor !== undefined) void this.runInBackground(predecessor)
  }

  /** The protocol's current phase. */
  get phase(): WorkerPhase {
    return this.current
  }

  /** Once true, never false again: the worker may not write, commit, seek or resume any more. */
  get revoked(): boolean {
    return this.current === 'revoked'
  }

  /** Takes one batch from the source (serialised with this partition's other work; a waiter heartbeats). */
  onBatch(batch: SourceBatch): Promise<void> {
    return this.withLock(
      () => batch.heartbeat(),
      () => this.take(batch),
    )
  }

  /**
   * The flush timer's visit: retries a held-back batch whose backoff has passed at `now` (performance.now()), or
   * flushes what has accumulated if it is due. Leaves a partition alone while it is busy: its next flush would only
   * wait for the work in progress.
   */
  async tick(now: number): Promise<void> {
    if (this.lock !== undefined || this.background !== undefined || this.st === undefined) return
    const retry = this.current === 'held-back'
    if (retry ? this.batch!.retryAt > now : !this.due(now)) return
    await this.withLock(
      async () => undefined,
      async () => {
        if (this.revoked || this.background !== undefined) return
        if (this.current === 'held-back') await this.retry()
        else if (this.due(now)) await this.flush()
      },
    )
  }

  /** Retries a held-back batch, flushes what has accumulated, and waits until it is stored or held back. */
  flushAll(): Promise<void> {
    return this.withLock(
      async () => undefined,
      async () => {
        await this.background
        if (this.st === undefined) return
        if (this.current === 'held-back') await this.retry()
        const st = this.st
        if (this.batch === undefined && st !== undefined && st.pendingMessages > 0 && this.current !== 'replaying')
          await this.flush()
        await this.background
      },
    )
  }

  /**
   * The partition was (or may have been) taken away: final. What was read and not committed is dropped (the
   * partition's next owner reads it again from the committed position), and a store still running can neither write
   * nor commit after this. A partition paused behind a failing batch is resumed so that reading can start over.
   */
  revoke(): void {
    const paused = (this.batch?.failures ?? 0) > 0
    this.move('revoked', ALL_BUT_REVOKED)
    this.st = undefined
    this.batch = undefined
    if (paused) this.ctx.ports.source.resume(this.partition)
  }

  /** Settles when no store of this worker runs any more (the next worker of the partition waits for it). */
  settled(): Promise<void> {
    return this.background ?? Promise.resolve()
  }

  /**
   * Takes the log end offset (undefined when unknown): keeps the lag behind the committed position (health) and
   * returns the lag behind what was read (the consumer-lag metric), or undefined when there is no state.
   */
  observeLogEnd(end: number | undefined): number | undefined {
    const st = this.st
    if (st === undefined || end === undefined) {
      this.lag = 0
      return undefined
    }
    this.lag = Math.max(0, end - (this.batch?.batch.firstOffset ?? st.startOffset))
    return Math.max(0, end - nextOffset(st))
  }

  /** The partition's batch the store has failed to take, with how long it has been failing; undefined when none. */
  heldBack(now = Date.now()): { partition: number; failures: number; failingForMs: number } | undefined {
    const f = this.batch
    if (f === undefined || f.failures === 0) return undefined
    return { partition: this.partition, failures: f.failures, failingForMs: now - f.failingSince }
  }

  /** Where the worker stands, for /healthz and for a test that waited in vain. */
  snapshot(now = Date.now()): PartitionSnapshot {
    return {
      partition: this.partition,
      phase: this.current,
      committed: this.st?.startOffset ?? null,
      read: this.st === undefined || this.st.lastOffset < 0 ? null : this.st.lastOffset,
      inFlight: this.batch === undefined ? null : `${this.batch.batch.firstOffset}-${this.batch.batch.lastOffset}`,
      failures: this.batch?.failures ?? 0,
      background: this.background !== undefined,
      lag: this.lag,
      sinceAdvancedMs: now - this.advancedAt,
    }
  }

  /** A problem for /healthz when the partition has lag and its committed position has not moved for `stallMs`. */
  stalled(stallMs: number, now = Date.now()): string | undefined {
    if (this.st === undefined || this.batch !== undefined) return undefined
    if (this.lag <= 0 || now - this.advancedAt <= stallMs) return undefined
    return (
      `partition ${this.partition}: ${this.lag} messages behind and not advanced ` +
      `for ${Math.round((now - this.advancedAt) / 1000)} s`
    )
  }

  // ------------------------------------------------------------------ taking batches

  private async take(batch: SourceBatch): Promise<void> {
    if (this.revoked) return
    const { source, metrics } = this.ctx.ports
    const p = this.partition
    const st = this.st ?? (await this.open(batch.firstOffset))
    if (st === undefined) return
    // The last seek back took effect (reading starts there again): if the state is dropped again at the same
    // position (commits failing on and on while Kafka is out), the next one is needed as much as the first.
    if (this.seekedTo !== undefined && batch.firstOffset <= this.seekedTo) this.seekedTo = undefined
    if ((this.batch?.failures ?? 0) > 0) {
      // Paused behind a batch the store has not taken: take nothing more, and
      // have these messages read again after it.
      source.seek(p, nextOffset(st))
      return
    }
    if (batch.firstOffset > st.startOffset && st.lastOffset < 0 && this.seekedTo !== st.startOffset) {
      // State was dropped (a failed commit) while the source read on: go back
      // to the committed position, or the messages in between would be lost.
      // Once per position unless it took effect: a log truncated by
      // retention really starts later, and the source lands after it again.
      this.seekedTo = st.startOffset
      source.seek(p, st.startOffset)
      return
    }
    await this.retrying(
      () => this.ctx.runs.learn(batch.messages),
      () => batch.heartbeat(),
    )
    if (this.revoked) return
    this.takenAt = performance.now()
    const nowUs = Date.now() * 1000
    const { config, stats } = this.ctx
    for (const m of batch.messages) {
      // A failed commit drops the state (the rest is read again from the committed position), and so does a revocation.
      if (!this.ctx.running() || !batch.isCurrent() || this.st !== st) return
      if (m.offset < st.startOffset || m.offset <= st.lastOffset) continue
      const refusal = this.ctx.runs.refusal(m.value)
      if (refusal === undefined) st.add(m.value, m.offset, nowUs)
      else st.refuse(m.value, m.offset, 'window_length_mismatch', refusal.runId, refusal.detail)
      stats.messages++
      metrics?.consumed(1)
      const cut =
        st.replayEnd !== undefined
          ? m.offset >= st.replayEnd // replaying an interrupted flush: cut exactly where it was cut
          : st.pendingEvents >= config.maxPendingEvents || st.pendingMessages >= MAX_PENDING_MESSAGES
      if (cut && !(await this.flush())) {
        // Held back: read the rest of this batch again once the store has taken it.
        source.seek(p, m.offset + 1)
        return
      }
    }
    this.takenAt = performance.now()
    if (this.due(performance.now())) await this.flush()
    await batch.heartbeat()
  }

  /** Reads the committed offset and any flush intent: closed -> accumulating, or replaying. */
  private async open(firstFetched: number): Promise<PartitionState | undefined> {
    const { config } = this.ctx
    const committed = await this.ctx.ports.source.committed(this.partition)
    if (this.revoked) return undefined
    const st = new PartitionState(
      config.infra.topics.events,
      this.partition,
      // Never committed: where the state this worker dropped began, else where reading starts.
      committed.offset >= 0 ? committed.offset : (this.droppedFrom ?? firstFetched),
      {
        windowUs: config.windowMs * 1000,
        allowedLatenessUs: config.allowedLatenessMs * 1000,
        storeRawEvents: config.storeRawEvents,
        maxEventAgeUs: config.maxEventAgeS * 1e6,
        maxEventFutureUs: config.maxEventFutureS * 1e6,
      },
    )
    const intent = parseIntent(committed.metadata)
    const replay = intent !== undefined && intent.end >= st.startOffset
    if (replay) {
      st.replayEnd = intent.end
      this.ctx.stats.replays++
    }
    if (replay || this.droppedFrom !== undefined)
      this.ctx.ports.log?.info(
        { partition: this.partition, committed: committed.offset, intent: committed.metadata, firstFetched },
        replay ? 'partition opened with an intent: replaying it' : 'partition opened again after a dropped state',
      )
    this.move(replay ? 'replaying' : 'accumulating', ['closed'])
    this.st = st
    this.advancedAt = Date.now()
    return st
  }

  /**
   * Whether the accumulated messages should be flushed now: the flush
   * interval has passed since the first of them, or the partition has been
   * quiet for QUIET_FLUSH_MS, or a window has ended (wall clock) since the
   * first of them and its events have had WINDOW_END_GRACE_MS to arrive.
   * Never during a replay, which is cut exactly where it was.
   */
  private due(nowPerf: number): boolean {
    const st = this.st
    if (st === undefined || st.pendingMessages === 0 || st.replayEnd !== undefined) return false
    const { flushIntervalMs, windowMs: W } = this.ctx.config
    if (nowPerf - st.firstAddedAt >= flushIntervalMs) return true
    if (
      nowPerf - (this.takenAt ?? nowPerf) >= QUIET_FLUSH_MS &&
      nowPerf - (this.drainedAt ?? Number.NEGATIVE_INFINITY) >= flushIntervalMs / 4
    )
      return true
    const firstWall = performance.timeOrigin + st.firstAddedAt
    return performance.timeOrigin + nowPerf >= (Math.floor(firstWall / W) + 1) * W + WINDOW_END_GRACE_MS
  }

  // ------------------------------------------------------------------ the protocol

  /**
   * Waits for the batch in flight, then commits the intent (accumulating ->
   * intent-committing; a replay has one already), drains the state into a
   * batch and starts storing it in the background (-> storing); the state
   * goes on from the next offset meanwhile. False when the partition is held
   * back (its previous batch failed: the partition is paused and that batch
   * retried by the timer), so nothing was drained.
   */
  private async flush(): Promise<boolean> {
    await this.background
    if (this.revoked) return true
    if (this.current === 'held-back') return false
    const st = this.st
    if (st === undefined || st.pendingMessages === 0) return true
    const replay = this.current === 'replaying'
    if (!replay) {
      this.move('intent-committing', ['accumulating'])
      await this.commit(st.startOffset, JSON.stringify({ v: INTENT_VERSION, end: st.lastOffset }))
      // Revoked while the intent was committed: the next owner reads it and writes the batch.
      if (this.revoked) return true
    }
    const lateBefore = st.windows.lateTotal
    const batch = st.drain(this.ctx.config.groupId)
    this.drainedAt = performance.now()
    // From here the state covers the offsets after the batch (and a replay is over).
    st.advance()
    const late = st.windows.lateTotal - lateBefore
    this.ctx.stats.lateEvents += late
    const f: InFlightBatch = {
      batch,
      replay,
      retryAt: 0,
      waitMs: this.ctx.config.insertRetryMinMs,
      failures: 0,
      failingSince: 0,
      late,
      deadLettersSent: false,
    }
    this.batch = f
    this.move('storing', ['intent-committing', 'replaying'])
    void this.storeInBackground(f)
    return true
  }

  /** A held-back batch whose backoff has passed: held-back -> storing, and waits for the attempt. */
  private async retry(): Promise<void> {
    const f = this.batch
    if (f === undefined) return
    this.move('storing', ['held-back'])
    await this.storeInBackground(f)
  }

  /** One store attempt off the caller's path; settles (never rejects) when it is over. */
  private storeInBackground(f: InFlightBatch): Promise<void> {
    const { source, log } = this.ctx.ports
    const p = this.partition
    const run = this.runInBackground(
      this.store(f).then(
        (stored) => {
          if (stored && f.failures > 0 && !this.revoked) source.resume(p)
        },
        (err: unknown) => {
          // A failed commit (most often a rebalance: the partition's owner
          // replays from the committed position) or a failure while stopping
          // has dropped the state already; anything else is a bug, and the
          // batch is abandoned with its state all the same.
          if (this.batch === f && (this.current === 'storing' || this.current === 'committing')) this.close()
          if (isBenchstreamError(err, 'BS_ERR_INTERNAL'))
            log?.error({ partition: p, err: (err as Error).message }, 'partition worker failed')
          if (f.failures > 0 && !this.revoked) source.resume(p)
        },
      ),
    )
    this.ctx.track(run)
    return run
  }

  private runInBackground(work: Promise<void>): Promise<void> {
    const run: Promise<void> = work.finally(() => {
      if (this.background === run) this.background = undefined
    })
    this.background = run
    return run
  }

  /** One attempt at storing a drained batch, traced; true once it is stored and committed. */
  private async store(f: InFlightBatch): Promise<boolean> {
    const tracer = this.ctx.ports.tracer
    if (tracer === undefined) return this.storeOnce(f)
    return tracer.startActiveSpan(
      'processor.flush',
      {
        attributes: {
          'messaging.destination.name': f.batch.topic,
          'messaging.destination.partition.id': String(this.partition),
          'benchstream.first_offset': f.batch.firstOffset,
          'benchstream.last_offset': f.batch.lastOffset,
          'benchstream.replay': f.replay,
          'benchstream.attempt': f.failures + 1,
        },
      },
      async (span) => {
        try {
          const ok = await this.storeOnce(f, (events, windows) =>
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

  /**
   * Dead letters, write, refused rows, commit b + 1: storing -> committing -> accumulating, or storing -> held-back.
   * A revoked worker stops at the next step (after the dead letters, after the write), so it neither writes nor
   * commits after the revocation.
   */
  private async storeOnce(f: InFlightBatch, describe?: (events: number, windows: number) => void): Promise<boolean> {
    const t0 = performance.now()
    const { batch } = f
    const p = this.partition
    const { ports, stats } = this.ctx
    describe?.(batch.events, batch.windows.length)
    let refused: DeadLetterRecord[] = []
    try {
      if (!f.deadLettersSent && batch.deadLetters.length > 0) {
        await ports.deadLetters.send(
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
      if (this.revoked) return false
      // A replay, or a retry after a failed attempt, may meet a deduplication record of an
      // insert that never landed: the store checks those batches and writes such rows again.
      const result = await ports.store.write(batch, { verify: f.replay || f.failures > 0 })
      for (const m of result.missing) {
        stats.rowsRewritten += m.restored ? m.expected : 0
        stats.rowsUnaccounted += m.restored ? 0 : m.expected - m.found
        ports.metrics?.replayMissing(m.table, m.restored ? m.expected : 0, m.restored ? 0 : m.expected - m.found)
        const where = {
          partition: p,
          offsets: `${batch.firstOffset}-${batch.lastOffset}`,
          table: m.table,
          expected: m.expected,
          found: m.found,
        }
        if (m.restored)
          ports.log?.warn(
            where,
            'ClickHouse dropped the replay of a batch as a duplicate of an insert that never landed (a crash ' +
              'between its deduplication record and its part); written again',
          )
        else
          ports.log?.error(
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
        await ports.deadLetters.send(refused)
        ports.log?.warn(
          { partition: p, refused: refused.length, first: refused[0]!.detail.slice(0, 300) },
          'ClickHouse refused rows of a batch: dead-lettered, the rest stored',
        )
      }
    } catch (err) {
      if (this.revoked) return false
      if (!this.ctx.running()) {
        // Stopping: the batch is abandoned, and with it the state after it (a later flush would commit past it).
        this.close()
        throw err
      }
      this.holdBack(f, err)
      return false
    }
    // Revoked while writing: what was written stays (the next owner's replay carries the same token and finds it),
    // but the offsets are the next owner's to commit.
    if (this.revoked) return false
    this.move('committing', ['storing'])
    await this.commit(batch.lastOffset + 1, null)
    this.advancedAt = Date.now()
    // A revocation during the commit leaves the worker revoked; the batch is stored and committed all the same.
    if (this.current === 'committing') {
      this.batch = undefined
      this.move('accumulating', ['committing'])
    }
    if (f.failures > 0)
      ports.log?.info(
        { partition: p, failures: f.failures },
        'ClickHouse write succeeded after retries; partition resumed',
      )
    const ms = performance.now() - t0
    const dead = batch.deadLetters.length + refused.length
    stats.flushes++
    stats.events += batch.events
    stats.lastFlushMs = ms
    stats.flushMsTotal += ms
    stats.deadLetters += dead
    for (const d of batch.deadLetters) stats.rejectedByReason[d.reason] = (stats.rejectedByReason[d.reason] ?? 0) + 1
    if (refused.length > 0)
      stats.rejectedByReason.store_rejected = (stats.rejectedByReason.store_rejected ?? 0) + refused.length
    ports.metrics?.flushed(batch, ms, f.late, refused.length)
    ports.onFlushed?.(batch)
    return true
  }

  /** A failed attempt: storing -> held-back; pause the partition and schedule the next attempt with backoff. */
  private holdBack(f: InFlightBatch, err: unknown): void {
    this.move('held-back', ['storing'])
    const now = performance.now()
    const { config, ports, stats } = this.ctx
    if (f.failures === 0) {
      f.failingSince = Date.now()
      ports.source.pause(this.partition)
    }
    f.failures++
    stats.insertRetries++
    ports.metrics?.retried()
    // First failure, then at most every RETRY_LOG_EVERY_MS: a storm is one line a while, not thousands.
    if (f.failures === 1 || now - this.lastRetryLogAt >= RETRY_LOG_EVERY_MS) {
      this.lastRetryLogAt = now
      ports.log?.warn(
        {
          partition: this.partition,
          offsets: `${f.batch.firstOffset}-${f.batch.lastOffset}`,
          failures: f.failures,
          nextRetryMs: f.waitMs,
          err: (err as Error).message,
        },
        'ClickHouse write failed; partition paused, retrying with backoff',
      )
    }
    f.retryAt = now + f.waitMs
    f.waitMs = Math.min(config.insertRetryMaxMs, f.waitMs * 2)
  }

  private async commit(offset: number, metadata: string | null): Promise<void> {
    try {
      await this.ctx.ports.source.commit(this.partition, offset, metadata)
    } catch (err) {
      // Most often a rebalance took the partition away. Either way this
      // state cannot be trusted any more: drop it and read the partition
      // again from its committed position (the new owner, or we, replay).
      if (!this.revoked) {
        this.ctx.ports.log?.warn(
          { partition: this.partition, offset, intent: metadata, err: (err as Error).message },
          'commit failed: state dropped, the partition is read again from its committed position',
        )
        this.close()
      }
      throw new BenchstreamError(
        'BS_ERR_KAFKA',
        `committing offset ${offset} of partition ${this.partition} failed: ${(err as Error).message}`,
        { cause: err },
      )
    }
  }

  /** Drops the state and any batch in flight: the next batch opens the partition again at its committed position. */
  private close(): void {
    this.move('closed', ['intent-committing', 'committing', 'storing'])
    this.droppedFrom ??= this.st?.startOffset
    this.st = undefined
    this.batch = undefined
  }

  /** The one place the phase changes: a change from a phase not in `from` is a bug in this file. */
  private move(to: WorkerPhase, from: readonly WorkerPhase[]): void {
    if (!from.includes(this.current))
      throw new BenchstreamError(
        'BS_ERR_INTERNAL',
        `partition ${this.partition}: the flush protocol has no change from ${this.current} to ${to} ` +
          `(only from ${from.join(', ')})`,
      )
    this.current = to
  }

  // ------------------------------------------------------------------ plumbing

  /** Retries a lookup with exponential backoff until it succeeds or the processor stops or the worker is revoked. */
  private async retrying(fn: () => Promise<void>, heartbeat: () => Promise<void>): Promise<void> {
    const { config, ports } = this.ctx
    let wait = config.insertRetryMinMs
    for (;;) {
      try {
        await fn()
        return
      } catch (err) {
        if (!this.ctx.running() || this.revoked) throw err
        ports.log?.warn({ err: (err as Error).message, nextRetryMs: wait }, 'ClickHouse lookup failed; retrying')
        await new Promise((r) => setTimeout(r, wait))
        wait = Math.min(config.insertRetryMaxMs, wait * 2)
        await heartbeat().catch(() => undefined)
      }
    }
  }

  /** Serialises work on this partition; a waiter keeps the consumer's session alive. */
  private async withLock(heartbeat: () => Promise<void>, fn: () => Promise<void>): Promise<void> {
    while (this.lock !== undefined) {
      await Promise.race([this.lock.catch(() => undefined), new Promise((r) => setTimeout(r, LOCK_HEARTBEAT_MS))])
      await heartbeat().catch(() => undefined)
    }
    const run = fn()
    this.lock = run
    try {
      await run
    } finally {
      if (this.lock === run) this.lock = undefined
    }
  }
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
