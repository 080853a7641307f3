/**
 * GET /api/v1/alerts and the silence routes without infrastructure (the
 * read model and the silence store are small fakes): parameters validated
 * with the API's one error shape, filters handed to the read model as given,
 * paging by cursor, silences created, listed, fetched and expired in
 * Alertmanager's shape, and a refused silence answered 400 with its reason.
 */
import assert from 'node:assert/strict'
import { test } from 'node:test'
import type { Silence } from '../../schemas/alerts-api.v1.js'
import { build } from '../../services/api/app.js'
import { readApiConfig } from '../../services/api/config.js'
import type { SilenceSpec } from '../../services/core/alerting/silences.js'
import type { AdHocQueries } from '../../services/core/ports/ad-hoc-queries.js'
import { NO_AD_HOC } from '../helpers/ad-hoc-fake.js'
import type { SilenceStore } from '../../services/core/ports/alerts.js'
import type {
  Alert,
  AlertFilter,
  AlertPageRequest,
  AlertsPage,
  ReadModel,
} from '../../services/core/ports/read-model.js'

const NOW = Date.UTC(2026, 0, 10, 12, 0, 0)

function alertAt(i: number): Alert {
  return {
    fingerprint: i.toString(16).padStart(16, '0'),
    rule: 'BenchstreamThroughputDrop',
    ruleType: 'drop_vs_baseline',
    severity: 'warning',
    runId: 'r1',
    op: 'READ',
    state: i % 2 === 0 ? 'resolved' : 'firing',
    startsAt: new Date(NOW - i * 1000).toISOString(),
    endsAt: i % 2 === 0 ? new Date(NOW - i * 1000 + 500).toISOString() : null,
    value: 10,
    threshold: 700,
    summary: `drop ${i}`,
    description: '',
    resolvedSummary: null,
    silencedBy: null,
  }
}

/** Five incidents, newest first; the fake pages like the ClickHouse read model (cursor = startsAt ms-fingerprint). */
function fakeReadModel(): { rm: ReadModel; asked: Array<{ filter: AlertFilter; page: AlertPageRequest }> } {
  const all = [1, 2, 3, 4, 5].map(alertAt)
  const asked: Array<{ filter: AlertFilter; page: AlertPageRequest }> = []
  const key = (a: Alert): string => `${Date.parse(a.startsAt)}-${a.fingerprint}`
  const rm = {
    alerts: async (filter: AlertFilter, page: AlertPageRequest): Promise<AlertsPage> => {
      asked.push({ filter, page })
      const rest = all.filter(
        (a) =>
          (filter.state === undefined || a.state === filter.state) &&
          (page.cursor === undefined || key(a) < page.cursor),
      )
      const alerts = rest.slice(0, page.limit)
      return { alerts, nextCursor: rest.length > page.limit ? key(alerts[alerts.length - 1]!) : null }
    },
  } as unknown as ReadModel
  return { rm, asked }
}

class MemorySilences implements SilenceStore {
  readonly versions: SilenceSpec[] = []
  async current(nowMs: number): Promise<SilenceSpec[]> {
    return (await this.list(1000)).filter((s) => s.endsAtMs === undefined || s.endsAtMs > nowMs)
  }
  async list(limit: number): Promise<SilenceSpec[]> {
    const latest = new Map<string, SilenceSpec>()
    for (const s of this.versions) latest.set(s.id, s)
    return [...latest.values()].reverse().slice(0, limit)
  }
  async get(id: string): Promise<SilenceSpec | undefined> {
    return (await this.list(1000)).find((s) => s.id === id)
  }
  async save(s: SilenceSpec): Promise<void> {
    this.versions.push(s)
  }
}

const adHoc: AdHocQueries = NO_AD_HOC

function app(rm: ReadModel, silences?: SilenceStore, clock = { now: NOW }) {
  return build(readApiConfig({ API_PORT: '0' }), {
    readModel: rm,
    adHoc,
    database: 'benchstream',
    ...(silences === undefined ? {} : { silences }),
    now: () => clock.now,
  })
}

test('GET /api/v1/alerts hands the filters to the read model and pages with nextCursor', async () => {
  const { rm, asked } = fakeReadModel()
  const a = app(rm)
  const since = NOW - 3600_000
  const first = await a.inject({
    method: 'GET',
    url: `/api/v1/alerts?run=r1&state=firing&rule=BenchstreamThroughputDrop&since=${since}&limit=1`,
  })
  assert.equal(first.statusCode, 200, first.body)
  assert.deepEqual(asked[0], {
    filter: { runId: 'r1', state: 'firing', rule: 'BenchstreamThroughputDrop', sinceMs: since },
    page: { limit: 1 },
  })
  const p1 = first.json<AlertsPage>()
  assert.deepEqual(
    p1.alerts.map((x) => x.summary),
    ['drop 1'],
  )
  assert.notEqual(p1.nextCursor, null)
  const second = await a.inject({ method: 'GET', url: `/api/v1/alerts?state=firing&limit=1&cursor=${p1.nextCursor}` })
  const p2 = second.json<AlertsPage>()
  assert.deepEqual(
    p2.alerts.map((x) => x.summary),
    ['drop 3'],
  )
  const third = await a.inject({ method: 'GET', url: `/api/v1/alerts?state=firing&limit=1&cursor=${p2.nextCursor}` })
  assert.deepEqual(third.json<AlertsPage>(), { alerts: [alertAt(5)], nextCursor: null })
  // Without a limit: a page of 100.
  await a.inject({ method: 'GET', url: '/api/v1/alerts' })
  assert.deepEqual(asked.at(-1), { filter: {}, page: { limit: 100 } })
})

