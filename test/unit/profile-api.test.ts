/**
 * The profile routes without infrastructure (an in-memory ProfileStore):
 * flame graphs as nested-set rows or SVG, differential ones, the frame
 * list, uploads checked like Kafka records, and the errors' shape.
 */
import assert from 'node:assert/strict'
import { test } from 'node:test'
import { build } from '../../services/api/app.js'
import { readApiConfig } from '../../services/api/config.js'
import type { AdHocQueries } from '../../services/core/ports/ad-hoc-queries.js'
import type { ProfileSelection, ProfileStore } from '../../services/core/ports/profile-store.js'
import type { ReadModel } from '../../services/core/ports/read-model.js'
import type { Folded } from '../../services/core/profiles/folded.js'
import type { Profile } from '../../services/core/profiles/profile.js'

/** Profiles by run, in memory. */
function memoryStore(): ProfileStore & { stored: Array<{ profile: Profile; id: string; origin: string }> } {
  const stored: Array<{ profile: Profile; id: string; origin: string }> = []
  const pick = (sel: ProfileSelection) =>
    stored.filter(
      (s) =>
        sel.runIds?.includes(s.profile.runId) === true &&
        Object.entries(sel.labels ?? {}).every(([k, v]) => s.profile.labels[k] === v),
    )
  return {
    stored,
    store: async (profile, id, origin) => {
      const created = !stored.some((s) => s.id === id)
      if (created) stored.push({ profile, id, origin })
      return {
        profileId: id,
        created,
        stacks: profile.stacks.size,
        newStacks: 0,
        samples: [...profile.stacks.values()].reduce((a, b) => a + b, 0),
      }
    },
    list: async (sel) =>
      pick(sel).map((s) => ({
        profileId: s.id,
        runId: s.profile.runId,
        labels: s.profile.labels,
        event: s.profile.event,
        intervalNs: s.profile.intervalNs,
        source: s.profile.source,
        fromMs: s.profile.fromUs / 1000,
        toMs: s.profile.toUs / 1000,
        samples: 0,
        slices: 1,
        cpuMs: null,
      })),
    runs: async () =>
      [...new Set(stored.map((s) => s.profile.runId))].map((runId) => ({
        runId,
        profiles: 1,
        samples: 0,
        fromMs: 0,
        toMs: 0,
      })),
    stacks: async (sel) => {
      const out: Folded = new Map()
      for (const s of pick(sel)) for (const [k, v] of s.profile.stacks) out.set(k, (out.get(k) ?? 0) + v)
      return out
    },
  }
}

const prof = (runId: string, stacks: Array<[string, number]>): Profile => ({
  runId,
  labels: { host: 'rs1' },
  fromUs: 1e15,
  toUs: 1e15 + 1e6,
  event: 'cpu',
  intervalNs: 1e7,
  source: 'test',
  stacks: new Map(stacks),
})

function app(store: ProfileStore) {
  return build(readApiConfig({ API_PORT: '0' }), {
    readModel: {} as ReadModel,
    adHoc: {} as AdHocQueries,
    database: 'benchstream',
    profiles: store,
  })
}

test('flame graph, differential flame graph and the frame list of stored profiles', async () => {
  const store = memoryStore()
  await store.store(
    prof('a', [
      ['main;work;hot', 10],
      ['main;work;cold', 45],
      ['main;work;warm', 45],
    ]),
    'p-a',
    'test',
  )
  await store.store(
    prof('b', [
      ['main;work;hot', 40],
      ['main;work;cold', 80],
      ['main;work;warm', 80],
    ]),
    'p-b',
    'test',
  )
  const a = app(store)
  const fg = await a.inject({ url: '/api/v1/profiles/flamegraph?run=a' })
  assert.equal(fg.statusCode, 200)
  const g = fg.json<{
    total: number
    rows: Array<{ level: number; label: string; value: number; self: number; x: number }>
  }>()
  assert.equal(g.total, 100)
  assert.deepEqual(
    g.rows.map((r) => [r.level, r.label, r.value, r.self, r.x]),
    [
      [0, 'all', 100, 0, 0],
      [1, 'main', 100, 0, 0],
      [2, 'work', 100, 0, 0],
      [3, 'cold', 45, 45, 0],
      [3, 'hot', 10, 10, 45],
      [3, 'warm', 45, 45, 55],
    ],
  )
  const merged = (await a.inject({ url: '/api/v1/profiles/flamegraph?run=a,b' })).json<{ total: number }>()
  assert.equal(merged.total, 300, 'runs in one parameter are merged')

  const svg = await a.inject({ url: '/api/v1/profiles/flamegraph?run=a&format=svg&width=800' })
  assert.equal(svg.statusCode, 200)
  assert.match(String(svg.headers['content-type']), /^image\/svg\+xml/)
  assert.match(svg.body, /<svg version="1\.1" width="800"/)

  const diff = (await a.inject({ url: '/api/v1/profiles/diff-flamegraph?baseline=a&candidate=b' })).json<{
    total: number
    baselineTotal: number
    rows: Array<{ label: string; selfDelta: number; value: number; baselineValue: number }>
  }>()
  assert.deepEqual([diff.total, diff.baselineTotal], [200, 100])
  const hot = diff.rows.find((r) => r.label === 'hot')!
  assert.deepEqual([hot.value, hot.baselineValue, Math.round(hot.selfDelta * 1e6) / 1e6], [40, 10, 10])
  const frames = (await a.inject({ url: '/api/v1/profiles/diff?baseline=a&candidate=b&limit=1' })).json<{
    unit: string
    self: Array<{ frame: string; change: number }>
    total: Array<{ frame: string; change: number }>
  }>()
  assert.equal(frames.unit, 'percentage points')
  assert.equal(frames.self.length, 1)
  assert.equal(frames.self[0]!.frame, 'hot')
  assert.ok(Math.abs(frames.self[0]!.change - 10) < 1e-9)
  assert.equal(frames.total[0]!.frame, 'hot')
  const page = await a.inject({ url: '/profiles' })
  assert.match(String(page.headers['content-type']), /^text\/html/)
  assert.match(page.body, /function frameColor\(name\)/, "the SVG export's colours, embedded")
  assert.equal((await a.inject({ url: '/api/v1/profiles/runs' })).json<{ runs: unknown[] }>().runs.length, 2)
})

