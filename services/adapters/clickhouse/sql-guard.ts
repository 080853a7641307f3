/**
 * Ad hoc SQL that cannot hurt anyone (services/core/ports/ad-hoc-queries.ts).
 *
 * Enforced by the engine where it can be, checked with the engine's own
 * parser where it cannot, never by regexes over SQL text:
 *
 *  1. Its own connections, opened with `readonly=1` and the limits as
 *     connection settings (chDB: connectionArgs of a Session; a server:
 *     settings of a dedicated client). Under readonly=1 ClickHouse refuses
 *     INSERT in every form, DDL, SET, a SETTINGS clause that changes a value,
 *     and every table function that reaches files, URLs or other servers;
 *     max_execution_time, max_memory_usage, rows to read are enforced by it.
 *     Separate connections also keep user queries from queueing in front of
 *     the processor's inserts: chDB serialises queries per connection only.
 *  2. What readonly=1 still lets through (measured on chDB 3.4 / ClickHouse
 *     26.7: SELECT ... INTO OUTFILE, the scalar file(), DESCRIBE of url()/
 *     file(), KILL QUERY, global SYSTEM STOP ..., USE, other databases,
 *     system tables, merge()/view()/mergeTreeIndex()) is refused by a check
 *     built on ClickHouse's parser: formatQuerySingleLine (one statement, the
 *     user's text passed as a bound parameter), EXPLAIN AST (a single SELECT;
 *     functions and tables named) and EXPLAIN QUERY TREE (every table resolved,
 *     also through IN, CTEs and unqualified names, inside the benchstream
 *     database).
 *  3. Results are streamed from the engine to the caller block by block,
 *     never held whole (a connection pulls the next block only when the
 *     caller took the last). There is no default result cap: a result is cut
 *     only where the caller asked (AdHocOptions.cut), and a result limit
 *     (API_MAX_QUERY_ROWS, API_QUERY_MAX_BYTES, max_result_rows) fails the
 *     query when passed (BS_ERR_RESULT_LIMIT), as ClickHouse's
 *     result_overflow_mode = 'throw' does. Rows and bytes are counted in JS
 *     (result-shape.ts; the engine's max_result_bytes does not count constant
 *     columns), and the query is cancelled for real when cut, failed, too
 *     slow or abandoned by the caller.
 *
 * Findings behind each rule: /work/notes/chdb-guard.md; the attack corpus is
 * test/integration/sql-guard.test.ts.
 */
import { Session } from 'chdb'
import { createClient, type ClickHouseClient } from '@clickhouse/client'
import { ExceptionScanner } from '../../core/codec/exception-block.js'
import { BenchstreamError } from '../../core/errors.js'
import type { AdHocOptions, AdHocQueries, AdHocStream, ResultLimits } from '../../core/ports/ad-hoc-queries.js'
import type { ClickHouseConfig } from '../../common/infra-config.js'
import { QUIET } from './client.js'
import { ARROW_FORMATS, ARROW_SOURCE, ArrowShape, type ArrowFormat } from './arrow-ipc.js'
import { NativeFormatError, NativeReframer } from './native-format.js'
import type { EngineChunk, ResultShape, ShapeCaps } from './result-shape.js'
import { ROW_BINARY_FORMATS, ROW_BINARY_SOURCE, RowBinaryShape, type RowBinaryFormat } from './row-binary.js'
import { PEOPLE_FORMATS, textShape } from './text-formats.js'

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

export interface GuardOptions {
  database: string
  limits: GuardLimits
  /** Queries that run at once (one connection each). */
  concurrency: number
  /** Queries that may wait for a connection; beyond this, BS_ERR_BUSY at once. */
  queue: number
  /** Longest wait for a connection before BS_ERR_BUSY. */
  queueTimeoutMs: number
}

