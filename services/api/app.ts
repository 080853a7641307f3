/**
 * The HTTP API: runs, reports, live timelines, ad hoc read-only SQL and a
 * live web page. build() assembles the app without listening, so tests use
 * app.inject() and need no port.
 */
import type { IncomingMessage, ServerResponse } from 'node:http'
import Fastify, { type FastifyInstance } from 'fastify'
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox'
import { CompareQuery, ReportQuery, RunIdParams, RunsQuery, SqlBody, TimelineQuery } from '../../schemas/api.v1.js'
import { BenchstreamError, isBenchstreamError } from '../core/errors.js'
import type { ReadModel } from '../core/ports/read-model.js'
import { compareReports } from '../core/reports/compare.js'
import { formatYcsb } from '../core/reports/ycsb-report.js'
import type { ApiConfig } from './config.js'
import { liveViewHtml } from './live-view.js'

export interface ApiDeps {
  /** Where runs and reports are read from. */
  readModel: ReadModel
  /** Extra status to show on /healthz (the processor's counters when it runs in this process). */
  status?: () => Record<string, unknown>
  /** What is wrong now, in words; /healthz answers 503 with them when any. */
  problems?: () => Promise<string[]>
  /** Prometheus text exposition of this process's OpenTelemetry metrics, served at /metrics. */
  metricsHandler?: (req: IncomingMessage, res: ServerResponse) => void
}

const READ_ONLY = /^\s*(SELECT|WITH|SHOW|DESCRIBE|DESC|EXPLAIN)\b/i
const HTTP_STATUS: Partial<Record<string, number>> = { BS_ERR_NOT_FOUND: 404, BS_ERR_BAD_REQUEST: 400, BS_ERR_CLICKHOUSE: 502 }

export function build(config: ApiConfig, deps: ApiDeps): FastifyInstance {
  const app = Fastify({ logger: config.logRequests ? { level: 'info' } : false }).withTypeProvider<TypeBoxTypeProvider>()

  app.setErrorHandler((err, _req, reply) => {
    if (isBenchstreamError(err)) {
      const statusCode = HTTP_STATUS[err.code] ?? 500
      return reply.status(statusCode).send({ statusCode, code: err.code, error: err.name, message: err.message })
    }
    const e = err as { validation?: unknown; statusCode?: number; code?: string; message: string }
    if (e.validation !== undefined) return reply.status(400).send({ statusCode: 400, code: 'BS_ERR_BAD_REQUEST', error: 'Bad Request', message: e.message })
    const statusCode = e.statusCode ?? 500
    return reply.status(statusCode).send({ statusCode, code: e.code ?? 'BS_ERR_INTERNAL', error: 'Error', message: e.message })
  })

  const rm = deps.readModel
  app.get('/healthz', async (_req, reply) => {
    const problems = (await deps.problems?.()) ?? []
    return reply.status(problems.length === 0 ? 200 : 503).send({ ok: problems.length === 0, problems, ...deps.status?.() })
  })

  app.get('/api/v1/runs', { schema: { querystring: RunsQuery } }, async (req) => ({ runs: await rm.listRuns(req.query.limit ?? 100) }))

  app.get('/api/v1/runs/:runId/report', { schema: { params: RunIdParams, querystring: ReportQuery } }, async (req, reply) => {
    const report = await rm.runReport(req.params.runId)
    if (req.query.format === 'text') return reply.type('text/plain; charset=utf-8').send(formatYcsb(report))
    return report
  })

  app.get('/api/v1/runs/:runId/timeline', { schema: { params: RunIdParams, querystring: TimelineQuery } }, async (req) => ({
    runId: req.params.runId,
    points: await rm.timeline(req.params.runId, req.query.since ?? 0),
  }))

  app.get('/api/v1/compare', { schema: { querystring: CompareQuery } }, async (req) => {
    const [a, b] = await Promise.all([rm.runReport(req.query.baseline), rm.runReport(req.query.candidate)])
    return compareReports(a, b)
  })

  app.get('/api/v1/dead-letters', async () => ({ byReason: await rm.deadLetterCounts() }))

  // Ad hoc SQL for people without a ClickHouse client (in the embedded mode this
  // process owns the data directory, so this is the way in). Read-only.
  app.post('/api/v1/query', { schema: { body: SqlBody } }, async (req) => {
    const sql = req.body.sql.trim().replace(/;\s*$/, '')
    if (!READ_ONLY.test(sql) || sql.includes(';')) {
      throw new BenchstreamError('BS_ERR_BAD_REQUEST', 'only one read-only statement is allowed: SELECT, WITH, SHOW, DESCRIBE or EXPLAIN, without ";" inside')
    }
    return rm.query(sql, config.maxQueryRows)
  })

  app.get('/', async (_req, reply) => reply.type('text/html; charset=utf-8').send(liveViewHtml))

  const metricsHandler = deps.metricsHandler
  if (metricsHandler !== undefined) {
    app.get('/metrics', (req, reply) => {
      // The exporter writes the response itself.
      reply.hijack()
      metricsHandler(req.raw, reply.raw)
    })
  }

  return app
}
