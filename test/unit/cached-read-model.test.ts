/**
 * The API's cache of finished runs: a run that ended longer ago than the
 * grace is computed once; a running (or just ended) one every time; the
 * cache is bounded; the run list is reused for a second only.
 */
import assert from 'node:assert/strict'
import { test } from 'node:test'
import { CachedReadModel } from '../../services/api/cached-read-model.js'
import type { ReadModel, RunInfo, RunReport } from '../../services/core/ports/read-model.js'

function fake(
  endedAt: Record<string, string | null>,
  alertStates: Record<string, Array<'firing' | 'resolved'>> = {},
): { rm: ReadModel; calls: Record<string, number> } {
  const calls: Record<string, number> = {}
  const count = (k: string): void => void (calls[k] = (calls[k] ?? 0) + 1)
  const run = (id: string): RunInfo => ({ run_id: id, ended_at: endedAt[id] ?? null }) as unknown as RunInfo
  const rm = {
    getRun: async (id: string) => (count(`run:${id}`), run(id)),
    runReport: async (id: string) => (
      count(`report:${id}`),
      { runId: id, run: run(id), alerts: (alertStates[id] ?? []).map((state) => ({ state })) } as unknown as RunReport
    ),
    timeline: async (id: string) => (count(`timeline:${id}`), []),
    listRuns: async () => (count('list'), []),
  } as unknown as ReadModel
  return { rm, calls }
}

test('finished runs are computed once, running ones every time; the list for a second', async () => {
  let now = Date.parse('2026-12-03T10:00:00Z')
  const { rm, calls } = fake({ done: '2026-12-03 09:59:00.000000', fresh: '2026-12-03 09:59:50.000000', running: null })
  const c = new CachedReadModel(rm, { finalAfterMs: 30_000, maxEntries: 3, listTtlMs: 1000, now: () => now })
  for (let i = 0; i < 5; i++) {
    await c.runReport('done')
    await c.runReport('fresh')
    await c.runReport('running')
    await c.timeline('done', 0)
  }
  assert.equal(calls['report:done'], 1)
  assert.equal(calls['report:fresh'], 5, 'ended 10 s ago: late windows may still come')
  assert.equal(calls['report:running'], 5)
  assert.equal(calls['timeline:done'], 1)
  now += 30_000 // the fresh run is final now
  await c.runReport('fresh')
  await c.runReport('fresh')
  assert.equal(calls['report:fresh'], 6)
  await c.listRuns(10)
  await c.listRuns(10)
  assert.equal(calls.list, 1)
  now += 1000
  await c.listRuns(10) // served at once, refreshed in the background
  await new Promise((r) => setImmediate(r))
  assert.equal(calls.list, 2)
  assert.ok(c.stats.hits > 0 && c.stats.misses > 0)
})

test('the cache is bounded: the least recently used entries go', async () => {
  const ended: Record<string, string> = {}
  for (let i = 0; i < 10; i++) ended[`r${i}`] = '2026-01-01 00:00:00.000000'
  const { rm, calls } = fake(ended)
  const c = new CachedReadModel(rm, { finalAfterMs: 1000, maxEntries: 3, listTtlMs: 1000 })
  for (let i = 0; i < 10; i++) await c.runReport(`r${i}`)
  await c.runReport('r9') // kept
  await c.runReport('r0') // evicted long ago
  assert.equal(calls['report:r9'], 1)
  assert.equal(calls['report:r0'], 2)
})

test("a finished run's report is kept only once none of its alerts is firing", async () => {
  const now = Date.parse('2026-12-03T10:00:00Z')
  const states: Record<string, Array<'firing' | 'resolved'>> = { done: ['resolved', 'firing'] }
  const { rm, calls } = fake({ done: '2026-12-03 09:59:00.000000' }, states)
  const c = new CachedReadModel(rm, { finalAfterMs: 30_000, maxEntries: 3, listTtlMs: 1000, now: () => now })
  await c.runReport('done')
  await c.runReport('done')
  assert.equal(calls['report:done'], 2, 'an alert still firing will be resolved: read again')
  states.done = ['resolved', 'resolved']
  await c.runReport('done')
  await c.runReport('done')
  assert.equal(calls['report:done'], 3)
})

test('identical requests arriving together share one computation', async () => {
  let calls = 0
  const rm = {
    getRun: async () => undefined,
    runReport: async (id: string) => {
      calls++
      await new Promise((r) => setTimeout(r, 20))
      return { runId: id, run: undefined, alerts: [] } as unknown as RunReport
    },
  } as unknown as ReadModel
  const c = new CachedReadModel(rm, { finalAfterMs: 1000, maxEntries: 10, listTtlMs: 1000 })
  const all = await Promise.all(Array.from({ length: 50 }, () => c.runReport('live')))
  assert.equal(calls, 1, 'one computation for 50 concurrent requests of a running run')
  assert.ok(all.every((r) => r === all[0]))
  await c.runReport('live')
  assert.equal(calls, 2, 'a running run is computed again once the burst is over')
})
