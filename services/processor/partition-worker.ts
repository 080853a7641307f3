/**
 * One assigned partition of the events topic, from its committed position
 * to its revocation: taking the source's batches into the PartitionState,
 * deciding when to flush, and the partition's health. The exactly-once
 * protocol that moves a drained batch into the store (intent, write, commit)
 * is FlushProtocol (flush-protocol.ts), which this class extends; the design:
 * docs/design/exactly-once.md.
 *
 * Decoding runs beside the phases: while a batch is storing (in the
 * background) the next range accumulates, so the consumer never waits for
 * ClickHouse; one batch is in flight at a time, which bounds memory to two a
 * partition.
 */
import type { SourceBatch } from '../core/ports/partition-source.js'
import { PartitionState } from '../core/stats/partition-state.js'
import { FlushProtocol, parseIntent, type WorkerPhase } from './flush-protocol.js'
import type { WorkerContext } from './worker-context.js'

/**
 * Messages held per partition before a flush is forced, whatever they hold (bounds dead letters and control records).
 */
const MAX_PENDING_MESSAGES = 20_000
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

export class PartitionWorker extends FlushProtocol {
  /** The work holding this partition (a batch being taken, a flush, a retry): one at a time. */
  private lock: Promise<void> | undefined
  /** Messages between the committed position and the log end, as last observed. */
  private lag = 0
  /** performance.now() when the last source batch was taken (FlushProtocol's drainedAt: the last flush's drain). */
  private takenAt: number | undefined
  /** The offset a seek back to the committed position was last asked for (until a batch starts there). */
  private seekedTo: number | undefined

  /**
   * @param predecessor settles when the revoked worker this one replaces has stopped writing: this worker writes
   *   nothing before (a replay verified while the old insert is still landing would write its rows twice).
   */
  constructor(partition: number, ctx: WorkerContext, predecessor?: Promise<void>) {
    super(partition, ctx)
    if (predecessor !== undefined) void this.runInBackground(predecessor)
  }

  /** The protocol's current phase. */
  get phase(): WorkerPhase {
    return this.current
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
