/**
 * Configuration from the environment, through one schema per service.
 *
 * Each service's config.ts declares its variables once, as a TypeBox object
 * whose keys are the variable names: type, bounds, `default` and
 * `description` live there and nowhere else. readEnv() converts the strings,
 * applies the defaults, validates, and fails with BS_ERR_CONFIG naming the
 * variable, what it got and what is allowed. The configuration table of
 * docs/reference/configuration.md is generated from the same schemas (npm run
 * generate), and a test fails when it drifts.
 */
import { Type, type Static, type TObject, type TProperties, type TSchema } from 'typebox'
import { Value } from 'typebox/value'
import { BenchstreamError } from '../core/errors.js'
import { allowedText } from '../core/validation.js'

export type Env = Readonly<Record<string, string | undefined>>

const TRUE = ['1', 'true', 'yes', 'on']
const FALSE = ['0', 'false', 'no', 'off']

/** Schema helpers with the wording the table and the errors use. */
export const EnvVar = {
  integer: (opts: { default: number; minimum: number; maximum: number; description: string }) => Type.Integer(opts),
  boolean: (opts: { default: boolean; description: string }) => Type.Boolean(opts),
  string: (opts: { default: string; description: string; pattern?: string; allowed?: string; minLength?: number }) =>
    Type.String({
      default: opts.default,
      description: opts.description,
      ...(opts.pattern === undefined ? {} : { pattern: opts.pattern }),
      ...(opts.minLength === undefined ? {} : { minLength: opts.minLength }),
      ...(opts.allowed === undefined ? {} : { allowed: opts.allowed }),
    }),
  /** A variable without a default: unset means "not configured". */
  optional: (opts: { description: string; pattern?: string; allowed?: string }) =>
    Type.Optional(
      Type.String({
        description: opts.description,
        ...(opts.pattern === undefined ? {} : { pattern: opts.pattern }),
        ...(opts.allowed === undefined ? {} : { allowed: opts.allowed }),
      }),
    ),
  oneOf: <const T extends readonly string[]>(values: T, opts: { default: T[number]; description: string }) =>
    Type.Enum<[...T]>(values, opts),
}

/**
 * Reads the variables a schema declares from env. Empty counts as unset
 * (so `VAR= cmd` restores the default). Throws BS_ERR_CONFIG on the first
 * variable that is not allowed.
 */
export function readEnv<P extends TProperties>(schema: TObject<P>, env: Env): Static<TObject<P>> {
  const out: Record<string, unknown> = {}
  for (const [name, s] of Object.entries<TSchema>(schema.properties)) {
    const raw = env[name]
    const def = (s as { default?: unknown }).default
    if (raw === undefined || raw === '') {
      if (def !== undefined) out[name] = def
      continue
    }
    const value = convert(s, raw)
    if (value === undefined || !Value.Check(s, value))
      throw new BenchstreamError(
        'BS_ERR_CONFIG',
        `${name}=${JSON.stringify(raw)} is not allowed: expected ${allowedFor(s)}`,
      )
    out[name] = value
  }
  return out as Static<TObject<P>>
}

/** The string of an environment variable as the schema's type, or undefined when it cannot be one. */
function convert(s: TSchema, raw: string): unknown {
  const type = (s as { type?: unknown }).type
  if (type === 'integer' || type === 'number') {
    const n = Number(raw.trim())
    return raw.trim() === '' || !Number.isFinite(n) ? undefined : n
  }
  if (type === 'boolean') {
    const v = raw.toLowerCase()
    return TRUE.includes(v) ? true : FALSE.includes(v) ? false : undefined
  }
  return raw
}

/** What a variable allows, in the words used by errors and by the configuration table. */
export function allowedFor(s: TSchema): string {
  const x = s as { type?: unknown; allowed?: string; enum?: unknown[] }
  if (x.allowed !== undefined) return x.allowed
  if (x.type === 'boolean')
    return `true or false (also ${TRUE.slice(0, 1).concat(FALSE.slice(0, 1)).join('/')}, yes/no, on/off)`
  // allowedText prefers the description; for a variable the bounds say more.
  const { description: _ignored, ...rest } = s as { description?: string }
  return allowedText(rest)
}

/** One row per variable: name, default, allowed values, meaning (for docs/reference/configuration.md). */
export function envTable(
  schemas: ReadonlyArray<TObject>,
): Array<{ name: string; default: string | undefined; allowed: string; meaning: string }> {
  const rows: Array<{ name: string; default: string | undefined; allowed: string; meaning: string }> = []
  const seen = new Set<string>()
  for (const schema of schemas) {
    for (const [name, s] of Object.entries<TSchema>(schema.properties)) {
      if (seen.has(name)) continue
      seen.add(name)
      const x = s as { default?: string | number | boolean; description?: string }
      rows.push({
        name,
        default: x.default === undefined ? undefined : String(x.default),
        allowed: allowedFor(s),
        meaning: x.description ?? '',
      })
    }
  }
  return rows
}

/** Deep-freezes a config object so nothing changes it after start-up validation. */
export function freeze<T extends object>(o: T): Readonly<T> {
  for (const v of Object.values(o)) if (typeof v === 'object' && v !== null && !Object.isFrozen(v)) freeze(v)
  return Object.freeze(o)
}
