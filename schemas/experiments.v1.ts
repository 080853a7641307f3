/**
 * Experiments, version 1: the plan a user writes (YAML or JSON), the
 * messages on the control topic between the coordinator (`benchstream
 * experiment run`) and the agents on the client machines (`benchstream
 * agent`), and the experiment's state as the API stores and serves it.
 * TypeBox, as every shape of the project: the same objects validate a plan
 * file, a control message and an API body.
 */
import { Type, type Static, type TEnum } from 'typebox'
import { ID_PATTERN, ID_RULE } from './events.v1.js'

const id = (description: string) => Type.String({ pattern: ID_PATTERN.source, description })
function literals<const T extends readonly string[]>(values: T, description?: string): TEnum<[...T]> {
  return Type.Enum<[...T]>(values, description === undefined ? {} : { description })
}
/** A property value as YAML gives it: written to the driver as text. */
const PropertyValue = Type.Union([Type.String({ maxLength: 4096 }), Type.Number(), Type.Boolean()])
const Properties = Type.Record(Type.String({ pattern: '^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$' }), PropertyValue, {
  maxProperties: 256,
  description: 'YCSB properties (-p): at most 256, names of A-Z a-z 0-9 . _ -, values as text, numbers or booleans',
})
const Labels = Type.Record(Type.String({ pattern: ID_PATTERN.source }), Type.String({ maxLength: 256 }), {
  maxProperties: 32,
  description: `at most 32 labels: key of ${ID_RULE}, value of at most 256 characters`,
})
/** Environment variable names a step may set (the agent allows each by name too, --allow-env). */
export const ENV_NAME = '^[A-Z][A-Z0-9_]{0,63}$'

/** Where a step's service is ready: a port that accepts connections, a URL that answers 2xx, or an allowed command. */
export const ReadyCheck = Type.Object(
  {
    tcp: Type.Optional(
      Type.String({
        pattern: '^[A-Za-z0-9.\\-\\[\\]:]{1,253}:\\d{1,5}$',
        description: 'host:port that accepts a TCP connection',
      }),
    ),
    http: Type.Optional(
      Type.String({ pattern: '^https?://[^\\s]{1,1000}$', description: 'an http:// or https:// URL that answers 2xx' }),
    ),
    command: Type.Optional(id('a command name the agent allows (--allow-command) that exits 0 when ready')),
    timeoutS: Type.Optional(
      Type.Integer({ minimum: 1, maximum: 3600, description: 'seconds to wait, 1 to 3600 (default 120)' }),
    ),
  },
  { additionalProperties: false },
)
export type ReadyCheck = Static<typeof ReadyCheck>

/**
 * A lifecycle step of a setup, run by one named agent: a command the agent's
 * own command line allows, by name (`--allow-command NAME=PATH`); never a
 * command string from the plan.
 */
export const Step = Type.Object(
  {
    agent: id('the agent that runs it'),
    command: id('a command name the agent allows (--allow-command NAME=PATH)'),
    args: Type.Optional(
      Type.Array(Type.String({ maxLength: 256 }), {
        maxItems: 32,
        description: 'at most 32 arguments of at most 256 characters',
      }),
    ),
    env: Type.Optional(
      Type.Record(Type.String({ pattern: ENV_NAME }), Type.String({ maxLength: 1024 }), {
        maxProperties: 32,
        description: 'at most 32 variables, names of A-Z 0-9 _ the agent allows (--allow-env)',
      }),
    ),
    timeoutS: Type.Optional(
      Type.Integer({ minimum: 1, maximum: 7200, description: 'seconds the command may take, 1 to 7200 (default 600)' }),
    ),
    ready: Type.Optional(ReadyCheck),
  },
  { additionalProperties: false },
)
export type Step = Static<typeof Step>

export const STEP_PHASES = ['start', 'load', 'loaded', 'flush', 'stop'] as const
export type StepPhase = (typeof STEP_PHASES)[number]

