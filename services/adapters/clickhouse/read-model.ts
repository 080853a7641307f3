/**
 * Read-side queries shared by the API, the CLI and the demo: reports,
 * live timelines and run lists, all computed from merged histograms.
 */
import type { ClickHouse } from './client.js'
import { queryRows } from './client.js'
import { BenchstreamError } from '../../core/errors.js'
import { entriesFromMap, quantileFromEntries } from '../../core/stats/histogram.js'
import { buildReport, type Report } from '../../core/reports/ycsb-report.js'

export interface RunInfo {
  run_id: string
  started_at: string | null
  ended_at: string | null
  clients: number
  clients_ended: number
  threads: number
  target: number
  labels: Record<string, string>
  workload: string
  binding: string
  sent: Record<string, number>
  undelivered: number
  runtime_ms: number
}

export interface RunReport extends Report {
  runId: string
  run: RunInfo | undefined
  /** Per operation: cache hit ratio (hits / (hits + misses)), null when unknown. */
  cacheHitRatio: Record<string, number | null>
  /** Events the drivers said they sent (from their end records) vs. events counted into windows. */
  completeness: { sent: number | null; counted: number; undelivered: number }
  lateEvents: number
}

export async function listRuns(ch: ClickHouse, limit = 100): Promise<Array<RunInfo & { operations: number }>> {
  const db = ch.database
  return queryRows(ch, `
    SELECT r.*, toUInt64(ifNull(w.operations, 0)) AS operations
    FROM ${db}.runs AS r
    LEFT JOIN (SELECT run_id, sum(count) AS operations FROM ${db}.op_windows GROUP BY run_id) AS w USING (run_id)
    ORDER BY r.started_at DESC
    LIMIT {limit:UInt32}`, { limit })
}

export async function getRun(ch: ClickHouse, runId: string): Promise<RunInfo | undefined> {
  const rows = await queryRows<RunInfo>(ch, `SELECT * FROM ${ch.database}.runs WHERE run_id = {runId:String}`, { runId })
  return rows[0]
}

interface AggRow {
  op: string
  status: string
  count: string | number
  sum_us: string | number
  min_us: string | number
  max_us: string | number
  hist: Record<string, string | number>
  hits: string | number
  misses: string | number
  late: string | number
  first_start_us: string | number
  last_end_us: string | number
}

/** The run's final report, read back from the windows (merged over clients and time). */
export async function runReport(ch: ClickHouse, runId: string): Promise<RunReport> {
  const rows = await queryRows<AggRow>(ch, `
    SELECT op, status, sum(count) AS count, sum(sum_us) AS sum_us, min(min_us) AS min_us, max(max_us) AS max_us,
           sumMap(hist) AS hist, sum(cache_hits) AS hits, sum(cache_misses) AS misses, sum(late_events) AS late,
           toUnixTimestamp64Micro(min(first_start)) AS first_start_us, toUnixTimestamp64Micro(max(last_end)) AS last_end_us
    FROM ${ch.database}.op_windows WHERE run_id = {runId:String}
    GROUP BY op, status`, { runId })
  if (rows.length === 0) throw new BenchstreamError('BS_ERR_NOT_FOUND', `run ${JSON.stringify(runId)} has no data in ClickHouse (${ch.location}); list runs with GET /api/v1/runs`)
  const run = await getRun(ch, runId)
  const first = Math.min(...rows.map((r) => Number(r.first_start_us)))
  const last = Math.max(...rows.map((r) => Number(r.last_end_us)))
  // The drivers' own run time when they reported it; else the span of the events.
  const runtimeMs = run !== undefined && Number(run.runtime_ms) > 0 ? Number(run.runtime_ms) : (last - first) / 1000
  const report = buildReport(
    rows.map((r) => ({ op: r.op, status: r.status, count: Number(r.count), sumUs: Number(r.sum_us), minUs: Number(r.min_us), maxUs: Number(r.max_us), hist: entriesFromMap(r.hist) })),
    runtimeMs,
  )
  const hits = new Map<string, [number, number]>()
  let late = 0
  for (const r of rows) {
    const h = hits.get(r.op) ?? [0, 0]
    h[0] += Number(r.hits)
    h[1] += Number(r.misses)
    hits.set(r.op, h)
    late += Number(r.late)
  }
  const sentTotal = run === undefined || run.clients_ended === 0 ? null : Object.values(run.sent).reduce((a, b) => a + Number(b), 0)
  return {
    ...report,
    runId,
    run,
    cacheHitRatio: Object.fromEntries([...hits].map(([op, [h, m]]) => [op, h + m === 0 ? null : h / (h + m)])),
    completeness: { sent: sentTotal, counted: report.operations, undelivered: run === undefined ? 0 : Number(run.undelivered) },
    lateEvents: late,
  }
}

export interface TimelinePoint {
  t: number
  op: string
  ops: number
  errors: number
  p50: number
  p99: number
  hits: number
  misses: number
}

