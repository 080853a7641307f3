/**
 * The coordinator of an experiment (`benchstream experiment run|resume`):
 * waits for the agents the plan needs and checks that they can run it,
 * then works through the matrix (services/core/experiments/matrix.ts): the
 * setups' lifecycle steps, the load phases, and every run with its clients
 * on as many agents, held at one start barrier. A run whose client fails or
 * whose agent goes silent is incomplete: never compared, run again under a
 * new id while the plan's retries last. The state goes to the store after
 * every change, so a coordinator that dies can be resumed from it. At the
 * end, the comparisons the plan names, over complete runs only.
 *
 * No sockets are opened here: services/cli/experiment.ts wires the control
 * topic, the store and the run reader.
 */
import { randomUUID } from 'node:crypto'
import type { ReleaseComparison } from '../../schemas/compare-api.v1.js'
import type { ReportedRunReport, RunReport } from '../../schemas/run-reports-api.v1.js'
import type {
  AgentHeartbeat,
  Assign,
  AssignmentStatus,
  ControlMessage,
  RunSpec,
} from '../../schemas/experiment-control.v1.js'
import type { Plan, Setup, Step, StepPhase } from '../../schemas/experiment-plan.v1.js'
import type { Attempt, Cell, ComparisonRecord, ExperimentState } from '../../schemas/experiment-state.v1.js'
import type { Logger } from '../common/logger.js'
import { decideComparison, figureChange, untestedByConcern } from '../core/compare/decision.js'
import { formatComparison } from '../core/compare/release-format.js'
import { BenchstreamError } from '../core/errors.js'
import { describeInstance, twoInstancesMessage } from '../core/experiments/agent-name.js'
import { clockRefusal, clockWithin, estimateClock, type ClockSample } from '../core/experiments/clock.js'
import { decideExperiment } from '../core/experiments/decision.js'
import { keyRange, runIdOf, share } from '../core/experiments/matrix.js'
import { comparePairs, loadMode, PLAN_DEFAULTS, repetitionsText, workloadName } from '../core/experiments/plan.js'
import { AgentRoster, type RosterEntry } from '../core/experiments/roster.js'
import {
  cellStatus,
  comparedRuns,
  counts,
  maxAttempts,
  newExperiment,
  nextCell,
  unsettled,
} from '../core/experiments/state.js'
import type { ControlBus } from '../core/ports/control-bus.js'
import type { ExperimentRuns } from '../core/ports/experiment-runs.js'
import type { ExperimentStore } from '../core/ports/experiment-store.js'
import { closest } from '../core/suggest.js'
import { comparisonLevel, decisionsMarkdown, decisionsOf, look } from './sequential.js'

/** Between the barrier's release and the start instant: long enough for `go` to reach every agent. */
const START_LEAD_MS = 500
/** How long the clients of a run may take to get ready at the barrier (a JVM, loading the memory binding). */
const READY_WAIT_MS = 120_000
/** After the run's length, how long its clients may take to end (flushes, the report). */
const END_SLACK_MS = 120_000
/** A run with an operation count instead of a length: the longest it may take. */
const OPERATIONS_RUN_MAX_MS = 6 * 3600_000
/** How long a finished run may take to be counted in full by the processor. */
const COUNT_WAIT_MS = 90_000
/** Lifecycle steps: the agent's own timeouts plus this, before the coordinator stops waiting. */
const STEP_SLACK_MS = 30_000
const POLL_MS = 250
/** Notes kept in the state (a long experiment's faults, newest last). */
const MAX_NOTES = 1000
/** Notes kept from before the state exists. */
const EARLY_NOTES = 50
/** The coordinator's own heartbeat on the control topic (the topic's clock as it hears it; see silentMs). */
const HEARTBEAT_MS = 1000
/**
 * A longer gap between consecutive messages heard is the topic itself stalled, for everyone: a broker of the
 * partition's replicas isolated, say, until the ISR shrinks (about 9 s): only this much of it counts as silence.
 */
const STALL_GAP_MS = 2 * HEARTBEAT_MS

export interface ConductorDeps {
  bus: ControlBus
  store: ExperimentStore
  runs: ExperimentRuns
  /** This machine's clock, ms since the epoch. */
  now: () => number
  log: Logger
  /** Writes a file into the experiment's folder (comparisons). */
  write: (experimentId: string, name: string, text: string) => string
  /** Told after every change of the state (the terminal's progress line). */
  onChange?: (state: ExperimentState) => void
}

/** Why an agent cannot run the plan's runs, or undefined. */
type Lacks = string | undefined

export class Conductor {
  /** The agents by name, from their heartbeats: the instance work goes to, two instances under one name. */
  private readonly roster = new AgentRoster()
  /** Names noted as having two live instances, until one is left. */
  private readonly conflicts = new Set<string>()
  private readonly statuses = new Map<string, AssignmentStatus[]>()
  private readonly samples: ClockSample[] = []
  private state: ExperimentState | undefined
  private stopping = false
  /** Notes made before the experiment's state exists (agents heard while waiting), kept for it. */
  private readonly early: string[] = []
  /**
   * The control topic's time as this coordinator heard it: the broker append times of the messages it read, from
   * anyone (its own heartbeats included), added up gap by gap, each gap counted up to STALL_GAP_MS. The topic has one
   * partition, read in order: by the time a message is heard, everything appended before it has been.
   */
  private topicMs = 0
  private lastBrokerMs: number | undefined
  private readonly instance = randomUUID()
  private beatTimer: NodeJS.Timeout | undefined

