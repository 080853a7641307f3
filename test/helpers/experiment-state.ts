/**
 * A realistic experiment state for the API and the experiment page: a plan
 * checked by the coordinator's own checkPlan, cells from newExperiment, then
 * attempts marked by hand as a coordinator would have left them: warm-up and
 * early repetitions done, a run retried after an agent went silent, a cell
 * whose attempts are used up, one running, the rest left.
 */
import type { Attempt, ExperimentState } from '../../schemas/experiment-state.v1.js'
import { checkPlan } from '../../services/core/experiments/plan.js'
import { runIdOf } from '../../services/core/experiments/matrix.js'
import { newExperiment } from '../../services/core/experiments/state.js'

/** Two setups, two workloads, one warm-up run and three repetitions each, two clients a run, one retry. */
export const PLAN = {
  version: 1,
  name: 'web-ab',
  description: 'the experiment page against a hand-made state',
  binding: 'memory',
  clients: 2,
  threads: 2,
  target: 400,
  seconds: 20,
  repetitions: 3,
  warmup: 1,
  retries: 1,
  workloads: [{ file: 'workloads/workloada' }, { file: 'workloads/workloadc' }],
  setups: [
    { name: 'base', labels: { version: '1.0' } },
    { name: 'slow', labels: { version: '1.1' }, properties: { 'memory.delay.read': 200 } },
  ],
} as const

const SECOND = 1000

export function attempt(runId: string, state: Attempt['state'], atMs: number, extra: Partial<Attempt> = {}): Attempt {
  const done = state === 'done'
  return {
    runId,
    state,
    clients: [
      { agent: 'a1', clientId: 'c1', state: done ? 'ended' : 'started', operations: done ? 4000 : 0, clockOffsetMs: 3 },
      {
        agent: 'a2',
        clientId: 'c2',
        state: done ? 'ended' : 'started',
        operations: done ? 4000 : 0,
        clockOffsetMs: -12,
      },
    ],
    startedAtMs: atMs,
    endedAtMs: state === 'running' ? null : atMs + 20 * SECOND,
    startSkewMs: state === 'running' ? null : 2.4,
    maxClockOffsetMs: 12,
    counted: done ? 8000 : null,
    sent: done ? 8000 : null,
    ...extra,
  }
}

/**
 * The state at `nowMs`: of 16 cells (run order: per workload the warm-up runs, then repetition k of every setup),
 * the first 9 are done (one after a retry), the 10th failed twice (its attempts used up), the 11th running its
 * second attempt, the rest left.
 */
export function experimentState(id: string, nowMs: number): ExperimentState {
  const plan = checkPlan(structuredClone(PLAN), 'the test plan')
  const s = newExperiment(id, plan, nowMs - 600 * SECOND)
  let at = s.createdAtMs + 5 * SECOND
  const next = (): number => (at += 25 * SECOND)
  s.cells.forEach((c, i) => {
    if (i < 9) {
      if (i === 3)
        c.attempts.push(
          attempt(runIdOf(c, 1), 'incomplete', next(), { reason: 'agent a2 went silent for 5 s (agentTimeoutS)' }),
        )
      c.attempts.push(attempt(runIdOf(c, c.attempts.length + 1), 'done', next()))
    } else if (i === 9) {
      c.attempts.push(attempt(runIdOf(c, 1), 'failed', next(), { reason: 'client c2 failed: exit code 1' }))
      c.attempts.push(attempt(runIdOf(c, 2), 'incomplete', next(), { reason: 'client c1 ended 1 of 2' }))
    } else if (i === 10) {
      c.attempts.push(attempt(runIdOf(c, 1), 'incomplete', next(), { reason: 'agent a1 restarted' }))
      c.attempts.push(attempt(runIdOf(c, 2), 'running', next()))
      s.currentRun = runIdOf(c, 2)
    }
  })
  s.steps.push(
    { setup: 'base', phase: 'start', agent: 'a1', state: 'done', atMs: s.createdAtMs + SECOND },
    {
      setup: 'slow',
      phase: 'flush',
      agent: 'a1',
      state: 'failed',
      atMs: s.createdAtMs + 2 * SECOND,
      output: 'flush: connection refused\n(retried, then went on)',
    },
  )
  s.notes.push('run web-ab-x-base-workloada-2 incomplete: agent a2 went silent; retried')
  s.comparisons.push({
    baseline: 'base',
    candidate: 'slow',
    workload: 'workloada',
    regressions: ['READ p99 +41.0%', 'READ p50 +38.2%'],
    improvements: [],
    baselineRuns: ['r1', 'r2', 'r3'],
    candidateRuns: ['r4', 'r5', 'r6'],
    files: ['compare-base-slow-workloada.md'],
  })
  s.updatedAtMs = nowMs
  s.version = 11
  return s
}
