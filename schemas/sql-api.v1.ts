/**
 * HTTP API shapes, version 1: ad hoc SQL (POST /api/v1/query), the request
 * and the JSON answer without a format.
 */
import { Type, type Static } from 'typebox'

export const SqlBody = Type.Object(
  {
    sql: Type.String({
      minLength: 1,
      maxLength: 262_144,
      description:
        'one SELECT (or WITH ... SELECT) over the benchstream database; an optional FORMAT clause returns ' +
        'text in that format',
    }),
    maxRows: Type.Optional(
      Type.Integer({
        minimum: 1,
        maximum: Number.MAX_SAFE_INTEGER,
        description:
          'cut the result after this many rows, as asked: the answer says truncated: true (JSON) or ' +
          'X-Benchstream-Truncated: true (trailer) when it had more. Without it every row comes back',
      }),
    ),
    format: Type.Optional(
      Type.String({
        pattern: '^[A-Za-z][A-Za-z0-9_]{0,63}$',
        description:
          'a ClickHouse output format (TSV, CSV, PrettyCompact, JSON, ...) when the query has no FORMAT ' +
          'clause: the answer is that text',
      }),
    ),
  },
  { additionalProperties: false },
)
export type SqlBody = Static<typeof SqlBody>

/** Rows and bytes of a result; a limit not set is absent. */
const resultLimits = (description: string) =>
  Type.Object(
    {
      rows: Type.Optional(Type.Integer({ minimum: 1 })),
      bytes: Type.Optional(Type.Integer({ minimum: 1 })),
    },
    { additionalProperties: false, description },
  )

/**
 * POST /api/v1/query's answer without a format: every row, streamed (the
 * rows first, the counts after them). A failure part-way ends the body
 * without its end (the JSON does not parse, the connection breaks).
 */
export const QueryResult = Type.Object(
  {
    rows: Type.Array(Type.Record(Type.String(), Type.Unknown()), {
      description: 'the rows, as JSONEachRow writes them',
    }),
    rowCount: Type.Integer({ minimum: 0 }),
    bytes: Type.Integer({ minimum: 0, description: 'bytes of the rows as JSON lines' }),
    truncated: Type.Boolean({
      description: 'true only when the result was cut at maxRows, as asked, and had more rows',
    }),
    limits: Type.Object(
      {
        cut: resultLimits('where the request asked the result to stop (maxRows)'),
        fail: resultLimits('what the result may hold before the query fails (API_MAX_QUERY_ROWS, API_QUERY_MAX_BYTES)'),
      },
      { additionalProperties: false },
    ),
    elapsedMs: Type.Integer({ minimum: 0 }),
  },
  { additionalProperties: false },
)
export type QueryResult = Static<typeof QueryResult>
