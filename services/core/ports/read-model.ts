/**
 * The read side: what the API, the CLI and the demo ask of the stored
 * windows. services/adapters/clickhouse/read-model.ts answers it from
 * ClickHouse; reports are always computed from merged histograms.
 */
import type { RunInfo, RunReport, TimelinePoint } from '../../../schemas/api.v1.js'

export type { RunInfo, RunReport, TimelinePoint }

/** Windowed percentiles next to exact ones over the raw events (the demo's accuracy check). */
export interface PercentileCheck {
  op: string
  q: number
  windows: number
  exact: number
}


export interface ReadModel {
  /** Newest first. */
  listRuns(limit: number): Promise<Array<RunInfo & { operations: number }>>
  getRun(runId: string): Promise<RunInfo | undefined>
  /** The run's report merged over clients and time; BS_ERR_NOT_FOUND when it has no data. */
  runReport(runId: string): Promise<RunReport>
  /** Per window and operation, merged over clients, for windows starting at or after sinceMs. */
  timeline(runId: string, sinceMs: number): Promise<TimelinePoint[]>
  /** Operations counted per `OP/STATUS`, and how many clients have ended. */
  runCounts(runId: string): Promise<{ byOpStatus: Record<string, number>; total: number; clientsEnded: number }>
  /** Percentiles of merged windows against exact ones over the run's raw events. */
  percentileCheck(runId: string, quantiles: readonly number[]): Promise<PercentileCheck[]>
  /** Dead letters by reason. */
  deadLetterCounts(): Promise<Record<string, number>>
  /** Resolves when the store answers a trivial query; rejects otherwise. */
  ping(): Promise<void>
}
