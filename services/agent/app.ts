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
 * No sockets or processes are opened here: main.ts wires the control bus,
 * the process launcher and the probes.
 */
import { randomUUID } from 'node:crypto'
import type {
  AgentClaim,
  AgentHeartbeat,
  Assign,
  AssignmentState,
  AssignmentStatus,
  ClockEstimate,
  ControlMessage,
  RunSpec,
} from '../../schemas/experiment-control.v1.js'
import type { Step } from '../../schemas/experiment-plan.v1.js'
import type { Logger } from '../common/logger.js'
import {
  claimWindowMs,
  describeInstance,
  keepsName,
  nameTakenMessage,
  twoInstancesMessage,
  type AgentInstanceInfo,
} from '../core/experiments/agent-name.js'
import { clockRefusal, clockWithin, estimateClock, type ClockSample } from '../core/experiments/clock.js'
import { BenchstreamError } from '../core/errors.js'
import type { ControlBus } from '../core/ports/control-bus.js'
import type { Launched, ProcessLauncher, ReadinessProbes } from '../core/ports/process-launcher.js'
import { PE_COMMANDS } from '../core/pe/pe-tests.js'
import type { AgentConfig } from './config.js'

/** Heartbeats sent quickly at start, each a clock sample, before the steady interval. */
const CLOCK_BURST = 8
const CLOCK_BURST_GAP_MS = 50
/** Clock samples kept: the estimate is the one with the shortest round trip among these. */
const CLOCK_WINDOW = 16
/** Lines of a child's output kept for its status (the tail), and the longest text sent. */
const TAIL_LINES = 40
const MAX_OUTPUT = 8000
/** Default seconds a step's command may take, and its readiness check. */
const STEP_TIMEOUT_S = 600
const READY_TIMEOUT_S = 120
const READY_POLL_MS = 500
/** YCSB-style report lines the driver prints: `[READ], Operations, 1234`. */
const OPERATIONS_LINE = /^\[([A-Z][A-Z0-9_-]*)\], Operations, (\d+)$/
/** Property names a plan may not set on this machine: they name files or folders the client would write or read. */
const FILE_PROPERTY = /file|path|dir|export/i
/**
 * operationcount of a YCSB run bounded by its length alone: YCSB 0.17.0 makes no more client threads than
 * operations, so its 0 ("no limit" to the Benchstream driver) would start none.
 */
const YCSB_NO_LIMIT = 2_000_000_000
/** The driver's line when it is ready at the barrier (services/driver/config.ts BARRIER_READY_LINE). */
export const READY_LINE = 'benchstream-barrier: ready'

export interface AgentDeps {
  bus: ControlBus
  launcher: ProcessLauncher
  probes: ReadinessProbes
  /** This machine's clock, ms since the epoch (with the configured skew). */
  now: () => number
  log: Logger
  /** This machine as its heartbeats name it: two agents under one name are told apart by it. */
  host: { hostname: string; pid: number; cores: number; version: string }
  /** This process's instance id (default: a random UUID; tests name it, claims compare them). */
  instance?: string
  /** How to run `benchstream` here: the command and the arguments before the subcommand. */
  benchstream: { command: string; args: readonly string[] }
  /** The environment children start from. */
  env: Readonly<Record<string, string>>
  listWorkloads: () => string[]
  /** A plan's workload file on this machine, or undefined. */
  resolveWorkload: (name: string) => string | undefined
  readFile: (path: string) => string
}

interface Job {
  assign: Assign
  child: Launched | undefined
  state: AssignmentState
  stdout: string[]
  tail: string[]
  barrierTimer: NodeJS.Timeout | undefined
  cancelled: boolean
}

export class Agent {
  readonly instance: string
  private readonly samples: ClockSample[] = []
  private clock: ClockEstimate | null = null
  private readonly jobs = new Map<string, Job>()
  private timer: NodeJS.Timeout | undefined
  private stopped = false
  /** Claiming its name (start), live (heartbeating), or refused (its name is taken). */
  private phase: 'claiming' | 'live' | 'refused' = 'claiming'
  /** Ends the claim early: with the reason when the name is taken. */
  private endClaim: ((taken?: BenchstreamError) => void) | undefined
  /** Rivals claiming the name at the same moment that this one answered with its own claim. */
  private readonly answeredRivals = new Set<string>()
  /** Other instances heard heartbeating under this agent's name (the newest 16). */
  private readonly others = new Map<string, AgentInstanceInfo>()
  /** What it refused or ignored from the topic, by reason (stats, tests). */
  readonly refused: Record<string, number> = {}

