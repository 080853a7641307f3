/**
 * Runs a workload phase: N concurrent workers take transactions from the
 * workload, execute them on the binding, time them, and hand one event per
 * operation to the sink. Also keeps the driver's own histograms, so the
 * driver can print YCSB's report without asking anyone.
 *
 * Timing: latency is measured from the actual issue to completion; with a
 * target rate each worker follows an intended schedule, and the intended
 * latency is measured from the scheduled start (coordinated-omission
 * correction, YCSB's measurement.interval=both).
 */
import { setImmediate as yieldToLoop } from 'node:timers/promises'
import { CACHE_OUTCOMES, OPERATIONS, STATUSES, type Operation } from '../../schemas/events.v1.js'
import { Histogram } from '../core/stats/histogram.js'
import type { Transaction, Workload } from '../core/workload/workload-types.js'
import { buildReport, type OpStatusAggregate, type Report } from '../core/reports/ycsb-report.js'
import { statusOf, type Binding, type OpResult } from '../core/ports/binding.js'
import type { EventSink } from '../core/ports/event-sink.js'

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
export type ScheduleEvent = { kind: 'behind'; lagMs: number; elapsedMs: number } | { kind: 'caught-up'; maxLagMs: number; durationMs: number; elapsedMs: number }

/** How well the client kept its schedule over the phase (all zero without a target). */
export interface ScheduleSummary {
  /** Largest delay of an operation's start behind its scheduled start, ms. */
  maxLagMs: number
  /** Times the client fell behind by more than maxScheduleLagMs. */
  episodes: number
}

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
  operations: number
  report: Report
  schedule: ScheduleSummary
}

/** Longest stretch the workers run without letting timers and I/O in, ms. */
const YIELD_EVERY_MS = 5

const OP_CODE: Record<Operation, number> = Object.fromEntries(OPERATIONS.map((o, i) => [o, i + 1])) as Record<Operation, number>
const STATUS_INDEX = Object.fromEntries(STATUSES.map((s, i) => [s, i])) as Record<string, number>
const CACHE_INDEX = Object.fromEntries(CACHE_OUTCOMES.map((c, i) => [c, i])) as Record<string, number>

/** Per (opCode, status) accumulators for the driver's own report. */
class Measurements {
  readonly cells = new Map<number, { count: number; sumUs: number; minUs: number; maxUs: number; hist: Histogram }>()
  /** Intended latency per (opCode, status), kept only when the phase has a target. */
  readonly intended = new Map<number, { count: number; sumUs: number; minUs: number; maxUs: number; hist: Histogram }>()
  constructor(private readonly withIntended: boolean) {}
  add(key: number, latencyUs: number, intendedUs: number): void {
    Measurements.record(this.cells, key, latencyUs)
    if (this.withIntended) Measurements.record(this.intended, key, intendedUs)
  }
  private static record(cells: Measurements['cells'], key: number, us: number): void {
    let c = cells.get(key)
    if (c === undefined) {
      c = { count: 0, sumUs: 0, minUs: Number.MAX_SAFE_INTEGER, maxUs: 0, hist: new Histogram() }
      cells.set(key, c)
    }
    c.count++
    c.sumUs += us
    if (us < c.minUs) c.minUs = us
    if (us > c.maxUs) c.maxUs = us
    c.hist.record(us)
  }
  aggregates(): OpStatusAggregate[] {
    return [...this.cells].map(([key, c]) => {
      const i = this.intended.get(key)
      return {
        op: OPERATIONS[(key >> 4) - 1]!, status: STATUSES[key & 15]!, count: c.count, sumUs: c.sumUs, minUs: c.minUs, maxUs: c.maxUs, hist: c.hist.entries(),
        ...(i === undefined ? {} : { intended: { sumUs: i.sumUs, minUs: i.minUs, maxUs: i.maxUs, hist: i.hist.entries() } }),
      }
    })
  }
}

