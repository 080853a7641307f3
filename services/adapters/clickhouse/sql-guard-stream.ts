/**
 * One ad hoc query's running result (sql-guard.ts): the engine's chunks through a result shape, its first MiB gathered
 * before the caller answers, the result limits that fail it or cut it, and the time-out that frees its connection.
 */
import { BenchstreamError } from '../../core/errors.js'
import type { AdHocStream, ResultLimits } from '../../core/ports/ad-hoc-queries.js'
import { NativeFormatError } from './native-format.js'
import type { ResultShape } from './result-shape.js'
import type { GuardConnection } from './sql-guard-connections.js'
import { failed } from './sql-guard-errors.js'

/**
 * Bytes of a result gathered before the caller answers anything: a query that fails within them (a limit passed in
 * the first blocks, an engine error) is answered with an error status. ClickHouse's HTTP server holds its first
 * buffer (1 MiB) the same way.
 */
const HEAD_BYTES = 1 << 20

export interface Limits {
  cut: ResultLimits
  fail: ResultLimits
  /** Whose limit each fail limit is: the server's (API_MAX_QUERY_ROWS, API_QUERY_MAX_BYTES) or the request's. */
  failBy: { rows: 'server' | 'request'; bytes: 'server' | 'request' }
}

export interface GuardStreamOptions {
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
export class GuardStream implements AdHocStream {
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
