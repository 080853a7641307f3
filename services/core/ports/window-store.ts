/**
 * The port the processor writes through.
 *
 * write() must be idempotent per batch.token: writing the same batch twice
 * (a retry, or a replay after a crash) stores it once.
 *
 * Failures come in two kinds. A store that cannot be reached, times out or
 * runs out of memory throws a retryable error, and the processor retries the
 * whole batch with backoff (what was written already is dropped by the
 * token). A row the store refuses for what it holds (a value it cannot
 * parse) must not stop ingestion: the store isolates such rows, stores
 * everything else of the batch, and returns the refused rows; the processor
 * dead-letters them. Isolation must be deterministic, so a replay refuses the
 * same rows and writes the same rest.
 */
import type { FlushBatch } from '../stats/partition-state.js'

/** A row the store refused, with where it came from. */
export interface RefusedRow {
  /** The table (or kind of data) the row was meant for. */
  table: string
  /** Source offset of the message the row came from; -1 when the row has several (an aggregated window). */
  offset: number
  runId: string
  /** The store's own error message. */
  error: string
  /** The refused row, serialized (JSON or the line as written), for the dead letter. */
  payload: Buffer
}

export interface WriteResult {
  refused: RefusedRow[]
}

export interface WindowStore {
  write(batch: FlushBatch): Promise<WriteResult>
}
