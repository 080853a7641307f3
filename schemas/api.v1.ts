/**
 * HTTP API shapes, version 1 (JSON Schema via TypeBox; the TypeScript types
 * are derived from the same objects). Served under /api/v1.
 */
import { Type, type Static } from '@sinclair/typebox'

export const RunIdParams = Type.Object({
  runId: Type.String({ pattern: '^[A-Za-z0-9][A-Za-z0-9._:-]{0,63}$', description: 'run id: 1-64 characters from A-Z a-z 0-9 . _ : -' }),
})
export type RunIdParams = Static<typeof RunIdParams>

export const ReportQuery = Type.Object({
  format: Type.Optional(Type.Union([Type.Literal('json'), Type.Literal('text')], { description: 'json (default) or text (YCSB layout)' })),
})
export type ReportQuery = Static<typeof ReportQuery>

export const TimelineQuery = Type.Object({
  since: Type.Optional(Type.Integer({ minimum: 0, description: 'only windows starting at or after this time, ms since epoch' })),
})
export type TimelineQuery = Static<typeof TimelineQuery>

export const RunsQuery = Type.Object({
  limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 1000, default: 100 })),
})
export type RunsQuery = Static<typeof RunsQuery>

export const CompareQuery = Type.Object({
  baseline: Type.String({ pattern: '^[A-Za-z0-9][A-Za-z0-9._:-]{0,63}$', description: 'run id of the baseline (e.g. release A)' }),
  candidate: Type.String({ pattern: '^[A-Za-z0-9][A-Za-z0-9._:-]{0,63}$', description: 'run id of the candidate (e.g. release B)' }),
})
export type CompareQuery = Static<typeof CompareQuery>

export const SqlBody = Type.Object(
  {
    sql: Type.String({ minLength: 1, maxLength: 100_000, description: 'one read-only statement: SELECT, WITH, SHOW, DESCRIBE or EXPLAIN' }),
  },
  { additionalProperties: false },
)
export type SqlBody = Static<typeof SqlBody>

export const ErrorReply = Type.Object({
  statusCode: Type.Integer(),
  code: Type.String(),
  error: Type.String(),
  message: Type.String(),
})
export type ErrorReply = Static<typeof ErrorReply>
