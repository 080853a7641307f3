/**
 * The windows of a release comparison's runs as samples: per run and
 * operation the steady windows (the partial first and last left out), with an
 * OVERALL series summed over the operations.
 */

import type { WindowFigures } from '../../../schemas/runs-api.v1.js'
import { OVERALL } from './run-values.js'

/** Per run and operation: the steady windows in time order (the run's first and last window left out). */
export function groupWindows(windows: readonly WindowFigures[]): Map<string, Map<string, WindowFigures[]>> {
  const span = new Map<string, { first: number; last: number }>()
  for (const w of windows) {
    const s = span.get(w.runId)
    span.set(
      w.runId,
      s === undefined ? { first: w.tS, last: w.tS } : { first: Math.min(s.first, w.tS), last: Math.max(s.last, w.tS) },
    )
  }
  const out = new Map<string, Map<string, WindowFigures[]>>()
  for (const w of windows) {
    const s = span.get(w.runId)!
    // Partial windows: the run started and ended inside them.
    if (w.tS === s.first || w.tS === s.last) continue
    let ops = out.get(w.runId)
    if (ops === undefined) out.set(w.runId, (ops = new Map()))
    const list = ops.get(w.op)
    if (list === undefined) ops.set(w.op, [w])
    else list.push(w)
  }
  for (const ops of out.values()) {
    // OVERALL per window: every call of every operation (its throughput counts failed calls too, as the report's does).
    const all = new Map<number, WindowFigures>()
    for (const list of ops.values()) {
      for (const w of list) {
        const o = all.get(w.tS) ?? {
          ...w,
          op: OVERALL,
          operations: 0,
          errors: 0,
          opsPerSec: 0,
          errorRate: null,
          avgUs: null,
          maxUs: null,
          p50Us: null,
          p95Us: null,
          p99Us: null,
          p999Us: null,
          cacheHitRatio: null,
        }
        o.operations += w.operations
        o.errors += w.errors
        o.opsPerSec = ((o.operations + o.errors) * 1000) / o.windowMs
        o.errorRate = o.operations + o.errors === 0 ? null : o.errors / (o.operations + o.errors)
        all.set(w.tS, o)
      }
    }
    for (const list of ops.values()) list.sort((x, y) => x.tS - y.tS)
    ops.set(
      OVERALL,
      [...all.values()].sort((x, y) => x.tS - y.tS),
    )
  }
  return out
}
