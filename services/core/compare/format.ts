/**
 * Comparison rows as an aligned terminal table (optionally coloured) and as
 * Markdown, so the CLI, the API and CI comments show the same thing, laid out
 * as benchstat does (`± x%` spread, `~` for no significant change, p and n in
 * the verdict): docs/design/verdicts.md#the-table.
 */
import type { ThroughputVerdict } from './throttled.js'
import type { SideSummary, VerdictKind } from './types.js'
import type { Verdict } from './verdict.js'

/** One line of a comparison table. */
export interface ComparisonRow {
  /** What is compared, with its unit: `throughput (ops/s)`, `READ p99 (µs)`. */
  figure: string
  baseline: RowSide | null
  candidate: RowSide | null
  /** Relative change of the verdict's basis (median or mean) in percent; null when unknown. */
  changePercent: number | null
  verdict: VerdictKind | 'at target' | 'below target'
  pValue: number | null
  /** What one sample was; null when nothing was tested. */
  samples: 'runs' | 'windows' | null
  /** A short qualifier shown with the verdict: `below 1% minimum effect`, `8.0% short of target`. */
  note: string | null
  /**
   * Smallest step of the figure as printed, µs (ComparedFigure.resolutionUs): 1000 for YCSB's whole-ms percentiles,
   * whose values are then shown in ms as printed (`< 1 ms` for a printed 0). @default 0
   */
  resolutionUs?: number
}

export interface RowSide {
  /** The side's median (Mann-Whitney, insufficient data) or mean (t-test, bootstrap), matching the change. */
  center: number
  spreadPercent: number | null
  n: number
}

/** The row for a statistical verdict. */
export function rowFromVerdict(figure: string, v: Verdict): ComparisonRow {
  const basis = v.effect.basis
  const side = (s: SideSummary): RowSide => ({
    center: basis === 'median' ? s.median : s.mean,
    // One sample has no spread to show.
    spreadPercent: s.n < 2 ? null : s.spreadPercent,
    n: s.n,
  })
  const rel = v.effect.relativeChange
  return {
    figure,
    baseline: v.baseline.n > 0 ? side(v.baseline) : null,
    candidate: v.candidate.n > 0 ? side(v.candidate) : null,
    changePercent: rel === null ? null : rel * 100,
    verdict: v.verdict,
    pValue: v.pValue,
    samples: v.samples === 'none' ? null : v.samples === 'repetitions' ? 'runs' : 'windows',
    note: v.belowMinEffect ? `below ${trimNumber(v.minEffect * 100)}% minimum effect` : null,
  }
}

/** The row for a throughput verdict of throttled runs (throttled.ts). */
export function rowFromThroughputVerdict(figure: string, t: ThroughputVerdict): ComparisonRow {
  const row: ComparisonRow =
    t.statistics === null
      ? {
          figure,
          baseline: null,
          candidate: null,
          changePercent: null,
          verdict: t.verdict,
          pValue: null,
          samples: null,
          note: null,
        }
      : { ...rowFromVerdict(figure, t.statistics), verdict: t.verdict }
  if (t.verdict === 'below target')
    row.note =
      `${(t.candidate.shortfallPercent ?? 0).toFixed(1)}% short of target ` +
      `${trimNumber(t.candidate.target ?? 0)} ops/s`
  if (t.verdict === 'at target') row.note = null
  return row
}

export interface TerminalTableOptions {
  /** Colour verdicts with ANSI escapes (regression red, improvement green, below target yellow). @default false */
  color?: boolean
}

const HEADER = ['figure', 'baseline', 'candidate', 'change', 'verdict'] as const
// Right-aligned columns: the numbers.
const RIGHT = [false, true, true, true, false]
const ANSI = { red: '\u001b[31m', green: '\u001b[32m', yellow: '\u001b[33m', dim: '\u001b[2m', reset: '\u001b[0m' }

/** Renders rows as an aligned plain-text table, one line per row plus a header, ending in a newline. */
export function formatTerminalTable(rows: readonly ComparisonRow[], options: TerminalTableOptions = {}): string {
  const cells = rows.map(cellsOf)
  const widths = HEADER.map((h, c) => Math.max(h.length, ...cells.map((r) => (r[c] ?? '').length)))
  const line = (r: readonly string[], colorOf?: string): string =>
    r
      .map((cell, c) => {
        const w = widths[c] ?? 0
        // The last column is left-aligned and needs no padding.
        const padded = RIGHT[c] === true ? cell.padStart(w) : c === HEADER.length - 1 ? cell : cell.padEnd(w)
        // Colour after padding so that escapes do not count as width.
        return colorOf !== undefined && c >= 3 ? `${colorOf}${padded}${ANSI.reset}` : padded
      })
      .join('  ')
  const out = [line(HEADER)]
  rows.forEach((row, i) => out.push(line(cells[i] ?? [], options.color === true ? colorFor(row) : undefined)))
  return out.join('\n') + '\n'
}

