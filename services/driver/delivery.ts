/**
 * Event delivery on a thread of its own. Client threads write fixed-size
 * records into SharedArrayBuffer rings (event-ring.ts); the delivery thread
 * drains every ring every DRAIN_INTERVAL_MS into the real sink (the Kafka
 * sink: OPS batch encoding, the bounded queue, kafkajs), so encoding and
 * Kafka I/O never run on a thread that measures.
 *
 * Wake-ups are what the client pays for on an otherwise idle thread: a
 * periodic timer costs a process about 10 ms of CPU a second at a 5 or 10 ms
 * period on the two-core machine of the benchmarks (a scratch loop: ~50-180
 * µs each, load 47-52), 0.1 µs per operation at 100,000 ops/s. So the rings
 * are drained every 50 ms (sooner while one fills), and the main thread's
 * ring is published by its client threads as they step aside, not by a timer.
 *
 * RingEventSink is the EventSink the driver's main thread uses: record()
 * writes into its own ring (client threads running on the main thread, the
 * memory binding), addRing() makes a ring for a worker thread, and the
 * control calls (sendRecord, flush, close) are messages to the delivery
 * thread, answered with its sink's stats. It keeps the EventSink contract:
 * a control record goes out after every event recorded before it (the
 * delivery thread drains all rings first), and nothing is hidden: events
 * dropped by a full ring, or still in a ring when delivery is over, count as
 * undelivered.
 *
 * serveDelivery is the delivery thread's side; delivery-main.ts, an entry
 * file, opens the real sink and calls it.
 */
import { Worker, type MessagePort } from 'node:worker_threads'
import type { RunLifecycle, ServerMetrics } from '../../schemas/events.v1.js'
import type { EventSink, SinkStats } from '../core/ports/event-sink.js'
import { createEventRing, ringState, RingConsumer, RingProducer } from './event-ring.js'

/**
 * How often the delivery thread drains the rings, ms: rarely enough that its
 * wake-ups cost next to nothing, often enough that a ring never fills (the
 * main thread's ring holds 260 ms of a client doing 1M ops/s, a worker's
 * 65 ms of one doing 1M ops/s, a worker on a real datastore does well under
 * 200,000) and below the sink's linger (250 ms in the driver). Draining every
 * 50 ms instead of 10 did not move the READ p99 at 5,000 ops/s
 * (docs/reports/telemetry-cost.md).
 */
const DRAIN_INTERVAL_MS = 50
/** The next drain comes this soon (ms) when a ring was more than DRAIN_SOON_FILL full. */
const DRAIN_SOON_MS = 5
const DRAIN_SOON_FILL = 1 / 8
/**
 * Records in the main thread's ring: client threads running on the main thread (memory binding) are the fastest
 * producers.
 */
const MAIN_RING_RECORDS = 1 << 18
/**
 * The main thread's own ring makes its head visible every this many records, on every control call, and whenever
 * its client threads step aside (every 5 ms) or sleep (publish()).
 */
const MAIN_PUBLISH_EVERY = 64

type Request =
  | { id: number; type: 'record'; record: RunLifecycle | ServerMetrics }
  | { id: number; type: 'flush'; timeoutMs: number }
  | { id: number; type: 'close' }
  | { type: 'ring'; ring: SharedArrayBuffer }

type Reply = { type: 'ready' } | { type: 'failed'; message: string } | { id: number; type: 'done'; stats: SinkStats }

const EMPTY_STATS: SinkStats = {
  sent: {},
  sentEvents: 0,
  undelivered: 0,
  undeliveredRecords: 0,
  queuedBatches: 0,
  queuedEvents: 0,
  deliveredBatches: 0,
}

/** What the delivery thread is started with. */
export interface DeliveryWorkerData<T> {
  /** Rings to drain from the start. */
  rings: SharedArrayBuffer[]
  /** Whatever the entry file needs to open the real sink (Kafka settings). */
  sink: T
}

/**
 * The delivery thread's loop: drains the rings into `sink`, runs the control
 * calls in the order they came, each after draining.
 */
export async function serveDelivery(
  port: MessagePort,
  rings: readonly SharedArrayBuffer[],
  open: () => Promise<EventSink>,
): Promise<void> {
  let sink: EventSink
  try {
    sink = await open()
  } catch (err) {
    port.postMessage({ type: 'failed', message: (err as Error).message } satisfies Reply)
    return
  }
  const consumers = rings.map((r) => new RingConsumer(r))
  /** Drains every ring; true when one was filling up (more than DRAIN_SOON_FILL of it). */
  const drain = (): boolean => {
    let filling = false
    for (const c of consumers) if (c.drain(sink) > c.capacity * DRAIN_SOON_FILL) filling = true
    return filling
  }
  let closing = false
  let timer: NodeJS.Timeout
  const tick = (): void => {
    const soon = drain()
    if (!closing) timer = setTimeout(tick, soon ? DRAIN_SOON_MS : DRAIN_INTERVAL_MS)
  }
  timer = setTimeout(tick, DRAIN_INTERVAL_MS)
  let chain = Promise.resolve()
  port.on('message', (m: Request) => {
    if (m.type === 'ring') {
      consumers.push(new RingConsumer(m.ring))
      return
    }
    chain = chain.then(async () => {
      drain()
      if (m.type === 'record') await sink.sendRecord(m.record)
      else if (m.type === 'flush') await sink.flush(m.timeoutMs)
      else {
        closing = true
        clearTimeout(timer)
        await sink.close()
      }
      port.postMessage({ id: m.id, type: 'done', stats: sink.stats() } satisfies Reply)
      if (m.type === 'close') port.close()
    })
  })
  port.postMessage({ type: 'ready' } satisfies Reply)
}

