/**
 * The release fixtures of real YCSB 0.17.0 (test/fixtures/ycsb-0.17.0/releases,
 * history, releases-ms; regenerate-releases.sh): their paths, and each
 * report as the summary run the read model gives back, built the way the
 * pipeline builds it (parse, SUMMARY_REPORT body, the stored row's shape),
 * so pure tests and end-to-end tests expect the same values.
 */
import { readFileSync } from 'node:fs'
import path from 'node:path'
import type { ReportedClient, ReportedRun } from '../../schemas/run-reports-api.v1.js'
import type { RunInfo } from '../../schemas/runs-api.v1.js'
import { summaryBody } from '../../services/core/ycsb/import-plan.js'
import { parseYcsbFile } from '../../services/core/ycsb/import.js'
import type { SummaryReport } from '../../services/core/ycsb/report-types.js'

export const FIXTURES = 'test/fixtures/ycsb-0.17.0'
export const WORKLOADS = ['a', 'b', 'c', 'd', 'e', 'f'] as const
export const CLIENTS = ['client1', 'client2'] as const
export const HISTORY_VERSIONS = ['0.9.8', '0.9.9', '0.9.10', '0.9.11', '0.9.12', '0.9.13', '0.9.14', '0.9.15']

/** A report of releases/: release A or B, workload a-f, repetition 1-3, client. */
export function releaseReport(release: 'A' | 'B', w: string, rep: number, client: string): string {
  return path.join(FIXTURES, 'releases', release, `workload${w}-${rep}-${client}.stdout.txt`)
}

/** The same report in YCSB 0.1.0-0.3.1's (ms) format (releases-ms/, workload a only). */
export function msReport(release: 'A' | 'B', rep: number, client: string): string {
  return path.join(FIXTURES, 'releases-ms', release, `workloada-${rep}-${client}.txt`)
}

export function parsedReport(file: string): SummaryReport {
  const f = parseYcsbFile(file, readFileSync(file))
  if (f.kind !== 'summary') throw new Error(`${file} is not a final report`)
  return f
}

/** One client's report as reported_measurements holds it and the read model returns it. */
export function reportedClient(file: string, clientId: string): ReportedClient {
  const b = summaryBody(parsedReport(file))
  return {
    clientId,
    source: b.source,
    format: b.format,
    runtimeMs: b.runtimeMs ?? null,
    throughputOpsPerSec: b.throughputOpsPerSec ?? null,
    measurements: b.measurements.map((m) => ({
      name: m.name,
      kind: m.kind,
      op: m.op,
      latency: m.latency,
      status: m.status,
      operations: m.operations ?? null,
      averageUs: m.averageUs ?? null,
      minUs: m.minUs ?? null,
      maxUs: m.maxUs ?? null,
      percentiles: [...m.percentiles]
        // Stored per measurement: a section printed in whole ms has all its percentiles in ms.
        .map((p) => ({ ...p, unit: m.percentiles.some((x) => x.unit === 'ms') ? ('ms' as const) : ('us' as const) }))
        .sort((x, y) => x.percentile - y.percentile),
      returns: m.returns,
    })),
  }
}

/** A summary run of releases/ (both clients). */
export function releaseRun(runId: string, files: ReadonlyArray<{ file: string; clientId: string }>): ReportedRun {
  return { runId, clients: files.map((f) => reportedClient(f.file, f.clientId)) }
}

/** The run a summary-run import announces (import-ycsb's RUN_LIFECYCLE, as the runs view gives it back). */
export function importedRunInfo(runId: string, o: Partial<RunInfo> = {}): RunInfo {
  return {
    run_id: runId,
    started_at: '2026-12-04 16:00:00.000000',
    ended_at: '2026-12-04 16:00:00.000000',
    clients: 2,
    clients_ended: 2,
    threads: 0,
    target: 0,
    labels: { source: 'ycsb-import' },
    workload: '',
    binding: 'ycsb',
    sent: {},
    undelivered: 0,
    runtime_ms: 0,
    window_ms: 1000,
    group_id: '',
    repeat: 0,
    properties: {},
    schedule_lag_max_ms: 0,
    behind_schedule_episodes: 0,
    expected_clients: 0,
    start_skew_ms: null,
    clock_offset_max_ms: null,
    origin: 'reported',
    ...o,
  }
}
