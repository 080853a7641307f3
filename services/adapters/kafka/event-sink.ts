/**
 * EventSink over a kafkajs producer. Events are packed into OPS batches
 * (schemas/events.v1.ts) of up to maxBatchEvents, sealed also every lingerMs,
 * and sent by one background pump. The queue of sealed batches is bounded:
 * when it is full (Kafka down or too slow) new batches are dropped and
 * counted as undelivered, so the benchmark itself is never slowed or blocked
 * by telemetry.
 *
 * Few, full requests. A produce request costs kafkajs a fixed few hundred µs
 * of CPU whatever it carries (promises, locks, the request queue, a socket
 * write and the response), and the driver pays it on the client's cores. So
 * sealed batches wait until a request's worth is queued (batchesPerRequest
 * batches or MAX_REQUEST_BYTES) or until the linger timer comes round, and
 * then go out together: at 100,000 events/s and a 250 ms linger a request
 * carries ~5 batches instead of one. No event waits much longer than before:
 * the linger bounds both the unsealed batch and the queue. The batches'
 * buffers go back to the writer once acknowledged (OpsBatchWriter.recycle).
 *
 * Exactly once across broker failures. The producer is idempotent: the broker
 * drops a batch whose producer sequence it has already written, which makes a
 * retry after an unanswered request safe, provided the retry carries the same
 * records under the same sequence to the same partition. kafkajs cannot
 * promise that for a request that spans partitions (a partial failure: what
 * succeeded is sent again under new sequences when the whole send is retried,
 * and after a leader moves to a broker that already answered, kafkajs' retry
 * skips that broker's new partitions), nor when another send to the partition
 * runs between a failure and its retry (kafkajs rolls the sequence back on
 * any failure, written or not). So every produce request here goes to one
 * partition, the chunk of batches it carries is pinned until the broker
 * acknowledges it (retries send exactly it again, to the same partition), and
 * one request is in flight at a time, control records included: they go
 * through the same pump.
 */
import type { Kafka, Message, Producer } from 'kafkajs'
import { OPERATIONS, RECORD_KIND, STATUSES, type RunLifecycle, type ServerMetrics } from '../../../schemas/events.v1.js'
import { OpsBatchWriter } from '../../core/codec/ops-batch-writer.js'
import { encodeJsonRecord } from '../../core/codec/record-encoders.js'
import { OutageTracker, type OutageEvent } from '../../core/health/outage.js'
import type { EventSink, SinkStats } from '../../core/ports/event-sink.js'
import { lastKafkaProblem, partitioner } from './client.js'

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
  /** Batches per produce request (all to one partition; MAX_REQUEST_BYTES bounds it too). @default 16 */
  batchesPerRequest?: number
  /**
   * Kafka not acknowledging: called when it starts (a send failed, or has waited SLOW_SEND_MS) and when it ends,
   * with how long it lasted (a broker down, a partition leader moving).
   */
  onOutage?: (e: OutageEvent) => void
}

/** How long flush() and sendRecord() wait for a failing Kafka to make progress. */
const STALL_MS = 5000
/** A send unanswered this long counts as the start of an outage (kafkajs may still be retrying it). */
const SLOW_SEND_MS = 2000
/** How long close() waits for a send in progress. */
const CLOSE_WAIT_MS = 1000
/** Wait before the pinned chunk is sent again after kafkajs gave up on it. */
const RESEND_WAIT_MS = 500
/**
 * Bytes of batches in one produce request. Its batches become one record batch on the broker, which refuses one
 * larger than message.max.bytes (1 MiB by default; 16 batches of 4,096 events of 16 bytes would be 1 MiB). kafkajs
 * encodes a request through about ten buffers of the next power of two, zero-filled: 240 KiB of values and their
 * keys stay within 256 KiB. Measured (a kafkajs send loop of 45 KB messages, 18 MB in all, load average 4-5):
 * 1 message a request 15-17.5 ns of process CPU per byte, 4-5 messages (256 KiB buffers) 7.2-9.7 ns with 1-3
 * mark-compacts, 6-10 messages (512 KiB buffers) 9.4-11.7 ns with 7-9: V8 collects old space for the external
 * memory those buffers hold, as fewer requests leave it fewer scavenges to free them young.
 */
const MAX_REQUEST_BYTES = 240 * 1024
/** Per-(operation, status) count arrays kept for reuse. */
const MAX_SPARE_COUNTS = 64

interface Sealed {
  value: Buffer
  events: number
  /** counts[opCode * 16 + statusIndex] */
  counts: Uint32Array
  seq: number
}

/** A control record waiting for the pump. */
interface ControlItem {
  message: Message
  /** Resolved when the broker acknowledged it. */
  delivered: () => void
  /** sendRecord stopped waiting and counted it undelivered (it is uncounted again if it goes out later). */
  givenUp: boolean
}

/** What the next produce request carries until the broker acknowledges it. */
type Pinned = { kind: 'events'; batches: number; partition: number } | { kind: 'control'; item: ControlItem }

