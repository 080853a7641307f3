/**
 * Where the release commands (runs, compare, history, sweep, alerts) read from: a
 * running Benchstream API (BENCHSTREAM_API_URL, or the server holding this
 * data directory, found through its server.json), else ClickHouse itself.
 * In the embedded mode the server owns the data directory, so the API is
 * the only way in while it runs; both ways compute with the same core code.
 */
import { randomUUID } from 'node:crypto'
import { ClickHouseSilenceStore } from '../adapters/clickhouse/alerts.js'
import { openClickHouse, type ClickHouse } from '../adapters/clickhouse/client.js'
import { ClickHouseProfileStore } from '../adapters/clickhouse/profile-store.js'
import { ClickHouseReadModel } from '../adapters/clickhouse/read-model.js'
import type { AlertsPage, Silence, SilenceBody } from '../../schemas/alerts-api.v1.js'
import type { ReleaseComparison, ReleaseHistory } from '../../schemas/compare-api.v1.js'
import type { RunReport } from '../../schemas/run-reports-api.v1.js'
import type { RunFigures, RunInfo } from '../../schemas/runs-api.v1.js'
import { readCliEnv } from '../common/cli-env.js'
import type { Env } from '../common/config.js'
import { readInfraConfig } from '../common/infra-config.js'
import { findServer } from '../common/server-file.js'
import { releaseHistory, type HistoryOptions } from '../core/compare/history.js'
import { profileComparison } from '../core/compare/profile-changes.js'
import { compareReleases, type CompareOptions } from '../core/compare/release.js'
import { expireSilence, newSilence, silenceView } from '../core/alerting/silences.js'
import { BenchstreamError, ERROR_CODES, isBenchstreamError, type ErrorCode } from '../core/errors.js'
import type { AlertFilter, AlertPageRequest, RunFilter } from '../core/ports/read-model.js'

export interface Reader {
  /** The API's URL or ClickHouse's location, for messages. */
  readonly where: string
  /** True when a server's API answers (its processor counts new runs). */
  readonly viaApi: boolean
  runs(limit: number, filter: RunFilter): Promise<RunInfo[]>
  report(runId: string): Promise<RunReport>
  figures(runId: string): Promise<RunFigures>
  compare(
    baseline: string,
    candidate: string,
    options: Pick<CompareOptions, 'alpha' | 'minEffect' | 'force' | 'by' | 'test'>,
  ): Promise<ReleaseComparison>
  history(options: HistoryOptions): Promise<ReleaseHistory>
  alerts(filter: AlertFilter, page: AlertPageRequest): Promise<AlertsPage>
  silences(): Promise<Silence[]>
  createSilence(body: SilenceBody): Promise<Silence>
  expireSilence(id: string): Promise<Silence>
  close(): Promise<void>
}

/** Silences a listing shows at most. */
const MAX_SILENCES_LISTED = 1000

/** The API of a running server when there is one (BENCHSTREAM_API_URL, or server.json in the data directory). */
export function apiOf(env: Env): { api: string | undefined; token: string | undefined } {
  const cliEnv = readCliEnv(env)
  const infra = readInfraConfig(env)
  return {
    api: cliEnv.apiUrl ?? (infra.clickhouse.url === undefined ? findServer(infra.dataDir)?.apiUrl : undefined),
    token: cliEnv.apiToken,
  }
}

export function openReader(env: Env): Reader {
  const { api, token } = apiOf(env)
  if (api !== undefined) return new ApiReader(api, token)
  const infra = readInfraConfig(env)
  return new DirectReader(openClickHouse(infra.clickhouse), infra.clickhouse.database)
}

/** An API error answer ({ code, message }) as the error it stands for. */
export function apiError(status: number, body: string): BenchstreamError {
  try {
    const e = JSON.parse(body) as { code?: string; message?: string }
    if (typeof e.code === 'string' && e.code in ERROR_CODES)
      return new BenchstreamError(e.code as ErrorCode, e.message ?? `HTTP ${status}`)
  } catch {
    // not JSON: fall through
  }
  return new BenchstreamError('BS_ERR_BAD_REQUEST', `the API answered HTTP ${status}: ${body.slice(0, 500)}`)
}