/** Table functions a user query may call: they read nothing but what they generate. */
const ALLOWED_TABLE_FUNCTIONS = new Set([
  'numbers',
  'numbers_mt',
  'generate_series',
  'generateseries',
  'values',
  'null',
  'one',
])
/** Scalar functions that reach outside the query's tables (readonly=1 does not stop them). */
const DENIED_FUNCTIONS = /^(file|dict\w*|joinget\w*|hascolumnintable|getserversetting|getmacro|filesystem\w*)$/i
/** Output formats a query may name in a FORMAT clause (text formats only). */
export const ALLOWED_FORMATS = [
  'TabSeparated',
  'TSV',
  'TabSeparatedWithNames',
  'TSVWithNames',
  'TabSeparatedWithNamesAndTypes',
  'TSVWithNamesAndTypes',
  'TabSeparatedRaw',
  'TSVRaw',
  'CSV',
  'CSVWithNames',
  'JSON',
  'JSONCompact',
  'JSONEachRow',
  'JSONCompactEachRow',
  'JSONCompactEachRowWithNames',
  'JSONCompactEachRowWithNamesAndTypes',
  'JSONStringsEachRow',
  'JSONCompactStringsEachRow',
  'JSONCompactStringsEachRowWithNames',
  'JSONCompactStringsEachRowWithNamesAndTypes',
  'JSONLines',
  'NDJSON',
  'JSONStrings',
  'JSONCompactStrings',
  'Pretty',
  'PrettyCompact',
  'PrettyCompactMonoBlock',
  'PrettySpace',
  'PrettyNoEscapes',
  'PrettyCompactNoEscapes',
  'Markdown',
  'Vertical',
  'Values',
  'XML',
] as const
/**
 * The binary formats a caller may allow (AdHocOptions.nativeRevision): ClickHouse's Native, re-framed by
 * native-format.ts; RowBinary (row-binary.ts) and Arrow (arrow-ipc.ts), cut at whole rows or batches.
 */
const NATIVE = 'Native'
export const BINARY_FORMATS = [NATIVE, ...ROW_BINARY_FORMATS, ...ARROW_FORMATS] as const
/**
 * System tables a query may name, answered from views of the same name in the `<database>_meta` database
 * (schemas/clickhouse/0013-query-tools.sql): system.tables, columns and databases of our database only, a curated
 * read-only system.settings, and the engine's lists of functions and types. What the JDBC driver's DatabaseMetaData,
 * clickhouse-connect's set-up and DBeaver's navigator read.
 */
export const MIRRORED_SYSTEM_TABLES = [
  'tables',
  'columns',
  'databases',
  'settings',
  'functions',
  'data_type_families',
  'table_engines',
  'formats',
] as const
/** The database of the mirrored system tables. */
export function metaDatabase(database: string): string {
  return `${database}_meta`
}
/** Engine errors whose message names only the user's own text (safe to return); others are returned by name only. */
const MESSAGE_SAFE_CODES = new Set([
  47, 46, 62, 60, 81, 43, 42, 53, 386, 35, 36, 184, 215, 159, 158, 307, 241, 396, 160, 164, 168, 167,
])
/** ClickHouse's READONLY error code. */
const READONLY = 164
/** Rows per block: the unit of streaming (and of what a connection holds at once). */
const BLOCK_ROWS = 1000
/** Longest text of a query, bytes (max_query_size). */
const MAX_QUERY_BYTES = 256 * 1024
/**
 * Bytes of a result gathered before the caller answers anything: a query that fails within them (a limit passed in
 * the first blocks, an engine error) is answered with an error status. ClickHouse's HTTP server holds its first
 * buffer (1 MiB) the same way.
 */
const HEAD_BYTES = 1 << 20

