/**
 * The experiment routes (services/api/experiments.ts) over a fake
 * ExperimentStore, with app.inject(): a PUT whose body is not an
 * ExperimentState is refused naming the field, a body naming another id is
 * refused, an unknown id is 404 BS_ERR_NOT_FOUND, the list is newest first
 * with each experiment's progress, and a newer version replaces an older
 * one; GET adds the headline of what the experiment decided (decision), the
 * one comparison.md and the CLI print. Also the experiment page and its files,
 * served from this machine under the same rules as the live view's.
 */
import assert from 'node:assert/strict'
import { test } from 'node:test'
import type { ExperimentState } from '../../schemas/experiment-state.v1.js'
import type { ExperimentList, ExperimentSummary } from '../../schemas/experiments-api.v1.js'
import { build } from '../../services/api/app.js'
import { readApiConfig } from '../../services/api/config.js'
import { decideExperiment } from '../../services/core/experiments/decision.js'
import { counts, summaryOf } from '../../services/core/experiments/state.js'
import type { AdHocQueries } from '../../services/core/ports/ad-hoc-queries.js'
import type { ExperimentStore } from '../../services/core/ports/experiment-store.js'
import type { ReadModel } from '../../services/core/ports/read-model.js'
import { experimentState } from '../helpers/experiment-state.js'
import { servedModules } from '../helpers/served-modules.js'

/** In memory, as the ClickHouse store behaves: the highest version of each wins, newest created first. */
class FakeExperimentStore implements ExperimentStore {
  readonly states = new Map<string, ExperimentState>()
  async save(s: ExperimentState): Promise<void> {
    const old = this.states.get(s.id)
    if (old === undefined || old.version <= s.version) this.states.set(s.id, structuredClone(s))
  }
  async load(id: string): Promise<ExperimentState | undefined> {
    return this.states.get(id)
  }
  async list(limit: number): Promise<ExperimentSummary[]> {
    return [...this.states.values()]
      .sort((a, b) => b.createdAtMs - a.createdAtMs || a.id.localeCompare(b.id))
      .slice(0, limit)
      .map(summaryOf)
  }
}

const readModel = { listRuns: async () => [] } as unknown as ReadModel
const adHoc = {
  stream: async () => assert.fail('no SQL here'),
  close: async () => undefined,
} as unknown as AdHocQueries

function app(store = new FakeExperimentStore(), env: Record<string, string> = {}) {
  return build(readApiConfig({ API_PORT: '0', ...env }), {
    readModel,
    adHoc,
    database: 'benchstream',
    experiments: store,
  })
}

const T = Date.UTC(2026, 11, 3, 10, 0, 0)

test('PUT stores a state, GET returns it; a newer version replaces it, an older one does not', async (t) => {
  const store = new FakeExperimentStore()
  const a = app(store)
  t.after(() => a.close())
  const s = experimentState('web-ab-1', T)
  const put = await a.inject({ method: 'PUT', url: '/api/v1/experiments/web-ab-1', payload: s })
  assert.equal(put.statusCode, 204, put.body)
  const got = await a.inject({ method: 'GET', url: '/api/v1/experiments/web-ab-1' })
  assert.equal(got.statusCode, 200)
  const { decision, ...state } = got.json<ExperimentState & { decision: unknown }>()
  assert.deepEqual(state, s)
  assert.deepEqual(decision, {
    outcome: 'running',
    lead: 'Running:',
    text: '9 of 16 runs done, 1 failed; nothing is decided before the end',
    headline: 'Running: 9 of 16 runs done, 1 failed; nothing is decided before the end',
    regressions: [],
    undecided: [],
  })

  const newer = structuredClone(s)
  newer.version++
  newer.currentRun = null
  newer.status = 'done'
  assert.equal((await a.inject({ method: 'PUT', url: '/api/v1/experiments/web-ab-1', payload: newer })).statusCode, 204)
  const older = { ...structuredClone(s), version: 3 }
  assert.equal((await a.inject({ method: 'PUT', url: '/api/v1/experiments/web-ab-1', payload: older })).statusCode, 204)
  const last = (await a.inject({ method: 'GET', url: '/api/v1/experiments/web-ab-1' })).json<Record<string, unknown>>()
  assert.deepEqual({ ...last, decision: undefined }, { ...newer, decision: undefined })
  // Ended with runs failed and left: the regressions it found are said, and that the rest is undecided.
  assert.deepEqual(last.decision, decideExperiment(newer))
  assert.equal(
    (last.decision as { headline: string }).headline,
    'Regressions: slow vs base, workloada: READ p99 +41.0%, READ p50 +38.2%. Undecided beyond them: 1 of 16 runs ' +
      'failed; 6 of 16 runs not run',
  )
})

