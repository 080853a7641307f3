/**
 * The ad hoc SQL guard's read-only connections (sql-guard.ts): chDB Sessions of their own or a dedicated server
 * client, each opened with readonly=1 and the query limits as its settings, so that the engine enforces them.
 */
import { Session } from 'chdb'
import { createClient, type ClickHouseClient } from '@clickhouse/client'
import { ExceptionScanner } from '../../core/codec/exception-block.js'
import { BenchstreamError } from '../../core/errors.js'
import type { ClickHouseConfig } from '../../common/infra-config.js'
import { QUIET } from './client.js'
import type { EngineChunk } from './result-shape.js'

/** Limits of one ad hoc query, enforced by the engine and, for the result, by us. */
export interface GuardLimits {
  /** Seconds a query may run (max_execution_time), its result's streaming included. */
  timeoutS: number
  /** Bytes of memory a query may use (max_memory_usage). */
  maxMemory: number
  /** Rows a query may read from tables (max_rows_to_read). */
  maxRowsToRead: number
  /** Bytes a query may read from tables (max_bytes_to_read). */
  maxBytesToRead: number
  /** Rows a result may hold; more fail the query (0: no limit). */
  maxRows: number
  /** Bytes a result may hold as sent; more fail the query (0: no limit). */
  maxBytes: number
}

/** Rows per block: the unit of streaming (and of what a connection holds at once). */
const BLOCK_ROWS = 1000
/** Longest text of a query, bytes (max_query_size). */
export const MAX_QUERY_BYTES = 256 * 1024

/** A read-only connection the guard checks and runs on. */
export interface GuardConnection {
  /** One statement's whole result as text (TSVRaw); `params` are bound server-side. */
  text(sql: string, params?: Record<string, string>): Promise<string>
  /**
   * A statement's result in a format, chunk by chunk, the next chunk fetched
   * only when the last was taken; cancelled when the iteration stops or the
   * signal aborts. `settings`: per-query settings (a server only).
   */
  stream(
    sql: string,
    format: string,
    signal: AbortSignal,
    settings?: Record<string, string | number>,
  ): AsyncIterable<EngineChunk>
  /**
   * True when every chunk is a block's whole result, with the format's own header and its row count (chDB formats
   * each streamed block on its own); false for one stream cut anywhere (a server's HTTP body).
   */
  readonly wholeChunks: boolean
  close(): Promise<void>
}

/** Settings every guard connection is opened with (readonly last: it freezes the others). */
function settings(limits: GuardLimits): Array<[string, string | number]> {
  return [
    ['max_execution_time', limits.timeoutS],
    ['timeout_overflow_mode', 'throw'],
    ['max_memory_usage', limits.maxMemory],
    ['max_rows_to_read', limits.maxRowsToRead],
    ['max_bytes_to_read', limits.maxBytesToRead],
    ['read_overflow_mode', 'throw'],
    ['max_block_size', BLOCK_ROWS],
    // One core at most: ingestion keeps the others.
    ['max_threads', 1],
    ['max_query_size', MAX_QUERY_BYTES],
    ['max_ast_elements', 50_000],
    ['readonly', 1],
  ]
}

/** chDB: a Session of its own on the data directory, the settings as connection arguments. */
export class ChdbGuardConnection implements GuardConnection {
  readonly wholeChunks = true
  private constructor(private readonly session: Session) {}

  static async open(path: string, database: string, limits: GuardLimits): Promise<ChdbGuardConnection> {
    const wanted = settings(limits)
    const session = new Session(path, { connectionArgs: wanted.map(([k, v]) => `--${k}=${v}`) })
    const c = new ChdbGuardConnection(session)
    // An unknown or misspelt connection argument is ignored silently: check each took effect.
    const got = JSON.parse(
      await c.text(
        `SELECT ${wanted.map(([k]) => `toString(getSetting('${k}')) AS ${k}`).join(', ')} FORMAT JSONEachRow`,
      ),
    ) as Record<string, string>
    for (const [k, v] of wanted) {
      if (got[k] !== String(v)) {
        session.close()
        throw new BenchstreamError(
          'BS_ERR_CLICKHOUSE',
          `the ad hoc query connection could not be made safe: setting ${k} is ${got[k]}, wanted ${v}`,
        )
      }
    }
    // Unqualified names resolve in Benchstream's database (USE lasts for the connection).
    await c.text(`USE ${database}`)
    return c
  }