test('GET /api/v1/alerts refuses bad parameters in the one error shape', async () => {
  const a = app(fakeReadModel().rm)
  for (const [query, words] of [
    ['state=open', /state/],
    ['rule=not%20a%20name', /rule/],
    ['run=-bad', /run/],
    ['since=-5', /since/],
    ['limit=0', /limit/],
    ['limit=1001', /limit/],
    ['cursor=abc', /cursor/],
    ['severity=warning', /severity: is not a field/],
  ] as const) {
    const res = await a.inject({ method: 'GET', url: `/api/v1/alerts?${query}` })
    assert.equal(res.statusCode, 400, query)
    const b = res.json<{ statusCode: number; code: string; message: string }>()
    assert.equal(b.code, 'BS_ERR_BAD_REQUEST', query)
    assert.match(b.message, words, `${query}: ${b.message}`)
  }
})

test('silences: created, listed by state, fetched, expired; refused ones say why', async () => {
  const store = new MemorySilences()
  const clock = { now: NOW }
  const a = app(fakeReadModel().rm, store, clock)
  const created = await a.inject({
    method: 'POST',
    url: '/api/v1/silences',
    payload: {
      matchers: [
        { name: 'alertname', value: 'BenchstreamBelowTarget', isEqual: true, isRegex: false },
        { name: 'run_id', value: 'r1' },
      ],
      createdBy: 'ann',
      comment: 'the target is known to be too high',
    },
  })
  assert.equal(created.statusCode, 201, created.body)
  const s = created.json<Silence>()
  assert.match(s.id, /^[0-9a-f-]{36}$/)
  assert.deepEqual(
    { ...s, id: '' },
    {
      id: '',
      matchers: [
        { name: 'alertname', value: 'BenchstreamBelowTarget', isEqual: true },
        { name: 'run_id', value: 'r1', isEqual: true },
      ],
      startsAt: new Date(NOW).toISOString(),
      endsAt: null,
      createdBy: 'ann',
      comment: 'the target is known to be too high',
      updatedAt: new Date(NOW).toISOString(),
      status: { state: 'active' },
    },
  )
  const timed = await a.inject({
    method: 'POST',
    url: '/api/v1/silences',
    payload: {
      matchers: [{ name: 'severity', value: 'warning' }],
      startsAt: new Date(NOW + 60_000).toISOString(),
      endsAt: new Date(NOW + 3600_000).toISOString(),
    },
  })
  assert.equal(timed.statusCode, 201, timed.body)
  const list = async (q = ''): Promise<string[]> =>
    (await a.inject({ method: 'GET', url: `/api/v1/silences${q}` }))
      .json<{ silences: Silence[] }>()
      .silences.map((x) => `${x.status.state} ${x.matchers[0]!.value}`)
  assert.deepEqual(await list(), ['pending warning', 'active BenchstreamBelowTarget'])
  assert.deepEqual(await list('?state=active'), ['active BenchstreamBelowTarget'])

  const one = await a.inject({ method: 'GET', url: `/api/v1/silences/${s.id}` })
  assert.equal(one.json<Silence>().id, s.id)
  clock.now = NOW + 5000
  const expired = await a.inject({ method: 'DELETE', url: `/api/v1/silences/${s.id}` })
  assert.equal(expired.statusCode, 200)
  assert.deepEqual(
    [expired.json<Silence>().status.state, expired.json<Silence>().endsAt],
    ['expired', new Date(NOW + 5000).toISOString()],
  )
  assert.deepEqual(await list('?state=expired'), ['expired BenchstreamBelowTarget'])
  assert.equal((await store.current(clock.now)).length, 1, 'the engine no longer sees the expired one')

  const missing = await a.inject({ method: 'DELETE', url: '/api/v1/silences/00000000-0000-0000-0000-000000000000' })
  assert.equal(missing.statusCode, 404)
  assert.equal(missing.json<{ code: string }>().code, 'BS_ERR_NOT_FOUND')
  for (const [payload, words] of [
    [{ matchers: [{ name: 'alertname', value: 'X' }] }, /endsAt is required unless a run_id matcher/],
    [{ matchers: [] }, /matchers/],
    [{ matchers: [{ name: 'instance', value: 'X' }], endsAt: '2099-01-01T00:00:00Z' }, /name/],
    [{ matchers: [{ name: 'op', value: 'READ', isRegex: true }], endsAt: '2099-01-01T00:00:00Z' }, /isRegex/],
    [{ matchers: [{ name: 'op', value: 'READ' }], endsAt: 'tomorrow' }, /endsAt/],
  ] as const) {
    const res = await a.inject({ method: 'POST', url: '/api/v1/silences', payload })
    assert.equal(res.statusCode, 400, JSON.stringify(payload))
    assert.match(res.json<{ message: string }>().message, words)
  }
})
