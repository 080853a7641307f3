/**
 * Profile routes (a fastify plugin; services/api/app.ts registers it when a
 * ProfileStore is given):
 *
 *   GET  /api/v1/profiles/runs                      runs that have profiles
 *   GET  /api/v1/profiles?run=A[,B]|group=G         the profiles of a selection
 *   POST /api/v1/profiles                           store one profile (a PROFILE record body)
 *   GET  /api/v1/profiles/flamegraph?run=|group=    flame graph: nested-set rows, or ?format=svg
 *   GET  /api/v1/profiles/diff-flamegraph?baseline=A&candidate=B   differential flame graph, json or svg
 *   GET  /api/v1/profiles/diff?baseline=A&candidate=B             frames whose share changed most
 *   GET  /profiles                                  the interactive page (search, zoom)
 *
 * Selections take `from`/`to` (ms; slices by their start, as windows) and
 * `labels=k=v,...`; several runs in one parameter are merged.
 */
import type { FastifyInstance } from 'fastify'
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox'
import {
  DiffFlameGraphQuery,
  FlameGraphQuery,
  FrameDiffQuery,
  ProfileListQuery,
  ProfileRunsQuery,
} from '../../schemas/profile-api.v1.js'
import { checkProfileBody } from '../core/codec/json-record-decoders.js'
import { BenchstreamError } from '../core/errors.js'
import { diffFlameGraph, flameGraph, frameShareChanges } from '../core/profiles/flame-graph.js'
import { flameGraphSvg } from '../core/profiles/flame-svg.js'
import { recordStacks } from '../core/profiles/profile.js'
import { MAX_MERGED_STACKS, type ProfileSelection, type ProfileStore } from '../core/ports/profile-store.js'
import { profilesPageHtml } from './profiles-page.js'

export interface ProfileRoutesOptions {
  store: ProfileStore
}

/** Rows (call tree nodes) one flame graph may have: bounds the answer (about 100 bytes a row as JSON). */
const MAX_ROWS = 1_000_000
/** Largest upload: a profile of MAX_PROFILE_STACKS deep stacks, as JSON. */
const UPLOAD_LIMIT_BYTES = 64 * 1024 * 1024
/** Uploads may describe times up to a day ahead of this server's clock. */
const MAX_FUTURE_US = 86_400e6

