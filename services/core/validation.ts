/**
 * Schema problems in words. TypeBox reports errors as JSON pointers and
 * keywords; users need "rules[2].percent: got 150; allowed: a number from
 * 1 to 100". Used for the alert rules file, the environment and the API, so
 * every validated input explains itself the same way.
 */
import type { TSchema } from 'typebox'
import { Value } from 'typebox/value'

/** One readable line per field that is wrong: what it got and what it allows. */
export function schemaProblems(schema: TSchema, value: unknown, prefix = '', subject = 'the input'): string[] {
  const out: string[] = []
  const seen = new Set<string>()
  const add = (field: string, line: string): void => {
    // One line per field: a union reports each member's mismatch separately.
    if (seen.has(field)) return
    seen.add(field)
    out.push(line)
  }
  for (const e of Value.Errors(schema, value)) {
    const at = prefix + pointerToPath(e.instancePath)
    const sub = resolvePointer(schema, e.schemaPath) as { properties?: Record<string, TSchema> } | undefined
    const params = e.params as Record<string, unknown>
    if (e.keyword === 'boolean') continue // the "schema is false" twin of additionalProperties
    if (e.keyword === 'additionalProperties') {
      const known = Object.keys(sub?.properties ?? {})
      for (const extra of (params.additionalProperties as string[] | undefined) ?? []) {
        const field = name(`${at}.${extra}`)
        add(field, `${field}: is not a field of ${subject}; allowed fields: ${known.join(', ')}`)
      }
    } else if (e.keyword === 'required') {
      const props = sub?.properties ?? {}
      for (const missing of (params.requiredProperties as string[] | undefined) ?? []) {
        const field = name(`${at}.${missing}`)
        const s = props[missing]
        add(field, `${field}: is missing; allowed: ${s === undefined ? 'a value' : allowedText(s)}`)
      }
    } else {
      const field = name(at)
      // For a union, describe the whole union rather than the member that failed last.
      const described = (
        e.schemaPath.includes('/anyOf/') ? resolvePointer(schema, e.schemaPath.replace(/\/anyOf\/\d+.*$/, '')) : sub
      ) as TSchema | undefined
      const got = resolvePointer(value, '#' + e.instancePath)
      const allowed = described === undefined ? e.message : allowedText(described)
      // A key present with an undefined value is as missing as an absent one.
      add(
        field,
        got === undefined
          ? `${field}: is missing; allowed: ${allowed}`
          : `${field}: got ${show(got)}; allowed: ${allowed}`,
      )
    }
  }
  return out
}

/** What a schema accepts, in words: its description, or its literals, bounds and type. */
export function allowedText(schema: TSchema): string {
  const s = schema as {
    description?: string
    enum?: unknown[]
    anyOf?: Array<{ const?: unknown }>
    const?: unknown
    type?: unknown
    minimum?: number
    maximum?: number
    pattern?: string
    minLength?: number
    maxLength?: number
  }
  if (typeof s.description === 'string') return s.description
  if (s.enum !== undefined) return `one of ${s.enum.map(String).join(', ')}`
  if (s.anyOf !== undefined && s.anyOf.every((m) => m.const !== undefined))
    return `one of ${s.anyOf.map((m) => String(m.const)).join(', ')}`
  if (s.const !== undefined) return JSON.stringify(s.const)
  if (s.type === 'integer' || s.type === 'number') {
    const kind = s.type === 'integer' ? 'an integer' : 'a number'
    if (s.minimum !== undefined && s.maximum !== undefined) return `${kind} from ${s.minimum} to ${s.maximum}`
    if (s.minimum !== undefined) return `${kind} of at least ${s.minimum}`
    if (s.maximum !== undefined) return `${kind} of at most ${s.maximum}`
    return kind
  }
  if (s.type === 'boolean') return 'true or false'
  if (s.type === 'string') {
    if (s.pattern !== undefined) return `text matching /${s.pattern}/`
    if (s.maxLength !== undefined) return `text of ${s.minLength ?? 0} to ${s.maxLength} characters`
    return 'text'
  }
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

/** A field path without a leading dot; the whole input when empty. */
function name(path: string): string {
  return path.replace(/^\./, '') || '(the whole value)'
}

/** The value at a JSON pointer (`#/a/0/b`), or undefined. */
function resolvePointer(root: unknown, pointer: string): unknown {
  let v: unknown = root
  for (const raw of pointer.replace(/^#/, '').split('/').slice(1)) {
    const key = raw.replaceAll('~1', '/').replaceAll('~0', '~')
    if (typeof v !== 'object' || v === null) return undefined
    v = (v as Record<string, unknown>)[key]
  }
  return v
}

function show(v: unknown): string {
  return v === undefined ? 'nothing' : JSON.stringify(v)
}
