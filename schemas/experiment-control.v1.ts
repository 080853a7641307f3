/**
 * Experiments, version 1: the messages on the control topic between the
 * coordinator (`benchstream experiment run`) and the agents on the client
 * machines (`benchstream agent`): heartbeats and name claims, assignments,
 * the start barrier, cancels and assignment status.
 */
import { Type, type Static } from 'typebox'
import { ENV_NAME, id, Labels, literals } from './experiment-common.v1.js'
import { DRIVERS, Step } from './experiment-plan.v1.js'

/** What an agent may run, as its own command line allows it. */
export const AgentCapabilities = Type.Object({
  drivers: Type.Array(literals(DRIVERS), { maxItems: 3 }),
  /** Bindings of the Benchstream driver. */
  bindings: Type.Array(Type.String({ maxLength: 128 }), { maxItems: 64 }),
  /** YCSB -db names it can run (its bindings, or ours). */
  ycsbBindings: Type.Array(Type.String({ maxLength: 256 }), { maxItems: 256 }),
  /** Workload files in its --workloads folders, by path relative to a folder. */
  workloads: Type.Array(Type.String({ maxLength: 256 }), { maxItems: 512 }),
  /** Lifecycle commands by name (--allow-command), and the environment variables steps may set (--allow-env). */
  commands: Type.Array(id('a command name'), { maxItems: 64 }),
  env: Type.Array(Type.String({ pattern: ENV_NAME }), { maxItems: 64 }),
  profileTargets: Type.Array(id('a profile target name'), { maxItems: 64 }),
})
export type AgentCapabilities = Static<typeof AgentCapabilities>

export const ClockEstimate = Type.Object({
  /** The broker's clock minus this agent's, ms: add it to a local time to get the broker's. */
  offsetMs: Type.Number({ minimum: -1e9, maximum: 1e9 }),
  /** Round trip of the sample used (the shortest), ms: the offset is known to within half of it. */
  rttMs: Type.Number({ minimum: 0, maximum: 1e9 }),
  samples: Type.Integer({ minimum: 0, maximum: 1000 }),
  /** When it was measured, the agent's clock, ms. */
  atMs: Type.Number({ minimum: 0 }),
})
export type ClockEstimate = Static<typeof ClockEstimate>

const common = {
  /** Coordinator's or agent's clock when sent, ms. */
  sentAtMs: Type.Number({ minimum: 0 }),
}

export const AgentHeartbeat = Type.Object(
  {
    type: Type.Literal('agent.heartbeat'),
    ...common,
    agent: id('agent name'),
    /** One per agent process: a restarted agent is a new instance, its predecessor's work is gone. */
    instance: Type.String({ pattern: '^[A-Za-z0-9-]{8,64}$' }),
    host: Type.String({ maxLength: 256 }),
    pid: Type.Integer({ minimum: 0 }),
    cores: Type.Integer({ minimum: 0, maximum: 100_000 }),
    labels: Labels,
    capabilities: AgentCapabilities,
    clock: Type.Union([ClockEstimate, Type.Null()]),
    /** The assignment it is working on, if any. */
    busyWith: Type.Union([Type.String({ maxLength: 200 }), Type.Null()]),
    version: Type.String({ maxLength: 64 }),
  },
  { additionalProperties: false },
)
export type AgentHeartbeat = Static<typeof AgentHeartbeat>

/**
 * An agent starting under a name asks whether the name is taken, before its first heartbeat. A live agent of that
 * name answers with a heartbeat at once (the newcomer then refuses to start); two agents claiming one name at the
 * same moment keep the lower instance id (services/core/experiments/agent-name.ts). Coordinators ignore claims.
 */
export const AgentClaim = Type.Object(
  {
    type: Type.Literal('agent.claim'),
    ...common,
    agent: id('agent name'),
    instance: Type.String({ pattern: '^[A-Za-z0-9-]{8,64}$' }),
    host: Type.String({ maxLength: 256 }),
    pid: Type.Integer({ minimum: 0 }),
    version: Type.String({ maxLength: 64 }),
  },
  { additionalProperties: false },
)
export type AgentClaim = Static<typeof AgentClaim>

/** What a client of a run is to do: the driver's command line in parts, every value checked by the agent again. */
export const RunSpec = Type.Object(
  {
    phase: Type.Union([Type.Literal('run'), Type.Literal('load')]),
    driver: literals(DRIVERS),
    binding: Type.String({ maxLength: 256 }),
    workload: Type.String({ maxLength: 256 }),
    properties: Type.Record(Type.String({ maxLength: 128 }), Type.String({ maxLength: 4096 }), { maxProperties: 512 }),
    threads: Type.Integer({ minimum: 1, maximum: 1024 }),
    /** This client's share of the target, ops/s (0: unthrottled). */
    target: Type.Number({ minimum: 0, maximum: 1e9 }),
    seconds: Type.Optional(Type.Integer({ minimum: 1, maximum: 86_400 })),
    /** This client's operations (operationcount), or for a load its insertcount. */
    operations: Type.Optional(Type.Integer({ minimum: 0, maximum: 1e12 })),
    runId: id('run id'),
    clientId: id('client id'),
    group: Type.Optional(id('group')),
    repetition: Type.Optional(Type.Integer({ minimum: 1, maximum: 100_000 })),
    labels: Labels,
    expectedClients: Type.Integer({ minimum: 1, maximum: 64 }),
    experiment: id('experiment id'),
    serverMetrics: Type.Optional(Type.Array(Type.String({ maxLength: 1100 }), { maxItems: 8 })),
  },
  { additionalProperties: false },
)
export type RunSpec = Static<typeof RunSpec>

