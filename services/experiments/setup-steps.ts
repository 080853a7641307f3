/**
 * A setup's lifecycle as the coordinator drives it: its steps (start, load, loaded, flush, stop) run by the agent
 * the plan names, each recorded in the state with its output; and a workload's load phase, once per setup (or
 * before every run), by the setup's load step or by the workload's own load split over the clients.
 */
import type { Setup, StepPhase } from '../../schemas/experiment-plan.v1.js'
import type { Cell } from '../../schemas/experiment-state.v1.js'
import { twoInstancesMessage } from '../core/experiments/agent-name.js'
import { loadMode } from '../core/experiments/plan.js'
import type { AgentPool } from './agents.js'
import type { Assignments } from './assignments.js'
import type { ConductorConfig } from './config.js'
import type { ExperimentRecord } from './record.js'
import type { RunAttempts } from './run-attempt.js'

export interface SetupStepsDeps {
  now: () => number
  record: ExperimentRecord
  agents: AgentPool
  assignments: Assignments
  attempts: RunAttempts
}

export class SetupSteps {
  /** Setups whose stop step has run (or was tried): not stopped twice. */
  readonly stopped = new Set<string>()

  constructor(
    private readonly deps: SetupStepsDeps,
    private readonly config: Readonly<ConductorConfig>,
  ) {}

  async stopSetup(s: Setup): Promise<void> {
    this.stopped.add(s.name)
    const why = await this.step(s, 'stop')
    if (why !== undefined) this.deps.record.note(`setup ${s.name}: its stop step failed: ${why}`)
  }

  /** Runs a setup's step; undefined when it ended (or there is none), else why it failed. */
  async step(s: Setup, phase: StepPhase, suffix = ''): Promise<string | undefined> {
    const step = s.steps?.[phase]
    if (step === undefined) return undefined
    const { record, agents, assignments } = this.deps
    const state = record.state
    const name = `${phase}${suffix}`
    const entry = { setup: s.name, phase: name, agent: step.agent, state: 'running' as const, atMs: this.deps.now() }
    state.steps.push(entry)
    await record.save()
    const agent = agents.alive(state.plan).find((a) => a.hb.agent === step.agent)
    const id = `${state.id}/${s.name}/${name}/${state.steps.length}`
    let result: { ok: boolean; detail: string; output?: string }
    if (agent === undefined) result = { ok: false, detail: agents.absent(step.agent, state.plan) }
    else {
      await assignments.assign({ assignment: id, agent: agent.hb, step })
      const waitMs = ((step.timeoutS ?? 600) + (step.ready?.timeoutS ?? 120)) * 1000 + this.config.stepSlackMs
      const st = await assignments.waitFor(id, ['ended', 'failed', 'refused'], waitMs, [agent.hb])
      const two = st === undefined ? agents.conflictOf(step.agent, state.plan) : undefined
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
    const done = { ...entry, state: result.ok ? ('done' as const) : ('failed' as const), atMs: this.deps.now() }
    if (result.output !== undefined) Object.assign(done, { output: result.output.slice(-8000) })
    state.steps[state.steps.indexOf(entry)] = done
    await record.save()
    if (result.ok) return undefined
    const why =
      `its ${name} step on ${step.agent} failed: ` +
      `${result.detail}${result.output === undefined ? '' : `\n${result.output.slice(-2000)}`}`
    record.note(`setup ${s.name}: ${why}`)
    return why
  }

  /** The setup's load for the cell's workload, once (or before every run): undefined when done, else why not. */
  async ensureLoaded(setup: Setup, cell: Cell): Promise<string | undefined> {
    const record = this.deps.record
    const plan = record.state.plan
    const mode = loadMode(plan)
    if (mode === 'none') return undefined
    const key = `load:${cell.workload}`
    const done = record.state.steps.some((s) => s.setup === setup.name && s.phase === key && s.state === 'done')
    if (mode === 'setup' && done) return undefined
    if (setup.steps?.load !== undefined)
      return (await this.step(setup, 'load', `:${cell.workload}`)) ?? this.step(setup, 'loaded', `:${cell.workload}`)
    // PE has no load phase an experiment could split over its clients (checkPlan asks pe plans for a load step).
    if (plan.driver === 'pe') return undefined
    // The workload's own load phase, its key range split over the clients.
    const entry = { setup: setup.name, phase: key, agent: '', state: 'running' as const, atMs: this.deps.now() }
    record.state.steps.push(entry)
    const loadCell: Cell = {
      ...cell,
      key: `${cell.key}/load`,
      repetition: record.state.steps.length,
      warmup: false,
      group: `${cell.group}-load`,
      attempts: [],
    }
    const attempt = await this.deps.attempts.runOnce(loadCell, 'load')
    const ok = attempt.state === 'done'
    record.state.steps[record.state.steps.indexOf(entry)] = {
      ...entry,
      agent: attempt.clients.map((c) => c.agent).join(','),
      state: ok ? 'done' : 'failed',
      atMs: this.deps.now(),
      ...(ok ? {} : { output: attempt.reason ?? '' }),
    }
    await record.save()
    if (!ok) return `loading ${cell.workload} failed: ${attempt.reason ?? 'incomplete'}`
    // Once after the load, not before every run (flush): an HBase flushed before each run starts each with another
    // number of store files (compactions run every third flush), which spread its block cache ratio by 10%.
    return this.step(setup, 'loaded', `:${cell.workload}`)
  }
}