/** A read-only connection the guard checks and runs on. */
interface GuardConnection {
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
class ChdbGuardConnection implements GuardConnection {
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
class HttpGuardConnection implements GuardConnection {
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

/** Opens the guard: on chDB's data directory, or on a ClickHouse server. */
export async function openSqlGuard(cfg: ClickHouseConfig, opts: GuardOptions): Promise<SqlGuard> {
  const conns: GuardConnection[] = []
  try {
    const url = cfg.url
    for (let i = 0; i < opts.concurrency; i++)
      conns.push(
        url === undefined
          ? await ChdbGuardConnection.open(cfg.embeddedPath, opts.database, opts.limits)
          : HttpGuardConnection.open({ ...cfg, url }, opts.limits),
      )
  } catch (err) {
    for (const c of conns) await c.close()
    throw err
  }
  return new SqlGuard(conns, opts)
}

export class SqlGuard implements AdHocQueries {
  private readonly idle: GuardConnection[]
  private readonly waiting: Array<(c: GuardConnection | undefined) => void> = []
  /** Queries refused by the check, by rule (metrics, tests). */
  readonly refusedByRule: Record<string, number> = {}

  constructor(
    private readonly conns: GuardConnection[],
    private readonly opts: GuardOptions,
  ) {
    this.idle = [...conns]
  }

  async stream(sql: string, opts: AdHocOptions = {}): Promise<AdHocStream> {
    const t0 = performance.now()
    if (Buffer.byteLength(sql) > MAX_QUERY_BYTES)
      throw refused('size', `the query is ${Buffer.byteLength(sql)} bytes; at most ${MAX_QUERY_BYTES} are allowed`)
    const conn = await this.acquire()
    let released = false
    const release = (): void => {
      if (released) return
      released = true
      this.release(conn)
    }
    try {
      const { query, format: clause } = await this.check(conn, sql)
      const binary = opts.nativeRevision !== undefined
      const format = clause ?? this.allowedFormat(opts.format, binary) ?? 'JSONEachRow'
      if ((BINARY_FORMATS as readonly string[]).includes(format) && !binary)
        throw this.refuse(
          'format',
          `FORMAT ${format} is binary and not allowed here; allowed formats are ${ALLOWED_FORMATS.join(', ')}`,
        )
      const limits = this.limitsOf(opts)
      const people = (PEOPLE_FORMATS as readonly string[]).includes(format)
      // The formats for people cannot be cut inside a block here: the engine cuts them (LIMIT around the query).
      const caps: ShapeCaps = {
        maxRows: Math.min(people ? Infinity : (limits.cut.rows ?? Infinity), limits.fail.rows ?? Infinity),
        maxBytes: Math.min(limits.cut.bytes ?? Infinity, limits.fail.bytes ?? Infinity),
      }
      const elapsedMs = (): number => performance.now() - t0
      const plan = this.shapeFor(format, opts.nativeRevision ?? 0, caps, conn.wholeChunks, elapsedMs)
      const run = people && limits.cut.rows !== undefined ? `SELECT * FROM (${query}) LIMIT ${limits.cut.rows}` : query
      // A server counts the rows of the formats for people itself (chDB says how many each block holds).
      const settings =
        people && !conn.wholeChunks && limits.fail.rows !== undefined
          ? { max_result_rows: limits.fail.rows, result_overflow_mode: 'throw' }
          : undefined
      const stream = new GuardStream({
        conn,
        sql: run,
        source: plan.source,
        ...(settings === undefined ? {} : { settings }),
        format,
        shape: plan.shape,
        limits,
        people,
        timeoutS: this.opts.limits.timeoutS,
        elapsedMs,
        release,
      })
      await stream.start()
      return stream
    } catch (err) {
      release()
      throw err
    }
  }

  /** The cut the caller asked for, and the limits that fail the result: the caller's and the server's, with names. */
  private limitsOf(opts: AdHocOptions): Limits {
    const server = this.opts.limits
    // The smaller of the request's and the server's (0: none), and whose it is.
    const pick = (mine: number | undefined, theirs: number): [number | undefined, 'server' | 'request'] =>
      theirs > 0 && (mine === undefined || theirs <= mine) ? [theirs, 'server'] : [mine, 'request']
    const [rows, rowsBy] = pick(opts.fail?.rows, server.maxRows)
    const [bytes, bytesBy] = pick(opts.fail?.bytes, server.maxBytes)
    return {
      cut: {
        ...(opts.cut?.rows === undefined ? {} : { rows: opts.cut.rows }),
        ...(opts.cut?.bytes === undefined ? {} : { bytes: opts.cut.bytes }),
      },
      fail: { ...(rows === undefined ? {} : { rows }), ...(bytes === undefined ? {} : { bytes }) },
      failBy: { rows: rowsBy, bytes: bytesBy },
    }
  }

