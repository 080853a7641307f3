/**
 * One attempt of a cell (or of a setup's load): a new run id, the clients picked and given their share of the
 * work, held at one start barrier and released together (`go` at an instant on the broker's clock), a profile
 * taken during it, then the wait until every client ended. A run's count is verified in the background while the
 * next one runs (verifying).
 */
import type { AgentHeartbeat, RunSpec } from '../../schemas/experiment-control.v1.js'
import type { Plan } from '../../schemas/experiment-plan.v1.js'
import type { Attempt, Cell } from '../../schemas/experiment-state.v1.js'
import { keyRange, runIdOf, share } from '../core/experiments/matrix.js'
import { PLAN_DEFAULTS, workloadName } from '../core/experiments/plan.js'
import type { AgentPool } from './agents.js'
import type { Assignments } from './assignments.js'
import type { ConductorConfig } from './config.js'
import type { ControlChannel } from './control.js'
import type { ExperimentRecord } from './record.js'
import type { Verification } from './verification.js'

export interface RunAttemptsDeps {
  now: () => number
  record: ExperimentRecord
  agents: AgentPool
  channel: ControlChannel
  assignments: Assignments
  verification: Verification
}

export class RunAttempts {
  /** Verifications of runs whose clients all ended, going on in the background. */
  readonly verifying = new Set<Promise<void>>()

  constructor(
    private readonly deps: RunAttemptsDeps,
    private readonly config: Readonly<ConductorConfig>,
  ) {}

  /** One attempt of a cell (or of a load): a new run id, its clients at the barrier, go, and how it ended. */
  async runOnce(cell: Cell, phase: 'run' | 'load'): Promise<Attempt> {
    const { record, assignments } = this.deps
    const state = record.state
    const plan = state.plan
    // A load is one attempt of its own cell; runIdOf keeps its id within the id rule (`<group>-load-<n>` may not).
    const runId = runIdOf(cell, phase === 'load' ? 1 : cell.attempts.length + 1)
    const picked = await this.deps.agents.pickClientsWaiting(plan)
    if (typeof picked === 'string') {
      const a = emptyAttempt(runId, 'failed', picked)
      if (phase === 'run') cell.attempts.push(a)
      await record.save()
      return a
    }
    const n = picked.length
    const attempt: Attempt = {
      ...emptyAttempt(runId, 'running', undefined),
      clients: picked.map((a) => ({
        agent: a.agent,
        clientId: a.agent,
        state: 'assigned',
        clockOffsetMs: a.clock === null ? null : -a.clock.offsetMs,
      })),
    }
    if (phase === 'run') cell.attempts.push(attempt)
    state.currentRun = runId
    await record.save()

    const setup = plan.setups.find((s) => s.name === cell.setup)!
    const workload = plan.workloads.find((w) => workloadName(w) === cell.workload)!
    const properties = {
      ...textProps(plan.properties),
      ...textProps(workload.properties),
      ...textProps(setup.properties),
    }
    const ids = picked.map((a) => `${runId}/${a.agent}`)
    const records = Number(properties.recordcount ?? '1000')
    for (const [i, a] of picked.entries()) {
      const run: RunSpec = {
        phase,
        driver: plan.driver ?? PLAN_DEFAULTS.driver,
        binding: plan.binding,
        workload: workload.file,
        properties: phase === 'load' ? { ...properties, ...stringProps(keyRange(0, records, n, i)) } : properties,
        threads: plan.threads ?? PLAN_DEFAULTS.threads,
        target: phase === 'run' && plan.target !== undefined ? share(plan.target, n, i) : 0,
        ...(phase === 'run' && plan.seconds !== undefined ? { seconds: plan.seconds } : {}),
        ...(phase === 'run' && plan.operations !== undefined ? { operations: share(plan.operations, n, i) } : {}),
        runId,
        clientId: a.agent,
        ...(phase === 'run' ? { group: cell.group, repetition: cell.repetition } : {}),
        labels: {
          ...setup.labels,
          experiment: state.id,
          setup: setup.name,
          ...(cell.warmup ? { warmup: 'true' } : {}),
        },
        expectedClients: n,
        experiment: state.id,
        ...((setup.serverMetrics ?? plan.serverMetrics) === undefined
          ? {}
          : { serverMetrics: setup.serverMetrics ?? plan.serverMetrics }),
      }
      await assignments.assign({ assignment: ids[i]!, agent: a, run })
    }
    const outcome = await this.conduct(
      attempt,
      ids,
      picked,
      phase === 'run' ? (setup.profile ?? plan.profile) : undefined,
    )
    attempt.endedAtMs = this.deps.now()
    state.currentRun = null
    if (outcome !== undefined) {
      attempt.state = outcome.state
      attempt.reason = outcome.reason
    } else if (phase === 'load') await this.deps.verification.verify(attempt, n)
    else {
      // Counted in the background: the agents are free for the next run already.
      const v: Promise<void> = this.deps.verification
        .verify(attempt, n)
        .then(async () => {
          if (attempt.state !== 'done')
            record.note(
              `${attempt.runId}: ${attempt.state}${attempt.reason === undefined ? '' : `: ${attempt.reason}`}`,
            )
          await record.save()
        })
        .finally(() => this.verifying.delete(v))
      this.verifying.add(v)
    }
    await record.save()
    return attempt
  }

