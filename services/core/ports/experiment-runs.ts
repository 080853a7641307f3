/**
 * What the coordinator of an experiment reads about its runs once the
 * clients have ended: each run's report (whether every client ended and
 * every event it sent is counted), and the comparisons at the end. The CLI
 * wires a running server's API (services/cli/reader.ts).
 */
import type { ReleaseComparison } from '../../../schemas/compare-api.v1.js'
import type { ReportedRunReport, RunReport } from '../../../schemas/run-reports-api.v1.js'

export interface ExperimentRuns {
  /** undefined while the run has no data yet; a summary run's (driver pe) is its clients' reports as reported. */
  report(runId: string): Promise<RunReport | ReportedRunReport | undefined>
  compare(
    baseline: string,
    candidate: string,
    options: { alpha?: number; minEffect?: number; force?: boolean; test?: 'auto' | 'welch' },
  ): Promise<ReleaseComparison>
}
