/**
 * ReadModel on ClickHouse (services/core/ports/read-model.ts): reports, live
 * timelines and run lists for the API, the CLI and the demo, all computed
 * from merged histograms. A run's window length comes from the `runs` view.
 */
import { BenchstreamError } from '../../core/errors.js'
import type { RunProgress } from '../../core/stats/window-completeness.js'
import { ALERT_STATES, RULE_TYPES, SEVERITIES } from '../../../schemas/alert-rules.v1.js'
import type {
  Alert,
  AlertFilter,
  AlertPageRequest,
  AlertsPage,
  ClientWindowRow,
  OpFigures,
  PercentileCheck,
  ReadModel,
  ReportedClient,
  ReportedMeasurement,
  ReportedRun,
  RunFigures,
  RunFilter,
  RunInfo,
  RunReport,
  ServerCacheRow,
  TimelinePoint,
  WindowFigures,
  WindowOpStatusRow,
} from '../../core/ports/read-model.js'
import { SERVER_CACHE_COUNTERS, serverCacheFigures } from '../../core/reports/server-cache.js'
import { buildReport } from '../../core/reports/ycsb-report.js'
import { entriesFromMap, quantileFromEntries } from '../../core/stats/histogram.js'
import { queryRows, type ClickHouse } from './client.js'
import { queryRunProgress } from './run-progress.js'

type Num = string | number

/**
 * Window rows read at most by one windowFigures call (one run of an hour at 1 s windows and 8 operations is 28,800).
 */
export const MAX_WINDOW_ROWS = 2_000_000

/** Alert incidents listed with a run's report at most (a run raising more has a problem the list would not fix). */
export const MAX_REPORT_ALERTS = 1000

interface IncidentRow {
  run_id: string
  fingerprint: string
  rule: string
  rule_type: string
  severity: string
  op: string
  state: string
  starts_ms: Num
  ends_ms: Num | null
  value: number
  threshold: number
  summary: string
  description: string
  resolved_summary: string
  silenced_by: string
}

function incident(r: IncidentRow): Alert {
  const one = <T extends string>(allowed: readonly T[], v: string, fallback: T): T =>
    (allowed as readonly string[]).includes(v) ? (v as T) : fallback
  return {
    fingerprint: r.fingerprint,
    rule: r.rule,
    ruleType: one(RULE_TYPES, r.rule_type, 'drop_vs_baseline'),
    severity: one(SEVERITIES, r.severity, 'warning'),
    runId: r.run_id,
    op: r.op,
    state: one(ALERT_STATES, r.state, 'firing'),
    startsAt: new Date(Number(r.starts_ms)).toISOString(),
    endsAt: r.ends_ms === null ? null : new Date(Number(r.ends_ms)).toISOString(),
    value: Number(r.value),
    threshold: Number(r.threshold),
    summary: r.summary,
    description: r.description,
    resolvedSummary: r.resolved_summary === '' ? null : r.resolved_summary,
    silencedBy: r.silenced_by === '' ? null : r.silenced_by,
  }
}

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