test('errors: no selection, no samples, bad parameters, malformed uploads (nothing stored)', async () => {
  const store = memoryStore()
  const a = app(store)
  const none = await a.inject({ url: '/api/v1/profiles/flamegraph' })
  assert.equal(none.statusCode, 400)
  assert.match(none.json<{ message: string }>().message, /name the runs: run=A\[,B\.\.\.\] or group=G/)
  const empty = await a.inject({ url: '/api/v1/profiles/flamegraph?run=nothing-here' })
  assert.equal(empty.statusCode, 404)
  assert.equal(empty.json<{ code: string }>().code, 'BS_ERR_NOT_FOUND')
  assert.match(empty.json<{ message: string }>().message, /no profile samples for run nothing-here/)
  const bad = await a.inject({ url: '/api/v1/profiles/diff?baseline=a b&candidate=b' })
  assert.equal(bad.statusCode, 400)
  assert.match(bad.json<{ message: string }>().message, /baseline/)
  const fmt = await a.inject({ url: '/api/v1/profiles/flamegraph?run=a&format=png' })
  assert.equal(fmt.statusCode, 400)

  const upload = {
    profileId: 'p-up',
    runId: 'r-up',
    fromUs: 1.7e15,
    toUs: 1.7e15 + 1e6,
    event: 'cpu',
    frames: ['main', 'work'],
    stacks: [[3, 0, 1]],
  }
  const badIndex = await a.inject({
    method: 'POST',
    url: '/api/v1/profiles',
    payload: { ...upload, stacks: [[3, 0, 2]] },
  })
  assert.equal(badIndex.statusCode, 400)
  assert.equal(badIndex.json<{ code: string }>().code, 'BS_ERR_BAD_REQUEST')
  assert.match(
    badIndex.json<{ message: string }>().message,
    /invalid profile \(invalid_record\): stacks\[0\]\[2\]: frame index 2; the record has 2 frames/,
  )
  const badShape = await a.inject({ method: 'POST', url: '/api/v1/profiles', payload: { ...upload, frames: 'main' } })
  assert.equal(badShape.statusCode, 400)
  assert.match(badShape.json<{ message: string }>().message, /frames: got "main"/)
  assert.equal(store.stored.length, 0, 'nothing stored')
  const ok = await a.inject({ method: 'POST', url: '/api/v1/profiles', payload: { ...upload, origin: 'x.collapsed' } })
  assert.equal(ok.statusCode, 201)
  assert.deepEqual(ok.json(), { profileId: 'p-up', created: true, stacks: 1, newStacks: 0, samples: 3 })
  assert.equal(store.stored[0]!.origin, 'x.collapsed')
  assert.equal(
    (await a.inject({ method: 'POST', url: '/api/v1/profiles', payload: upload })).statusCode,
    200,
    'the same profile again: stored before',
  )
})

test('without a ProfileStore the profile routes are not served', async () => {
  const a = build(readApiConfig({ API_PORT: '0' }), {
    readModel: {} as ReadModel,
    adHoc: {} as AdHocQueries,
    database: 'benchstream',
  })
  assert.equal((await a.inject({ url: '/api/v1/profiles/flamegraph?run=a' })).statusCode, 404)
})
