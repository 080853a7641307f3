/**
 * EventSink over a kafkajs producer. Events are packed into OPS batches
 * (schemas/events.v1.ts) of up to maxBatchEvents, sealed also every lingerMs,
 * and sent by one background pump. The queue of sealed batches is bounded:
 * when it is full (Kafka down or too slow) new batches are dropped and
 * counted as undelivered, so the benchmark itself is never slowed or blocked
 * by telemetry.
 */
import type { Kafka, Producer } from 'kafkajs'
import { OPERATIONS, RECORD_KIND, STATUSES, type RunLifecycle, type ServerMetrics } from '../../../schemas/events.v1.js'
import { encodeJsonRecord, OpsBatchWriter } from '../../core/codec/event-codec.js'
import type { EventSink, SinkStats } from '../../core/ports/event-sink.js'
import { partitioner } from './client.js'

export interface KafkaSinkOptions {
  topic: string
  runId: string
  clientId: string
  /** Events per batch message. @default 4096 */
  maxBatchEvents?: number
  /** Longest time an event waits in an unsealed batch, ms. @default 50 */
  lingerMs?: number
  /** Sealed batches kept while Kafka is slow or down (about maxBatchEvents * 10 bytes each). @default 2048 */
  maxQueuedBatches?: number
  /** Batches per produce request. @default 16 */
  batchesPerRequest?: number
}

/** How long flush() waits for a failing Kafka to make progress. */
const STALL_MS = 5000

interface Sealed {
  value: Buffer
  events: number
  /** counts[opCode * 16 + statusIndex] */
  counts: Uint32Array
  seq: number
}

export class KafkaEventSink implements EventSink {
  private readonly producer: Producer
  private readonly writer: OpsBatchWriter
  private counts = new Uint32Array(256)
  private readonly queue: Sealed[] = []
  private readonly sent = new Float64Array(256)
  private sentEvents = 0
  private undelivered = 0
  private delivered = 0
  private seq = 0
  private pumping: Promise<void> | undefined
  private readonly timer: NodeJS.Timeout
  private readonly maxBatchEvents: number
  private readonly maxQueued: number
  private readonly perRequest: number
  private lastError: Error | undefined
  private closed = false

  private constructor(
    producer: Producer,
    private readonly opts: KafkaSinkOptions,
  ) {
    this.producer = producer
    this.writer = new OpsBatchWriter(opts.runId, opts.clientId)
    this.maxBatchEvents = opts.maxBatchEvents ?? 4096
    this.maxQueued = opts.maxQueuedBatches ?? 2048
    this.perRequest = opts.batchesPerRequest ?? 16
    this.timer = setInterval(() => {
      if (this.writer.count > 0) this.seal()
      this.pump()
    }, opts.lingerMs ?? 50)
  }

  /**
   * Opens the sink. An unreachable broker does not stop the benchmark: the
   * sink keeps trying in the background, buffers up to maxQueuedBatches and
   * counts the rest as undelivered.
   */
  static async open(kafka: Kafka, opts: KafkaSinkOptions): Promise<KafkaEventSink> {
    // Idempotent producer: a retried send cannot write a batch twice, so the
    // processor never counts an operation twice because of the driver.
    const producer = kafka.producer({
      idempotent: true,
      maxInFlightRequests: 1,
      createPartitioner: partitioner,
      allowAutoTopicCreation: false,
    })
    const sink = new KafkaEventSink(producer, opts)
    await sink.ensureConnected()
    return sink
  }

  private connected = false
  /** Control records (run start/end, server metrics) that could not be sent. */
  private undeliveredRecords = 0

  private async ensureConnected(): Promise<boolean> {
    if (this.connected) return true
    try {
      await this.producer.connect()
      this.connected = true
    } catch (err) {
      this.lastError = err as Error
    }
    return this.connected
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
    this.writer.add(thread, opCode, cacheIndex, statusIndex, startUs, latencyUs, intendedUs, bytes)
    this.counts[opCode * 16 + statusIndex]! += 1
    if (this.writer.count >= this.maxBatchEvents) {
      this.seal()
      this.pump()
    }
  }