  /** What the engine is asked for, and the shape that turns its output into the asked format. */
  private shapeFor(
    format: string,
    revision: number,
    caps: ShapeCaps,
    whole: boolean,
    elapsedMs: () => number,
  ): { source: string; shape: ResultShape } {
    if (format === NATIVE) return { source: NATIVE, shape: new NativeReframer(revision, caps, whole) }
    if ((ROW_BINARY_FORMATS as readonly string[]).includes(format))
      return { source: ROW_BINARY_SOURCE, shape: new RowBinaryShape(format as RowBinaryFormat, caps, whole) }
    if ((ARROW_FORMATS as readonly string[]).includes(format))
      return { source: ARROW_SOURCE, shape: new ArrowShape(format as ArrowFormat, caps) }
    return textShape(format, caps, whole, elapsedMs)
  }

  /**
   * Refuses anything but one SELECT over the benchstream database; returns the statement to run and its output format.
   */
  private async check(conn: GuardConnection, sql: string): Promise<{ query: string; format: string | undefined }> {
    let canonical: string
    try {
      // The user's text is a bound parameter: it is parsed, never executed here.
      canonical = (await conn.text('SELECT formatQuerySingleLine({q:String})', { q: sql })).replace(/\n$/, '')
    } catch (err) {
      throw failed(err, true)
    }
    let query = canonical
    let format: string | undefined
    // The canonical text quotes a format whose name is a keyword: FORMAT `Values`.
    const f = /\sFORMAT\s+`?([A-Za-z][A-Za-z0-9_]*)`?$/.exec(canonical)
    if (f !== null) {
      format = [...ALLOWED_FORMATS, ...BINARY_FORMATS].find((x) => x.toLowerCase() === f[1]!.toLowerCase())
      if (format === undefined)
        throw this.refuse('format', `FORMAT ${f[1]} is not allowed; allowed formats are ${ALLOWED_FORMATS.join(', ')}`)
      query = canonical.slice(0, f.index)
    }
    const shown = this.introspection(query)
    if (shown !== undefined) return { query: shown, format }
    query = this.mirrorSystemTables(query)
    // EXPLAIN AST parses only; it runs nothing (not even url() schema inference).
    const ast = (await this.explain(conn, 'AST', query)).split('\n')
    if (ast[0] !== 'SelectWithUnionQuery (children 1)') {
      const what = ast[0]?.replace(/\s*\(children \d+\)$/, '').trim() ?? 'nothing'
      throw this.refuse(
        'select-only',
        what === 'SelectWithUnionQuery'
          ? 'INTO OUTFILE is not allowed: results come back in the response'
          : `only one SELECT (or WITH ... SELECT), SHOW TABLES, DESCRIBE, SHOW CREATE TABLE or EXISTS over ` +
              `the ${this.opts.database} database is allowed; this is a ${what}`,
      )
    }
    const deniedTableFunctions = await this.readonlyTableFunctions(conn)
    for (const line of ast) {
      for (const m of line.matchAll(/\bFunction (\S+)/g)) {
        const name = m[1]!
        if (DENIED_FUNCTIONS.test(name) || deniedTableFunctions.has(name.toLowerCase()))
          throw this.refuse(
            'function',
            `function ${name} is not allowed in ad hoc queries (it reaches outside Benchstream's tables)`,
          )
      }
      for (const m of line.matchAll(/\bTableIdentifier (\S+)/g)) this.checkTable(m[1]!)
    }
    // EXPLAIN QUERY TREE resolves every table: IN other.t, CTEs, unqualified names.
    const tree = await this.explain(conn, 'QUERY TREE', query)
    for (const m of tree.matchAll(/\btable_name: ([^,\s]+)/g)) this.checkTable(m[1]!)
    for (const m of tree.matchAll(/\btable_function_name: ([^,\s]+)/g)) {
      if (!ALLOWED_TABLE_FUNCTIONS.has(m[1]!.toLowerCase()))
        throw this.refuse(
          'function',
          `table function ${m[1]} is not allowed; allowed are ${[...ALLOWED_TABLE_FUNCTIONS].join(', ')}`,
        )
    }
    for (const m of tree.matchAll(/\bfunction_name: ([^,\s]+)/g)) {
      if (DENIED_FUNCTIONS.test(m[1]!))
        throw this.refuse('function', `function ${m[1]} is not allowed in ad hoc queries`)
    }
    return { query, format }
  }