class ApiReader implements Reader {
  readonly viaApi = true
  constructor(
    readonly where: string,
    private readonly token: string | undefined,
  ) {}

  private async get<T>(
    path: string,
    params: Array<[string, string]> = [],
    method: 'GET' | 'POST' | 'DELETE' = 'GET',
    payload?: unknown,
  ): Promise<T> {
    const qs = params.length === 0 ? '' : `?${new URLSearchParams(params).toString()}`
    let res: Response
    try {
      res = await fetch(`${this.where}${path}${qs}`, {
        method,
        headers: {
          ...(this.token === undefined ? {} : { authorization: `Bearer ${this.token}` }),
          ...(payload === undefined ? {} : { 'content-type': 'application/json' }),
        },
        ...(payload === undefined ? {} : { body: JSON.stringify(payload) }),
      })
    } catch (err) {
      throw new BenchstreamError(
        'BS_ERR_TIMEOUT',
        `the Benchstream API at ${this.where} did not answer: ${(err as Error).message}`,
        { cause: err },
      )
    }
    const body = await res.text()
    if (!res.ok) throw apiError(res.status, body)
    return JSON.parse(body) as T
  }

  async runs(limit: number, filter: RunFilter): Promise<RunInfo[]> {
    const params: Array<[string, string]> = [['limit', String(limit)]]
    if (filter.group !== undefined) params.push(['group', filter.group])
    for (const [k, v] of Object.entries(filter.labels ?? {})) params.push(['label', `${k}=${v}`])
    return (await this.get<{ runs: RunInfo[] }>('/api/v1/runs', params)).runs
  }

  report(runId: string): Promise<RunReport> {
    return this.get(`/api/v1/runs/${encodeURIComponent(runId)}/report`)
  }

  figures(runId: string): Promise<RunFigures> {
    return this.get(`/api/v1/runs/${encodeURIComponent(runId)}/figures`)
  }

  compare(
    baseline: string,
    candidate: string,
    o: Pick<CompareOptions, 'alpha' | 'minEffect' | 'force' | 'by' | 'test'>,
  ): Promise<ReleaseComparison> {
    const params: Array<[string, string]> = [
      ['baseline', baseline],
      ['candidate', candidate],
    ]
    if (o.alpha !== undefined) params.push(['alpha', String(o.alpha)])
    if (o.minEffect !== undefined) params.push(['minEffect', String(o.minEffect)])
    if (o.force === true) params.push(['force', 'true'])
    if (o.by !== undefined) params.push(['by', o.by])
    if (o.test !== undefined) params.push(['test', o.test])
    return this.get('/api/v1/compare', params)
  }

  history(o: HistoryOptions): Promise<ReleaseHistory> {
    const params: Array<[string, string]> = [['label', o.label]]
    if (o.workload !== undefined) params.push(['workload', o.workload])
    if (o.op !== undefined) params.push(['op', o.op])
    if (o.figure !== undefined) params.push(['figure', o.figure])
    for (const [k, v] of Object.entries(o.filter ?? {})) params.push(['filter', `${k}=${v}`])
    return this.get('/api/v1/history', params)
  }

  alerts(f: AlertFilter, page: AlertPageRequest): Promise<AlertsPage> {
    const params: Array<[string, string]> = [['limit', String(page.limit)]]
    if (f.runId !== undefined) params.push(['run', f.runId])
    if (f.state !== undefined) params.push(['state', f.state])
    if (f.rule !== undefined) params.push(['rule', f.rule])
    if (f.sinceMs !== undefined) params.push(['since', String(f.sinceMs)])
    if (page.cursor !== undefined) params.push(['cursor', page.cursor])
    return this.get('/api/v1/alerts', params)
  }

  async silences(): Promise<Silence[]> {
    return (await this.get<{ silences: Silence[] }>('/api/v1/silences')).silences
  }

