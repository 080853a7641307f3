/**
 * The report of a summary run: a run known only from its clients' final
 * YCSB reports (`benchstream import-ycsb report.txt`). Every figure is
 * YCSB's as printed. Over several clients only the exact merges are made:
 * operations and throughput add up, averages weigh by operations, the
 * minimum is the least of the minimums and the maximum the largest of the
 * maximums, `Return=` counts add up. Percentiles are not merged (the p99 of
 * two clients' operations is not a function of their two p99s) and not the
 * largest of them either: with several clients they stay per client.
 */
import type {
  ReportedClient,
  ReportedMeasurement,
  ReportedRun,
  ReportedRunReport,
} from '../../../schemas/run-reports-api.v1.js'
import type { RunInfo } from '../../../schemas/runs-api.v1.js'

/** YCSB's report order of operations; others follow by name. */
const OP_ORDER = ['READ', 'UPDATE', 'INSERT', 'SCAN', 'READ-MODIFY-WRITE', 'DELETE']

/** `Return=` statuses that are success: `OK`, and `0` of YCSB before 0.4.0. */
export function isOkReturn(status: string): boolean {
  return status === 'OK' || status === '0'
}

/**
 * The half of a measurement that stands for its operation: `READ`, or `HdrREAD` of a two-in-one measurement
 * (`measurementtype=hdrhistogram+raw`); the `Raw` and `Bucket` halves repeat the same operations.
 */
export function isPrimaryMeasurement(m: Pick<ReportedMeasurement, 'name'>): boolean {
  return !/^(Raw|Bucket)/.test(m.name)
}

/** Operations a client's report counts: its measured operation sections (failed ones included), CLEANUP left out. */
export function clientOperations(c: ReportedClient): number {
  let n = 0
  for (const m of c.measurements)
    if (m.kind === 'operation' && m.latency === 'measured' && isPrimaryMeasurement(m)) n += m.operations ?? 0
  return n
}

/** The summary run's report: the exact merges over its clients, and each client's report as printed. */
export function reportedRunReport(r: ReportedRun, run?: RunInfo): ReportedRunReport {
  const clients = r.clients
  const byName = new Map<
    string,
    ReportedMeasurement & { clients: number; weighted: number; weight: number; from: ReportedMeasurement[] }
  >()
  let runtimeMs: number | null = null
  let throughput: number | null = null
  let operations = 0
  for (const c of clients) {
    if (c.runtimeMs !== null) runtimeMs = Math.max(runtimeMs ?? 0, c.runtimeMs)
    if (c.throughputOpsPerSec !== null) throughput = (throughput ?? 0) + c.throughputOpsPerSec
    operations += clientOperations(c)
    for (const m of c.measurements) {
      let s = byName.get(m.name)
      if (s === undefined) {
        s = {
          ...m,
          operations: null,
          averageUs: null,
          minUs: null,
          maxUs: null,
          percentiles: [],
          returns: {},
          clients: 0,
          weighted: 0,
          weight: 0,
          from: [],
        }
        byName.set(m.name, s)
      }
      s.clients++
      s.from.push(m)
      if (m.operations !== null) s.operations = (s.operations ?? 0) + m.operations
      if (m.averageUs !== null && m.operations !== null) {
        s.weighted += m.averageUs * m.operations
        s.weight += m.operations
      }
      if (m.minUs !== null) s.minUs = Math.min(s.minUs ?? Number.POSITIVE_INFINITY, m.minUs)
      if (m.maxUs !== null) s.maxUs = Math.max(s.maxUs ?? 0, m.maxUs)
      for (const [status, n] of Object.entries(m.returns)) s.returns[status] = (s.returns[status] ?? 0) + n
    }
  }
  const measurements = orderMeasurements([...byName.values()]).map(({ weighted, weight, from, ...m }) => ({
    ...m,
    averageUs: weight > 0 ? weighted / weight : null,
    // Reported by one client only, its percentiles are the run's (the others had none of these operations);
    // several clients' are not merged.
    percentiles: m.clients === 1 ? from[0]!.percentiles : [],
  }))
  return {
    runId: r.runId,
    origin: 'reported',
    ...(run === undefined ? {} : { run }),
    clients: clients.length,
    runtimeMs,
    throughputOpsPerSec: throughput,
    operations,
    measurements,
    percentilesPerClient: clients.length > 1,
    perClient: clients.map((c) => ({ ...c, measurements: orderMeasurements(c.measurements) })),
    ...(r.serverCache === undefined ? {} : { serverCache: r.serverCache }),
  }
}

function orderMeasurements<T extends ReportedMeasurement>(ms: readonly T[]): T[] {
  const kindRank = { operation: 0, other: 1, cleanup: 2 } as const
  const opRank = (op: string): number => (OP_ORDER.includes(op) ? OP_ORDER.indexOf(op) : OP_ORDER.length)
  return [...ms].sort(
    (a, b) =>
      kindRank[a.kind] - kindRank[b.kind] ||
      opRank(a.op) - opRank(b.op) ||
      a.op.localeCompare(b.op) ||
      (a.latency === b.latency ? 0 : a.latency === 'measured' ? -1 : 1) ||
      (a.status === b.status ? 0 : a.status === 'OK' ? -1 : b.status === 'OK' ? 1 : 0) ||
      a.name.localeCompare(b.name),
  )
}

