/**
 * The ad hoc SQL guard's refusals and engine failures as Benchstream errors (sql-guard.ts): which engine messages may
 * be shown to the caller and which only by name, since a message can carry data the query read.
 */
import { BenchstreamError } from '../../core/errors.js'

/** Engine errors whose message names only the user's own text (safe to return); others are returned by name only. */
const MESSAGE_SAFE_CODES = new Set([
  47, 46, 62, 60, 81, 43, 42, 53, 386, 35, 36, 184, 215, 159, 158, 307, 241, 396, 160, 164, 168, 167,
])
/** ClickHouse's READONLY error code. */
const READONLY = 164

export function refused(rule: string, message: string): BenchstreamError {
  return new BenchstreamError('BS_ERR_QUERY_REFUSED', `${message} (rule: ${rule})`)
}

/**
 * An engine error as BS_ERR_QUERY_FAILED. The message is returned only for
 * codes whose text names the user's own query (syntax, unknown names,
 * limits); otherwise only the error's name, since a message can carry data
 * the query computed (throwIf with a subquery, for one).
 */
export function failed(err: unknown, parsing: boolean): BenchstreamError {
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