/** Per window and operation, merged over clients: throughput, errors, p50/p99, cache outcomes. */
export async function timeline(ch: ClickHouse, runId: string, sinceMs = 0): Promise<TimelinePoint[]> {
  const rows = await queryRows<{ t: string; op: string; ops: string; errors: string; hist: Record<string, string>; hits: string; misses: string; window_ms: number }>(ch, `
    SELECT toUnixTimestamp64Milli(window_start) AS t, op, sum(count) AS ops, sum(errors) AS errors, sumMap(hist) AS hist,
           sum(cache_hits) AS hits, sum(cache_misses) AS misses, any(window_ms) AS window_ms
    FROM ${ch.database}.op_windows
    WHERE run_id = {runId:String} AND window_start >= fromUnixTimestamp64Milli({since:Int64})
    GROUP BY t, op ORDER BY t, op`, { runId, since: sinceMs })
  return rows.map((r) => {
    const e = entriesFromMap(r.hist)
    const perSec = 1000 / Number(r.window_ms)
    return { t: Number(r.t), op: r.op, ops: Number(r.ops) * perSec, errors: Number(r.errors) * perSec, p50: quantileFromEntries(e, 0.5), p99: quantileFromEntries(e, 0.99), hits: Number(r.hits), misses: Number(r.misses) }
  })
}

/** Dead letters by reason (optionally for one run). */
export async function deadLetterCounts(ch: ClickHouse): Promise<Record<string, number>> {
  const rows = await queryRows<{ reason: string; n: string }>(ch, `SELECT reason, count() AS n FROM ${ch.database}.dead_letters GROUP BY reason`)
  return Object.fromEntries(rows.map((r) => [r.reason, Number(r.n)]))
}

export interface ComparisonRow {
  /** Measurement name (READ, READ-FAILED, ...) or OVERALL. */
  name: string
  baseline: { throughputOpsPerSec: number; averageLatencyUs: number; p95LatencyUs: number; p99LatencyUs: number } | null
  candidate: { throughputOpsPerSec: number; averageLatencyUs: number; p95LatencyUs: number; p99LatencyUs: number } | null
  /** Change of candidate against baseline in percent (null when either side is missing or zero). */
  changePercent: { throughput: number | null; averageLatency: number | null; p95Latency: number | null; p99Latency: number | null }
}

export interface Comparison {
  baseline: string
  candidate: string
  rows: ComparisonRow[]
}

/** Release A vs release B: per measurement, throughput and latencies with the change in percent. */
export async function compareRuns(ch: ClickHouse, baseline: string, candidate: string): Promise<Comparison> {
  const [a, b] = await Promise.all([runReport(ch, baseline), runReport(ch, candidate)])
  const side = (r: RunReport, name: string): ComparisonRow['baseline'] => {
    if (name === 'OVERALL') return { throughputOpsPerSec: r.throughputOpsPerSec, averageLatencyUs: weightedAverage(r), p95LatencyUs: NaN, p99LatencyUs: NaN }
    const m = r.measurements.find((x) => x.name === name)
    if (m === undefined) return null
    return { throughputOpsPerSec: r.runtimeMs > 0 ? (m.operations * 1000) / r.runtimeMs : 0, averageLatencyUs: m.averageLatencyUs, p95LatencyUs: m.p95LatencyUs, p99LatencyUs: m.p99LatencyUs }
  }
  const change = (x: number | undefined, y: number | undefined): number | null => (x === undefined || y === undefined || !Number.isFinite(x) || !Number.isFinite(y) || x === 0 ? null : ((y - x) / x) * 100)
  const names = ['OVERALL', ...new Set([...a.measurements, ...b.measurements].map((m) => m.name))]
  return {
    baseline,
    candidate,
    rows: names.map((name) => {
      const x = side(a, name)
      const y = side(b, name)
      const clean = (s: ComparisonRow['baseline']): ComparisonRow['baseline'] => (s === null ? null : { ...s, p95LatencyUs: Number.isFinite(s.p95LatencyUs) ? s.p95LatencyUs : 0, p99LatencyUs: Number.isFinite(s.p99LatencyUs) ? s.p99LatencyUs : 0 })
      return {
        name,
        baseline: clean(x),
        candidate: clean(y),
        changePercent: {
          throughput: change(x?.throughputOpsPerSec, y?.throughputOpsPerSec),
          averageLatency: change(x?.averageLatencyUs, y?.averageLatencyUs),
          p95Latency: change(x?.p95LatencyUs, y?.p95LatencyUs),
          p99Latency: change(x?.p99LatencyUs, y?.p99LatencyUs),
        },
      }
    }),
  }
}

function weightedAverage(r: RunReport): number {
  let n = 0
  let sum = 0
  for (const m of r.measurements) {
    n += m.operations
    sum += m.averageLatencyUs * m.operations
  }
  return n === 0 ? 0 : sum / n
}
