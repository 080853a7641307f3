/**
 * Where an experiment stands (services/core/experiments/state.ts): each
 * cell's status from its attempts, what runs next, the counts, the runs that
 * are compared (complete ones only, never warm-up runs), the attempts a
 * stopped coordinator left running, and the matrix as text.
 */
import assert from 'node:assert/strict'
import { test } from 'node:test'
import type { Attempt, ExperimentState } from '../../schemas/experiment-state.v1.js'
import { runIdOf } from '../../services/core/experiments/matrix.js'
import { checkPlan } from '../../services/core/experiments/plan.js'
import {
  cellStatus,
  comparedRuns,
  counts,
  formatMatrix,
  maxAttempts,
  newExperiment,
  nextCell,
  summaryOf,
  unsettled,
} from '../../services/core/experiments/state.js'

const T0 = 1_750_000_000_000

/** Two setups, one warm-up run and two repetitions each: A:w1 B:w1 A:r1 B:r1 B:r2 A:r2. */
function fresh(retries?: number): ExperimentState {
  const plan = checkPlan(
    {
      version: 1,
      name: 'st',
      binding: 'memory',
      clients: 2,
      seconds: 1,
      repetitions: 2,
      warmup: 1,
      ...(retries === undefined ? {} : { retries }),
      workloads: [{ file: 'workloada' }],
      setups: [{ name: 'A' }, { name: 'B' }],
    },
    'the test plan',
  )
  return newExperiment('exp-1', plan, T0)
}

function attempt(runId: string, state: Attempt['state']): Attempt {
  return {
    runId,
    state,
    clients: [],
    startedAtMs: T0,
    endedAtMs: state === 'running' ? null : T0 + 1000,
    startSkewMs: null,
    maxClockOffsetMs: null,
    counted: null,
    sent: null,
  }
}

/** Gives the cells (in run order) attempts of these states, run ids as the coordinator makes them. */
function mark(s: ExperimentState, ...states: Array<Array<Attempt['state']>>): void {
  states.forEach((list, i) => {
    const cell = s.cells[i]!
    for (const st of list) cell.attempts.push(attempt(runIdOf(cell, cell.attempts.length + 1), st))
  })
}

test('a new experiment: every cell left, the first next, nothing to settle or compare', () => {
  const s = fresh()
  assert.equal(s.status, 'running')
  assert.equal(s.cells.length, 6)
  assert.deepEqual(counts(s), { done: 0, running: 0, failed: 0, left: 6 })
  assert.equal(nextCell(s), s.cells[0])
  assert.deepEqual(unsettled(s), [])
  assert.deepEqual(comparedRuns(s, 'A', 'workloada'), [])
  assert.deepEqual(summaryOf(s), {
    id: 'exp-1',
    name: 'st',
    status: 'running',
    createdAtMs: T0,
    updatedAtMs: T0,
    runs: { done: 0, running: 0, failed: 0, left: 6 },
    currentRun: null,
  })
})

test('cellStatus: done once an attempt is, running, failed when its attempts are used up, else left', () => {
  const s = fresh()
  assert.equal(maxAttempts(s.plan), 2, 'retries default to 1')
  assert.equal(maxAttempts(fresh(0).plan), 1)
  assert.equal(maxAttempts(fresh(3).plan), 4)
  const cell = s.cells[2]!
  const status = (...states: Array<Attempt['state']>): string => {
    cell.attempts = states.map((st, i) => attempt(runIdOf(cell, i + 1), st))
    return cellStatus(cell, s.plan)
  }
  assert.equal(status(), 'left')
  assert.equal(status('running'), 'running')
  assert.equal(status('done'), 'done')
  assert.equal(status('incomplete'), 'left', 'one retry left')
  assert.equal(status('failed'), 'left')
  assert.equal(status('incomplete', 'running'), 'running')
  assert.equal(status('failed', 'done'), 'done')
  assert.equal(status('incomplete', 'failed'), 'failed')
  // With no retries, the first attempt that does not count fails the cell.
  const none = fresh(0)
  none.cells[0]!.attempts.push(attempt('r', 'incomplete'))
  assert.equal(cellStatus(none.cells[0]!, none.plan), 'failed')
})

