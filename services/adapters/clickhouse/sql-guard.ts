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
 *  3. Results are streamed and cut at a row and a byte cap in JS (the
 *     engine's max_result_bytes does not count constant columns), and the
 *     query is cancelled for real when cut or too slow.
 *
 * Findings behind each rule: /work/notes/chdb-guard.md; the attack corpus is
 * test/integration/sql-guard.test.ts.
 */
import { Session } from 'chdb'
import { createClient, type ClickHouseClient } from '@clickhouse/client'
import { BenchstreamError } from '../../core/errors.js'
import type { AdHocLimits, AdHocOptions, AdHocQueries, AdHocResult } from '../../core/ports/ad-hoc-queries.js'
import type { ClickHouseConfig } from '../../common/infra-config.js'
import { QUIET } from './client.js'
import { ARROW_FORMATS, ARROW_SOURCE, ArrowCutter, type ArrowFormat } from './arrow-ipc.js'
import { NativeFormatError, NativeReframer } from './native-format.js'
import { ROW_BINARY_FORMATS, ROW_BINARY_SOURCE, RowBinaryCutter, type RowBinaryFormat } from './row-binary.js'
import { jsonDocument, LineCutter, textPlan } from './text-formats.js'

/** Limits of one ad hoc query, enforced by the engine and, for the result, by us. */
export interface GuardLimits extends AdHocLimits {
  /** Seconds a query may run (max_execution_time). */
  timeoutS: number
  /** Bytes of memory a query may use (max_memory_usage). */
  maxMemory: number
  /** Rows a query may read from tables (max_rows_to_read). */
  maxRowsToRead: number
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
/** Rows per block: with 1,000 the stream can be cut close to the caps. */
const BLOCK_ROWS = 1000
/** Longest text of a query, bytes (max_query_size). */
const MAX_QUERY_BYTES = 256 * 1024

/** A read-only connection the guard checks and runs on. */
interface GuardConnection {
  /** One statement's whole result as text (TSVRaw); `params` are bound server-side. */
  text(sql: string, params?: Record<string, string>): Promise<string>
  /** A statement's result in chunks of text, cancelled when the iteration stops (chDB: a block's whole result each). */
  stream(sql: string, format: string, signal: AbortSignal): AsyncIterable<string>
  /**
   * A statement's result in a binary format (Native: revision 0 framing), in chunks of bytes, cancelled when the
   * iteration stops.
   */
  binary(sql: string, format: string, signal: AbortSignal): AsyncIterable<Uint8Array>
  /**
   * True when every chunk of binary() is a block's whole result, with the format's own header (chDB formats each
   * streamed block on its own); false for one stream cut anywhere (a server's HTTP body).
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
    ['read_overflow_mode', 'throw'],
    // A backstop far above the JS caps; the stream is cut in JS first.
    ['max_result_rows', limits.maxRows * 10 + BLOCK_ROWS],
    ['result_overflow_mode', 'break'],
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

  async *stream(sql: string, format: string, signal: AbortSignal): AsyncIterable<string> {
    const s = this.session.queryStream(sql, { format, signal })
    try {
      for await (const chunk of s) yield chunk.text()
    } finally {
      s.cancel()
    }
  }

  async *binary(sql: string, format: string, signal: AbortSignal): AsyncIterable<Uint8Array> {
    // raw(): the chunk's bytes; text() would mangle binary data.
    const s = this.session.queryStream(sql, { format, signal })
    try {
      for await (const chunk of s) yield chunk.raw()
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
   * The body as it comes, decoded: query().stream() streams only the formats the client parses into rows, under their
   * full names (TSV, TSVRaw, Pretty, Markdown, Vertical, XML, Values were refused before a request was sent). Our
   * LineCutter finds the rows itself (wholeChunks false); a character split between two chunks is held back by the
   * streaming decoder.
   */
  async *stream(sql: string, format: string, signal: AbortSignal): AsyncIterable<string> {
    const decoder = new TextDecoder('utf-8')
    for await (const chunk of this.binary(sql, format, signal)) {
      const text = decoder.decode(chunk, { stream: true })
      if (text !== '') yield text
    }
    const rest = decoder.decode()
    if (rest !== '') yield rest
  }

  async *binary(sql: string, format: string, signal: AbortSignal): AsyncIterable<Uint8Array> {
    // exec returns the raw body; without client_protocol_version the server writes Native at revision 0, like chDB.
    const { stream } = await this.client.exec({ query: `${sql} FORMAT ${format}`, abort_signal: signal })
    try {
      for await (const chunk of stream as AsyncIterable<Buffer>) yield chunk
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

  async run(sql: string, limits: AdHocOptions = {}): Promise<AdHocResult> {
    const caps: AdHocLimits = {
      maxRows: Math.min(limits.maxRows ?? this.opts.limits.maxRows, this.opts.limits.maxRows),
      maxBytes: Math.min(limits.maxBytes ?? this.opts.limits.maxBytes, this.opts.limits.maxBytes),
    }
    if (Buffer.byteLength(sql) > MAX_QUERY_BYTES)
      throw refused('size', `the query is ${Buffer.byteLength(sql)} bytes; at most ${MAX_QUERY_BYTES} are allowed`)
    const conn = await this.acquire()
    try {
      const t0 = performance.now()
      const { query, format: clause } = await this.check(conn, sql)
      const format = clause ?? this.allowedFormat(limits.format, limits.nativeRevision !== undefined)
      if ((BINARY_FORMATS as readonly string[]).includes(format ?? '')) {
        if (limits.nativeRevision === undefined)
          throw this.refuse(
            'format',
            `FORMAT ${format} is binary and not allowed here; allowed formats are ${ALLOWED_FORMATS.join(', ')}`,
          )
        const result =
          format === NATIVE
            ? await this.executeNative(conn, query, limits.nativeRevision, caps)
            : await this.executeCut(conn, query, format as RowBinaryFormat | ArrowFormat, caps)
        return { ...result, limits: caps, elapsedMs: performance.now() - t0 }
      }
      const result = await this.execute(conn, query, format, caps)
      return { ...result, limits: caps, elapsedMs: performance.now() - t0 }
    } finally {
      this.release(conn)
    }
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

  private async execute(
    conn: GuardConnection,
    query: string,
    format: string | undefined,
    caps: AdHocLimits,
  ): Promise<Omit<AdHocResult, 'limits' | 'elapsedMs'>> {
    const ac = new AbortController()
    const timer = setTimeout(() => ac.abort(), (this.opts.limits.timeoutS + 2) * 1000)
    const rows: Array<Record<string, unknown>> = []
    const texts: string[] = []
    let bytes = 0
    let truncated = false
    const plan = format === undefined ? undefined : textPlan(format)
    const lines = plan === undefined ? undefined : new LineCutter(plan.headerLines, caps, conn.wholeChunks)
    const t0 = performance.now()
    try {
      outer: for await (const chunk of conn.stream(query, plan?.source ?? format ?? 'JSONEachRow', ac.signal)) {
        if (lines !== undefined) {
          if (!lines.push(chunk)) break
          continue
        }
        if (format !== undefined) {
          if (bytes + Buffer.byteLength(chunk) > caps.maxBytes) {
            truncated = true
            texts.push(cutUtf8(chunk, caps.maxBytes - bytes))
            bytes = caps.maxBytes
            break
          }
          texts.push(chunk)
          bytes += Buffer.byteLength(chunk)
          continue
        }
        for (const line of chunk.split('\n')) {
          if (line === '') continue
          const n = Buffer.byteLength(line) + 1
          if (rows.length >= caps.maxRows || bytes + n > caps.maxBytes) {
            truncated = true
            break outer
          }
          rows.push(JSON.parse(line) as Record<string, unknown>)
          bytes += n
        }
      }
    } catch (err) {
      if (ac.signal.aborted)
        throw new BenchstreamError(
          'BS_ERR_QUERY_FAILED',
          `the query ran longer than ${this.opts.limits.timeoutS} s and was cancelled`,
        )
      throw failed(err, false)
    } finally {
      clearTimeout(timer)
    }
    if (lines !== undefined) {
      const text = plan!.source === format ? lines.text() : jsonDocument(format!, lines, performance.now() - t0)
      const size = Buffer.byteLength(text)
      return {
        rows: undefined,
        text,
        format: format!,
        rowCount: lines.rows.length,
        bytes: size,
        truncated: lines.truncated,
      }
    }
    return format === undefined
      ? { rows, text: undefined, format: 'JSONEachRow', rowCount: rows.length, bytes, truncated }
      : { rows: undefined, text: texts.join(''), format, rowCount: -1, bytes, truncated }
  }

  /** Runs a query in the Native format, re-framed for the client's revision, cut at the caps. */
  private async executeNative(
    conn: GuardConnection,
    query: string,
    revision: number,
    caps: AdHocLimits,
  ): Promise<Omit<AdHocResult, 'limits' | 'elapsedMs'>> {
    const ac = new AbortController()
    const timer = setTimeout(() => ac.abort(), (this.opts.limits.timeoutS + 2) * 1000)
    const framer = new NativeReframer(revision, caps)
    const parts: Buffer[] = []
    try {
      for await (const chunk of conn.binary(query, NATIVE, ac.signal)) {
        parts.push(...framer.push(chunk))
        // Leaving the loop cancels the query.
        if (framer.truncated) break
      }
      framer.end()
    } catch (err) {
      if (err instanceof NativeFormatError)
        throw new BenchstreamError('BS_ERR_QUERY_FAILED', `query failed: ${err.message}`, { cause: err })
      if (ac.signal.aborted)
        throw new BenchstreamError(
          'BS_ERR_QUERY_FAILED',
          `the query ran longer than ${this.opts.limits.timeoutS} s and was cancelled`,
        )
      throw failed(err, false)
    } finally {
      clearTimeout(timer)
    }
    const data = Buffer.concat(parts)
    return {
      rows: undefined,
      text: undefined,
      data,
      format: NATIVE,
      rowCount: framer.rows,
      bytes: data.length,
      truncated: framer.truncated,
    }
  }

  /** Runs a query in RowBinary or Arrow: the engine writes the format with types, cut here at the caps. */
  private async executeCut(
    conn: GuardConnection,
    query: string,
    format: RowBinaryFormat | ArrowFormat,
    caps: AdHocLimits,
  ): Promise<Omit<AdHocResult, 'limits' | 'elapsedMs'>> {
    const ac = new AbortController()
    const timer = setTimeout(() => ac.abort(), (this.opts.limits.timeoutS + 2) * 1000)
    const arrow = (ARROW_FORMATS as readonly string[]).includes(format)
    const rowCutter = arrow ? undefined : new RowBinaryCutter(format as RowBinaryFormat, caps)
    const arrowCutter = arrow ? new ArrowCutter(format as ArrowFormat, caps) : undefined
    const parts: Buffer[] = []
    try {
      for await (const chunk of conn.binary(query, arrow ? ARROW_SOURCE : ROW_BINARY_SOURCE, ac.signal)) {
        // Leaving the loop cancels the query.
        if (rowCutter !== undefined) {
          parts.push(...rowCutter.push(chunk, conn.wholeChunks))
          if (rowCutter.truncated) break
        } else if (!arrowCutter!.push(chunk)) break
      }
      rowCutter?.end()
      if (arrowCutter !== undefined) parts.push(arrowCutter.result())
    } catch (err) {
      if (err instanceof NativeFormatError)
        throw new BenchstreamError('BS_ERR_QUERY_FAILED', `query failed: ${err.message}`, { cause: err })
      if (ac.signal.aborted)
        throw new BenchstreamError(
          'BS_ERR_QUERY_FAILED',
          `the query ran longer than ${this.opts.limits.timeoutS} s and was cancelled`,
        )
      throw failed(err, false)
    } finally {
      clearTimeout(timer)
    }
    const data = Buffer.concat(parts)
    const cutter = rowCutter ?? arrowCutter!
    return {
      rows: undefined,
      text: undefined,
      data,
      format,
      rowCount: cutter.rows,
      bytes: data.length,
      truncated: cutter.truncated,
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

/** At most `max` bytes of a string, without splitting a character. */
function cutUtf8(s: string, max: number): string {
  const b = Buffer.from(s)
  if (b.length <= max) return s
  let end = Math.max(0, max)
  while (end > 0 && (b[end]! & 0xc0) === 0x80) end--
  return b.toString('utf8', 0, end)
}