/**
 * YCSB's percentile label: `95thPercentileLatency(us)`, `99.9PercentileLatency(us)` (YCSB's ordinal: a suffix for
 * whole numbers only), `(ms)` for the whole-ms figures of YCSB before 0.4.0.
 */
export function percentileLabel(percentile: number, unit: 'us' | 'ms'): string {
  let ordinal = String(percentile)
  if (Number.isInteger(percentile)) {
    const suffixes = ['th', 'st', 'nd', 'rd', 'th', 'th', 'th', 'th', 'th', 'th']
    const h = percentile % 100
    ordinal += h >= 11 && h <= 13 ? 'th' : suffixes[percentile % 10]
  }
  return `${ordinal}PercentileLatency(${unit})`
}

/** One report in YCSB's text layout (the default exporter's), figures as given. */
function ycsbLines(
  overall: { runtimeMs: number | null; throughputOpsPerSec: number | null },
  measurements: readonly ReportedMeasurement[],
): string[] {
  const lines: string[] = []
  if (overall.runtimeMs !== null) lines.push(`[OVERALL], RunTime(ms), ${String(overall.runtimeMs)}`)
  if (overall.throughputOpsPerSec !== null)
    lines.push(`[OVERALL], Throughput(ops/sec), ${javaDouble(overall.throughputOpsPerSec)}`)
  for (const m of measurements) {
    const put = (what: string, v: number | null, text: (v: number) => string = String): void => {
      if (v !== null) lines.push(`[${m.name}], ${what}, ${text(v)}`)
    }
    put('Operations', m.operations)
    put('AverageLatency(us)', m.averageUs, javaDouble)
    put('MinLatency(us)', m.minUs)
    put('MaxLatency(us)', m.maxUs)
    for (const p of m.percentiles)
      put(percentileLabel(p.percentile, p.unit), p.unit === 'ms' ? p.valueUs / 1000 : p.valueUs)
    for (const [status, n] of Object.entries(m.returns)) put(`Return=${status}`, n)
  }
  return lines
}

/**
 * A double as Java's Double.toString prints it (YCSB's averages and throughput): `649.0`, `716.8458781362007`,
 * `1.2345E7` from 10^7 up and below 10^-3.
 */
export function javaDouble(v: number): string {
  const abs = Math.abs(v)
  if (abs !== 0 && (abs >= 1e7 || abs < 1e-3)) {
    const [mantissa, exponent] = v.toExponential().split('e') as [string, string]
    return `${mantissa.includes('.') ? mantissa : `${mantissa}.0`}E${Number(exponent)}`
  }
  return Number.isInteger(v) ? v.toFixed(1) : String(v)
}

/**
 * The report as text: YCSB's layout with the run's figures (the merges that are exact), `[BENCHSTREAM]` lines saying
 * it is a summary run, and with several clients each client's report as YCSB printed it.
 */
export function formatReportedRun(r: ReportedRunReport): string {
  const out = ycsbLines(r, r.measurements)
  out.push(`[BENCHSTREAM], RunId, ${r.runId}`)
  out.push('[BENCHSTREAM], Origin, reported')
  if (r.run !== undefined && r.run.workload !== '') out.push(`[BENCHSTREAM], Workload, ${r.run.workload}`)
  out.push(`[BENCHSTREAM], Clients, ${r.clients}`)
  for (const c of r.serverCache ?? [])
    if (c.ratio !== null) out.push(`[BENCHSTREAM], ServerCacheHitRatio(${c.source}), ${c.ratio.toFixed(4)}`)
  // Who printed the figures: HBase's PerformanceEvaluation (import-pe, driver pe) or YCSB.
  const who = r.perClient.length > 0 && r.perClient.every((c) => c.format === 'pe') ? "PE's" : "YCSB's"
  if (r.clients === 1) {
    out.push(
      `# A summary run: ${who} figures as printed in ${r.perClient[0]?.source ?? 'its report'} ` +
        `(${r.perClient[0]?.format ?? 'text'}), not recomputed.`,
    )
    return out.join('\n') + '\n'
  }
  out.push(
    `# A summary run: ${who} figures as printed, merged over the ${r.clients} clients only where that is exact ` +
      '(operations, throughput and Return= counts added, averages weighted by operations, the least minimum, ' +
      'the largest maximum). Percentiles cannot be merged (the p99 of all operations is not a function of each ' +
      "client's p99): each client's report follows as printed.",
  )
  for (const c of r.perClient) {
    out.push('', `# client ${c.clientId}: ${c.source} (${c.format})`)
    out.push(...ycsbLines(c, c.measurements))
  }
  return out.join('\n') + '\n'
}
