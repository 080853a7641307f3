/**
 * The HTTP API: runs, reports, live timelines, alerts and silences, ad hoc
 * read-only SQL and a live web page. build() assembles the app without listening, so tests use
 * app.inject() and need no port. Its OpenAPI document (OPENAPI_PATH) is built
 * from the routes' own schemas; docs/reference/openapi.json is a copy of it.
 */
import type { IncomingMessage, ServerResponse } from 'node:http'
import swagger from '@fastify/swagger'
import Fastify, { type FastifyInstance } from 'fastify'
import type { FastifyPluginAsyncTypebox, TypeBoxTypeProvider } from '@fastify/type-provider-typebox'
import { ErrorReply, RunIdParams } from '../../schemas/api-common.v1.js'
import { CompareQuery, HistoryQuery } from '../../schemas/compare-api.v1.js'
import { ReportQuery } from '../../schemas/run-reports-api.v1.js'
import { RunsQuery, TimelineQuery } from '../../schemas/runs-api.v1.js'
import type { AdHocQueries } from '../core/ports/ad-hoc-queries.js'
import type { SilenceStore } from '../core/ports/alerts.js'
import type { ExperimentStore } from '../core/ports/experiment-store.js'
import type { ProfileStore } from '../core/ports/profile-store.js'
import type { ReadModel } from '../core/ports/read-model.js'
import { releaseHistory } from '../core/compare/history.js'
import { formatComparison } from '../core/compare/release-format.js'
import { compareReleases } from '../core/compare/release.js'
import { profileComparison } from '../core/compare/profile-changes.js'
import { BenchstreamError } from '../core/errors.js'
import { formatAnyRunReport, readRunReport } from '../core/reports/read-report.js'
import { CachedReadModel } from './cached-read-model.js'
import type { ApiConfig } from './config.js'
import { adHocQueryRoute } from './ad-hoc-query.js'
import { clickhouseHttp } from './clickhouse-http.js'
import { alertRoutes } from './alerts.js'
import { accessControl, clientErrorHandler, errorShape, typeboxValidators } from './http-guards.js'
import { liveView } from './live/plugin.js'
import { experimentRoutes } from './experiments.js'
import { profileRoutes } from './profiles.js'

export interface ApiDeps {
  /** Where runs and reports are read from. */
  readModel: ReadModel
  /** Users' own SQL, guarded (POST /api/v1/query and the ClickHouse endpoint). */
  adHoc: AdHocQueries
  /**
   * The ClickHouse database Benchstream's tables are in (CLICKHOUSE_DATABASE): the only one the ClickHouse endpoint
   * reads.
   */
  database: string
  /** CPU profiles of runs (flame graphs, diffs, uploads); without it the profile routes are not served. */
  profiles?: ProfileStore
  /** Experiments (benchstream experiment run): stored and served; without it the experiment routes are not served. */
  experiments?: ExperimentStore
  /** Where silences are kept; without it the silence routes are not served. */
  silences?: SilenceStore
  /** Wall clock, ms (silences: what is active now); tests may pass their own. */
  now?: () => number
  /** Extra status to show on /healthz (the processor's counters when it runs in this process). */
  status?: () => Record<string, unknown>
  /** What is wrong now, in words; /healthz answers 503 with them when any. */
  problems?: () => Promise<string[]>
  /** Prometheus text exposition of this process's OpenTelemetry metrics, served at /metrics. */
  metricsHandler?: (req: IncomingMessage, res: ServerResponse) => void
  /** Where unexpected errors (5xx) are reported. */
  onError?: (err: unknown) => void
}

/** A run is final this long after its last end record (well past the processor's lateness grace and flush interval). */
const FINAL_AFTER_MS = 30_000
/** Reports, timelines and run infos of finished runs kept. */
const CACHE_ENTRIES = 2000
/** How long the run list is reused. */
const LIST_TTL_MS = 1000

export function build(config: ApiConfig, deps: ApiDeps): FastifyInstance {
  const app = Fastify({
    logger: config.logRequests ? { level: 'info' } : false,
    // 1 MiB: the largest body is an ad hoc query of at most 256 KiB.
    bodyLimit: 1024 * 1024,
    clientErrorHandler,
    http: { maxHeaderSize: 16 * 1024 },
  }).withTypeProvider<TypeBoxTypeProvider>()
  typeboxValidators(app)
  errorShape(app, (err) => deps.onError?.(err))
  accessControl(app, { token: config.token, allowedHosts: config.allowedHosts })
  // Before the routes: it records each route as it is added (an onRoute hook), so they are registered in a plugin
  // loaded after it.
  void app.register(swagger, { openapi: OPENAPI_INFO })
  void app.register(routes(config, deps))
  return app
}

/** Where the API serves its OpenAPI document (under the same access rules as every route). */
export const OPENAPI_PATH = '/api/v1/openapi.json'

const OPENAPI_INFO = {
  openapi: '3.0.3',
  info: {
    title: 'Benchstream API',
    version: '1',
    description:
      'Runs, reports, comparisons, alerts and silences, ad hoc SQL, CPU profiles and the live view. Every error is ' +
      '{ statusCode, code: "BS_ERR_*", error, message } (the ClickHouse endpoint /clickhouse/ answers as ClickHouse ' +
      'does). With API_TOKEN set, every route but /healthz needs Authorization: Bearer <API_TOKEN>.',
  },
  components: { schemas: { ErrorReply } },
}

