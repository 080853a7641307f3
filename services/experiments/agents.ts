/**
 * The agents as the coordinator hears them: who is alive (by heartbeat, in the control topic's time), a name
 * with two live instances (never given work), which agents can take a run, and the wait at the start until the
 * plan can run at all (readiness). What an agent can do is agent-fit.ts's question.
 */
import type { AgentHeartbeat } from '../../schemas/experiment-control.v1.js'
import type { Plan } from '../../schemas/experiment-plan.v1.js'
import { BenchstreamError } from '../core/errors.js'
import { describeInstance, twoInstancesMessage } from '../core/experiments/agent-name.js'
import { PLAN_DEFAULTS } from '../core/experiments/plan.js'
import { AgentRoster, type RosterEntry } from '../core/experiments/roster.js'
import { closest } from '../core/suggest.js'
import { clientCount, hasWorkload, lacks, namedNeeds } from './agent-fit.js'
import type { ConductorConfig } from './config.js'
import { setTimeout as sleep } from 'node:timers/promises'

export interface AgentPoolDeps {
  now: () => number
  /** The control topic's time as heard (control.ts topicMs). */
  topicMs: () => number
  note: (text: string, level?: 'warn' | 'error') => void
  stopping: () => boolean
}

export class AgentPool {
  /** The agents by name, from their heartbeats: the instance work goes to, two instances under one name. */
  readonly roster = new AgentRoster()
  /** Names noted as having two live instances, until one is left. */
  private readonly conflicts = new Set<string>()

  constructor(
    private readonly deps: AgentPoolDeps,
    private readonly config: Readonly<ConductorConfig>,
  ) {}

  /** An agent's heartbeat, heard at `topicMs`: a restart or a second instance under its name is noted. */
  heartbeat(m: AgentHeartbeat, topicMs: number): void {
    const change = this.roster.heartbeat(m, topicMs)
    if (change?.kind === 'restarted')
      this.deps.note(
        `agent ${m.agent} restarted (a new instance: ${describeInstance(m)}): whatever its predecessor ` +
          `(${describeInstance(change.previous)}) was running is lost`,
      )
    else if (change?.kind === 'conflict') {
      this.conflicts.add(m.agent)
      this.deps.note(twoInstancesMessage(m.agent, change.instances), 'error')
    }
  }

  /**
   * How long an agent has not been heard from, in the topic's time: from its last heartbeat to the latest message
   * this coordinator heard from anyone. Measured on the coordinator's own clock, a coordinator whose link was cut
   * took every agent for silent (and ran a run that had completed again); a stall of the whole topic made every
   * agent silent once it ended, when the coordinator's next heartbeat came before theirs. Measured so, silence is
   * what the topic shows: others going on without the agent.
   */
  silentMs(a: RosterEntry): number {
    return this.deps.topicMs() - a.seenAtMs
  }

  /** The agents heard within the agent timeout, by name; never a name with two live instances. */
  alive(plan: Plan): RosterEntry[] {
    const timeoutMs = (plan.agentTimeoutS ?? PLAN_DEFAULTS.agentTimeoutS) * 1000
    const now = this.deps.topicMs()
    return this.roster.names().flatMap((name) => {
      if (this.conflictOf(name, plan) !== undefined) return []
      const e = this.roster.entry(name)!
      return now - e.seenAtMs <= timeoutMs ? [e] : []
    })
  }

  /** The live instances of a name that has more than one (noted once when it goes back to one), else undefined. */
  conflictOf(name: string, plan: Plan): AgentHeartbeat[] | undefined {
    const timeoutMs = (plan.agentTimeoutS ?? PLAN_DEFAULTS.agentTimeoutS) * 1000
    const live = this.roster.conflict(name, this.deps.topicMs(), timeoutMs)
    if (live === undefined && this.conflicts.delete(name)) {
      const left = this.roster.entry(name)
      this.deps.note(
        `agent ${name} has one live instance again ` +
          `(${left === undefined ? 'none heard' : describeInstance(left.hb)}): ` +
          'work goes to it again',
      )
    }
    return live
  }

  /** Why a named agent is not among the live ones: two instances under its name, or no heartbeat. */
  absent(name: string, plan: Plan): string {
    const two = this.conflictOf(name, plan)
    return two === undefined ? `agent ${name} is not heartbeating` : twoInstancesMessage(name, two)
  }

