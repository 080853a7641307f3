/**
 * Repetitions until decided, for the coordinator (app.ts Conductor): after
 * every round of runs, a look at each workload's comparisons at the share of
 * alpha the round gets (services/core/compare/sequential.ts), and one more
 * interleaved round for a workload whose figures are not all decided, until
 * `max` repetitions or the time budget. The looks are kept in the state, and a
 * look is a function of the complete runs and the round alone, so a resumed
 * coordinator looks again where the last one stopped and comes to the same.
 *
 * The decisions of every comparison (sequential or not), and the section of
 * comparison.md that says how many runs each setup took and why it stopped.
 */
import type { ReleaseComparison } from '../../schemas/compare-api.v1.js'
import type { Decisions, Look, StopReason } from '../../schemas/experiment-decisions.v1.js'
import type { ExperimentState } from '../../schemas/experiment-state.v1.js'
import { decideFigures, figuresOf, lookAlpha } from '../core/compare/sequential.js'
import { roundCells } from '../core/experiments/matrix.js'
import { comparePairs, PLAN_DEFAULTS, sequentialDesign, workloadName } from '../core/experiments/plan.js'
import { cellStatus, comparedRuns } from '../core/experiments/state.js'
import type { ExperimentRuns } from '../core/ports/experiment-runs.js'

/** The round a workload is at: its largest repetition (warm-up runs aside). */
export function roundOf(state: ExperimentState, workload: string): number {
  return state.cells.reduce((r, c) => (c.workload === workload && !c.warmup ? Math.max(r, c.repetition) : r), 0)
}

/** The level and test of a workload's comparisons now: its round's share of alpha (sequential), else the plan's. */
export function comparisonLevel(
  state: ExperimentState,
  workload: string,
): { alpha: number; round: number; test: 'auto' | 'welch' } {
  const design = sequentialDesign(state.plan)
  const round = roundOf(state, workload)
  if (design === undefined || round < design.min)
    return { alpha: state.plan.alpha ?? PLAN_DEFAULTS.alpha, round, test: 'auto' }
  return { alpha: lookAlpha(design, Math.min(round, design.max)), round, test: 'welch' }
}

/** The newest look at a workload. */
function lastLook(state: ExperimentState, workload: string): Look | undefined {
  return (state.looks ?? []).filter((l) => l.workload === workload).at(-1)
}

/** A comparison's decisions, with why its repetitions stopped (`fixed` without a sequential design). */
export function decisionsOf(state: ExperimentState, workload: string, c: ReleaseComparison): Decisions {
  const sequential = sequentialDesign(state.plan) !== undefined
  const stop: StopReason = sequential ? (lastLook(state, workload)?.stop ?? 'interrupted') : 'fixed'
  const figures = figuresOf(state.plan.figures, workload)
  return decideFigures(c, { ...(figures === undefined ? {} : { figures }), round: roundOf(state, workload), stop })
}

export interface LookOutcome {
  /** Cells of a next round, added to the state. */
  added: number
  /** What to note: comparisons that failed, figures named that no comparison has. */
  notes: string[]
}

/**
 * Looks at every workload that has not stopped: compares each pair over its complete runs at the round's level with
 * Welch's t, decides, and adds the next round's cells where something is undecided and neither max nor the budget
 * is reached. Called when every cell is settled.
 */
