/**
 * Working through the matrix (services/core/experiments/matrix.ts): the setups started (all at once, or one at a
 * time when the plan's order is grouped), each due cell run after its setup's load and flush, runs counted in the
 * background while the next runs, a cell found incomplete run again while its attempts last, and – with
 * repetitions until decided – a look after each round that may add the next (sequential.ts). Then the setups
 * stopped, the status decided, the comparisons made.
 */
import type { Setup } from '../../schemas/experiment-plan.v1.js'
import type { Cell, ExperimentState } from '../../schemas/experiment-state.v1.js'
import { runIdOf } from '../core/experiments/matrix.js'
import { PLAN_DEFAULTS } from '../core/experiments/plan.js'
import { cellStatus, counts, maxAttempts, nextCell } from '../core/experiments/state.js'
import { compareAll } from './comparisons.js'
import type { ConductorDeps } from './deps.js'
import type { ExperimentRecord } from './record.js'
import { emptyAttempt, type RunAttempts } from './run-attempt.js'
import { look } from './sequential.js'
import type { SetupSteps } from './setup-steps.js'

export interface ExecutionDeps extends Pick<ConductorDeps, 'runs' | 'write' | 'now'> {
  record: ExperimentRecord
  steps: SetupSteps
  attempts: RunAttempts
  stopping: () => boolean
}

export class Execution {
  constructor(private readonly deps: ExecutionDeps) {}

  /** The matrix from where the state stands to its end; the state as it ended (done, failed or interrupted). */
  async execute(): Promise<ExperimentState> {
    const { record, steps } = this.deps
    const state = record.state
    const plan = state.plan
    const failedSetups = new Map<string, string>()
    const grouped = (plan.order ?? PLAN_DEFAULTS.order) === 'grouped'
    const started = new Set<string>()
    const startSetup = async (s: Setup): Promise<void> => {
      if (started.has(s.name) || failedSetups.has(s.name)) return
      started.add(s.name)
      const why = await steps.step(s, 'start')
      if (why !== undefined) failedSetups.set(s.name, why)
    }
    if (!grouped) for (const s of plan.setups) await startSetup(s)
    // Runs whose clients all ended are counted in the background while the next runs; one found incomplete makes
    // its cell due again (while its attempts last), so the matrix is gone through until nothing is left. With
    // repetitions { min, max }, a look after each round may add the next one (nextRound).
    const verifying = this.deps.attempts.verifying
    do
      for (;;) {
        await this.matrixPass(failedSetups, grouped, started, startSetup)
        if (verifying.size === 0 || this.deps.stopping()) break
        await Promise.all(verifying)
        if (nextCell(state) === undefined) break
      }
    while (!this.deps.stopping() && (await this.nextRound()))
    for (const s of plan.setups) if (started.has(s.name) && !steps.stopped.has(s.name)) await steps.stopSetup(s)
    state.currentRun = null
    const c = counts(state)
    // Before the comparisons: comparison.md headlines what the experiment decided, which needs its status.
    state.status = this.deps.stopping() ? 'interrupted' : c.done === state.cells.length ? 'done' : 'failed'
    if (!this.deps.stopping()) await compareAll(state, this.deps)
    if (c.failed > 0)
      record.note(`${c.failed} of ${state.cells.length} runs failed after ${maxAttempts(plan)} attempts`)
    await record.save()
    return state
  }

  /**
   * Repetitions until decided (services/experiments/sequential.ts): once every cell is settled, a look at the
   * comparisons; true when it added a round (or a verification made a cell due again), so the matrix goes on.
   */
  private async nextRound(): Promise<boolean> {
    await Promise.all(this.deps.attempts.verifying)
    const state = this.deps.record.state
    if (nextCell(state) !== undefined) return true
    const { added, notes } = await look(state, this.deps.runs, this.deps.now)
    for (const n of notes) this.deps.record.note(n)
    await this.deps.record.save()
    return added > 0
  }

  private async matrixPass(
    failedSetups: Map<string, string>,
    grouped: boolean,
    started: Set<string>,
    startSetup: (s: Setup) => Promise<void>,
  ): Promise<void> {
    const { record, steps } = this.deps
    const state = record.state
    const plan = state.plan
    for (let cell = nextCell(state); cell !== undefined && !this.deps.stopping(); cell = nextCell(state)) {
      const setup = plan.setups.find((s) => s.name === cell.setup)!
      if (grouped) {
        // One setup at a time: the previous one is stopped before the next starts.
        for (const s of plan.setups)
          if (s.name !== setup.name && started.has(s.name) && !steps.stopped.has(s.name)) await steps.stopSetup(s)
        await startSetup(setup)
      }
      const failed = failedSetups.get(setup.name)
      if (failed !== undefined) {
        this.failCell(cell, `setup ${setup.name} failed: ${failed}`)
        await record.save()
        continue
      }
      const loaded = await steps.ensureLoaded(setup, cell)
      if (loaded !== undefined) {
        failedSetups.set(setup.name, loaded)
        continue
      }
      if (setup.steps?.flush !== undefined) {
        const why = await steps.step(setup, 'flush')
        if (why !== undefined) {
          failedSetups.set(setup.name, why)
          continue
        }
      }
      await this.runCell(cell)
    }
  }

  /** A cell whose setup failed: every attempt it has left spent, failed with why. */
  private failCell(cell: Cell, reason: string): void {
    while (cellStatus(cell, this.deps.record.state.plan) === 'left')
      cell.attempts.push(emptyAttempt(runIdOf(cell, cell.attempts.length + 1), 'failed', reason))
  }

  private async runCell(cell: Cell): Promise<void> {
    const attempt = await this.deps.attempts.runOnce(cell, 'run')
    if (attempt.state !== 'done' && attempt.state !== 'running')
      this.deps.record.note(
        `${attempt.runId}: ${attempt.state}${attempt.reason === undefined ? '' : `: ${attempt.reason}`}`,
      )
  }
}
