/**
 * The agent on a client machine (`benchstream agent`): registers on the
 * control topic and heartbeats, measures its clock against the broker's with
 * every heartbeat, and runs the work the coordinator addresses to it, if its
 * own configuration allows it: a client of a run (the driver or real YCSB,
 * held at the run's start barrier until `go`), a lifecycle step (a command
 * it allows by name, then a readiness check), or a CPU profile of a process
 * it allows. Every assignment is checked again here, whatever the
 * coordinator checked: the topic is input like any other.
 *
 * The Agent holds the jobs and dispatches what the topic brings; the parts,
 * one concept each: name-claim.ts (joining under a name), heartbeat.ts (the
 * heartbeat and the clock), refusals.ts (what it takes), run-client.ts and
 * run-args.ts (a run's client and its command line), step.ts (lifecycle
 * steps), profile.ts (profiles). No sockets or processes are opened here:
 * main.ts wires the control bus, the process launcher and the probes.
 */
import { randomUUID } from 'node:crypto'
import type {
  Assign,
  AssignmentState,
  AssignmentStatus,
  ClockEstimate,
  ControlMessage,
} from '../../schemas/experiment-control.v1.js'
import type { AgentConfig } from './config.js'
import type { AgentDeps } from './deps.js'
import { Heartbeats } from './heartbeat.js'
import type { Job, JobHost, StatusExtra } from './job.js'
import { NameClaim } from './name-claim.js'
import { runProfile } from './profile.js'
import { refusalOf } from './refusals.js'
import { onCancel, onGo, startRun } from './run-client.js'
import { runStep } from './step.js'

/** Heartbeats sent quickly at start, each a clock sample, before the steady interval. */
const CLOCK_BURST = 8
const CLOCK_BURST_GAP_MS = 50
/** The longest output text sent in a status. */
const MAX_OUTPUT = 8000

export class Agent {
  readonly instance: string
  private readonly jobs = new Map<string, Job>()
  private timer: NodeJS.Timeout | undefined
  private stopped = false
  /** What it refused or ignored from the topic, by reason (stats, tests). */
  readonly refused: Record<string, number> = {}
  private readonly beats: Heartbeats
  private readonly name: NameClaim
  /** What the parts that run a job (run-client.ts, step.ts, profile.ts) use of this agent. */
  private readonly host: JobHost

  constructor(
    private readonly cfg: AgentConfig,
    private readonly deps: AgentDeps,
  ) {
    this.instance = deps.instance ?? randomUUID()
    this.beats = new Heartbeats(cfg, deps, this.instance, () => this.busyWith())
    this.name = new NameClaim(cfg, deps, this.instance, {
      count: (reason) => this.count(reason),
      heartbeat: () => this.beats.beat(),
    })
    this.host = {
      cfg,
      deps,
      jobs: this.jobs,
      clock: () => this.beats.clock,
      stopped: () => this.stopped,
      status: (a, state, extra) => this.status(a, state, extra),
      heartbeat: () => this.beats.beat(),
    }
  }

  get clockEstimate(): ClockEstimate | null {
    return this.beats.clock
  }

  /**
   * Joins the control topic, claims the agent's name (name-claim.ts) and starts heartbeating. Throws
   * BS_ERR_AGENT_NAME_TAKEN, with the control topic closed, when another agent heartbeats under the name or wins
   * it at the same moment.
   */
  async start(): Promise<void> {
    await this.deps.bus.start({
      onMessage: (m) => this.onMessage(m),
      onRejected: (why) => this.deps.log.warn({ why }, 'a message on the control topic was refused'),
    })
    const taken = await this.name.claim()
    if (taken !== undefined) {
      this.name.phase = 'refused'
      this.stopped = true
      await this.deps.bus.close()
      throw taken
    }
    this.name.phase = 'live'
    for (let i = 0; i < CLOCK_BURST && !this.stopped; i++) {
      await this.beats.beat()
      await new Promise((r) => setTimeout(r, CLOCK_BURST_GAP_MS))
    }
    const c = this.beats.clock
    const offset = c === null ? 'unknown' : `${c.offsetMs.toFixed(1)} ms (±${(c.rttMs / 2).toFixed(1)})`
    this.deps.log.info(
      { agent: this.cfg.name, instance: this.instance, clock: c },
      `agent ${this.cfg.name} registered; clock offset from the broker ${offset}`,
    )
    const beat = (): void => {
      this.timer = setTimeout(() => {
        void this.beats.beat().finally(() => {
          if (!this.stopped) beat()
        })
      }, this.cfg.heartbeatMs)
    }
    beat()
  }