  /**
   * What clickhouse-client users type first (SHOW TABLES, DESCRIBE t, SHOW
   * CREATE TABLE t, EXISTS t) as the equivalent SELECT over system.tables and
   * system.columns, limited to our database. The statement is the parser's
   * canonical form, matched whole; a table name is a plain identifier and a
   * LIKE pattern one complete string literal, so nothing else can ride along.
   */
  private introspection(canonical: string): string | undefined {
    const db = this.opts.database
    const lit = (s: string): string => `'${s.replace(/\\/g, '\\\\').replace(/'/g, "\\'")}'`
    const inDb = (name: string | undefined): void => {
      if (name !== undefined && name !== db)
        throw this.refuse(
          'database',
          `database ${name} is not readable here; ad hoc queries read Benchstream's tables only (${db}.*)`,
        )
    }
    const show = /^SHOW TABLES(?: FROM (\w+))?(?: (NOT )?(I?LIKE) ('(?:[^'\\]|\\.)*'))?$/.exec(canonical)
    if (show !== null) {
      inDb(show[1])
      const like = show[4] === undefined ? '' : ` AND name ${show[2] ?? ''}${show[3]} ${show[4]}`
      return `SELECT name FROM system.tables WHERE database = ${lit(db)}${like} ORDER BY name`
    }
    const one = /^(DESCRIBE TABLE|SHOW CREATE TABLE|EXISTS TABLE) (?:(\w+)\.)?(\w+)$/.exec(canonical)
    if (one === null) return undefined
    inDb(one[2])
    const where = `database = ${lit(db)} AND ${one[1] === 'DESCRIBE TABLE' ? 'table' : 'name'} = ${lit(one[3]!)}`
    if (one[1] === 'DESCRIBE TABLE')
      return (
        `SELECT name, type, default_kind AS default_type, default_expression, comment, compression_codec ` +
        `AS codec_expression FROM system.columns WHERE ${where} ORDER BY position`
      )
    if (one[1] === 'EXISTS TABLE') return `SELECT toUInt8(count() > 0) AS result FROM system.tables WHERE ${where}`
    return `SELECT create_table_query AS statement FROM system.tables WHERE ${where}`
  }

  private allowedFormat(name: string | undefined, native: boolean): string | undefined {
    if (name === undefined) return undefined
    const format = [...ALLOWED_FORMATS, ...(native ? BINARY_FORMATS : [])].find(
      (x) => x.toLowerCase() === name.toLowerCase(),
    )
    if (format === undefined)
      throw this.refuse('format', `format ${name} is not allowed; allowed formats are ${ALLOWED_FORMATS.join(', ')}`)
    return format
  }

  /**
   * Names of the mirrored system tables (system.tables, system.settings, ...) made to name their views in the meta
   * database, on the parser's canonical text, where a table is written `system.name` (quotes only where needed).
   * Not a check: the rewritten query is checked as any other, so a rewrite in the wrong place (inside a string, say)
   * can only change what the user's own query reads, never let more through.
   */
  private mirrorSystemTables(canonical: string): string {
    const meta = metaDatabase(this.opts.database)
    const names = MIRRORED_SYSTEM_TABLES.join('|')
    return canonical.replace(new RegExp(`(?<![\\w.\`])system\\.(${names})(?![\\w\`])`, 'g'), `${meta}.$1`)
  }

