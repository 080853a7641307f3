/**
 * Figures derived from a run's windows, pure: which operations and keys to draw, totals per window, the last
 * window that says what the run sustained, and series of two runs joined on their x values. Nothing here averages
 * percentiles: those come from the server's merged histograms.
 */
import type { LiveWindow } from '../../../schemas/live-api.v1.js'
import type { Side } from './stream-state.js'

/** YCSB's operations in its report's order; others follow by name. */
const OP_ORDER = ['READ', 'UPDATE', 'INSERT', 'SCAN', 'READ-MODIFY-WRITE', 'DELETE']

/** x values and y series of one chart, as uPlot takes them (x in seconds). */
export type Table = [number[], ...Array<Array<number | null>>]

/** The operations of a run: those of its summary and of every window, in OP_ORDER. */
export function opsOf(side: Side): string[] {
  const seen = new Set(Object.keys(side.summary?.byOp ?? {}))
  for (const w of side.windows) for (const op of Object.keys(w.ops)) seen.add(op)
  const rank = (op: string): number => (OP_ORDER.indexOf(op) === -1 ? OP_ORDER.length : OP_ORDER.indexOf(op))
  return [...seen].sort((a, b) => rank(a) - rank(b) || a.localeCompare(b))
}

/** The keys of a per-window map that ever had a value other than 0 (all but `skip`), by name. */
export function keysOf(
  windows: readonly LiveWindow[],
  field: 'statuses' | 'clients' | 'serverCacheHit',
  skip?: string,
): string[] {
  const seen = new Set<string>()
  for (const w of windows)
    for (const [k, v] of Object.entries(w[field])) if (k !== skip && v != null && v !== 0) seen.add(k)
  return [...seen].sort((a, b) => a.localeCompare(b))
}

export const windowTotal = (w: LiveWindow): number => Object.values(w.ops).reduce((a, o) => a + o.operations, 0)

/**
 * The newest complete window that covers a whole window length: the first
 * window of a run starts before the run does, and the last one of an ended
 * run is cut short by the end, so neither says what the run sustained.
 */
export function lastFullWindow(side: Side): LiveWindow | null {
  const ws = side.windows
  const first = side.dropped === 0 && ws[0] !== undefined ? ws[0].t : -Infinity
  const final = side.frontier?.final
  for (let i = ws.length - 1; i >= 0; i--) {
    const w = ws[i]!
    if (w.t === first) break
    if (final && i === ws.length - 1) continue
    return w
  }
  return null
}

/** x values in seconds (uPlot's unit for time scales); a baseline is shifted onto this run's start. */
export const xOf = (side: Side, shiftMs: number): number[] => side.windows.map((w) => (w.t + shiftMs) / 1000)

/** Merges two series tables on their x values; a missing point is null (drawn across with spanGaps). */
export function join(
  xa: readonly number[],
  ya: ReadonlyArray<ReadonlyArray<number | null>>,
  xb: readonly number[],
  yb: ReadonlyArray<ReadonlyArray<number | null>>,
): Table {
  const xs = [...new Set([...xa, ...xb])].sort((a, b) => a - b)
  const ia = new Map(xa.map((x, i) => [x, i]))
  const ib = new Map(xb.map((x, i) => [x, i]))
  const pick = (idx: Map<number, number>, s: ReadonlyArray<number | null>): Array<number | null> =>
    xs.map((x) => {
      const i = idx.get(x)
      return i === undefined ? null : (s[i] ?? null)
    })
  return [xs, ...ya.map((s) => pick(ia, s)), ...yb.map((s) => pick(ib, s))]
}

/** How far a baseline's windows move to start with the run shown, ms; null without a baseline with windows. */
export function baselineShift(main: Side, base: Side, baselineId: string): number | null {
  if (!baselineId || !base.windows.length || main.startMs == null || base.startMs == null) return null
  return main.startMs - base.startMs
}
