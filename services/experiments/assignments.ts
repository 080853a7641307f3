/**
 * Work sent to agents and the wait for what they answer: an assignment (a run's client, a lifecycle step, a
 * profile) published on the control topic, a cancel, and the waits until assignments reach a state – ended early
 * when a client refuses or fails, or its agent restarts, goes silent or has a second instance under its name.
 */
import { setTimeout as sleep } from 'node:timers/promises'
import type { AgentHeartbeat, Assign, AssignmentStatus } from '../../schemas/experiment-control.v1.js'
import type { Attempt } from '../../schemas/experiment-state.v1.js'
import { twoInstancesMessage } from '../core/experiments/agent-name.js'
import { PLAN_DEFAULTS } from '../core/experiments/plan.js'
import type { AgentPool } from './agents.js'
import type { ConductorConfig } from './config.js'
import type { ControlChannel } from './control.js'
import type { ExperimentRecord } from './record.js'

export interface AssignmentsDeps {
  now: () => number
  channel: ControlChannel
  agents: AgentPool
  record: ExperimentRecord
  stopping: () => boolean
}

export class Assignments {
  constructor(
    private readonly deps: AssignmentsDeps,
    private readonly config: Readonly<ConductorConfig>,
  ) {}

  async assign(
    x: { assignment: string; agent: AgentHeartbeat } & Pick<Assign, 'run' | 'step' | 'profile'>,
  ): Promise<void> {
    const state = this.deps.record.state
    const plan = state.plan
    const { assignment, agent, ...work } = x
    await this.deps.channel.publish({
      type: 'assign',
      sentAtMs: this.deps.now(),
      experiment: state.id,
      assignment,
      agent: agent.agent,
      instance: agent.instance,
      ...work,
      clockBoundMs: plan.clockBoundMs ?? PLAN_DEFAULTS.clockBoundMs,
      barrierTimeoutS: Math.ceil(this.config.readyWaitMs / 1000) + 60,
    })
  }

  async cancel(ids: string[], reason: string): Promise<void> {
    await this.deps.channel
      .publish({
        type: 'cancel',
        sentAtMs: this.deps.now(),
        experiment: this.deps.record.state.id,
        assignments: ids,
        reason: reason.slice(0, 1000),
      })
      .catch(() => undefined)
  }

  /** The first status in `states` of one assignment; undefined when its agent restarted, doubled or time is up. */
  async waitFor(
    id: string,
    states: Array<AssignmentStatus['state']>,
    timeoutMs: number,
    agents: AgentHeartbeat[],
  ): Promise<AssignmentStatus | undefined> {
    const deadline = this.deps.now() + timeoutMs
    for (;;) {
      const last = this.deps.channel.lastStatus(id, agents[0]!.instance)
      if (last !== undefined && states.includes(last.state)) return last
      if (agents.some((a) => this.deps.agents.roster.entry(a.agent)?.hb.instance !== a.instance)) return undefined
      if (agents.some((a) => this.deps.agents.conflictOf(a.agent, this.deps.record.state.plan) !== undefined))
        return undefined
      if (this.deps.now() >= deadline || this.deps.stopping()) return undefined
      await sleep(this.config.pollMs)
    }
  }

  /**
   * Waits until every assignment reached one of `states`; undefined then, else why not: a client refused or failed,
   * its agent went silent or restarted, or the time is up. Client outcomes are kept in the attempt.
   */
  async waitAll(
    ids: string[],
    agents: AgentHeartbeat[],
    states: Array<AssignmentStatus['state']>,
    timeoutMs: number,
    attempt: Attempt,
  ): Promise<string | undefined> {
    const { channel, agents: pool } = this.deps
    const deadline = this.deps.now() + timeoutMs
    const plan = this.deps.record.state.plan
    const silentMs = (plan.agentTimeoutS ?? PLAN_DEFAULTS.agentTimeoutS) * 1000
    for (;;) {
      let pending = 0
      for (const [i, id] of ids.entries()) {
        const a = agents[i]!
        const last = channel.lastStatus(id, a.instance)
        const client = attempt.clients[i]!
        if (last !== undefined) {
          client.state = last.state
          if (last.operations !== undefined)
            client.operations = Object.values(last.operations).reduce((x, y) => x + y, 0)
          if (last.detail !== undefined) client.detail = last.detail.slice(0, 4000)
        }
        if (last !== undefined && (last.state === 'refused' || last.state === 'failed'))
          return (
            `client ${a.agent} ${last.state}: ${last.detail ?? ''}` +
            (last.output === undefined ? '' : ` (${tail(last.output)})`)
          )
        if (last !== undefined && states.includes(last.state)) continue
        const two = pool.conflictOf(a.agent, plan)
        if (two !== undefined) {
          client.state = 'lost'
          return `${twoInstancesMessage(a.agent, two)} (clients ended: ${channel.endedCount(ids)} of ${ids.length})`
        }
        const view = pool.roster.entry(a.agent)
        if (view === undefined || view.hb.instance !== a.instance) {
          client.state = 'lost'
          return (
            `agent ${a.agent} restarted during the run: ` +
            `its client is gone ` +
            (`(clients ended: ${channel.endedCount(ids)} of ` + `${ids.length})`)
          )
        }
        if (pool.silentMs(view) > silentMs) {
          client.state = 'lost'
          return (
            `agent ${a.agent} went silent (no heartbeat ` +
            `for ${Math.round(pool.silentMs(view) / 1000)} s): ` +
            `its client is lost (clients ended: ${channel.endedCount(ids)} of ${ids.length})`
          )
        }
        pending++
      }
      if (pending === 0) return undefined
      if (this.deps.now() >= deadline)
        return (
          `${pending} of ${ids.length} clients did not ` +
          `get to ${states.join('/')} ` +
          `within ${Math.round(timeoutMs / 1000)} s`
        )
      if (this.deps.stopping()) return 'the coordinator is stopping'
      await sleep(this.config.pollMs)
    }
  }
}

/** The last lines of a client's output, on one line. */
function tail(text: string): string {
  return text.split('\n').slice(-3).join(' | ').slice(-600)
}