test('next, counts, unsettled and compared runs of an experiment under way', () => {
  const s = fresh()
  mark(
    s,
    ['done'], // A:w1
    ['incomplete', 'done'], // B:w1
    ['done'], // A:r1
    ['failed', 'incomplete'], // B:r1: attempts used up
    ['incomplete'], // B:r2: one retry left
    ['running'], // A:r2
  )
  assert.deepEqual(counts(s), { done: 3, running: 1, failed: 1, left: 1 })
  assert.equal(nextCell(s)?.key, 'workloada/B/run2')
  assert.deepEqual(
    unsettled(s).map((u) => [u.cell.key, u.attempt.runId]),
    [['workloada/A/run2', 'exp-1-A-workloada-2']],
  )
  // Warm-up runs, incomplete, failed and running attempts are never compared.
  assert.deepEqual(comparedRuns(s, 'A', 'workloada'), ['exp-1-A-workloada-1'])
  assert.deepEqual(comparedRuns(s, 'B', 'workloada'), [])
  assert.deepEqual(comparedRuns(s, 'A', 'workloadc'), [])
  s.cells[4]!.attempts.push(attempt(runIdOf(s.cells[4]!, 2), 'done'))
  s.cells[5]!.attempts[0]!.state = 'done'
  assert.deepEqual(comparedRuns(s, 'B', 'workloada'), ['exp-1-B-workloada-2.2'])
  assert.deepEqual(comparedRuns(s, 'A', 'workloada'), ['exp-1-A-workloada-1', 'exp-1-A-workloada-2'])
  assert.equal(nextCell(s), undefined)
  assert.deepEqual(unsettled(s), [])
  assert.deepEqual(counts(s), { done: 5, running: 0, failed: 1, left: 0 })
})

test('formatMatrix: a row per workload and setup, warm-up columns first, ✓ ▶ ✗ · and attempt counts', () => {
  const s = fresh()
  mark(s, ['done'], ['incomplete', 'done'], ['done'], ['failed', 'incomplete'], ['incomplete'], ['running'])
  s.currentRun = 'exp-1-A-workloada-2'
  for (let i = 1; i <= 6; i++) s.notes.push(`note ${i}`)
  const lines = formatMatrix(s).split('\n')
  assert.deepEqual(lines, [
    'experiment exp-1 (st): running; runs 3 done, 1 running, 1 failed, 1 left; now exp-1-A-workloada-2',
    'workload  setup  w1  r1  r2 ',
    'workloada  A     ✓   ✓   ▶  ',
    'workloada  B     ✓2  ✗2  ·  ',
    // The last five notes.
    'note: note 2',
    'note: note 3',
    'note: note 4',
    'note: note 5',
    'note: note 6',
    '',
  ])
})

test('formatMatrix: repetitions in numeric order (r10 after r9), warm-up runs before them', () => {
  const plan = checkPlan(
    {
      version: 1,
      name: 'many',
      binding: 'memory',
      clients: 1,
      seconds: 1,
      repetitions: 10,
      warmup: 2,
      workloads: [{ file: 'workloada' }],
      setups: [{ name: 'A' }],
      compare: [],
    },
    'the test plan',
  )
  const s = newExperiment('exp-2', plan, T0)
  s.status = 'done'
  const [head, header, row] = formatMatrix(s).split('\n')
  assert.equal(head, 'experiment exp-2 (many): done; runs 0 done, 0 running, 0 failed, 12 left')
  assert.deepEqual(header?.trim().split(/\s+/).slice(2), [
    'w1',
    'w2',
    'r1',
    'r2',
    'r3',
    'r4',
    'r5',
    'r6',
    'r7',
    'r8',
    'r9',
    'r10',
  ])
  assert.equal(row?.match(/·/g)?.length, 12)
})
