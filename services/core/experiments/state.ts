/**
 * Where an experiment stands, pure: its cells (one per workload, setup and
 * repetition) with their attempts, what runs next, what is left, and the
 * matrix as a person reads it. The coordinator keeps the state, stores it
 * through the API after every change, and a resumed coordinator starts from
 * the stored one.
 */
import type { Plan } from '../../../schemas/experiment-plan.v1.js'
import type { Attempt, Cell, ExperimentState } from '../../../schemas/experiment-state.v1.js'
import type { ExperimentSummary } from '../../../schemas/experiments-api.v1.js'
import { buildCells } from './matrix.js'
import { PLAN_DEFAULTS } from './plan.js'

export function newExperiment(id: string, plan: Plan, nowMs: number): ExperimentState {
  return {
    id,
    name: plan.name,
    status: 'running',
    plan,
    createdAtMs: nowMs,
    updatedAtMs: nowMs,
    version: 0,
    cells: buildCells(plan, id),
    steps: [],
    comparisons: [],
    notes: [],
    currentRun: null,
  }
}

export type CellStatus = 'done' | 'running' | 'failed' | 'left'

/** A cell is done when an attempt is; failed when its attempts are used up; left before its first. */
export function cellStatus(cell: Cell, plan: Plan): CellStatus {
  if (cell.attempts.some((a) => a.state === 'done')) return 'done'
  if (cell.attempts.some((a) => a.state === 'running')) return 'running'
  if (cell.attempts.length >= maxAttempts(plan)) return 'failed'
  return 'left'
}

export function maxAttempts(plan: Plan): number {
  return 1 + (plan.retries ?? PLAN_DEFAULTS.retries)
}

/** The next cell to run: the first neither done, running nor out of attempts. */
export function nextCell(state: ExperimentState): Cell | undefined {
  return state.cells.find((c) => cellStatus(c, state.plan) === 'left')
}

/** Attempts started but not settled (a coordinator that stopped left them so). */
export function unsettled(state: ExperimentState): Array<{ cell: Cell; attempt: Attempt }> {
  return state.cells.flatMap((cell) =>
    cell.attempts.filter((a) => a.state === 'running').map((attempt) => ({ cell, attempt })),
  )
}

export function counts(state: ExperimentState): ExperimentSummary['runs'] {
  const out = { done: 0, running: 0, failed: 0, left: 0 }
  for (const c of state.cells) out[cellStatus(c, state.plan)]++
  return out
}

export function summaryOf(state: ExperimentState): ExperimentSummary {
  return {
    id: state.id,
    name: state.name,
    status: state.status,
    createdAtMs: state.createdAtMs,
    updatedAtMs: state.updatedAtMs,
    runs: counts(state),
    currentRun: state.currentRun,
  }
}

/** The complete, compared runs of a setup and workload (warm-up runs and incomplete attempts never are). */
export function comparedRuns(state: ExperimentState, setup: string, workload: string): string[] {
  return state.cells
    .filter((c) => !c.warmup && c.setup === setup && c.workload === workload)
    .flatMap((c) => c.attempts.filter((a) => a.state === 'done').map((a) => a.runId))
}

const MARK: Record<CellStatus, string> = { done: '✓', running: '▶', failed: '✗', left: '·' }

/**
 * The matrix as text: one row per workload and setup, one column per
 * repetition (warm-up runs first, as w1, w2), each cell ✓ done, ▶ running,
 * ✗ failed or · left, with the number of attempts when more than one.
 */
export function formatMatrix(state: ExperimentState): string {
  const reps = new Map<string, string[]>()
  const rows = new Map<string, Map<string, string>>()
  for (const c of state.cells) {
    const row = `${c.workload}  ${c.setup}`
    const col = `${c.warmup ? 'w' : 'r'}${c.repetition}`
    if (!reps.has(col)) reps.set(col, [])
    let r = rows.get(row)
    if (r === undefined) rows.set(row, (r = new Map()))
    const tries = c.attempts.length > 1 ? `${c.attempts.length}` : ''
    r.set(col, `${MARK[cellStatus(c, state.plan)]}${tries}`)
  }
  const cols = [...reps.keys()].sort((a, b) =>
    a[0] === b[0] ? Number(a.slice(1)) - Number(b.slice(1)) : a[0] === 'w' ? -1 : 1,
  )
  const width = Math.max(...[...rows.keys()].map((k) => k.length), 'workload  setup'.length)
  const c = counts(state)
  const lines = [
    `experiment ${state.id} (${state.name}): ${state.status}; runs ${c.done} done, ${c.running} running, ` +
      `${c.failed} failed, ${c.left} left${state.currentRun === null ? '' : `; now ${state.currentRun}`}`,
    `${'workload  setup'.padEnd(width)}  ${cols.map((x) => x.padEnd(3)).join(' ')}`,
  ]
  for (const [row, cells] of rows)
    lines.push(`${row.padEnd(width)}  ${cols.map((x) => (cells.get(x) ?? '').padEnd(3)).join(' ')}`)
  for (const n of state.notes.slice(-5)) lines.push(`note: ${n}`)
  return lines.join('\n') + '\n'
}