const routes =
  (config: ApiConfig, deps: ApiDeps): FastifyPluginAsyncTypebox =>
  async (app) => {
    // Finished runs do not change: their reports and timelines are computed once.
    const rm = new CachedReadModel(deps.readModel, {
      finalAfterMs: FINAL_AFTER_MS,
      maxEntries: CACHE_ENTRIES,
      listTtlMs: LIST_TTL_MS,
    })
    // The live view at / and its event streams (services/api/live/).
    const live = liveView(rm, { ...config.live, onError: (err) => deps.onError?.(err) })
    void app.register(live.plugin)
    app.get('/healthz', async (_req, reply) => {
      const problems = (await deps.problems?.()) ?? []
      return reply
        .status(problems.length === 0 ? 200 : 503)
        .send({ ok: problems.length === 0, problems, ...deps.status?.(), live: live.stats })
    })

    app.get('/api/v1/runs', { schema: { querystring: RunsQuery } }, async (req) => ({
      runs: await rm.listRuns(req.query.limit ?? 100, {
        ...(req.query.group === undefined ? {} : { group: req.query.group }),
        labels: labelTerms(req.query.label),
      }),
    }))

    app.get(
      '/api/v1/runs/:runId/report',
      { schema: { params: RunIdParams, querystring: ReportQuery } },
      async (req, reply) => {
        // A summary run's report is its clients' YCSB reports as printed (origin 'reported').
        const report = await readRunReport(rm, req.params.runId)
        if (req.query.format === 'text') return reply.type('text/plain; charset=utf-8').send(formatAnyRunReport(report))
        return report
      },
    )

    app.get(
      '/api/v1/runs/:runId/timeline',
      { schema: { params: RunIdParams, querystring: TimelineQuery } },
      async (req) => ({
        runId: req.params.runId,
        points: await rm.timeline(req.params.runId, req.query.since ?? 0),
      }),
    )

    app.get('/api/v1/runs/:runId/figures', { schema: { params: RunIdParams } }, async (req) => {
      const [figures] = await rm.runFigures([req.params.runId])
      if (figures === undefined)
        throw new BenchstreamError(
          'BS_ERR_NOT_FOUND',
          `run ${JSON.stringify(req.params.runId)} has no data; list runs with GET /api/v1/runs`,
        )
      return figures
    })

    // Release A vs release B (services/core/compare/release.ts): runs, groups or label selectors.
    app.get('/api/v1/compare', { schema: { querystring: CompareQuery } }, async (req, reply) => {
      const q = req.query
      const c = await compareReleases(rm, q.baseline, q.candidate, {
        ...(q.alpha === undefined ? {} : { alpha: q.alpha }),
        ...(q.minEffect === undefined ? {} : { minEffect: q.minEffect }),
        force: q.force === true,
        ...(q.by === undefined ? {} : { by: q.by }),
        ...(q.test === undefined ? {} : { test: q.test }),
        ...(deps.profiles === undefined ? {} : { profileChanges: profileComparison(deps.profiles) }),
      })
      if (q.format === 'markdown' || q.format === 'text')
        return reply
          .type('text/plain; charset=utf-8')
          .send(formatComparison(c, q.format === 'markdown' ? 'markdown' : 'terminal'))
      return c
    })

    app.get('/api/v1/history', { schema: { querystring: HistoryQuery } }, async (req) => {
      const q = req.query
      return releaseHistory(rm, {
        label: q.label,
        ...(q.workload === undefined ? {} : { workload: q.workload }),
        ...(q.op === undefined ? {} : { op: q.op }),
        ...(q.figure === undefined ? {} : { figure: q.figure }),
        filter: labelTerms(q.filter),
      })
    })

    // Alert incidents (GET /api/v1/alerts) and silences (services/api/alerts.ts).
    void app.register(alertRoutes, { readModel: rm, silences: deps.silences, now: deps.now ?? Date.now })

    app.get('/api/v1/dead-letters', async () => ({ byReason: await rm.deadLetterCounts() }))

    // Ad hoc SQL for people without a ClickHouse client, streamed (ad-hoc-query.ts).
    adHocQueryRoute(app, deps.adHoc, deps.onError)

    // The same guard and access rules in ClickHouse's HTTP dialect, for Grafana's ClickHouse plugin and curl.
    clickhouseHttp(app, {
      adHoc: deps.adHoc,
      access: { token: config.token, allowedHosts: config.allowedHosts },
      database: deps.database,
      ...(deps.onError === undefined ? {} : { onError: deps.onError }),
    })

    if (deps.profiles !== undefined) void app.register(profileRoutes, { store: deps.profiles })
    if (deps.experiments !== undefined) void app.register(experimentRoutes, { store: deps.experiments })

    const metricsHandler = deps.metricsHandler
    if (metricsHandler !== undefined) {
      app.get('/metrics', (req, reply) => {
        // The exporter writes the response itself.
        reply.hijack()
        metricsHandler(req.raw, reply.raw)
      })
    }

    app.get(OPENAPI_PATH, async () => app.swagger())
  }

/** `key=value` terms (already checked by the schema) as a map; a key given twice is refused. */
function labelTerms(terms: readonly string[] | undefined): Record<string, string> {
  const out: Record<string, string> = {}
  for (const t of terms ?? []) {
    const eq = t.indexOf('=')
    const k = t.slice(0, eq)
    if (Object.hasOwn(out, k))
      throw new BenchstreamError('BS_ERR_BAD_REQUEST', `label ${k} is given twice; a run has one value per label`)
    out[k] = t.slice(eq + 1)
  }
  return out
}
