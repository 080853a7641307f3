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
 *
 * With `verify` (a replay after a crash, or a retry after a failed attempt)
 * the store also checks that each table holds the batch's rows after the
 * write, and writes again what a store's own deduplication dropped although
 * it never landed; it reports both what it wrote again and what it could not
 * account for.
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

/** A table whose rows of the batch were found missing after a verified write. */
export interface MissingRows {
  table: string
  /** Rows the batch should have left there. */
  expected: number
  /** Rows found before anything was written again. */
  found: number
  /**
   * True when the rows were written again and are there now; false when they could not be restored (then `found` is
   * what is there).
   */
  restored: boolean
}

export interface WriteResult {
  refused: RefusedRow[]
  /** Only with `verify`: tables that lacked the batch's rows after the write. Empty in the ordinary case. */
  missing: MissingRows[]
}

export interface WriteOptions {
  /** Check that every table holds the batch's rows, and write again what is missing (see the file comment). */
  verify?: boolean
}

export interface WindowStore {
  write(batch: FlushBatch, opts?: WriteOptions): Promise<WriteResult>
}