test('a PUT whose body is not an ExperimentState is 400 naming the field', async (t) => {
  const a = app()
  t.after(() => a.close())
  const s = experimentState('web-ab-2', T)
  const cases: Array<[string, (x: Record<string, unknown>) => void, RegExp]> = [
    ['status not one of the allowed', (x) => (x.status = 'paused'), /status/],
    [
      'an attempt state misspelt',
      (x) => ((x.cells as ExperimentState['cells'])[0]!.attempts[0]!.state = 'dnoe' as 'done'),
      /cells\[0\]\.attempts\[0\]\.state: got "dnoe"/,
    ],
    ['cells missing', (x) => delete x.cells, /cells/],
    ['an unknown field', (x) => (x.colour = 'red'), /colour/],
    ['the plan without its binding', (x) => delete (x.plan as Record<string, unknown>).binding, /binding/],
  ]
  for (const [what, spoil, field] of cases) {
    const body = structuredClone(s) as unknown as Record<string, unknown>
    spoil(body)
    const r = await a.inject({ method: 'PUT', url: '/api/v1/experiments/web-ab-2', payload: body })
    assert.equal(r.statusCode, 400, `${what}: ${r.body}`)
    const e = r.json<{ code: string; message: string }>()
    assert.equal(e.code, 'BS_ERR_BAD_REQUEST', what)
    assert.match(e.message, /^invalid body: /, what)
    assert.match(e.message, field, `${what}: ${e.message}`)
  }
  const notJson = await a.inject({
    method: 'PUT',
    url: '/api/v1/experiments/web-ab-2',
    headers: { 'content-type': 'application/json' },
    payload: '{"id": ',
  })
  assert.equal(notJson.statusCode, 400)
  assert.equal(notJson.json<{ code: string }>().code, 'BS_ERR_BAD_REQUEST')
  // Nothing of it was stored.
  assert.equal((await a.inject({ method: 'GET', url: '/api/v1/experiments/web-ab-2' })).statusCode, 404)
})

test('a body naming another experiment than its address is refused; so is an id off the rule', async (t) => {
  const store = new FakeExperimentStore()
  const a = app(store)
  t.after(() => a.close())
  const s = experimentState('web-ab-3', T)
  const r = await a.inject({ method: 'PUT', url: '/api/v1/experiments/web-ab-other', payload: s })
  assert.equal(r.statusCode, 400)
  const e = r.json<{ code: string; message: string }>()
  assert.equal(e.code, 'BS_ERR_BAD_REQUEST')
  assert.match(e.message, /web-ab-3.*web-ab-other/)
  assert.equal(store.states.size, 0)
  const bad = await a.inject({ method: 'PUT', url: '/api/v1/experiments/a%20b', payload: s })
  assert.equal(bad.statusCode, 400)
  assert.match(bad.json<{ message: string }>().message, /id/)
})

test('GET of an unknown experiment is 404 BS_ERR_NOT_FOUND, pointing at the list', async (t) => {
  const a = app()
  t.after(() => a.close())
  const r = await a.inject({ method: 'GET', url: '/api/v1/experiments/nothing-here' })
  assert.equal(r.statusCode, 404)
  const e = r.json<{ code: string; message: string }>()
  assert.equal(e.code, 'BS_ERR_NOT_FOUND')
  assert.match(e.message, /"nothing-here".*GET \/api\/v1\/experiments/)
})