export const Assign = Type.Object(
  {
    type: Type.Literal('assign'),
    ...common,
    experiment: id('experiment id'),
    assignment: Type.String({ pattern: '^[A-Za-z0-9][A-Za-z0-9._:/-]{0,199}$' }),
    agent: id('the agent it is for'),
    /** The agent instance it is for: an assignment for an agent's predecessor is ignored. */
    instance: Type.String({ pattern: '^[A-Za-z0-9-]{8,64}$' }),
    /** A client of a run (it waits at the start barrier for `go`), a lifecycle step, or a profile capture. */
    run: Type.Optional(RunSpec),
    step: Type.Optional(Step),
    profile: Type.Optional(
      Type.Object({
        target: id('profile target'),
        runId: id('run id'),
        seconds: Type.Integer({ minimum: 1, maximum: 3600 }),
        event: Type.String({ maxLength: 16 }),
      }),
    ),
    /** Largest clock offset the agent may have for this work, ms. */
    clockBoundMs: Type.Integer({ minimum: 1, maximum: 60_000 }),
    /** A prepared run that gets no `go` within this long is given up, s. */
    barrierTimeoutS: Type.Integer({ minimum: 1, maximum: 3600 }),
  },
  { additionalProperties: false },
)
export type Assign = Static<typeof Assign>

/** The start barrier opens: every client of the run starts at `startAtMs`, on the broker's clock. */
export const Go = Type.Object(
  {
    type: Type.Literal('go'),
    ...common,
    experiment: id('experiment id'),
    assignments: Type.Array(Type.String({ maxLength: 200 }), { minItems: 1, maxItems: 64 }),
    startAtMs: Type.Number({ minimum: 0 }),
  },
  { additionalProperties: false },
)
export type Go = Static<typeof Go>

export const Cancel = Type.Object(
  {
    type: Type.Literal('cancel'),
    ...common,
    experiment: id('experiment id'),
    assignments: Type.Array(Type.String({ maxLength: 200 }), { minItems: 1, maxItems: 64 }),
    reason: Type.String({ maxLength: 1024 }),
  },
  { additionalProperties: false },
)
export type Cancel = Static<typeof Cancel>

export const ASSIGNMENT_STATES = ['accepted', 'refused', 'ready', 'started', 'ended', 'failed'] as const
export type AssignmentState = (typeof ASSIGNMENT_STATES)[number]

export const AssignmentStatus = Type.Object(
  {
    type: Type.Literal('assignment.status'),
    ...common,
    experiment: id('experiment id'),
    assignment: Type.String({ maxLength: 200 }),
    agent: id('agent name'),
    instance: Type.String({ pattern: '^[A-Za-z0-9-]{8,64}$' }),
    state: literals(ASSIGNMENT_STATES),
    /** Why it was refused or failed, in words. */
    detail: Type.Optional(Type.String({ maxLength: 4096 })),
    /** Operations by operation name, from the driver's own report. */
    operations: Type.Optional(
      Type.Record(Type.String({ maxLength: 64 }), Type.Integer({ minimum: 0 }), { maxProperties: 64 }),
    ),
    exitCode: Type.Optional(Type.Union([Type.Integer(), Type.Null()])),
    /** The last lines the command printed (a step's output, a failed driver's error). */
    output: Type.Optional(Type.String({ maxLength: 8192 })),
    clock: Type.Optional(Type.Union([ClockEstimate, Type.Null()])),
  },
  { additionalProperties: false },
)
export type AssignmentStatus = Static<typeof AssignmentStatus>

/**
 * The coordinator's own heartbeat: read back from the topic, it tells the coordinator how far the topic has got on
 * the broker's clock, so that an agent is judged silent only against what the coordinator has heard, never because
 * the coordinator's own link was down. Agents ignore it.
 */
export const CoordinatorHeartbeat = Type.Object(
  {
    type: Type.Literal('coordinator.heartbeat'),
    ...common,
    /** One per coordinator process. */
    coordinator: Type.String({ pattern: '^[A-Za-z0-9-]{8,64}$' }),
  },
  { additionalProperties: false },
)
export type CoordinatorHeartbeat = Static<typeof CoordinatorHeartbeat>

export const ControlMessage = Type.Union([
  AgentHeartbeat,
  AgentClaim,
  Assign,
  Go,
  Cancel,
  AssignmentStatus,
  CoordinatorHeartbeat,
])
export type ControlMessage = Static<typeof ControlMessage>
/** A control message is one JSON object of at most this many bytes; larger ones are refused, counted and logged. */
export const MAX_CONTROL_MESSAGE_BYTES = 64 * 1024