  private checkTable(name: string): void {
    const db = this.opts.database
    const [first, second] = name.split('.')
    if (second === undefined) return // unqualified: resolved in the tree, inside the database
    if (first === metaDatabase(db) && (MIRRORED_SYSTEM_TABLES as readonly string[]).includes(second)) return
    if (first !== db && name !== 'system.one')
      throw this.refuse(
        'database',
        `table ${name} is outside the ${db} database; ad hoc queries read Benchstream's tables only (${db}.*)`,
      )
  }

  private tableFunctions: Set<string> | undefined

  /** Table functions the engine allows under readonly=1, less our allow-list: refused by name. */
  private async readonlyTableFunctions(conn: GuardConnection): Promise<Set<string>> {
    if (this.tableFunctions === undefined) {
      const names = (await conn.text('SELECT name FROM system.table_functions WHERE allow_readonly')).trim().split('\n')
      this.tableFunctions = new Set(
        names.map((n) => n.toLowerCase()).filter((n) => n !== '' && !ALLOWED_TABLE_FUNCTIONS.has(n)),
      )
    }
    return this.tableFunctions
  }

  private async explain(conn: GuardConnection, kind: 'AST' | 'QUERY TREE', query: string): Promise<string> {
    try {
      return await conn.text(`EXPLAIN ${kind} ${query}`)
    } catch (err) {
      throw failed(err, false)
    }
  }

  private refuse(rule: string, message: string): BenchstreamError {
    this.refusedByRule[rule] = (this.refusedByRule[rule] ?? 0) + 1
    return refused(rule, message)
  }

  private async acquire(): Promise<GuardConnection> {
    const c = this.idle.pop()
    if (c !== undefined) return c
    if (this.waiting.length >= this.opts.queue) throw busy(this.opts)
    return new Promise<GuardConnection>((resolve, reject) => {
      const timer = setTimeout(() => {
        const i = this.waiting.indexOf(take)
        if (i >= 0) this.waiting.splice(i, 1)
        reject(busy(this.opts))
      }, this.opts.queueTimeoutMs)
      const take = (conn: GuardConnection | undefined): void => {
        clearTimeout(timer)
        if (conn === undefined) reject(new BenchstreamError('BS_ERR_BUSY', 'the server is shutting down'))
        else resolve(conn)
      }
      this.waiting.push(take)
    })
  }

  private release(c: GuardConnection): void {
    const next = this.waiting.shift()
    if (next !== undefined) next(c)
    else this.idle.push(c)
  }

  async close(): Promise<void> {
    for (const w of this.waiting.splice(0)) w(undefined)
    await Promise.allSettled(this.conns.map((c) => c.close()))
  }
}

interface Limits {
  cut: ResultLimits
  fail: ResultLimits
  /** Whose limit each fail limit is: the server's (API_MAX_QUERY_ROWS, API_QUERY_MAX_BYTES) or the request's. */
  failBy: { rows: 'server' | 'request'; bytes: 'server' | 'request' }
}

interface GuardStreamOptions {
  conn: GuardConnection
  sql: string
  /** The format the engine is asked for. */
  source: string
  settings?: Record<string, string | number>
  /** The format the caller gets. */
  format: string
  shape: ResultShape
  limits: Limits
  /** A format for people: cut by a LIMIT around the query, not by the shape. */
  people: boolean
  timeoutS: number
  elapsedMs: () => number
  /** Gives the connection back (idempotent). */
  release: () => void
}

/**
 * One running query's result (AdHocStream): the engine's chunks through the
 * shape, one at a time. The connection is given back when the result ends,
 * fails, is cut, is cancelled or runs out of time, whichever comes first; a
 * time-out while the caller is not reading fails the stream at its next read.
 */
class GuardStream implements AdHocStream {
  private readonly ac = new AbortController()
  private readonly gen: AsyncGenerator<Buffer, void, undefined>
  /** The first bytes, gathered by start(). */
  private head: Buffer[] = []
  private iterated = false
  private timedOut = false
  private cancelled = false
  private error: Error | undefined
  private readonly timer: NodeJS.Timeout
  truncated = false

