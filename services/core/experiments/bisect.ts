/**
 * `benchstream experiment bisect`, the pure part: which version runs next,
 * what a step's comparison says of it, each step's plan, and the chain as a
 * person reads it. services/experiments/bisect.ts runs the steps.
 *
 * The versions from good to bad are in order (versions.ts). The ends are run
 * first, as one step: bad against good must be a regression on the figures
 * followed (those named, or every figure, of which the ones that regressed
 * are then followed), or there is nothing to bisect and it says so. Then each
 * step runs the version in the middle of the range still open against the
 * good one (both in one experiment, interleaved, with the plan's repetitions),
 * and its comparison's decisions (services/core/compare/sequential.ts) keep a
 * half: a regression on a followed figure is bad; every followed figure
 * decided otherwise (improvement, no change proven, at target) is good;
 * anything else is undecided, and the bisection stops there with the range it
 * could not narrow, never guessing. ceil(log2(n)) steps for n versions after
 * good, the ends aside.
 *
 * Everything here is a function of the stored state, so a bisection resumed
 * after a crash takes the same steps.
 */
import type { BisectState, BisectStep, FigureDecision } from '../../../schemas/experiment-decisions.v1.js'
import type { Plan, Setup } from '../../../schemas/experiment-plan.v1.js'
import type { ComparisonRecord, ExperimentState } from '../../../schemas/experiment-state.v1.js'
import { namesFigure } from '../compare/sequential.js'
import { compareVersions } from './versions.js'
import { checkPlan } from './plan.js'

/** What `${version}` in a setup's strings becomes. */
export const VERSION_PLACEHOLDER = '${version}'

export type NextStep =
  | { kind: 'ends' }
  | { kind: 'try'; version: string }
  | { kind: 'stop'; result: NonNullable<BisectState['result']> }

/** A bisection's own state: no cells (each step is an experiment of its own), the chain empty. */
export function newBisect(
  id: string,
  plan: Plan,
  nowMs: number,
  o: { good: string; bad: string; versions: string[]; source: string; named: string[] },
): ExperimentState {
  return {
    id,
    name: plan.name,
    status: 'running',
    plan,
    createdAtMs: nowMs,
    updatedAtMs: nowMs,
    version: 0,
    cells: [],
    steps: [],
    comparisons: [],
    notes: [],
    currentRun: null,
    bisect: {
      good: o.good,
      bad: o.bad,
      source: o.source,
      versions: o.versions,
      named: o.named,
      figures: o.named,
      chain: [],
      result: null,
    },
  }
}

/** The experiment id of step k (0: the ends). */
export function stepIdOf(bisectId: string, k: number): string {
  return `${bisectId}-s${k}`
}

/** The longest id a bisection may have, so that its steps' ids stay within the id rule's 64 characters. */
export const MAX_BISECT_ID = 58

/** The next step from the chain so far (pure: a resumed bisection takes the same one). */
export function nextStep(b: BisectState): NextStep {
  const v = b.versions
  const ends = b.chain[0]
  if (ends === undefined || ends.outcome === 'running') return { kind: 'ends' }
  const stop = (
    kind: NonNullable<BisectState['result']>['kind'],
    message: string,
    lo?: string,
    hi?: string,
  ): NextStep => ({
    kind: 'stop',
    result: { kind, firstBad: hi ?? null, lastGood: lo ?? null, message },
  })
  if (ends.outcome === 'failed') return stop('failed', `the ends could not be compared: ${ends.reason}`)
  if (ends.outcome === 'good')
    return stop(
      'ends not confirmed',
      `bad ${b.bad} is not worse than good ${b.good}${followed(b)}: ${ends.reason}. Nothing to bisect`,
    )
  if (ends.outcome === 'undecided')
    return stop(
      'ends not confirmed',
      `bad ${b.bad} and good ${b.good} could not be told apart${followed(b)} after ` +
        `${ends.runs.baseline} + ${ends.runs.candidate} runs: ${ends.reason}. Nothing to bisect: allow more ` +
        'repetitions (repetitions: { min, max }), longer runs, or follow a figure that changes more (--figure)',
    )
  let lo = 0
  let hi = v.length - 1
  for (const s of b.chain.slice(1)) {
    const i = v.indexOf(s.version)
    if (s.outcome === 'running') return { kind: 'try', version: s.version }
    if (s.outcome === 'bad') hi = i
    else if (s.outcome === 'good') lo = i
    else if (s.outcome === 'failed')
      return stop('failed', `${s.version} could not be compared: ${s.reason}`, v[lo], v[hi])
    else
      return stop(
        'undecided',
        `could not narrow ${v[lo]} .. ${v[hi]}: ${s.version} stays undecided after ${s.runs.baseline} + ` +
          `${s.runs.candidate} runs (${s.reason}). The first bad version is after ${v[lo]} and at or before ` +
          `${v[hi]}; not guessed`,
        v[lo],
        v[hi],
      )
  }
  if (hi - lo <= 1)
    return stop(
      'found',
      `first bad version: ${v[hi]} (last good ${v[lo]}), after ${b.chain.length - 1} steps beside the ends`,
      v[lo],
      v[hi],
    )
  return { kind: 'try', version: v[lo + Math.floor((hi - lo) / 2)]! }
}