export async function runPhase(workload: Workload, binding: Binding, sink: EventSink, opts: PhaseOptions): Promise<PhaseResult> {
  const limit = opts.operationCount > 0 ? opts.operationCount : opts.phase === 'load' ? workload.loadCount : workload.operationCount
  const deadline = opts.maxExecutionTimeS > 0 ? performance.now() + opts.maxExecutionTimeS * 1000 : Number.POSITIVE_INFINITY
  if (limit === 0 && deadline === Number.POSITIVE_INFINITY && opts.signal === undefined) {
    throw new Error('the phase has no end: set operationcount or maxexecutiontime')
  }
  const throttled = opts.target > 0
  const total = new Measurements(throttled)
  let interval = new Measurements(throttled)
  const maxLagMs = opts.maxScheduleLagMs ?? 100
  const schedule: ScheduleSummary = { maxLagMs: 0, episodes: 0 }
  let behindSince = -1
  let lastLateAt = 0
  let episodeMaxLagMs = 0
  let issued = 0
  let done = 0
  const origin = performance.timeOrigin
  const t0 = performance.now()
  // Interval between two scheduled operations of one worker, in ms.
  const perWorkerIntervalMs = opts.target > 0 ? (1000 * opts.threads) / opts.target : 0

  const execute = (tx: Transaction): Promise<OpResult> => {
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

  // A binding that resolves at once (memory) never gives the event loop a turn:
  // timers (status lines), Kafka delivery and signals would all wait for the
  // end of the phase. Every YIELD_EVERY_MS all workers step aside once.
  let yieldEpoch = 0
  let lastYieldAt = t0

  const worker = async (thread: number): Promise<void> => {
    let seenEpoch = 0
    // Each worker starts at a different phase of its schedule so that the
    // client's operations are spread evenly over time, not in bursts.
    let k = 0
    const offsetMs = perWorkerIntervalMs > 0 ? (perWorkerIntervalMs * thread) / opts.threads : 0
    for (;;) {
      if ((limit > 0 && issued >= limit) || opts.signal?.aborted) return
      let intendedStart = 0
      if (perWorkerIntervalMs > 0) {
        intendedStart = t0 + offsetMs + k * perWorkerIntervalMs
        k++
        for (let now = performance.now(); now < intendedStart; now = performance.now()) {
          const ahead = intendedStart - now
          if (ahead > 2) await new Promise((r) => setTimeout(r, ahead - 1))
          else await yieldToLoop()
        }
      }
      const now = performance.now()
      if (now - lastYieldAt >= YIELD_EVERY_MS) {
        lastYieldAt = now
        yieldEpoch++
      }
      if (seenEpoch !== yieldEpoch) {
        seenEpoch = yieldEpoch
        await yieldToLoop()
      }
      if (performance.now() >= deadline) return
      if ((limit > 0 && issued >= limit) || opts.signal?.aborted) return
      issued++
      const tx = opts.phase === 'load' ? workload.nextLoad() : workload.nextTransaction()
      if (tx === undefined) return
      const start = performance.now()
      if (intendedStart > 0) {
        // Schedule keeping: how late this operation starts. Once behind, the
        // client stays behind until no operation has been late for a second
        // (workers catch up one by one); one warning per episode.
        const lagMs = start - intendedStart
        if (lagMs > schedule.maxLagMs) schedule.maxLagMs = lagMs
        if (lagMs > maxLagMs) {
          lastLateAt = start
          if (behindSince < 0) {
            behindSince = start
            episodeMaxLagMs = 0
            schedule.episodes++
            opts.onSchedule?.({ kind: 'behind', lagMs, elapsedMs: start - t0 })
          }
          if (lagMs > episodeMaxLagMs) episodeMaxLagMs = lagMs
        } else if (behindSince >= 0 && start - lastLateAt > CAUGHT_UP_AFTER_MS) {
          opts.onSchedule?.({ kind: 'caught-up', maxLagMs: episodeMaxLagMs, durationMs: lastLateAt - behindSince, elapsedMs: start - t0 })
          behindSince = -1
        }
      }
      let r: OpResult
      try {
        r = await execute(tx)
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
      sink.record(thread, opCode, CACHE_INDEX[r.cache]!, statusIndex, Math.round((origin + start) * 1000), latencyUs, intendedUs, r.bytes)
      const key = opCode * 16 + statusIndex
      total.add(key, latencyUs, intendedUs)
      if (opts.statusIntervalS > 0) interval.add(key, latencyUs, intendedUs)
      done++
    }
  }

  let statusTimer: NodeJS.Timeout | undefined
  if (opts.statusIntervalS > 0 && opts.onStatus !== undefined) {
    let lastDone = 0
    let lastAt = t0
    statusTimer = setInterval(() => {
      const now = performance.now()
      const snap = interval
      interval = new Measurements(throttled)
      const intervals: StatusSnapshot['intervals'] = new Map()
      // Measured, then (with a target) intended: YCSB's [READ: ...] [Intended-READ: ...].
      for (const [prefix, cells] of [['', snap.cells], ['Intended-', snap.intended]] as const) {
        for (const [key, cell] of cells) {
          const op = OPERATIONS[(key >> 4) - 1]!
          const name = `${prefix}${STATUSES[key & 15] === 'OK' ? op : `${op}-FAILED`}`
          const prev = intervals.get(name)
          if (prev === undefined) intervals.set(name, { ...cell, hist: cell.hist })
          else {
            prev.count += cell.count
            prev.sumUs += cell.sumUs
            prev.minUs = Math.min(prev.minUs, cell.minUs)
            prev.maxUs = Math.max(prev.maxUs, cell.maxUs)
            prev.hist.merge(cell.hist)
          }
        }
      }
      opts.onStatus!({ elapsedMs: now - t0, operations: done, currentOpsPerSec: ((done - lastDone) * 1000) / (now - lastAt), todoOperations: limit > 0 ? Math.max(0, limit - done) : 0, intervals })
      lastDone = done
      lastAt = now
    }, opts.statusIntervalS * 1000)
  }
  try {
    await Promise.all(Array.from({ length: opts.threads }, (_, i) => worker(i)))
  } finally {
    if (statusTimer !== undefined) clearInterval(statusTimer)
  }
  const runtimeMs = performance.now() - t0
  return { runtimeMs, operations: done, report: buildReport(total.aggregates(), runtimeMs, { intended: throttled }), schedule }
}
