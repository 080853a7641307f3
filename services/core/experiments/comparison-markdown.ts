/**
 * comparison.md, the experiment's report in Markdown: the headline of what was
 * decided (decideExperiment), the matrix's outcome, each comparison with its
 * files, the runs not compared, and – with repetitions until decided or named
 * figures – how many runs each setup took and why they stopped. A function of
 * the stored state alone, so the coordinator writes it and a reader of the
 * state could write the same.
 */
import type { StopReason } from '../../../schemas/experiment-decisions.v1.js'
import type { ComparisonRecord, ExperimentState } from '../../../schemas/experiment-state.v1.js'
import { decideExperiment } from './decision.js'
import { repetitionsText, sequentialDesign } from './plan.js'
import { counts } from './state.js'

/** A comparison's regressions, or – when none, or "none of the tested; N not testable" when undecided. */
function regressionsCell(x: ComparisonRecord): string {
  const untested = x.untested?.length ?? 0
  const notCompared = x.notCompared?.length ?? 0
  const undecided = [
    ...(untested > 0 ? [`${untested} figure${untested === 1 ? '' : 's'} not testable`] : []),
    ...(notCompared > 0 ? [`not compared: ${x.notCompared!.join('; ')}`] : []),
  ]
  if (x.regressions.length > 0) return [x.regressions.join(', '), ...undecided].join('; ')
  return undecided.length === 0 ? '–' : `undecided: ${undecided.join('; ')}`
}

/**
 * The experiment's summary in Markdown: the headline of what was decided (decideExperiment), the matrix's outcome,
 * each comparison with its file, the runs not compared.
 */
export function experimentMarkdown(state: ExperimentState): string {
  const c = counts(state)
  const lines = [
    `# Experiment \`${state.id}\` (${state.name})`,
    '',
    `${c.done} of ${state.cells.length} runs complete` +
      (c.failed > 0 ? `, ${c.failed} failed` : '') +
      `; setups ${state.plan.setups.map((s) => `\`${s.name}\``).join(', ')}; ` +
      (`${repetitionsText(state.plan)} repetitions; clients ` +
        `per run: ${typeof state.plan.clients === 'number' ? state.plan.clients : state.plan.clients.join(', ')}.`),
    '',
  ]
  const d = decideExperiment(state)
  lines.push(
    `**${d.lead}** ${d.text}.`,
    '',
    '| baseline | candidate | workload | runs | regressions | improvements | details |',
    '| :--- | :--- | :--- | ---: | :--- | :--- | :--- |',
  )
  for (const x of state.comparisons)
    lines.push(
      `| ${x.baseline} | ${x.candidate} | ${x.workload} | ${x.baselineRuns.length} + ${x.candidateRuns.length} | ` +
        `${x.error !== undefined ? `not compared: ${x.error.split('\n')[0]}` : regressionsCell(x)} | ` +
        `${x.improvements.join(', ') || '–'} | ${x.files
          .filter((f) => f.endsWith('.md'))
          .map((f) => `[${f.split('/').pop()}](${f.split('/').pop()})`)
          .join(' ')} |`,
    )
  const skews = state.cells.flatMap((cell) =>
    cell.attempts.filter((a) => a.state === 'done' && a.startSkewMs !== null).map((a) => a.startSkewMs!),
  )
  const offsets = state.cells.flatMap((cell) =>
    cell.attempts.filter((a) => a.maxClockOffsetMs !== null).map((a) => a.maxClockOffsetMs!),
  )
  if (skews.length > 0 || offsets.length > 0)
    lines.push(
      '',
      `Start skew between a run's clients: at most ${skews.length === 0 ? '–' : Math.max(...skews).toFixed(1)} ms; ` +
        `largest clock offset of a client: ${offsets.length === 0 ? '–' : Math.max(...offsets).toFixed(1)} ms.`,
    )
  const faults = state.cells.flatMap((cell) =>
    cell.attempts
      .filter((a) => a.state !== 'done' && a.state !== 'running')
      .map((a) => `${a.runId}: ${a.state}${a.reason === undefined ? '' : ` (${a.reason.split('\n')[0]})`}`),
  )
  if (faults.length > 0) lines.push('', '**Runs not compared:**', '', ...faults.map((f) => `- ${f}`))
  lines.push(...decisionsMarkdown(state))
  return lines.join('\n') + '\n'
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
