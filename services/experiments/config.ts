/**
 * The coordinator's configuration: its waits and bounds, declared once as a
 * TypeBox object (type, bounds, default, meaning), filled in and validated
 * once when the Conductor is built, then frozen. None is read from the
 * environment: `benchstream experiment` runs with the defaults, and a test
 * may give shorter ones (the plan says what an experiment may choose:
 * agentWaitS, agentTimeoutS, clockBoundMs).
 */
import { Type, type Static } from 'typebox'
import { Value } from 'typebox/value'
import { freeze } from '../common/config.js'
import { BenchstreamError } from '../core/errors.js'

const ms = (d: number, min: number, max: number, description: string) =>
  Type.Integer({ default: d, minimum: min, maximum: max, description })

export const ConductorOptions = Type.Object({
  /** @default 500 */
  startLeadMs: ms(
    500,
    0,
    60_000,
    "between the barrier's release and the start instant: long enough for `go` to reach every agent",
  ),
  /** @default 120000 */
  readyWaitMs: ms(
    120_000,
    1000,
    3_600_000,
    'how long the clients of a run may take to get ready at the barrier (a JVM, loading the memory binding)',
  ),
  /** @default 120000 */
  endSlackMs: ms(
    120_000,
    0,
    3_600_000,
    "after the run's length, how long its clients may take to end (flushes, the report)",
  ),
  /** @default 21600000 */
  operationsRunMaxMs: ms(
    6 * 3600_000,
    1000,
    30 * 86400_000,
    'a run with an operation count instead of a length: the longest it may take',
  ),
  /** @default 90000 */
  countWaitMs: ms(90_000, 0, 3_600_000, 'how long a finished run may take to be counted in full by the processor'),
  /** @default 30000 */
  stepSlackMs: ms(
    30_000,
    0,
    3_600_000,
    "lifecycle steps: the agent's own timeouts plus this, before the coordinator stops waiting",
  ),
  /** @default 250 */
  pollMs: ms(250, 1, 60_000, 'pause between two looks at what the control topic brought'),
  /** @default 1000 */
  maxNotes: Type.Integer({
    default: 1000,
    minimum: 1,
    maximum: 100_000,
    description: "notes kept in the state (a long experiment's faults, newest last)",
  }),
  /** @default 50 */
  earlyNotes: Type.Integer({
    default: 50,
    minimum: 1,
    maximum: 10_000,
    description: 'notes kept from before the state exists',
  }),
  /** @default 1000 */
  heartbeatMs: ms(
    1000,
    10,
    60_000,
    "the coordinator's own heartbeat on the control topic (the topic's clock as it hears it; see silentMs)",
  ),
  /**
   * A longer gap between consecutive messages heard is the topic itself stalled, for everyone: a broker of the
   * partition's replicas isolated, say, until the ISR shrinks (about 9 s): only this much of it counts as silence.
   * @default 2000 (two heartbeats)
   */
  stallGapMs: ms(2000, 10, 600_000, 'the longest gap between two messages heard that counts as silence'),
})

export type ConductorConfig = Static<typeof ConductorOptions>

/** The defaults, with `overrides` over them, checked against the schema; BS_ERR_CONFIG names the first not allowed. */
export function readConductorConfig(overrides: Partial<ConductorConfig> = {}): Readonly<ConductorConfig> {
  const value = Value.Default(ConductorOptions, structuredClone(overrides)) as ConductorConfig
  const first = Value.Errors(ConductorOptions, value)[0]
  if (first !== undefined)
    throw new BenchstreamError(
      'BS_ERR_CONFIG',
      `the coordinator's option ${first.instancePath.slice(1) || '(root)'} is not allowed: ${first.message}`,
    )
  return freeze(value)
}
