/**
 * Runs a workload phase. A client thread (YCSB's ClientThread) takes
 * transactions from the workload, executes them on its binding, times them,
 * hands one event per operation to the sink and adds the latency to the
 * driver's own histograms, so the driver can print YCSB's report without
 * asking anyone.
 *
 * runPhase runs all client threads of a phase on the calling JS thread (one
 * binding shared by them): the memory binding, whose store lives in this
 * thread, and tests. worker-pool.ts runs them in worker_threads instead, each
 * with its own connection, using the same ClientThread.
 *
 * As in YCSB, each of the N client threads does its share of the operation
 * count (count / N, the first count % N threads one more) and, with a
 * target, 1/N of the rate.
 *
 * Timing: latency is measured from the actual issue to completion; with a
 * target rate each thread follows an intended schedule, and the intended
 * latency is measured from the scheduled start (coordinated-omission
 * correction, YCSB's measurement.interval=both). Every event carries both.
 *
 * Schedule keeping is measured where the operations start: each JS thread
 * tracks how late its client threads start (ScheduleTracker), and the
 * client is behind while any of its JS threads is (ScheduleEpisodes).
 */
import { setImmediate as yieldToLoop } from 'node:timers/promises'
import { CACHE_OUTCOMES } from '../../schemas/events.v1.js'
import type { Histogram } from '../core/stats/histogram.js'
import type { Transaction, Workload } from '../core/workload/workload-types.js'
import { buildReport, type Report } from '../core/reports/ycsb-report.js'
import { statusOf, type Binding, type OpResult } from '../core/ports/binding.js'
import type { EventSink } from '../core/ports/event-sink.js'
import type { EventVisitor } from './event-ring.js'
import { Measurements, OP_CODE, STATUS_INDEX } from './measurements.js'

export interface PhaseOptions {
  phase: 'load' | 'run'
  threads: number
  /** Target ops/s for this client; 0 = as fast as possible. */
  target: number
  /** Stop after this many operations (0 = workload's own count, or unlimited for run with maxExecutionTimeS). */
  operationCount: number
  /** Stop after this many seconds (0 = no limit). */
  maxExecutionTimeS: number
  /** Called every statusIntervalS seconds with a status snapshot (0 = never). */
  statusIntervalS: number
  onStatus?: (s: StatusSnapshot) => void
  /**
   * With a target: an operation starting more than this many ms after its
   * scheduled start puts the client "behind schedule" (default 100).
   */
  maxScheduleLagMs?: number
  /** Called once when the client falls behind (again), and once when it has caught up. */
  onSchedule?: (e: ScheduleEvent) => void
  signal?: AbortSignal
}

/** The client fell behind its schedule, or caught up again. */
export type ScheduleEvent =
  | { kind: 'behind'; lagMs: number; elapsedMs: number }
  | { kind: 'caught-up'; maxLagMs: number; durationMs: number; elapsedMs: number }

/** How well the client kept its schedule over the phase (all zero without a target). */
export interface ScheduleSummary {
  /** Largest delay of an operation's start behind its scheduled start, ms. */
  maxLagMs: number
  /** Times the client fell behind by more than maxScheduleLagMs. */
  episodes: number
}

/** Default of PhaseOptions.maxScheduleLagMs. */
export const DEFAULT_MAX_SCHEDULE_LAG_MS = 100
/** A client counts as caught up once no operation has started late for this long. */
const CAUGHT_UP_AFTER_MS = 1000

export interface StatusSnapshot {
  elapsedMs: number
  operations: number
  /** ops/s over the last interval */
  currentOpsPerSec: number
  /** Operations still to do when the phase has an operation count, else 0 (YCSB's "est completion"). */
  todoOperations: number
  /** Per operation name, this interval's histogram and counters. */
  intervals: Map<string, { count: number; sumUs: number; minUs: number; maxUs: number; hist: Histogram }>
}

export interface PhaseResult {
  runtimeMs: number
  /** When the phase's operations began, ms since the epoch (its schedule's origin); undefined if none ran. */
  firstOpAtMs?: number
  operations: number
  report: Report
  schedule: ScheduleSummary
}

/** Runs one phase with the options; how and where the client threads run is the runner's business. */
export type PhaseRunner = (opts: PhaseOptions) => Promise<PhaseResult>

