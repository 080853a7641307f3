/**
 * Inserts ClickHouse refuses for their data (a parse or type error of a value), told apart from those a retry can
 * help, and the split that isolates the refused rows of an insert so that the others are stored (bisect).
 */
import type { RefusedRow } from '../../core/ports/window-store.js'

/**
 * ClickHouse error codes that mean "this data cannot be stored", whatever
 * the retry: parse and type errors of a value. Anything else (connection
 * refused, timeouts, memory, too many parts, an error without a code) is
 * treated as retryable.
 */
const NON_RETRYABLE_CODES = new Set([
  6, // CANNOT_PARSE_TEXT
  25, // CANNOT_PARSE_ESCAPE_SEQUENCE
  26, // CANNOT_PARSE_QUOTED_STRING
  27, // CANNOT_PARSE_INPUT_ASSERTION_FAILED
  32, // ATTEMPT_TO_READ_AFTER_EOF
  38, // CANNOT_PARSE_DATE
  41, // CANNOT_PARSE_DATETIME
  43, // ILLEGAL_TYPE_OF_ARGUMENT
  53, // TYPE_MISMATCH
  69, // ARGUMENT_OUT_OF_BOUND
  70, // CANNOT_CONVERT_TYPE
  72, // CANNOT_PARSE_NUMBER
  117, // INCORRECT_DATA
  131, // TOO_LARGE_STRING_SIZE
  321, // VALUE_IS_OUT_OF_RANGE_OF_DATA_TYPE
  349, // CANNOT_INSERT_NULL_IN_ORDINARY_COLUMN
  1001, // STD_EXCEPTION (e.g. a malformed UTF-8 sequence)
])

/** The ClickHouse error code of an error from @clickhouse/client (HTTP or chDB), or undefined. */
export function clickhouseErrorCode(err: unknown): number | undefined {
  const e = err as { code?: unknown; message?: unknown }
  if (typeof e.code === 'string' && /^\d+$/.test(e.code)) return Number(e.code)
  const m = /\bCode: (\d+)\b/.exec(typeof e.message === 'string' ? e.message : '')
  return m === null ? undefined : Number(m[1])
}

/** True when retrying the same insert cannot help: the data itself is refused. */
export function isDataError(err: unknown): boolean {
  const code = clickhouseErrorCode(err)
  return code !== undefined && NON_RETRYABLE_CODES.has(code)
}

/** Error text kept in a dead letter. */
const MAX_ERROR_CHARS = 2000

/**
 * Tries items [0, n) in one insert, then halves of a refused range, down to
 * single items, which are refused. Deterministic: the same refusals give the
 * same inserts with the same tokens.
 */
export async function bisect(
  n: number,
  token: string,
  insertRange: (from: number, to: number, token: string) => Promise<void>,
  refuse: (i: number, err: unknown) => RefusedRow,
): Promise<RefusedRow[]> {
  const refused: RefusedRow[] = []
  const attempt = async (from: number, to: number, t: string): Promise<void> => {
    if (from >= to) return
    try {
      await insertRange(from, to, t)
    } catch (err) {
      if (!isDataError(err)) throw err
      if (to - from === 1) {
        refused.push(refuse(from, err))
        return
      }
      const mid = from + Math.ceil((to - from) / 2)
      await attempt(from, mid, `${t}/a`)
      await attempt(mid, to, `${t}/b`)
    }
  }
  await attempt(0, n, token)
  return refused
}

export function errorText(err: unknown): string {
  return String((err as Error).message ?? err)
    .replace(/\s+/g, ' ')
    .trim()
    .slice(0, MAX_ERROR_CHARS)
}