  async sendRecord(record: RunLifecycle | ServerMetrics): Promise<void> {
    // Control records travel on the same topic; before an 'end' record, deliver
    // pending events first so the record's counts are final.
    if (record.kind === RECORD_KIND.RUN_LIFECYCLE && record.phase === 'end') await this.flush(30_000)
    try {
      if (!(await this.ensureConnected())) throw this.lastError ?? new Error('not connected')
      await this.producer.send({
        topic: this.opts.topic,
        acks: -1,
        messages: [{ key: `${this.opts.runId}:${this.opts.clientId}:ctl`, value: encodeJsonRecord(record) }],
      })
    } catch (err) {
      // Never fail the benchmark for telemetry: count it, the report shows it.
      this.lastError = err as Error
      this.undeliveredRecords++
    }
  }

  async flush(timeoutMs: number): Promise<void> {
    if (this.writer.count > 0) this.seal()
    const deadline = Date.now() + timeoutMs
    // While Kafka is failing, give up after STALL_MS without progress rather than
    // holding the benchmark's end hostage; what is left is counted at close().
    let lastProgress = Date.now()
    let delivered = this.delivered
    while ((this.queue.length > 0 || this.pumping !== undefined) && Date.now() < deadline) {
      if (this.delivered !== delivered) {
        delivered = this.delivered
        lastProgress = Date.now()
      } else if (this.lastError !== undefined && Date.now() - lastProgress > STALL_MS) {
        return
      }
      this.pump()
      if (this.pumping !== undefined) await Promise.race([this.pumping, sleep(50)])
      else await sleep(20)
    }
  }

  stats(): SinkStats {
    const sent: Record<string, number> = {}
    for (let i = 0; i < 256; i++) {
      const c = this.sent[i]!
      if (c > 0) sent[`${OPERATIONS[(i >> 4) - 1]}/${STATUSES[i & 15]}`] = c
    }
    return {
      sent,
      sentEvents: this.sentEvents,
      undelivered: this.undelivered,
      undeliveredRecords: this.undeliveredRecords,
      queuedBatches: this.queue.length,
      queuedEvents: this.queue.reduce((n, b) => n + b.events, 0) + this.writer.count,
      deliveredBatches: this.delivered,
    }
  }

  /** The last delivery error, if Kafka is failing now. */
  get error(): Error | undefined {
    return this.lastError
  }

  async close(): Promise<void> {
    if (this.closed) return
    this.closed = true
    clearInterval(this.timer)
    await this.flush(30_000)
    // Whatever is still queued now will never be sent: count it.
    for (const b of this.queue.splice(0)) this.undelivered += b.events
    if (this.connected) await this.producer.disconnect().catch(() => undefined)
  }

  private seal(): void {
    const batch: Sealed = { value: this.writer.finish(), events: 0, counts: this.counts, seq: this.seq++ }
    for (let i = 0; i < 256; i++) batch.events += batch.counts[i]!
    this.counts = new Uint32Array(256)
    if (this.queue.length >= this.maxQueued) {
      this.undelivered += batch.events
      return
    }
    this.queue.push(batch)
  }

  private pump(): void {
    if (this.pumping !== undefined || this.queue.length === 0) return
    this.pumping = this.drain().finally(() => {
      this.pumping = undefined
    })
  }

  private async drain(): Promise<void> {
    while (this.queue.length > 0) {
      if (!(await this.ensureConnected())) {
        await sleep(500)
        if (this.closed) return
        continue
      }
      const chunk = this.queue.slice(0, this.perRequest)
      try {
        await this.producer.send({
          topic: this.opts.topic,
          acks: -1,
          // Keys spread one client's batches over all partitions (scale-out),
          // while run and client stay readable in the key for debugging.
          messages: chunk.map((b) => ({ key: `${this.opts.runId}:${this.opts.clientId}:${b.seq}`, value: b.value })),
        })
      } catch (err) {
        // kafkajs has already retried; keep the batches and try again later.
        this.lastError = err as Error
        await sleep(500)
        if (this.closed) return
        continue
      }
      this.lastError = undefined
      this.queue.splice(0, chunk.length)
      for (const b of chunk) {
        for (let i = 0; i < 256; i++) this.sent[i]! += b.counts[i]!
        this.sentEvents += b.events
        this.delivered++
      }
    }
  }
}

function sleep(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms))
}
