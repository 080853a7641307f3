/**
 * The stream processor: takes record batches from a PartitionSource and
 * hands each to the PartitionWorker of its partition, which folds it into
 * state (windows, raw events, dead letters), writes that state to the
 * WindowStore and commits the offsets, exactly once into the store
 * (services/processor/flush-protocol.ts has the protocol,
 * docs/design/exactly-once.md the long explanation).
 *
 * This file routes: one worker per owned partition, created at the
 * partition's first batch and revoked at the next rebalance; a flush timer
 * that visits every worker; health, held-back batches and lag gathered from
 * them. What is shared stays here: the counters, and the window length of
 * each run (RunWindows), learned once for all partitions.
 *
 * Imports no infrastructure client: Kafka comes in through PartitionSource
 * and DeadLetterSink, ClickHouse through WindowStore and RunWindowRegistry
 * (services/core/ports/); services/server/main.ts wires the adapters.
 */
import type { SourceOutage } from '../core/ports/partition-source.js'
import type { RunWindowRegistry } from '../core/ports/run-registry.js'
import type { ProcessorConfig } from './config.js'
import { PartitionWorker, type PartitionSnapshot } from './partition-worker.js'
import { newProcessorStats, type ProcessorStats, type WorkerContext, type WorkerPorts } from './worker-context.js'
import { RunWindows } from './run-windows.js'

export type { ProcessorStats }

export interface ProcessorDeps extends WorkerPorts {
  runs: RunWindowRegistry
}

/** How often consumer lag is read from the source. */
const LAG_REFRESH_MS = 5000
/**
 * How often the flush timer looks for due partitions, at most (the window-end alignment is only as precise as this).
 */
const FLUSH_TICK_MS = 50

export class Processor {
  /** partition -> the worker of each partition owned since the last rebalance. */
  private readonly workers = new Map<number, PartitionWorker>()
  /** partition -> settles when the store a revoked worker left running is over; the partition's next worker waits. */
  private readonly revoking = new Map<number, Promise<void>>()
  private timer: NodeJS.Timeout | undefined
  private lagTimer: NodeJS.Timeout | undefined
  /** Work started by timers; stop() waits for it so no client reconnects after close. */
  private readonly inflight = new Set<Promise<unknown>>()
  private running = false
  private readonly ctx: WorkerContext
  readonly stats: ProcessorStats = newProcessorStats()

  constructor(
    private readonly config: ProcessorConfig,
    private readonly deps: ProcessorDeps,
  ) {
    this.ctx = {
      config,
      ports: deps,
      stats: this.stats,
      runs: new RunWindows(deps.runs, config.windowMs),
      running: () => this.running,
      track: (work) => this.track(work),
    }
  }

  async start(): Promise<void> {
    this.running = true
    await this.deps.source.start({
      onRebalance: () => this.revokeAll(),
      onBatch: (batch) => this.worker(batch.partition).onBatch(batch),
    })
    // Partitions that stop receiving messages still get flushed on time.
    this.timer = setInterval(
      () => this.track(this.flushDue()),
      Math.min(FLUSH_TICK_MS, Math.floor(this.config.flushIntervalMs / 4)),
    )
    this.lagTimer = setInterval(() => this.track(this.refreshLag()), LAG_REFRESH_MS)
  }

