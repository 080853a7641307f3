/**
 * PartitionSource over a kafkajs consumer group (services/core/ports/partition-source.ts).
 *
 * kafkajs has no rebalance callback; its GROUP_JOIN event (every join,
 * with the new assignment) stands in for one: after a join kafkajs reads the
 * committed offsets of every assigned partition again, which is exactly the
 * port's contract for onRebalance.
 *
 * A commit is only taken as done when kafkajs says it sent it (its
 * COMMIT_OFFSETS event): while its consumer is not running (restarting
 * after a crash, rejoining the group) kafkajs 2.2's commitOffsets returns
 * without committing and without an error (runner.js: `if (!this.running)
 * return`, also when a commit fails meanwhile). The processor's protocol would
 * then write a batch whose intent was never committed, and a later owner,
 * reading an older position, would cut the range differently and count it
 * twice (the cluster tier saw it when a broker died).
 */
import type { Admin, Consumer, Kafka } from 'kafkajs'
import { BenchstreamError } from '../../core/errors.js'
import { OutageTracker, type OutageEvent } from '../../core/health/outage.js'
import type {
  CommittedPosition,
  PartitionSource,
  PartitionSourceHandlers,
  SourceOutage,
} from '../../core/ports/partition-source.js'
import { lastKafkaProblem } from './client.js'

export interface KafkaPartitionSourceOptions {
  topic: string
  groupId: string
  /** Bytes fetched per request and per partition. @default 64 MiB / 16 MiB */
  maxBytes?: number
  maxBytesPerPartition?: number
  /** Kafka not answering the processor: called when it starts and when it ends, with how long it lasted. */
  onOutage?: (e: OutageEvent) => void
  /** ms before the first restart of a consumer kafkajs gave up on, doubled per failed restart. @default 1000 */
  restartBackoffMs?: number
}

/** Longest wait between restarts of a consumer that kafkajs gave up on. */
const MAX_RESTART_BACKOFF_MS = 30_000

/**
 * A commit or an offset read unanswered this long starts an outage (kafkajs may still be retrying it: a partition
 * leader or the group coordinator on a broker that died is replaced only after the controller notices, ~9 s).
 */
const SLOW_REQUEST_MS = 2000

export class KafkaPartitionSource implements PartitionSource {
  private readonly consumer: Consumer
  private readonly admin: Admin
  private adminConnected = false
  private running = false
  /** Partitions a seek was asked for during the batch in progress: their offsets must not be resolved past it. */
  private readonly seeked = new Set<number>()
  private readonly tracker: OutageTracker
  /** Requests in progress unanswered longer than SLOW_REQUEST_MS: the outage cannot end before they are answered. */
  private slow = 0
  /** Commits kafkajs sent and the coordinator accepted (COMMIT_OFFSETS), until commit() checks for its own. */
  private readonly sent = new Set<string>()
  /** Restarts of the consumer made here, after kafkajs gave up on it (stats, tests). */
  restarts = 0
  private restartTimer: NodeJS.Timeout | undefined
  private handlers: PartitionSourceHandlers | undefined

  constructor(
    private readonly kafka: Kafka,
    private readonly opts: KafkaPartitionSourceOptions,
  ) {
    this.tracker = new OutageTracker('Kafka (the processor: commits and offset reads)', opts.onOutage)
    this.consumer = kafka.consumer({
      groupId: opts.groupId,
      sessionTimeout: 30_000,
      heartbeatInterval: 3000,
      maxBytes: opts.maxBytes ?? 64 * 1024 * 1024,
      maxBytesPerPartition: opts.maxBytesPerPartition ?? 16 * 1024 * 1024,
    })
    this.admin = kafka.admin()
  }

  async start(handlers: PartitionSourceHandlers): Promise<void> {
    const topic = this.opts.topic
    await this.admin.connect()
    this.adminConnected = true
    this.consumer.on(this.consumer.events.GROUP_JOIN, (e) => {
      handlers.onRebalance(e.payload.memberAssignment[topic] ?? [])
    })
    this.consumer.on(this.consumer.events.COMMIT_OFFSETS, (e) => {
      for (const t of e.payload.topics)
        if (t.topic === topic)
          for (const p of t.partitions) this.sent.add(commitKey(Number(p.partition), String(p.offset)))
    })
    // kafkajs restarts a crashed consumer by itself (rejoining the group) when it takes the error for retriable; it is
    // an outage until a request succeeds. When it does not (restart: false), kafkajs leaves the consumer disconnected
    // for good, and a processor that only logged it would sit with no partitions while /healthz waited for a request
    // that never comes: the consumer is started again here, with a backoff, until it runs or the source is stopped.
    this.consumer.on(this.consumer.events.CRASH, (e) => {
      const restart = (e.payload as { restart?: boolean }).restart !== false
      this.tracker.failed(
        restart
          ? `the consumer failed and is restarting: ${e.payload.error.message}`
          : `the consumer failed and kafkajs gave up on it (${e.payload.error.message}); starting it again`,
      )
      if (!restart) this.scheduleRestart(this.opts.restartBackoffMs ?? 1000)
    })
    this.handlers = handlers
    await this.runConsumer()
  }

  /** Starts the consumer again after kafkajs gave up on it, doubling the wait after each failed try. */
  private scheduleRestart(waitMs: number): void {
    if (!this.running || this.restartTimer !== undefined) return
    this.restartTimer = setTimeout(() => {
      this.restartTimer = undefined
      if (!this.running) return
      this.restarts++
      this.runConsumer().catch((err: unknown) => {
        this.tracker.failed(`starting the consumer again failed: ${(err as Error).message}`)
        this.scheduleRestart(Math.min(waitMs * 2, MAX_RESTART_BACKOFF_MS))
      })
    }, waitMs)
  }

