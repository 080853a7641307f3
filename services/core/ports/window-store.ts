/**
 * The port the processor writes through. write() is idempotent per
 * batch.token; unreachable stores throw retryable errors; rows the store
 * refuses are isolated deterministically and returned for dead-lettering;
 * with `verify` it checks the rows landed and writes missing ones again. The
 * protocol: docs/design/exactly-once.md.
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