function num(v: Num | null | undefined): number | null {
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
const COUNTER_NAMES = Object.values(SERVER_CACHE_COUNTERS).flatMap((c) => [c.hits, c.misses])
/**
 * How far before a range server samples are read, so the first sample in it has a predecessor to take its increase from
 * (the drivers sample every second).
 */
const SERVER_SAMPLE_LOOKBACK_MS = 60_000

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

export class ClickHouseReadModel implements ReadModel {
  constructor(private readonly ch: ClickHouse) {}

  private get db(): string {
    return this.ch.database
  }

  async listRuns(limit: number, filter: RunFilter = {}): Promise<Array<RunInfo & { operations: number }>> {
    const where: string[] = []
    const params: Record<string, unknown> = { limit }
    if (filter.group !== undefined) {
      where.push('r.group_id = {group:String}')
      params.group = filter.group
    }
    const labels = Object.entries(filter.labels ?? {})
    if (labels.length > 0) {
      where.push(
        'arrayAll((k, v) -> mapContains(r.labels, k) AND r.labels[k] = v, {lk:Array(String)}, {lv:Array(String)})',
      )
      params.lk = labels.map(([k]) => k)
      params.lv = labels.map(([, v]) => v)
    }
    if (filter.hasLabel !== undefined) {
      where.push('mapContains(r.labels, {hasLabel:String})')
      params.hasLabel = filter.hasLabel
    }
    // A summary run has no windows: its operations are the ones its YCSB reports count (view reported_runs). With two
    // joins ClickHouse names r.* 's key `r.run_id`: it is selected by name.
    return queryRows(
      this.ch,
      `
      SELECT r.run_id AS run_id, r.* EXCEPT (run_id), if(p_origin = 'reported', 'reported', 'events') AS origin,
             toUInt64(if(p_origin = 'reported', p_operations, ifNull(w.operations, 0))) AS operations
      FROM ${this.db}.runs AS r
      LEFT JOIN (SELECT run_id, sum(count) AS operations FROM ${this.db}.op_windows GROUP BY run_id) AS w USING (run_id)
      LEFT JOIN (SELECT run_id, origin AS p_origin, operations AS p_operations FROM ${this.db}.reported_runs) AS p
        USING (run_id)
      ${where.length === 0 ? '' : `WHERE ${where.join(' AND ')}`}
      ORDER BY r.started_at DESC
      LIMIT {limit:UInt32}`,
      params,
    )
  }

  async reportedRuns(runIds: readonly string[]): Promise<ReportedRun[]> {
    if (runIds.length === 0) return []
    const rows = await queryRows<{
      run_id: string
      client_id: string
      measurement: string
      kind: ReportedMeasurement['kind']
      op: string
      latency: ReportedMeasurement['latency']
      status: string
      format: string
      source: string
      runtime_ms: Num | null
      throughput: Num | null
      operations: Num | null
      average_us: Num | null
      min_us: Num | null
      max_us: Num | null
      percentiles_us: Record<string, Num>
      percentiles_in_ms: Num
      returns: Record<string, Num>
    }>(
      this.ch,
      `
      SELECT run_id, client_id, measurement, kind, op, latency, status, format, source, runtime_ms, throughput,
             operations, average_us, min_us, max_us, percentiles_us, percentiles_in_ms, returns
      FROM ${this.db}.reported_measurements WHERE run_id IN {ids:Array(String)}
      ORDER BY run_id, client_id, src_partition, src_offset, measurement`,
      { ids: runIds },
    )
    const runs = new Map<string, Map<string, ReportedClient>>()
    for (const r of rows) {
      let clients = runs.get(r.run_id)
      if (clients === undefined) runs.set(r.run_id, (clients = new Map()))
      let c = clients.get(r.client_id)
      if (c === undefined) {
        c = {
          clientId: r.client_id,
          source: r.source,
          format: r.format,
          runtimeMs: num(r.runtime_ms),
          throughputOpsPerSec: num(r.throughput),
          measurements: [],
        }
        clients.set(r.client_id, c)
      }
      const unit = Number(r.percentiles_in_ms) === 1 ? 'ms' : 'us'
      c.measurements.push({
        name: r.measurement,
        kind: r.kind,
        op: r.op,
        latency: r.latency,
        status: r.status,
        operations: num(r.operations),
        averageUs: num(r.average_us),
        minUs: num(r.min_us),
        maxUs: num(r.max_us),
        percentiles: Object.entries(r.percentiles_us)
          .map(([p, v]) => ({ percentile: Number(p), valueUs: Number(v), unit }) as const)
          .sort((a, b) => a.percentile - b.percentile),
        returns: Object.fromEntries(Object.entries(r.returns).map(([k, v]) => [k, Number(v)])),
      })
    }
    if (runs.size === 0) return []
    // A summary run's own server counters (driver pe samples the region server beside PE), as a run with events has.
    const samples = await queryRows<{
      run_id: string
      client_id: string
      source: string
      name: string
      at_us: Num
      value: Num
    }>(
      this.ch,
      `
      SELECT run_id, client_id, source, name, toUnixTimestamp64Micro(at) AS at_us, value
      FROM ${this.db}.server_metrics WHERE run_id IN {ids:Array(String)} AND name IN {names:Array(String)}`,
      { ids: [...runs.keys()], names: COUNTER_NAMES },
    )
    // In the order asked for; runs without reports are left out.
    return runIds.flatMap((id) => {
      const clients = runs.get(id)
      if (clients === undefined) return []
      const serverCache = serverCacheFigures(
        samples
          .filter((s) => s.run_id === id)
          .map((s) => ({
            clientId: s.client_id,
            source: s.source,
            name: s.name,
            atUs: Number(s.at_us),
            value: Number(s.value),
          })),
      )
      return [{ runId: id, clients: [...clients.values()], ...(serverCache.length === 0 ? {} : { serverCache }) }]
    })
  }

  async runFigures(runIds: readonly string[]): Promise<RunFigures[]> {
    if (runIds.length === 0) return []
    const rows = await queryRows<FigureRow & { run_id: string; runtime_ms: Num }>(
      this.ch,
      `
      SELECT run_id, runtime_ms, op, operations, errors, ops_per_sec, error_rate, avg_us, min_us, max_us,
             p50_us, p90_us, p95_us, p99_us, p999_us, p9999_us, cache_hit_ratio
      FROM ${this.db}.run_op_figures WHERE run_id IN {ids:Array(String)}
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
      this.ch,
      `
      SELECT run_id, client_id, source, name, toUnixTimestamp64Micro(at) AS at_us, value
      FROM ${this.db}.server_metrics WHERE run_id IN {ids:Array(String)} AND name IN {names:Array(String)}`,
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

  async windowFigures(runIds: readonly string[]): Promise<WindowFigures[]> {
    if (runIds.length === 0) return []
    const rows = await queryRows<FigureRow & { run_id: string; t_s: Num; window_ms: Num }>(
      this.ch,
      `
      SELECT run_id, t_s, op, window_ms, operations, errors, ops_per_sec, error_rate, avg_us, max_us,
             p50_us, p95_us, p99_us, p999_us, cache_hit_ratio
      FROM ${this.db}.op_window_figures WHERE run_id IN {ids:Array(String)}
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

  async getRun(runId: string): Promise<RunInfo | undefined> {
    const rows = await queryRows<RunInfo>(
      this.ch,
      `
      SELECT r.run_id AS run_id, r.* EXCEPT (run_id), if(p_origin = 'reported', 'reported', 'events') AS origin
      FROM ${this.db}.runs AS r
      LEFT JOIN (SELECT run_id, origin AS p_origin FROM ${this.db}.reported_runs WHERE run_id = {runId:String}) AS p
        USING (run_id)
      WHERE r.run_id = {runId:String}`,
      { runId },
    )
    return rows[0]
  }

  async runReport(runId: string): Promise<RunReport> {
    const rows = await queryRows<AggRow>(
      this.ch,
      `
      SELECT op, status, sum(count) AS count, sum(sum_us) AS sum_us, min(min_us) AS min_us, max(max_us) AS max_us,
             sumMap(hist) AS hist, sum(intended_sum_us) AS intended_sum_us, max(intended_max_us) AS intended_max_us,
             sumMap(intended_hist) AS intended_hist,
             sum(cache_hits) AS hits, sum(cache_misses) AS misses, sum(late_events) AS late,
             toUnixTimestamp64Micro(min(first_start)) AS first_start_us,
             toUnixTimestamp64Micro(max(last_end)) AS last_end_us
      FROM ${this.db}.op_windows WHERE run_id = {runId:String}
      GROUP BY op, status`,
      { runId },
    )
    if (rows.length === 0)
      throw new BenchstreamError(
        'BS_ERR_NOT_FOUND',
        `run ${JSON.stringify(runId)} has no data in ClickHouse (${this.ch.location}); list runs with ` +
          `GET /api/v1/runs or benchstream runs`,
      )
    const run = await this.getRun(runId)
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
      this.ch,
      `
      SELECT client_id, source, name, toUnixTimestamp64Micro(at) AS at_us, value
      FROM ${this.db}.server_metrics WHERE run_id = {runId:String} AND name IN {names:Array(String)}`,
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
      alerts: (await this.alerts({ runId }, { limit: MAX_REPORT_ALERTS })).alerts,
    }
  }

  async timeline(runId: string, sinceMs: number): Promise<TimelinePoint[]> {
    const rows = await queryRows<{
      t: Num
      op: string
      ops: Num
      errors: Num
      hist: Record<string, Num>
      ihist: Record<string, Num>
      hits: Num
      misses: Num
      window_ms: Num
    }>(
      this.ch,
      `
      SELECT toUnixTimestamp64Milli(window_start) AS t, op, sum(count) AS ops, sum(errors) AS errors,
             sumMap(hist) AS hist, sumMap(intended_hist) AS ihist,
             sum(cache_hits) AS hits, sum(cache_misses) AS misses,
             (SELECT any(window_ms) FROM ${this.db}.runs WHERE run_id = {runId:String}) AS window_ms
      FROM ${this.db}.op_windows
      WHERE run_id = {runId:String} AND window_start >= fromUnixTimestamp64Milli({since:Int64})
      GROUP BY t, op ORDER BY t, op`,
      { runId, since: sinceMs },
    )
    return rows.map((r) => {
      const e = entriesFromMap(r.hist)
      const perSec = 1000 / Number(r.window_ms)
      return {
        t: Number(r.t),
        op: r.op,
        ops: Number(r.ops) * perSec,
        errors: Number(r.errors) * perSec,
        p50: quantileFromEntries(e, 0.5),
        p99: quantileFromEntries(e, 0.99),
        intendedP99: quantileFromEntries(entriesFromMap(r.ihist), 0.99),
        hits: Number(r.hits),
        misses: Number(r.misses),
      }
    })
  }

  async runCounts(runId: string): Promise<{ byOpStatus: Record<string, number>; total: number; clientsEnded: number }> {
    const rows = await queryRows<{ key: string; n: Num }>(
      this.ch,
      `
      SELECT concat(op, '/', status) AS key, sum(count) AS n
      FROM ${this.db}.op_windows WHERE run_id = {runId:String} GROUP BY key`,
      { runId },
    )
    const ended = await queryRows<{ n: Num }>(
      this.ch,
      `SELECT count() AS n FROM ${this.db}.run_clients WHERE run_id = {runId:String} AND phase = 'end'`,
      { runId },
    )
    const byOpStatus = Object.fromEntries(rows.map((r) => [r.key, Number(r.n)]))
    return {
      byOpStatus,
      total: Object.values(byOpStatus).reduce((a, b) => a + b, 0),
      clientsEnded: Number(ended[0]?.n ?? 0),
    }
  }

  async percentileCheck(runId: string, quantiles: readonly number[]): Promise<PercentileCheck[]> {
    // Exact: the value at rank bs_rank(q, n) of the sorted raw latencies, the same rank rule as the windows.
    const rows = await queryRows<{ op: string; q: Num; windows: Num; exact: Num }>(
      this.ch,
      `
      SELECT w.op AS op, q, bs_quantile(q, w.h) AS windows, e.exact AS exact FROM
        (SELECT op, sumMap(hist) AS h FROM ${this.db}.op_windows WHERE run_id = {runId:String} GROUP BY op) AS w
      ARRAY JOIN {qs:Array(Float64)} AS q
      JOIN (SELECT op, arraySort(groupArray(latency_us)) AS s, q2 AS q, s[bs_rank(q2, length(s))] AS exact
            FROM ${this.db}.ops ARRAY JOIN {qs:Array(Float64)} AS q2 WHERE run_id = {runId:String} GROUP BY op, q2) AS e
        ON e.op = w.op AND e.q = q
      ORDER BY op, q`,
      { runId, qs: quantiles },
    )
    return rows.map((r) => ({ op: r.op, q: Number(r.q), windows: Number(r.windows), exact: Number(r.exact) }))
  }

  async alerts(filter: AlertFilter, page: AlertPageRequest): Promise<AlertsPage> {
    const where: string[] = []
    const having: string[] = []
    const params: Record<string, unknown> = { limit: page.limit + 1 }
    if (filter.runId !== undefined) {
      where.push('run_id = {runId:String}')
      params.runId = filter.runId
    }
    if (filter.rule !== undefined) {
      where.push('rule = {rule:String}')
      params.rule = filter.rule
    }
    if (filter.state !== undefined) {
      having.push('state = {state:String}')
      params.state = filter.state
    }
    if (filter.sinceMs !== undefined) {
      having.push('(ends_ms IS NULL OR ends_ms >= {since:Int64})')
      params.since = filter.sinceMs
    }
    if (page.cursor !== undefined) {
      const dash = page.cursor.indexOf('-')
      having.push('(starts_ms, fingerprint) < ({cursorMs:Int64}, {cursorFp:String})')
      params.cursorMs = Number(page.cursor.slice(0, dash))
      params.cursorFp = page.cursor.slice(dash + 1)
    }
    const rows = await queryRows<IncidentRow>(
      this.ch,
      `
      SELECT run_id, fingerprint, rule, rule_type, severity, op, state,
             toUnixTimestamp64Milli(starts_at) AS starts_ms,
             if(ends_at IS NULL, NULL, toUnixTimestamp64Milli(assumeNotNull(ends_at))) AS ends_ms,
             value, threshold, summary, description, resolved_summary, silenced_by
      FROM ${this.db}.alert_incidents
      WHERE ${[...where, ...having].join(' AND ') || '1'}
      ORDER BY starts_ms DESC, fingerprint DESC
      LIMIT {limit:UInt32}`,
      params,
    )
    const alerts = rows.slice(0, page.limit).map(incident)
    const last = rows.length > page.limit ? rows[page.limit - 1] : undefined
    return { alerts, nextCursor: last === undefined ? null : `${Number(last.starts_ms)}-${last.fingerprint}` }
  }

  async deadLetterCounts(): Promise<Record<string, number>> {
    const rows = await queryRows<{ reason: string; n: Num }>(
      this.ch,
      `SELECT reason, count() AS n FROM ${this.db}.dead_letters GROUP BY reason`,
    )
    return Object.fromEntries(rows.map((r) => [r.reason, Number(r.n)]))
  }

  async ping(): Promise<void> {
    await queryRows(this.ch, 'SELECT 1 AS ok')
  }

  liveProgress(runId: string, sinceMs: number): Promise<RunProgress | undefined> {
    return queryRunProgress(this.ch, this.db, runId, sinceMs)
  }

  async liveWindows(runId: string, fromMs: number, toMs: number): Promise<WindowOpStatusRow[]> {
    const rows = await queryRows<{
      t: Num
      op: string
      status: string
      n: Num
      sum_us: Num
      min_us: Num
      max_us: Num
      hist: Record<string, Num>
      ihist: Record<string, Num>
      hits: Num
      misses: Num
    }>(
      this.ch,
      `
      SELECT toUnixTimestamp64Milli(window_start) AS t, op, status, sum(count) AS n,
             sum(sum_us) AS sum_us, min(min_us) AS min_us, max(max_us) AS max_us,
             sumMap(hist) AS hist, sumMap(intended_hist) AS ihist, sum(cache_hits) AS hits, sum(cache_misses) AS misses
      FROM ${this.db}.op_windows
      WHERE run_id = {runId:String}
        AND window_start >= fromUnixTimestamp64Milli({from:Int64})
        AND window_start < fromUnixTimestamp64Milli({to:Int64})
      GROUP BY t, op, status ORDER BY t, op, status`,
      { runId, from: fromMs, to: toMs },
    )
    return rows.map((r) => ({
      startMs: Number(r.t),
      op: r.op,
      status: r.status,
      count: Number(r.n),
      sumUs: Number(r.sum_us),
      minUs: Number(r.min_us),
      maxUs: Number(r.max_us),
      hist: entriesFromMap(r.hist),
      intendedHist: entriesFromMap(r.ihist),
      cacheHits: Number(r.hits),
      cacheMisses: Number(r.misses),
    }))
  }

  async clientWindows(runId: string, fromMs: number, toMs: number): Promise<ClientWindowRow[]> {
    const rows = await queryRows<{ t: Num; client_id: string; n: Num }>(
      this.ch,
      `
      SELECT toUnixTimestamp64Milli(window_start) AS t, client_id, sum(count) AS n
      FROM ${this.db}.op_windows
      WHERE run_id = {runId:String}
        AND window_start >= fromUnixTimestamp64Milli({from:Int64})
        AND window_start < fromUnixTimestamp64Milli({to:Int64})
      GROUP BY t, client_id ORDER BY t, client_id`,
      { runId, from: fromMs, to: toMs },
    )
    return rows.map((r) => ({ startMs: Number(r.t), clientId: r.client_id, count: Number(r.n) }))
  }

  async serverCacheWindows(runId: string, fromMs: number, toMs: number, windowMs: number): Promise<ServerCacheRow[]> {
    const entries = Object.entries(SERVER_CACHE_COUNTERS)
    const sources = entries.map(([s]) => s)
    const hitNames = entries.map(([, c]) => c.hits)
    const missNames = entries.map(([, c]) => c.misses)
    // Counters are cumulative: each sample's increase over the previous one
    // of the same client and counter (a counter that went down, a restarted
    // server, counts from zero), summed per window of the sample's time.
    const rows = await queryRows<{ t: Num; source: string; hits: Num; misses: Num }>(
      this.ch,
      `
      SELECT intDiv(toUnixTimestamp64Milli(at), {w:UInt32}) * {w:UInt32} AS t, source,
             sumIf(delta, is_hit) AS hits, sumIf(delta, NOT is_hit) AS misses
      FROM
      (
          SELECT at, source, has(arrayZip({sources:Array(String)}, {hitNames:Array(String)}), (source, name)) AS is_hit,
                 if(value >= prev, value - prev, value) AS delta
          FROM
          (
              SELECT at, source, name, value, lagInFrame(value) OVER w AS prev, row_number() OVER w AS n
              FROM ${this.db}.server_metrics
              WHERE run_id = {runId:String}
                AND (has(arrayZip({sources:Array(String)}, {hitNames:Array(String)}), (source, name))
                     OR has(arrayZip({sources:Array(String)}, {missNames:Array(String)}), (source, name)))
                AND at >= fromUnixTimestamp64Milli({lookFrom:Int64}) AND at < fromUnixTimestamp64Milli({to:Int64})
              WINDOW w AS (PARTITION BY client_id, source, name ORDER BY at
                           ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW)
          )
          WHERE n > 1 AND at >= fromUnixTimestamp64Milli({from:Int64})
      )
      GROUP BY t, source ORDER BY t, source`,
      {
        runId,
        w: windowMs,
        sources,
        hitNames,
        missNames,
        from: fromMs,
        lookFrom: Math.max(0, fromMs - SERVER_SAMPLE_LOOKBACK_MS),
        to: toMs,
      },
    )
    return rows.map((r) => ({ startMs: Number(r.t), source: r.source, hits: Number(r.hits), misses: Number(r.misses) }))
  }
}
