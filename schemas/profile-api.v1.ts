/**
 * HTTP API shapes of the profile routes (services/api/profiles.ts), version
 * 1: which samples a flame graph is made of, and the upload of a profile.
 * The upload body is the PROFILE record body of schemas/events.v1.ts.
 */
import { Type, type Static } from 'typebox'
import { ID_PATTERN } from './events.v1.js'

/** Largest time accepted in a query parameter: 2100-01-01, ms since the epoch. */
const MAX_EPOCH_MS = 4_102_444_800_000
const ID = ID_PATTERN.source.slice(1, -1)
const runList = (description: string) =>
  Type.String({ pattern: `^${ID}(,${ID}){0,99}$`, description: `${description}: 1 to 100 run ids separated by commas` })
const ms = (description: string) =>
  Type.Integer({
    minimum: 0,
    maximum: MAX_EPOCH_MS,
    description: `${description}: ms since the Unix epoch, 0 to ${MAX_EPOCH_MS} (year 2100)`,
  })
const labels = Type.String({
  pattern: `^${ID}=[^,]{0,256}(,${ID}=[^,]{0,256}){0,63}$`,
  description: 'only profiles with these labels: key=value pairs separated by commas (e.g. host=rs1,process=broker)',
})
const format = Type.Optional(
  Type.Union([Type.Literal('json'), Type.Literal('svg')], {
    description: 'json (default: the nested-set rows) or svg (an image, e.g. for an email)',
  }),
)
const width = Type.Optional(
  Type.Integer({ minimum: 200, maximum: 10_000, description: 'SVG width in px, 200 to 10000 (default 1200)' }),
)

export const ProfileListQuery = Type.Object({
  run: Type.Optional(runList('runs')),
  group: Type.Optional(
    Type.String({ pattern: ID_PATTERN.source, description: 'a group of runs (the group their drivers announced)' }),
  ),
  from: Type.Optional(ms('only time slices starting at or after this time')),
  to: Type.Optional(ms('only time slices starting before this time')),
  labels: Type.Optional(labels),
})
export type ProfileListQuery = Static<typeof ProfileListQuery>

export const FlameGraphQuery = Type.Object({
  run: Type.Optional(runList('runs whose samples are merged')),
  group: Type.Optional(
    Type.String({
      pattern: ID_PATTERN.source,
      description: 'a group of runs (the group their drivers announced), merged',
    }),
  ),
  from: Type.Optional(ms('only time slices starting at or after this time')),
  to: Type.Optional(ms('only time slices starting before this time')),
  labels: Type.Optional(labels),
  format,
  width,
})
export type FlameGraphQuery = Static<typeof FlameGraphQuery>

const pair = {
  baseline: runList('baseline runs (A), merged'),
  candidate: runList('candidate runs (B), merged'),
  labels: Type.Optional(labels),
}

export const DiffFlameGraphQuery = Type.Object({ ...pair, format, width })
export type DiffFlameGraphQuery = Static<typeof DiffFlameGraphQuery>

export const FrameDiffQuery = Type.Object({
  ...pair,
  limit: Type.Optional(
    Type.Integer({
      minimum: 1,
      maximum: 1000,
      default: 20,
      description: 'frames listed per kind (self, total), 1 to 1000',
    }),
  ),
})
export type FrameDiffQuery = Static<typeof FrameDiffQuery>

export const ProfileRunsQuery = Type.Object({
  limit: Type.Optional(
    Type.Integer({ minimum: 1, maximum: 1000, default: 100, description: 'runs listed, newest first, 1 to 1000' }),
  ),
})
export type ProfileRunsQuery = Static<typeof ProfileRunsQuery>
