/**
 * An experiment plan, checked whole before anything starts (schemas/experiment-plan.v1.ts
 * Plan): every problem at once, each naming its field and what is allowed,
 * then the rules a schema cannot say (names unique, comparisons naming real
 * setups, a run length). Pure: the plan's text comes in, a Plan or a
 * BS_ERR_PLAN goes out.
 */
import { Plan, type Setup } from '../../../schemas/experiment-plan.v1.js'
import type { SequentialDesign } from '../compare/sequential.js'
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

/** The repetitions of each setup and workload before the first look (all of them, without a sequential design). */
export function firstRepetitions(plan: Plan): number {
  return typeof plan.repetitions === 'number' ? plan.repetitions : plan.repetitions.min
}

/** The sequential design of `repetitions: { min, max }`; undefined for a fixed number. */
export function sequentialDesign(plan: Plan): SequentialDesign | undefined {
  const r = plan.repetitions
  if (typeof r === 'number') return undefined
  return { alpha: plan.alpha ?? PLAN_DEFAULTS.alpha, min: r.min, max: r.max, spending: r.spending ?? 'obrien-fleming' }
}

/** The repetitions as a person reads them: `4`, or `3 to 12 until decided`. */
export function repetitionsText(plan: Plan): string {
  const r = plan.repetitions
  return typeof r === 'number' ? String(r) : `${r.min} to ${r.max} until decided`
}

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

function repetitionProblems(plan: Plan): string[] {
  const r = plan.repetitions
  if (typeof r === 'number') return []
  const out: string[] = []
  if (r.min > r.max) out.push(`repetitions: min ${r.min} is more than max ${r.max}`)
  if ((plan.order ?? PLAN_DEFAULTS.order) === 'grouped')
    out.push(
      'repetitions: { min, max } adds a round of every setup after each look, so it needs order: interleaved ' +
        '(grouped runs a setup to its end before the next starts); give a number of repetitions for grouped',
    )
  return out
}

/** A bisection's versions (benchstream experiment bisect): where they come from, and what changes from which on. */
function versionProblems(plan: Plan): string[] {
  const v = plan.versions
  if (v === undefined) return []
  const out: string[] = []
  if ((v.list === undefined) === (v.maven === undefined))
    out.push('versions: give exactly one of list (the versions, oldest first) and maven (groupId:artifactId)')
  if (v.prereleases !== undefined && v.maven === undefined)
    out.push('versions.prereleases: only for maven (a list has exactly the versions it names)')
  if (v.list !== undefined) {
    const seen = new Set<string>()
    for (const x of v.list) {
      if (seen.has(x)) out.push(`versions.list: ${x} is given twice`)
      seen.add(x)
    }
    for (const k of Object.keys(v.from ?? {}))
      if (!seen.has(k)) {
        const c = closest(k, v.list)
        out.push(`versions.from: ${k} is not in versions.list${c === undefined ? '' : `; did you mean ${c}?`}`)
      }
  }
  if (plan.setups.length > 2)
    out.push(
      'setups: a bisection has one setup (run for the good version and for the one tried) or two (the first for ' +
        `the good version, the second for the one tried: e.g. on other ports); this plan has ${plan.setups.length}`,
    )
  if (plan.compare !== undefined)
    out.push('compare: a bisection compares each version tried with the good one; leave compare out')
  return out
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
  if (plan.compare === undefined && plan.setups.length < 2 && plan.versions === undefined)
    out.push('setups: one setup has nothing to be compared with; add a setup, or compare: [] to run without comparing')
  out.push(...repetitionProblems(plan), ...versionProblems(plan))
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