  constructor(private readonly deps: ConductorDeps) {}

  async start(): Promise<void> {
    await this.deps.bus.start({
      onMessage: (m, brokerTimeMs) => this.onMessage(m, brokerTimeMs),
      onRejected: (why) => this.deps.log.warn({ why }, 'a message on the control topic was refused'),
    })
    const beat = (): void => {
      this.beatTimer = setTimeout(() => {
        void this.publish({ type: 'coordinator.heartbeat', sentAtMs: this.deps.now(), coordinator: this.instance })
          .catch((err: unknown) =>
            this.deps.log.warn({ err: (err as Error).message }, 'coordinator heartbeat not sent; trying again'),
          )
          .finally(() => {
            if (!this.stopping) beat()
          })
      }, HEARTBEAT_MS)
      // It keeps no process alive: the coordinator's work does.
      this.beatTimer.unref()
    }
    beat()
  }

  async close(): Promise<void> {
    this.stopping = true
    if (this.beatTimer !== undefined) clearTimeout(this.beatTimer)
    await this.deps.bus.close()
  }

  /**
   * How long an agent has not been heard from, in the topic's time: from its last heartbeat to the latest message
   * this coordinator heard from anyone. Measured on the coordinator's own clock, a coordinator whose link was cut
   * took every agent for silent (and ran a run that had completed again); a stall of the whole topic made every
   * agent silent once it ended, when the coordinator's next heartbeat came before theirs. Measured so, silence is
   * what the topic shows: others going on without the agent.
   */
  private silentMs(a: RosterEntry): number {
    return this.topicMs - a.seenAtMs
  }

  private onMessage(m: ControlMessage, brokerTimeMs: number): void {
    // A bus that does not know the broker's time (none of ours) leaves the coordinator's clock.
    const at = Number.isFinite(brokerTimeMs) && brokerTimeMs > 0 ? brokerTimeMs : this.deps.now()
    if (this.lastBrokerMs === undefined) this.lastBrokerMs = at
    else if (at > this.lastBrokerMs) {
      this.topicMs += Math.min(at - this.lastBrokerMs, STALL_GAP_MS)
      this.lastBrokerMs = at
    }
    if (m.type === 'agent.heartbeat') {
      const change = this.roster.heartbeat(m, this.topicMs)
      if (change?.kind === 'restarted')
        this.note(
          `agent ${m.agent} restarted (a new instance: ${describeInstance(m)}): whatever its predecessor ` +
            `(${describeInstance(change.previous)}) was running is lost`,
        )
      else if (change?.kind === 'conflict') {
        this.conflicts.add(m.agent)
        this.note(twoInstancesMessage(m.agent, change.instances), 'error')
      }
    } else if (m.type === 'assignment.status') {
      const list = this.statuses.get(m.assignment)
      if (list === undefined) this.statuses.set(m.assignment, [m])
      else list.push(m)
    }
  }

  // ---------------------------------------------------------------- entry points

  /** Runs a checked plan from the start; the experiment's id is given (experimentIdOf). */
  async run(plan: Plan, id: string): Promise<ExperimentState> {
    // One coordinator may run experiments one after the other (a bisection's steps): nothing carries over.
    this.stoppedSetups.clear()
    await this.waitForAgents(plan)
    const state = newExperiment(id, plan, this.deps.now())
    this.state = state
    state.notes.push(...this.early.splice(0))
    await this.save()
    return this.execute()
  }

  /** Continues an experiment from its stored state: settles the runs it left running, then goes on. */
  async resume(id: string): Promise<ExperimentState> {
    const stored = await this.deps.store.load(id)
    if (stored === undefined)
      throw new BenchstreamError(
        'BS_ERR_NOT_FOUND',
        `no experiment ${JSON.stringify(id)}; list them with benchstream experiment list`,
      )
    this.state = stored
    this.stoppedSetups.clear()
    stored.notes.push(...this.early.splice(0))
    if (stored.notes.length > MAX_NOTES) stored.notes.splice(0, stored.notes.length - MAX_NOTES)
    if (stored.status === 'done') return stored
    stored.status = 'running'
    this.note(`resumed at ${new Date(this.deps.now()).toISOString()}`)
    await this.waitForAgents(stored.plan)
    for (const { cell, attempt } of unsettled(stored)) await this.settle(cell, attempt, 'resume')
    await this.save()
    return this.execute()
  }

  // ---------------------------------------------------------------- agents

  /** The agents heard within the agent timeout, by name; never a name with two live instances. */
  private alive(plan: Plan): RosterEntry[] {
    const timeoutMs = (plan.agentTimeoutS ?? PLAN_DEFAULTS.agentTimeoutS) * 1000
    const now = this.topicMs
    return this.roster.names().flatMap((name) => {
      if (this.conflictOf(name, plan) !== undefined) return []
      const e = this.roster.entry(name)!
      return now - e.seenAtMs <= timeoutMs ? [e] : []
    })
  }

  /** The live instances of a name that has more than one (noted once when it goes back to one), else undefined. */
  private conflictOf(name: string, plan: Plan): AgentHeartbeat[] | undefined {
    const timeoutMs = (plan.agentTimeoutS ?? PLAN_DEFAULTS.agentTimeoutS) * 1000
    const live = this.roster.conflict(name, this.topicMs, timeoutMs)
    if (live === undefined && this.conflicts.delete(name)) {
      const left = this.roster.entry(name)
      this.note(
        `agent ${name} has one live instance again ` +
          `(${left === undefined ? 'none heard' : describeInstance(left.hb)}): ` +
          'work goes to it again',
      )
    }
    return live
  }