  async text(sql: string, params?: Record<string, string>): Promise<string> {
    const r =
      params === undefined
        ? await this.session.queryAsync(sql, { format: 'TSVRaw' })
        : await this.session.queryBindAsync(sql, params, { format: 'TSVRaw' })
    return r.text()
  }

  async *stream(sql: string, format: string, signal: AbortSignal): AsyncIterable<EngineChunk> {
    const s = this.session.queryStream(sql, { format, signal })
    try {
      // raw(): the chunk's bytes, copied, since they outlive the next fetch (a socket still writing them).
      for await (const chunk of s) yield { data: Buffer.from(chunk.raw()), rows: chunk.numRows }
    } finally {
      s.cancel()
    }
  }

  async close(): Promise<void> {
    this.session.close()
  }
}

/** A ClickHouse server: a dedicated client whose every query carries the settings. */
export class HttpGuardConnection implements GuardConnection {
  readonly wholeChunks = false
  private constructor(private readonly client: ClickHouseClient) {}

  static open(cfg: ClickHouseConfig & { url: string }, limits: GuardLimits): HttpGuardConnection {
    const clickhouse_settings = Object.fromEntries(settings(limits)) as Record<string, string | number>
    return new HttpGuardConnection(
      createClient({
        url: cfg.url,
        username: cfg.user,
        password: cfg.password,
        database: cfg.database,
        request_timeout: (limits.timeoutS + 5) * 1000,
        clickhouse_settings,
        log: QUIET,
      }),
    )
  }

  /**
   * exec, not query: query() appends `FORMAT TabSeparatedRaw` to the text, and the guard's EXPLAIN AST would then
   * explain that clause as part of the user's query (a second child of SelectWithUnionQuery, refused as INTO OUTFILE:
   * every query was refused on a server). The format is the request's default instead, as chDB's Session takes it.
   */
  async text(sql: string, params?: Record<string, string>): Promise<string> {
    const { stream } = await this.client.exec({
      query: sql,
      clickhouse_settings: { default_format: 'TabSeparatedRaw' },
      ...(params === undefined ? {} : { query_params: params }),
    })
    const chunks: Buffer[] = []
    for await (const chunk of stream as AsyncIterable<Buffer>) chunks.push(chunk)
    return Buffer.concat(chunks).toString('utf8')
  }

  /**
   * The body as it comes, raw: query().stream() streams only the formats the client parses into rows, under their
   * full names (TSV, TSVRaw, Pretty, Markdown, Vertical, XML, Values were refused before a request was sent). The
   * shapes find the rows themselves (wholeChunks false).
   */
  async *stream(
    sql: string,
    format: string,
    signal: AbortSignal,
    settings?: Record<string, string | number>,
  ): AsyncIterable<EngineChunk> {
    // exec returns the raw body; without client_protocol_version the server writes Native at revision 0, like chDB.
    const { stream, response_headers } = await this.client.exec({
      query: `${sql} FORMAT ${format}`,
      abort_signal: signal,
      ...(settings === undefined ? {} : { clickhouse_settings: settings }),
    })
    // A failure after the server's status went out ends its body in the exception block: its error, not rows.
    const tag = response_headers['x-clickhouse-exception-tag']
    const scanner = new ExceptionScanner(typeof tag === 'string' ? tag : undefined)
    try {
      try {
        for await (const chunk of stream as AsyncIterable<Buffer>) {
          const data = scanner.push(chunk)
          if (data.length > 0) yield { data, rows: undefined }
        }
      } catch (err) {
        if (!scanner.failed) throw err
      }
      if (scanner.failed) throw new Error(scanner.message())
      const rest = scanner.end()
      if (rest.length > 0) yield { data: rest, rows: undefined }
    } finally {
      stream.destroy()
    }
  }

  async close(): Promise<void> {
    await this.client.close()
  }
}
