/**
 * PartitionSource over a kafkajs consumer group (services/core/ports/partition-source.ts).
 *
 * kafkajs has no rebalance callback; its GROUP_JOIN event (every join,
 * with the new assignment) stands in for one: after a join kafkajs reads the
 * committed offsets of every assigned partition again, which is exactly the
 * port's contract for onRebalance.
 */
import type { Admin, Consumer, Kafka } from 'kafkajs'
import type { CommittedPosition, PartitionSource, PartitionSourceHandlers } from '../../core/ports/partition-source.js'

export interface KafkaPartitionSourceOptions {
  topic: string
  groupId: string
  /** Bytes fetched per request and per partition. @default 64 MiB / 16 MiB */
  maxBytes?: number
  maxBytesPerPartition?: number
}

export class KafkaPartitionSource implements PartitionSource {
  private readonly consumer: Consumer
  private readonly admin: Admin
  private adminConnected = false
  private running = false
  /** Partitions a seek was asked for during the batch in progress: their offsets must not be resolved past it. */
  private readonly seeked = new Set<number>()

  constructor(
    kafka: Kafka,
    private readonly opts: KafkaPartitionSourceOptions,
  ) {
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
    const offsets = await this.admin.fetchOffsets({ groupId: this.opts.groupId, topics: [this.opts.topic] })
    const entry = offsets.find((t) => t.topic === this.opts.topic)?.partitions.find((x) => x.partition === partition)
    return { offset: entry === undefined ? -1 : Number(entry.offset), metadata: entry?.metadata ?? null }
  }

  async commit(partition: number, offset: number, metadata: string | null): Promise<void> {
    await this.consumer.commitOffsets([{ topic: this.opts.topic, partition, offset: String(offset), metadata }])
  }

  async endOffsets(): Promise<Map<number, number>> {
    const ends = await this.admin.fetchTopicOffsets(this.opts.topic)
    return new Map(ends.map((e) => [e.partition, Number(e.high)]))
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