/** A CPU profile of each run (async-profiler on a process an agent allows), attached to the run. */
const ProfileSpec = Type.Object(
  {
    agent: id('the agent that profiles'),
    target: id("a profile target the agent allows (--profile-target NAME=PIDFILE), e.g. the setup's server"),
    seconds: Type.Optional(Type.Integer({ minimum: 1, maximum: 3600 })),
    event: Type.Optional(Type.Union([Type.Literal('cpu'), Type.Literal('wall'), Type.Literal('itimer')])),
  },
  { additionalProperties: false, description: 'a CPU profile of each run, attached to it' },
)
/** Datastore counters the clients sample beside YCSB, SOURCE=URL. */
const ServerMetrics = Type.Array(Type.String({ pattern: '^[a-z]{1,32}=https?://[^\\s]{1,1000}$' }), {
  maxItems: 8,
  description: 'datastore counters sampled beside YCSB, SOURCE=URL (e.g. hbase=http://127.0.0.1:16030/jmx)',
})

export const Setup = Type.Object(
  {
    name: id('the setup name'),
    labels: Type.Optional(Labels),
    properties: Type.Optional(Properties),
    // Setups that run side by side (two releases, each its own server and ports) have their own server to profile
    // and to sample: these replace the plan's for the setup's runs.
    profile: Type.Optional(ProfileSpec),
    serverMetrics: Type.Optional(ServerMetrics),
    steps: Type.Optional(
      Type.Object(
        {
          start: Type.Optional(Step),
          load: Type.Optional(Step),
          loaded: Type.Optional(Step),
          flush: Type.Optional(Step),
          stop: Type.Optional(Step),
        },
        {
          additionalProperties: false,
          description:
            'start (before its first run), load (once, instead of the workload load phase), loaded (after each ' +
            'load: e.g. an HBase flush, so that reads go through its block cache), flush (before each run), stop ' +
            '(after its last run)',
        },
      ),
    ),
  },
  { additionalProperties: false },
)
export type Setup = Static<typeof Setup>

export const PlanWorkload = Type.Object(
  {
    file: Type.String({
      pattern: '^[A-Za-z0-9][A-Za-z0-9._/-]{0,255}$',
      description:
        'a workload file the agents have (workloada, workloads/workloada): looked up in their --workloads folders',
    }),
    name: Type.Optional(id('the name runs and comparisons use (default: the file name)')),
    properties: Type.Optional(Properties),
  },
  { additionalProperties: false },
)
export type PlanWorkload = Static<typeof PlanWorkload>

/** Spending functions of the sequential design (services/core/compare/sequential.ts). */
export const SPENDING_FUNCTIONS = ['obrien-fleming', 'pocock'] as const
/** A figure named by its label, with or without its unit, after an optional workload: `workloade:SCAN p50`. */
export const FIGURE_NAME = Type.String({
  minLength: 1,
  maxLength: 200,
  pattern: '^[^\\u0000-\\u001f]+$',
  description:
    "a figure's label as compare prints it, its unit optional, after an optional workload and ':' " +
    '(workloade:SCAN p50, SCAN throughput)',
})

/**
 * Repetitions until decided: at least `min` and at most `max` of each setup and workload, one more interleaved
 * round at a time while a comparison of the workload has a figure the plan names (`figures`; without it, any
 * figure) that is neither a regression, an improvement nor proven unchanged. Every round is a look of a
 * group-sequential design whose alpha is spent over the looks (docs/design/sequential.md).
 */
export const SequentialRepetitions = Type.Object(
  {
    min: Type.Integer({ minimum: 3, maximum: 100, description: 'repetitions before the first look, 3 to 100' }),
    max: Type.Integer({ minimum: 3, maximum: 100, description: 'repetitions at most, 3 to 100' }),
    budgetS: Type.Optional(
      Type.Integer({
        minimum: 1,
        maximum: 30 * 86_400,
        description: 'no round starts once the experiment has run this long, s (up to 30 days)',
      }),
    ),
    spending: Type.Optional(
      literals(
        SPENDING_FUNCTIONS,
        'how alpha is spent over the looks: obrien-fleming (default: little early, most at max) or pocock (evenly)',
      ),
    ),
  },
  { additionalProperties: false },
)
export type SequentialRepetitions = Static<typeof SequentialRepetitions>

