/**
 * The command line of a benchmark in bench/: flags with ranges, defaults and BENCH_* environment variables, counts
 * written 20M or 5k, and the usage text --help prints.
 */
import { parseArgs } from 'node:util'
import type { Env } from '../services/common/config.js'
import { BenchstreamError } from '../services/core/errors.js'

export type FlagSpec =
  | { kind: 'int'; default: number; min: number; max: number; help: string }
  | { kind: 'ints'; default: readonly number[]; min: number; max: number; help: string }
  | { kind: 'bool'; default: boolean; help: string }
  | { kind: 'choices'; default: readonly string[]; allowed: readonly string[]; help: string }

type FlagValue<S extends FlagSpec> = S extends { kind: 'int' }
  ? number
  : S extends { kind: 'ints' }
    ? number[]
    : S extends { kind: 'bool' }
      ? boolean
      : string[]
export type Flags<S extends Record<string, FlagSpec>> = { [K in keyof S]: FlagValue<S[K]> }

/** The broker port used when KAFKA_BROKERS is unset (its controller takes the next port). */
export const KAFKA_FLAGS = {
  'kafka-port': {
    kind: 'int',
    default: 19492,
    min: 1024,
    max: 65534,
    help: 'port of the private broker this bench starts when KAFKA_BROKERS is unset',
  },
} as const satisfies Record<string, FlagSpec>

/** `--kafka-port` -> `BENCH_KAFKA_PORT`. */
export function envName(flag: string): string {
  return `BENCH_${flag.toUpperCase().replaceAll('-', '_')}`
}

const SUFFIX: Record<string, number> = { '': 1, k: 1e3, K: 1e3, m: 1e6, M: 1e6, g: 1e9, G: 1e9 }

/** Integer with optional `_` separators and a k/M/G suffix: `20M`, `1.5k`, `5_000_000`. */
function parseCount(raw: string): number | undefined {
  const m = /^(\d+(?:\.\d+)?)([kKmMgG]?)$/.exec(raw.replaceAll('_', '').trim())
  if (m === null) return undefined
  const v = Number(m[1]) * SUFFIX[m[2]!]!
  return Number.isSafeInteger(v) ? v : undefined
}

function usageText(bench: string, summary: string, specs: Record<string, FlagSpec>): string {
  const lines = Object.entries(specs).map(([name, s]) => {
    const def = s.kind === 'bool' ? String(s.default) : s.kind === 'int' ? String(s.default) : s.default.join(',')
    const range =
      s.kind === 'int' || s.kind === 'ints'
        ? ` (${s.min}..${s.max})`
        : s.kind === 'choices'
          ? ` (any of ${s.allowed.join(',')})`
          : ''
    return (
      `  --${(s.kind === 'bool' ? `[no-]${name}` : name).padEnd(22)} ${s.help}${range}; default ${def}; ` +
      `env ${envName(name)}`
    )
  })
  return (
    `usage: node dist/bench/${bench}.js [options]\n${summary}\n${lines.join('\n')}\nNumbers take ` +
    `_ separators and k/M/G suffixes (20M = 20000000).`
  )
}

/**
 * Reads `--name value` / `--name=value` flags (boolean ones as `--name` /
 * `--no-name`) with node's util.parseArgs, then `BENCH_NAME` from the
 * environment, then the default. `--help` prints the usage and exits.
 * Anything unknown or out of range is a BS_ERR_USAGE naming what is allowed.
 */
export function parseFlags<S extends Record<string, FlagSpec>>(
  bench: string,
  summary: string,
  argv: readonly string[],
  env: Env,
  specs: S,
): Flags<S> {
  const usage = usageText(bench, summary, specs)
  const options: Record<string, { type: 'string' | 'boolean'; short?: string }> = {
    help: { type: 'boolean', short: 'h' },
  }
  for (const [name, spec] of Object.entries(specs))
    options[name] = { type: spec.kind === 'bool' ? 'boolean' : 'string' }
  let values: Record<string, string | boolean | undefined>
  try {
    ;({ values } = parseArgs({ args: [...argv], options, strict: true, allowPositionals: false, allowNegative: true }))
  } catch (err) {
    throw new BenchstreamError('BS_ERR_USAGE', `${(err as Error).message}\n${usage}`)
  }
  if (values.help === true) {
    process.stdout.write(usage + '\n')
    process.exit(0)
  }
  const raw = new Map<string, string>()
  for (const name of Object.keys(specs)) {
    const v = values[name]
    if (v !== undefined) raw.set(name, String(v))
  }
  const out: Record<string, unknown> = {}
  for (const [name, spec] of Object.entries(specs)) {
    const fromEnv = env[envName(name)]
    const given = raw.get(name) ?? (fromEnv === undefined || fromEnv === '' ? undefined : fromEnv)
    const where = raw.has(name) ? `--${name}` : envName(name)
    if (given === undefined) {
      out[name] = spec.kind === 'ints' || spec.kind === 'choices' ? [...spec.default] : spec.default
      continue
    }
    switch (spec.kind) {
      case 'int': {
        const v = parseCount(given)
        if (v === undefined || v < spec.min || v > spec.max)
          throw new BenchstreamError(
            'BS_ERR_USAGE',
            `${where} ${JSON.stringify(given)} is not allowed: expected an integer from ${spec.min} to ${spec.max}`,
          )
        out[name] = v
        break
      }
      case 'ints': {
        const vs = given.split(',').map((x) => parseCount(x))
        if (vs.length === 0 || vs.some((v) => v === undefined || v < spec.min || v > spec.max)) {
          throw new BenchstreamError(
            'BS_ERR_USAGE',
            `${where} ${JSON.stringify(given)} is not allowed: expected a comma-separated list of integers ` +
              `from ${spec.min} to ${spec.max}`,
          )
        }
        out[name] = vs
        break
      }
      case 'bool': {
        const v = given.toLowerCase()
        if (['1', 'true', 'yes', 'on'].includes(v)) out[name] = true
        else if (['0', 'false', 'no', 'off'].includes(v)) out[name] = false
        else
          throw new BenchstreamError(
            'BS_ERR_USAGE',
            `${where} ${JSON.stringify(given)} is not allowed: expected true/false (or 1/0, yes/no, on/off)`,
          )
        break
      }
      case 'choices': {
        const vs = given.split(',').map((x) => x.trim())
        const bad = vs.filter((v) => !spec.allowed.includes(v))
        if (vs.length === 0 || bad.length > 0)
          throw new BenchstreamError(
            'BS_ERR_USAGE',
            `${where} ${JSON.stringify(given)} is not allowed: expected a ` +
              `comma-separated list from ${spec.allowed.join(', ')}`,
          )
        out[name] = vs
        break
      }
    }
  }
  return out as Flags<S>
}
