/**
 * A release comparison (release.ts) as text: a terminal table (aligned,
 * coloured when asked, i.e. on a TTY) or Markdown to paste into a release
 * email or a JIRA comment. Both carry the same lines: one line saying what
 * regressed, which runs each side had, how the samples were taken, setup
 * differences when forced, one table per workload (format.ts), and what the
 * verdicts mean. For a workload of summary runs (YCSB's reports as printed)
 * the Markdown table is the short one an email needs: throughput and the
 * percentiles YCSB printed (errors when there are any, and any other figure
 * with a verdict); the terminal and JSON keep every figure.
 */
import type { ComparedFigure, ProfileChanges, ReleaseComparison } from '../../../schemas/compare-api.v1.js'
import { decideComparison, figureChange, worseUntested } from './decision.js'
import { formatMarkdownTable, formatTerminalTable, type ComparisonRow } from './format.js'

export type TextFormat = 'terminal' | 'markdown'

/** Runs listed by name per side; more are counted. */
const LISTED_RUNS = 6

export function formatComparison(c: ReleaseComparison, format: TextFormat, options: { color?: boolean } = {}): string {
  const md = format === 'markdown'
  const code = (s: string): string => (md ? `\`${s}\`` : s)
  const bold = (s: string): string => (md ? `**${s}**` : s)
  const out: string[] = []
  out.push(
    md
      ? `### ${code(c.baseline.ref)} → ${code(c.candidate.ref)}`
      : `baseline ${c.baseline.ref} vs candidate ${c.candidate.ref}`,
    '',
    headline(c, md),
    '',
  )
  out.push(`${bold('baseline')}: ${runsText(c.baseline.runs)}${md ? '  ' : ''}`)
  out.push(`${bold('candidate')}: ${runsText(c.candidate.runs)}`)
  if (c.forced) {
    out.push(
      '',
      `${bold('Not comparable, compared with --force:')} ` +
        c.differences
          .map(
            (d) =>
              `${d.name} ${d.baseline.join('|')} → ${d.candidate.join('|')}` +
              (d.where.includes('between sides') ? '' : ` (${d.where.join(', ')})`),
          )
          .join('; '),
    )
  }
  if (c.unpaired.length > 0) out.push('', `Not compared: ${c.unpaired.join('; ')}`)
  for (const n of c.notes) out.push('', `${md ? '_' : ''}Note: ${n}.${md ? '_' : ''}`)
  let shortened = false
  for (const w of c.workloads) {
    const name = w.baseline === w.candidate ? w.baseline : `${w.baseline} vs ${w.candidate}`
    const rows = c.figures.filter((f) => f.workload === name)
    const reported = w.reportedRuns.baseline + w.reportedRuns.candidate
    const runs = w.baselineRuns.length + w.candidateRuns.length
    const origins =
      reported === 0
        ? ''
        : `${reported === runs ? 'summary runs' : `${reported} of ${runs} runs summary runs`} ` +
          `(${printedBy(w.reportedBy)} as printed), `
    out.push(
      '',
      `${md ? '#### ' : ''}${c.by === null ? 'workload' : c.by} ${code(name)}: ${origins}` +
        `${samplesText(rows, w.baselineRuns.length, w.candidateRuns.length, reported === runs)}` +
        throttleText(w.throttle),
      '',
    )
    const shown = md && reported > 0 ? rows.filter(emailRow) : rows
    shortened ||= shown.length < rows.length
    const table = shown.map(toRow)
    out.push(
      (md ? formatMarkdownTable(table) : formatTerminalTable(table, { color: options.color === true })).trimEnd(),
    )
  }
  const s = c.summary
  // Figures with the same value on every run of both sides (error counts of 0) are no test: counted apart.
  const equal = c.figures.filter((f) => f.verdict === 'no significant change' && f.pValue === null).length
  const counts = [
    `${s.regressions} regression${s.regressions === 1 ? '' : 's'}`,
    `${s.improvements} improvement${s.improvements === 1 ? '' : 's'}`,
    `${s.unchanged - equal} without significant change`,
  ]
  if (equal > 0) counts.push(`${equal} the same on every run`)
  if (s.atTarget > 0) counts.push(`${s.atTarget} at target`)
  if (s.belowTarget > 0) counts.push(`${s.belowTarget} below target`)
  if (s.insufficient > 0) counts.push(`${s.insufficient} not testable (too few runs or windows)`)
  out.push('', `${counts.join(', ')}.`)
  const anyReported = c.workloads.some((w) => w.reportedRuns.baseline + w.reportedRuns.candidate > 0)
  const anyEvents = c.workloads.some(
    (w) => w.reportedRuns.baseline + w.reportedRuns.candidate < w.baselineRuns.length + w.candidateRuns.length,
  )
  const legend = [
    `Each value is the median over the side's runs of the run's own figure (` +
      [
        anyEvents ? "percentiles from the run's merged histogram" : '',
        anyReported
          ? `a summary run's figures as ${printers(c.workloads.flatMap((w) => w.reportedBy ?? ['ycsb']))} ` +
            'printed them; a percentile of a run with several clients is the ' +
            'median of their printed ones, as the note says: percentiles of clients cannot be merged'
          : '',
      ]
        .filter((x) => x !== '')
        .join('; ') +
      '); ± x%: every run within x% of it.',
    c.tests === 0
      ? 'No figure could be tested.'
      : `Verdicts at α=${c.alpha} once the p-values of all ${c.tests} tested figures are adjusted together ` +
        `(Benjamini-Hochberg); changes under ${trim(c.minEffect * 100)}% are not called; ~ means no ` +
        `significant change.`,
  ]
  if (s.insufficient > 0)
    legend.push(
      'n = 1 + 1: not testable: one run a side cannot tell a change from run-to-run noise, so the values and ' +
        'their change are shown without a verdict (3 runs a side are tested).',
    )
  if (c.figures.some((f) => f.resolutionUs > 0))
    legend.push(
      'Percentiles YCSB printed in whole ms (before 0.4.0) are shown as printed, in ms (< 1 ms where it printed ' +
        '0), and have 1 ms resolution: a smaller change is never called.',
    )
  if (shortened)
    legend.push(
      'Summary-run tables show throughput, the printed percentiles and errors; avg, min, max and error rates ' +
        'are in `--format terminal` and `--format json`.',
    )
  out.push(`${md ? '_' : ''}${legend.join(' ')}${md ? '_' : ''}`)
  if (c.profiles !== null) out.push('', ...profileLines(c.profiles, md))
  return out.join('\n') + '\n'
}

