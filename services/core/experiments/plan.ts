/**
 * An experiment plan, checked whole before anything starts (schemas/experiments.v1.ts
 * Plan): every problem at once, each naming its field and what is allowed,
 * then the rules a schema cannot say (names unique, comparisons naming real
 * setups, a run length). Pure: the plan's text comes in, a Plan or a
 * BS_ERR_PLAN goes out.
 */
import { Plan, type Setup } from '../../../schemas/experiments.v1.js'
import { BenchstreamError } from '../errors.js'
import { closest } from '../suggest.js'
import { schemaProblems } from '../validation.js'
import { pePlanProblems } from './pe-plan.js'

/** Problems listed in one error at most; the rest are counted. */
const MAX_LISTED = 40

/** Defaults of the optional fields, the ones a reader of the plan needs to know. */
export const PLAN_DEFAULTS = {
  driver: 'benchstream',
  threads: 1,
  warmup: 0,
  retries: 1,
  order: 'interleaved',
  clockBoundMs: 50,
  agentWaitS: 30,
  agentTimeoutS: 5,
  alpha: 0.05,
  minEffect: 0.01,
} as const

/** The plan's pairs to compare: as written, or the first setup against each other one. */
export function comparePairs(plan: Plan): Array<{ baseline: string; candidate: string }> {
  if (plan.compare !== undefined) return plan.compare
  const [first, ...rest] = plan.setups
  return rest.map((s) => ({ baseline: first!.name, candidate: s.name }))
}

/** The workload load phase: as written, or none for the memory binding (each client loads its own store). */
export function loadMode(plan: Plan): 'setup' | 'run' | 'none' {
  return plan.load ?? (plan.binding === 'memory' ? 'none' : 'setup')
}

/** The name a workload goes by: as written, or its file's last part. */
export function workloadName(w: Plan['workloads'][number]): string {
  return w.name ?? w.file.slice(w.file.lastIndexOf('/') + 1)
}

/**
 * The plan from a parsed file (YAML or JSON object), checked. `source` names
 * the file in messages. Throws BS_ERR_PLAN listing every problem.
 */
export function checkPlan(value: unknown, source: string): Plan {
  const problems = schemaProblems(Plan, value, '', 'an experiment plan')
  if (problems.length === 0) problems.push(...semanticProblems(value as Plan))
  if (problems.length > 0) {
    const listed = problems.slice(0, MAX_LISTED)
    const more = problems.length > listed.length ? `\n  ... and ${problems.length - listed.length} more` : ''
    throw new BenchstreamError('BS_ERR_PLAN', `${source} is not a valid plan:\n  ${listed.join('\n  ')}${more}`)
  }
  return value as Plan
}

function semanticProblems(plan: Plan): string[] {
  const out: string[] = []
  const dup = (what: string, names: string[], field: (i: number) => string): void => {
    const seen = new Map<string, number>()
    names.forEach((n, i) => {
      if (seen.has(n))
        out.push(`${field(i)}: ${what} ${JSON.stringify(n)} is given twice (also ${field(seen.get(n)!)})`)
      else seen.set(n, i)
    })
  }
  dup(
    'setup',
    plan.setups.map((s) => s.name),
    (i) => `setups[${i}].name`,
  )
  dup('workload', plan.workloads.map(workloadName), (i) => `workloads[${i}]`)
  const setups = plan.setups.map((s) => s.name)
  ;(plan.compare ?? []).forEach((p, i) => {
    for (const side of ['baseline', 'candidate'] as const) {
      const name = p[side]
      if (!setups.includes(name)) {
        const c = closest(name, setups)
        out.push(
          `compare[${i}].${side}: no setup is named ${JSON.stringify(name)}` +
            `${c === undefined ? '' : `; did you mean ${c}?`}; setups: ${setups.join(', ')}`,
        )
      }
    }
    if (p.baseline === p.candidate) out.push(`compare[${i}]: a setup compared with itself (${p.baseline})`)
  })
  if (plan.compare === undefined && plan.setups.length < 2)
    out.push('setups: one setup has nothing to be compared with; add a setup, or compare: [] to run without comparing')
  if ((plan.seconds === undefined) === (plan.operations === undefined))
    out.push('seconds, operations: give exactly one: the length of each run in seconds, or its operations')
  const clients = typeof plan.clients === 'number' ? plan.clients : plan.clients.length
  if (plan.operations !== undefined && plan.operations < clients)
    out.push(`operations: ${plan.operations} operations cannot be split over ${clients} clients`)
  if (plan.driver === 'ycsb' && plan.binding === 'memory')
    out.push("binding: memory is Benchstream's own binding; YCSB (driver: ycsb) has no memory binding")
  out.push(...pePlanProblems(plan))
  if (plan.load === 'none' && plan.setups.some((s) => s.steps?.load !== undefined))
    out.push('load: none, but a setup has a load step: drop one of them')
  plan.setups.forEach((s: Setup, i) => {
    for (const [phase, step] of Object.entries(s.steps ?? {}))
      if (
        step !== undefined &&
        step.ready !== undefined &&
        Object.keys(step.ready).filter((k) => k !== 'timeoutS').length === 0
      )
        out.push(`setups[${i}].steps.${phase}.ready: name what to wait for: tcp, http or command`)
  })
  return out
}
