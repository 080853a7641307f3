/**
 * One run's report in YCSB's shape, merged from its windows' histograms, and the checks of a run: counts by operation
 * and status, and windowed percentiles against exact ones over the raw events.
 */
import { BenchstreamError } from '../../core/errors.js'
import type { PercentileCheck, RunReport } from '../../core/ports/read-model.js'
import { serverCacheFigures } from '../../core/reports/server-cache.js'
import { buildReport } from '../../core/reports/ycsb-report.js'
import { entriesFromMap, quantileFromEntries } from '../../core/stats/histogram.js'
import { queryRows, type ClickHouse } from './client.js'
import { alerts } from './read-model-alerts.js'
import { COUNTER_NAMES } from './read-model-figures.js'
import { getRun } from './read-model-runs.js'

type Num = string | number

/** Alert incidents listed with a run's report at most (a run raising more has a problem the list would not fix). */
export const MAX_REPORT_ALERTS = 1000

interface AggRow {
  op: string
  status: string
  count: Num
  sum_us: Num
  min_us: Num
  max_us: Num
  hist: Record<string, Num>
  intended_sum_us: Num
  intended_max_us: Num
  intended_hist: Record<string, Num>
  hits: Num
  misses: Num
  late: Num
  first_start_us: Num
  last_end_us: Num
}

export async function runReport(ch: ClickHouse, runId: string): Promise<RunReport> {
  const db = ch.database
  const rows = await queryRows<AggRow>(
    ch,
    `
      SELECT op, status, sum(count) AS count, sum(sum_us) AS sum_us, min(min_us) AS min_us, max(max_us) AS max_us,
             sumMap(hist) AS hist, sum(intended_sum_us) AS intended_sum_us, max(intended_max_us) AS intended_max_us,
             sumMap(intended_hist) AS intended_hist,
             sum(cache_hits) AS hits, sum(cache_misses) AS misses, sum(late_events) AS late,
             toUnixTimestamp64Micro(min(first_start)) AS first_start_us,
             toUnixTimestamp64Micro(max(last_end)) AS last_end_us
      FROM ${db}.op_windows WHERE run_id = {runId:String}
      GROUP BY op, status`,
    { runId },
  )
  if (rows.length === 0)
    throw new BenchstreamError(
      'BS_ERR_NOT_FOUND',
      `run ${JSON.stringify(runId)} has no data in ClickHouse (${ch.location}); list runs with ` +
        `GET /api/v1/runs or benchstream runs`,
    )
  const run = await getRun(ch, runId)
  const first = Math.min(...rows.map((r) => Number(r.first_start_us)))
  const last = Math.max(...rows.map((r) => Number(r.last_end_us)))
  // The drivers' own run time when they reported it; else the span of the events.
  const runtimeMs = run !== undefined && Number(run.runtime_ms) > 0 ? Number(run.runtime_ms) : (last - first) / 1000
  const report = buildReport(
    rows.map((r) => {
      const intendedHist = entriesFromMap(r.intended_hist)
      const intendedMax = Number(r.intended_max_us)
      return {
        op: r.op,
        status: r.status,
        count: Number(r.count),
        sumUs: Number(r.sum_us),
        minUs: Number(r.min_us),
        maxUs: Number(r.max_us),
        hist: entriesFromMap(r.hist),
        // Windows keep no intended minimum: the lowest bucket's value stands
        // for it (exact below 256 µs, within 0.4% above), never under the
        // measured minimum (intended latency includes the measured one).
        intended: {
          sumUs: Number(r.intended_sum_us),
          maxUs: intendedMax,
          minUs: Math.min(intendedMax, Math.max(Number(r.min_us), quantileFromEntries(intendedHist, 0))),
          hist: intendedHist,
        },
      }
    }),
    runtimeMs,
    // YCSB prints intended latency when it was asked to; a run with a target is where it tells something.
    { intended: run !== undefined && Number(run.target) > 0 },
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
  const samples = await queryRows<{ client_id: string; source: string; name: string; at_us: Num; value: Num }>(
    ch,
    `
      SELECT client_id, source, name, toUnixTimestamp64Micro(at) AS at_us, value
      FROM ${db}.server_metrics WHERE run_id = {runId:String} AND name IN {names:Array(String)}`,
    { runId, names: COUNTER_NAMES },
  )
  const serverCache = serverCacheFigures(
    samples.map((r) => ({
      clientId: r.client_id,
      source: r.source,
      name: r.name,
      atUs: Number(r.at_us),
      value: Number(r.value),
    })),
  )
  const sentTotal =
    run === undefined || run.clients_ended === 0 ? null : Object.values(run.sent).reduce((a, b) => a + Number(b), 0)
  return {
    ...report,
    runId,
    ...(run === undefined ? {} : { run }),
    cacheHitRatio: Object.fromEntries([...hits].map(([op, [h, m]]) => [op, h + m === 0 ? null : h / (h + m)])),
    serverCache,
    completeness: {
      sent: sentTotal,
      counted: report.operations,
      undelivered: run === undefined ? 0 : Number(run.undelivered),
    },
    lateEvents: late,
    alerts: (await alerts(ch, { runId }, { limit: MAX_REPORT_ALERTS })).alerts,
  }
}

export async function runCounts(
  ch: ClickHouse,
  runId: string,
): Promise<{ byOpStatus: Record<string, number>; total: number; clientsEnded: number }> {
  const db = ch.database
  const rows = await queryRows<{ key: string; n: Num }>(
    ch,
    `
      SELECT concat(op, '/', status) AS key, sum(count) AS n
      FROM ${db}.op_windows WHERE run_id = {runId:String} GROUP BY key`,
    { runId },
  )
  const ended = await queryRows<{ n: Num }>(
    ch,
    `SELECT count() AS n FROM ${db}.run_clients WHERE run_id = {runId:String} AND phase = 'end'`,
    { runId },
  )
  const byOpStatus = Object.fromEntries(rows.map((r) => [r.key, Number(r.n)]))
  return {
    byOpStatus,
    total: Object.values(byOpStatus).reduce((a, b) => a + b, 0),
    clientsEnded: Number(ended[0]?.n ?? 0),
  }
}

export async function percentileCheck(
  ch: ClickHouse,
  runId: string,
  quantiles: readonly number[],
): Promise<PercentileCheck[]> {
  const db = ch.database
  // Exact: the value at rank bs_rank(q, n) of the sorted raw latencies, the same rank rule as the windows.
  const rows = await queryRows<{ op: string; q: Num; windows: Num; exact: Num }>(
    ch,
    `
      SELECT w.op AS op, q, bs_quantile(q, w.h) AS windows, e.exact AS exact FROM
        (SELECT op, sumMap(hist) AS h FROM ${db}.op_windows WHERE run_id = {runId:String} GROUP BY op) AS w
      ARRAY JOIN {qs:Array(Float64)} AS q
      JOIN (SELECT op, arraySort(groupArray(latency_us)) AS s, q2 AS q, s[bs_rank(q2, length(s))] AS exact
            FROM ${db}.ops ARRAY JOIN {qs:Array(Float64)} AS q2 WHERE run_id = {runId:String} GROUP BY op, q2) AS e
        ON e.op = w.op AND e.q = q
      ORDER BY op, q`,
    { runId, qs: quantiles },
  )
  return rows.map((r) => ({ op: r.op, q: Number(r.q), windows: Number(r.windows), exact: Number(r.exact) }))
}
