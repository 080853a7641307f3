/**
 * What the composition root (services/cli/experiment.ts) gives the coordinator: its ports and the hooks for the
 * terminal. The parts of the coordinator take the few of these they use.
 */
import type { ExperimentState } from '../../schemas/experiment-state.v1.js'
import type { Logger } from '../common/logger.js'
import type { ControlBus } from '../core/ports/control-bus.js'
import type { ExperimentRuns } from '../core/ports/experiment-runs.js'
import type { ExperimentStore } from '../core/ports/experiment-store.js'

export interface ConductorDeps {
  bus: ControlBus
  store: ExperimentStore
  runs: ExperimentRuns
  /** This machine's clock, ms since the epoch. */
  now: () => number
  log: Logger
  /** Writes a file into the experiment's folder (comparisons). */
  write: (experimentId: string, name: string, text: string) => string
  /** Told after every change of the state (the terminal's progress line). */
  onChange?: (state: ExperimentState) => void
}