function followed(b: BisectState): string {
  return b.figures.length === 0 ? '' : ` on ${b.figures.join(', ')}`
}

// ---------------------------------------------------------------- a step's plan

/** What the plan's versions.from changes for a version: every entry at or before it, in order, the later winning. */
export function changesFor(
  plan: Plan,
  version: string,
): {
  properties: Record<string, string | number | boolean>
  env: Record<string, string>
  labels: Record<string, string>
} {
  const from = plan.versions?.from ?? {}
  const list = plan.versions?.list
  const before = (key: string): boolean =>
    list !== undefined ? list.indexOf(key) <= list.indexOf(version) : compareVersions(key, version) <= 0
  const keys = Object.keys(from)
    .filter(before)
    .sort((x, y) => (list !== undefined ? list.indexOf(x) - list.indexOf(y) : compareVersions(x, y)))
  const out = { properties: {}, env: {}, labels: {} }
  for (const k of keys) {
    Object.assign(out.properties, from[k]!.properties ?? {})
    Object.assign(out.env, from[k]!.env ?? {})
    Object.assign(out.labels, from[k]!.labels ?? {})
  }
  return out
}

/** Every string in a value with `${version}` replaced. */
function render<T>(value: T, version: string): T {
  if (typeof value === 'string') return value.split(VERSION_PLACEHOLDER).join(version) as T
  if (Array.isArray(value)) return value.map((x: unknown) => render(x, version)) as T
  if (value !== null && typeof value === 'object')
    return Object.fromEntries(Object.entries(value).map(([k, x]) => [k, render(x, version)])) as T
  return value
}

/** A version's setup: the template rendered, named by the version, with what changes from which version on. */
export function versionSetup(plan: Plan, template: Setup, version: string): Setup {
  const s = render(template, version)
  const c = changesFor(plan, version)
  const steps =
    s.steps === undefined
      ? undefined
      : Object.fromEntries(
          Object.entries(s.steps).map(([phase, step]) => [
            phase,
            step === undefined ? step : { ...step, env: { ...step.env, ...c.env } },
          ]),
        )
  return {
    ...s,
    name: version,
    labels: { version, ...s.labels, ...c.labels },
    ...(Object.keys({ ...s.properties, ...c.properties }).length === 0
      ? {}
      : { properties: { ...s.properties, ...c.properties } }),
    ...(steps === undefined ? {} : { steps }),
  }
}

/**
 * The plan of one step: the good version (the first setup) against the one tried (the second setup, or the first
 * again), compared with each other, following the bisection's figures. Checked whole: a template that renders into
 * something the plan format does not allow is BS_ERR_PLAN, naming the version.
 */
export function stepPlan(plan: Plan, b: BisectState, tried: string): Plan {
  const { versions: _versions, ...rest } = plan
  const [first, second] = plan.setups
  const figures = b.figures.length > 0 ? b.figures : undefined
  return checkPlan(
    {
      ...rest,
      ...(figures === undefined ? {} : { figures }),
      setups: [versionSetup(plan, first!, b.good), versionSetup(plan, second ?? first!, tried)],
      compare: [{ baseline: b.good, candidate: tried }],
    },
    `the plan of ${tried} against ${b.good}`,
  )
}

// ---------------------------------------------------------------- a step's outcome

type Outcome = Pick<BisectStep, 'outcome' | 'runs' | 'figure' | 'changePercent' | 'pValue' | 'verdict' | 'reason'>

/**
 * What a finished step says of the version tried: bad (a followed figure regressed), good (every followed figure
 * decided otherwise), undecided, or failed (no comparison: its runs failed, a named figure is in none).
 */