/** Profile frames listed by total share (self share lists all of them). */
const TOTAL_FRAMES = 5
/** Longest frame name shown; the rest is cut from the left (the method is at the end). */
const FRAME_WIDTH = 90

/** Where the CPU time went: the frames whose share changed most, self then total. */
function profileLines(p: ProfileChanges, md: boolean): string[] {
  const out: string[] = []
  out.push(
    `${md ? '#### ' : ''}Where the CPU time went: ${p.baselineSamples.toLocaleString('en-US')} baseline ` +
      `and ${p.candidateSamples.toLocaleString('en-US')} candidate profile samples (all profiles of ` +
      `each side's runs, merged); frames by the change of their share, percentage points`,
    '',
  )
  const rows = (list: ProfileChanges['self'], kind: string): string[][] =>
    list.map((f) => [
      kind,
      shortFrame(f.frame),
      pct(f.baseline),
      pct(f.candidate),
      `${f.change > 0 ? '+' : ''}${f.change.toFixed(2)}`,
    ])
  const body = [...rows(p.self, 'self'), ...rows(p.total.slice(0, TOTAL_FRAMES), 'total')]
  const head = ['share', 'frame', 'baseline', 'candidate', 'change (pp)']
  if (md) {
    const esc = (v: string): string => v.replace(/[|\\`*_]/g, (ch) => `\\${ch}`)
    out.push(`| ${head.join(' | ')} |`, '|---|---|--:|--:|--:|', ...body.map((r) => `| ${r.map(esc).join(' | ')} |`))
  } else {
    const widths = head.map((h, i) => Math.max(h.length, ...body.map((r) => r[i]!.length)))
    const line = (r: readonly string[]): string =>
      r
        .map((v, i) => (i < 2 ? v.padEnd(widths[i]!) : v.padStart(widths[i]!)))
        .join('  ')
        .trimEnd()
    out.push(line(head), ...body.map(line))
  }
  out.push(
    '',
    `Differential flame graph: ${md ? `\`${p.diffFlameGraph}\`` : p.diffFlameGraph} on the API (benchstream server).`,
  )
  return out
}

function shortFrame(f: string): string {
  return f.length <= FRAME_WIDTH ? f : `…${f.slice(f.length - FRAME_WIDTH + 1)}`
}

function pct(v: number): string {
  return `${v.toFixed(2)}%`
}

function runsText(runs: readonly string[]): string {
  const shown = runs.slice(0, LISTED_RUNS).join(', ')
  return (
    `${runs.length} run${runs.length === 1 ? '' : 's'} ` +
    `(${shown}${runs.length > LISTED_RUNS ? `, … ${runs.length - LISTED_RUNS} more` : ''})`
  )
}

/** What a release email's table keeps of a summary-run workload. */
function emailRow(f: ComparedFigure): boolean {
  if (f.verdict === 'regression' || f.verdict === 'improvement' || f.verdict === 'below target') return true
  if (f.figure === 'throughput' || /^p\d/.test(f.figure)) return true
  return f.figure === 'errors' && ((f.baseline.center ?? 0) > 0 || (f.candidate.center ?? 0) > 0)
}

/**
 * One line on what was decided (decision.ts): per workload, the called regressions (and improvements) the reader
 * looks for first; when nothing regressed, "nothing, of N tested figures" only if every figure was tested and every
 * workload compared, else **Undecided** and why, with the largest changes for the worse that could not be tested.
 */
function headline(c: ReleaseComparison, md: boolean): string {
  const bold = (s: string): string => (md ? `**${s}**` : s)
  const list = (fs: readonly ComparedFigure[], perWorkload: number): string => {
    const byWorkload = new Map<string, ComparedFigure[]>()
    for (const f of fs) byWorkload.set(f.workload, [...(byWorkload.get(f.workload) ?? []), f])
    return [...byWorkload]
      .map(([w, list]) => {
        const shown = list.slice(0, perWorkload).map(figureChange)
        const more = list.length > perWorkload ? ` (+${list.length - perWorkload} more)` : ''
        return `${c.workloads.length > 1 ? `${w}: ` : ''}${shown.join(', ')}${more}`
      })
      .join('; ')
  }
  const d = decideComparison(c)
  const worse = worseUntested(d)
  const worseText = worse.length === 0 ? '' : ` Largest changes for the worse, untested: ${list(worse, 2)}.`
  const parts: string[] = []
  if (d.regressions.length > 0) {
    parts.push(`${bold('Regressed:')} ${list(d.regressions, 3)}.`)
    if (d.undecided.length > 0) parts.push(`${bold('Undecided beyond that:')} ${d.undecided.join('; ')}.${worseText}`)
  } else if (d.undecided.length > 0)
    parts.push(
      `${bold('Undecided:')} ${d.undecided.join('; ')}` +
        `${d.tested > 0 ? `; nothing regressed of the ${d.tested} tested figures` : ''}.${worseText}`,
    )
  else parts.push(`${bold('Regressed:')} nothing, of ${d.tested} tested figures.`)
  if (d.improvements.length > 0) parts.push(`${bold('Improved:')} ${list(d.improvements, 3)}.`)
  return parts.join(' ')
}

function samplesText(rows: readonly ComparedFigure[], a: number, b: number, reportedOnly: boolean): string {
  const methods = new Set(rows.filter((r) => r.samples !== 'none').map((r) => r.samples))
  if (methods.has('repetitions')) {
    const welch = rows.some((r) => r.method === 'welch-t')
    return (
      `repetitions as samples (${a} + ${b} runs, ` +
      (welch
        ? "Welch's t-test, on logarithms for latencies and throughput: Mann-Whitney's smallest p with so few runs " +
          'cannot survive the adjustment over the figures'
        : 'Mann-Whitney U') +
      ')'
    )
  }
  if (methods.has('windows'))
    return `per-window samples of ${a} + ${b} runs (circular block bootstrap: fewer than 3 runs a side)`
  return (
    `n = ${a} + ${b}: not testable (at least 3 runs a side${reportedOnly ? '' : ', or 10 windows'} are needed); ` +
    'values and changes shown'
  )
}

function throttleText(t: ReleaseComparison['workloads'][number]['throttle']): string {
  if (t === null) return ''
  const one = (s: typeof t.baseline): string =>
    s.status === 'unthrottled' ? 'unthrottled' : `${s.status} ${trim(s.target ?? 0)} ops/s`
  return `; throughput: baseline ${one(t.baseline)}, candidate ${one(t.candidate)}`
}

function toRow(f: ComparedFigure): ComparisonRow {
  const side = (s: ComparedFigure['baseline']): ComparisonRow['baseline'] =>
    s.center === null ? null : { center: s.center, spreadPercent: s.spreadPercent, n: s.n }
  return {
    figure: f.label,
    baseline: side(f.baseline),
    candidate: side(f.candidate),
    changePercent: f.changePercent,
    verdict: f.verdict,
    pValue: f.pValue,
    samples: f.samples === 'none' ? null : f.samples === 'repetitions' ? 'runs' : 'windows',
    note: f.note,
    resolutionUs: f.resolutionUs,
  }
}

function trim(v: number): string {
  return String(Number(v.toFixed(6)))
}

/** Whose output a workload's summary runs are: `YCSB reports` (import-ycsb), `PE output` (HBase's PE). */
function printedBy(by: readonly string[] | undefined): string {
  const list = by ?? ['ycsb']
  return [list.includes('ycsb') ? 'YCSB reports' : '', list.includes('pe') ? 'PE output' : '']
    .filter((x) => x !== '')
    .join(' and ')
}

/** Who printed summary runs' figures: YCSB, PE (HBase's PerformanceEvaluation), or both. */
function printers(by: readonly string[]): string {
  return [by.includes('ycsb') ? 'YCSB' : '', by.includes('pe') ? 'PE' : ''].filter((x) => x !== '').join(' or ')
}
