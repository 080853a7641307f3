/**
 * Experiments, version 1: the plan a user writes (YAML or JSON), checked whole
 * before anything starts: its setups and their lifecycle steps, workloads,
 * repetitions (fixed, or sequential until decided) and the versions a
 * bisection goes through.
 */
import { Type, type Static } from 'typebox'
import { ID_PATTERN, ID_RULE } from './events.v1.js'
import { ENV_NAME, id, Labels, literals } from './experiment-common.v1.js'

/** A property value as YAML gives it: written to the driver as text. */
const PropertyValue = Type.Union([Type.String({ maxLength: 4096 }), Type.Number(), Type.Boolean()])
const Properties = Type.Record(Type.String({ pattern: '^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$' }), PropertyValue, {
  maxProperties: 256,
  description: 'YCSB properties (-p): at most 256, names of A-Z a-z 0-9 . _ -, values as text, numbers or booleans',
})

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