  createSilence(body: SilenceBody): Promise<Silence> {
    return this.get('/api/v1/silences', [], 'POST', body)
  }

  expireSilence(id: string): Promise<Silence> {
    return this.get(`/api/v1/silences/${encodeURIComponent(id)}`, [], 'DELETE')
  }

  async close(): Promise<void> {}
}

class DirectReader implements Reader {
  readonly viaApi = false
  private readonly rm: ClickHouseReadModel
  constructor(
    private readonly ch: ClickHouse,
    private readonly database: string,
  ) {
    this.rm = new ClickHouseReadModel(ch)
  }

  get where(): string {
    return this.ch.location
  }

  /** Engine errors in words: a directory no server has set up yet, or ClickHouse failing. */
  private async call<T>(fn: () => Promise<T>): Promise<T> {
    try {
      return await fn()
    } catch (err) {
      if (isBenchstreamError(err)) throw err
      const msg = (err as Error).message.trim()
      if (/Database \S+ does(n't| not) exist|UNKNOWN_DATABASE|Unknown table expression identifier/.test(msg)) {
        throw new BenchstreamError(
          'BS_ERR_NOT_FOUND',
          `no Benchstream data in ${this.ch.location} yet (database ${this.database} or its views do not ` +
            `exist): \`benchstream server\` or \`benchstream demo\` creates them`,
          { cause: err },
        )
      }
      throw new BenchstreamError('BS_ERR_CLICKHOUSE', `ClickHouse at ${this.ch.location}: ${msg}`, { cause: err })
    }
  }

  runs(limit: number, filter: RunFilter): Promise<RunInfo[]> {
    return this.call(() => this.rm.listRuns(limit, filter))
  }

  report(runId: string): Promise<RunReport> {
    return this.call(() => this.rm.runReport(runId))
  }

  figures(runId: string): Promise<RunFigures> {
    return this.call(async () => {
      const [f] = await this.rm.runFigures([runId])
      if (f === undefined)
        throw new BenchstreamError(
          'BS_ERR_NOT_FOUND',
          `run ${JSON.stringify(runId)} has no data in ${this.ch.location}`,
        )
      return f
    })
  }

  compare(
    baseline: string,
    candidate: string,
    o: Pick<CompareOptions, 'alpha' | 'minEffect' | 'force' | 'by' | 'test'>,
  ): Promise<ReleaseComparison> {
    return this.call(() =>
      compareReleases(this.rm, baseline, candidate, {
        ...o,
        profileChanges: profileComparison(new ClickHouseProfileStore(this.ch)),
      }),
    )
  }

  history(o: HistoryOptions): Promise<ReleaseHistory> {
    return this.call(() => releaseHistory(this.rm, o))
  }

  alerts(f: AlertFilter, page: AlertPageRequest): Promise<AlertsPage> {
    return this.call(() => this.rm.alerts(f, page))
  }

  silences(): Promise<Silence[]> {
    return this.call(async () => {
      const now = Date.now()
      return (await new ClickHouseSilenceStore(this.ch).list(MAX_SILENCES_LISTED)).map((x) => silenceView(x, now))
    })
  }

  createSilence(body: SilenceBody): Promise<Silence> {
    return this.call(async () => {
      const now = Date.now()
      const x = newSilence(body, randomUUID(), now)
      await new ClickHouseSilenceStore(this.ch).save(x)
      return silenceView(x, now)
    })
  }

  expireSilence(id: string): Promise<Silence> {
    return this.call(async () => {
      const store = new ClickHouseSilenceStore(this.ch)
      const now = Date.now()
      const x = await store.get(id)
      if (x === undefined)
        throw new BenchstreamError('BS_ERR_NOT_FOUND', `no silence ${JSON.stringify(id)} in ${this.ch.location}`)
      const expired = expireSilence(x, now)
      if (expired !== x) await store.save(expired)
      return silenceView(expired, now)
    })
  }

  close(): Promise<void> {
    return this.ch.close()
  }
}