  /** The agents for one run: the named ones, or the first capable ones that are free. */
  pickClients(plan: Plan): AgentHeartbeat[] | string {
    const alive = this.alive(plan)
    const n = clientCount(plan)
    if (Array.isArray(plan.clients)) {
      const out: AgentHeartbeat[] = []
      for (const name of plan.clients) {
        const a = alive.find((x) => x.hb.agent === name)
        if (a === undefined) return this.absent(name, plan)
        const why = lacks(plan, a.hb)
        if (why !== undefined) return `agent ${name}: ${why}`
        // Waited for like a missing one: assigned now, it would refuse, and the attempt would be spent. Seen after a
        // partition: the agent was back, its client of the run just given up still flushing.
        if (a.hb.busyWith !== null) return `agent ${name} is busy with ${a.hb.busyWith}`
        out.push(a.hb)
      }
      return out
    }
    const capable = alive.filter((a) => lacks(plan, a.hb) === undefined && a.hb.busyWith === null)
    if (capable.length >= n) return capable.slice(0, n).map((a) => a.hb)
    const others = alive
      .map((a) => [
        a.hb.agent,
        lacks(plan, a.hb) ?? (a.hb.busyWith === null ? undefined : `busy with ${a.hb.busyWith}`),
      ])
      .filter(([, why]) => why !== undefined)
      .map(([name, why]) => `${name}: ${why}`)
    for (const name of this.roster.names()) {
      const two = this.conflictOf(name, plan)
      if (two !== undefined) others.push(twoInstancesMessage(name, two))
    }
    return (
      `${capable.length} of the ${n} agents a run ` +
      `needs are free and ` +
      `able${others.length === 0 ? '' : ` (${others.join('; ')})`}`
    )
  }

  /** pickClients, waited for up to the plan's agentWaitS (or until the coordinator stops). */
  async pickClientsWaiting(plan: Plan): Promise<AgentHeartbeat[] | string> {
    const deadline = this.deps.now() + (plan.agentWaitS ?? PLAN_DEFAULTS.agentWaitS) * 1000
    for (;;) {
      const p = this.pickClients(plan)
      if (typeof p !== 'string' || this.deps.now() >= deadline || this.deps.stopping()) return p
      await sleep(this.config.pollMs)
    }
  }

  /**
   * Waits (agentWaitS) until the plan can start: enough capable agents for a run, the agents of its steps and
   * profile present and allowing them, every workload file on some agent. Anything missing after the wait is
   * BS_ERR_AGENT (or BS_ERR_PLAN for a workload no agent has), naming what and the fix; nothing has run then.
   */
  async waitForAgents(plan: Plan): Promise<void> {
    const deadline = this.deps.now() + (plan.agentWaitS ?? PLAN_DEFAULTS.agentWaitS) * 1000
    let why: string | undefined
    for (;;) {
      why = this.readiness(plan)
      if (why === undefined) return
      if (this.deps.now() >= deadline) break
      await sleep(this.config.pollMs)
    }
    const seen = this.alive(plan).map((a) => a.hb.agent)
    const missingWorkload = plan.workloads.find(
      (w) =>
        plan.driver !== 'pe' &&
        seen.length > 0 &&
        this.alive(plan).every((a) => !hasWorkload(a.hb.capabilities.workloads, w.file)),
    )
    if (missingWorkload !== undefined) {
      const files = [...new Set(this.alive(plan).flatMap((a) => a.hb.capabilities.workloads))]
      const c = closest(missingWorkload.file, files) ?? closest(missingWorkload.file.split('/').pop()!, files)
      throw new BenchstreamError(
        'BS_ERR_PLAN',
        `workloads: no agent has the workload file ${JSON.stringify(missingWorkload.file)}` +
          `${c === undefined ? '' : `; did you mean ${c}?`}; the agents have ${files.slice(0, 20).join(', ')}`,
      )
    }
    throw new BenchstreamError(
      'BS_ERR_AGENT',
      `the plan cannot start after waiting ${plan.agentWaitS ?? PLAN_DEFAULTS.agentWaitS} s: ${why}. Agents seen: ` +
        `${seen.length === 0 ? 'none' : seen.join(', ')}. Start \`benchstream agent --name NAME\` on each client ` +
        `machine with the same KAFKA_BROKERS and BENCHSTREAM_TOPIC_CONTROL`,
    )
  }

  /** Why the plan cannot start now, or undefined: clients for a run, and every named agent able to do its part. */
  private readiness(plan: Plan): string | undefined {
    const picked = this.pickClients(plan)
    if (typeof picked === 'string') return picked
    const alive = this.alive(plan)
    for (const n of namedNeeds(plan)) {
      const a = alive.find((x) => x.hb.agent === n.agent)
      if (a === undefined) return `${this.absent(n.agent, plan)} (for ${n.what})`
      const why = n.check(a.hb)
      if (why !== undefined) return `agent ${n.agent} cannot run ${n.what}: ${why}`
    }
    return undefined
  }
}
