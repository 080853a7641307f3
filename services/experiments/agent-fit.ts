/**
 * Whether an agent can do what a plan asks of it, from its heartbeat alone: run the plan's clients (driver,
 * binding, workload files, labels, a measured clock within the bound), a setup's lifecycle steps, a profile.
 * Pure: agents.ts asks these of the agents it hears.
 */
import type { AgentHeartbeat } from '../../schemas/experiment-control.v1.js'
import type { Plan, Step, StepPhase } from '../../schemas/experiment-plan.v1.js'
import { clockRefusal, clockWithin } from '../core/experiments/clock.js'
import { PLAN_DEFAULTS } from '../core/experiments/plan.js'

/** Why an agent cannot run the plan's runs, or undefined. */
export type Lacks = string | undefined

/** What an agent lacks to run the plan's clients, in words. */
export function lacks(plan: Plan, a: AgentHeartbeat): Lacks {
  const c = a.capabilities
  const driver = plan.driver ?? PLAN_DEFAULTS.driver
  const names = { ycsb: 'YCSB (--ycsb)', pe: 'PE', benchstream: 'the Benchstream driver' } as const
  if (!c.drivers.includes(driver)) return `it does not run ${names[driver]}`
  if (driver === 'pe') {
    // PE: the binding is the allowed command that is HBase's bin/hbase; its workloads are PE's tests, no files.
    if (!c.commands.includes(plan.binding))
      return (
        `it does not allow the command ${plan.binding} ` + `(--allow-command ${plan.binding}=PATH of HBase's bin/hbase)`
      )
  } else {
    const why = lacksBinding(plan, c, driver)
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
function lacksBinding(plan: Plan, c: AgentHeartbeat['capabilities'], driver: string): Lacks {
  const bindings = driver === 'ycsb' ? c.ycsbBindings : c.bindings
  if (!bindings.includes(plan.binding))
    return `it does not run the binding ${plan.binding} (it runs ${bindings.join(', ')})`
  for (const w of plan.workloads) if (!hasWorkload(c.workloads, w.file)) return `it has no workload file ${w.file}`
  return undefined
}

export function hasWorkload(files: readonly string[], name: string): boolean {
  return files.includes(name) || files.includes(name.split('/').slice(1).join('/'))
}

export function clientCount(plan: Plan): number {
  return typeof plan.clients === 'number' ? plan.clients : plan.clients.length
}

/** Work a named agent must be able to do: a setup's lifecycle step, a profile. */
export interface AgentNeed {
  agent: string
  what: string
  check: (a: AgentHeartbeat) => Lacks
}

/** Everything the plan asks of named agents besides running clients: the setups' steps and the profiles. */
export function namedNeeds(plan: Plan): AgentNeed[] {
  const need: AgentNeed[] = []
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
  return need
}
