/**
 * What an experiment decided, pure: the one headline comparison.md, the
 * CLI (`experiment run|resume|status`) and the experiment page show, and
 * what the exit code of `experiment run` follows. "No regression found" only
 * when every run of the matrix is complete and every comparison tested every
 * figure it shows (services/core/compare/decision.ts); otherwise undecided,
 * and why: "Undecided: 3 of 8 runs failed; SCAN p50 +14,928% not testable
 * (n = 2 + 3)". A regression found is said whatever else is undecided, with
 * what is.
 */
import type { ComparisonRecord, ExperimentState } from '../../../schemas/experiment-state.v1.js'
import type { ExperimentDecision } from '../../../schemas/experiments-api.v1.js'
import { counts } from './state.js'

/** Untested figures named per comparison; the rest are counted. */
const NAMED_UNTESTED = 3

export function decideExperiment(state: ExperimentState): ExperimentDecision {
  const c = counts(state)
  const n = state.cells.length
  if (state.status === 'running')
    return decision(
      'running',
      'Running:',
      `${c.done} of ${n} runs done${c.failed > 0 ? `, ${c.failed} failed` : ''}; nothing is decided before the end`,
      [],
      [],
    )
  const undecided: string[] = []
  if (c.failed > 0) undecided.push(`${c.failed} of ${n} runs failed`)
  const notRun = c.left + c.running
  if (notRun > 0)
    undecided.push(
      `${notRun} of ${n} runs not run` +
        (state.status === 'interrupted' ? ` (interrupted: benchstream experiment resume ${state.id})` : ''),
    )
  const many = state.comparisons.length > 1
  for (const x of state.comparisons) undecided.push(...comparisonUndecided(x, many))
  const regressions = state.comparisons
    .filter((x) => x.regressions.length > 0)
    .map((x) => `${pairName(x)}: ${x.regressions.join(', ')}`)
  if (regressions.length > 0)
    return decision(
      'regression',
      'Regressions:',
      regressions.join('; ') + (undecided.length === 0 ? '' : `. Undecided beyond them: ${undecided.join('; ')}`),
      regressions,
      undecided,
    )
  if (undecided.length > 0) return decision('undecided', 'Undecided:', undecided.join('; '), [], undecided)
  if (state.comparisons.length === 0)
    return decision(
      'nothing compared',
      'Nothing compared:',
      `all ${n} runs complete; the plan compares nothing`,
      [],
      [],
    )
  const k = state.comparisons.length
  return decision(
    'no regression',
    'No regression found:',
    `all ${n} runs complete, every figure of the ${k === 1 ? 'comparison' : `${k} comparisons`} tested`,
    [],
    [],
  )
}

/** `B vs A, workloada`. */
function pairName(x: ComparisonRecord): string {
  return `${x.candidate} vs ${x.baseline}, ${x.workload}`
}

/** Why one comparison is undecided: not made, figures not testable (by their n), workloads not compared. */
function comparisonUndecided(x: ComparisonRecord, many: boolean): string[] {
  if (x.error !== undefined) return [`${pairName(x)} not compared (${x.error.split('\n')[0]!.slice(0, 300)})`]
  const out: string[] = []
  const prefix = many ? `${pairName(x)}: ` : ''
  const byN = new Map<string, string[]>()
  for (const u of x.untested ?? []) byN.set(u.n, [...(byN.get(u.n) ?? []), u.figure])
  for (const [n, figures] of byN) {
    const more = figures.length > NAMED_UNTESTED ? ` and ${figures.length - NAMED_UNTESTED} more` : ''
    out.push(`${prefix}${figures.slice(0, NAMED_UNTESTED).join(', ')}${more} not testable (n = ${n})`)
  }
  for (const w of x.notCompared ?? []) out.push(`${prefix}not compared: ${w}`)
  return out
}

function decision(
  outcome: ExperimentDecision['outcome'],
  lead: string,
  text: string,
  regressions: string[],
  undecided: string[],
): ExperimentDecision {
  return { outcome, lead, text, headline: `${lead} ${text}`, regressions, undecided }
}
