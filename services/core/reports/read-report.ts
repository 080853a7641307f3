/**
 * A run's report, whatever the run is made of: computed from its windows
 * (ycsb-report.ts), or for a summary run, its clients' YCSB reports as
 * printed (reported-report.ts). `benchstream report` and
 * GET /api/v1/runs/:id/report answer both.
 */
import type { ReportedRunReport, RunReport } from '../../../schemas/run-reports-api.v1.js'
import { isBenchstreamError } from '../errors.js'
import type { ReadModel } from '../ports/read-model.js'
import { formatReportedRun, reportedRunReport } from './reported-report.js'
import { formatRunReport } from './run-report-text.js'

export type AnyRunReport = RunReport | ReportedRunReport

export function isReportedReport(r: AnyRunReport): r is ReportedRunReport {
  return 'origin' in r && r.origin === 'reported'
}

/** The run's report; BS_ERR_NOT_FOUND when it has neither windows nor a YCSB report. */
export async function readRunReport(
  rm: Pick<ReadModel, 'getRun' | 'runReport' | 'reportedRuns'>,
  runId: string,
): Promise<AnyRunReport> {
  try {
    return await rm.runReport(runId)
  } catch (err) {
    if (!isBenchstreamError(err, 'BS_ERR_NOT_FOUND')) throw err
    // No windows: a summary run, known from its clients' YCSB reports.
    const [r] = await rm.reportedRuns([runId])
    if (r === undefined) throw err
    return reportedRunReport(r, await rm.getRun(runId))
  }
}

/** The report as text: YCSB's layout with Benchstream's lines. */
export function formatAnyRunReport(r: AnyRunReport): string {
  return isReportedReport(r) ? formatReportedRun(r) : formatRunReport(r)
}
