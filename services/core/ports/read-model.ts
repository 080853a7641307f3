/**
 * The read side: what the API, the CLI and the demo ask of the stored
 * windows. services/adapters/clickhouse/read-model.ts answers it from
 * ClickHouse; reports are always computed from merged histograms.
 */
import type { AlertState } from '../../../schemas/alert-rules.v1.js'
import type { Alert, AlertsPage } from '../../../schemas/alerts-api.v1.js'
import type {
  ReportedClient,
  ReportedMeasurement,
  ReportedRun,
  RunReport,
} from '../../../schemas/run-reports-api.v1.js'
import type { OpFigures, RunFigures, RunInfo, TimelinePoint, WindowFigures } from '../../../schemas/runs-api.v1.js'
import type { RunProgress } from '../stats/window-completeness.js'

export type {
  Alert,
  AlertsPage,
  OpFigures,
  ReportedClient,
  ReportedMeasurement,
  ReportedRun,
  RunFigures,
  RunInfo,
  RunReport,
  TimelinePoint,
  WindowFigures,
}

/** Which alert incidents to list; every given condition must hold. */
export interface AlertFilter {
  runId?: string
  /** The incident's latest state. */
  state?: AlertState
  rule?: string
  /** Incidents firing at some time at or after this one: still open, or ended at or after it (ms). */
  sinceMs?: number
}

/** A page of incidents, newest first (by start, then fingerprint). */
export interface AlertPageRequest {
  limit: number
  /** `<startsAt ms>-<fingerprint>` of the last incident of the previous page. */
  cursor?: string
}

/** Windowed percentiles next to exact ones over the raw events (the demo's accuracy check). */
export interface PercentileCheck {
  op: string
  q: number
  windows: number
  exact: number
}

/**
 * One (window, operation, status) of a run, merged over clients and partitions (sums, min, max, sumMap of the
 * histograms).
 */
export interface WindowOpStatusRow {
  /** Window start, ms since the epoch. */
  startMs: number
  op: string
  status: string
  count: number
  sumUs: number
  minUs: number
  maxUs: number
  /** Merged latency histogram: [bucket index, count], sorted by index (services/core/stats/histogram.ts). */
  hist: Array<[number, number]>
  /** Merged histogram of latencies from the intended start (coordinated omission corrected). */
  intendedHist: Array<[number, number]>
  cacheHits: number
  cacheMisses: number
}

/** Calls of one driver client in one window. */
export interface ClientWindowRow {
  startMs: number
  clientId: string
  count: number
}

/**
 * Increase of a datastore's own cumulative cache counters (e.g. Redis
 * keyspace_hits/keyspace_misses) over the samples taken in one window,
 * summed over the clients that sampled them.
 */
export interface ServerCacheRow {
  startMs: number
  source: string
  hits: number
  misses: number
}

/** Which runs to list; every given condition must hold. */
export interface RunFilter {
  /** Runs of this group of repetitions. */
  group?: string
  /** Runs whose labels have exactly these values. */
  labels?: Readonly<Record<string, string>>
  /** Runs that carry this label key, whatever its value. */
  hasLabel?: string
}

export interface ReadModel {
  /** Newest first; `origin` says which are summary runs, whose operations are those their reports count. */
  listRuns(limit: number, filter?: RunFilter): Promise<Array<RunInfo & { operations: number }>>
  getRun(runId: string): Promise<RunInfo | undefined>
  /** The run's report merged over clients and time; BS_ERR_NOT_FOUND when it has no data. */
  runReport(runId: string): Promise<RunReport>
  /**
   * Per run: its figures per operation and OVERALL, the same numbers as its
   * report (ClickHouse view run_op_figures), and the server-side cache-hit
   * ratio. Runs without data are left out.
   */
  runFigures(runIds: readonly string[]): Promise<RunFigures[]>
  /**
   * Per run: its clients' final YCSB reports as imported (table reported_measurements), figures as printed. Runs
   * without one are left out.
   */
  reportedRuns(runIds: readonly string[]): Promise<ReportedRun[]>
  /**
   * Per run, window and operation (OVERALL excluded), merged over clients, in window order (view op_window_figures).
   */
  windowFigures(runIds: readonly string[]): Promise<WindowFigures[]>
  /** Per window and operation, merged over clients, for windows starting at or after sinceMs. */
  timeline(runId: string, sinceMs: number): Promise<TimelinePoint[]>
  /** Operations counted per `OP/STATUS`, and how many clients have ended. */
  runCounts(runId: string): Promise<{ byOpStatus: Record<string, number>; total: number; clientsEnded: number }>
  /** Percentiles of merged windows against exact ones over the run's raw events. */
  percentileCheck(runId: string, quantiles: readonly number[]): Promise<PercentileCheck[]>
  /** Alert incidents (table alerts, one row per incident with its latest state), newest first, a page at a time. */
  alerts(filter: AlertFilter, page: AlertPageRequest): Promise<AlertsPage>
  /** Dead letters by reason. */
  deadLetterCounts(): Promise<Record<string, number>>
  /** Resolves when the store answers a trivial query; rejects otherwise. */
  ping(): Promise<void>
  /**
   * Where the run's data stands (per partition), looking only at windows starting at or after sinceMs; undefined when
   * there are none. The live view judges completeness from it, as the alerts do.
   */
  liveProgress(runId: string, sinceMs: number): Promise<RunProgress | undefined>
  /** Per window, operation and status, merged over clients and partitions, for window starts in [fromMs, toMs). */
  liveWindows(runId: string, fromMs: number, toMs: number): Promise<WindowOpStatusRow[]>
  /** Calls per window and client, for window starts in [fromMs, toMs). */
  clientWindows(runId: string, fromMs: number, toMs: number): Promise<ClientWindowRow[]>
  /** Increases of the datastore's cache counters per window of windowMs, for samples taken in [fromMs, toMs). */
  serverCacheWindows(runId: string, fromMs: number, toMs: number, windowMs: number): Promise<ServerCacheRow[]>
}