  private async runConsumer(): Promise<void> {
    const handlers = this.handlers!
    const topic = this.opts.topic
    await this.consumer.connect()
    await this.consumer.subscribe({ topic, fromBeginning: true })
    this.running = true
    await this.consumer.run({
      autoCommit: false,
      eachBatchAutoResolve: false,
      partitionsConsumedConcurrently: 1,
      eachBatch: async (payload) => {
        const { batch } = payload
        const isCurrent = (): boolean => payload.isRunning() && !payload.isStale()
        if (batch.messages.length === 0) return
        const p = batch.partition
        this.seeked.delete(p)
        await handlers.onBatch({
          partition: p,
          firstOffset: Number(batch.firstOffset() ?? batch.messages[0]!.offset),
          messages: batch.messages.map((m) => ({ offset: Number(m.offset), value: m.value })),
          heartbeat: () => payload.heartbeat().catch(() => undefined),
          isCurrent,
        })
        // Everything handed over was taken (the processor skips offsets it
        // has already seen); after a seek the next fetch starts there instead.
        if (!this.seeked.has(p) && isCurrent()) payload.resolveOffset(batch.lastOffset())
      },
    })
  }

  async committed(partition: number): Promise<CommittedPosition> {
    const offsets = await this.request('reading committed offsets', () =>
      this.admin.fetchOffsets({ groupId: this.opts.groupId, topics: [this.opts.topic] }),
    )
    const entry = offsets.find((t) => t.topic === this.opts.topic)?.partitions.find((x) => x.partition === partition)
    return { offset: entry === undefined ? -1 : Number(entry.offset), metadata: entry?.metadata ?? null }
  }

  async commit(partition: number, offset: number, metadata: string | null): Promise<void> {
    // One commit of a partition at a time (the processor's protocol), so partition and offset name it.
    const key = commitKey(partition, String(offset))
    this.sent.delete(key)
    await this.request('a commit', () =>
      this.consumer.commitOffsets([{ topic: this.opts.topic, partition, offset: String(offset), metadata }]),
    )
    if (!this.sent.delete(key))
      throw new BenchstreamError(
        'BS_ERR_KAFKA',
        `the commit of offset ${offset} of partition ${partition} was not sent: the consumer is not running ` +
          `(rejoining the group or restarting after a failure)`,
      )
  }

  async endOffsets(): Promise<Map<number, number>> {
    const ends = await this.request('reading the log end offsets', () => this.admin.fetchTopicOffsets(this.opts.topic))
    return new Map(ends.map((e) => [e.partition, Number(e.high)]))
  }

  outage(): SourceOutage | undefined {
    const o = this.tracker.current()
    return o === undefined ? undefined : { sinceMs: o.sinceMs, forMs: o.forMs, problem: o.problem }
  }

  /**
   * A request to the broker, watched: unanswered for SLOW_REQUEST_MS or failed, it starts (or extends) an outage;
   * answered, it ends the outage unless another request is still unanswered. kafkajs retries inside the request,
   * so what it logged last is the cause named.
   */
  private async request<T>(what: string, work: () => Promise<T>): Promise<T> {
    const start = Date.now()
    let slow = false
    const timer = setTimeout(() => {
      slow = true
      this.slow++
      this.tracker.failed(`${what} unanswered for ${SLOW_REQUEST_MS / 1000} s${this.cause()}`, start)
    }, SLOW_REQUEST_MS)
    try {
      const result = await work()
      clearTimeout(timer)
      if (slow) this.slow--
      if (this.slow === 0) this.tracker.ok()
      return result
    } catch (err) {
      clearTimeout(timer)
      if (slow) this.slow--
      // A commit refused because the partition moved to another member is the group at work, not an outage.
      if (!isRebalance(err)) this.tracker.failed(`${what} failed: ${(err as Error).message}${this.cause()}`, start)
      throw err
    }
  }

  private cause(): string {
    const p = lastKafkaProblem(this.kafka)
    return p === undefined || Date.now() - p.atMs > 60_000 ? '' : ` (last: ${p.message})`
  }

  seek(partition: number, offset: number): void {
    this.seeked.add(partition)
    this.consumer.seek({ topic: this.opts.topic, partition, offset: String(offset) })
  }

  pause(partition: number): void {
    this.consumer.pause([{ topic: this.opts.topic, partitions: [partition] }])
  }

  resume(partition: number): void {
    this.consumer.resume([{ topic: this.opts.topic, partitions: [partition] }])
  }

  async stop(): Promise<void> {
    if (!this.running) return
    this.running = false
    clearTimeout(this.restartTimer)
    this.restartTimer = undefined
    await this.consumer.stop()
  }

  async close(): Promise<void> {
    // Every client is closed even if another fails to.
    await Promise.allSettled([
      this.consumer.disconnect(),
      this.adminConnected ? this.admin.disconnect() : Promise.resolve(),
    ])
  }
}

/** Errors of a group that is rebalancing (the commit's generation is outdated): expected, not an outage. */
function isRebalance(err: unknown): boolean {
  const type = (err as { type?: unknown }).type
  return (
    type === 'REBALANCE_IN_PROGRESS' ||
    type === 'ILLEGAL_GENERATION' ||
    type === 'UNKNOWN_MEMBER_ID' ||
    type === 'FENCED_INSTANCE_ID'
  )
}

function commitKey(partition: number, offset: string): string {
  return `${partition}@${offset}`
}
