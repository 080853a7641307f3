/**
 * The runs of a plan (services/core/experiments/matrix.ts): their order
 * (interleaved and rotated, warm-up first, or grouped), cell keys and groups,
 * run ids (retries, and the short fallback for names too long for an id), and
 * how a total is split over the clients.
 */
import assert from 'node:assert/strict'
import { test } from 'node:test'
import { ID_PATTERN } from '../../schemas/events.v1.js'
import type { Plan } from '../../schemas/experiment-plan.v1.js'
import {
  buildCells,
  cellKey,
  experimentIdOf,
  groupId,
  keyRange,
  runIdOf,
  share,
} from '../../services/core/experiments/matrix.js'
import { checkPlan } from '../../services/core/experiments/plan.js'

function plan(setups: string[], extra: Partial<Plan> = {}): Plan {
  return checkPlan(
    {
      version: 1,
      name: 'm',
      binding: 'memory',
      clients: 2,
      seconds: 1,
      repetitions: 3,
      workloads: [{ file: 'workloads/workloada' }],
      setups: setups.map((name) => ({ name })),
      compare: [],
      ...extra,
    },
    'the test plan',
  )
}

/** The cells as `setup:r<k>` / `setup:w<k>`, in run order. */
const order = (p: Plan, workload?: string): string[] =>
  buildCells(p, 'x')
    .filter((c) => workload === undefined || c.workload === workload)
    .map((c) => `${c.setup}:${c.warmup ? 'w' : 'r'}${c.repetition}`)

test('interleaved (the default): repetition k of every setup, rotated by k', () => {
  assert.deepEqual(order(plan(['A', 'B'])), ['A:r1', 'B:r1', 'B:r2', 'A:r2', 'A:r3', 'B:r3'])
  assert.deepEqual(
    order(plan(['A', 'B', 'C'])),
    [
      ['A:r1', 'B:r1', 'C:r1'],
      ['B:r2', 'C:r2', 'A:r2'],
      ['C:r3', 'A:r3', 'B:r3'],
    ].flat(),
  )
  // Every setup runs first once in each round of as many repetitions as setups.
  const firsts = order(plan(['A', 'B', 'C'])).filter((_, i) => i % 3 === 0)
  assert.deepEqual(
    firsts.map((c) => c[0]!).sort((x, y) => x.localeCompare(y)),
    ['A', 'B', 'C'],
  )
})

test('warm-up runs first, per workload, never rotated; workloads one after the other', () => {
  const p = plan(['A', 'B'], {
    warmup: 2,
    repetitions: 2,
    workloads: [{ file: 'workloads/workloada' }, { file: 'workloadc', name: 'reads' }],
  })
  const expected = ['A:w1', 'B:w1', 'A:w2', 'B:w2', 'A:r1', 'B:r1', 'B:r2', 'A:r2']
  assert.deepEqual(order(p, 'workloada'), expected)
  assert.deepEqual(order(p, 'reads'), expected)
  assert.deepEqual(
    buildCells(p, 'x').map((c) => c.workload),
    [...Array<string>(8).fill('workloada'), ...Array<string>(8).fill('reads')],
  )
})

test('grouped: every run of a setup (warm-up first), workload by workload, then the next setup', () => {
  const p = plan(['A', 'B'], {
    order: 'grouped',
    warmup: 1,
    repetitions: 2,
    workloads: [{ file: 'workloada' }, { file: 'workloadc' }],
  })
  assert.deepEqual(
    buildCells(p, 'x').map((c) => `${c.setup}/${c.workload}/${c.warmup ? 'w' : 'r'}${c.repetition}`),
    [
      ['A/workloada/w1', 'A/workloada/r1', 'A/workloada/r2', 'A/workloadc/w1', 'A/workloadc/r1', 'A/workloadc/r2'],
      ['B/workloada/w1', 'B/workloada/r1', 'B/workloada/r2', 'B/workloadc/w1', 'B/workloadc/r1', 'B/workloadc/r2'],
    ].flat(),
  )
})

test('cells: keys, groups (warm-up runs a group of their own), no attempts', () => {
  const cells = buildCells(plan(['A', 'B'], { warmup: 1, repetitions: 1 }), 'exp-1')
  assert.deepEqual(
    cells.map((c) => [c.key, c.group]),
    [
      ['workloada/A/warmup1', 'exp-1-A-workloada-warmup'],
      ['workloada/B/warmup1', 'exp-1-B-workloada-warmup'],
      ['workloada/A/run1', 'exp-1-A-workloada'],
      ['workloada/B/run1', 'exp-1-B-workloada'],
    ],
  )
  for (const c of cells) assert.deepEqual(c.attempts, [])
  assert.equal(cellKey('w', 's', 3, false), 'w/s/run3')
  assert.equal(new Set(cells.map((c) => c.key)).size, cells.length)
})

