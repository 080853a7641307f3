/**
 * The figures of runs and of their windows as the figure views compute them (run_op_figures, op_window_figures), and
 * the row conversions the other reads share (num, opFigures, the server cache counters' names).
 */
import type { OpFigures, RunFigures, WindowFigures } from '../../core/ports/read-model.js'
import { SERVER_CACHE_COUNTERS, serverCacheFigures } from '../../core/reports/server-cache.js'
import { queryRows, type ClickHouse } from './client.js'

type Num = string | number

/**
 * Window rows read at most by one windowFigures call (one run of an hour at 1 s windows and 8 operations is 28,800).
 */
export const MAX_WINDOW_ROWS = 2_000_000

/** A row of the figure views (run_op_figures, op_window_figures); absent columns are undefined. */
interface FigureRow {
  op: string
  operations: Num
  errors: Num
  ops_per_sec: Num
  error_rate: Num | null
  avg_us: Num | null
  min_us?: Num | null
  max_us: Num | null
  p50_us: Num | null
  p90_us?: Num | null
  p95_us: Num | null
  p99_us: Num | null
  p999_us: Num | null
  p9999_us?: Num | null
  cache_hit_ratio: Num | null
}

export function num(v: Num | null | undefined): number | null {
  return v === null || v === undefined ? null : Number(v)
}

function opFigures(r: FigureRow): OpFigures {
  return {
    op: r.op,
    operations: Number(r.operations),
    errors: Number(r.errors),
    opsPerSec: Number(r.ops_per_sec),
    errorRate: num(r.error_rate),
    avgUs: num(r.avg_us),
    minUs: num(r.min_us),
    maxUs: num(r.max_us),
    p50Us: num(r.p50_us),
    p90Us: num(r.p90_us),
    p95Us: num(r.p95_us),
    p99Us: num(r.p99_us),
    p999Us: num(r.p999_us),
    p9999Us: num(r.p9999_us),
    cacheHitRatio: num(r.cache_hit_ratio),
  }
}

/** Every counter name that serverCacheFigures reads. */
export const COUNTER_NAMES = Object.values(SERVER_CACHE_COUNTERS).flatMap((c) => [c.hits, c.misses])

export async function runFigures(ch: ClickHouse, runIds: readonly string[]): Promise<RunFigures[]> {
  const db = ch.database
  if (runIds.length === 0) return []
  const rows = await queryRows<FigureRow & { run_id: string; runtime_ms: Num }>(
    ch,
    `
      SELECT run_id, runtime_ms, op, operations, errors, ops_per_sec, error_rate, avg_us, min_us, max_us,
             p50_us, p90_us, p95_us, p99_us, p999_us, p9999_us, cache_hit_ratio
      FROM ${db}.run_op_figures WHERE run_id IN {ids:Array(String)}
      ORDER BY run_id, op`,
    { ids: runIds },
  )
  const samples = await queryRows<{
    run_id: string
    client_id: string
    source: string
    name: string
    at_us: Num
    value: Num
  }>(
    ch,
    `
      SELECT run_id, client_id, source, name, toUnixTimestamp64Micro(at) AS at_us, value
      FROM ${db}.server_metrics WHERE run_id IN {ids:Array(String)} AND name IN {names:Array(String)}`,
    { ids: runIds, names: COUNTER_NAMES },
  )
  const out = new Map<string, RunFigures>()
  for (const r of rows) {
    let f = out.get(r.run_id)
    if (f === undefined) {
      f = { runId: r.run_id, runtimeMs: Number(r.runtime_ms), ops: [], serverCache: [] }
      out.set(r.run_id, f)
    }
    f.ops.push(opFigures(r))
  }
  for (const f of out.values()) {
    const mine = samples.filter((s) => s.run_id === f.runId)
    f.serverCache = serverCacheFigures(
      mine.map((s) => ({
        clientId: s.client_id,
        source: s.source,
        name: s.name,
        atUs: Number(s.at_us),
        value: Number(s.value),
      })),
    ).map((c) => ({ source: c.source, ratio: c.ratio }))
  }
  // In the order asked for.
  return runIds.flatMap((id) => out.get(id) ?? [])
}

export async function windowFigures(ch: ClickHouse, runIds: readonly string[]): Promise<WindowFigures[]> {
  const db = ch.database
  if (runIds.length === 0) return []
  const rows = await queryRows<FigureRow & { run_id: string; t_s: Num; window_ms: Num }>(
    ch,
    `
      SELECT run_id, t_s, op, window_ms, operations, errors, ops_per_sec, error_rate, avg_us, max_us,
             p50_us, p95_us, p99_us, p999_us, cache_hit_ratio
      FROM ${db}.op_window_figures WHERE run_id IN {ids:Array(String)}
      ORDER BY run_id, t_s, op
      LIMIT {limit:UInt32}`,
    { ids: runIds, limit: MAX_WINDOW_ROWS },
  )
  return rows.map((r) => ({
    runId: r.run_id,
    tS: Number(r.t_s),
    op: r.op,
    windowMs: Number(r.window_ms),
    operations: Number(r.operations),
    errors: Number(r.errors),
    opsPerSec: Number(r.ops_per_sec),
    errorRate: num(r.error_rate),
    avgUs: num(r.avg_us),
    maxUs: num(r.max_us),
    p50Us: num(r.p50_us),
    p95Us: num(r.p95_us),
    p99Us: num(r.p99_us),
    p999Us: num(r.p999_us),
    cacheHitRatio: num(r.cache_hit_ratio),
  }))
}
