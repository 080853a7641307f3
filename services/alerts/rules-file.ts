/**
 * Reads and validates the alert rules file (schemas/alert-rules.v1.ts).
 * Each rule is checked against the schema its `type` names, so an error
 * points at the field that is wrong and says what that field allows,
 * instead of "does not match any of the union's members".
 */
import { readFileSync } from 'node:fs'
import type { TSchema } from '@sinclair/typebox'
import { Value } from '@sinclair/typebox/value'
import { ALERT_RULES_VERSION, AlertRulesFile, RULE_SCHEMAS, RULE_TYPES, type AlertRule } from '../../schemas/alert-rules.v1.js'
import { BenchstreamError } from '../core/errors.js'

/** Problems listed in one error before the rest are summarised. */
const MAX_LISTED_PROBLEMS = 10

export function loadAlertRules(file: string): AlertRulesFile {
  let text: string
  try {
    text = readFileSync(file, 'utf8')
  } catch (err) {
    throw new BenchstreamError('BS_ERR_CONFIG', `cannot read the alert rules file ${file} (ALERTS_RULES_FILE): ${(err as Error).message}`, { cause: err })
  }
  let json: unknown
  try {
    json = JSON.parse(text)
  } catch (err) {
    throw new BenchstreamError('BS_ERR_CONFIG', `the alert rules file ${file} is not valid JSON: ${(err as Error).message}`, { cause: err })
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
  const file = json as { version: typeof ALERT_RULES_VERSION; rules: unknown[] }
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
    const name = (rule as AlertRule).name
    const first = names.get(name)
    if (first !== undefined) problems.push(`${at}.name: ${show(name)} is already the name of rules[${first}]; allowed: a name no other rule has (it identifies the alert)`)
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
  const out: string[] = []
  const seen = new Set<string>()
  for (const e of Value.Errors(schema, value)) {
    const field = (prefix + pointerToPath(e.path)).replace(/^\./, '') || '(the file)'
    // One line per field: a union reports each member's mismatch separately.
    if (seen.has(field)) continue
    seen.add(field)
    if (e.message === 'Unexpected property') {
      const known = Object.keys((schema as { properties?: Record<string, unknown> }).properties ?? {})
      out.push(`${field}: is not a field of ${type === undefined ? 'the rules file' : `a ${type} rule`}; allowed fields: ${known.join(', ')}`)
    } else if (e.value === undefined) {
      out.push(`${field}: is missing; allowed: ${allowed(e.schema)}`)
    } else {
      out.push(`${field}: got ${show(e.value)}; allowed: ${allowed(e.schema)}`)
    }
  }
  return out
}

/** What a schema accepts, in words: its description, or the literals of a union. */
function allowed(schema: TSchema): string {
  const s = schema as { description?: string; anyOf?: Array<{ const?: unknown }>; const?: unknown; type?: unknown }
  if (typeof s.description === 'string') return s.description
  if (s.anyOf !== undefined && s.anyOf.every((m) => m.const !== undefined)) return `one of ${s.anyOf.map((m) => String(m.const)).join(', ')}`
  if (s.const !== undefined) return JSON.stringify(s.const)
  return `a value of type ${String(s.type)}`
}

/** JSON pointer (/rules/0/ops/1) to a readable path (rules[0].ops[1]). */
function pointerToPath(pointer: string): string {
  return pointer
    .split('/')
    .slice(1)
    .map((p) => p.replaceAll('~1', '/').replaceAll('~0', '~'))
    .map((p) => (/^\d+$/.test(p) ? `[${p}]` : `.${p}`))
    .join('')
}

function show(v: unknown): string {
  return v === undefined ? 'nothing' : JSON.stringify(v)
}
