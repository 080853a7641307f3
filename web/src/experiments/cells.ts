/**
 * The matrix's rule, as services/core/experiments/state.ts has it (cellStatus, formatMatrix: ✓ done, ▶ running,
 * ✗ failed, · left). The page cannot import the server's code, so the rule is written here again, typed from the
 * same schema; test/e2e/experiment-page.test.ts checks every cell against cellStatus().
 */
import type { Plan } from '../../../schemas/experiment-plan.v1.js'
import type { Cell, ExperimentState } from '../../../schemas/experiment-state.v1.js'

export type CellStatus = 'done' | 'running' | 'failed' | 'left'

/** Retries when the plan does not say (PLAN_DEFAULTS.retries in services/core/experiments/plan.ts). */
const DEFAULT_RETRIES = 1
export const MARK: Record<CellStatus, string> = { done: '✓', running: '▶', failed: '✗', left: '·' }

export const maxAttempts = (plan: Plan): number => 1 + (plan.retries == null ? DEFAULT_RETRIES : plan.retries)

/** As cellStatus in services/core/experiments/state.ts: done, running, failed when its attempts are used up. */
export function cellStatus(cell: Cell, plan: Plan): CellStatus {
  if (cell.attempts.some((a) => a.state === 'done')) return 'done'
  if (cell.attempts.some((a) => a.state === 'running')) return 'running'
  if (cell.attempts.length >= maxAttempts(plan)) return 'failed'
  return 'left'
}

export function countsOf(state: ExperimentState): Record<CellStatus, number> {
  const out = { done: 0, running: 0, failed: 0, left: 0 }
  for (const c of state.cells) out[cellStatus(c, state.plan)]++
  return out
}

/** The run the frame shows: the current one, else the one started last. */
export function runToShow(state: ExperimentState): string {
  if (state.currentRun) return state.currentRun
  let best: Cell['attempts'][number] | null = null
  for (const c of state.cells)
    for (const a of c.attempts) if (best == null || (a.startedAtMs || 0) >= (best.startedAtMs || 0)) best = a
  return best ? best.runId : ''
}