/** Longest stretch client threads run without letting timers and I/O in, ms. */
const YIELD_EVERY_MS = 5
/**
 * A JS thread blocks for the next scheduled operation only when it is at most this far ahead; further, it sleeps on a
 * timer first, ms.
 */
const BLOCK_AT_MOST_MS = 20

const CACHE_INDEX = Object.fromEntries(CACHE_OUTCOMES.map((c, i) => [c, i])) as Record<string, number>

/** The number of operations a phase does in all: the option, else the workload's count (0 = no limit). */
export function phaseLimit(
  workload: Pick<Workload, 'loadCount' | 'operationCount'>,
  opts: Pick<PhaseOptions, 'phase' | 'operationCount'>,
): number {
  return opts.operationCount > 0
    ? opts.operationCount
    : opts.phase === 'load'
      ? workload.loadCount
      : workload.operationCount
}

/**
 * Client thread i's share of `limit` operations (YCSB's Client: opcount / threads, the first opcount % threads one
 * more); 0 = no limit.
 */
export function threadQuota(limit: number, threads: number, i: number): number {
  if (limit === 0) return 0
  return Math.floor(limit / threads) + (i < limit % threads ? 1 : 0)
}

/**
 * How late the operations of one JS thread's client threads start. Once
 * one starts more than `boundMs` late, they are behind until none has
 * started late for CAUGHT_UP_AFTER_MS (threads catch up one by one); one
 * 'behind' and one 'caught-up' event per episode.
 */
export class ScheduleTracker {
  /** Largest lag seen, ms. */
  maxLagMs = 0
  episodes = 0
  private behindSince = -1
  private lastLateAt = 0
  private episodeMaxLagMs = 0

  /**
   * @param t0 the phase's origin in this thread's performance.now(): events' elapsedMs count from there.
   */
  constructor(
    private readonly boundMs: number,
    private readonly t0: number,
    private readonly emit: (e: ScheduleEvent) => void,
  ) {}

  /** An operation scheduled for `intendedStart` starts at `start` (performance.now(), ms). */
  started(start: number, intendedStart: number): void {
    const lagMs = start - intendedStart
    if (lagMs > this.maxLagMs) this.maxLagMs = lagMs
    if (lagMs > this.boundMs) {
      this.lastLateAt = start
      if (this.behindSince < 0) {
        this.behindSince = start
        this.episodeMaxLagMs = 0
        this.episodes++
        this.emit({ kind: 'behind', lagMs, elapsedMs: start - this.t0 })
      }
      if (lagMs > this.episodeMaxLagMs) this.episodeMaxLagMs = lagMs
    } else if (this.behindSince >= 0 && start - this.lastLateAt > CAUGHT_UP_AFTER_MS) {
      this.emit({
        kind: 'caught-up',
        maxLagMs: this.episodeMaxLagMs,
        durationMs: this.lastLateAt - this.behindSince,
        elapsedMs: start - this.t0,
      })
      this.behindSince = -1
    }
  }
}

/**
 * The client's schedule episodes from those of its JS threads (worker
 * threads, each with a ScheduleTracker): the client falls behind when the
 * first of them does and has caught up when the last of them has, so it
 * warns once per episode however many threads are late.
 */
export class ScheduleEpisodes {
  episodes = 0
  /** Sources behind now -> elapsedMs of their 'behind' event. */
  private readonly behind = new Map<number, number>()
  private since = 0
  private lastLate = 0
  private maxLagMs = 0

  constructor(private readonly emit: ((e: ScheduleEvent) => void) | undefined) {}

  /** Source `source` reported `e` (elapsedMs from the phase's common origin). */
  add(source: number, e: ScheduleEvent): void {
    if (e.kind === 'behind') {
      if (this.behind.size === 0) {
        this.episodes++
        this.since = e.elapsedMs
        this.lastLate = e.elapsedMs
        this.maxLagMs = 0
        this.emit?.(e)
      }
      this.behind.set(source, e.elapsedMs)
      if (e.lagMs > this.maxLagMs) this.maxLagMs = e.lagMs
      return
    }
    const from = this.behind.get(source)
    if (from === undefined) return
    this.behind.delete(source)
    if (e.maxLagMs > this.maxLagMs) this.maxLagMs = e.maxLagMs
    if (from + e.durationMs > this.lastLate) this.lastLate = from + e.durationMs
    if (this.behind.size === 0)
      this.emit?.({
        kind: 'caught-up',
        maxLagMs: this.maxLagMs,
        durationMs: this.lastLate - this.since,
        elapsedMs: e.elapsedMs,
      })
  }
}

