/**
 * Experiments, version 1: the API's replies about experiments (GET
 * /api/v1/experiments and /api/v1/experiments/:id), and what an experiment
 * decided as the page and the CLI headline it.
 */
import { Type, type Static } from 'typebox'
import { id, literals } from './experiment-common.v1.js'
import { EXPERIMENT_STATUSES, type ExperimentState } from './experiment-state.v1.js'

export const EXPERIMENT_OUTCOMES = ['running', 'regression', 'no regression', 'undecided', 'nothing compared'] as const

/**
 * What an experiment decided, as comparison.md, `experiment run|resume|status` and the experiment page headline it
 * (services/core/experiments/decision.ts): `lead` is the headline's first words (`Undecided:`), `text` the rest.
 */
export const ExperimentDecision = Type.Object({
  outcome: literals(EXPERIMENT_OUTCOMES),
  lead: Type.String(),
  text: Type.String(),
  /** `lead text`: the headline as one line. */
  headline: Type.String(),
  /** Per comparison, what regressed: `B vs A, workloada: SCAN p50 (µs)`. */
  regressions: Type.Array(Type.String()),
  /** Why it is undecided, a few words each; empty when decided. */
  undecided: Type.Array(Type.String()),
})
export type ExperimentDecision = Static<typeof ExperimentDecision>

export const ExperimentIdParams = Type.Object({ id: id('experiment id') })
export type ExperimentIdParams = Static<typeof ExperimentIdParams>

/** One line of the experiment list. */
export const ExperimentSummary = Type.Object({
  id: Type.String(),
  name: Type.String(),
  status: literals(EXPERIMENT_STATUSES),
  createdAtMs: Type.Number(),
  updatedAtMs: Type.Number(),
  runs: Type.Object({ done: Type.Integer(), running: Type.Integer(), failed: Type.Integer(), left: Type.Integer() }),
  currentRun: Type.Union([Type.String(), Type.Null()]),
})
export type ExperimentSummary = Static<typeof ExperimentSummary>

export const ExperimentList = Type.Object({ experiments: Type.Array(ExperimentSummary) })
export type ExperimentList = Static<typeof ExperimentList>

/**
 * GET /api/v1/experiments/:id: the state as stored, with what it decided (the experiment page draws both). A
 * bisection has no decision of its own: its chain's result says what it found.
 */
export type ExperimentReply = ExperimentState & { decision?: ExperimentDecision }
