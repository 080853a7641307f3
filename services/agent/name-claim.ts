/**
 * Joining under a name (services/core/experiments/agent-name.ts): the agent claims its name on the control topic
 * and listens for the claim window; a live agent's heartbeat under the name, or a rival's claim that wins, makes
 * it BS_ERR_AGENT_NAME_TAKEN. Once live, a newcomer's claim is answered with a heartbeat, and another instance
 * heard heartbeating under the name is said loudly, once.
 */
import type { AgentClaim, AgentHeartbeat } from '../../schemas/experiment-control.v1.js'
import {
  claimWindowMs,
  describeInstance,
  keepsName,
  nameTakenMessage,
  twoInstancesMessage,
  type AgentInstanceInfo,
} from '../core/experiments/agent-name.js'
import { BenchstreamError } from '../core/errors.js'
import type { AgentConfig } from './config.js'
import type { AgentDeps } from './deps.js'

export class NameClaim {
  /** Claiming its name (start), live (heartbeating), or refused (its name is taken). */
  phase: 'claiming' | 'live' | 'refused' = 'claiming'
  /** Ends the claim early: with the reason when the name is taken. */
  private endClaim: ((taken?: BenchstreamError) => void) | undefined
  /** Rivals claiming the name at the same moment that this one answered with its own claim. */
  private readonly answeredRivals = new Set<string>()
  /** Other instances heard heartbeating under this agent's name (the newest 16). */
  private readonly others = new Map<string, AgentInstanceInfo>()

  constructor(
    private readonly cfg: AgentConfig,
    private readonly deps: AgentDeps,
    private readonly instance: string,
    private readonly x: { count: (reason: string) => void; heartbeat: () => Promise<void> },
  ) {}

  /** Another live instance under this name was heard with this instance id. */
  isOtherLive(instance: string): boolean {
    return this.others.has(instance)
  }

  /** Claims the name and listens for the claim window: undefined when it is this agent's, else why not. */
  async claim(): Promise<BenchstreamError | undefined> {
    const windowMs = claimWindowMs(this.cfg.heartbeatMs)
    const ended = new Promise<BenchstreamError | undefined>((resolve) => {
      const timer = setTimeout(() => resolve(undefined), windowMs)
      this.endClaim = (taken) => {
        clearTimeout(timer)
        resolve(taken)
      }
    })
    await this.publishClaim()
    const taken = await ended
    this.endClaim = undefined
    return taken
  }

  private async publishClaim(): Promise<void> {
    const claim: AgentClaim = {
      type: 'agent.claim',
      sentAtMs: this.deps.now(),
      agent: this.cfg.name,
      instance: this.instance,
      host: this.deps.host.hostname,
      pid: this.deps.host.pid,
      version: this.deps.host.version,
    }
    try {
      await this.deps.bus.publish(claim)
    } catch (err) {
      // Not heard: a live agent of the name still shows itself by its heartbeats within the window.
      this.deps.log.warn({ err: (err as Error).message }, 'the claim of the agent name was not sent')
    }
  }

  /** Another instance under this agent's name: a heartbeat of a live one, or a rival's claim. */
  onNamesake(m: AgentHeartbeat | AgentClaim): void {
    const other = { instance: m.instance, host: m.host, pid: m.pid }
    const topic = this.cfg.infra.topics.control
    if (this.phase === 'claiming') {
      if (m.type === 'agent.heartbeat')
        this.endClaim?.(
          new BenchstreamError('BS_ERR_AGENT_NAME_TAKEN', nameTakenMessage(this.cfg.name, other, 'live', topic)),
        )
      else if (!keepsName(this.instance, m.instance))
        this.endClaim?.(
          new BenchstreamError('BS_ERR_AGENT_NAME_TAKEN', nameTakenMessage(this.cfg.name, other, 'rival', topic)),
        )
      else if (!this.answeredRivals.has(m.instance)) {
        // This one keeps the name: claim again, for a rival that joined the topic after the first claim.
        this.answeredRivals.add(m.instance)
        void this.publishClaim()
      }
      return
    }
    if (this.phase !== 'live') return
    if (m.type === 'agent.claim') {
      this.x.count('name_claimed')
      this.deps.log.warn(
        { other },
        `another agent tried to start as ${this.cfg.name} (${describeInstance(other)}); answered: the name is ` +
          `this one's (${describeInstance(this.self())})`,
      )
      // The answer: a heartbeat now, so that the newcomer hears it within its claim window.
      void this.x.heartbeat()
      return
    }
    const known = this.others.has(m.instance)
    this.others.set(m.instance, other)
    if (this.others.size > 16) this.others.delete(this.others.keys().next().value!)
    if (!known) {
      this.x.count('two_instances')
      this.deps.log.error({ other }, twoInstancesMessage(this.cfg.name, [this.self(), other]))
    }
  }

  private self(): AgentInstanceInfo {
    return { instance: this.instance, host: this.deps.host.hostname, pid: this.deps.host.pid }
  }
}
