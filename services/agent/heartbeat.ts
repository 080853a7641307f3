/**
 * The agent's heartbeat: what it offers (drivers, bindings, workload files, commands, profile targets), whether
 * it is busy with a run, its clock; and, with every heartbeat the broker acknowledges, a sample of this machine's
 * clock against the broker's (the estimate is the one with the shortest round trip of the newest CLOCK_WINDOW).
 */
import type { AgentHeartbeat, ClockEstimate } from '../../schemas/experiment-control.v1.js'
import { estimateClock, type ClockSample } from '../core/experiments/clock.js'
import type { AgentConfig } from './config.js'
import type { AgentDeps } from './deps.js'

/** Clock samples kept: the estimate is the one with the shortest round trip among these. */
const CLOCK_WINDOW = 16

export class Heartbeats {
  private readonly samples: ClockSample[] = []
  private estimate: ClockEstimate | null = null

  constructor(
    private readonly cfg: AgentConfig,
    private readonly deps: AgentDeps,
    private readonly instance: string,
    /** The assignment of the run this agent is busy with, if any. */
    private readonly busyWith: () => string | undefined,
  ) {}

  /** This machine's clock against the broker's, once measured. */
  get clock(): ClockEstimate | null {
    return this.estimate
  }

  /** One heartbeat, and the clock sample it gives. */
  async beat(): Promise<void> {
    const hb: AgentHeartbeat = {
      type: 'agent.heartbeat',
      sentAtMs: this.deps.now(),
      agent: this.cfg.name,
      instance: this.instance,
      host: this.deps.host.hostname,
      pid: this.deps.host.pid,
      cores: this.deps.host.cores,
      labels: this.cfg.labels,
      capabilities: {
        // pe needs HBase's bin/hbase among the allowed commands: the plan's binding names it, checked per run.
        drivers: this.cfg.ycsb ? ['benchstream', 'ycsb', 'pe'] : ['benchstream', 'pe'],
        bindings: this.cfg.bindings,
        ycsbBindings: this.cfg.ycsb ? this.cfg.ycsbBindings : [],
        workloads: this.deps.listWorkloads(),
        commands: Object.keys(this.cfg.commands),
        env: this.cfg.env,
        profileTargets: Object.keys(this.cfg.profileTargets),
      },
      clock: this.estimate,
      busyWith: this.busyWith() ?? null,
      version: this.deps.host.version,
    }
    try {
      const sentMs = this.deps.now()
      const { brokerTimeMs } = await this.deps.bus.publish(hb)
      const ackedMs = this.deps.now()
      if (brokerTimeMs !== undefined) {
        this.samples.push({ sentMs, ackedMs, brokerMs: brokerTimeMs })
        if (this.samples.length > CLOCK_WINDOW) this.samples.shift()
        this.estimate = estimateClock(this.samples, ackedMs)
      }
    } catch (err) {
      this.deps.log.warn({ err: (err as Error).message }, 'heartbeat failed; trying again')
    }
  }
}