  constructor(
    private readonly cfg: AgentConfig,
    private readonly deps: AgentDeps,
  ) {
    this.instance = deps.instance ?? randomUUID()
  }

  get clockEstimate(): ClockEstimate | null {
    return this.clock
  }

  /**
   * Joins the control topic, claims the agent's name (agent-name.ts) and starts heartbeating. Throws
   * BS_ERR_AGENT_NAME_TAKEN, with the control topic closed, when another agent heartbeats under the name or wins
   * it at the same moment.
   */
  async start(): Promise<void> {
    await this.deps.bus.start({
      onMessage: (m) => this.onMessage(m),
      onRejected: (why) => this.deps.log.warn({ why }, 'a message on the control topic was refused'),
    })
    const taken = await this.claim()
    if (taken !== undefined) {
      this.phase = 'refused'
      this.stopped = true
      await this.deps.bus.close()
      throw taken
    }
    this.phase = 'live'
    for (let i = 0; i < CLOCK_BURST && !this.stopped; i++) {
      await this.heartbeat()
      await new Promise((r) => setTimeout(r, CLOCK_BURST_GAP_MS))
    }
    const c = this.clock
    const offset = c === null ? 'unknown' : `${c.offsetMs.toFixed(1)} ms (±${(c.rttMs / 2).toFixed(1)})`
    this.deps.log.info(
      { agent: this.cfg.name, instance: this.instance, clock: c },
      `agent ${this.cfg.name} registered; clock offset from the broker ${offset}`,
    )
    const beat = (): void => {
      this.timer = setTimeout(() => {
        void this.heartbeat().finally(() => {
          if (!this.stopped) beat()
        })
      }, this.cfg.heartbeatMs)
    }
    beat()
  }

  /** Claims the name and listens for the claim window: undefined when it is this agent's, else why not. */
  private async claim(): Promise<BenchstreamError | undefined> {
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
  private onNamesake(m: AgentHeartbeat | AgentClaim): void {
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
      this.count('name_claimed')
      this.deps.log.warn(
        { other },
        `another agent tried to start as ${this.cfg.name} (${describeInstance(other)}); answered: the name is ` +
          `this one's (${describeInstance(this.self())})`,
      )
      // The answer: a heartbeat now, so that the newcomer hears it within its claim window.
      void this.heartbeat()
      return
    }
    const known = this.others.has(m.instance)
    this.others.set(m.instance, other)
    if (this.others.size > 16) this.others.delete(this.others.keys().next().value!)
    if (!known) {
      this.count('two_instances')
      this.deps.log.error({ other }, twoInstancesMessage(this.cfg.name, [this.self(), other]))
    }
  }

