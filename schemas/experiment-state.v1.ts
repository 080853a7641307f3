/**
 * Experiments, version 1: an experiment's state as the coordinator stores it
 * through the API (table experiments): its plan, where every run of the
 * matrix stands (cells and their attempts), its steps and its comparisons.
 */
import { Type, type Static } from 'typebox'
import { id, literals } from './experiment-common.v1.js'
import { BisectState, Decisions, Look } from './experiment-decisions.v1.js'
import { Plan } from './experiment-plan.v1.js'

export const ATTEMPT_STATES = ['running', 'done', 'incomplete', 'failed'] as const

export const ClientOutcome = Type.Object({
  agent: Type.String({ maxLength: 64 }),
  clientId: Type.String({ maxLength: 64 }),
  state: Type.String({ maxLength: 16 }),
  operations: Type.Optional(Type.Integer({ minimum: 0 })),
  clockOffsetMs: Type.Optional(Type.Union([Type.Number(), Type.Null()])),
  detail: Type.Optional(Type.String({ maxLength: 4096 })),
})
export type ClientOutcome = Static<typeof ClientOutcome>

export const Attempt = Type.Object({
  runId: Type.String({ maxLength: 64 }),
  state: literals(ATTEMPT_STATES),
  clients: Type.Array(ClientOutcome, { maxItems: 64 }),
  startedAtMs: Type.Union([Type.Number(), Type.Null()]),
  endedAtMs: Type.Union([Type.Number(), Type.Null()]),
  /** Spread of the clients' first operations, ms (from the run's end records). */
  startSkewMs: Type.Union([Type.Number(), Type.Null()]),
  /** The largest clock offset among its clients, ms (absolute). */
  maxClockOffsetMs: Type.Union([Type.Number(), Type.Null()]),
  /**
   * Operations counted in ClickHouse, and what the drivers said they sent; for a summary run (driver pe), the
   * operations its clients reported, and sent null (no events).
   */
  counted: Type.Union([Type.Integer({ minimum: 0 }), Type.Null()]),
  sent: Type.Union([Type.Integer({ minimum: 0 }), Type.Null()]),
  reason: Type.Optional(Type.String({ maxLength: 4096 })),
})
export type Attempt = Static<typeof Attempt>

export const Cell = Type.Object({
  key: Type.String({ maxLength: 200 }),
  workload: Type.String({ maxLength: 64 }),
  setup: Type.String({ maxLength: 64 }),
  /** 1-based; warm-up runs count from 1 too. */
  repetition: Type.Integer({ minimum: 1 }),
  warmup: Type.Boolean(),
  group: Type.String({ maxLength: 64 }),
  attempts: Type.Array(Attempt, { maxItems: 16 }),
})
export type Cell = Static<typeof Cell>

export const StepRecord = Type.Object({
  setup: Type.String({ maxLength: 64 }),
  /** A step's phase, per workload for loads: `start`, `load:<workload>`, `loaded:<workload>` (a workload name: 64). */
  phase: Type.String({ maxLength: 80 }),
  agent: Type.String({ maxLength: 64 }),
  state: Type.Union([Type.Literal('running'), Type.Literal('done'), Type.Literal('failed')]),
  atMs: Type.Number(),
  output: Type.Optional(Type.String({ maxLength: 8192 })),
})
export type StepRecord = Static<typeof StepRecord>

export const ComparisonRecord = Type.Object({
  baseline: Type.String({ maxLength: 64 }),
  candidate: Type.String({ maxLength: 64 }),
  workload: Type.String({ maxLength: 64 }),
  regressions: Type.Array(Type.String({ maxLength: 256 }), { maxItems: 512 }),
  improvements: Type.Array(Type.String({ maxLength: 256 }), { maxItems: 512 }),
  baselineRuns: Type.Array(Type.String({ maxLength: 64 }), { maxItems: 1000 }),
  candidateRuns: Type.Array(Type.String({ maxLength: 64 }), { maxItems: 1000 }),
  /** Files written into the experiment's folder, relative to it. */
  files: Type.Array(Type.String({ maxLength: 256 }), { maxItems: 8 }),
  error: Type.Optional(Type.String({ maxLength: 4096 })),
  /**
   * Figures shown without a verdict (too few runs or windows, a side without the figure): `SCAN p50 +14,928%` and
   * the samples each side had, `2 + 3` (services/core/compare/decision.ts). Absent in states stored before it.
   */
  untested: Type.Optional(
    Type.Array(Type.Object({ figure: Type.String({ maxLength: 256 }), n: Type.String({ maxLength: 64 }) }), {
      maxItems: 512,
    }),
  ),
  /** Workloads asked for and not compared (one side only has them), with why. */
  notCompared: Type.Optional(Type.Array(Type.String({ maxLength: 1024 }), { maxItems: 64 })),
  /** Each figure decided or not, and why the repetitions stopped (absent in states stored before it existed). */
  decisions: Type.Optional(Decisions),
})
export type ComparisonRecord = Static<typeof ComparisonRecord>

export const EXPERIMENT_STATUSES = ['running', 'done', 'failed', 'interrupted'] as const

/** An experiment as stored: its plan, where every run of the matrix stands, its steps and its comparisons. */
export const ExperimentState = Type.Object(
  {
    id: id('experiment id'),
    name: Type.String({ maxLength: 64 }),
    status: literals(EXPERIMENT_STATUSES),
    plan: Plan,
    createdAtMs: Type.Number({ minimum: 0 }),
    updatedAtMs: Type.Number({ minimum: 0 }),
    /** Monotonic per experiment: the store keeps the highest. */
    version: Type.Integer({ minimum: 0 }),
    cells: Type.Array(Cell, { maxItems: 20_000 }),
    steps: Type.Array(StepRecord, { maxItems: 2000 }),
    comparisons: Type.Array(ComparisonRecord, { maxItems: 1000 }),
    /** What stopped it, or notes on faults it went through, newest last. */
    notes: Type.Array(Type.String({ maxLength: 4096 }), { maxItems: 1000 }),
    /** The run going on now, for the live view. */
    currentRun: Type.Union([Type.String({ maxLength: 64 }), Type.Null()]),
    /** Sequential repetitions: each look at a workload's comparisons, oldest first. */
    looks: Type.Optional(Type.Array(Look, { maxItems: 4000 })),
    /** A bisection (benchstream experiment bisect): its chain of steps. */
    bisect: Type.Optional(BisectState),
  },
  { additionalProperties: false },
)
export type ExperimentState = Static<typeof ExperimentState>
/** Largest stored state, bytes of JSON (a plan of 20,000 cells fits). */
export const MAX_EXPERIMENT_STATE_BYTES = 8 * 1024 * 1024
