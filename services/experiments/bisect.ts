/**
 * A bisection (`benchstream experiment bisect`): the steps that
 * services/core/experiments/bisect.ts picks, each run as an experiment of its
 * own by the coordinator (app.ts Conductor: agents, start barrier,
 * interleaved repetitions until decided, retries, the comparison), the
 * chain kept in the bisection's own stored state after every change. A
 * bisection resumed after a crash (`--resume`) finds the step it was in: a
 * step experiment already ended is read, one left running is resumed, one
 * never stored is started; then it goes on as it would have.
 */
import type { Plan } from '../../schemas/experiment-plan.v1.js'
import type { ExperimentState } from '../../schemas/experiment-state.v1.js'
import type { Logger } from '../common/logger.js'
import { classifyStep, newBisect, nextStep, regressedFigures, stepIdOf, stepPlan } from '../core/experiments/bisect.js'
import { BenchstreamError } from '../core/errors.js'
import type { ExperimentStore } from '../core/ports/experiment-store.js'

/** What runs a step's experiment: the coordinator. */
export interface StepRunner {
  run(plan: Plan, id: string): Promise<ExperimentState>
  resume(id: string): Promise<ExperimentState>
}

export interface BisectDeps {
  steps: StepRunner
  store: ExperimentStore
  now: () => number
  log: Logger
  /** True once the bisection is to stop (Ctrl-C): the step going on ends as interrupted, the chain stays resumable. */
  stopping: () => boolean
  /** Told after every change of the bisection's state. */
  onChange?: (state: ExperimentState) => void
}

export class Bisector {
  constructor(private readonly deps: BisectDeps) {}

  /** A new bisection of `versions` (good first, bad last), following the named figures (or those that regress). */
  async start(
    plan: Plan,
    id: string,
    o: { good: string; bad: string; versions: string[]; source: string; named: string[] },
  ): Promise<ExperimentState> {
    const state = newBisect(id, plan, this.deps.now(), o)
    await this.save(state)
    return this.go(state)
  }

  async resume(id: string): Promise<ExperimentState> {
    const state = await this.deps.store.load(id)
    if (state === undefined)
      throw new BenchstreamError('BS_ERR_NOT_FOUND', `no bisection ${JSON.stringify(id)}; benchstream experiment list`)
    if (state.bisect === undefined)
      throw new BenchstreamError(
        'BS_ERR_USAGE',
        `${id} is an experiment, not a bisection: resume it with benchstream experiment resume ${id}`,
      )
    if (state.bisect.result !== null) return state
    state.status = 'running'
    this.note(state, `resumed at ${new Date(this.deps.now()).toISOString()}`)
    return this.go(state)
  }

  private async go(state: ExperimentState): Promise<ExperimentState> {
    const b = state.bisect!
    for (;;) {
      const next = nextStep(b)
      if (next.kind === 'stop') {
        b.result = next.result
        state.status = next.result.kind === 'found' ? 'done' : 'failed'
        this.deps.log.info({ result: next.result.kind }, next.result.message)
        await this.save(state)
        return state
      }
      const ends = next.kind === 'ends'
      const version = ends ? b.bad : next.version
      let k = b.chain.findIndex((s) => s.outcome === 'running')
      if (k < 0) {
        k = b.chain.length
        b.chain.push({
          version,
          ends,
          experiment: stepIdOf(state.id, k),
          outcome: 'running',
          runs: { baseline: 0, candidate: 0 },
          figure: null,
          changePercent: null,
          pValue: null,
          verdict: 'running',
          reason: '',
        })
        await this.save(state)
      }
      const entry = b.chain[k]!
      const step = await this.runStep(state, entry.experiment, version)
      if (step.status === 'interrupted' || this.deps.stopping()) {
        state.status = 'interrupted'
        this.note(
          state,
          `interrupted during ${entry.experiment} (${version}); benchstream experiment bisect --resume ${state.id}`,
        )
        await this.save(state)
        return state
      }
      Object.assign(entry, classifyStep(step, b.figures))
      // Nothing named: the figures the ends found regressed are the ones followed from now on.
      if (ends && entry.outcome === 'bad' && b.figures.length === 0) b.figures = regressedFigures(step)
      await this.save(state)
    }
  }

  /** A step's experiment: read when it already ended, resumed when it was left running, else started. */
  private async runStep(state: ExperimentState, id: string, version: string): Promise<ExperimentState> {
    const stored = await this.deps.store.load(id)
    if (stored !== undefined && (stored.status === 'done' || stored.status === 'failed')) return stored
    if (stored !== undefined) return this.deps.steps.resume(id)
    return this.deps.steps.run(stepPlan(state.plan, state.bisect!, version), id)
  }

  private note(state: ExperimentState, text: string): void {
    this.deps.log.warn(text)
    state.notes.push(text.slice(0, 4000))
    if (state.notes.length > 1000) state.notes.shift()
  }

  private async save(state: ExperimentState): Promise<void> {
    state.version++
    state.updatedAtMs = this.deps.now()
    try {
      await this.deps.store.save(state)
    } catch (err) {
      // The bisection goes on; the next save stores everything (the whole state each time).
      this.deps.log.warn(
        { err: (err as Error).message },
        'the bisection could not be stored; trying again with the next change',
      )
    }
    this.deps.onChange?.(state)
  }
}
