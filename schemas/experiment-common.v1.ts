/**
 * Experiments, version 1: the plan a user writes (YAML or JSON), the
 * messages on the control topic between the coordinator (`benchstream
 * experiment run`) and the agents on the client machines (`benchstream
 * agent`), and the experiment's state as the API stores and serves it.
 * TypeBox, as every shape of the project: the same objects validate a plan
 * file, a control message and an API body. One file per concept:
 * experiment-plan, experiment-control (the control topic), experiment-state
 * (the stored state), experiment-decisions (decisions, looks and bisection),
 * experiments-api (the API's replies); this one holds the small pieces they
 * share.
 */
import { Type, type TEnum } from 'typebox'
import { ID_PATTERN, ID_RULE } from './events.v1.js'

/** A string of the ID rule (events.v1.ts), described. */
export const id = (description: string) => Type.String({ pattern: ID_PATTERN.source, description })
/** One of a list of words (`as const`), as an enum schema. */
export function literals<const T extends readonly string[]>(values: T, description?: string): TEnum<[...T]> {
  return Type.Enum<[...T]>(values, description === undefined ? {} : { description })
}

/** Labels of a setup, a version or an agent (and so of their runs). */
export const Labels = Type.Record(Type.String({ pattern: ID_PATTERN.source }), Type.String({ maxLength: 256 }), {
  maxProperties: 32,
  description: `at most 32 labels: key of ${ID_RULE}, value of at most 256 characters`,
})
/** Environment variable names a step may set (the agent allows each by name too, --allow-env). */
export const ENV_NAME = '^[A-Z][A-Z0-9_]{0,63}$'
