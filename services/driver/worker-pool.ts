/**
 * Runs a phase's client threads in worker_threads (worker.ts), so that
 * `-threads N` gives real parallelism as YCSB's threads do: each client
 * thread has its own binding instance (connection), and each worker its own
 * JS thread and event loop, so one thread's work never delays another's
 * measurement. The main thread only starts the workers, asks for status
 * intervals, and merges what they measured; events go from the workers'
 * rings to the delivery thread (delivery.ts) without passing through here.
 *
 * Client threads are dealt to the workers round robin (thread i to worker
 * i mod W); defaultWorkerCount says how many workers and why. Between
 * throttled operations a worker blocks with Atomics.wait, as precise as
 * YCSB's parkNanos, whenever all of its client threads are asleep.
 *
 * The main thread's report is the exact merge of the workers' histograms
 * (bucket counts added, intended ones too), and its status lines merge their
 * interval histograms the same way. Each worker tracks how late its
 * operations start and posts when it falls behind or catches up; the
 * client's episodes are joined from those (ScheduleEpisodes).
 */
import { availableParallelism } from 'node:os'
import { Worker } from 'node:worker_threads'
import { buildReport } from '../core/reports/ycsb-report.js'
import { CoreWorkload } from '../core/workload/core-workload.js'
import { Measurements } from './measurements.js'
import { phaseLimit, threadQuota, type PhaseOptions, type PhaseResult } from './runner.js'
import { DEFAULT_MAX_SCHEDULE_LAG_MS, ScheduleEpisodes } from './schedule-keeping.js'
import { CONTROL, hrMs, workerError, type FromWorker, type ToWorker, type WorkerData } from './worker.js'

/** How long a worker may take to close its connections after the phase, ms. */
const CLEANUP_TIMEOUT_MS = 10_000

/** Most worker threads a client starts; more client threads share them. */
export const MAX_WORKERS = 64

/**
 * Worker threads for N client threads: one per core, min(N, cores), up to
 * MAX_WORKERS. Measured with bench/ycsb-parity on Redis (8 client threads,
 * two cores shared with the server): one worker per client thread cost 2-3x
 * the CPU per operation (a thread wake-up per operation, and every isolate
 * compiling and collecting on its own) and lost throughput; one worker per
 * core serves several connections per turn of its event loop and keeps every
 * core busy. Throttled threads lose nothing by sharing a worker: the
 * worker blocks until the next scheduled start whenever all of its
 * client threads are asleep (ThreadGroup in thread-group.ts).
 */
export function defaultWorkerCount(threads: number, cores = availableParallelism()): number {
  return Math.max(1, Math.min(threads, cores, MAX_WORKERS))
}

export interface WorkerPhaseOptions extends PhaseOptions {
  /** The worker entry file (worker-main.ts). */
  workerUrl: URL
  /** Binding name and the client's merged properties, as the registry takes them. */
  binding: string
  properties: Readonly<Record<string, string>>
  /** Worker threads. @default defaultWorkerCount(threads) */
  workers?: number
  /** A new event ring for each worker (RingEventSink.addRing); undefined = no events. */
  newRing?: () => SharedArrayBuffer
  /** Seed of worker i's workload is seed + i. @default random */
  seed?: number
}

interface Running {
  worker: Worker
  exited: Promise<void>
  /** Resolves with the next message of that type. */
  next<T extends FromWorker['type']>(type: T): Promise<Extract<FromWorker, { type: T }>>
}

