/**
 * HTTP API shapes, version 1 (JSON Schema via TypeBox; the TypeScript types
 * are derived from the same objects). Served under /api/v1. One file per
 * concept: runs-api (runs, their timelines and figures), run-reports-api,
 * compare-api (compare and history), alerts-api (alerts and silences),
 * sql-api (ad hoc SQL), live-api (the live stream), profile-api; this one
 * holds the small pieces several of them share.
 */
import { Type, type Static, type TSchema } from 'typebox'

/** Largest time accepted in a query parameter: 2100-01-01, ms since the epoch. */
export const MAX_EPOCH_MS = 4_102_444_800_000

export const RunIdParams = Type.Object({
  runId: Type.String({
    pattern: '^[A-Za-z0-9][A-Za-z0-9._:-]{0,63}$',
    description: 'run id: 1-64 characters from A-Z a-z 0-9 . _ : -',
  }),
})
export type RunIdParams = Static<typeof RunIdParams>

/** A label selector term: `key=value`, the key as a label key (ID rule), the value at most 256 characters. */
export const LABEL_TERM = '^[A-Za-z0-9][A-Za-z0-9._:-]{0,63}=.{0,256}$'

export const ErrorReply = Type.Object({
  statusCode: Type.Integer(),
  code: Type.String(),
  error: Type.String(),
  message: Type.String(),
})
export type ErrorReply = Static<typeof ErrorReply>

/** A schema, or null in its place. */
export const Nullable = <T extends TSchema>(t: T) => Type.Union([t, Type.Null()])
