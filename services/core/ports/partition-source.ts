/**
 * The processor's view of Kafka: a consumer-group member that owns some
 * partitions of the events topic, hands their messages over one batch at a
 * time per partition, and stores a committed offset with metadata per
 * partition. The processor's exactly-once protocol (intent commit, insert
 * with a deduplication token, commit) is written against this port only;
 * services/adapters/kafka/partition-source.ts implements it over a client.
 */

/** One message of a batch. */
export interface SourceMessage {
  offset: number
  /** The message value; null for a tombstone. */
  value: Buffer | null
}

export interface SourceBatch {
  partition: number
  /** Offset of the first message in the batch (where consumption resumed). */
  firstOffset: number
  messages: readonly SourceMessage[]
  /** Keeps the group membership alive during long work on this batch. Never throws. */
  heartbeat(): Promise<void>
  /** False once this batch is outdated: the source is stopping or the partition was reassigned. */
  isCurrent(): boolean
}

/** A partition's committed position: the next offset to read, or -1 when none was ever committed. */
export interface CommittedPosition {
  offset: number
  metadata: string | null
}

export interface PartitionSourceHandlers {
  /**
   * Called for each batch, never concurrently for one partition. Resolving
   * means the batch was taken; the source does not commit anything itself.
   */
  onBatch(batch: SourceBatch): Promise<void>
  /**
   * Called when the group's assignment may have changed. After it, every
   * owned partition is read again from its committed offset, so state
   * built from uncommitted messages must be dropped.
   */
  onRebalance(assigned: readonly number[]): void
}

export interface PartitionSource {
  /** Joins the group and starts delivering batches; resolves once consuming has begun. */
  start(handlers: PartitionSourceHandlers): Promise<void>
  /** The committed position of a partition (what a new owner resumes from). */
  committed(partition: number): Promise<CommittedPosition>
  /** Commits an offset with metadata for a partition. Fails if the partition is no longer owned. */
  commit(partition: number, offset: number, metadata: string | null): Promise<void>
  /** Log end offsets of the owned partitions (for lag). */
  endOffsets(): Promise<Map<number, number>>
  /** Makes the next batch of a partition start at this offset (after state was dropped). */
  seek(partition: number, offset: number): void
  /** Stops fetching from a partition until resume() (while its data cannot be stored). */
  pause(partition: number): void
  resume(partition: number): void
  /** Stops delivering batches; waits for the batch in progress. */
  stop(): Promise<void>
  /** Leaves the group and closes connections. */
  close(): Promise<void>
  /**
   * The broker not answering now (commits, offset reads, the consumer itself failing or left unanswered): since
   * when and why; undefined when all is well, or when the source cannot tell.
   */
  outage?(): SourceOutage | undefined
}

/** What PartitionSource.outage reports. */
export interface SourceOutage {
  /** Wall-clock ms of the first failure. */
  sinceMs: number
  forMs: number
  /** The latest failure, in words. */
  problem: string
}
