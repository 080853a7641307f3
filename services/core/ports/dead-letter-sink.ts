/**
 * Where the processor puts what it cannot count: the original message (or
 * a description of the rejected events) with its reason, keyed by where it
 * came from so a replayed duplicate can be recognised.
 */
export interface DeadLetterRecord {
  /** Source topic, partition and offset of the rejected message. */
  sourceTopic: string
  sourcePartition: number
  sourceOffset: number
  /** A stable reason name (services/core/codec/decode-result.ts REJECT_REASONS, or a store error class). */
  reason: string
  /** Human-readable detail: what was wrong and what is allowed. */
  detail: string
  payload: Buffer
}

export interface DeadLetterSink {
  /** Sends the records durably (acknowledged by all replicas); throws when it could not. */
  send(records: readonly DeadLetterRecord[]): Promise<void>
  close(): Promise<void>
}