  /** Why a named agent is not among the live ones: two instances under its name, or no heartbeat. */
  private absent(name: string, plan: Plan): string {
    const two = this.conflictOf(name, plan)
    return two === undefined ? `agent ${name} is not heartbeating` : twoInstancesMessage(name, two)
  }

  /** What an agent lacks to run the plan's clients, in words. */
  private lacks(plan: Plan, a: AgentHeartbeat): Lacks {
    const c = a.capabilities
    const driver = plan.driver ?? PLAN_DEFAULTS.driver
    const names = { ycsb: 'YCSB (--ycsb)', pe: 'PE', benchstream: 'the Benchstream driver' } as const
    if (!c.drivers.includes(driver)) return `it does not run ${names[driver]}`
    if (driver === 'pe') {
      // PE: the binding is the allowed command that is HBase's bin/hbase; its workloads are PE's tests, no files.
      if (!c.commands.includes(plan.binding))
        return (
          `it does not allow the command ${plan.binding} ` +
          `(--allow-command ${plan.binding}=PATH of HBase's bin/hbase)`
        )
    } else {
      const why = this.lacksBinding(plan, c, driver)
      if (why !== undefined) return why
    }
    for (const [k, v] of Object.entries(plan.agentLabels ?? {}))
      if (a.labels[k] !== v) return `its label ${k} is ${a.labels[k] === undefined ? 'not set' : a.labels[k]}, not ${v}`
    const bound = plan.clockBoundMs ?? PLAN_DEFAULTS.clockBoundMs
    if (a.clock === null) return 'it has not measured its clock yet'
    if (!clockWithin(a.clock, bound)) return clockRefusal(a.agent, a.clock, bound)
    return undefined
  }

  /** The binding and workload files a driver other than pe needs. */
  private lacksBinding(plan: Plan, c: AgentHeartbeat['capabilities'], driver: string): Lacks {
    const bindings = driver === 'ycsb' ? c.ycsbBindings : c.bindings
    if (!bindings.includes(plan.binding))
      return `it does not run the binding ${plan.binding} (it runs ${bindings.join(', ')})`
    for (const w of plan.workloads) if (!hasWorkload(c.workloads, w.file)) return `it has no workload file ${w.file}`
    return undefined
  }

  private clientCount(plan: Plan): number {
    return typeof plan.clients === 'number' ? plan.clients : plan.clients.length
  }