  /**
   * The barrier and the run: every client ready, then go; then every client ended. Returns how it failed (and
   * cancels the others), or undefined when every client ended.
   */
  private async conduct(
    attempt: Attempt,
    ids: string[],
    agents: AgentHeartbeat[],
    profile: Plan['profile'],
  ): Promise<{ state: 'failed' | 'incomplete'; reason: string } | undefined> {
    const { assignments, channel, record } = this.deps
    const { startLeadMs, readyWaitMs, endSlackMs, operationsRunMaxMs } = this.config
    const ready = await assignments.waitAll(ids, agents, ['ready'], readyWaitMs, attempt)
    if (ready !== undefined) {
      await assignments.cancel(ids, ready)
      return { state: 'failed', reason: ready }
    }
    const startAtMs = channel.brokerNow() + startLeadMs
    await channel.publish({
      type: 'go',
      sentAtMs: this.deps.now(),
      experiment: record.state.id,
      assignments: ids,
      startAtMs,
    })
    attempt.startedAtMs = startAtMs
    for (const c of attempt.clients) c.state = 'started'
    await record.save()
    const p = record.state.plan
    if (profile !== undefined && !attempt.runId.endsWith('-load')) await this.profile(attempt.runId, profile, p)
    const runMs = p.seconds !== undefined ? p.seconds * 1000 : operationsRunMaxMs
    const ended = await assignments.waitAll(ids, agents, ['ended'], startLeadMs + runMs + endSlackMs, attempt)
    if (ended !== undefined) {
      await assignments.cancel(ids, ended)
      return { state: 'incomplete', reason: ended }
    }
    return undefined
  }

  /** A CPU profile of the plan's target during the run, attached to it; a failure is a note, not a failed run. */
  private async profile(runId: string, p: NonNullable<Plan['profile']>, plan: Plan): Promise<void> {
    const agent = this.deps.agents.alive(plan).find((a) => a.hb.agent === p.agent)
    if (agent === undefined)
      return this.deps.record.note(`${runId}: no profile: ${this.deps.agents.absent(p.agent, plan)}`)
    const seconds = Math.max(1, Math.min(p.seconds ?? 10, (plan.seconds ?? 11) - 1))
    await this.deps.assignments.assign({
      assignment: `${runId}/profile`,
      agent: agent.hb,
      profile: { target: p.target, runId, seconds, event: p.event ?? 'cpu' },
    })
  }
}

/** An attempt with no client: failed before any was picked, or (failCell) never to run. */
export function emptyAttempt(runId: string, state: Attempt['state'], reason: string | undefined): Attempt {
  return {
    runId,
    state,
    clients: [],
    startedAtMs: null,
    endedAtMs: null,
    startSkewMs: null,
    maxClockOffsetMs: null,
    counted: null,
    sent: null,
    ...(reason === undefined ? {} : { reason }),
  }
}

function textProps(p: Plan['properties']): Record<string, string> {
  return Object.fromEntries(Object.entries(p ?? {}).map(([k, v]) => [k, String(v)]))
}

function stringProps(o: Record<string, number>): Record<string, string> {
  return Object.fromEntries(Object.entries(o).map(([k, v]) => [k, String(v)]))
}
