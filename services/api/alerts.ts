/**
 * Alert and silence routes (a fastify plugin; services/api/app.ts registers it):
 *
 *   GET    /api/v1/alerts?run=&state=&rule=&since=&limit=&cursor=   incidents, newest first, a page at a time
 *   POST   /api/v1/silences                   a silence (Alertmanager's postable silence; 201 with it)
 *   GET    /api/v1/silences[?state=]          silences, newest first
 *   GET    /api/v1/silences/:id               one silence
 *   DELETE /api/v1/silences/:id               expire it (Alertmanager's DELETE /api/v2/silence/{id})
 *
 * The silence routes are served when a SilenceStore is given. Matching and
 * the rules a new silence must meet: services/core/alerting/silences.ts.
 */
import { randomUUID } from 'node:crypto'
import type { FastifyInstance } from 'fastify'
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox'
import { AlertsQuery, SilenceBody, SilenceIdParams, SilencesQuery } from '../../schemas/alerts-api.v1.js'
import { expireSilence, newSilence, silenceState, silenceView } from '../core/alerting/silences.js'
import { BenchstreamError } from '../core/errors.js'
import type { SilenceStore } from '../core/ports/alerts.js'
import type { ReadModel } from '../core/ports/read-model.js'

export interface AlertRoutesOptions {
  readModel: ReadModel
  silences: SilenceStore | undefined
  now: () => number
}

/** Alerts per page when ?limit= is not given. */
const DEFAULT_ALERTS_PAGE = 100
/** Silences listed at most. */
const MAX_LISTED_SILENCES = 1000

export async function alertRoutes(app: FastifyInstance, opts: AlertRoutesOptions): Promise<void> {
  const r = app.withTypeProvider<TypeBoxTypeProvider>()

  r.get('/api/v1/alerts', { schema: { querystring: AlertsQuery } }, async (req) => {
    const q = req.query
    return opts.readModel.alerts(
      {
        ...(q.run === undefined ? {} : { runId: q.run }),
        ...(q.state === undefined ? {} : { state: q.state }),
        ...(q.rule === undefined ? {} : { rule: q.rule }),
        ...(q.since === undefined ? {} : { sinceMs: q.since }),
      },
      { limit: q.limit ?? DEFAULT_ALERTS_PAGE, ...(q.cursor === undefined ? {} : { cursor: q.cursor }) },
    )
  })

  const store = opts.silences
  if (store === undefined) return

  const find = async (id: string) => {
    const s = await store.get(id)
    if (s === undefined)
      throw new BenchstreamError(
        'BS_ERR_NOT_FOUND',
        `no silence ${JSON.stringify(id)}; GET /api/v1/silences lists them (benchstream alerts silences)`,
      )
    return s
  }

  r.post('/api/v1/silences', { schema: { body: SilenceBody } }, async (req, reply) => {
    const now = opts.now()
    const s = newSilence(req.body, randomUUID(), now)
    await store.save(s)
    return reply.status(201).send(silenceView(s, now))
  })

  r.get('/api/v1/silences', { schema: { querystring: SilencesQuery } }, async (req) => {
    const now = opts.now()
    const all = await store.list(MAX_LISTED_SILENCES)
    const state = req.query.state
    return {
      silences: all
        .filter((s) => state === undefined || silenceState(s, now) === state)
        .map((s) => silenceView(s, now)),
    }
  })

  r.get('/api/v1/silences/:silenceId', { schema: { params: SilenceIdParams } }, async (req) =>
    silenceView(await find(req.params.silenceId), opts.now()),
  )

  r.delete('/api/v1/silences/:silenceId', { schema: { params: SilenceIdParams } }, async (req) => {
    const now = opts.now()
    const s = await find(req.params.silenceId)
    const expired = expireSilence(s, now)
    if (expired !== s) await store.save(expired)
    return silenceView(expired, now)
  })
}
