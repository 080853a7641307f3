/**
 * Whether a run whose clients ended is complete: its report read back until every client's end is in it and
 * every event sent is counted (a summary run, driver pe: every client's report stored), within countWaitMs; and
 * the runs a coordinator that stopped left running, settled on resume.
 */
import { setTimeout as sleep } from 'node:timers/promises'
import type { ReportedRunReport, RunReport } from '../../schemas/run-reports-api.v1.js'
import type { Attempt, Cell } from '../../schemas/experiment-state.v1.js'
import type { AgentPool } from './agents.js'
import type { ConductorConfig } from './config.js'
import type { ConductorDeps } from './deps.js'
import type { ExperimentRecord } from './record.js'

export interface VerificationDeps extends Pick<ConductorDeps, 'runs' | 'now'> {
  agents: AgentPool
  record: ExperimentRecord
}

export class Verification {
  constructor(
    private readonly deps: VerificationDeps,
    private readonly config: Readonly<ConductorConfig>,
  ) {}

  /** Every client ended: the run's report must show each client's end and every event it sent, counted. */
  async verify(attempt: Attempt, n: number): Promise<void> {
    const countWaitMs = this.config.countWaitMs
    const deadline = this.deps.now() + countWaitMs
    let got: RunReport | ReportedRunReport | undefined
    for (;;) {
      got = await this.deps.runs.report(attempt.runId).catch(() => undefined)
      if (got !== undefined && isReported(got)) {
        // A summary run (driver pe): no events to count; every client that ended has its report stored.
        if (got.run !== undefined && got.run.clients_ended >= n && got.clients >= got.run.clients_ended) break
      } else if (
        got?.run !== undefined &&
        got.run.clients_ended >= n &&
        got.completeness.counted === got.completeness.sent
      )
        break
      if (this.deps.now() >= deadline) break
      await sleep(this.config.pollMs * 2)
    }
    attempt.startSkewMs = got?.run?.start_skew_ms ?? null
    attempt.maxClockOffsetMs = got?.run?.clock_offset_max_ms ?? null
    if (got !== undefined && isReported(got)) {
      // The operations its clients reported, as reported: nothing was sent as events to be counted.
      attempt.counted = got.operations
      attempt.sent = null
      if (got.run === undefined || got.run.clients_ended < n) {
        attempt.state = 'incomplete'
        attempt.reason = `clients ended ${got.run?.clients_ended ?? 0} of ${n}`
      } else if (got.clients < got.run.clients_ended) {
        attempt.state = 'incomplete'
        attempt.reason = `${got.clients} of the ${got.run.clients_ended} clients that ended have their report stored`
      } else attempt.state = 'done'
      return
    }
    const report = got
    attempt.counted = report?.completeness.counted ?? null
    attempt.sent = report?.completeness.sent ?? null
    if (report?.run === undefined) {
      attempt.state = 'incomplete'
      attempt.reason = `the run has no data after ${countWaitMs / 1000} s`
    } else if (report.run.clients_ended < n) {
      attempt.state = 'incomplete'
      attempt.reason = `clients ended ${report.run.clients_ended} of ${n}`
    } else if (report.completeness.counted !== report.completeness.sent) {
      attempt.state = 'incomplete'
      attempt.reason =
        `${report.completeness.counted} of ${report.completeness.sent ?? '?'} ` +
        `events counted after ${countWaitMs / 1000} s`
    } else attempt.state = 'done'
  }

  /** A run a previous coordinator left running: done if its clients all ended and it is counted, else incomplete. */
  async settle(cell: Cell, attempt: Attempt, why: string): Promise<void> {
    const plan = this.deps.record.state.plan
    const n = attempt.clients.length
    const ids = attempt.clients.map((c) => `${attempt.runId}/${c.agent}`)
    // Clients still at work finish their run first (their agents say so in each heartbeat).
    const deadline = this.deps.now() + (plan.seconds ?? 60) * 1000 + this.config.endSlackMs
    while (
      this.deps.agents.alive(plan).some((a) => a.hb.busyWith !== null && ids.includes(a.hb.busyWith)) &&
      this.deps.now() < deadline
    )
      await sleep(this.config.pollMs)
    await this.verify(attempt, n)
    attempt.endedAtMs = attempt.endedAtMs ?? this.deps.now()
    this.deps.record.note(
      `${attempt.runId} (${cell.key}), left running ` +
        `by a coordinator ` +
        `that stopped, settled on ${why}: ${attempt.state}` +
        (attempt.reason === undefined ? '' : ` (${attempt.reason})`),
    )
  }
}

/** A summary run's report (a PE run's: its clients' figures as reported), not one counted from events. */
function isReported(r: RunReport | ReportedRunReport): r is ReportedRunReport {
  return 'origin' in r && r.origin === 'reported'
}