export class KafkaEventSink implements EventSink {
  private readonly writer: OpsBatchWriter
  private counts: Uint32Array = new Uint32Array(256)
  /** Sealed batches not yet acknowledged; a pinned chunk is the first `pinned.batches` of them. */
  private readonly queue: Sealed[] = []
  /** Control records waiting for the pump (they go before event batches: they are few and small). */
  private readonly controls: ControlItem[] = []
  private pinned: Pinned | undefined
  private readonly sent = new Float64Array(256)
  private sentEvents = 0
  private undelivered = 0
  private delivered = 0
  private seq = 0
  /** Batches sealed before this sequence number go out now, in however many requests (set by the linger timer). */
  private dueSeq = 0
  /** flush() calls waiting: while any does, every queued batch is due. */
  private flushing = 0
  /** Bytes of the queued batches. */
  private queuedBytes = 0
  private readonly spareCounts: Uint32Array[] = []
  private pumping: Promise<void> | undefined
  private readonly timer: NodeJS.Timeout
  private readonly maxBatchEvents: number
  private readonly maxQueued: number
  private readonly perRequest: number
  private lastError: Error | undefined
  private closed = false
  private connected = false
  /** Partitions of the topic, read when connecting; event chunks go round them. */
  private partitions = 0
  private nextPartition: number
  /** Control records (run start/end, server metrics) that could not be sent. */
  private undeliveredRecords = 0
  private readonly outage: OutageTracker

