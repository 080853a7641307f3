/**
 * Runs as the read model lists them: the `runs` view with each run's origin and operations, one run, and the figures
 * of runs imported from YCSB's reports (reported_measurements) with their server counters.
 */
import type {
  ReportedClient,
  ReportedMeasurement,
  ReportedRun,
  RunFilter,
  RunInfo,
} from '../../core/ports/read-model.js'
import { serverCacheFigures } from '../../core/reports/server-cache.js'
import { queryRows, type ClickHouse } from './client.js'
import { COUNTER_NAMES, num } from './read-model-figures.js'

type Num = string | number

export async function listRuns(
  ch: ClickHouse,
  limit: number,
  filter: RunFilter = {},
): Promise<Array<RunInfo & { operations: number }>> {
  const db = ch.database
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
    ch,
    `
      SELECT r.run_id AS run_id, r.* EXCEPT (run_id), if(p_origin = 'reported', 'reported', 'events') AS origin,
             toUInt64(if(p_origin = 'reported', p_operations, ifNull(w.operations, 0))) AS operations
      FROM ${db}.runs AS r
      LEFT JOIN (SELECT run_id, sum(count) AS operations FROM ${db}.op_windows GROUP BY run_id) AS w USING (run_id)
      LEFT JOIN (SELECT run_id, origin AS p_origin, operations AS p_operations FROM ${db}.reported_runs) AS p
        USING (run_id)
      ${where.length === 0 ? '' : `WHERE ${where.join(' AND ')}`}
      ORDER BY r.started_at DESC
      LIMIT {limit:UInt32}`,
    params,
  )
}

export async function getRun(ch: ClickHouse, runId: string): Promise<RunInfo | undefined> {
  const db = ch.database
  const rows = await queryRows<RunInfo>(
    ch,
    `
      SELECT r.run_id AS run_id, r.* EXCEPT (run_id), if(p_origin = 'reported', 'reported', 'events') AS origin
      FROM ${db}.runs AS r
      LEFT JOIN (SELECT run_id, origin AS p_origin FROM ${db}.reported_runs WHERE run_id = {runId:String}) AS p
        USING (run_id)
      WHERE r.run_id = {runId:String}`,
    { runId },
  )
  return rows[0]
}

export async function reportedRuns(ch: ClickHouse, runIds: readonly string[]): Promise<ReportedRun[]> {
  const db = ch.database
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
    ch,
    `
      SELECT run_id, client_id, measurement, kind, op, latency, status, format, source, runtime_ms, throughput,
             operations, average_us, min_us, max_us, percentiles_us, percentiles_in_ms, returns
      FROM ${db}.reported_measurements WHERE run_id IN {ids:Array(String)}
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
    ch,
    `
      SELECT run_id, client_id, source, name, toUnixTimestamp64Micro(at) AS at_us, value
      FROM ${db}.server_metrics WHERE run_id IN {ids:Array(String)} AND name IN {names:Array(String)}`,
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