  constructor(private readonly o: GuardStreamOptions) {
    this.gen = this.produce()
    // The engine stops a query at max_execution_time while it computes; this also ends one whose caller stopped
    // reading.
    this.timer = setTimeout(() => this.timeOut(), (o.timeoutS + 2) * 1000)
    this.timer.unref?.()
  }

  get format(): string {
    return this.o.format
  }
  get rows(): number {
    return this.o.shape.rows
  }
  get bytes(): number {
    return this.o.shape.bytes
  }
  get limits(): { cut: ResultLimits; fail: ResultLimits } {
    return { cut: this.o.limits.cut, fail: this.o.limits.fail }
  }
  get elapsedMs(): number {
    return this.o.elapsedMs()
  }
  get stopped(): AbortSignal {
    return this.ac.signal
  }

  /** Runs the query to its first HEAD_BYTES (or its end): a failure within them is thrown here. */
  async start(): Promise<void> {
    let size = 0
    while (size < HEAD_BYTES) {
      const r = await this.gen.next()
      if (r.done === true) {
        this.ended = true
        break
      }
      this.head.push(r.value)
      size += r.value.length
    }
  }

  private ended = false

  get complete(): boolean {
    return this.ended
  }

  async *[Symbol.asyncIterator](): AsyncIterator<Uint8Array> {
    if (this.iterated) throw new Error('an ad hoc result can be read once')
    this.iterated = true
    try {
      const head = this.head
      this.head = []
      for (const piece of head) yield piece
      if (this.ended && this.error === undefined) return
      for (;;) {
        const r = await this.gen.next()
        if (r.done === true) break
        yield r.value
      }
      // The generator was ended from outside (a time-out while nobody read): the failure it recorded.
      if (this.error !== undefined) throw this.error
    } finally {
      await this.gen.return(undefined)
    }
  }

  cancel(): void {
    if (this.cancelled) return
    this.cancelled = true
    this.ac.abort()
    void this.gen.return(undefined).catch(() => undefined)
  }

  private timeOut(): void {
    this.timedOut = true
    this.ac.abort()
    // Suspended at a yield (the caller is not reading): end it now, so the connection is free; the failure is kept.
    void this.gen.throw(this.timeoutError()).catch(() => undefined)
  }

  private timeoutError(): BenchstreamError {
    return new BenchstreamError(
      'BS_ERR_QUERY_FAILED',
      `the query ran longer than ${this.o.timeoutS} s and was cancelled: API_QUERY_TIMEOUT_S, the time a result ` +
        `takes to reach the client included`,
    )
  }

  private async *produce(): AsyncGenerator<Buffer, void, undefined> {
    const { shape, limits } = this.o
    try {
      for await (const chunk of this.o.conn.stream(this.o.sql, this.o.source, this.ac.signal, this.o.settings)) {
        const out = shape.push(chunk)
        const why = shape.stoppedBy
        // A limit passed fails the result before this chunk's rows go out (so that within the first MiB, the
        // answer is an error status); a cut sends them and ends there.
        if (why !== undefined) {
          const fail = limits.fail[why]
          // The stop is the cut the caller asked for, unless a fail limit came first (or at the same place).
          const cut = why === 'rows' && this.o.people ? Infinity : (limits.cut[why] ?? Infinity)
          if (fail !== undefined && fail <= cut) throw this.limitError(why)
        }
        if (out.length > 0) yield out.length === 1 ? out[0]! : Buffer.concat(out)
        if (why !== undefined) {
          this.truncated = true
          // Leaving the loop cancels the query.
          break
        }
      }
      const tail = shape.end()
      if (tail.length > 0) yield tail.length === 1 ? tail[0]! : Buffer.concat(tail)
      // The formats for people were cut by a LIMIT: a result that reached it was cut there.
      if (this.o.people && limits.cut.rows !== undefined && shape.rows === limits.cut.rows) this.truncated = true
    } catch (err) {
      if (this.cancelled && !this.timedOut) return
      this.error = this.failure(err)
      throw this.error
    } finally {
      clearTimeout(this.timer)
      this.o.release()
    }
  }

