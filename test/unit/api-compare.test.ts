/**
 * The release routes of the API over a fake read model: run filters (a
 * misspelt parameter is refused, not ignored), compare (JSON and Markdown,
 * not comparable is 409), history, and a run's figures.
 */
import assert from 'node:assert/strict'
import { test } from 'node:test'
import type { ReleaseComparison, ReleaseHistory } from '../../schemas/compare-api.v1.js'
import type { OpFigures, RunFigures, RunInfo } from '../../schemas/runs-api.v1.js'
import { build } from '../../services/api/app.js'
import { readApiConfig } from '../../services/api/config.js'
import type { AdHocQueries } from '../../services/core/ports/ad-hoc-queries.js'
import type { ReadModel, RunFilter } from '../../services/core/ports/read-model.js'

const runs: RunInfo[] = ['a1', 'a2', 'a3', 'b1', 'b2', 'b3'].map((id) => ({
  run_id: id,
  started_at: `2026-12-03 10:00:0${id.slice(1)}.000000`,
  ended_at: null,
  clients: 1,
  clients_ended: 1,
  threads: id.startsWith('b') && id !== 'b1' ? 2 : 1,
  target: 0,
  labels: { version: id.startsWith('a') ? '1.0' : '1.1' },
  workload: 'workloada',
  binding: 'memory',
  sent: {},
  undelivered: 0,
  runtime_ms: 1000,
  window_ms: 1000,
  group_id: id.slice(0, 1),
  repeat: Number(id.slice(1)),
  properties: {},
  schedule_lag_max_ms: 0,
  behind_schedule_episodes: 0,
  expected_clients: 0,
  start_skew_ms: null,
  clock_offset_max_ms: null,
}))
const filters: RunFilter[] = []
const figures = (id: string): RunFigures => ({
  runId: id,
  runtimeMs: 1000,
  serverCache: [],
  // OVERALL alone is no operation in common (release.ts): every run has READ.
  ops: ['OVERALL', 'READ'].map(
    (op) => ({ op, opsPerSec: 100 + Number(id.slice(1)), operations: 100, errors: 0, errorRate: 0 }) as OpFigures,
  ),
})
const readModel = {
  listRuns: async (_limit: number, filter: RunFilter = {}) => {
    filters.push(filter)
    return runs
      .filter(
        (r) =>
          (filter.group === undefined || r.group_id === filter.group) &&
          Object.entries(filter.labels ?? {}).every(([k, v]) => r.labels[k] === v) &&
          (filter.hasLabel === undefined || filter.hasLabel in r.labels),
      )
      .map((r) => ({ ...r, operations: 1 }))
  },
  getRun: async (id: string) => runs.find((r) => r.run_id === id),
  runFigures: async (ids: readonly string[]) => ids.filter((id) => runs.some((r) => r.run_id === id)).map(figures),
  windowFigures: async () => [],
} as unknown as ReadModel
const adHoc = {
  stream: async () => assert.fail('no SQL here'),
  close: async () => undefined,
} as unknown as AdHocQueries
const app = build(readApiConfig({ API_PORT: '0' }), { readModel, adHoc, database: 'benchstream' })

test(
  'GET /api/v1/runs filters by group and labels (repeatable); unknown parameters and malformed ' + 'terms are refused',
  async () => {
    filters.length = 0
    const one = await app.inject({ method: 'GET', url: '/api/v1/runs?label=version=1.1' })
    assert.equal(one.statusCode, 200)
    assert.deepEqual(
      one.json<{ runs: RunInfo[] }>().runs.map((r) => r.run_id),
      ['b1', 'b2', 'b3'],
    )
    const two = await app.inject({ method: 'GET', url: '/api/v1/runs?label=version=1.1&label=host=x&group=b&limit=5' })
    assert.equal(two.statusCode, 200)
    assert.deepEqual(filters, [{ labels: { version: '1.1' } }, { group: 'b', labels: { version: '1.1', host: 'x' } }])
    for (const [url, re] of [
      ['/api/v1/runs?lable=version=1', /lable/],
      ['/api/v1/runs?label=version', /label/],
      ['/api/v1/runs?group=a%20b', /group/],
      ['/api/v1/runs?label=v=1&label=v=2', /label v is given twice/],
    ] as const) {
      const r = await app.inject({ method: 'GET', url })
      assert.equal(r.statusCode, 400, url)
      assert.equal(r.json<{ code: string }>().code, 'BS_ERR_BAD_REQUEST')
      assert.match(r.json<{ message: string }>().message, re, url)
    }
  },
)

test(
  'GET /api/v1/compare: JSON, Markdown, 409 when the setups differ, 404 when a side matches nothing, ' +
    '400 for what the schema refuses',
  async () => {
    const refused = await app.inject({ method: 'GET', url: '/api/v1/compare?baseline=group:a&candidate=group:b' })
    assert.equal(refused.statusCode, 409)
    assert.equal(refused.json<{ code: string }>().code, 'BS_ERR_NOT_COMPARABLE')
    assert.match(
      refused.json<{ message: string }>().message,
      /threads: 1 vs 1 \| 2 \(between sides, within candidate\)/,
    )
    const ok = await app.inject({
      method: 'GET',
      url: '/api/v1/compare?baseline=version=1.0&candidate=b1&force=true&alpha=0.01&minEffect=0.05',
    })
    assert.equal(ok.statusCode, 200)
    const c = ok.json<ReleaseComparison>()
    assert.deepEqual(
      [c.baseline.runs, c.candidate.runs, c.alpha, c.minEffect, c.comparable],
      [['a1', 'a2', 'a3'], ['b1'], 0.01, 0.05, true],
    )
    const md = await app.inject({ method: 'GET', url: '/api/v1/compare?baseline=group:a&candidate=b1&format=markdown' })
    assert.equal(md.statusCode, 200)
    assert.match(md.headers['content-type'] as string, /^text\/plain/)
    assert.match(md.body, /^### `group:a` → `b1`/)
    const missing = await app.inject({ method: 'GET', url: '/api/v1/compare?baseline=group:zzz&candidate=b1' })
    assert.equal(missing.statusCode, 404)
    for (const url of [
      '/api/v1/compare?baseline=a1',
      '/api/v1/compare?baseline=a1&candidate=b1&alpha=1',
      '/api/v1/compare?baseline=a1&candidate=b1&format=pdf',
      '/api/v1/compare?baseline=a1&candidate=b1&verbose=1',
    ]) {
      assert.equal((await app.inject({ method: 'GET', url })).statusCode, 400, url)
    }
  },
)

test('GET /api/v1/history and /api/v1/runs/:id/figures', async () => {
  const h = await app.inject({
    method: 'GET',
    url: '/api/v1/history?label=version&figure=throughput&filter=version=1.0',
  })
  assert.equal(h.statusCode, 200)
  const body = h.json<ReleaseHistory>()
  assert.deepEqual(
    body.points.map((p) => [p.value, p.center]),
    [['1.0', 102]],
  )
  assert.equal((await app.inject({ method: 'GET', url: '/api/v1/history?label=version&figure=speed' })).statusCode, 400)
  const f = await app.inject({ method: 'GET', url: '/api/v1/runs/a1/figures' })
  assert.equal(f.statusCode, 200)
  assert.equal(f.json<RunFigures>().ops[0]!.opsPerSec, 101)
  const none = await app.inject({ method: 'GET', url: '/api/v1/runs/zz/figures' })
  assert.equal(none.statusCode, 404)
  assert.equal(none.json<{ code: string }>().code, 'BS_ERR_NOT_FOUND')
})
