/**
 * Ad hoc SQL from users (the API's POST /api/v1/query and /clickhouse,
 * `benchstream sql` and `export`): read-only, bounded by time, memory, rows
 * and bytes read and queries at once, and never in the way of ingestion.
 * services/adapters/clickhouse/sql-guard.ts implements it on read-only
 * connections of its own with limits the engine enforces.
 *
 * A result is streamed from the engine to the caller chunk by chunk: nobody
 * holds a whole result, so results have no default size cap. A result is cut
 * only where the caller asked for it (`cut`); every limit it passes fails it
 * (`fail` and the server's own), the way ClickHouse's
 * result_overflow_mode = 'throw' does.
 */

/** Rows and bytes of a result (bytes: as sent, in the asked format). Unset: none. */
export interface ResultLimits {
  rows?: number
  bytes?: number
}

export interface AdHocOptions {
  /** Output format when the query has no FORMAT clause of its own; JSONEachRow (rows) when unset. */
  format?: string
  /**
   * Allows ClickHouse's binary formats (Native, RowBinary, Arrow; by `format`
   * or a FORMAT clause), Native framed for this client protocol revision (the
   * `client_protocol_version` of ClickHouse's HTTP interface; 0 = none).
   * Unset: binary formats are refused.
   */
  nativeRevision?: number
  /**
   * Where the caller asked the result to stop (a LIMIT-like cut: `limit=`,
   * `max_result_rows` with result_overflow_mode=break, maxRows, --max-rows):
   * the stream stops there and says `truncated`.
   */
  cut?: ResultLimits
  /** Limits the caller set that fail the query once passed (max_result_rows with result_overflow_mode=throw). */
  fail?: ResultLimits
}

/**
 * One running query's result, in `format`, chunk by chunk. Iterate it once:
 * stopping early (break, return) cancels the query. A failure part-way
 * (the engine's limits, a time-out, a result limit) is thrown by the
 * iteration as BS_ERR_QUERY_FAILED or BS_ERR_RESULT_LIMIT.
 */
export interface AdHocStream extends AsyncIterable<Uint8Array> {
  /** The format the chunks are in (the FORMAT clause, the asked format, or JSONEachRow). */
  readonly format: string
  /** Rows sent so far; -1 for formats whose rows are not counted (Pretty, XML, ... from a ClickHouse server). */
  readonly rows: number
  /** Bytes sent so far. */
  readonly bytes: number
  /**
   * True when the whole result is already in hand (it came before the first
   * bytes were handed over): `rows`, `bytes` and `truncated` are final.
   */
  readonly complete: boolean
  /** True once the result was cut where the caller asked (`cut`); rows beyond it were not sent. */
  readonly truncated: boolean
  /** The limits the result runs under: the cut asked for and the limits that fail it. */
  readonly limits: { cut: ResultLimits; fail: ResultLimits }
  /** Milliseconds since the query was received. */
  readonly elapsedMs: number
  /** Aborted when the query stopped on its own before the caller read it all (a time-out), or was cancelled. */
  readonly stopped: AbortSignal
  /** Stops the query and frees its connection (the client went away); the iteration ends quietly. */
  cancel(): void
}

export interface AdHocQueries {
  /**
   * Checks one read-only statement and starts it, resolving once its first
   * bytes are ready: refusals (BS_ERR_QUERY_REFUSED: what is not allowed and
   * what is), engine errors before any byte (BS_ERR_QUERY_FAILED), limits
   * passed in the first block (BS_ERR_RESULT_LIMIT) and too many queries at
   * once (BS_ERR_BUSY) reject here, before the caller answers anything.
   */
  stream(sql: string, opts?: AdHocOptions): Promise<AdHocStream>
  close(): Promise<void>
}