interface Sleeper {
  until: number
  resolve: () => void
}

/**
 * What the client threads of one JS thread share: the measurements (the
 * status timer swaps `interval`), a turn of the event loop, the scheduler
 * of throttled operations and their schedule keeping.
 *
 * Throttled client threads sleep here until their next scheduled start.
 * When every client thread of this JS thread is asleep, nothing but the next
 * start can happen on it, so it blocks with Atomics.wait until then: precise
 * to tens of µs, as YCSB's threads park, and without burning a core. While
 * any thread is awake (an operation in flight, or behind schedule) the event
 * loop must run; the sleepers are looked at again whenever an operation
 * completes, and by a timer.
 */
export class ThreadGroup {
  readonly total: Measurements
  /** undefined when no status lines are wanted. */
  interval: Measurements | undefined
  /** Client threads of this JS thread that are not asleep (running, waiting for a reply or for their turn). */
  private active = 0
  private yieldEpoch = 0
  private lastYieldAt: number
  private readonly sleepers: Sleeper[] = []
  private timer: NodeJS.Timeout | undefined
  private timerAt = 0
  private readonly wake = (): void => {
    this.timer = undefined
    this.schedule()
  }

  /**
   * @param intended keep intended latencies (the phase has a target).
   * @param block a word that stays 0 while the phase runs: Atomics.wait
   *   sleeps on it, and whoever stops the phase sets it and notifies.
   * @param lag schedule keeping of throttled operations; undefined = unthrottled.
   *   Settable later: a worker knows the phase's origin only at its start.
   */
  constructor(
    status: boolean,
    readonly intended: boolean,
    readonly events: EventVisitor,
    now: number,
    private readonly block: { word: Int32Array; index: number },
    public lag?: ScheduleTracker,
  ) {
    this.total = new Measurements(intended)
    this.interval = status ? new Measurements(intended) : undefined
    this.lastYieldAt = now
  }

  /**
   * Bumps the epoch every YIELD_EVERY_MS; each thread yields once per epoch. The events recorded so far become
   * visible to the delivery thread then (a ring publishes in steps), so none waits longer than that.
   */
  epoch(now: number): number {
    if (now - this.lastYieldAt >= YIELD_EVERY_MS) {
      this.lastYieldAt = now
      this.yieldEpoch++
      this.events.publish?.()
    }
    return this.yieldEpoch
  }

  /** A client thread starts. */
  enter(): void {
    this.active++
  }

  /** A client thread is done; the others may now be all asleep. */
  leave(): void {
    this.active--
    if (this.active === 0) this.events.publish?.()
    this.schedule()
  }

  /** Resolves at `until` (this thread's performance.now()), or at once when the phase is stopped. */
  sleep(until: number): Promise<void> {
    return new Promise((resolve) => {
      this.sleepers.push({ until, resolve })
      this.active--
      this.schedule()
    })
  }

  /**
   * Wakes the sleepers that are due; blocks for the next one when every thread is asleep. Called on sleep, on
   * completion, on leave, by the timer.
   */
  schedule(): void {
    const sleepers = this.sleepers
    for (;;) {
      if (sleepers.length === 0) return
      const now = performance.now()
      const stopped = Atomics.load(this.block.word, this.block.index) !== 0
      let earliest = Number.POSITIVE_INFINITY
      let woke = false
      for (let i = sleepers.length - 1; i >= 0; i--) {
        const s = sleepers[i]!
        if (s.until <= now || stopped) {
          sleepers.splice(i, 1)
          this.active++
          s.resolve()
          woke = true
        } else if (s.until < earliest) earliest = s.until
      }
      // Woken threads run first (their continuations are queued); they come back here.
      if (woke || sleepers.length === 0) break
      const ahead = earliest - now
      if (this.active > 0 || ahead > BLOCK_AT_MOST_MS) break
      // Nothing runs on this thread until the next start: what it recorded goes out meanwhile.
      this.events.publish?.()
      Atomics.wait(this.block.word, this.block.index, 0, ahead)
    }
    if (sleepers.length === 0) {
      if (this.timer !== undefined) clearTimeout(this.timer)
      this.timer = undefined
      return
    }
    let earliest = Number.POSITIVE_INFINITY
    for (const s of sleepers) if (s.until < earliest) earliest = s.until
    if (this.active === 0) this.events.publish?.()
    // Far ahead: wake up a little early and block for the rest.
    const at = earliest > performance.now() + BLOCK_AT_MOST_MS ? earliest - BLOCK_AT_MOST_MS / 2 : earliest - 1
    if (this.timer !== undefined && this.timerAt <= at) return
    if (this.timer !== undefined) clearTimeout(this.timer)
    this.timerAt = at
    this.timer = setTimeout(this.wake, Math.max(0, at - performance.now()))
  }
}

