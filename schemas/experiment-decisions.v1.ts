/**
 * Experiments, version 1: what the comparisons of an experiment decided, as
 * stored in its state: each figure decided or not and why the repetitions
 * stopped (Decisions), the looks of a sequential experiment (Look), and a
 * bisection's chain of steps and result (BisectState).
 */
import { Type, type Static } from 'typebox'
import { literals } from './experiment-common.v1.js'

export const FIGURE_DECISIONS = ['regression', 'improvement', 'no change', 'at target', 'undecided'] as const

/**
 * One figure of a comparison, decided or not (services/core/compare/sequential.ts): a regression or improvement
 * as compare calls it, no change beyond minEffect proven by an equivalence test (TOST), at target, or undecided
 * with the change it could have detected.
 */
export const FigureDecision = Type.Object({
  workload: Type.String({ maxLength: 64 }),
  label: Type.String({ maxLength: 256 }),
  decision: literals(FIGURE_DECISIONS),
  /** compare's verdict on it. */
  verdict: Type.String({ maxLength: 32 }),
  /** compare's p-value, adjusted over the comparison's figures. */
  pValue: Type.Union([Type.Number(), Type.Null()]),
  /** The equivalence test's p-value, adjusted likewise; null when not tested. */
  equivalenceP: Type.Union([Type.Number(), Type.Null()]),
  changePercent: Type.Union([Type.Number(), Type.Null()]),
  runs: Type.Object({ baseline: Type.Integer({ minimum: 0 }), candidate: Type.Integer({ minimum: 0 }) }),
  /** Undecided: the smallest increase and decrease, %, found with 80% power at the noise seen. */
  detectable: Type.Union([
    Type.Object({ increasePercent: Type.Number(), decreasePercent: Type.Number() }),
    Type.Null(),
  ]),
  reason: Type.String({ maxLength: 2048 }),
})
export type FigureDecision = Static<typeof FigureDecision>

export const STOP_REASONS = ['decided', 'max', 'budget', 'fixed', 'unknown figure', 'no runs', 'interrupted'] as const
export type StopReason = (typeof STOP_REASONS)[number]

/** A comparison's figures at its last look, and why no more repetitions were run. */
export const Decisions = Type.Object({
  /** The level this look's comparison was made at (the share of alpha spent on it). */
  alpha: Type.Number(),
  minEffect: Type.Number(),
  /** The look's round: repetitions a setup was planned to have. */
  round: Type.Integer({ minimum: 0 }),
  stop: literals(STOP_REASONS),
  /** Every figure decided (those named, or all). */
  decided: Type.Boolean(),
  figures: Type.Array(FigureDecision, { maxItems: 1024 }),
  /** Named figures that match none of the comparison's. */
  unknown: Type.Array(Type.String({ maxLength: 400 }), { maxItems: 64 }),
})
export type Decisions = Static<typeof Decisions>

/** One look of a sequential experiment at a workload's comparisons, after a round of runs. */
export const Look = Type.Object({
  workload: Type.String({ maxLength: 64 }),
  round: Type.Integer({ minimum: 1 }),
  alpha: Type.Number(),
  atMs: Type.Number(),
  decided: Type.Integer({ minimum: 0 }),
  undecided: Type.Integer({ minimum: 0 }),
  /** Why this workload got no further round; null when it got one. */
  stop: Type.Union([literals(STOP_REASONS), Type.Null()]),
  detail: Type.Optional(Type.String({ maxLength: 2048 })),
})
export type Look = Static<typeof Look>

export const BISECT_OUTCOMES = ['running', 'bad', 'good', 'undecided', 'failed'] as const

/** One step of a bisection: a version run beside the good one, as an experiment of its own. */
export const BisectStep = Type.Object({
  /** The version tried (at the ends: the bad one). */
  version: Type.String({ maxLength: 64 }),
  ends: Type.Boolean(),
  experiment: Type.String({ maxLength: 64 }),
  outcome: literals(BISECT_OUTCOMES),
  runs: Type.Object({ baseline: Type.Integer({ minimum: 0 }), candidate: Type.Integer({ minimum: 0 }) }),
  /** The figure that decided it (or the first one followed), its change and adjusted p. */
  figure: Type.Union([Type.String({ maxLength: 400 }), Type.Null()]),
  changePercent: Type.Union([Type.Number(), Type.Null()]),
  pValue: Type.Union([Type.Number(), Type.Null()]),
  verdict: Type.String({ maxLength: 32 }),
  reason: Type.String({ maxLength: 4096 }),
})
export type BisectStep = Static<typeof BisectStep>

export const BISECT_RESULTS = ['found', 'ends not confirmed', 'undecided', 'failed'] as const

/** A bisection's own state (an ExperimentState with no cells: each step is an experiment of its own). */
export const BisectState = Type.Object({
  good: Type.String({ maxLength: 64 }),
  bad: Type.String({ maxLength: 64 }),
  /** Where the versions came from: the plan's list, or maven:group:artifact. */
  source: Type.String({ maxLength: 512 }),
  /** Every version from good to bad, in order. */
  versions: Type.Array(Type.String({ maxLength: 64 }), { minItems: 2, maxItems: 10_000 }),
  /** The figures named (--figure), else empty. */
  named: Type.Array(Type.String({ maxLength: 400 }), { maxItems: 64 }),
  /** The figures followed: the named ones, or those the ends found regressed. */
  figures: Type.Array(Type.String({ maxLength: 400 }), { maxItems: 64 }),
  chain: Type.Array(BisectStep, { maxItems: 64 }),
  result: Type.Union([
    Type.Null(),
    Type.Object({
      kind: literals(BISECT_RESULTS),
      firstBad: Type.Union([Type.String({ maxLength: 64 }), Type.Null()]),
      lastGood: Type.Union([Type.String({ maxLength: 64 }), Type.Null()]),
      message: Type.String({ maxLength: 4096 }),
    }),
  ]),
})
export type BisectState = Static<typeof BisectState>
