/**
 * A release comparison (release.ts) as text: a terminal table (aligned,
 * coloured when asked, i.e. on a TTY) or Markdown to paste into a release
 * email or a JIRA comment. Both carry the same lines: which runs each side
 * had, how the samples were taken, setup differences when forced, one table
 * per workload (format.ts), and what the verdicts mean.
 */
import type { ComparedFigure, ProfileChanges, ReleaseComparison } from '../../../schemas/api.v1.js'
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
  if (c.unpaired.length > 0) out.push('', `Not compared (one side only): ${c.unpaired.join(', ')}`)
  for (const w of c.workloads) {
    const name = w.baseline === w.candidate ? w.baseline : `${w.baseline} vs ${w.candidate}`
    const rows = c.figures.filter((f) => f.workload === name)
    out.push(
      '',
      `${md ? '#### ' : ''}workload ${code(name)}: ` +
        `${samplesText(rows, w.baselineRuns.length, w.candidateRuns.length)}${throttleText(w.throttle)}`,
      '',
    )
    const table = rows.map(toRow)
    out.push(
      (md ? formatMarkdownTable(table) : formatTerminalTable(table, { color: options.color === true })).trimEnd(),
    )
  }
  const s = c.summary
  const counts = [
    `${s.regressions} regression${s.regressions === 1 ? '' : 's'}`,
    `${s.improvements} improvement${s.improvements === 1 ? '' : 's'}`,
    `${s.unchanged} without significant change`,
  ]
  if (s.atTarget > 0) counts.push(`${s.atTarget} at target`)
  if (s.belowTarget > 0) counts.push(`${s.belowTarget} below target`)
  if (s.insufficient > 0) counts.push(`${s.insufficient} with insufficient data`)
  out.push('', `${counts.join(', ')}.`)
  out.push(
    `${md ? '_' : ''}Each value is the median over the side's runs of the run's own figure (percentiles ` +
      `from the run's merged histogram); ± x%: every run within x% of it. ` +
      (`Verdicts at α=${c.alpha} once the p-values of all ${c.tests} tested figures are adjusted together ` +
        `(Benjamini-Hochberg); changes under ${trim(c.minEffect * 100)}% are not called; ~ means no ` +
        `significant change.${md ? '_' : ''}`),
  )
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

function samplesText(rows: readonly ComparedFigure[], a: number, b: number): string {
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
  return `${a} + ${b} runs, too few runs and windows to test`
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
  }
}

function trim(v: number): string {
  return String(Number(v.toFixed(6)))
}
