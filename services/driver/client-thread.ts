/**
 * One client thread (YCSB's ClientThread): it takes transactions from the
 * workload, executes them on its binding, times them, records one event per
 * operation and adds the latency to its ThreadGroup's histograms. The same
 * loop runs on the calling thread (runPhase, runner.ts) and in workers
 * (worker.ts).
 */
import { setImmediate as yieldToLoop } from 'node:timers/promises'
import { CACHE_OUTCOMES } from '../../schemas/events.v1.js'
import type { Transaction, Workload } from '../core/workload/workload-types.js'
import { statusOf, type Binding, type OpResult } from '../core/ports/binding.js'
import { OP_CODE, STATUS_INDEX } from './measurements.js'
import type { ThreadGroup } from './thread-group.js'

const CACHE_INDEX = Object.fromEntries(CACHE_OUTCOMES.map((c, i) => [c, i])) as Record<string, number>

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
