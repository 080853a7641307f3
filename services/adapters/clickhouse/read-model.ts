/**
 * ReadModel on ClickHouse (services/core/ports/read-model.ts): reports, live
 * timelines and run lists for the API, the CLI and the demo, all computed
 * from merged histograms. A run's window length comes from the `runs` view.
 * The reads live by concept: runs (read-model-runs.ts), figures
 * (read-model-figures.ts), a run's report and checks (read-model-report.ts),
 * the live view's windows (read-model-live.ts), alerts (read-model-alerts.ts).
 */
import type { RunProgress } from '../../core/stats/window-completeness.js'
import type {
  AlertFilter,
  AlertPageRequest,
  AlertsPage,
  ClientWindowRow,
  PercentileCheck,
  ReadModel,
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
import { queryRows, type ClickHouse } from './client.js'
import { alerts as alertsOf } from './read-model-alerts.js'
import { runFigures as runFiguresOf, windowFigures as windowFiguresOf } from './read-model-figures.js'
import {
  clientWindows as clientWindowsOf,
  liveWindows as liveWindowsOf,
  serverCacheWindows as serverCacheWindowsOf,
  timeline as timelineOf,
} from './read-model-live.js'
import {
  percentileCheck as percentileCheckOf,
  runCounts as runCountsOf,
  runReport as runReportOf,
} from './read-model-report.js'
import { getRun as getRunOf, listRuns as listRunsOf, reportedRuns as reportedRunsOf } from './read-model-runs.js'
import { queryRunProgress } from './run-progress.js'

type Num = string | number

export class ClickHouseReadModel implements ReadModel {
  constructor(private readonly ch: ClickHouse) {}

  private get db(): string {
    return this.ch.database
  }

  listRuns(limit: number, filter?: RunFilter): Promise<Array<RunInfo & { operations: number }>> {
    return listRunsOf(this.ch, limit, filter)
  }

  reportedRuns(runIds: readonly string[]): Promise<ReportedRun[]> {
    return reportedRunsOf(this.ch, runIds)
  }

  runFigures(runIds: readonly string[]): Promise<RunFigures[]> {
    return runFiguresOf(this.ch, runIds)
  }

  windowFigures(runIds: readonly string[]): Promise<WindowFigures[]> {
    return windowFiguresOf(this.ch, runIds)
  }

  getRun(runId: string): Promise<RunInfo | undefined> {
    return getRunOf(this.ch, runId)
  }

  runReport(runId: string): Promise<RunReport> {
    return runReportOf(this.ch, runId)
  }

  timeline(runId: string, sinceMs: number): Promise<TimelinePoint[]> {
    return timelineOf(this.ch, runId, sinceMs)
  }

  runCounts(runId: string): Promise<{ byOpStatus: Record<string, number>; total: number; clientsEnded: number }> {
    return runCountsOf(this.ch, runId)
  }

  percentileCheck(runId: string, quantiles: readonly number[]): Promise<PercentileCheck[]> {
    return percentileCheckOf(this.ch, runId, quantiles)
  }

  alerts(filter: AlertFilter, page: AlertPageRequest): Promise<AlertsPage> {
    return alertsOf(this.ch, filter, page)
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

  liveWindows(runId: string, fromMs: number, toMs: number): Promise<WindowOpStatusRow[]> {
    return liveWindowsOf(this.ch, runId, fromMs, toMs)
  }

  clientWindows(runId: string, fromMs: number, toMs: number): Promise<ClientWindowRow[]> {
    return clientWindowsOf(this.ch, runId, fromMs, toMs)
  }

  serverCacheWindows(runId: string, fromMs: number, toMs: number, windowMs: number): Promise<ServerCacheRow[]> {
    return serverCacheWindowsOf(this.ch, runId, fromMs, toMs, windowMs)
  }
}
