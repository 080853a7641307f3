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
 * correction, YCSB's measurement.interval=both).
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
  operations: number
  report: Report
}

/** Runs one phase with the options; how and where the client threads run is the runner's business. */
export type PhaseRunner = (opts: PhaseOptions) => Promise<PhaseResult>

/** Longest stretch client threads run without letting timers and I/O in, ms. */
const YIELD_EVERY_MS = 5
/** A blocking sleep first lets the event loop run when it is this far ahead of schedule, ms. */
const LOOP_SLEEP_ABOVE_MS = 20

const CACHE_INDEX = Object.fromEntries(CACHE_OUTCOMES.map((c, i) => [c, i])) as Record<string, number>

/** The number of operations a phase does in all: the option, else the workload's count (0 = no limit). */
export function phaseLimit(workload: Pick<Workload, 'loadCount' | 'operationCount'>, opts: Pick<PhaseOptions, 'phase' | 'operationCount'>): number {
  return opts.operationCount > 0 ? opts.operationCount : opts.phase === 'load' ? workload.loadCount : workload.operationCount
}

/** Client thread i's share of `limit` operations (YCSB's Client: opcount / threads, the first opcount % threads one more); 0 = no limit. */
export function threadQuota(limit: number, threads: number, i: number): number {
  if (limit === 0) return 0
  return Math.floor(limit / threads) + (i < limit % threads ? 1 : 0)
}

/** What the client threads of one JS thread share: the measurements (the status timer swaps `interval`) and a turn of the event loop. */
export class ThreadGroup {
  readonly total = new Measurements()
  /** undefined when no status lines are wanted. */
  interval: Measurements | undefined
  private yieldEpoch = 0
  private lastYieldAt: number

  constructor(
    status: boolean,
    readonly events: EventVisitor,
    now: number,
  ) {
    this.interval = status ? new Measurements() : undefined
    this.lastYieldAt = now
  }

  /** Bumps the epoch every YIELD_EVERY_MS; each thread yields once per epoch. */
  epoch(now: number): number {
    if (now - this.lastYieldAt >= YIELD_EVERY_MS) {
      this.lastYieldAt = now
      this.yieldEpoch++
    }
    return this.yieldEpoch
  }
}

/** How a client thread waits for its next scheduled operation. */
export interface Sleeper {
  /**
   * Blocks the JS thread (Atomics.wait on `word`, which a stop notifies):
   * precise to tens of µs, but only right when this is the JS thread's only
   * client thread. Otherwise the thread sleeps on the event loop.
   */
  blocking?: { word: Int32Array; index: number }
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
  sleeper: Sleeper
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
      return binding.read(tx.table, tx.key, tx.fields).then((r) => (r.status !== 'OK' ? r : binding.update(tx.table, tx.key, tx.values).then((u) => ({ ...u, cache: r.cache, bytes: r.bytes + u.bytes }))))
  }
}

/**
 * One client thread's loop (YCSB's ClientThread). Per operation it allocates
 * nothing of its own: the transaction and the binding's promise and result
 * are the workload's and the binding's; the event goes into the sink's
 * preallocated buffer and the latency into preallocated histograms.
 */
export async function runClientThread(c: ClientThreadOptions): Promise<void> {
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
      if (performance.now() < intendedStart) await sleepUntil(intendedStart, c.sleeper)
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
    events.record(c.thread, opCode, CACHE_INDEX[r.cache]!, statusIndex, Math.round((origin + start) * 1000), latencyUs, intendedUs, r.bytes)
    const key = opCode * 16 + statusIndex
    group.total.add(key, latencyUs)
    group.interval?.add(key, latencyUs)
    done++
  }
}

async function sleepUntil(until: number, sleeper: Sleeper): Promise<void> {
  const b = sleeper.blocking
  if (b === undefined) {
    for (let now = performance.now(); now < until; now = performance.now()) {
      const ahead = until - now
      if (ahead > 2) await new Promise((r) => setTimeout(r, ahead - 1))
      else await yieldToLoop()
    }
    return
  }
  // Far ahead: let the event loop run (status requests, signals), then block
  // for the rest, as YCSB's LockSupport.parkNanos would.
  let ahead = until - performance.now()
  if (ahead > LOOP_SLEEP_ABOVE_MS) {
    await new Promise((r) => setTimeout(r, ahead - LOOP_SLEEP_ABOVE_MS / 2))
    ahead = until - performance.now()
  }
  while (ahead > 0 && Atomics.load(b.word, b.index) === 0) {
    Atomics.wait(b.word, b.index, 0, ahead)
    ahead = until - performance.now()
  }
}

/**
 * Runs a phase with all client threads on this JS thread, sharing one
 * binding and one sink. Status lines come from a timer here, between
 * operations (the threads yield every YIELD_EVERY_MS).
 */
export async function runPhase(workload: Workload, binding: Binding, sink: EventSink, opts: PhaseOptions): Promise<PhaseResult> {
  const limit = phaseLimit(workload, opts)
  const t0 = performance.now()
  const deadline = opts.maxExecutionTimeS > 0 ? t0 + opts.maxExecutionTimeS * 1000 : Number.POSITIVE_INFINITY
  if (limit === 0 && deadline === Number.POSITIVE_INFINITY && opts.signal === undefined) {
    throw new Error('the phase has no end: set operationcount or maxexecutiontime')
  }
  const status = opts.statusIntervalS > 0 && opts.onStatus !== undefined
  const group = new ThreadGroup(status, sink, t0)
  const signal = opts.signal
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
      group.interval = new Measurements()
      const done = group.total.count()
      opts.onStatus!({ elapsedMs: now - t0, operations: done, currentOpsPerSec: ((done - lastDone) * 1000) / (now - lastAt), todoOperations: limit > 0 ? Math.max(0, limit - done) : 0, intervals: snap.intervals() })
      lastDone = done
      lastAt = now
    }, opts.statusIntervalS * 1000)
  }
  try {
    await Promise.all(
      Array.from({ length: opts.threads }, (_, i) =>
        runClientThread({ thread: i, threads: opts.threads, phase: opts.phase, workload, binding, group, quota: threadQuota(limit, opts.threads, i), intervalMs, t0, deadline, stopped, sleeper: {} }),
      ),
    )
  } finally {
    if (statusTimer !== undefined) clearInterval(statusTimer)
  }
  const runtimeMs = performance.now() - t0
  return { runtimeMs, operations: group.total.count(), report: buildReport(group.total.aggregates(), runtimeMs) }
}