  /**
   * What is wrong with ingestion now, in words, for /healthz: Kafka not
   * answering the processor's commits and offset reads (a broker down, a
   * leader or the group coordinator moving) for longer than `kafkaMs`, a
   * partition whose batch the store has not taken for longer than
   * `failingMs`, and a partition with lag whose committed position has not
   * moved for longer than `stallMs`. Empty when all is well.
   */
  health(bounds: { failingMs: number; stallMs: number; kafkaMs: number }, now = Date.now()): string[] {
    const problems: string[] = []
    const kafka = this.deps.source.outage?.()
    if (kafka !== undefined && kafka.forMs > bounds.kafkaMs)
      problems.push(
        `Kafka has not answered the processor for ${Math.round(kafka.forMs / 1000)} s (since ` +
          `${new Date(kafka.sinceMs).toISOString()}): ${kafka.problem}`,
      )
    for (const w of this.workers.values()) {
      const h = w.heldBack(now)
      if (h !== undefined && h.failingForMs > bounds.failingMs)
        problems.push(
          `partition ${h.partition}: ClickHouse has refused its writes for ${Math.round(h.failingForMs / 1000)} ` +
            `s (${h.failures} attempts)`,
        )
    }
    for (const w of this.workers.values()) {
      const stalled = w.stalled(bounds.stallMs, now)
      if (stalled !== undefined) problems.push(stalled)
    }
    return problems
  }

  /**
   * Flushes every partition that has pending data and waits until it is stored or held back (used on shutdown and by
   * tests).
   */
  async flushAll(): Promise<void> {
    for (const w of Array.from(this.workers.values())) await w.flushAll()
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

  /** Every worker's state, for /healthz and diagnostics; revoked workers still storing are counted. */
  partitions(): { workers: PartitionSnapshot[]; revokedStoring: number[] } {
    const now = Date.now()
    return {
      workers: [...this.workers.values()].map((w) => w.snapshot(now)).sort((a, b) => a.partition - b.partition),
      revokedStoring: [...this.revoking.keys()].sort((a, b) => a - b),
    }
  }

  /** Kafka not answering the processor now (any duration), or undefined: what /healthz shows beside its verdict. */
  kafkaOutage(): SourceOutage | undefined {
    return this.deps.source.outage?.()
  }

  /** Partitions whose batch the store has not taken, with how long they have been failing (health). */
  heldBack(): Array<{ partition: number; failures: number; failingForMs: number }> {
    const now = Date.now()
    return [...this.workers.values()].flatMap((w) => w.heldBack(now) ?? [])
  }

  /** The worker of a partition, created at its first batch since the last rebalance. */
  private worker(partition: number): PartitionWorker {
    let w = this.workers.get(partition)
    if (w === undefined) {
      w = new PartitionWorker(partition, this.ctx, this.revoking.get(partition))
      this.workers.set(partition, w)
    }
    return w
  }

  /**
   * The assignment may have changed, and the source reads every partition it
   * owns again from the committed offset (the port's contract: kafkajs does so
   * for every partition after any join, kept ones included), so every worker
   * is revoked, not only those of partitions that went away; a partition's
   * next batch gets a new worker.
   */
  private revokeAll(): void {
    for (const [p, w] of this.workers) {
      w.revoke()
      const settled = w.settled()
      this.revoking.set(p, settled)
      void settled.then(() => {
        if (this.revoking.get(p) === settled) this.revoking.delete(p)
      })
    }
    this.workers.clear()
  }

  private track(p: Promise<unknown>): void {
    const guarded = p.catch(() => undefined)
    this.inflight.add(guarded)
    void guarded.finally(() => this.inflight.delete(guarded))
  }

  /** Consumer lag per owned partition: the log end minus the committed position (what is not yet stored). */
  private async refreshLag(): Promise<void> {
    const ends = await this.deps.source.endOffsets()
    const lag = this.deps.metrics?.lag
    lag?.clear()
    for (const w of this.workers.values()) {
      const behind = w.observeLogEnd(ends.get(w.partition))
      if (behind !== undefined) lag?.set(w.partition, behind)
    }
  }

  /**
   * Due partitions flush side by side: their inserts and commits overlap
   * instead of queueing behind each other (each worker has its own lock).
   * Held-back batches are retried here when their backoff has passed.
   */
  private async flushDue(): Promise<void> {
    const now = performance.now()
    await Promise.all([...this.workers.values()].map((w) => w.tick(now).catch(() => undefined)))
  }
}

/** Builds a processor from its config and ports; nothing starts until start(). */
export function build(config: ProcessorConfig, deps: ProcessorDeps): Processor {
  return new Processor(config, deps)
}
