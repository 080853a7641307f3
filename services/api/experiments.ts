/**
 * Experiment routes (a fastify plugin; services/api/app.ts registers it when
 * an ExperimentStore is given):
 *
 *   GET /api/v1/experiments[?limit=N]     the experiments, newest first, with their progress
 *   GET /api/v1/experiments/:id           one experiment's whole state (plan, matrix, steps, comparisons) and
 *                                         `decision`: the headline of what it decided, as comparison.md and the
 *                                         CLI say it (services/core/experiments/decision.ts)
 *   PUT /api/v1/experiments/:id           the coordinator stores the state (the newest version wins)
 *
 * The body of a PUT is checked against schemas/experiment-state.v1.ts ExperimentState
 * like any other input: a state that is not one, or names another id, is
 * refused with what is wrong.
 */
import type { FastifyInstance } from 'fastify'
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox'
import { Type } from 'typebox'
import { ExperimentState, MAX_EXPERIMENT_STATE_BYTES } from '../../schemas/experiment-state.v1.js'
import { ExperimentIdParams, ExperimentList, type ExperimentReply } from '../../schemas/experiments-api.v1.js'
import { BenchstreamError } from '../core/errors.js'
import { decideExperiment } from '../core/experiments/decision.js'
import type { ExperimentStore } from '../core/ports/experiment-store.js'

export interface ExperimentRoutesOptions {
  store: ExperimentStore
}

const ListQuery = Type.Object(
  {
    limit: Type.Optional(
      Type.Integer({ minimum: 1, maximum: 1000, description: 'at most this many, 1 to 1000 (default 100)' }),
    ),
  },
  { additionalProperties: false },
)

export async function experimentRoutes(app: FastifyInstance, opts: ExperimentRoutesOptions): Promise<void> {
  const r = app.withTypeProvider<TypeBoxTypeProvider>()
  const store = opts.store

  r.get(
    '/api/v1/experiments',
    { schema: { querystring: ListQuery, response: { 200: ExperimentList } } },
    async (req) => ({
      experiments: await store.list(req.query.limit ?? 100),
    }),
  )

  r.get('/api/v1/experiments/:id', { schema: { params: ExperimentIdParams } }, async (req) => {
    const s = await store.load(req.params.id)
    if (s === undefined)
      throw new BenchstreamError(
        'BS_ERR_NOT_FOUND',
        `no experiment ${JSON.stringify(req.params.id)}; GET /api/v1/experiments lists them`,
      )
    // A bisection decides through its chain (its result), not through runs and comparisons of its own.
    return (s.bisect === undefined ? { ...s, decision: decideExperiment(s) } : s) satisfies ExperimentReply
  })

  r.put(
    '/api/v1/experiments/:id',
    { schema: { params: ExperimentIdParams, body: ExperimentState }, bodyLimit: MAX_EXPERIMENT_STATE_BYTES },
    async (req, reply) => {
      if (req.body.id !== req.params.id)
        throw new BenchstreamError(
          'BS_ERR_BAD_REQUEST',
          `the body is experiment ${req.body.id}, the address ${req.params.id}`,
        )
      await store.save(req.body)
      return reply.status(204).send()
    },
  )
}
