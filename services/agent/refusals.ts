/**
 * Whether the agent takes an assignment: checked here against its own configuration, whatever the coordinator
 * checked (the control topic is input like any other): exactly one kind of work; a run only with a measured clock
 * within the plan's bound, when free, with a binding, workload file and properties it allows (PE's own rules for
 * driver pe); a step only with a command and environment it allows; a profile only of a target it names.
 */
import type { Assign, ClockEstimate, RunSpec } from '../../schemas/experiment-control.v1.js'
import { clockRefusal, clockWithin } from '../core/experiments/clock.js'
import { PE_COMMANDS } from '../core/pe/pe-tests.js'
import type { AgentConfig } from './config.js'

/** Property names a plan may not set on this machine: they name files or folders the client would write or read. */
const FILE_PROPERTY = /file|path|dir|export/i

/** What the checks read of the agent. */
export interface Refuser {
  cfg: AgentConfig
  clock: ClockEstimate | null
  busyWith: () => string | undefined
  resolveWorkload: (name: string) => string | undefined
}

/** Why this agent will not do it, or undefined. */
export function refusalOf(x: Refuser, a: Assign): string | undefined {
  const { cfg, clock } = x
  const kinds = [a.run, a.step, a.profile].filter((x) => x !== undefined).length
  if (kinds !== 1) return 'an assignment is exactly one of run, step or profile'
  if (a.run !== undefined) {
    if (clock === null) return `agent ${cfg.name} has not measured its clock yet`
    if (!clockWithin(clock, a.clockBoundMs)) return clockRefusal(cfg.name, clock, a.clockBoundMs)
    const busy = x.busyWith()
    if (busy !== undefined) return `agent ${cfg.name} is busy with ${busy}`
    return runRefusal(x, a.run)
  }
  if (a.step !== undefined) {
    const s = a.step
    if (!Object.hasOwn(cfg.commands, s.command))
      return (
        `agent ${cfg.name} does not allow the command ${JSON.stringify(s.command)}; it allows ` +
        `${Object.keys(cfg.commands).join(', ') || 'none'} (--allow-command NAME=PATH)`
      )
    for (const e of Object.keys(s.env ?? {}))
      if (!cfg.env.includes(e))
        return (
          `agent ${cfg.name} does not let steps set ${e}; it allows ` + `${cfg.env.join(', ') || 'none'} (--allow-env)`
        )
    if (s.ready?.command !== undefined && !Object.hasOwn(cfg.commands, s.ready.command))
      return `agent ${cfg.name} does not allow the readiness command ${JSON.stringify(s.ready.command)}`
    return undefined
  }
  const p = a.profile!
  if (!Object.hasOwn(cfg.profileTargets, p.target))
    return `agent ${cfg.name} has no profile target ${JSON.stringify(p.target)} (--profile-target NAME=PIDFILE)`
  if (!['cpu', 'wall', 'itimer'].includes(p.event))
    return `profile event ${JSON.stringify(p.event)}: cpu, wall or itimer`
  return undefined
}

function runRefusal(x: Refuser, r: RunSpec): string | undefined {
  const cfg = x.cfg
  if (r.driver === 'pe') return peRefusal(x, r)
  if (r.driver === 'ycsb') {
    if (!cfg.ycsb) return `agent ${cfg.name} does not run YCSB (start it with --ycsb or --ycsb-home)`
    if (!cfg.ycsbBindings.includes(r.binding))
      return `agent ${cfg.name} does not run YCSB's ${r.binding}; it runs ${cfg.ycsbBindings.join(', ')}`
  } else if (!cfg.bindings.includes(r.binding))
    return `agent ${cfg.name} does not run the binding ${r.binding}; it runs ${cfg.bindings.join(', ')}`
  if (x.resolveWorkload(r.workload) === undefined)
    return `agent ${cfg.name} has no workload file ${JSON.stringify(r.workload)} in its --workloads folders`
  for (const k of Object.keys(r.properties))
    if (FILE_PROPERTY.test(k))
      return `property ${k} names a file or folder on this machine; plans may not set such properties`
  if ((r.serverMetrics?.length ?? 0) > 0 && !cfg.allowServerMetrics)
    return `agent ${cfg.name} does not sample datastore metrics URLs (--allow-server-metrics)`
  return undefined
}

/** Why this agent will not run a client of a PE run (driver pe), or undefined. */
function peRefusal(x: Refuser, r: RunSpec): string | undefined {
  const cfg = x.cfg
  if (!Object.hasOwn(cfg.commands, r.binding))
    return (
      `agent ${cfg.name} does not allow the command ${JSON.stringify(r.binding)} that driver pe runs as ` +
      `${r.binding} pe ...; it allows ${Object.keys(cfg.commands).join(', ') || 'none'} (--allow-command ` +
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
  if ((r.serverMetrics?.length ?? 0) > 0 && !cfg.allowServerMetrics)
    return `agent ${cfg.name} does not sample datastore metrics URLs (--allow-server-metrics)`
  return undefined
}