export class RingEventSink implements EventSink {
  private readonly own: RingProducer
  private readonly rings: SharedArrayBuffer[]
  private readonly waiting = new Map<number, (s: SinkStats) => void>()
  private last: SinkStats = EMPTY_STATS
  private nextId = 0
  /** Set when the delivery thread is gone: nothing in a ring will be delivered any more. */
  private gone: Error | undefined
  private closed: Promise<void> | undefined

  private constructor(
    private readonly worker: Worker,
    ownRing: SharedArrayBuffer,
  ) {
    this.rings = [ownRing]
    this.own = new RingProducer(ownRing, MAIN_PUBLISH_EVERY)
    worker.on('message', (m: Reply) => {
      if (m.type !== 'done') return
      this.last = m.stats
      this.waiting.get(m.id)?.(m.stats)
      this.waiting.delete(m.id)
    })
    const lost = (err: Error): void => {
      this.gone ??= err
      for (const resolve of this.waiting.values()) resolve(this.last)
      this.waiting.clear()
    }
    worker.on('error', lost)
    worker.on('exit', (code) => lost(new Error(`the delivery thread exited with code ${code}`)))
  }

  /**
   * Starts the delivery thread from `entry` (an entry file that opens the real
   * sink from `data.sink` and calls serveDelivery) and waits until its sink is open.
   */
  static async start<T>(entry: URL, sinkData: T): Promise<RingEventSink> {
    const own = createEventRing(MAIN_RING_RECORDS)
    const worker = new Worker(entry, { workerData: { rings: [own], sink: sinkData } satisfies DeliveryWorkerData<T> })
    await new Promise<void>((resolve, reject) => {
      const onMessage = (m: Reply): void => {
        if (m.type === 'ready') done(undefined)
        else if (m.type === 'failed') done(new Error(`event delivery could not start: ${m.message}`))
      }
      const onError = (err: Error): void => done(err)
      const onExit = (code: number): void =>
        done(new Error(`the delivery thread exited with code ${code} before it started`))
      const done = (err: Error | undefined): void => {
        worker.off('message', onMessage).off('error', onError).off('exit', onExit)
        if (err === undefined) resolve()
        else reject(err)
      }
      worker.on('message', onMessage).on('error', onError).on('exit', onExit)
    }).catch(async (err: unknown) => {
      await worker.terminate()
      throw err
    })
    return new RingEventSink(worker, own)
  }

  /** A new ring for a client thread on another JS thread (a worker); the delivery thread drains it from now on. */
  addRing(): SharedArrayBuffer {
    const ring = createEventRing()
    this.rings.push(ring)
    this.worker.postMessage({ type: 'ring', ring } satisfies Request)
    return ring
  }

  record(
    thread: number,
    opCode: number,
    cacheIndex: number,
    statusIndex: number,
    startUs: number,
    latencyUs: number,
    intendedUs: number,
    bytes: number,
  ): void {
    this.own.record(thread, opCode, cacheIndex, statusIndex, startUs, latencyUs, intendedUs, bytes)
  }

  /** Makes what the main thread's client threads recorded visible to the delivery thread (ThreadGroup calls it). */
  publish(): void {
    this.own.publish()
  }

  async sendRecord(record: RunLifecycle | ServerMetrics): Promise<void> {
    await this.request({ id: 0, type: 'record', record })
  }

  async flush(timeoutMs: number): Promise<void> {
    await this.request({ id: 0, type: 'flush', timeoutMs })
  }

  /**
   * The delivery thread's sink stats from its last answer, plus what is in
   * the rings: records dropped by a full ring are undelivered; records not
   * drained yet are queued (undelivered once delivery is over).
   */
  stats(): SinkStats {
    let inRings = 0
    let dropped = 0
    for (const r of this.rings) {
      const s = ringState(r)
      inRings += s.pending
      dropped += s.dropped
    }
    inRings += this.own.unpublishedCount
    const s = this.last
    const over = this.gone !== undefined
    return {
      ...s,
      sent: { ...s.sent },
      undelivered: s.undelivered + dropped + (over ? inRings : 0),
      queuedEvents: s.queuedEvents + (over ? 0 : inRings),
    }
  }

  close(): Promise<void> {
    this.closed ??= (async () => {
      await this.request({ id: 0, type: 'close' })
      this.gone ??= new Error('closed')
      await this.worker.terminate()
    })()
    return this.closed
  }

  private request(m: Exclude<Request, { type: 'ring' }>): Promise<SinkStats> {
    this.own.publish()
    if (this.gone !== undefined) return Promise.resolve(this.last)
    const id = ++this.nextId
    return new Promise((resolve) => {
      this.waiting.set(id, resolve)
      this.worker.postMessage({ ...m, id })
    })
  }
}
