/**
 * The flags an experiment's agent gives every client of a run, whichever
 * client it is (`benchstream run|load`, `benchstream ycsb`): read the same
 * way, with the same messages. `usage` makes the command's own usage error
 * (its help text after the message).
 */
import { ID_PATTERN, ID_RULE } from '../../schemas/events.v1.js'
import type { BenchstreamError } from '../core/errors.js'

type Usage = (message: string) => BenchstreamError

/** Largest clock offset a client may report, ms: a day either way (schemas/events.v1.ts RunLifecycleBody). */
const MAX_CLOCK_OFFSET_MS = 86_400_000

/** An integer in [min, max]; every flag states its own range the same way whatever was wrong. */
export function intInRange(name: string, raw: string | undefined, min: number, max: number, usage: Usage): number {
  const v = Number(raw)
  if (raw === undefined || raw.trim() === '' || !Number.isInteger(v) || v < min || v > max)
    throw usage(`${name} ${JSON.stringify(raw ?? '')} is not allowed: expected an integer from ${min} to ${max}`)
  return v
}

/** --group: the group of repetitions the run belongs to. */
export function groupFlag(raw: string | undefined, usage: Usage): string {
  if (raw === undefined || !ID_PATTERN.test(raw))
    throw usage(`--group ${JSON.stringify(raw ?? '')} is not allowed: ${ID_RULE}`)
  return raw
}

/** --repetition: the run's number in its group. */
export const repetitionFlag = (raw: string | undefined, usage: Usage): number =>
  intInRange('--repetition', raw, 1, 100_000, usage)

/** --barrier: stdin is the only barrier there is. */
export function barrierFlag(raw: string | undefined, usage: Usage): 'stdin' {
  if (raw !== 'stdin') throw usage(`--barrier ${JSON.stringify(raw ?? '')} is not allowed: expected stdin`)
  return raw
}

/** --expected-clients: how many clients the run has. */
export const expectedClientsFlag = (raw: string | undefined, usage: Usage): number =>
  intInRange('--expected-clients', raw, 1, 1024, usage)

/** --clock-offset-ms: this machine's clock minus the broker's, as its agent measured it. */
export function clockOffsetFlag(raw: string | undefined, usage: Usage): number {
  const v = Number(raw)
  if (raw === undefined || raw.trim() === '' || !Number.isFinite(v) || Math.abs(v) > MAX_CLOCK_OFFSET_MS)
    throw usage(`--clock-offset-ms ${JSON.stringify(raw ?? '')} is not allowed: a number of ms within a day either way`)
  return v
}
