/**
 * An assignment the agent took (a run's client, a step, a profile) and what the parts that run one need of the
 * agent: its configuration and ports, the jobs by assignment, its clock, a status sent on the topic, a heartbeat.
 */
import type { Assign, AssignmentState, AssignmentStatus, ClockEstimate } from '../../schemas/experiment-control.v1.js'
import type { Launched } from '../core/ports/process-launcher.js'
import type { AgentConfig } from './config.js'
import type { AgentDeps } from './deps.js'

/** Lines of a child's output kept for its status (the tail). */
export const TAIL_LINES = 40

export interface Job {
  assign: Assign
  child: Launched | undefined
  state: AssignmentState
  stdout: string[]
  tail: string[]
  barrierTimer: NodeJS.Timeout | undefined
  cancelled: boolean
}

export type StatusExtra = Partial<Pick<AssignmentStatus, 'detail' | 'operations' | 'exitCode' | 'output'>>

export interface JobHost {
  readonly cfg: AgentConfig
  readonly deps: AgentDeps
  readonly jobs: Map<string, Job>
  clock(): ClockEstimate | null
  stopped(): boolean
  status(a: Assign, state: AssignmentState, extra?: StatusExtra): Promise<void>
  heartbeat(): Promise<void>
}