test('the list is newest first, with each experiment progress; limit bounds it', async (t) => {
  const store = new FakeExperimentStore()
  const a = app(store)
  t.after(() => a.close())
  // Stored out of order: the list is by creation, not by when it was stored.
  const states = [2, 0, 1].map((k) => {
    const s = experimentState(`web-ab-k${k}`, T + k * 3_600_000)
    if (k === 0) s.status = 'done'
    return s
  })
  for (const s of states)
    assert.equal((await a.inject({ method: 'PUT', url: `/api/v1/experiments/${s.id}`, payload: s })).statusCode, 204)
  const r = await a.inject({ method: 'GET', url: '/api/v1/experiments' })
  assert.equal(r.statusCode, 200)
  const list = r.json<ExperimentList>().experiments
  assert.deepEqual(
    list.map((e) => e.id),
    ['web-ab-k2', 'web-ab-k1', 'web-ab-k0'],
  )
  const k2 = states[0]!
  assert.deepEqual(list[0], {
    id: 'web-ab-k2',
    name: 'web-ab',
    status: 'running',
    createdAtMs: k2.createdAtMs,
    updatedAtMs: k2.updatedAtMs,
    runs: counts(k2),
    currentRun: k2.currentRun,
  })
  // The hand-made state: 9 done, 1 failed (attempts used up), 1 running, 5 left.
  assert.deepEqual(list[0].runs, { done: 9, running: 1, failed: 1, left: 5 })
  assert.equal(list[2]!.status, 'done')
  const one = await a.inject({ method: 'GET', url: '/api/v1/experiments?limit=1' })
  assert.deepEqual(
    one.json<ExperimentList>().experiments.map((e) => e.id),
    ['web-ab-k2'],
  )
  assert.equal((await a.inject({ method: 'GET', url: '/api/v1/experiments?limit=0' })).statusCode, 400)
  assert.equal((await a.inject({ method: 'GET', url: '/api/v1/experiments?limt=5' })).statusCode, 400)
})

test('the experiment page and its files are served from this machine, under the access rules', async (t) => {
  const a = app()
  t.after(() => a.close())
  const page = await a.inject({ method: 'GET', url: '/experiments' })
  assert.equal(page.statusCode, 200)
  assert.match(page.headers['content-type'] as string, /^text\/html/)
  const csp = page.headers['content-security-policy'] as string
  assert.match(csp, /default-src 'self'/)
  // The page embeds the live view (/?run=...) in a frame: only pages of this server may frame it.
  assert.match(csp, /frame-ancestors 'self'/)
  const live = await a.inject({ method: 'GET', url: '/' })
  assert.match(live.headers['content-security-policy'] as string, /frame-ancestors 'self'/)
  for (const src of ['/live/experiments/main.js', '/live/experiments.css', '/live/live-view.css']) {
    assert.ok(page.body.includes(`"${src}"`), `the page loads ${src}`)
    const r = await a.inject({ method: 'GET', url: src })
    assert.equal(r.statusCode, 200, src)
    assert.match(r.headers['content-type'] as string, src.endsWith('.js') ? /^text\/javascript/ : /^text\/css/)
    assert.doesNotMatch(r.body, /https?:\/\//, `${src}: nothing from outside`)
  }
  assert.doesNotMatch(page.body, /https?:\/\//, 'nothing from outside')
  const modules = await servedModules(a, '/live/experiments/main.js')
  for (const m of ['main', 'reading', 'cells', 'list', 'summary', 'matrix', 'comparisons', 'frame'])
    assert.ok(modules.has(`/live/experiments/${m}.js`), `${m}.js is loaded: ${[...modules].join(', ')}`)
  for (const m of modules)
    assert.doesNotMatch((await a.inject({ method: 'GET', url: m })).body, /https?:\/\//, `${m}: nothing from outside`)

  // With a token, the page is as closed as the API it reads.
  const closed = app(new FakeExperimentStore(), { API_TOKEN: 'a-token-of-enough-length-0123456789' })
  t.after(() => closed.close())
  assert.equal((await closed.inject({ method: 'GET', url: '/experiments' })).statusCode, 401)
  const opened = await closed.inject({
    method: 'GET',
    url: '/experiments',
    headers: { authorization: 'Bearer a-token-of-enough-length-0123456789' },
  })
  assert.equal(opened.statusCode, 200)
})