/** Renders rows as a GitHub-flavoured Markdown table, ending in a newline. */
export function formatMarkdownTable(rows: readonly ComparisonRow[]): string {
  const esc = (s: string): string => s.replace(/\\/g, '\\\\').replace(/\|/g, '\\|').replace(/\r?\n/g, ' ')
  const out = [`| ${HEADER.join(' | ')} |`, `| ${RIGHT.map((r) => (r ? '---:' : ':---')).join(' | ')} |`]
  for (const row of rows) out.push(`| ${cellsOf(row).map(esc).join(' | ')} |`)
  return out.join('\n') + '\n'
}

function cellsOf(row: ComparisonRow): string[] {
  const r = row.resolutionUs ?? 0
  return [row.figure, sideCell(row.baseline, r), sideCell(row.candidate, r), changeCell(row), verdictCell(row)]
}

function sideCell(s: RowSide | null, resolutionUs: number): string {
  if (s === null) return '—'
  const v = formatFigureValue(s.center, resolutionUs)
  if (s.spreadPercent === null) return v
  return `${v} ± ${Math.round(s.spreadPercent)}%`
}

/**
 * A figure's value as tables print it. With a resolution (YCSB before 0.4.0 printed percentiles in whole ms, cut
 * down: a 0 there is any latency under 1 ms), the value is given in that unit as printed, never as µs it does not
 * have: `< 1 ms` for a printed 0, `3 ms`, `1.5 ms` for the median of a client's 1 and another's 2.
 * Beside them in a `(µs)` column, the unit in the cell says which is which.
 */
export function formatFigureValue(v: number, resolutionUs = 0): string {
  if (resolutionUs <= 0) return formatValue(v)
  // Only a printed 0 is "under the step"; 0.5 ms is a median of a client's 0 and another's 1, as printed.
  if (v === 0) return `< ${trimNumber(resolutionUs / 1000)} ms`
  return `${trimNumber(Number((v / 1000).toPrecision(4)))} ms`
}

function changeCell(row: ComparisonRow): string {
  const significant = row.verdict === 'regression' || row.verdict === 'improvement' || row.verdict === 'below target'
  // Not testable: both values and their change are shown (benchstat prints values without a p-value then).
  const untested = row.verdict === 'insufficient data' && row.baseline !== null && row.candidate !== null
  if (!significant && !untested) return row.verdict === 'insufficient data' ? '?' : '~'
  if (row.changePercent === null) return '—'
  return `${row.changePercent >= 0 ? '+' : ''}${row.changePercent.toFixed(2)}%`
}

function verdictCell(row: ComparisonRow): string {
  const n =
    row.baseline !== null && row.candidate !== null
      ? `n=${row.baseline.n}+${row.candidate.n}${row.samples === 'windows' ? ' windows' : ''}`
      : null
  const p = row.pValue === null ? null : `p=${row.pValue < 0.001 ? row.pValue.toExponential(1) : row.pValue.toFixed(3)}`
  const detail = [p, n].filter((x) => x !== null).join(' ')
  const head = row.verdict === 'no significant change' ? '~' : row.verdict
  const note = row.note === null ? '' : ` ${row.note}`
  if (row.verdict === 'at target' || row.verdict === 'below target')
    return `${head}${row.note === null ? '' : `: ${row.note}`}`
  if (row.verdict === 'insufficient data' && row.samples === null && row.baseline !== null && row.candidate !== null)
    return `n = ${row.baseline.n} + ${row.candidate.n}: not testable${row.note === null ? '' : `; ${row.note}`}`
  // A called change keeps its p and n next to it; what qualifies the value (a median of clients) follows.
  if (row.verdict === 'regression' || row.verdict === 'improvement')
    return `${head}${detail === '' ? '' : ` (${detail})`}${row.note === null ? '' : `; ${row.note}`}`
  return `${head}${note}${detail === '' ? '' : ` (${detail})`}`
}

function colorFor(row: ComparisonRow): string | undefined {
  switch (row.verdict) {
    case 'regression':
      return ANSI.red
    case 'improvement':
      return ANSI.green
    case 'below target':
      return ANSI.yellow
    case 'no significant change':
    case 'at target':
    case 'insufficient data':
      return ANSI.dim
  }
}

/** 4 significant digits, with k and M above 10 000: 12345.6 → "12.35k", 980.25 → "980.3". */
function formatValue(v: number): string {
  const abs = Math.abs(v)
  if (abs >= 1e6) return `${trimNumber(Number((v / 1e6).toPrecision(4)))}M`
  if (abs >= 1e4) return `${trimNumber(Number((v / 1e3).toPrecision(4)))}k`
  return trimNumber(Number(v.toPrecision(4)))
}

function trimNumber(v: number): string {
  return String(Number(v.toFixed(6)))
}