export interface ClientThreadOptions {
  /** Index among all the client's threads: the `thread` of its events. */
  thread: number
  threads: number
  phase: 'load' | 'run'
  workload: Workload
  binding: Binding
  group: ThreadGroup
  /** Operations this thread does; 0 = until the deadline or stop. */
  quota: number
  /** ms between this thread's scheduled operations; 0 = unthrottled. */
  intervalMs: number
  /** Schedule origin and end, in this JS thread's performance.now(). */
  t0: number
  deadline: number
  stopped: () => boolean
}

function execute(binding: Binding, tx: Transaction): Promise<OpResult> {
  switch (tx.op) {
    case 'READ':
      return binding.read(tx.table, tx.key, tx.fields)
    case 'UPDATE':
      return binding.update(tx.table, tx.key, tx.values)
    case 'INSERT':
      return binding.insert(tx.table, tx.key, tx.values)
    case 'SCAN':
      return binding.scan(tx.table, tx.startKey, tx.count, tx.fields)
    case 'DELETE':
      return binding.delete(tx.table, tx.key)
    case 'READ-MODIFY-WRITE':
      // Measured as one operation: read, then write back, end to end.
      return binding
        .read(tx.table, tx.key, tx.fields)
        .then((r) =>
          r.status !== 'OK'
            ? r
            : binding
                .update(tx.table, tx.key, tx.values)
                .then((u) => ({ ...u, cache: r.cache, bytes: r.bytes + u.bytes })),
        )
  }
}

/**
 * One client thread's loop (YCSB's ClientThread). Per operation it allocates
 * nothing of its own: the transaction and the binding's promise and result
 * are the workload's and the binding's; the event goes into the sink's
 * preallocated buffer and the latency into preallocated histograms.
 */
export async function runClientThread(c: ClientThreadOptions): Promise<void> {
  c.group.enter()
  try {
    await clientLoop(c)
  } finally {
    c.group.leave()
  }
}

async function clientLoop(c: ClientThreadOptions): Promise<void> {
  const { workload, binding, group, quota, intervalMs, deadline } = c
  const events = group.events
  const origin = performance.timeOrigin
  const load = c.phase === 'load'
  // Each thread starts at a different phase of its schedule so that the
  // client's operations are spread evenly over time, not in bursts.
  const offsetMs = intervalMs > 0 ? (intervalMs * c.thread) / c.threads : 0
  let seenEpoch = 0
  let done = 0
  for (;;) {
    if ((quota > 0 && done >= quota) || c.stopped()) return
    let intendedStart = 0
    if (intervalMs > 0) {
      intendedStart = c.t0 + offsetMs + done * intervalMs
      if (performance.now() < intendedStart) await group.sleep(intendedStart)
    }
    const now = performance.now()
    const epoch = group.epoch(now)
    if (seenEpoch !== epoch) {
      seenEpoch = epoch
      await yieldToLoop()
    }
    if (performance.now() >= deadline || c.stopped()) return
    const tx = load ? workload.nextLoad() : workload.nextTransaction()
    if (tx === undefined) return
    const start = performance.now()
    if (intendedStart > 0) group.lag?.started(start, intendedStart)
    let r: OpResult
    try {
      r = await execute(binding, tx)
    } catch (err) {
      r = { status: statusOf(err), cache: 'UNKNOWN', bytes: 0 }
    }
    const end = performance.now()
    // Acknowledge every insert, failed or not (as YCSB does in a finally): a
    // key left unacknowledged would freeze the 'latest' distribution.
    if (tx.op === 'INSERT') workload.acknowledgeInsert(tx.keynum)
    const latencyUs = Math.round((end - start) * 1000)
    const intendedUs = intendedStart > 0 ? Math.max(latencyUs, Math.round((end - intendedStart) * 1000)) : latencyUs
    const opCode = OP_CODE[tx.op]
    const statusIndex = STATUS_INDEX[r.status]!
    events.record(
      c.thread,
      opCode,
      CACHE_INDEX[r.cache]!,
      statusIndex,
      Math.round((origin + start) * 1000),
      latencyUs,
      intendedUs,
      r.bytes,
    )
    const key = opCode * 16 + statusIndex
    group.total.add(key, latencyUs, intendedUs)
    group.interval?.add(key, latencyUs, intendedUs)
    done++
    // Other threads' next starts may have come while this operation was in flight.
    if (intervalMs > 0) group.schedule()
  }
}