export async function profileRoutes(app: FastifyInstance, opts: ProfileRoutesOptions): Promise<void> {
  const r = app.withTypeProvider<TypeBoxTypeProvider>()
  const store = opts.store

  const load = async (sel: ProfileSelection, what: string): Promise<Awaited<ReturnType<ProfileStore['stacks']>>> => {
    const stacks = await store.stacks(sel, MAX_MERGED_STACKS)
    if (stacks.size === 0) {
      const range =
        sel.fromMs === undefined && sel.toMs === undefined ? '' : ` in ${sel.fromMs ?? '-'}..${sel.toMs ?? '-'} ms`
      const labels = sel.labels === undefined ? '' : ` with labels ${JSON.stringify(sel.labels)}`
      throw new BenchstreamError(
        'BS_ERR_NOT_FOUND',
        `no profile samples for ${what}${range}${labels}; attach one with \`benchstream profile attach\``,
      )
    }
    return stacks
  }

  r.get('/api/v1/profiles/runs', { schema: { querystring: ProfileRunsQuery } }, async (req) => ({
    runs: await store.runs(req.query.limit ?? 100),
  }))

  r.get('/api/v1/profiles', { schema: { querystring: ProfileListQuery } }, async (req) => ({
    profiles: await store.list(selection(req.query)),
  }))

  // The body is checked by checkProfileBody (ProfileRecordBody and what a schema cannot say), the same check as a Kafka
  // record's.
  r.post('/api/v1/profiles', { bodyLimit: UPLOAD_LIMIT_BYTES }, async (req, reply) => {
    const checked = checkProfileBody(req.body, { minStartUs: 0, maxStartUs: Date.now() * 1000 + MAX_FUTURE_US })
    if (!checked.ok)
      throw new BenchstreamError('BS_ERR_BAD_REQUEST', `invalid profile (${checked.reason}): ${checked.detail}`)
    const rec = checked.record
    const origin =
      typeof (req.body as { origin?: unknown }).origin === 'string'
        ? String((req.body as { origin: string }).origin).slice(0, 256)
        : 'api'
    const result = await store.store({ ...rec, stacks: recordStacks(rec) }, rec.profileId, origin)
    return reply.status(result.created ? 201 : 200).send(result)
  })

  r.get('/api/v1/profiles/flamegraph', { schema: { querystring: FlameGraphQuery } }, async (req, reply) => {
    const sel = selection(req.query)
    const what = sel.group !== undefined ? `group ${sel.group}` : `run ${(sel.runIds ?? []).join(', ')}`
    const graph = bounded(flameGraph(await load(sel, what)))
    if (req.query.format === 'svg') {
      return reply.type('image/svg+xml; charset=utf-8').send(
        flameGraphSvg(graph, {
          title: `CPU profile: ${what}`,
          subtitle: `${graph.total.toLocaleString('en-US')} samples`,
          ...(req.query.width === undefined ? {} : { width: req.query.width }),
        }),
      )
    }
    return { selection: sel, unit: 'samples', ...graph }
  })

  r.get('/api/v1/profiles/diff-flamegraph', { schema: { querystring: DiffFlameGraphQuery } }, async (req, reply) => {
    const [a, b] = pair(req.query)
    const graph = bounded(
      diffFlameGraph(
        await load(a, `baseline ${req.query.baseline}`),
        await load(b, `candidate ${req.query.candidate}`),
      ),
    )
    if (req.query.format === 'svg') {
      return reply.type('image/svg+xml; charset=utf-8').send(
        flameGraphSvg(graph, {
          title: `Differential profile: ${req.query.candidate} vs ${req.query.baseline}`,
          subtitle:
            `widths: ${graph.total.toLocaleString('en-US')} candidate samples ` +
            `(baseline ${graph.baselineTotal.toLocaleString('en-US')}); ` +
            `red: larger share, blue: smaller`,
          ...(req.query.width === undefined ? {} : { width: req.query.width }),
        }),
      )
    }
    return { baseline: a, candidate: b, unit: 'samples', ...graph }
  })

  r.get('/api/v1/profiles/diff', { schema: { querystring: FrameDiffQuery } }, async (req) => {
    const [a, b] = pair(req.query)
    const changes = frameShareChanges(
      await load(a, `baseline ${req.query.baseline}`),
      await load(b, `candidate ${req.query.candidate}`),
      req.query.limit ?? 20,
    )
    return { baseline: a, candidate: b, unit: 'percentage points', ...changes }
  })

  r.get('/profiles', async (_req, reply) => reply.type('text/html; charset=utf-8').send(profilesPageHtml))
}

function bounded<G extends { rows: unknown[] }>(g: G): G {
  if (g.rows.length > MAX_ROWS)
    throw new BenchstreamError(
      'BS_ERR_TOO_LARGE',
      `the flame graph has ${g.rows.length} frames; at most ${MAX_ROWS} are served: narrow the selection ` +
        `(fewer runs, a time range, labels)`,
    )
  return g
}

function labelsOf(text: string | undefined): Record<string, string> | undefined {
  if (text === undefined) return undefined
  const out: Record<string, string> = {}
  for (const kv of text.split(',')) {
    const eq = kv.indexOf('=')
    out[kv.slice(0, eq)] = kv.slice(eq + 1)
  }
  return out
}

function selection(q: { run?: string; group?: string; from?: number; to?: number; labels?: string }): ProfileSelection {
  if (q.run === undefined && q.group === undefined)
    throw new BenchstreamError('BS_ERR_BAD_REQUEST', 'name the runs: run=A[,B...] or group=G')
  const labels = labelsOf(q.labels)
  return {
    ...(q.run === undefined ? {} : { runIds: q.run.split(',') }),
    ...(q.group === undefined ? {} : { group: q.group }),
    ...(q.from === undefined ? {} : { fromMs: q.from }),
    ...(q.to === undefined ? {} : { toMs: q.to }),
    ...(labels === undefined ? {} : { labels }),
  }
}

function pair(q: { baseline: string; candidate: string; labels?: string }): [ProfileSelection, ProfileSelection] {
  const labels = labelsOf(q.labels)
  const sel = (runs: string): ProfileSelection => ({
    runIds: runs.split(','),
    ...(labels === undefined ? {} : { labels }),
  })
  return [sel(q.baseline), sel(q.candidate)]
}
