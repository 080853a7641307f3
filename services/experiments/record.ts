/**
 * The experiment's state as the coordinator keeps it: the notes (faults, newest last, bounded), and the whole
 * state stored after every change, so a coordinator that dies can be resumed from it.
 */
import type { ExperimentState } from '../../schemas/experiment-state.v1.js'
import type { ConductorConfig } from './config.js'
import type { ConductorDeps } from './deps.js'

export class ExperimentRecord {
  private current: ExperimentState | undefined
  /** Notes made before the experiment's state exists (agents heard while waiting), kept for it. */
  private readonly early: string[] = []

  constructor(
    private readonly deps: Pick<ConductorDeps, 'store' | 'log' | 'now' | 'onChange'>,
    private readonly config: Readonly<ConductorConfig>,
  ) {}

  /** The experiment being run; only asked for once run() or resume() has adopted one. */
  get state(): ExperimentState {
    return this.current!
  }

  /** Keeps `state` from now on, with the notes made before it existed (the newest maxNotes). */
  adopt(state: ExperimentState): void {
    this.current = state
    state.notes.push(...this.early.splice(0))
    if (state.notes.length > this.config.maxNotes) state.notes.splice(0, state.notes.length - this.config.maxNotes)
  }

  note(text: string, level: 'warn' | 'error' = 'warn'): void {
    const state = this.current
    this.deps.log[level](text)
    if (state === undefined) {
      this.early.push(text.slice(0, 4000))
      if (this.early.length > this.config.earlyNotes) this.early.shift()
      return
    }
    state.notes.push(text.slice(0, 4000))
    if (state.notes.length > this.config.maxNotes) state.notes.shift()
  }

  async save(): Promise<void> {
    const state = this.current!
    state.version++
    state.updatedAtMs = this.deps.now()
    try {
      await this.deps.store.save(state)
    } catch (err) {
      // The experiment goes on; the next save stores everything (it is the whole state each time).
      this.deps.log.warn(
        { err: (err as Error).message },
        'the experiment state could not be stored; trying again with the next change',
      )
    }
    this.deps.onChange?.(state)
  }
}