  async stop(): Promise<void> {
    this.stopped = true
    if (this.timer !== undefined) clearTimeout(this.timer)
    for (const j of this.jobs.values()) {
      if (j.barrierTimer !== undefined) clearTimeout(j.barrierTimer)
      j.child?.kill('SIGTERM')
    }
    await Promise.allSettled([...this.jobs.values()].flatMap((j) => (j.child === undefined ? [] : [j.child.exited])))
    await this.deps.bus.close()
  }

  private busyWith(): string | undefined {
    for (const [id, j] of this.jobs) if (j.assign.run !== undefined && j.state !== 'refused') return id
    return undefined
  }

  private onMessage(m: ControlMessage): void {
    if (this.stopped) return
    if ((m.type === 'agent.heartbeat' || m.type === 'agent.claim') && m.agent === this.cfg.name) {
      if (m.instance !== this.instance) this.name.onNamesake(m)
      return
    }
    if (this.name.phase !== 'live') return
    switch (m.type) {
      case 'assign':
        if (m.agent === this.cfg.name) void this.onAssign(m)
        return
      case 'go':
        for (const id of m.assignments) onGo(this.host, id, m.startAtMs)
        return
      case 'cancel':
        for (const id of m.assignments) onCancel(this.host, id, m.reason)
        return
      default:
        return
    }
  }

  private count(reason: string): void {
    this.refused[reason] = (this.refused[reason] ?? 0) + 1
  }

  private async status(a: Assign, state: AssignmentState, extra: StatusExtra = {}): Promise<void> {
    const msg: AssignmentStatus = {
      type: 'assignment.status',
      sentAtMs: this.deps.now(),
      experiment: a.experiment,
      assignment: a.assignment,
      agent: this.cfg.name,
      instance: this.instance,
      state,
      clock: this.beats.clock,
      ...extra,
    }
    if (msg.detail !== undefined) msg.detail = msg.detail.slice(0, 4096)
    if (msg.output !== undefined) msg.output = msg.output.slice(-MAX_OUTPUT)
    try {
      await this.deps.bus.publish(msg)
    } catch (err) {
      this.deps.log.warn({ assignment: a.assignment, state, err: (err as Error).message }, 'status not sent')
    }
  }

  private async onAssign(a: Assign): Promise<void> {
    if (this.jobs.has(a.assignment)) return
    if (a.instance !== this.instance) {
      // Work for another live agent under this name is that one's to answer (the coordinator gives such a name
      // none, but may have sent this before it knew).
      if (this.name.isOtherLive(a.instance)) {
        this.count('other_live_instance')
        return
      }
      this.count('other_instance')
      await this.status(a, 'refused', {
        detail: `addressed to agent ${this.cfg.name}'s instance ${a.instance}; it restarted as ${this.instance}`,
      })
      return
    }
    const refusal = refusalOf(
      {
        cfg: this.cfg,
        clock: this.beats.clock,
        busyWith: () => this.busyWith(),
        resolveWorkload: this.deps.resolveWorkload,
      },
      a,
    )
    const job: Job = {
      assign: a,
      child: undefined,
      state: refusal === undefined ? 'accepted' : 'refused',
      stdout: [],
      tail: [],
      barrierTimer: undefined,
      cancelled: false,
    }
    this.jobs.set(a.assignment, job)
    if (refusal !== undefined) {
      this.count('refused')
      this.deps.log.warn({ assignment: a.assignment, refusal }, 'assignment refused')
      await this.status(a, 'refused', { detail: refusal })
      this.jobs.delete(a.assignment)
      return
    }
    await this.status(a, 'accepted')
    // A cancel can come while 'accepted' is being sent (behind a slow or healing link, the assignment and its cancel
    // arrive together): nothing is started then, and the agent is free at once instead of holding a client at the
    // barrier until its timeout.
    if (job.cancelled) {
      this.jobs.delete(a.assignment)
      void this.beats.beat()
      await this.status(a, 'failed', {
        detail: 'called off (cancelled before it started)',
        output: job.tail.join('\n'),
      })
      return
    }
    if (a.run !== undefined) startRun(this.host, job, a.run)
    else if (a.step !== undefined) await runStep(this.host, job, a.step)
    else if (a.profile !== undefined) await runProfile(this.host, job, a.profile)
  }
}

export function build(cfg: AgentConfig, deps: AgentDeps): Agent {
  return new Agent(cfg, deps)
}
