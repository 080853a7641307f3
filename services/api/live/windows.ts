/**
 * The live view's figures, pure: complete windows assembled from rows merged
 * over clients and partitions, and running totals over every window sent so
 * far. Percentiles come from merged histograms by the one rule of
 * services/core/stats/histogram.ts (the run's report uses the same), never
 * from averaging or taking the max of per-client or per-window percentiles.
 */
import type { LiveOpSummary, LiveOpWindow, LiveSummary, LiveWindow } from '../../../schemas/live-api.v1.js'
import type { ClientWindowRow, ServerCacheRow, WindowOpStatusRow } from '../../core/ports/read-model.js'
import { Histogram, quantileFromEntries } from '../../core/stats/histogram.js'

/** The status whose calls the latencies describe (YCSB's `[READ]` measurement; others are `[READ-FAILED]`). */
const OK = 'OK'

function ratio(hits: number, misses: number): number | null {
  return hits + misses === 0 ? null : hits / (hits + misses)
}

/**
 * Every window start in [fromMs, toMs) in order, one LiveWindow each; a
 * window without rows is a stall and is sent with no calls, not left out.
 */
export function assembleWindows(
  fromMs: number,
  toMs: number,
  windowMs: number,
  rows: readonly WindowOpStatusRow[],
  clients: readonly ClientWindowRow[],
  server: readonly ServerCacheRow[],
): LiveWindow[] {
  const byStart = new Map<number, LiveWindow>()
  const out: LiveWindow[] = []
  for (let t = fromMs; t < toMs; t += windowMs) {
    const w: LiveWindow = { t, ops: {}, statuses: {}, clients: {}, serverCacheHit: {} }
    byStart.set(t, w)
    out.push(w)
  }
  for (const r of rows) {
    const w = byStart.get(r.startMs)
    if (w === undefined) continue
    const op: LiveOpWindow =
      w.ops[r.op] ??
      (w.ops[r.op] = {
        operations: 0,
        ok: 0,
        p50: null,
        p95: null,
        p99: null,
        p999: null,
        max: null,
        intendedP99: null,
        cacheHits: 0,
        cacheMisses: 0,
      })
    op.operations += r.count
    op.cacheHits += r.cacheHits
    op.cacheMisses += r.cacheMisses
    w.statuses[r.status] = (w.statuses[r.status] ?? 0) + r.count
    // Rows are grouped by status, so the OK row holds the window's whole merged OK histogram.
    if (r.status === OK && r.count > 0) {
      op.ok = r.count
      const q = (x: number): number => quantileFromEntries(r.hist, x, r.minUs, r.maxUs)
      op.p50 = q(0.5)
      op.p95 = q(0.95)
      op.p99 = q(0.99)
      op.p999 = q(0.999)
      op.max = r.maxUs
      op.intendedP99 = r.intendedHist.length === 0 ? null : quantileFromEntries(r.intendedHist, 0.99)
    }
  }
  for (const c of clients) {
    const w = byStart.get(c.startMs)
    if (w !== undefined) w.clients[c.clientId] = (w.clients[c.clientId] ?? 0) + c.count
  }
  for (const s of server) {
    const w = byStart.get(s.startMs)
    if (w !== undefined) w.serverCacheHit[s.source] = ratio(s.hits, s.misses)
  }
  return out
}

interface OpTotals {
  ok: Histogram
  intended: Histogram
  okCount: number
  failed: number
  sumUs: number
  minUs: number
  maxUs: number
  hits: number
  misses: number
}

/** Totals over every window added: counts, merged histograms per operation, cache counters. */
export class LiveTotals {
  private readonly ops = new Map<string, OpTotals>()
  private readonly statuses = new Map<string, number>()
  private readonly server = new Map<string, [number, number]>()
  operations = 0

  add(rows: readonly WindowOpStatusRow[], server: readonly ServerCacheRow[]): void {
    for (const r of rows) {
      let o = this.ops.get(r.op)
      if (o === undefined) {
        o = {
          ok: new Histogram(),
          intended: new Histogram(),
          okCount: 0,
          failed: 0,
          sumUs: 0,
          minUs: Number.POSITIVE_INFINITY,
          maxUs: 0,
          hits: 0,
          misses: 0,
        }
        this.ops.set(r.op, o)
      }
      this.operations += r.count
      this.statuses.set(r.status, (this.statuses.get(r.status) ?? 0) + r.count)
      o.hits += r.cacheHits
      o.misses += r.cacheMisses
      if (r.status !== OK) {
        o.failed += r.count
        continue
      }
      o.okCount += r.count
      o.sumUs += r.sumUs
      if (r.count > 0) {
        o.minUs = Math.min(o.minUs, r.minUs)
        o.maxUs = Math.max(o.maxUs, r.maxUs)
      }
      for (const [i, c] of r.hist) o.ok.recordBucket(i, c)
      for (const [i, c] of r.intendedHist) o.intended.recordBucket(i, c)
    }
    for (const s of server) {
      const h = this.server.get(s.source) ?? [0, 0]
      h[0] += s.hits
      h[1] += s.misses
      this.server.set(s.source, h)
    }
  }

  summary(): LiveSummary {
    const byOp: Record<string, LiveOpSummary> = {}
    for (const [op, o] of [...this.ops].sort(([a], [b]) => a.localeCompare(b))) {
      const has = o.okCount > 0
      // Clamped into [min, max] of the data as the report does (buildReport), so both print the same number.
      const entries = o.ok.entries()
      const q = (x: number): number | null => (has ? quantileFromEntries(entries, x, o.minUs, o.maxUs) : null)
      byOp[op] = {
        operations: o.okCount,
        failed: o.failed,
        averageUs: has ? o.sumUs / o.okCount : null,
        minUs: has ? o.minUs : null,
        maxUs: has ? o.maxUs : null,
        p50: q(0.5),
        p95: q(0.95),
        p99: q(0.99),
        p999: q(0.999),
        intendedP99: o.intended.total === 0 ? null : o.intended.quantile(0.99),
        cacheHitRatio: ratio(o.hits, o.misses),
        cacheHits: o.hits,
        cacheMisses: o.misses,
      }
    }
    return {
      operations: this.operations,
      byOp,
      byStatus: Object.fromEntries(this.statuses),
      serverCacheHit: Object.fromEntries([...this.server].map(([s, [h, m]]) => [s, ratio(h, m)])),
    }
  }
}
