/**
 * A driver worker thread: runs some of a client's threads, each with a
 * binding instance (connection) of its own, on a JS thread and event loop of
 * its own. worker-main.ts (an entry file) supplies the binding registry;
 * worker-pool.ts starts the workers and merges what they measured.
 *
 * The workload is this worker's own CoreWorkload built from the client's
 * properties with the shared state of the phase (key sequences and the
 * acknowledged-insert window, services/core/workload/shared-state.ts), so
 * the workers together behave as YCSB's threads sharing one CoreWorkload.
 * Events go into this worker's ring, which the delivery thread drains.
 * Schedule keeping is tracked here, where operations start; only its
 * transitions (behind, caught up) are posted to the main thread.
 */
import type { MessagePort } from 'node:worker_threads'
import { BenchstreamError, ERROR_CODES, isBenchstreamError, type ErrorCode } from '../core/errors.js'
import type { Binding } from '../core/ports/binding.js'
import { CoreWorkload } from '../core/workload/core-workload.js'
import type { EventVisitor } from './event-ring.js'
import { RingProducer } from './event-ring.js'
import { Measurements, type WireCell } from './measurements.js'
import { runClientThread } from './client-thread.js'
import { ScheduleTracker, type ScheduleEvent } from './schedule-keeping.js'
import { ThreadGroup } from './thread-group.js'

/** Int32 words of the phase's control buffer. */
export const CONTROL = { STOP: 0, WORDS: 4 } as const

export interface WorkerData {
  phase: 'load' | 'run'
  binding: string
  properties: Readonly<Record<string, string>>
  /** Indexes of the client threads this worker runs (among `threads`). */
  clientThreads: number[]
  threads: number
  /** ms between two scheduled operations of one client thread; 0 = unthrottled. */
  intervalMs: number
  /** A throttled operation starting later than this (ms) puts this worker behind schedule. */
  maxScheduleLagMs: number
  /** Operations of each client thread in clientThreads order; 0 = no limit. */
  quotas: number[]
  maxExecutionTimeS: number
  status: boolean
  /** Seed of this worker's workload; undefined = random. */
  seed: number | undefined
  shared: SharedArrayBuffer
  control: SharedArrayBuffer
  /** This worker's event ring; undefined = emission off. */
  ring: SharedArrayBuffer | undefined
}

export type ToWorker = { type: 'start'; originHrMs: number } | { type: 'interval' } | { type: 'cleanup' }

export type FromWorker =
  | { type: 'ready' }
  | { type: 'interval'; cells: WireCell[]; done: number }
  | { type: 'schedule'; event: ScheduleEvent }
  | { type: 'done'; cells: WireCell[]; endHrMs: number; maxLagMs: number }
  | { type: 'closed' }
  | { type: 'failed'; code: ErrorCode | undefined; message: string; retryable: boolean }

/** Builds a binding as the registry does (services/adapters/datastores/index.ts). */
export type BindingFactory = (
  name: string,
  props: Readonly<Record<string, string>>,
  ctx: { threads: number },
) => Binding

/** process.hrtime in ms: one monotonic clock for every thread of the process (performance.now() starts per thread). */
export function hrMs(): number {
  return Number(process.hrtime.bigint()) / 1e6
}

const NO_EVENTS: EventVisitor = { record: () => undefined }
/**
 * A worker's ring makes its head visible every this many records, and whenever the client threads step aside or
 * sleep (ThreadGroup): one fenced store per 64 operations instead of one per operation.
 */
const RING_PUBLISH_EVERY = 64

function failure(err: unknown): FromWorker {
  return isBenchstreamError(err)
    ? { type: 'failed', code: err.code, message: err.message, retryable: err.retryable }
    : { type: 'failed', code: undefined, message: (err as Error)?.stack ?? String(err), retryable: false }
}

export async function serveWorker(port: MessagePort, d: WorkerData, createBinding: BindingFactory): Promise<void> {
  const bindings: Binding[] = []
  const cleanup = async (): Promise<void> => {
    await Promise.all(bindings.map((b) => b.cleanup().catch(() => undefined)))
  }
  let workload: CoreWorkload
  try {
    workload = CoreWorkload.fromProperties(d.properties, {
      ...(d.seed === undefined ? {} : { seed: d.seed }),
      shared: d.shared,
    })
    // One binding per client thread, as YCSB constructs one DB per thread.
    for (let i = 0; i < d.clientThreads.length; i++)
      bindings.push(createBinding(d.binding, d.properties, { threads: 1 }))
    await Promise.all(bindings.map((b) => b.init()))
  } catch (err) {
    await cleanup()
    port.postMessage(failure(err))
    return
  }
  const control = new Int32Array(d.control, 0, CONTROL.WORDS)
  const ring = d.ring === undefined ? undefined : new RingProducer(d.ring, RING_PUBLISH_EVERY)
  const start = new Promise<number>((resolve) => {
    port.on('message', (m: ToWorker) => {
      if (m.type === 'start') resolve(m.originHrMs)
      else if (m.type === 'interval') {
        const snap = group.interval
        group.interval = new Measurements(throttled)
        port.postMessage({
          type: 'interval',
          cells: snap?.toWire() ?? [],
          done: group.total.count(),
        } satisfies FromWorker)
      } else if (m.type === 'cleanup') {
        void cleanup().then(() => {
          port.postMessage({ type: 'closed' } satisfies FromWorker)
          port.close()
        })
      }
    })
  })
  const throttled = d.intervalMs > 0
  const group = new ThreadGroup(d.status, throttled, ring ?? NO_EVENTS, performance.now(), {
    word: control,
    index: CONTROL.STOP,
  })
  port.postMessage({ type: 'ready' } satisfies FromWorker)
  const originHrMs = await start
  // The phase's origin in this thread's performance.now().
  const t0 = originHrMs + (performance.now() - hrMs())
  // Made now that the phase's origin is known: elapsedMs in its events count from there, as in every worker.
  const lag = throttled
    ? new ScheduleTracker(d.maxScheduleLagMs, t0, (event) =>
        port.postMessage({ type: 'schedule', event } satisfies FromWorker),
      )
    : undefined
  group.lag = lag
  const deadline = d.maxExecutionTimeS > 0 ? t0 + d.maxExecutionTimeS * 1000 : Number.POSITIVE_INFINITY
  const stopped = (): boolean => Atomics.load(control, CONTROL.STOP) !== 0
  try {
    await Promise.all(
      d.clientThreads.map((thread, i) =>
        runClientThread({
          thread,
          threads: d.threads,
          phase: d.phase,
          workload,
          binding: bindings[i]!,
          group,
          quota: d.quotas[i]!,
          intervalMs: d.intervalMs,
          t0,
          deadline,
          stopped,
        }),
      ),
    )
  } catch (err) {
    ring?.publish()
    port.postMessage(failure(err))
    return
  }
  ring?.publish()
  port.postMessage({
    type: 'done',
    cells: group.total.toWire(),
    endHrMs: hrMs(),
    maxLagMs: lag?.maxLagMs ?? 0,
  } satisfies FromWorker)
}

/** The error a worker reported, as the main thread rethrows it. */
export function workerError(m: Extract<FromWorker, { type: 'failed' }>): Error {
  return m.code !== undefined && m.code in ERROR_CODES
    ? new BenchstreamError(m.code, m.message, { retryable: m.retryable })
    : new Error(`driver worker failed: ${m.message}`)
}