  /** The agents for one run: the named ones, or the first capable ones that are free. */
  private pickClients(plan: Plan): AgentHeartbeat[] | string {
    const alive = this.alive(plan)
    const n = this.clientCount(plan)
    if (Array.isArray(plan.clients)) {
      const out: AgentHeartbeat[] = []
      for (const name of plan.clients) {
        const a = alive.find((x) => x.hb.agent === name)
        if (a === undefined) return this.absent(name, plan)
        const why = this.lacks(plan, a.hb)
        if (why !== undefined) return `agent ${name}: ${why}`
        // Waited for like a missing one: assigned now, it would refuse, and the attempt would be spent. Seen after a
        // partition: the agent was back, its client of the run just given up still flushing.
        if (a.hb.busyWith !== null) return `agent ${name} is busy with ${a.hb.busyWith}`
        out.push(a.hb)
      }
      return out
    }
    const capable = alive.filter((a) => this.lacks(plan, a.hb) === undefined && a.hb.busyWith === null)
    if (capable.length >= n) return capable.slice(0, n).map((a) => a.hb)
    const others = alive
      .map((a) => [
        a.hb.agent,
        this.lacks(plan, a.hb) ?? (a.hb.busyWith === null ? undefined : `busy with ${a.hb.busyWith}`),
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

  /**
   * Waits (agentWaitS) until the plan can start: enough capable agents for a run, the agents of its steps and
   * profile present and allowing them, every workload file on some agent. Anything missing after the wait is
   * BS_ERR_AGENT (or BS_ERR_PLAN for a workload no agent has), naming what and the fix; nothing has run then.
   */
  private async waitForAgents(plan: Plan): Promise<void> {
    const deadline = this.deps.now() + (plan.agentWaitS ?? PLAN_DEFAULTS.agentWaitS) * 1000
    let why: string | undefined
    for (;;) {
      why = this.readiness(plan)
      if (why === undefined) return
      if (this.deps.now() >= deadline) break
      await sleep(POLL_MS)
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

  private readiness(plan: Plan): string | undefined {
    const picked = this.pickClients(plan)
    if (typeof picked === 'string') return picked
    const alive = this.alive(plan)
    const need: Array<{ agent: string; what: string; check: (a: AgentHeartbeat) => string | undefined }> = []
    for (const s of plan.setups)
      for (const [phase, step] of Object.entries(s.steps ?? {}) as Array<[StepPhase, Step | undefined]>) {
        if (step === undefined) continue
        need.push({
          agent: step.agent,
          what: `setup ${s.name}'s ${phase} step`,
          check: (a) => {
            if (!a.capabilities.commands.includes(step.command))
              return `it does not allow the command ${step.command} (--allow-command ${step.command}=PATH)`
            const env = Object.keys(step.env ?? {}).find((e) => !a.capabilities.env.includes(e))
            return env === undefined ? undefined : `it does not let steps set ${env} (--allow-env)`
          },
        })
      }
    for (const [what, p] of [
      ['the profile', plan.profile],
      ...plan.setups.map((s) => [`setup ${s.name}'s profile`, s.profile] as const),
    ] as const) {
      if (p === undefined) continue
      need.push({
        agent: p.agent,
        what,
        check: (a) =>
          a.capabilities.profileTargets.includes(p.target) ? undefined : `it has no profile target ${p.target}`,
      })
    }
    for (const n of need) {
      const a = alive.find((x) => x.hb.agent === n.agent)
      if (a === undefined) return `${this.absent(n.agent, plan)} (for ${n.what})`
      const why = n.check(a.hb)
      if (why !== undefined) return `agent ${n.agent} cannot run ${n.what}: ${why}`
    }
    return undefined
  }

  // ---------------------------------------------------------------- the matrix

  private async execute(): Promise<ExperimentState> {
    const state = this.state!
    const plan = state.plan
    const failedSetups = new Map<string, string>()
    const grouped = (plan.order ?? PLAN_DEFAULTS.order) === 'grouped'
    const started = new Set<string>()
    const startSetup = async (s: Setup): Promise<void> => {
      if (started.has(s.name) || failedSetups.has(s.name)) return
      started.add(s.name)
      const why = await this.step(s, 'start')
      if (why !== undefined) failedSetups.set(s.name, why)
    }
    if (!grouped) for (const s of plan.setups) await startSetup(s)
    // Runs whose clients all ended are counted in the background while the next runs; one found incomplete makes
    // its cell due again (while its attempts last), so the matrix is gone through until nothing is left. With
    // repetitions { min, max }, a look after each round may add the next one (nextRound).
    do
      for (;;) {
        await this.matrixPass(failedSetups, grouped, started, startSetup)
        if (this.verifying.size === 0 || this.stopping) break
        await Promise.all(this.verifying)
        if (nextCell(state) === undefined) break
      }
    while (!this.stopping && (await this.nextRound()))
    for (const s of plan.setups) if (started.has(s.name) && !this.stoppedSetups.has(s.name)) await this.stopSetup(s)
    state.currentRun = null
    const c = counts(state)
    // Before the comparisons: comparison.md headlines what the experiment decided, which needs its status.
    state.status = this.stopping ? 'interrupted' : c.done === state.cells.length ? 'done' : 'failed'
    if (!this.stopping) await this.compareAll()
    if (c.failed > 0) this.note(`${c.failed} of ${state.cells.length} runs failed after ${maxAttempts(plan)} attempts`)
    await this.save()
    return state
  }

  /**
   * Repetitions until decided (services/experiments/sequential.ts): once every cell is settled, a look at the
   * comparisons; true when it added a round (or a verification made a cell due again), so the matrix goes on.
   */
  private async nextRound(): Promise<boolean> {
    await Promise.all(this.verifying)
    const state = this.state!
    if (nextCell(state) !== undefined) return true
    const { added, notes } = await look(state, this.deps.runs, this.deps.now)
    for (const n of notes) this.note(n)
    await this.save()
    return added > 0
  }

  /** Verifications of runs whose clients all ended, going on in the background. */
  private readonly verifying = new Set<Promise<void>>()

  private async matrixPass(
    failedSetups: Map<string, string>,
    grouped: boolean,
    started: Set<string>,
    startSetup: (s: Setup) => Promise<void>,
  ): Promise<void> {
    const state = this.state!
    const plan = state.plan
    for (let cell = nextCell(state); cell !== undefined && !this.stopping; cell = nextCell(state)) {
      const setup = plan.setups.find((s) => s.name === cell.setup)!
      if (grouped) {
        // One setup at a time: the previous one is stopped before the next starts.
        for (const s of plan.setups)
          if (s.name !== setup.name && started.has(s.name) && !this.stoppedSetups.has(s.name)) await this.stopSetup(s)
        await startSetup(setup)
      }
      const failed = failedSetups.get(setup.name)
      if (failed !== undefined) {
        this.failCell(cell, `setup ${setup.name} failed: ${failed}`)
        await this.save()
        continue
      }
      const loaded = await this.ensureLoaded(setup, cell)
      if (loaded !== undefined) {
        failedSetups.set(setup.name, loaded)
        continue
      }
      if (setup.steps?.flush !== undefined) {
        const why = await this.step(setup, 'flush')
        if (why !== undefined) {
          failedSetups.set(setup.name, why)
          continue
        }
      }
      await this.runCell(cell)
    }
  }

  private readonly stoppedSetups = new Set<string>()

  private async stopSetup(s: Setup): Promise<void> {
    this.stoppedSetups.add(s.name)
    const why = await this.step(s, 'stop')
    if (why !== undefined) this.note(`setup ${s.name}: its stop step failed: ${why}`)
  }

  private failCell(cell: Cell, reason: string): void {
    while (cellStatus(cell, this.state!.plan) === 'left')
      cell.attempts.push(emptyAttempt(runIdOf(cell, cell.attempts.length + 1), 'failed', reason))
  }

  /** Runs a setup's step; undefined when it ended (or there is none), else why it failed. */
  private async step(s: Setup, phase: StepPhase, suffix = ''): Promise<string | undefined> {
    const step = s.steps?.[phase]
    if (step === undefined) return undefined
    const state = this.state!
    const name = `${phase}${suffix}`
    const record = { setup: s.name, phase: name, agent: step.agent, state: 'running' as const, atMs: this.deps.now() }
    state.steps.push(record)
    await this.save()
    const agent = this.alive(state.plan).find((a) => a.hb.agent === step.agent)
    const id = `${state.id}/${s.name}/${name}/${state.steps.length}`
    let result: { ok: boolean; detail: string; output?: string }
    if (agent === undefined) result = { ok: false, detail: this.absent(step.agent, state.plan) }
    else {
      await this.assign({ assignment: id, agent: agent.hb, step })
      const waitMs = ((step.timeoutS ?? 600) + (step.ready?.timeoutS ?? 120)) * 1000 + STEP_SLACK_MS
      const st = await this.waitFor(id, ['ended', 'failed', 'refused'], waitMs, [agent.hb])
      const two = st === undefined ? this.conflictOf(step.agent, state.plan) : undefined
      result =
        two !== undefined
          ? { ok: false, detail: twoInstancesMessage(step.agent, two) }
          : st === undefined
            ? { ok: false, detail: `no answer from agent ${step.agent} within ${Math.round(waitMs / 1000)} s` }
            : {
                ok: st.state === 'ended',
                detail: st.detail ?? st.state,
                ...(st.output === undefined ? {} : { output: st.output }),
              }
    }
    const done = { ...record, state: result.ok ? ('done' as const) : ('failed' as const), atMs: this.deps.now() }
    if (result.output !== undefined) Object.assign(done, { output: result.output.slice(-8000) })
    state.steps[state.steps.indexOf(record)] = done
    await this.save()
    if (result.ok) return undefined
    const why =
      `its ${name} step on ${step.agent} failed: ` +
      `${result.detail}${result.output === undefined ? '' : `\n${result.output.slice(-2000)}`}`
    this.note(`setup ${s.name}: ${why}`)
    return why
  }

  /** The setup's load for the cell's workload, once (or before every run): undefined when done, else why not. */
  private async ensureLoaded(setup: Setup, cell: Cell): Promise<string | undefined> {
    const plan = this.state!.plan
    const mode = loadMode(plan)
    if (mode === 'none') return undefined
    const key = `load:${cell.workload}`
    const done = this.state!.steps.some((s) => s.setup === setup.name && s.phase === key && s.state === 'done')
    if (mode === 'setup' && done) return undefined
    if (setup.steps?.load !== undefined)
      return (await this.step(setup, 'load', `:${cell.workload}`)) ?? this.step(setup, 'loaded', `:${cell.workload}`)
    // PE has no load phase an experiment could split over its clients (checkPlan asks pe plans for a load step).
    if (plan.driver === 'pe') return undefined
    // The workload's own load phase, its key range split over the clients.
    const record = { setup: setup.name, phase: key, agent: '', state: 'running' as const, atMs: this.deps.now() }
    this.state!.steps.push(record)
    const loadCell: Cell = {
      ...cell,
      key: `${cell.key}/load`,
      repetition: this.state!.steps.length,
      warmup: false,
      group: `${cell.group}-load`,
      attempts: [],
    }
    const attempt = await this.runOnce(loadCell, 'load')
    const ok = attempt.state === 'done'
    this.state!.steps[this.state!.steps.indexOf(record)] = {
      ...record,
      agent: attempt.clients.map((c) => c.agent).join(','),
      state: ok ? 'done' : 'failed',
      atMs: this.deps.now(),
      ...(ok ? {} : { output: attempt.reason ?? '' }),
    }
    await this.save()
    if (!ok) return `loading ${cell.workload} failed: ${attempt.reason ?? 'incomplete'}`
    // Once after the load, not before every run (flush): an HBase flushed before each run starts each with another
    // number of store files (compactions run every third flush), which spread its block cache ratio by 10%.
    return this.step(setup, 'loaded', `:${cell.workload}`)
  }

  private async runCell(cell: Cell): Promise<void> {
    const attempt = await this.runOnce(cell, 'run')
    if (attempt.state !== 'done' && attempt.state !== 'running')
      this.note(`${attempt.runId}: ${attempt.state}${attempt.reason === undefined ? '' : `: ${attempt.reason}`}`)
  }

  /** One attempt of a cell (or of a load): a new run id, its clients at the barrier, go, and how it ended. */
  private async runOnce(cell: Cell, phase: 'run' | 'load'): Promise<Attempt> {
    const state = this.state!
    const plan = state.plan
    // A load is one attempt of its own cell; runIdOf keeps its id within the id rule (`<group>-load-<n>` may not).
    const runId = runIdOf(cell, phase === 'load' ? 1 : cell.attempts.length + 1)
    const picked = await this.pickClientsWaiting(plan)
    if (typeof picked === 'string') {
      const a = emptyAttempt(runId, 'failed', picked)
      if (phase === 'run') cell.attempts.push(a)
      await this.save()
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
    await this.save()

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
      await this.assign({ assignment: ids[i]!, agent: a, run })
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
    } else if (phase === 'load') await this.verify(attempt, n)
    else {
      // Counted in the background: the agents are free for the next run already.
      const v: Promise<void> = this.verify(attempt, n)
        .then(async () => {
          if (attempt.state !== 'done')
            this.note(`${attempt.runId}: ${attempt.state}${attempt.reason === undefined ? '' : `: ${attempt.reason}`}`)
          await this.save()
        })
        .finally(() => this.verifying.delete(v))
      this.verifying.add(v)
    }
    await this.save()
    return attempt
  }

  private async pickClientsWaiting(plan: Plan): Promise<AgentHeartbeat[] | string> {
    const deadline = this.deps.now() + (plan.agentWaitS ?? PLAN_DEFAULTS.agentWaitS) * 1000
    for (;;) {
      const p = this.pickClients(plan)
      if (typeof p !== 'string' || this.deps.now() >= deadline || this.stopping) return p
      await sleep(POLL_MS)
    }
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
    const ready = await this.waitAll(ids, agents, ['ready'], READY_WAIT_MS, attempt)
    if (ready !== undefined) {
      await this.cancel(ids, ready)
      return { state: 'failed', reason: ready }
    }
    const startAtMs = this.brokerNow() + START_LEAD_MS
    await this.publish({
      type: 'go',
      sentAtMs: this.deps.now(),
      experiment: this.state!.id,
      assignments: ids,
      startAtMs,
    })
    attempt.startedAtMs = startAtMs
    for (const c of attempt.clients) c.state = 'started'
    await this.save()
    const p = this.state!.plan
    if (profile !== undefined && !attempt.runId.endsWith('-load')) await this.profile(attempt.runId, profile, p)
    const runMs = p.seconds !== undefined ? p.seconds * 1000 : OPERATIONS_RUN_MAX_MS
    const ended = await this.waitAll(ids, agents, ['ended'], START_LEAD_MS + runMs + END_SLACK_MS, attempt)
    if (ended !== undefined) {
      await this.cancel(ids, ended)
      return { state: 'incomplete', reason: ended }
    }
    return undefined
  }

  /** A CPU profile of the plan's target during the run, attached to it; a failure is a note, not a failed run. */
  private async profile(runId: string, p: NonNullable<Plan['profile']>, plan: Plan): Promise<void> {
    const agent = this.alive(plan).find((a) => a.hb.agent === p.agent)
    if (agent === undefined) return this.note(`${runId}: no profile: ${this.absent(p.agent, plan)}`)
    const seconds = Math.max(1, Math.min(p.seconds ?? 10, (plan.seconds ?? 11) - 1))
    await this.assign({
      assignment: `${runId}/profile`,
      agent: agent.hb,
      profile: { target: p.target, runId, seconds, event: p.event ?? 'cpu' },
    })
  }

  /**
   * Waits until every assignment reached one of `states`; undefined then, else why not: a client refused or failed,
   * its agent went silent or restarted, or the time is up. Client outcomes are kept in the attempt.
   */
  private async waitAll(
    ids: string[],
    agents: AgentHeartbeat[],
    states: Array<AssignmentStatus['state']>,
    timeoutMs: number,
    attempt: Attempt,
  ): Promise<string | undefined> {
    const deadline = this.deps.now() + timeoutMs
    const plan = this.state!.plan
    const silentMs = (plan.agentTimeoutS ?? PLAN_DEFAULTS.agentTimeoutS) * 1000
    for (;;) {
      let pending = 0
      for (const [i, id] of ids.entries()) {
        const a = agents[i]!
        const last = this.lastStatus(id, a.instance)
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
        const two = this.conflictOf(a.agent, plan)
        if (two !== undefined) {
          client.state = 'lost'
          return `${twoInstancesMessage(a.agent, two)} (clients ended: ${this.endedCount(ids)} of ${ids.length})`
        }
        const view = this.roster.entry(a.agent)
        if (view === undefined || view.hb.instance !== a.instance) {
          client.state = 'lost'
          return (
            `agent ${a.agent} restarted during the run: ` +
            `its client is gone ` +
            (`(clients ended: ${this.endedCount(ids)} of ` + `${ids.length})`)
          )
        }
        if (this.silentMs(view) > silentMs) {
          client.state = 'lost'
          return (
            `agent ${a.agent} went silent (no heartbeat ` +
            `for ${Math.round(this.silentMs(view) / 1000)} s): ` +
            `its client is lost (clients ended: ${this.endedCount(ids)} of ${ids.length})`
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
      if (this.stopping) return 'the coordinator is stopping'
      await sleep(POLL_MS)
    }
  }

  /**
   * The last status of an assignment from the instance it was addressed to: another instance under the same name
   * (a second agent started by mistake) answers for itself, never for it.
   */
  private lastStatus(id: string, instance: string): AssignmentStatus | undefined {
    const list = this.statuses.get(id) ?? []
    for (let i = list.length - 1; i >= 0; i--) if (list[i]!.instance === instance) return list[i]
    return undefined
  }

  private endedCount(ids: string[]): number {
    return ids.filter((id) => this.statuses.get(id)?.at(-1)?.state === 'ended').length
  }

  /** Every client ended: the run's report must show each client's end and every event it sent, counted. */
  private async verify(attempt: Attempt, n: number): Promise<void> {
    const deadline = this.deps.now() + COUNT_WAIT_MS
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
      await sleep(POLL_MS * 2)
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
      attempt.reason = `the run has no data after ${COUNT_WAIT_MS / 1000} s`
    } else if (report.run.clients_ended < n) {
      attempt.state = 'incomplete'
      attempt.reason = `clients ended ${report.run.clients_ended} of ${n}`
    } else if (report.completeness.counted !== report.completeness.sent) {
      attempt.state = 'incomplete'
      attempt.reason =
        `${report.completeness.counted} of ${report.completeness.sent ?? '?'} ` +
        `events counted after ${COUNT_WAIT_MS / 1000} s`
    } else attempt.state = 'done'
  }

  /** A run a previous coordinator left running: done if its clients all ended and it is counted, else incomplete. */
  private async settle(cell: Cell, attempt: Attempt, why: string): Promise<void> {
    const plan = this.state!.plan
    const n = attempt.clients.length
    const ids = attempt.clients.map((c) => `${attempt.runId}/${c.agent}`)
    // Clients still at work finish their run first (their agents say so in each heartbeat).
    const deadline = this.deps.now() + (plan.seconds ?? 60) * 1000 + END_SLACK_MS
    while (
      this.alive(plan).some((a) => a.hb.busyWith !== null && ids.includes(a.hb.busyWith)) &&
      this.deps.now() < deadline
    )
      await sleep(POLL_MS)
    await this.verify(attempt, n)
    attempt.endedAtMs = attempt.endedAtMs ?? this.deps.now()
    this.note(
      `${attempt.runId} (${cell.key}), left running ` +
        `by a coordinator ` +
        `that stopped, settled on ${why}: ${attempt.state}` +
        (attempt.reason === undefined ? '' : ` (${attempt.reason})`),
    )
  }

  // ---------------------------------------------------------------- comparisons

  private async compareAll(): Promise<void> {
    const state = this.state!
    const plan = state.plan
    state.comparisons = []
    for (const pair of comparePairs(plan))
      for (const w of plan.workloads) {
        const workload = workloadName(w)
        const a = comparedRuns(state, pair.baseline, workload)
        const b = comparedRuns(state, pair.candidate, workload)
        const stem = `compare-${pair.baseline}-vs-${pair.candidate}-${workload}`
        const record: ComparisonRecord = {
          baseline: pair.baseline,
          candidate: pair.candidate,
          workload,
          regressions: [],
          improvements: [],
          baselineRuns: a,
          candidateRuns: b,
          files: [],
        }
        if (a.length === 0 || b.length === 0) {
          record.error = `no complete run of ${a.length === 0 ? pair.baseline : pair.candidate} for ${workload}`
          state.comparisons.push(record)
          continue
        }
        try {
          // A sequential experiment's comparison is its last look's: that round's share of alpha, Welch's t.
          const level = comparisonLevel(state, workload)
          const c = await this.deps.runs.compare(`runs:${a.join(',')}`, `runs:${b.join(',')}`, {
            force: true,
            ...(level.test === 'welch' || plan.alpha !== undefined ? { alpha: level.alpha } : {}),
            ...(level.test === 'welch' ? { test: level.test } : {}),
            ...(plan.minEffect === undefined ? {} : { minEffect: plan.minEffect }),
          })
          record.decisions = decisionsOf(state, workload, c)
          const named: ReleaseComparison = {
            ...c,
            baseline: { ...c.baseline, ref: `${pair.baseline} (${workload})` },
            candidate: { ...c.candidate, ref: `${pair.candidate} (${workload})` },
          }
          const d = decideComparison(c)
          record.regressions = d.regressions.map((f) => f.label)
          record.improvements = d.improvements.map((f) => f.label)
          record.untested = untestedByConcern(d).map((f) => ({
            figure: figureChange(f),
            n: `${f.baseline.n} + ${f.candidate.n}`,
          }))
          record.notCompared = d.notCompared
          record.files = [
            this.deps.write(state.id, `${stem}.md`, formatComparison(named, 'markdown')),
            this.deps.write(state.id, `${stem}.txt`, formatComparison(named, 'terminal')),
            this.deps.write(state.id, `${stem}.json`, JSON.stringify(named, null, 2) + '\n'),
          ]
        } catch (err) {
          record.error = (err as Error).message.slice(0, 4000)
        }
        state.comparisons.push(record)
      }
    this.deps.write(state.id, 'comparison.md', experimentMarkdown(state))
  }

  // ---------------------------------------------------------------- plumbing

  private async assign(
    x: { assignment: string; agent: AgentHeartbeat } & Pick<Assign, 'run' | 'step' | 'profile'>,
  ): Promise<void> {
    const plan = this.state!.plan
    const { assignment, agent, ...work } = x
    await this.publish({
      type: 'assign',
      sentAtMs: this.deps.now(),
      experiment: this.state!.id,
      assignment,
      agent: agent.agent,
      instance: agent.instance,
      ...work,
      clockBoundMs: plan.clockBoundMs ?? PLAN_DEFAULTS.clockBoundMs,
      barrierTimeoutS: Math.ceil(READY_WAIT_MS / 1000) + 60,
    })
  }

  private async waitFor(
    id: string,
    states: Array<AssignmentStatus['state']>,
    timeoutMs: number,
    agents: AgentHeartbeat[],
  ): Promise<AssignmentStatus | undefined> {
    const deadline = this.deps.now() + timeoutMs
    for (;;) {
      const last = this.lastStatus(id, agents[0]!.instance)
      if (last !== undefined && states.includes(last.state)) return last
      if (agents.some((a) => this.roster.entry(a.agent)?.hb.instance !== a.instance)) return undefined
      if (agents.some((a) => this.conflictOf(a.agent, this.state!.plan) !== undefined)) return undefined
      if (this.deps.now() >= deadline || this.stopping) return undefined
      await sleep(POLL_MS)
    }
  }

  private async cancel(ids: string[], reason: string): Promise<void> {
    await this.publish({
      type: 'cancel',
      sentAtMs: this.deps.now(),
      experiment: this.state!.id,
      assignments: ids,
      reason: reason.slice(0, 1000),
    }).catch(() => undefined)
  }

  /** Publishes, and keeps the broker's append time as a sample of this machine's clock offset. */
  private async publish(m: ControlMessage): Promise<void> {
    const sentMs = this.deps.now()
    const { brokerTimeMs } = await this.deps.bus.publish(m)
    if (brokerTimeMs !== undefined) {
      this.samples.push({ sentMs, ackedMs: this.deps.now(), brokerMs: brokerTimeMs })
      if (this.samples.length > 16) this.samples.shift()
    }
  }

  /** The broker's clock now, as far as this machine knows it. */
  private brokerNow(): number {
    return this.deps.now() + (estimateClock(this.samples, this.deps.now())?.offsetMs ?? 0)
  }

  private note(text: string, level: 'warn' | 'error' = 'warn'): void {
    const state = this.state
    this.deps.log[level](text)
    if (state === undefined) {
      this.early.push(text.slice(0, 4000))
      if (this.early.length > EARLY_NOTES) this.early.shift()
      return
    }
    state.notes.push(text.slice(0, 4000))
    if (state.notes.length > MAX_NOTES) state.notes.shift()
  }

  private async save(): Promise<void> {
    const state = this.state!
    state.version++
    state.updatedAtMs = this.deps.now()
    try {
      await this.deps.store.save(state)
    } catch (err) {
      // The experiment goes on; the next save stores everything (it is the whole state each time).
      this.deps.log.warn(
        { err: (err as Error).message },
        'the experiment state could not be stored; trying again with the next change',
      )
    }
    this.deps.onChange?.(state)
  }
}

function emptyAttempt(runId: string, state: Attempt['state'], reason: string | undefined): Attempt {
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

/** A summary run's report (a PE run's: its clients' figures as reported), not one counted from events. */
function isReported(r: RunReport | ReportedRunReport): r is ReportedRunReport {
  return 'origin' in r && r.origin === 'reported'
}

function hasWorkload(files: readonly string[], name: string): boolean {
  return files.includes(name) || files.includes(name.split('/').slice(1).join('/'))
}

function textProps(p: Plan['properties']): Record<string, string> {
  return Object.fromEntries(Object.entries(p ?? {}).map(([k, v]) => [k, String(v)]))
}

function stringProps(o: Record<string, number>): Record<string, string> {
  return Object.fromEntries(Object.entries(o).map(([k, v]) => [k, String(v)]))
}

function tail(text: string): string {
  return text.split('\n').slice(-3).join(' | ').slice(-600)
}

function sleep(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms))
}

/** A comparison's regressions, or – when none, or "none of the tested; N not testable" when undecided. */
function regressionsCell(x: ComparisonRecord): string {
  const untested = x.untested?.length ?? 0
  const notCompared = x.notCompared?.length ?? 0
  const undecided = [
    ...(untested > 0 ? [`${untested} figure${untested === 1 ? '' : 's'} not testable`] : []),
    ...(notCompared > 0 ? [`not compared: ${x.notCompared!.join('; ')}`] : []),
  ]
  if (x.regressions.length > 0) return [x.regressions.join(', '), ...undecided].join('; ')
  return undecided.length === 0 ? '–' : `undecided: ${undecided.join('; ')}`
}

/**
 * The experiment's summary in Markdown: the headline of what was decided (decideExperiment), the matrix's outcome,
 * each comparison with its file, the runs not compared.
 */
export function experimentMarkdown(state: ExperimentState): string {
  const c = counts(state)
  const lines = [
    `# Experiment \`${state.id}\` (${state.name})`,
    '',
    `${c.done} of ${state.cells.length} runs complete` +
      (c.failed > 0 ? `, ${c.failed} failed` : '') +
      `; setups ${state.plan.setups.map((s) => `\`${s.name}\``).join(', ')}; ` +
      (`${repetitionsText(state.plan)} repetitions; clients ` +
        `per run: ${typeof state.plan.clients === 'number' ? state.plan.clients : state.plan.clients.join(', ')}.`),
    '',
  ]
  const d = decideExperiment(state)
  lines.push(
    `**${d.lead}** ${d.text}.`,
    '',
    '| baseline | candidate | workload | runs | regressions | improvements | details |',
    '| :--- | :--- | :--- | ---: | :--- | :--- | :--- |',
  )
  for (const x of state.comparisons)
    lines.push(
      `| ${x.baseline} | ${x.candidate} | ${x.workload} | ${x.baselineRuns.length} + ${x.candidateRuns.length} | ` +
        `${x.error !== undefined ? `not compared: ${x.error.split('\n')[0]}` : regressionsCell(x)} | ` +
        `${x.improvements.join(', ') || '–'} | ${x.files
          .filter((f) => f.endsWith('.md'))
          .map((f) => `[${f.split('/').pop()}](${f.split('/').pop()})`)
          .join(' ')} |`,
    )
  const skews = state.cells.flatMap((cell) =>
    cell.attempts.filter((a) => a.state === 'done' && a.startSkewMs !== null).map((a) => a.startSkewMs!),
  )
  const offsets = state.cells.flatMap((cell) =>
    cell.attempts.filter((a) => a.maxClockOffsetMs !== null).map((a) => a.maxClockOffsetMs!),
  )
  if (skews.length > 0 || offsets.length > 0)
    lines.push(
      '',
      `Start skew between a run's clients: at most ${skews.length === 0 ? '–' : Math.max(...skews).toFixed(1)} ms; ` +
        `largest clock offset of a client: ${offsets.length === 0 ? '–' : Math.max(...offsets).toFixed(1)} ms.`,
    )
  const faults = state.cells.flatMap((cell) =>
    cell.attempts
      .filter((a) => a.state !== 'done' && a.state !== 'running')
      .map((a) => `${a.runId}: ${a.state}${a.reason === undefined ? '' : ` (${a.reason.split('\n')[0]})`}`),
  )
  if (faults.length > 0) lines.push('', '**Runs not compared:**', '', ...faults.map((f) => `- ${f}`))
  lines.push(...decisionsMarkdown(state))
  return lines.join('\n') + '\n'
}
