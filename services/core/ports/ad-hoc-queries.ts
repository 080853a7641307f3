/**
 * Ad hoc SQL from users (the API's POST /api/v1/query, `benchstream sql`,
 * Grafana through the API): read-only, bounded, and never in the way of
 * ingestion. services/adapters/clickhouse/sql-guard.ts implements it on a
 * read-only connection of its own with limits the engine enforces.
 */

/** Caps of one query's result; what goes beyond is cut and reported as truncated. */
export interface AdHocLimits {
  maxRows: number
  maxBytes: number
}

export interface AdHocOptions extends Partial<AdHocLimits> {
  /** Output format when the query has no FORMAT clause of its own (text); rows when unset. */
  format?: string
  /**
   * Allows ClickHouse's binary Native format (by `format` or a FORMAT clause),
   * framed for this client protocol revision (the `client_protocol_version`
   * of ClickHouse's HTTP interface; 0 = none). Unset: Native is refused.
   */
  nativeRevision?: number
}

export interface AdHocResult {
  /** Rows as objects, unless the query asked for a FORMAT. */
  rows: Array<Record<string, unknown>> | undefined
  /** The result in the query's own FORMAT (TSV, CSV, PrettyCompact, ...). */
  text: string | undefined
  /** The result in the Native format, when it was asked for and allowed (nativeRevision). */
  data?: Uint8Array
  /** JSONEachRow for rows, else the FORMAT the query named. */
  format: string
  /** Rows returned (for rows and Native); for a text FORMAT result, -1 (not counted). */
  rowCount: number
  /** Bytes of the result returned. */
  bytes: number
  /** True when the result was cut at a limit: the limit says which. */
  truncated: boolean
  limits: AdHocLimits
  elapsedMs: number
}

export interface AdHocQueries {
  /**
   * Checks and runs one read-only statement. Refusals are BS_ERR_QUERY_REFUSED
   * (what is not allowed and what is), engine errors BS_ERR_QUERY_FAILED,
   * too many queries at once BS_ERR_BUSY.
   */
  run(sql: string, opts?: AdHocOptions): Promise<AdHocResult>
  close(): Promise<void>
}