const VERSION = Type.String({
  pattern: ID_PATTERN.source,
  description: `a version: ${ID_RULE} (quote it in YAML: 1.10 is a number there)`,
})
/** What a version changes from itself on (and every later version, until a later entry changes it again). */
const VersionChange = Type.Object(
  {
    properties: Type.Optional(Properties),
    env: Type.Optional(
      Type.Record(Type.String({ pattern: ENV_NAME }), Type.String({ maxLength: 1024 }), {
        maxProperties: 32,
        description: "environment of every step of the version's setup (the agent must allow each, --allow-env)",
      }),
    ),
    labels: Type.Optional(Labels),
  },
  { additionalProperties: false },
)

/**
 * The versions `benchstream experiment bisect` goes through: a list in the plan, oldest first, or a Maven
 * artifact whose released versions are read from Maven Central (services/core/experiments/versions.ts). The
 * plan's setups are templates: `${version}` in any of their strings becomes the version run.
 */
export const PlanVersions = Type.Object(
  {
    list: Type.Optional(
      Type.Array(VERSION, { minItems: 2, maxItems: 10_000, description: 'the versions, oldest first (2 to 10,000)' }),
    ),
    maven: Type.Optional(
      Type.String({
        pattern: '^[A-Za-z0-9_][A-Za-z0-9_.-]{0,199}:[A-Za-z0-9_][A-Za-z0-9_.-]{0,199}$',
        description: 'a Maven artifact groupId:artifactId (org.apache.hbase:hbase-server)',
      }),
    ),
    prereleases: Type.Optional(
      Type.Boolean({ description: 'Maven only: alpha, beta, milestone, rc and SNAPSHOT versions too (default false)' }),
    ),
    from: Type.Optional(
      Type.Record(VERSION, VersionChange, {
        maxProperties: 1000,
        description: 'what changes from a version on: properties, env of the steps, labels',
      }),
    ),
  },
  { additionalProperties: false },
)
export type PlanVersions = Static<typeof PlanVersions>

// pe: HBase's PerformanceEvaluation (`hbase pe --nomapred <test> <threads>`), its binding the agent's allowed
// command that is HBase's bin/hbase, its workloads PE's tests; docs/guides/experiments.md#driver-pe.
export const DRIVERS = ['benchstream', 'ycsb', 'pe'] as const
export const LOAD_MODES = ['setup', 'run', 'none'] as const
export const ORDERS = ['interleaved', 'grouped'] as const

