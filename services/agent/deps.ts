/** What main.ts gives the agent: the control bus, the process launcher and probes, this machine, its files. */
import type { Logger } from '../common/logger.js'
import type { ControlBus } from '../core/ports/control-bus.js'
import type { ProcessLauncher, ReadinessProbes } from '../core/ports/process-launcher.js'

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
