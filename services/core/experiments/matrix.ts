/**
 * The runs a plan asks for, in the order they run, and what each client of a
 * run gets: pure.
 *
 * Order: per workload, the warm-up runs, then repetition k of every setup in
 * an order rotated by k (A B, B A, A B, ...): a machine that drifts during
 * the experiment (a cache warming, a neighbour getting busy) then weighs on
 * every setup alike instead of the one that happens to run last. `grouped`
 * runs every run of a setup before the next, for setups that cannot run side
 * by side.
 */
import type { Plan } from '../../../schemas/experiment-plan.v1.js'
import type { Cell } from '../../../schemas/experiment-state.v1.js'
import { ID_PATTERN } from '../../../schemas/events.v1.js'
import { firstRepetitions, workloadName } from './plan.js'

/** The cells of the plan in run order, with no attempts yet. */
export function buildCells(plan: Plan, experimentId: string): Cell[] {
  const setups = plan.setups.map((s) => s.name)
  const warmup = plan.warmup ?? 0
  const cells: Cell[] = []
  const add = (workload: string, setup: string, repetition: number, isWarmup: boolean): void => {
    cells.push({
      key: cellKey(workload, setup, repetition, isWarmup),
      workload,
      setup,
      repetition,
      warmup: isWarmup,
      group: groupId(experimentId, setup, workload, isWarmup),
      attempts: [],
    })
  }
  const workloads = plan.workloads.map(workloadName)
  if ((plan.order ?? 'interleaved') === 'grouped') {
    for (const setup of setups)
      for (const w of workloads) {
        for (let k = 1; k <= warmup; k++) add(w, setup, k, true)
        for (let k = 1; k <= firstRepetitions(plan); k++) add(w, setup, k, false)
      }
    return cells
  }
  for (const w of workloads) {
    for (let k = 1; k <= warmup; k++) for (const setup of setups) add(w, setup, k, true)
    for (let k = 1; k <= firstRepetitions(plan); k++) cells.push(...roundCells(plan, experimentId, w, k))
  }
  return cells
}

/** Repetition k of every setup of a workload, in the order rotated by k (A B, B A, ...): one round, one look. */
export function roundCells(plan: Plan, experimentId: string, workload: string, k: number): Cell[] {
  const setups = plan.setups.map((s) => s.name)
  return setups.map((_, i) => {
    const setup = setups[(i + k - 1) % setups.length]!
    return {
      key: cellKey(workload, setup, k, false),
      workload,
      setup,
      repetition: k,
      warmup: false,
      group: groupId(experimentId, setup, workload, false),
      attempts: [],
    }
  })
}

export function cellKey(workload: string, setup: string, repetition: number, warmup: boolean): string {
  return `${workload}/${setup}/${warmup ? 'warmup' : 'run'}${repetition}`
}

/** An id of the project's rule from readable parts, or from a short fallback when that would be too long. */
function idOf(readable: string, fallback: string): string {
  return ID_PATTERN.test(readable) ? readable : fallback
}

/** The group of a setup and workload's compared runs (warm-up runs have a group of their own). */
export function groupId(experimentId: string, setup: string, workload: string, warmup: boolean): string {
  const suffix = warmup ? '-warmup' : ''
  // An experiment id may have 64 characters itself (--id): the fallback keeps room for `-g<hash>` and the suffix, and
  // hashes the whole id, so that experiments whose ids begin alike still get groups of their own.
  return idOf(
    `${experimentId}-${setup}-${workload}${suffix}`,
    `${experimentId.slice(0, 54 - suffix.length)}-g${hash(`${experimentId}/${setup}/${workload}`)}${suffix}`,
  )
}

/** One run of a cell: attempt 1 is `<group>-<k>`, a retry `<group>-<k>.<attempt>`. */
export function runIdOf(cell: Pick<Cell, 'group' | 'repetition'>, attempt: number): string {
  const readable = `${cell.group}-${cell.repetition}${attempt > 1 ? `.${attempt}` : ''}`
  return idOf(readable, `${cell.group.slice(0, 48)}-${hash(readable)}`)
}

/** A new experiment's id: the plan's name and the time, in base 36 (ms), under the id rule's 64 characters. */
export function experimentIdOf(name: string, nowMs: number): string {
  return `${name.slice(0, 36)}-${nowMs.toString(36)}`
}

/** Eight hex digits of FNV-1a: a short, stable stand-in for a name too long for an id. */
function hash(s: string): string {
  let h = 0x811c9dc5
  for (let i = 0; i < s.length; i++) h = Math.imul(h ^ s.charCodeAt(i), 0x01000193) >>> 0
  return h.toString(16).padStart(8, '0')
}

/** Client i of n: its share of the target (ops/s) and of a total (operations, records). */
export function share(total: number, n: number, i: number): number {
  const q = Math.floor(total / n)
  return q + (i < total - q * n ? 1 : 0)
}

/** The key range client i of n loads: YCSB's insertstart and insertcount, together covering [start, start + count). */
export function keyRange(
  start: number,
  count: number,
  n: number,
  i: number,
): { insertstart: number; insertcount: number } {
  let from = start
  for (let j = 0; j < i; j++) from += share(count, n, j)
  return { insertstart: from, insertcount: share(count, n, i) }
}