export const Plan = Type.Object(
  {
    version: Type.Literal(1, { description: 'the plan format: 1' }),
    name: id('the experiment name; each run of the plan gets an id <name>-<time>'),
    description: Type.Optional(Type.String({ maxLength: 4096 })),
    driver: Type.Optional(
      literals(
        DRIVERS,
        "benchstream (the project's driver, default), ycsb (real YCSB through the bridge) or pe (HBase's " +
          'PerformanceEvaluation, hbase pe)',
      ),
    ),
    binding: Type.String({
      pattern: '^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$',
      description:
        "the binding: one of the driver's (memory, redis, postgres), YCSB's -db (redis, hbase, a class), or for " +
        "driver pe the agents' allowed command that is HBase's bin/hbase (--allow-command hbase=PATH)",
    }),
    clients: Type.Union(
      [
        Type.Integer({ minimum: 1, maximum: 64, description: 'how many agents run each run, 1 to 64' }),
        Type.Array(id('an agent name'), { minItems: 1, maxItems: 64, uniqueItems: true, description: 'which agents' }),
      ],
      { description: 'how many agents run each run (1 to 64), or a list of agent names' },
    ),
    agentLabels: Type.Optional(Labels),
    threads: Type.Optional(
      Type.Integer({ minimum: 1, maximum: 1024, description: 'client threads per agent, 1 to 1024 (default 1)' }),
    ),
    target: Type.Optional(
      Type.Number({
        minimum: 0,
        maximum: 1e9,
        description: 'ops/s of all clients together, split evenly (0 or absent: unthrottled)',
      }),
    ),
    seconds: Type.Optional(
      Type.Integer({ minimum: 1, maximum: 86_400, description: 'length of each run in seconds, 1 to 86400' }),
    ),
    operations: Type.Optional(
      Type.Integer({
        minimum: 1,
        maximum: 1e12,
        description: 'operations of each run, all clients together (instead of seconds)',
      }),
    ),
    repetitions: Type.Union([Type.Integer({ minimum: 1, maximum: 100 }), SequentialRepetitions], {
      description:
        'repetitions of each setup and workload: 1 to 100, or { min, max } to add interleaved repetitions until ' +
        'the comparisons are decided (docs/design/sequential.md)',
    }),
    warmup: Type.Optional(
      Type.Integer({
        minimum: 0,
        maximum: 10,
        description: 'warm-up runs before them, not compared, 0 to 10 (default 0)',
      }),
    ),
    retries: Type.Optional(
      Type.Integer({
        minimum: 0,
        maximum: 5,
        description: 'how often a failed or incomplete run is run again, 0 to 5 (default 1)',
      }),
    ),
    order: Type.Optional(
      literals(
        ORDERS,
        'interleaved (default: repetition k of every setup, in a rotated order each round) or grouped (every run of ' +
          'one setup, then the next: for setups that cannot run side by side)',
      ),
    ),
    load: Type.Optional(
      literals(
        LOAD_MODES,
        "the workload's load phase: setup (once per setup and workload, the key range split across the clients; " +
          'default), run (before each run) or none (the memory binding loads itself in each client)',
      ),
    ),
    properties: Type.Optional(Properties),
    workloads: Type.Array(PlanWorkload, { minItems: 1, maxItems: 32, description: 'one to 32 workloads' }),
    setups: Type.Array(Setup, {
      minItems: 1,
      maxItems: 16,
      description: 'one to 16 setups (releases, configurations)',
    }),
    compare: Type.Optional(
      Type.Array(
        Type.Object({ baseline: id('a setup name'), candidate: id('a setup name') }, { additionalProperties: false }),
        { maxItems: 64, description: 'pairs of setups to compare (default: the first setup against each other one)' },
      ),
    ),
    alpha: Type.Optional(
      Type.Number({ exclusiveMinimum: 0, exclusiveMaximum: 1, description: 'significance level (default 0.05)' }),
    ),
    minEffect: Type.Optional(
      Type.Number({
        minimum: 0,
        exclusiveMaximum: 1,
        description: 'smallest change called, as a fraction (default 0.01)',
      }),
    ),
    clockBoundMs: Type.Optional(
      Type.Integer({ minimum: 1, maximum: 60_000, description: 'largest clock offset of an agent, ms (default 50)' }),
    ),
    agentWaitS: Type.Optional(
      Type.Integer({
        minimum: 1,
        maximum: 3600,
        description: 'how long to wait for the agents to register, s (default 30)',
      }),
    ),
    agentTimeoutS: Type.Optional(
      Type.Integer({ minimum: 2, maximum: 600, description: 'an agent silent this long is lost, s (default 5)' }),
    ),
    profile: Type.Optional(ProfileSpec),
    serverMetrics: Type.Optional(ServerMetrics),
    figures: Type.Optional(
      Type.Array(FIGURE_NAME, {
        minItems: 1,
        maxItems: 64,
        description:
          'the figures the comparisons must decide (repetitions { min, max } runs until they are) and a bisection ' +
          'follows (default: every figure)',
      }),
    ),
    versions: Type.Optional(PlanVersions),
  },
  { additionalProperties: false },
)
export type Plan = Static<typeof Plan>

// ------------------------------------------------------------------ control topic

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

// ------------------------------------------------------------------ state (API)

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
