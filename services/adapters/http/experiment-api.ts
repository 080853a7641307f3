/**
 * The experiment store (ExperimentStore port) through a running server's
 * API: the coordinator may run on any machine, and with the embedded engine
 * only the server can write its ClickHouse. PUT /api/v1/experiments/:id with
 * the whole state, GET it back, GET the list.
 */
import type { ExperimentState } from '../../../schemas/experiment-state.v1.js'
import type { ExperimentList, ExperimentSummary } from '../../../schemas/experiments-api.v1.js'
import { BenchstreamError, ERROR_CODES, type ErrorCode } from '../../core/errors.js'
import type { ExperimentStore } from '../../core/ports/experiment-store.js'

/** One request's limit: a large state travels in one PUT. */
const REQUEST_TIMEOUT_MS = 30_000

export class ApiExperimentStore implements ExperimentStore {
  constructor(
    private readonly api: string,
    private readonly token: string | undefined,
  ) {}

  async save(state: ExperimentState): Promise<void> {
    await this.request('PUT', `/api/v1/experiments/${encodeURIComponent(state.id)}`, JSON.stringify(state))
  }

  async load(id: string): Promise<ExperimentState | undefined> {
    const r = await this.request('GET', `/api/v1/experiments/${encodeURIComponent(id)}`, undefined, true)
    if (r === undefined) return undefined
    // The answer adds the decision the API computes from the state (its headline); it is no part of the state a
    // resumed coordinator stores back.
    const { decision: _, ...state } = JSON.parse(r) as ExperimentState & { decision?: unknown }
    return state
  }

  async list(limit: number): Promise<ExperimentSummary[]> {
    const r = await this.request('GET', `/api/v1/experiments?limit=${limit}`)
    return (JSON.parse(r!) as ExperimentList).experiments
  }

  private async request(method: string, path: string, body?: string, notFoundOk = false): Promise<string | undefined> {
    let res: Response
    try {
      res = await fetch(`${this.api}${path}`, {
        method,
        headers: {
          ...(body === undefined ? {} : { 'content-type': 'application/json' }),
          ...(this.token === undefined ? {} : { authorization: `Bearer ${this.token}` }),
        },
        ...(body === undefined ? {} : { body }),
        signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS),
      })
    } catch (err) {
      throw new BenchstreamError(
        'BS_ERR_TIMEOUT',
        `the Benchstream API at ${this.api} did not answer: ${(err as Error).message}`,
        {
          cause: err,
        },
      )
    }
    const text = await res.text()
    if (res.status === 404 && notFoundOk) return undefined
    if (!res.ok) {
      let code: ErrorCode = 'BS_ERR_BAD_REQUEST'
      let message = `the API answered HTTP ${res.status}: ${text.slice(0, 500)}`
      try {
        const e = JSON.parse(text) as { code?: string; message?: string }
        if (typeof e.code === 'string' && e.code in ERROR_CODES) {
          code = e.code as ErrorCode
          message = e.message ?? message
        }
      } catch {
        // not JSON: keep the status line
      }
      throw new BenchstreamError(code, message)
    }
    return text
  }
}