test('run ids: <group>-<k>, a retry <group>-<k>.<attempt>', () => {
  const cell = { group: 'exp-1-A-workloada', repetition: 2 }
  assert.equal(runIdOf(cell, 1), 'exp-1-A-workloada-2')
  assert.equal(runIdOf(cell, 2), 'exp-1-A-workloada-2.2')
  assert.equal(runIdOf(cell, 3), 'exp-1-A-workloada-2.3')
})

test('names too long for an id: a short fallback that keeps the id rule, is stable and tells runs apart', () => {
  // A group of 60 characters (the id rule allows 64): `<group>-12.2` would not fit.
  const group = `${'e'.repeat(40)}-${'s'.repeat(19)}`
  assert.equal(group.length, 60)
  const ids = [1, 2, 3].flatMap((attempt) => [1, 12].map((repetition) => runIdOf({ group, repetition }, attempt)))
  for (const id of ids) {
    assert.match(id, ID_PATTERN)
    assert.ok(id.startsWith(group.slice(0, 48)), id)
  }
  assert.equal(new Set(ids).size, ids.length, 'every repetition and attempt its own id')
  assert.deepEqual(
    ids,
    [1, 2, 3].flatMap((attempt) => [1, 12].map((repetition) => runIdOf({ group, repetition }, attempt))),
    'the same id every time (a resumed coordinator finds its runs)',
  )
  // Groups: setup and workload names that make `<experiment>-<setup>-<workload>` too long.
  const exp = experimentIdOf('a-rather-long-experiment-name-for-a-release', Date.UTC(2026, 0, 1))
  assert.match(exp, ID_PATTERN)
  const long = 'x'.repeat(30)
  const groups = [false, true].flatMap((warmup) => [
    groupId(exp, `${long}-1`, long, warmup),
    groupId(exp, `${long}-2`, long, warmup),
  ])
  for (const g of groups) {
    assert.match(g, ID_PATTERN)
    assert.match(runIdOf({ group: g, repetition: 100 }, 6), ID_PATTERN)
  }
  assert.equal(new Set(groups).size, 4)
  assert.equal(groupId(exp, `${long}-1`, long, false), groups[0])
})

test('groups keep the id rule whatever the experiment id (--id allows 64 characters)', () => {
  for (const length of [40, 50, 60, 64]) {
    const exp = `exp${'x'.repeat(length - 3)}`
    assert.match(exp, ID_PATTERN)
    const groups = [false, true].flatMap((warmup) => [
      groupId(exp, 'A', 'workloada', warmup),
      groupId(exp, 'B', 'workloada', warmup),
      groupId(exp, 'A', 'workloadc', warmup),
    ])
    for (const g of groups) assert.match(g, ID_PATTERN, `${g} (${g.length} characters)`)
    assert.equal(new Set(groups).size, groups.length, groups.join(' '))
    assert.ok(groups.filter((g) => g.endsWith('-warmup')).length === 3, groups.join(' '))
  }
  // Two experiments whose long ids share a beginning get groups of their own.
  const a = `${'e'.repeat(60)}-a`
  const b = `${'e'.repeat(60)}-b`
  assert.notEqual(groupId(a, 'A', 'workloada', true), groupId(b, 'A', 'workloada', true))
})

test('share() splits a total exactly: the parts sum to it and differ by at most one', () => {
  for (const total of [0, 1, 2, 7, 600, 601, 1000, 999_999])
    for (const n of [1, 2, 3, 7, 64]) {
      const parts = Array.from({ length: n }, (_, i) => share(total, n, i))
      assert.equal(
        parts.reduce((a, b) => a + b, 0),
        total,
        `${total} over ${n}`,
      )
      assert.ok(Math.max(...parts) - Math.min(...parts) <= 1, `${total} over ${n}: ${parts.join(' ')}`)
      for (const x of parts) assert.ok(Number.isInteger(x) && x >= 0)
    }
  assert.deepEqual(
    [0, 1, 2].map((i) => share(601, 3, i)),
    [201, 200, 200],
  )
})

test('keyRange: n clients cover [start, start + count) exactly once, in order', () => {
  for (const start of [0, 5, 1_000_000])
    for (const count of [0, 1, 2, 10, 999, 1000])
      for (const n of [1, 2, 3, 4, 7, 64]) {
        const covered: number[] = []
        let next = start
        for (let i = 0; i < n; i++) {
          const r = keyRange(start, count, n, i)
          assert.equal(r.insertstart, next, `start ${start} count ${count} n ${n} client ${i}`)
          for (let k = r.insertstart; k < r.insertstart + r.insertcount; k++) covered.push(k)
          next = r.insertstart + r.insertcount
        }
        assert.equal(next, start + count)
        assert.deepEqual(
          covered,
          Array.from({ length: count }, (_, k) => start + k),
        )
      }
})