  private self(): AgentInstanceInfo {
    return { instance: this.instance, host: this.deps.host.hostname, pid: this.deps.host.pid }
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

  /** One heartbeat, and the clock sample it gives. */
  private async heartbeat(): Promise<void> {
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
      clock: this.clock,
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
        this.clock = estimateClock(this.samples, ackedMs)
      }
    } catch (err) {
      this.deps.log.warn({ err: (err as Error).message }, 'heartbeat failed; trying again')
    }
  }

  private busyWith(): string | undefined {
    for (const [id, j] of this.jobs) if (j.assign.run !== undefined && j.state !== 'refused') return id
    return undefined
  }

  private onMessage(m: ControlMessage): void {
    if (this.stopped) return
    if ((m.type === 'agent.heartbeat' || m.type === 'agent.claim') && m.agent === this.cfg.name) {
      if (m.instance !== this.instance) this.onNamesake(m)
      return
    }
    if (this.phase !== 'live') return
    switch (m.type) {
      case 'assign':
        if (m.agent === this.cfg.name) void this.onAssign(m)
        return
      case 'go':
        for (const id of m.assignments) this.onGo(id, m.startAtMs)
        return
      case 'cancel':
        for (const id of m.assignments) this.onCancel(id, m.reason)
        return
      default:
        return
    }
  }

  private count(reason: string): void {
    this.refused[reason] = (this.refused[reason] ?? 0) + 1
  }

  private async status(
    a: Assign,
    state: AssignmentState,
    extra: Partial<Pick<AssignmentStatus, 'detail' | 'operations' | 'exitCode' | 'output'>> = {},
  ): Promise<void> {
    const msg: AssignmentStatus = {
      type: 'assignment.status',
      sentAtMs: this.deps.now(),
      experiment: a.experiment,
      assignment: a.assignment,
      agent: this.cfg.name,
      instance: this.instance,
      state,
      clock: this.clock,
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
      if (this.others.has(a.instance)) {
        this.count('other_live_instance')
        return
      }
      this.count('other_instance')
      await this.status(a, 'refused', {
        detail: `addressed to agent ${this.cfg.name}'s instance ${a.instance}; it restarted as ${this.instance}`,
      })
      return
    }
    const refusal = this.refusal(a)
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
      void this.heartbeat()
      await this.status(a, 'failed', {
        detail: 'called off (cancelled before it started)',
        output: job.tail.join('\n'),
      })
      return
    }
    if (a.run !== undefined) this.startRun(job, a.run)
    else if (a.step !== undefined) await this.runStep(job, a.step)
    else if (a.profile !== undefined) await this.runProfile(job, a.profile)
  }

  /** Why this agent will not do it, or undefined. */
  private refusal(a: Assign): string | undefined {
    const kinds = [a.run, a.step, a.profile].filter((x) => x !== undefined).length
    if (kinds !== 1) return 'an assignment is exactly one of run, step or profile'
    if (a.run !== undefined) {
      if (this.clock === null) return `agent ${this.cfg.name} has not measured its clock yet`
      if (!clockWithin(this.clock, a.clockBoundMs)) return clockRefusal(this.cfg.name, this.clock, a.clockBoundMs)
      const busy = this.busyWith()
      if (busy !== undefined) return `agent ${this.cfg.name} is busy with ${busy}`
      return this.runRefusal(a.run)
    }
    if (a.step !== undefined) {
      const s = a.step
      if (!Object.hasOwn(this.cfg.commands, s.command))
        return (
          `agent ${this.cfg.name} does not allow the command ${JSON.stringify(s.command)}; it allows ` +
          `${Object.keys(this.cfg.commands).join(', ') || 'none'} (--allow-command NAME=PATH)`
        )
      for (const e of Object.keys(s.env ?? {}))
        if (!this.cfg.env.includes(e))
          return (
            `agent ${this.cfg.name} does not let steps set ${e}; it allows ` +
            `${this.cfg.env.join(', ') || 'none'} (--allow-env)`
          )
      if (s.ready?.command !== undefined && !Object.hasOwn(this.cfg.commands, s.ready.command))
        return `agent ${this.cfg.name} does not allow the readiness command ${JSON.stringify(s.ready.command)}`
      return undefined
    }
    const p = a.profile!
    if (!Object.hasOwn(this.cfg.profileTargets, p.target))
      return `agent ${this.cfg.name} has no profile target ${JSON.stringify(p.target)} (--profile-target NAME=PIDFILE)`
    if (!['cpu', 'wall', 'itimer'].includes(p.event))
      return `profile event ${JSON.stringify(p.event)}: cpu, wall or itimer`
    return undefined
  }

  private runRefusal(r: RunSpec): string | undefined {
    if (r.driver === 'pe') return this.peRefusal(r)
    if (r.driver === 'ycsb') {
      if (!this.cfg.ycsb) return `agent ${this.cfg.name} does not run YCSB (start it with --ycsb or --ycsb-home)`
      if (!this.cfg.ycsbBindings.includes(r.binding))
        return `agent ${this.cfg.name} does not run YCSB's ${r.binding}; it runs ${this.cfg.ycsbBindings.join(', ')}`
    } else if (!this.cfg.bindings.includes(r.binding))
      return `agent ${this.cfg.name} does not run the binding ${r.binding}; it runs ${this.cfg.bindings.join(', ')}`
    if (this.deps.resolveWorkload(r.workload) === undefined)
      return `agent ${this.cfg.name} has no workload file ${JSON.stringify(r.workload)} in its --workloads folders`
    for (const k of Object.keys(r.properties))
      if (FILE_PROPERTY.test(k))
        return `property ${k} names a file or folder on this machine; plans may not set such properties`
    if ((r.serverMetrics?.length ?? 0) > 0 && !this.cfg.allowServerMetrics)
      return `agent ${this.cfg.name} does not sample datastore metrics URLs (--allow-server-metrics)`
    return undefined
  }

  /** Why this agent will not run a client of a PE run (driver pe), or undefined. */
  private peRefusal(r: RunSpec): string | undefined {
    if (!Object.hasOwn(this.cfg.commands, r.binding))
      return (
        `agent ${this.cfg.name} does not allow the command ${JSON.stringify(r.binding)} that driver pe runs as ` +
        `${r.binding} pe ...; it allows ${Object.keys(this.cfg.commands).join(', ') || 'none'} (--allow-command ` +
        `${r.binding}=PATH of HBase's bin/hbase or deploy/local/hbase-pe.sh)`
      )
    if (r.phase !== 'run') return 'driver pe has no load phase: a setup loads with a load step'
    if (!PE_COMMANDS.includes(r.workload))
      return `${JSON.stringify(r.workload)} is not one of PE's tests (${PE_COMMANDS.join(', ')})`
    if (r.operations === undefined || r.operations % r.threads !== 0 || r.operations < r.threads)
      return `driver pe needs operations (rows) that split evenly over the ${r.threads} PE clients, got ${r.operations}`
    for (const [k, v] of Object.entries(r.properties)) {
      if (FILE_PROPERTY.test(k))
        return `property ${k} names a file or folder on this machine; plans may not set such properties`
      // Each is one argument of PE's (no shell), but one that PE would read as another option is refused.
      if (!/^[A-Za-z][A-Za-z0-9_.-]*$/.test(k) || /^-|\s/.test(v))
        return `property ${k}=${JSON.stringify(v.slice(0, 40))}: PE options are name=value without spaces`
    }
    if ((r.serverMetrics?.length ?? 0) > 0 && !this.cfg.allowServerMetrics)
      return `agent ${this.cfg.name} does not sample datastore metrics URLs (--allow-server-metrics)`
    return undefined
  }

  /**
   * PE's arguments of a run: a property with a dot in its name is HBase configuration (`-Dhbase.zookeeper.quorum=h`,
   * which the setup's properties give), any other one of PE's options (`--valueSize=100`); each PE client gets the
   * same share of the rows.
   */
  private peArgs(r: RunSpec): string[] {
    const props = Object.entries(r.properties)
    return [
      ...props.filter(([k]) => k.includes('.')).map(([k, v]) => `-D${k}=${v}`),
      '--nomapred',
      ...props.filter(([k]) => !k.includes('.')).map(([k, v]) => `--${k}=${v}`),
      `--rows=${r.operations! / r.threads}`,
      r.workload,
      String(r.threads),
    ]
  }

  /** The command line of a client of a run: Benchstream's driver, or real YCSB through `benchstream ycsb`. */
  private runArgs(r: RunSpec): string[] {
    // A PE test is no workload file: `file` is unused for driver pe.
    const file = this.deps.resolveWorkload(r.workload) ?? r.workload
    const own = [
      '--run-id',
      r.runId,
      '--client-id',
      r.clientId,
      ...Object.entries(r.labels).flatMap(([k, v]) => ['--label', `${k}=${v}`]),
      ...(r.group === undefined ? [] : ['--group', r.group]),
      ...(r.repetition === undefined ? [] : ['--repetition', String(r.repetition)]),
      '--barrier',
      'stdin',
      '--expected-clients',
      String(r.expectedClients),
      // This machine's clock minus the broker's.
      ...(this.clock === null ? [] : ['--clock-offset-ms', (-this.clock.offsetMs).toFixed(3)]),
    ]
    const ycsb = [
      '-P',
      file,
      '-db',
      r.binding,
      '-threads',
      String(r.threads),
      ...(r.target > 0 ? ['-target', String(Math.round(r.target))] : []),
      ...Object.entries(r.properties).flatMap(([k, v]) => ['-p', `${k}=${v}`]),
    ]
    const limit =
      r.operations !== undefined
        ? ['-p', `operationcount=${r.operations}`]
        : r.seconds !== undefined
          ? ['-p', `maxexecutiontime=${r.seconds}`, '-p', `operationcount=${r.driver === 'ycsb' ? YCSB_NO_LIMIT : 0}`]
          : []
    if (r.driver === 'pe')
      return [
        'pe',
        '--command',
        this.cfg.commands[r.binding]!,
        ...own,
        ...(r.serverMetrics ?? []).flatMap((s) => ['--server-metrics', s]),
        '--',
        ...this.peArgs(r),
      ]
    if (r.driver === 'benchstream') return [r.phase, ...ycsb, ...(r.phase === 'run' ? limit : []), ...own]
    return [
      'ycsb',
      ...(this.cfg.ycsbHome === undefined ? [] : ['--ycsb-home', this.cfg.ycsbHome]),
      ...own,
      ...(r.serverMetrics ?? []).flatMap((s) => ['--server-metrics', s]),
      '--',
      r.phase,
      ...ycsb,
      ...(r.phase === 'run' ? limit : []),
    ]
  }

  private startRun(job: Job, r: RunSpec): void {
    const a = job.assign
    const child = this.deps.launcher.launch({
      command: this.deps.benchstream.command,
      args: [...this.deps.benchstream.args, ...this.runArgs(r)],
      env: { ...this.deps.env },
    })
    job.child = child
    child.onLine((stream, line) => {
      if (stream === 'stdout') {
        job.stdout.push(line)
        if (job.stdout.length > 2000) job.stdout.shift()
      } else {
        job.tail.push(line)
        if (job.tail.length > TAIL_LINES) job.tail.shift()
      }
      if (stream === 'stderr' && line === READY_LINE && job.state === 'accepted' && !job.cancelled) {
        job.state = 'ready'
        job.barrierTimer = setTimeout(() => {
          if (job.state !== 'ready') return
          job.cancelled = true
          child.write('abort\n')
          job.tail.push(`benchstream agent: no go within ${a.barrierTimeoutS} s of being ready: called off`)
        }, a.barrierTimeoutS * 1000)
        void this.status(a, 'ready')
      }
    })
    void child.exited.then(async (exit) => {
      if (job.barrierTimer !== undefined) clearTimeout(job.barrierTimer)
      const operations: Record<string, number> = {}
      for (const l of job.stdout) {
        const m = OPERATIONS_LINE.exec(l)
        // The first report only: benchstream ycsb prints YCSB's (this client's), then Benchstream's of the whole run.
        if (m !== null && m[1] !== 'OVERALL' && !m[1]!.startsWith('Intended-') && !Object.hasOwn(operations, m[1]!))
          operations[m[1]!] = Number(m[2])
      }
      const ok = exit.code === 0 && !job.cancelled
      const output = job.tail.join('\n')
      job.state = ok ? 'ended' : 'failed'
      this.jobs.delete(a.assignment)
      // Free again: say so at once rather than at the next heartbeat (the coordinator waits for free agents).
      void this.heartbeat()
      await this.status(a, job.state, {
        operations,
        exitCode: exit.code,
        output,
        ...(ok
          ? {}
          : {
              detail: job.cancelled
                ? 'called off (cancelled, or no go in time)'
                : `the client exited with ${exit.code === null ? `signal ${exit.signal}` : `code ${exit.code}`}`,
            }),
      })
    })
  }

  private onGo(id: string, startAtMs: number): void {
    const job = this.jobs.get(id)
    // A go after a cancel must not start a client that was told to abort.
    if (job === undefined || job.child === undefined || job.state !== 'ready' || job.cancelled) return
    if (job.barrierTimer !== undefined) clearTimeout(job.barrierTimer)
    job.state = 'started'
    // startAtMs is on the broker's clock; the child's clock is the machine's (without the skew tests add).
    const offset = this.clock?.offsetMs ?? 0
    const local = Math.round(startAtMs - offset - this.cfg.clockSkewMs)
    job.child.write(`start ${local}\n`)
    void this.status(job.assign, 'started')
  }

  private onCancel(id: string, reason: string): void {
    const job = this.jobs.get(id)
    if (job === undefined || job.cancelled) return
    if (job.barrierTimer !== undefined) clearTimeout(job.barrierTimer)
    job.cancelled = true
    job.tail.push(`benchstream agent: cancelled: ${reason}`)
    // Not launched yet: onAssign sees the flag and starts nothing.
    if (job.child === undefined) return
    if (job.state === 'ready' || job.state === 'accepted') job.child.write('abort\n')
    else job.child.kill('SIGTERM')
  }

  private async runStep(job: Job, s: Step): Promise<void> {
    const a = job.assign
    const path = this.cfg.commands[s.command]!
    const child = this.deps.launcher.launch({
      command: path,
      args: s.args ?? [],
      env: { ...this.deps.env, ...s.env },
    })
    job.child = child
    child.onLine((_stream, line) => {
      job.tail.push(line)
      if (job.tail.length > TAIL_LINES) job.tail.shift()
    })
    const timeoutS = s.timeoutS ?? STEP_TIMEOUT_S
    const timer = setTimeout(() => {
      job.tail.push(`benchstream agent: ${s.command} took longer than ${timeoutS} s: killed`)
      child.kill('SIGKILL')
    }, timeoutS * 1000)
    const exit = await child.exited
    clearTimeout(timer)
    let failure: string | undefined =
      exit.code === 0
        ? undefined
        : `${s.command} exited with ${exit.code === null ? `signal ${exit.signal}` : `code ${exit.code}`}`
    if (failure === undefined && s.ready !== undefined) failure = await this.waitReady(s, job)
    this.jobs.delete(a.assignment)
    await this.status(a, failure === undefined ? 'ended' : 'failed', {
      exitCode: exit.code,
      output: job.tail.join('\n'),
      ...(failure === undefined ? {} : { detail: failure }),
    })
  }

  /** undefined once ready; why not, after the readiness check's time is up. */
  private async waitReady(s: Step, job: Job): Promise<string | undefined> {
    const r = s.ready!
    const deadline = this.deps.now() + (r.timeoutS ?? READY_TIMEOUT_S) * 1000
    for (;;) {
      let ok = true
      if (r.tcp !== undefined) ok &&= await this.deps.probes.tcp(r.tcp, 2000)
      if (ok && r.http !== undefined) ok &&= await this.deps.probes.http(r.http, 2000)
      if (ok && r.command !== undefined) {
        const c = this.deps.launcher.launch({
          command: this.cfg.commands[r.command]!,
          args: [],
          env: { ...this.deps.env },
        })
        c.onLine((_s, line) => {
          job.tail.push(line)
          if (job.tail.length > TAIL_LINES) job.tail.shift()
        })
        ok = (await c.exited).code === 0
      }
      if (ok) return undefined
      if (this.deps.now() >= deadline || this.stopped) {
        const what = [r.tcp && `tcp ${r.tcp}`, r.http && `http ${r.http}`, r.command && `command ${r.command}`]
        return `not ready after ${r.timeoutS ?? READY_TIMEOUT_S} s (${what.filter(Boolean).join(', ')})`
      }
      await new Promise((res) => setTimeout(res, READY_POLL_MS))
    }
  }

  private async runProfile(job: Job, p: NonNullable<Assign['profile']>): Promise<void> {
    const a = job.assign
    let pid: string
    try {
      pid = this.deps.readFile(this.cfg.profileTargets[p.target]!).trim()
      if (!/^\d{1,10}$/.test(pid)) throw new Error(`the pid file holds ${JSON.stringify(pid.slice(0, 40))}`)
    } catch (err) {
      this.jobs.delete(a.assignment)
      await this.status(a, 'failed', { detail: `profile target ${p.target}: ${(err as Error).message}` })
      return
    }
    const child = this.deps.launcher.launch({
      command: this.deps.benchstream.command,
      args: [
        ...this.deps.benchstream.args,
        'profile',
        'capture',
        '--pid',
        pid,
        '--run-id',
        p.runId,
        '--seconds',
        String(p.seconds),
        '--event',
        p.event,
        '--label',
        `target=${p.target}`,
      ],
      env: { ...this.deps.env },
    })
    job.child = child
    child.onLine((_s, line) => {
      job.tail.push(line)
      if (job.tail.length > TAIL_LINES) job.tail.shift()
    })
    const exit = await child.exited
    this.jobs.delete(a.assignment)
    await this.status(a, exit.code === 0 ? 'ended' : 'failed', {
      exitCode: exit.code,
      output: job.tail.join('\n'),
      ...(exit.code === 0 ? {} : { detail: `profile capture exited with code ${exit.code}` }),
    })
  }
}

export function build(cfg: AgentConfig, deps: AgentDeps): Agent {
  return new Agent(cfg, deps)
}