export async function look(state: ExperimentState, runs: ExperimentRuns, now: () => number): Promise<LookOutcome> {
  const design = sequentialDesign(state.plan)
  const out: LookOutcome = { added: 0, notes: [] }
  if (design === undefined) return out
  const plan = state.plan
  const budgetMs = typeof plan.repetitions === 'number' ? undefined : plan.repetitions.budgetS
  state.looks ??= []
  for (const w of plan.workloads.map(workloadName)) {
    const round = roundOf(state, w)
    const last = lastLook(state, w)
    if (last !== undefined && (last.stop !== null || last.round >= round)) continue
    // A round is looked at once all of its cells are settled (done, or out of attempts).
    const open = state.cells.some((c) => c.workload === w && ['left', 'running'].includes(cellStatus(c, plan)))
    if (open) continue
    const alpha = lookAlpha(design, round)
    const names = figuresOf(plan.figures, w)
    if (names !== undefined && names.length === 0) {
      state.looks.push({
        workload: w,
        round,
        alpha,
        atMs: now(),
        decided: 0,
        undecided: 0,
        stop: 'decided',
        detail: 'no figure of this workload is named',
      })
      continue
    }
    let decided = 0
    let undecided = 0
    const unknown = new Set<string>()
    const problems: string[] = []
    // A setup with no complete run after a whole round (its start step failed, its runs all failed): more rounds
    // would only run the other setups again.
    let noRuns = false
    for (const pair of comparePairs(plan)) {
      const a = comparedRuns(state, pair.baseline, w)
      const b = comparedRuns(state, pair.candidate, w)
      if (a.length === 0 || b.length === 0) {
        problems.push(
          `${pair.baseline} vs ${pair.candidate}: ` +
            `no complete run of ${a.length === 0 ? pair.baseline : pair.candidate}`,
        )
        undecided++
        noRuns = true
        continue
      }
      try {
        const c = await runs.compare(`runs:${a.join(',')}`, `runs:${b.join(',')}`, {
          force: true,
          alpha,
          test: 'welch',
          ...(plan.minEffect === undefined ? {} : { minEffect: plan.minEffect }),
        })
        const d = decideFigures(c, {
          ...(names === undefined ? {} : { figures: names }),
          round,
          stop: 'decided',
          detectable: false,
        })
        for (const u of d.unknown) unknown.add(u)
        for (const f of d.figures)
          if (f.decision === 'undecided') undecided++
          else decided++
      } catch (err) {
        problems.push(`${pair.baseline} vs ${pair.candidate}: ${(err as Error).message.split('\n')[0]!.slice(0, 300)}`)
        undecided++
      }
    }
    // After the comparisons: the time they took counts against the budget too.
    const nowMs = now()
    let stop: StopReason | null = null
    if (unknown.size > 0) stop = 'unknown figure'
    else if (noRuns) stop = 'no runs'
    else if (undecided === 0) stop = 'decided'
    else if (round >= design.max) stop = 'max'
    else if (budgetMs !== undefined && nowMs - state.createdAtMs >= budgetMs * 1000) stop = 'budget'
    const detail = [
      ...(unknown.size > 0 ? [`no comparison has the figures ${[...unknown].join(', ')}`] : []),
      ...problems,
    ].join('; ')
    state.looks.push({
      workload: w,
      round,
      alpha,
      atMs: nowMs,
      decided,
      undecided,
      stop,
      ...(detail === '' ? {} : { detail: detail.slice(0, 2000) }),
    })
    if (detail !== '') out.notes.push(`look at ${w} after ${round} repetitions: ${detail}`)
    if (stop === null) {
      const cells = roundCells(plan, state.id, w, round + 1)
      state.cells.push(...cells)
      out.added += cells.length
    }
  }
  return out
}

const STOP_TEXT: Record<StopReason, string> = {
  decided: 'every figure decided',
  max: 'max repetitions reached',
  budget: 'time budget spent',
  fixed: 'fixed repetitions',
  'unknown figure': 'a named figure is in no comparison',
  'no runs': 'a setup has no complete run',
  interrupted: 'interrupted',
}

/** Why a workload's repetitions stopped, in words. */
export function stopText(stop: StopReason): string {
  return STOP_TEXT[stop]
}

/**
 * The section of comparison.md on repetitions until decided: per comparison, the runs each setup took, why they
 * stopped, the level of the last look, and each figure decided or not (undecided ones with what they could have
 * found). Empty without a sequential design or a named figure.
 */
export function decisionsMarkdown(state: ExperimentState): string[] {
  const design = sequentialDesign(state.plan)
  const withDecisions = state.comparisons.filter((c) => c.decisions !== undefined)
  if (withDecisions.length === 0 || (design === undefined && state.plan.figures === undefined)) return []
  const lines = ['', design === undefined ? '## Decisions' : '## Repetitions until decided', '']
  if (design !== undefined)
    lines.push(
      `${design.min} to ${design.max} repetitions, a look after each round, alpha ${design.alpha} spent over the ` +
        `looks (${design.spending === 'pocock' ? 'Pocock' : "O'Brien-Fleming"}-type; docs/design/sequential.md).`,
      '',
    )
  lines.push(
    '| baseline | candidate | workload | runs | stopped | level | decided | undecided |',
    '| :--- | :--- | :--- | ---: | :--- | ---: | ---: | :--- |',
  )
  for (const c of withDecisions) {
    const d = c.decisions!
    const open = d.figures.filter((f) => f.decision === 'undecided')
    lines.push(
      `| ${c.baseline} | ${c.candidate} | ${c.workload} | ${c.baselineRuns.length} + ${c.candidateRuns.length} | ` +
        `${stopText(d.stop)} | ${d.alpha.toPrecision(2)} | ` +
        `${d.figures.length - open.length} of ${d.figures.length} | ` +
        `${open.map((f) => `${f.label}: ${f.reason}`).join('; ') || '–'} |`,
    )
  }
  const named = withDecisions.flatMap((c) =>
    state.plan.figures === undefined ? [] : c.decisions!.figures.map((f) => ({ c, f })),
  )
  if (named.length > 0) {
    lines.push('', '| comparison | figure | decision | why |', '| :--- | :--- | :--- | :--- |')
    for (const { c, f } of named)
      lines.push(`| ${c.candidate} vs ${c.baseline}, ${c.workload} | ${f.label} | ${f.decision} | ${f.reason} |`)
  }
  const unknown = [...new Set(withDecisions.flatMap((c) => c.decisions!.unknown))]
  if (unknown.length > 0) lines.push('', `**Named figures no comparison has:** ${unknown.join(', ')}`)
  return lines
}