export function classifyStep(step: ExperimentState, figures: readonly string[]): Outcome {
  const comparisons = step.comparisons
  const runs = {
    baseline: Math.min(...comparisons.map((c) => c.baselineRuns.length), Number.MAX_SAFE_INTEGER),
    candidate: Math.min(...comparisons.map((c) => c.candidateRuns.length), Number.MAX_SAFE_INTEGER),
  }
  const none = { runs: { baseline: 0, candidate: 0 }, figure: null, changePercent: null, pValue: null }
  const broken = comparisons.find((c) => c.error !== undefined || c.decisions === undefined)
  if (comparisons.length === 0 || broken !== undefined)
    return {
      ...none,
      outcome: 'failed',
      verdict: 'not compared',
      reason: (broken?.error ?? step.notes.at(-1) ?? `the step ended ${step.status} without a comparison`).slice(
        0,
        4000,
      ),
    }
  const unknown = [...new Set(comparisons.flatMap((c) => c.decisions!.unknown))]
  if (unknown.length > 0)
    return {
      ...none,
      runs,
      outcome: 'failed',
      verdict: 'not compared',
      reason: `no comparison has ${unknown.join(', ')}`,
    }
  const rows = comparisons.flatMap((c) =>
    c.decisions!.figures.filter((f) => figures.length === 0 || figures.some((n) => namesFigure(n, f))),
  )
  const of = (f: FigureDecision | undefined, outcome: Outcome['outcome'], reason: string): Outcome => ({
    outcome,
    runs,
    figure: f === undefined ? null : `${f.workload}:${f.label}`,
    changePercent: f?.changePercent ?? null,
    pValue: f?.pValue ?? null,
    verdict: f?.decision ?? 'undecided',
    reason: reason.slice(0, 4000),
  })
  if (rows.length === 0) return of(undefined, 'failed', 'the comparison has none of the figures followed')
  const worst = rows
    .filter((f) => f.decision === 'regression')
    .sort((x, y) => Math.abs(y.changePercent ?? 0) - Math.abs(x.changePercent ?? 0))[0]
  if (worst !== undefined) return of(worst, 'bad', `${worst.label}: ${worst.reason}`)
  const open = rows.filter((f) => f.decision === 'undecided')
  if (open.length === 0) return of(rows[0], 'good', rows.map((f) => `${f.label}: ${f.decision}`).join('; '))
  return of(open[0], 'undecided', open.map((f) => `${f.label}: ${f.reason}`).join('; '))
}

/** The figures the ends found regressed, named with their workload: what the steps follow when none is named. */
export function regressedFigures(step: ExperimentState): string[] {
  return [
    ...new Set(
      step.comparisons.flatMap((c: ComparisonRecord) =>
        (c.decisions?.figures ?? []).filter((f) => f.decision === 'regression').map((f) => `${f.workload}:${f.label}`),
      ),
    ),
  ].slice(0, 64)
}

// ---------------------------------------------------------------- the chain as text

const fmtP = (p: number | null): string => (p === null ? '–' : p < 0.001 ? p.toExponential(1) : p.toFixed(3))
const fmtChange = (x: number | null): string => (x === null ? '–' : `${x >= 0 ? '+' : ''}${x.toFixed(1)}%`)

/** The chain: one line per step (version, runs, change, p, verdict), then the result. */
export function formatChain(state: ExperimentState): string {
  const b = state.bisect
  if (b === undefined) return ''
  const rows = b.chain.map((s, k) => [
    k === 0 ? 'ends' : String(k),
    s.version,
    `${s.runs.baseline} + ${s.runs.candidate}`,
    fmtChange(s.changePercent),
    fmtP(s.pValue),
    s.outcome === 'running' ? 'running' : `${s.outcome} (${s.verdict})`,
  ])
  const head = ['step', 'version', 'runs', 'change', 'p', 'verdict']
  const widths = head.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i]!.length)))
  const line = (r: string[]): string =>
    r
      .map((x, i) => x.padEnd(widths[i]!))
      .join('  ')
      .trimEnd()
  const out = [
    `bisection ${state.id} (${state.name}): ${state.status}; good ${b.good}, bad ${b.bad}, ${b.versions.length} ` +
      `versions (${b.source})${b.figures.length === 0 ? '' : `; following ${b.figures.join(', ')}`}`,
    line(head),
    ...rows.map(line),
  ]
  for (const s of b.chain)
    if (s.outcome !== 'running') out.push(`  ${s.version}: ${s.reason.split('\n')[0]!.slice(0, 400)} [${s.experiment}]`)
  if (b.result !== null) out.push(`${b.result.kind === 'found' ? '' : `${b.result.kind}: `}${b.result.message}`)
  for (const n of state.notes.slice(-5)) out.push(`note: ${n}`)
  return out.join('\n') + '\n'
}
