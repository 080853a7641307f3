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
 *
 * This file holds the phase's options and result and runPhase; the client
 * thread's loop is in client-thread.ts, what the client threads of one JS
 * thread share in thread-group.ts, schedule keeping in schedule-keeping.ts.
 */
import type { Histogram } from '../core/stats/histogram.js'
import type { Workload } from '../core/workload/workload-types.js'
import { buildReport, type Report } from '../core/reports/ycsb-report.js'
import type { Binding } from '../core/ports/binding.js'
import type { EventSink } from '../core/ports/event-sink.js'
import { runClientThread } from './client-thread.js'
import { Measurements } from './measurements.js'
import {
  DEFAULT_MAX_SCHEDULE_LAG_MS,
  ScheduleTracker,
  type ScheduleEvent,
  type ScheduleSummary,
} from './schedule-keeping.js'
import { ThreadGroup } from './thread-group.js'

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
