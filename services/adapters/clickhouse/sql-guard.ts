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
 * This file holds the pool of connections and the path of one query through
 * the others: the connections (sql-guard-connections.ts), what a query may
 * name (sql-guard-allowed.ts), the check (sql-guard-check.ts), the running
 * result (sql-guard-stream.ts) and the errors (sql-guard-errors.ts).
 *
 * Findings behind each rule: /work/notes/chdb-guard.md; the attack corpus is
 * test/integration/sql-guard.test.ts.
 */
import { BenchstreamError } from '../../core/errors.js'
import type { AdHocOptions, AdHocQueries, AdHocStream } from '../../core/ports/ad-hoc-queries.js'
import type { ClickHouseConfig } from '../../common/infra-config.js'
import { ARROW_FORMATS, ARROW_SOURCE, ArrowShape, type ArrowFormat } from './arrow-ipc.js'
import { NativeReframer } from './native-format.js'
import type { ResultShape, ShapeCaps } from './result-shape.js'
import { ROW_BINARY_FORMATS, ROW_BINARY_SOURCE, RowBinaryShape, type RowBinaryFormat } from './row-binary.js'
import { ALLOWED_FORMATS, BINARY_FORMATS, NATIVE } from './sql-guard-allowed.js'
import { SqlCheck } from './sql-guard-check.js'
import {
  ChdbGuardConnection,
  HttpGuardConnection,
  MAX_QUERY_BYTES,
  type GuardConnection,
  type GuardLimits,
} from './sql-guard-connections.js'
import { refused } from './sql-guard-errors.js'
import { GuardStream, type Limits } from './sql-guard-stream.js'
import { PEOPLE_FORMATS, textShape } from './text-formats.js'

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
  private readonly checker: SqlCheck

  constructor(
    private readonly conns: GuardConnection[],
    private readonly opts: GuardOptions,
  ) {
    this.idle = [...conns]
    this.checker = new SqlCheck(opts.database)
  }

  /** Queries refused by the check, by rule (metrics, tests). */
  get refusedByRule(): Record<string, number> {
    return this.checker.refusedByRule
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
      const { query, format: clause } = await this.checker.check(conn, sql)
      const binary = opts.nativeRevision !== undefined
      const format = clause ?? this.checker.allowedFormat(opts.format, binary) ?? 'JSONEachRow'
      if ((BINARY_FORMATS as readonly string[]).includes(format) && !binary)
        throw this.checker.refuse(
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

function busy(opts: GuardOptions): BenchstreamError {
  return new BenchstreamError(
    'BS_ERR_BUSY',
    `${opts.concurrency} ad hoc quer${opts.concurrency === 1 ? 'y runs' : 'ies run'} and ${opts.queue} ` +
      `wait already; try again in a moment`,
  )
}