  private constructor(
    private readonly kafka: Kafka,
    private readonly producer: Producer,
    private readonly opts: KafkaSinkOptions,
  ) {
    this.writer = new OpsBatchWriter(opts.runId, opts.clientId)
    this.maxBatchEvents = opts.maxBatchEvents ?? 4096
    this.maxQueued = opts.maxQueuedBatches ?? 2048
    this.perRequest = opts.batchesPerRequest ?? 16
    // Clients of one run start on different partitions rather than all on the first.
    this.nextPartition = Math.floor(Math.random() * 1024)
    this.outage = new OutageTracker(`Kafka (${opts.topic})`, opts.onOutage)
    this.timer = setInterval(() => {
      if (this.writer.count > 0) this.seal()
      this.dueSeq = this.seq
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
    const sink = new KafkaEventSink(kafka, producer, opts)
    await sink.ensureConnected()
    return sink
  }

  private async ensureConnected(): Promise<boolean> {
    if (this.connected) return true
    try {
      if (this.partitions === 0) this.partitions = await this.topicPartitions()
      await this.producer.connect()
      this.connected = true
    } catch (err) {
      this.lastError = err as Error
    }
    return this.connected
  }

  private async topicPartitions(): Promise<number> {
    const admin = this.kafka.admin()
    try {
      await admin.connect()
      const meta = await admin.fetchTopicMetadata({ topics: [this.opts.topic] })
      const n = meta.topics[0]?.partitions.length ?? 0
      if (n === 0) throw new Error(`topic ${this.opts.topic} has no partitions in the cluster's metadata`)
      return n
    } finally {
      await admin.disconnect().catch(() => undefined)
    }
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
      // A request's worth is queued: no need to wait for the linger.
      if (this.queue.length >= this.perRequest || this.queuedBytes >= MAX_REQUEST_BYTES) this.pump()
    }
  }

  async sendRecord(record: RunLifecycle | ServerMetrics): Promise<void> {
    // Control records travel on the same topic; before an 'end' record, deliver
    // pending events first so the record's counts are final.
    if (record.kind === RECORD_KIND.RUN_LIFECYCLE && record.phase === 'end') await this.flush(30_000)
    if (this.closed || !(await this.ensureConnected())) {
      // Never fail the benchmark for telemetry: count it, the report shows it.
      this.undeliveredRecords++
      return
    }
    let done = false
    const item: ControlItem = {
      message: { key: `${this.opts.runId}:${this.opts.clientId}:ctl`, value: encodeJsonRecord(record) },
      delivered: () => {
        done = true
        if (item.givenUp) this.undeliveredRecords--
      },
      givenUp: false,
    }
    this.controls.push(item)
    this.pump()
    await this.waitWhileProgressing(() => done, 30_000)
    if (done) return
    item.givenUp = true
    this.undeliveredRecords++
    // Not sent yet: it never will be. Pinned (in doubt): it stays, and is sent again until acknowledged.
    const i = this.controls.indexOf(item)
    if (i >= 0) this.controls.splice(i, 1)
  }

  async flush(timeoutMs: number): Promise<void> {
    if (this.writer.count > 0) this.seal()
    this.flushing++
    try {
      await this.waitWhileProgressing(() => this.queue.length === 0 && this.pumping === undefined, timeoutMs)
    } finally {
      this.flushing--
    }
  }

  /**
   * Pumps until `done()`, at most timeoutMs; while Kafka is failing, gives up after STALL_MS without progress
   * rather than holding the benchmark's end hostage (what is left is counted at close()).
   */
  private async waitWhileProgressing(done: () => boolean, timeoutMs: number): Promise<void> {
    const deadline = Date.now() + timeoutMs
    let lastProgress = Date.now()
    let delivered = this.delivered
    while (!done() && Date.now() < deadline) {
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

  /** Kafka not acknowledging now: since when, why; undefined when all is well. */
  get currentOutage(): ReturnType<OutageTracker['current']> {
    return this.outage.current()
  }

  async close(): Promise<void> {
    if (this.closed) return
    clearInterval(this.timer)
    await this.flush(30_000)
    this.closed = true
    // A send still in kafkajs' retries is not waited for long: what it carries is counted as undelivered.
    if (this.pumping !== undefined) await Promise.race([this.pumping, sleep(CLOSE_WAIT_MS)])
    // Whatever is still queued now will never be sent: count it.
    for (const b of this.queue.splice(0)) this.undelivered += b.events
    this.queuedBytes = 0
    this.pinned = undefined
    if (this.connected) await this.producer.disconnect().catch(() => undefined)
  }

  private seal(): void {
    const events = this.writer.count
    const batch: Sealed = { value: this.writer.finish(), events, counts: this.counts, seq: this.seq++ }
    this.counts = this.spareCounts.pop() ?? new Uint32Array(256)
    if (this.queue.length >= this.maxQueued) {
      this.undelivered += batch.events
      this.release(batch)
      return
    }
    this.queue.push(batch)
    this.queuedBytes += batch.value.length
  }

  /** A batch acknowledged or dropped: its buffer and counts are reused for later batches. */
  private release(b: Sealed): void {
    this.writer.recycle(b.value)
    if (this.spareCounts.length < MAX_SPARE_COUNTS) {
      b.counts.fill(0)
      this.spareCounts.push(b.counts)
    }
  }

  private pump(): void {
    if (this.pumping !== undefined || this.closed) return
    if (this.pinned === undefined && this.queue.length === 0 && this.controls.length === 0) return
    this.pumping = this.drain().finally(() => {
      this.pumping = undefined
    })
  }

  /** The one sender: pins the next chunk (or control record) and sends it until the broker acknowledges it. */
  private async drain(): Promise<void> {
    for (;;) {
      if (this.closed) return
      if (!this.connected && !(await this.ensureConnected())) {
        await sleep(RESEND_WAIT_MS)
        continue
      }
      const p = (this.pinned ??= this.next())
      if (p === undefined) return
      const messages: Message[] =
        p.kind === 'control'
          ? [p.item.message]
          : this.queue.slice(0, p.batches).map((b) => ({
              key: `${this.opts.runId}:${this.opts.clientId}:${b.seq}`,
              value: b.value,
              partition: p.partition,
            }))
      const sendStart = Date.now()
      const slow = setTimeout(
        () => this.outage.failed(`no acknowledgment for ${SLOW_SEND_MS / 1000} s${this.cause()}`, sendStart),
        SLOW_SEND_MS,
      )
      try {
        await this.producer.send({ topic: this.opts.topic, acks: -1, messages })
      } catch (err) {
        // kafkajs has already retried; the same chunk goes again, to the same partition.
        this.lastError = err as Error
        this.outage.failed(`${(err as Error).message}${this.cause()}`, sendStart)
        await sleep(RESEND_WAIT_MS)
        continue
      } finally {
        clearTimeout(slow)
      }
      this.lastError = undefined
      this.outage.ok()
      this.pinned = undefined
      if (p.kind === 'control') {
        p.item.delivered()
        continue
      }
      for (const b of this.queue.splice(0, p.batches)) {
        for (let i = 0; i < 256; i++) this.sent[i]! += b.counts[i]!
        this.sentEvents += b.events
        this.delivered++
        this.queuedBytes -= b.value.length
        this.release(b)
      }
    }
  }

  /**
   * What to send next: a control record first, else the next chunk of batches for the next partition, when they
   * are due (linger, flush) or fill a request; undefined = nothing to send now.
   */
  private next(): Pinned | undefined {
    const item = this.controls.shift()
    if (item !== undefined) return { kind: 'control', item }
    const q = this.queue
    if (q.length === 0) return undefined
    let batches = 0
    let bytes = 0
    while (batches < q.length && batches < this.perRequest && bytes + q[batches]!.value.length <= MAX_REQUEST_BYTES) {
      bytes += q[batches]!.value.length
      batches++
    }
    // A batch larger than a request alone still goes, alone.
    if (batches === 0) batches = 1
    const full = batches < q.length || batches === this.perRequest
    if (!full && this.flushing === 0 && q[0]!.seq >= this.dueSeq) return undefined
    // Keys name run, client and batch for debugging; the partition is chosen here, one per request, round robin.
    const partition = this.nextPartition++ % this.partitions
    return { kind: 'events', batches, partition }
  }

  /** The error kafkajs logged last, as the reason a send is taking long. */
  private cause(): string {
    const p = lastKafkaProblem(this.kafka)
    return p === undefined || Date.now() - p.atMs > 60_000 ? '' : ` (last: ${p.message})`
  }
}

function sleep(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms))
}
