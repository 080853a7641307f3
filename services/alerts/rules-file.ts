/**
 * Reads and validates the alert rules file (schemas/alert-rules.v1.ts).
 * Each rule is checked against the schema its `type` names, so an error
 * points at the field that is wrong and says what that field allows,
 * instead of "does not match any of the union's members".
 */
import { readFileSync } from 'node:fs'
import type { TSchema } from 'typebox'
import { Value } from 'typebox/value'
import { AlertRulesFile, RULE_SCHEMAS, RULE_TYPES, type AlertRule } from '../../schemas/alert-rules.v1.js'
import { BenchstreamError } from '../core/errors.js'
import { schemaProblems } from '../core/validation.js'

/** Problems listed in one error before the rest are summarised. */
const MAX_LISTED_PROBLEMS = 10

export function loadAlertRules(file: string): AlertRulesFile {
  let text: string
  try {
    text = readFileSync(file, 'utf8')
  } catch (err) {
    throw new BenchstreamError(
      'BS_ERR_CONFIG',
      `cannot read the alert rules file ${file} (ALERTS_RULES_FILE): ${(err as Error).message}`,
      { cause: err },
    )
  }
  let json: unknown
  try {
    json = JSON.parse(text)
  } catch (err) {
    throw new BenchstreamError(
      'BS_ERR_CONFIG',
      `the alert rules file ${file} is not valid JSON: ${(err as Error).message}`,
      { cause: err },
    )
  }
  return validateAlertRules(json, file)
}

/** Validates a parsed rules file; throws BS_ERR_CONFIG listing every bad field with what it allows. */
export function validateAlertRules(json: unknown, source: string): AlertRulesFile {
  const problems: string[] = []
  if (!Value.Check(AlertRulesFile, json)) {
    problems.push(...describeErrors(AlertRulesFile, json, ''))
    fail(source, problems)
  }
  const file = json
  const names = new Map<string, number>()
  file.rules.forEach((rule, i) => {
    const at = `rules[${i}]`
    if (typeof rule !== 'object' || rule === null || Array.isArray(rule)) {
      problems.push(`${at}: expected an object with a "type" of ${RULE_TYPES.join(', ')}`)
      return
    }
    const type = (rule as { type?: unknown }).type
    if (typeof type !== 'string' || !(RULE_TYPES as readonly string[]).includes(type)) {
      problems.push(`${at}.type: got ${show(type)}; allowed: ${RULE_TYPES.join(', ')}`)
      return
    }
    const schema = RULE_SCHEMAS[type as keyof typeof RULE_SCHEMAS]
    if (!Value.Check(schema, rule)) {
      problems.push(...describeErrors(schema, rule, at, type))
      return
    }
    const name = rule.name
    const first = names.get(name)
    if (first !== undefined)
      problems.push(
        `${at}.name: ${show(name)} is already the name of rules[${first}]; allowed: a name no other ` +
          `rule has (it identifies the alert)`,
      )
    else names.set(name, i)
  })
  if (problems.length > 0) fail(source, problems)
  return { version: file.version, rules: file.rules as AlertRule[] }
}

function fail(source: string, problems: string[]): never {
  const listed = problems.slice(0, MAX_LISTED_PROBLEMS)
  const more = problems.length > listed.length ? `\n  ... and ${problems.length - listed.length} more` : ''
  throw new BenchstreamError('BS_ERR_CONFIG', `invalid alert rules in ${source}:\n  ${listed.join('\n  ')}${more}`)
}

function describeErrors(schema: TSchema, value: unknown, prefix: string, type?: string): string[] {
  return schemaProblems(schema, value, prefix, type === undefined ? 'the rules file' : `a ${type} rule`)
}

function show(v: unknown): string {
  return v === undefined ? 'nothing' : JSON.stringify(v)
}
