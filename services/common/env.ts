/**
 * Small, strict readers for environment variables and flags. Each failure is
 * a BS_ERR_CONFIG that names the variable, what it got and what it allows.
 */
import { BenchstreamError } from '../core/errors.js'

export type Env = Readonly<Record<string, string | undefined>>

export function str(env: Env, name: string, fallback: string): string {
  const v = env[name]
  return v === undefined || v === '' ? fallback : v
}

export function int(env: Env, name: string, fallback: number, min: number, max = Number.MAX_SAFE_INTEGER): number {
  const raw = env[name]
  if (raw === undefined || raw === '') return fallback
  const v = Number(raw)
  if (!Number.isInteger(v) || v < min || v > max) {
    throw new BenchstreamError('BS_ERR_CONFIG', `${name}=${JSON.stringify(raw)} is not allowed: expected an integer from ${min} to ${max}`)
  }
  return v
}

export function bool(env: Env, name: string, fallback: boolean): boolean {
  const raw = env[name]
  if (raw === undefined || raw === '') return fallback
  if (['1', 'true', 'yes', 'on'].includes(raw.toLowerCase())) return true
  if (['0', 'false', 'no', 'off'].includes(raw.toLowerCase())) return false
  throw new BenchstreamError('BS_ERR_CONFIG', `${name}=${JSON.stringify(raw)} is not allowed: expected true/false (or 1/0, yes/no, on/off)`)
}

export function oneOf<T extends string>(env: Env, name: string, fallback: T, allowed: readonly T[]): T {
  const raw = env[name]
  if (raw === undefined || raw === '') return fallback
  if (!(allowed as readonly string[]).includes(raw)) {
    throw new BenchstreamError('BS_ERR_CONFIG', `${name}=${JSON.stringify(raw)} is not allowed: expected one of ${allowed.join(', ')}`)
  }
  return raw as T
}

/** Deep-freezes a config object so nothing changes it after start-up validation. */
export function freeze<T extends object>(o: T): Readonly<T> {
  for (const v of Object.values(o)) if (typeof v === 'object' && v !== null && !Object.isFrozen(v)) freeze(v)
  return Object.freeze(o)
}