  private failure(err: unknown): Error {
    if (this.timedOut) return this.timeoutError()
    if (err instanceof BenchstreamError) return err
    if (err instanceof NativeFormatError)
      return new BenchstreamError('BS_ERR_QUERY_FAILED', `query failed: ${err.message}`, { cause: err })
    return failed(err, false)
  }

  private limitError(why: 'rows' | 'bytes'): BenchstreamError {
    const { fail, failBy } = this.o.limits
    const max = fail[why]!
    // No parenthesised upper-case names: ClickHouse's clients take the first such as the error's name.
    const whose =
      failBy[why] === 'server'
        ? `the server's limit for ad hoc results, ${why === 'rows' ? 'API_MAX_QUERY_ROWS' : 'API_QUERY_MAX_BYTES'}`
        : `the limit this request set, ${why === 'rows' ? 'max_result_rows' : 'max_result_bytes'}`
    return new BenchstreamError(
      'BS_ERR_RESULT_LIMIT',
      `Limit for result exceeded, max ${why}: ${max}: the result holds more ${why} than ${whose}, and was not ` +
        `sent whole; narrow the query with WHERE or LIMIT, or ask for a cut: result_overflow_mode=break, ` +
        `maxRows, --max-rows`,
    )
  }
}

function refused(rule: string, message: string): BenchstreamError {
  return new BenchstreamError('BS_ERR_QUERY_REFUSED', `${message} (rule: ${rule})`)
}

function busy(opts: GuardOptions): BenchstreamError {
  return new BenchstreamError(
    'BS_ERR_BUSY',
    `${opts.concurrency} ad hoc quer${opts.concurrency === 1 ? 'y runs' : 'ies run'} and ${opts.queue} ` +
      `wait already; try again in a moment`,
  )
}

/**
 * An engine error as BS_ERR_QUERY_FAILED. The message is returned only for
 * codes whose text names the user's own query (syntax, unknown names,
 * limits); otherwise only the error's name, since a message can carry data
 * the query computed (throwIf with a subquery, for one).
 */
function failed(err: unknown, parsing: boolean): BenchstreamError {
  const e = err as { message?: unknown; code?: unknown; clickhouseCode?: unknown; type?: unknown }
  const message = typeof e.message === 'string' ? e.message : String(err)
  const code =
    typeof e.clickhouseCode === 'number'
      ? e.clickhouseCode
      : typeof e.code === 'string' && /^\d+$/.test(e.code)
        ? Number(e.code)
        : Number(/\bCode: (\d+)\b/.exec(message)?.[1] ?? NaN)
  const name =
    typeof e.type === 'string'
      ? e.type
      : (/\(([A-Z_]{3,})\)\s*$/m.exec(message)?.[1] ?? (Number.isNaN(code) ? 'ERROR' : `code ${code}`))
  const clean = message
    .replace(/^Code: \d+\. DB::Exception: /, '')
    .replace(/ In scope SELECT formatQuerySingleLine[\s\S]*$/, '')
    .replace(/\s+/g, ' ')
    .trim()
  // READONLY: the engine itself refused a write, a setting change or a table function.
  if (code === READONLY)
    return new BenchstreamError(
      'BS_ERR_QUERY_REFUSED',
      `not allowed: ad hoc queries are read-only and may not change settings or reach files, URLs ` +
        `or other servers (ClickHouse: ${clean.slice(0, 300)})`,
      { cause: err },
    )
  const safe = parsing || MESSAGE_SAFE_CODES.has(code)
  return new BenchstreamError(
    'BS_ERR_QUERY_FAILED',
    safe
      ? `query failed: ${clean.slice(0, 1000)}`
      : `query failed with ${name} (the engine's message is not shown: it may carry data the query read)`,
    { cause: err },
  )
}