export async function runPhaseInWorkers(o: WorkerPhaseOptions): Promise<PhaseResult> {
  const workload = CoreWorkload.fromProperties(o.properties)
  const limit = phaseLimit(workload, o)
  if (limit === 0 && o.maxExecutionTimeS === 0 && o.signal === undefined) {
    throw new Error('the phase has no end: set operationcount or maxexecutiontime')
  }
  const threads = o.threads
  const count = Math.max(1, Math.min(o.workers ?? defaultWorkerCount(threads), threads))
  const shared = workload.createSharedState()
  const controlBuffer = new SharedArrayBuffer(CONTROL.WORDS * 4)
  const control = new Int32Array(controlBuffer)
  const status = o.statusIntervalS > 0 && o.onStatus !== undefined
  const intervalMs = o.target > 0 ? (1000 * threads) / o.target : 0
  const episodes = new ScheduleEpisodes(o.onSchedule)

  // Any failure anywhere stops every worker: its error is the phase's.
  let failed: ((err: Error) => void) | undefined
  const failure = new Promise<never>((_, reject) => {
    failed = reject
  })
  failure.catch(() => undefined)
  const stop = (): void => {
    Atomics.store(control, CONTROL.STOP, 1)
    Atomics.notify(control, CONTROL.STOP)
  }

  const running: Running[] = []
  for (let w = 0; w < count; w++) {
    const clientThreads: number[] = []
    for (let i = w; i < threads; i += count) clientThreads.push(i)
    const data: WorkerData = {
      phase: o.phase,
      binding: o.binding,
      properties: o.properties,
      clientThreads,
      threads,
      intervalMs,
      maxScheduleLagMs: o.maxScheduleLagMs ?? DEFAULT_MAX_SCHEDULE_LAG_MS,
      quotas: clientThreads.map((i) => threadQuota(limit, threads, i)),
      maxExecutionTimeS: o.maxExecutionTimeS,
      status,
      seed: o.seed === undefined ? undefined : o.seed + w,
      shared,
      control: controlBuffer,
      ring: o.newRing?.(),
    }
    const worker = new Worker(o.workerUrl, { workerData: data })
    const waiting = new Map<string, Array<(m: FromWorker) => void>>()
    worker.on('message', (m: FromWorker) => {
      if (m.type === 'failed') {
        stop()
        failed?.(workerError(m))
        return
      }
      if (m.type === 'schedule') {
        episodes.add(w, m.event)
        return
      }
      const queue = waiting.get(m.type)
      queue?.shift()?.(m)
    })
    worker.on('error', (err) => {
      stop()
      failed?.(err)
    })
    const exited = new Promise<void>((resolve) =>
      worker.on('exit', (code) => {
        if (code !== 0) {
          stop()
          failed?.(new Error(`driver worker ${w} exited with code ${code}`))
        }
        resolve()
      }),
    )
    running.push({
      worker,
      exited,
      next: (type) =>
        new Promise((resolve) => {
          const queue = waiting.get(type) ?? []
          queue.push(resolve as (m: FromWorker) => void)
          waiting.set(type, queue)
        }),
    })
  }
  const post = (r: Running, m: ToWorker): void => r.worker.postMessage(m)
  const settle = <T>(p: Promise<T>): Promise<T> => Promise.race([p, failure])

  let statusTimer: NodeJS.Timeout | undefined
  const onAbort = (): void => stop()
  try {
    await settle(Promise.all(running.map((r) => r.next('ready'))))
    const dones = running.map((r) => r.next('done'))
    o.signal?.addEventListener('abort', onAbort)
    if (o.signal?.aborted === true) stop()
    const originHrMs = hrMs()
    for (const r of running) post(r, { type: 'start', originHrMs })

    if (status) {
      let lastDone = 0
      let lastAt = originHrMs
      let asking = false
      statusTimer = setInterval(() => {
        // A slow answer (a worker blocked in a long throttled sleep) skips a line rather than piling up requests.
        if (asking) return
        asking = true
        const answers = running.map((r) => r.next('interval'))
        for (const r of running) post(r, { type: 'interval' })
        void Promise.all(answers).then((replies) => {
          asking = false
          const now = hrMs()
          const snap = new Measurements()
          let done = 0
          for (const m of replies) {
            snap.merge(m.cells)
            done += m.done
          }
          o.onStatus!({
            elapsedMs: now - originHrMs,
            operations: done,
            currentOpsPerSec: ((done - lastDone) * 1000) / (now - lastAt),
            todoOperations: limit > 0 ? Math.max(0, limit - done) : 0,
            intervals: snap.intervals(),
          })
          lastDone = done
          lastAt = now
        })
      }, o.statusIntervalS * 1000)
    }

    const results = await settle(Promise.all(dones))
    const total = new Measurements()
    let endHrMs = originHrMs
    let maxLagMs = 0
    for (const m of results) {
      total.merge(m.cells)
      endHrMs = Math.max(endHrMs, m.endHrMs)
      maxLagMs = Math.max(maxLagMs, m.maxLagMs)
    }
    const runtimeMs = endHrMs - originHrMs
    const operations = total.count()
    return {
      runtimeMs,
      // The workers' common origin (process.hrtime) on the wall clock.
      ...(operations > 0 ? { firstOpAtMs: Date.now() - (hrMs() - originHrMs) } : {}),
      operations,
      report: buildReport(total.aggregates(), runtimeMs, { intended: o.target > 0 }),
      schedule: { maxLagMs, episodes: episodes.episodes },
    }
  } finally {
    if (statusTimer !== undefined) clearInterval(statusTimer)
    o.signal?.removeEventListener('abort', onAbort)
    stop()
    // Connections are closed outside the measured time; a worker that does not answer is terminated.
    await Promise.all(
      running.map(async (r) => {
        const closed = r.next('closed')
        post(r, { type: 'cleanup' })
        await Promise.race([
          closed,
          r.exited,
          new Promise((resolve) => setTimeout(resolve, CLEANUP_TIMEOUT_MS).unref()),
        ])
        await r.worker.terminate()
      }),
    )
  }
}