/**
 * Runs a phase with all client threads on this JS thread, sharing one
 * binding and one sink. Status lines come from a timer here, between
 * operations (the threads yield every YIELD_EVERY_MS).
 */
export async function runPhase(
  workload: Workload,
  binding: Binding,
  sink: EventSink,
  opts: PhaseOptions,
): Promise<PhaseResult> {
  const limit = phaseLimit(workload, opts)
  const t0 = performance.now()
  const deadline = opts.maxExecutionTimeS > 0 ? t0 + opts.maxExecutionTimeS * 1000 : Number.POSITIVE_INFINITY
  if (limit === 0 && deadline === Number.POSITIVE_INFINITY && opts.signal === undefined) {
    throw new Error('the phase has no end: set operationcount or maxexecutiontime')
  }
  const status = opts.statusIntervalS > 0 && opts.onStatus !== undefined
  const signal = opts.signal
  // Set when the signal aborts, so that a thread blocked until its next start wakes up.
  const stopWord = new Int32Array(new SharedArrayBuffer(4))
  const onAbort = (): void => {
    Atomics.store(stopWord, 0, 1)
    Atomics.notify(stopWord, 0)
  }
  signal?.addEventListener('abort', onAbort)
  const throttled = opts.target > 0
  // One JS thread: its episodes are the client's.
  const lag = throttled
    ? new ScheduleTracker(opts.maxScheduleLagMs ?? DEFAULT_MAX_SCHEDULE_LAG_MS, t0, (e) => opts.onSchedule?.(e))
    : undefined
  const group = new ThreadGroup(status, throttled, sink, t0, { word: stopWord, index: 0 }, lag)
  const stopped = signal === undefined ? () => false : () => signal.aborted
  // Interval between two scheduled operations of one thread, in ms.
  const intervalMs = opts.target > 0 ? (1000 * opts.threads) / opts.target : 0

  let statusTimer: NodeJS.Timeout | undefined
  if (status) {
    let lastDone = 0
    let lastAt = t0
    statusTimer = setInterval(() => {
      const now = performance.now()
      const snap = group.interval!
      group.interval = new Measurements(throttled)
      const done = group.total.count()
      opts.onStatus!({
        elapsedMs: now - t0,
        operations: done,
        currentOpsPerSec: ((done - lastDone) * 1000) / (now - lastAt),
        todoOperations: limit > 0 ? Math.max(0, limit - done) : 0,
        intervals: snap.intervals(),
      })
      lastDone = done
      lastAt = now
    }, opts.statusIntervalS * 1000)
  }
  try {
    await Promise.all(
      Array.from({ length: opts.threads }, (_, i) =>
        runClientThread({
          thread: i,
          threads: opts.threads,
          phase: opts.phase,
          workload,
          binding,
          group,
          quota: threadQuota(limit, opts.threads, i),
          intervalMs,
          t0,
          deadline,
          stopped,
        }),
      ),
    )
  } finally {
    if (statusTimer !== undefined) clearInterval(statusTimer)
    signal?.removeEventListener('abort', onAbort)
  }
  const runtimeMs = performance.now() - t0
  const operations = group.total.count()
  return {
    runtimeMs,
    ...(operations > 0 ? { firstOpAtMs: performance.timeOrigin + t0 } : {}),
    operations,
    report: buildReport(group.total.aggregates(), runtimeMs, { intended: throttled }),
    schedule: { maxLagMs: lag?.maxLagMs ?? 0, episodes: lag?.episodes ?? 0 },
  }
}
