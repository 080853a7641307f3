/**
 * The exactly-once protocol of one assigned partition of the events topic:
 * how the batch drained from its PartitionState reaches the store and the
 * offsets move on. The PartitionWorker (partition-worker.ts) extends it with
 * taking batches from the source and deciding when to flush
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
 * have (BS_ERR_INTERNAL: a bug in the protocol):
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
 * A batch the store cannot take now is held back while its partition is
 * paused, so one stuck partition never holds up the others; rows the store
 * refuses for what they hold are dead-lettered, so no message can stop
 * ingestion. A revoked worker never writes, commits, seeks or resumes again:
 * its background store checks for it between each step.
 */
import { SpanStatusCode } from '@opentelemetry/api'
import { BenchstreamError, isBenchstreamError } from '../core/errors.js'
import type { DeadLetterRecord } from '../core/ports/dead-letter-sink.js'
import type { FlushBatch, PartitionState } from '../core/stats/partition-state.js'
import type { WorkerContext } from './worker-context.js'

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
/** A failing write is logged at its first failure and then at most this often. */
const RETRY_LOG_EVERY_MS = 10_000

/** The protocol's phases and the batch in flight; PartitionWorker adds the rest. */
export abstract class FlushProtocol {
  /** The protocol's phase: the one field that says where the partition is (see the file comment). */
  protected current: WorkerPhase = 'closed'
  /** What was read since the committed position; undefined while closed (and once revoked). */
  protected st: PartitionState | undefined
  /** The drained batch in storing, held-back or committing. */
  protected batch: InFlightBatch | undefined
  /** The store running in the background: this worker's, or at first the one its revoked predecessor left running. */
  protected background: Promise<void> | undefined
  /** Date.now() of the last commit that moved the partition forward (or when it was opened). */
  protected advancedAt = Date.now()
  /** performance.now() when the last flush drained the state. */
  protected drainedAt: number | undefined
  /** performance.now() of the last retry log line. */
  private lastRetryLogAt = 0
  /**
   * Where the first state this worker dropped began: a partition that has never had a commit is read again from
   * there (not from wherever the source had read on to).
   */
  protected droppedFrom: number | undefined

  constructor(
    readonly partition: number,
    protected readonly ctx: WorkerContext,
  ) {}

  /** Once true, never false again: the worker may not write, commit, seek or resume any more. */
  get revoked(): boolean {
    return this.current === 'revoked'
  }

  /**
   * Waits for the batch in flight, then commits the intent (accumulating ->
   * intent-committing; a replay has one already), drains the state into a
   * batch and starts storing it in the background (-> storing); the state
   * goes on from the next offset meanwhile. False when the partition is held
   * back (its previous batch failed: the partition is paused and that batch
   * retried by the timer), so nothing was drained.
   */
  protected async flush(): Promise<boolean> {
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
  protected async retry(): Promise<void> {
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

  protected runInBackground(work: Promise<void>): Promise<void> {
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

  /** The one place the phase changes: a change from a phase not in `from` is a bug in the protocol. */
  protected move(to: WorkerPhase, from: readonly WorkerPhase[]): void {
    if (!from.includes(this.current))
      throw new BenchstreamError(
        'BS_ERR_INTERNAL',
        `partition ${this.partition}: the flush protocol has no change from ${this.current} to ${to} ` +
          `(only from ${from.join(', ')})`,
      )
    this.current = to
  }
}

/** The intent a flush committed with the offset (its metadata), or undefined when there is none. */
export function parseIntent(metadata: string | null | undefined): { end: number } | undefined {
  if (metadata === null || metadata === undefined || metadata === '') return undefined
  try {
    const v = JSON.parse(metadata) as { v?: unknown; end?: unknown }
    return v.v === INTENT_VERSION && typeof v.end === 'number' ? { end: v.end } : undefined
  } catch {
    return undefined
  }
}
