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
 * The Conductor composes the parts, one concept each: control.ts (the
 * control topic), agents.ts and agent-fit.ts (who is alive and able),
 * assignments.ts (work sent and waited for), run-attempt.ts (a run at the
 * barrier), verification.ts (counted in full), setup-steps.ts (lifecycle
 * steps, loads), execution.ts (the matrix), comparisons.ts, record.ts (the
 * state stored). No sockets are opened here: services/cli/experiment.ts
 * wires the control topic, the store and the run reader.
 */
import type { Plan } from '../../schemas/experiment-plan.v1.js'
import type { ExperimentState } from '../../schemas/experiment-state.v1.js'
import { BenchstreamError } from '../core/errors.js'
import { newExperiment, unsettled } from '../core/experiments/state.js'
import { AgentPool } from './agents.js'
import { Assignments } from './assignments.js'
import { readConductorConfig, type ConductorConfig } from './config.js'
import { ControlChannel } from './control.js'
import type { ConductorDeps } from './deps.js'
import { Execution } from './execution.js'
import { ExperimentRecord } from './record.js'
import { RunAttempts } from './run-attempt.js'
import { SetupSteps } from './setup-steps.js'
import { Verification } from './verification.js'

export class Conductor {
  private stopping = false
  private readonly record: ExperimentRecord
  private readonly channel: ControlChannel
  private readonly agents: AgentPool
  private readonly verification: Verification
  private readonly steps: SetupSteps
  private readonly execution: Execution

  constructor(
    private readonly deps: ConductorDeps,
    config: Readonly<ConductorConfig> = readConductorConfig(),
  ) {
    const { now } = deps
    const stopping = (): boolean => this.stopping
    const record = (this.record = new ExperimentRecord(deps, config))
    const note = record.note.bind(record)
    // Heartbeats heard go to the agents; the agents measure silence in the time the channel heard.
    const channel = (this.channel = new ControlChannel(deps, config, (m, topicMs) => agents.heartbeat(m, topicMs)))
    const agents = (this.agents = new AgentPool({ now, topicMs: () => channel.topicMs, note, stopping }, config))
    const assignments = new Assignments({ now, channel, agents, record, stopping }, config)
    const verification = (this.verification = new Verification({ runs: deps.runs, now, agents, record }, config))
    const attempts = new RunAttempts({ now, record, agents, channel, assignments, verification }, config)
    const steps = (this.steps = new SetupSteps({ now, record, agents, assignments, attempts }, config))
    this.execution = new Execution({ runs: deps.runs, write: deps.write, now, record, steps, attempts, stopping })
  }

  async start(): Promise<void> {
    await this.channel.start()
  }

  async close(): Promise<void> {
    this.stopping = true
    await this.channel.close()
  }

  /** Runs a checked plan from the start; the experiment's id is given (experimentIdOf). */
  async run(plan: Plan, id: string): Promise<ExperimentState> {
    // One coordinator may run experiments one after the other (a bisection's steps): nothing carries over.
    this.steps.stopped.clear()
    await this.agents.waitForAgents(plan)
    this.record.adopt(newExperiment(id, plan, this.deps.now()))
    await this.record.save()
    return this.execution.execute()
  }

  /** Continues an experiment from its stored state: settles the runs it left running, then goes on. */
  async resume(id: string): Promise<ExperimentState> {
    const stored = await this.deps.store.load(id)
    if (stored === undefined)
      throw new BenchstreamError(
        'BS_ERR_NOT_FOUND',
        `no experiment ${JSON.stringify(id)}; list them with benchstream experiment list`,
      )
    this.steps.stopped.clear()
    this.record.adopt(stored)
    if (stored.status === 'done') return stored
    stored.status = 'running'
    this.record.note(`resumed at ${new Date(this.deps.now()).toISOString()}`)
    await this.agents.waitForAgents(stored.plan)
    for (const { cell, attempt } of unsettled(stored)) await this.verification.settle(cell, attempt, 'resume')
    await this.record.save()
    return this.execution.execute()
  }
}
