/**
 * The rows each table of the window store gets from a batch's records (LIFECYCLE, SERVER_METRICS, SUMMARY_REPORT and
 * the aggregated windows), in the tables' column names (schemas/clickhouse/).
 */
import type { RunLifecycle, ServerMetrics, SummaryReportRecord } from '../../../schemas/events.v1.js'
import type { FlushBatch } from '../../core/stats/partition-state.js'
import type { WindowRow } from '../../core/stats/windows.js'
import { msToDateTime64, usToDateTime64 } from './datetime64-text.js'

/** The run_clients row of one LIFECYCLE record. */
export function runClientRow(r: RunLifecycle, partition: number, offset: number): Record<string, unknown> {
  return {
    run_id: r.runId,
    client_id: r.clientId,
    phase: r.phase,
    at: usToDateTime64(Math.round(r.atUs)),
    labels: r.labels,
    workload: r.workload,
    binding: r.binding,
    threads: r.threads,
    target: r.target,
    sent: r.sent ?? {},
    undelivered: r.undelivered ?? 0,
    runtime_ms: Math.round(r.runtimeMs ?? 0),
    src_partition: partition,
    src_offset: offset,
    group_id: r.group ?? '',
    repeat: r.repeat ?? 0,
    properties: r.properties ?? {},
    schedule_lag_max_ms: r.scheduleLagMaxMs ?? 0,
    behind_schedule_episodes: r.behindScheduleEpisodes ?? 0,
    expected_clients: r.expectedClients ?? 0,
    clock_offset_ms: r.clockOffsetMs ?? null,
    first_op_at: r.firstOpUs === undefined ? null : usToDateTime64(Math.round(r.firstOpUs)),
  }
}

/** The server_metrics rows of one SERVER_METRICS record: one per value. */
export function serverMetricRows(r: ServerMetrics, partition: number, offset: number): Array<Record<string, unknown>> {
  return Object.entries(r.values).map(([name, value]) => ({
    run_id: r.runId,
    client_id: r.clientId,
    at: usToDateTime64(Math.round(r.atUs)),
    source: r.source,
    name,
    value,
    src_partition: partition,
    src_offset: offset,
  }))
}

/** The op_windows row of one aggregated window of a batch. */
export function windowRow(w: WindowRow, b: FlushBatch): Record<string, unknown> {
  return {
    run_id: w.runId,
    client_id: w.clientId,
    op: w.op,
    status: w.status,
    window_start: msToDateTime64(w.windowStartUs),
    window_ms: Math.round(w.windowUs / 1000),
    count: w.count,
    errors: w.errors,
    sum_us: w.sumUs,
    min_us: w.minUs,
    max_us: w.maxUs,
    intended_sum_us: w.intendedSumUs,
    intended_max_us: w.intendedMaxUs,
    cache_hits: w.cacheHits,
    cache_misses: w.cacheMisses,
    bytes: w.bytes,
    hist: w.hist.toMap(),
    intended_hist: w.intendedHist.toMap(),
    late_events: w.lateEvents,
    first_start: usToDateTime64(w.firstStartUs),
    last_end: usToDateTime64(w.lastEndUs),
    src_partition: b.partition,
    src_first_offset: b.firstOffset,
    src_last_offset: b.lastOffset,
  }
}

/** Rows of reported_measurements (schemas/clickhouse/0008-reported-summaries.sql) for one SUMMARY_REPORT record. */
export function reportedRows(
  r: SummaryReportRecord,
  partition: number,
  offset: number,
): Array<Record<string, unknown>> {
  return r.measurements.map((m) => ({
    run_id: r.runId,
    client_id: r.clientId,
    measurement: m.name,
    kind: m.kind,
    op: m.op,
    latency: m.latency,
    status: m.status,
    origin: 'reported',
    format: r.format,
    source: r.source,
    imported_at: usToDateTime64(Math.round(r.atUs)),
    runtime_ms: r.runtimeMs ?? null,
    throughput: r.throughputOpsPerSec ?? null,
    operations: m.operations ?? null,
    average_us: m.averageUs ?? null,
    min_us: m.minUs ?? null,
    max_us: m.maxUs ?? null,
    percentiles_us: Object.fromEntries(m.percentiles.map((p) => [String(p.percentile), p.valueUs])),
    percentiles_in_ms: m.percentiles.some((p) => p.unit === 'ms') ? 1 : 0,
    returns: m.returns,
    src_partition: partition,
    src_offset: offset,
  }))
}
