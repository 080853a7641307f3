/**
 * What every number generator is (YCSB's NumberGenerator) and the checks of
 * their arguments (BS_ERR_WORKLOAD), shared by generators.ts and
 * zipfian-generators.ts.
 */

import { BenchstreamError } from '../errors.js'

/** What YCSB calls a NumberGenerator: draws values and remembers the last one. */
export interface NumberGenerator {
  nextValue(): number
  /** The value most recently drawn (YCSB's lastValue()). */
  lastValue(): number
}

export function invalid(message: string): BenchstreamError {
  return new BenchstreamError('BS_ERR_WORKLOAD', message)
}

export function requireInteger(name: string, value: number, min = 0): void {
  if (!Number.isSafeInteger(value) || value < min) {
    throw invalid(`${name} must be an integer in [${min}, ${Number.MAX_SAFE_INTEGER}]; got ${value}`)
  }
}

export function requireRange(lbName: string, lb: number, ubName: string, ub: number): void {
  requireInteger(lbName, lb)
  requireInteger(ubName, ub)
  if (ub < lb) throw invalid(`${ubName} (${ub}) must be >= ${lbName} (${lb})`)
}
