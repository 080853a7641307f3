/**
 * What a release comparison decided, pure: the one place that says whether
 * `compare`, an experiment's comparison.md, the experiment's CLI output and
 * its page may say "no regression". A comparison is decided only when every
 * figure it shows was tested (a p-value or a throughput target rule) and
 * every workload asked for was compared; otherwise it is undecided, and says
 * why: the figures that could not be tested with their n and change, the
 * workloads not compared. A regression found is said whatever else is
 * undecided, with what is.
 */
import type { ComparedFigure, ReleaseComparison } from '../../../schemas/compare-api.v1.js'

export type ComparisonOutcome = 'regression' | 'no regression' | 'undecided'

export interface ComparisonDecision {
  /** regression when any figure regressed (or fell below its target); else undecided when `undecided` has a reason. */
  outcome: ComparisonOutcome
  /** Called regressions and below-target throughputs, the figures a reader looks for first, first. */
  regressions: ComparedFigure[]
  improvements: ComparedFigure[]
  /** Figures shown without a verdict (too few runs or windows, a side without the figure), the same order. */
  untested: ComparedFigure[]
  /** Figures tested: a p-value, or a throughput target rule (equal values on every run are no test). */
  tested: number
  /** Workloads (or --by values) asked for and not compared, with why. */
  notCompared: string[]
  /** Why it is undecided, a few words each; empty when every figure was tested and every workload compared. */
  undecided: string[]
}

export function decideComparison(c: ReleaseComparison): ComparisonDecision {
  const regressions = ordered(c.figures.filter((f) => f.verdict === 'regression' || f.verdict === 'below target'))
  const improvements = ordered(c.figures.filter((f) => f.verdict === 'improvement'))
  const untested = ordered(c.figures.filter((f) => f.verdict === 'insufficient data'))
  const tested = c.figures.filter(
    (f) => f.pValue !== null || f.verdict === 'at target' || f.verdict === 'below target',
  ).length
  const undecided: string[] = []
  if (untested.length > 0)
    undecided.push(`${untested.length} of ${c.figures.length} figures could not be tested (n = ${nText(untested)})`)
  if (c.unpaired.length > 0) undecided.push(`not compared: ${c.unpaired.join('; ')}`)
  return {
    outcome: regressions.length > 0 ? 'regression' : undecided.length > 0 ? 'undecided' : 'no regression',
    regressions,
    improvements,
    untested,
    tested,
    notCompared: [...c.unpaired],
    undecided,
  }
}

/** `SCAN p50 +14,928%`: operation, figure and change of the centers. */
export function figureChange(f: ComparedFigure): string {
  return `${f.op} ${f.figure.replace(/_/g, ' ')}${f.changePercent === null ? '' : ` ${percentText(f.changePercent)}`}`
}

/** A change in percent as a headline prints it: one decimal below 100 %, whole and grouped above (+14,928%). */
export function percentText(p: number): string {
  const a = Math.abs(p)
  return `${p >= 0 ? '+' : '-'}${a >= 100 ? Math.round(a).toLocaleString('en-US') : a.toFixed(1)}%`
}

/** `2 + 3`: the samples a side had, or each pair of them when they differ. */
export function nText(fs: readonly ComparedFigure[]): string {
  const ns = [...new Set(fs.map((f) => `${f.baseline.n} + ${f.candidate.n}`))]
  return ns.join(', ')
}

/**
 * Untested figures whose change is for the worse and beyond what the report could resolve: the ones a reader must
 * not take for "unchanged". Throughput of single operations and extremes are left out (they follow the others).
 */
export function worseUntested(d: ComparisonDecision): ComparedFigure[] {
  return d.untested.filter(
    (f) =>
      weight(f) < 4 &&
      f.changePercent !== null &&
      f.changePercent !== 0 &&
      (f.direction === 'lower-is-better') === f.changePercent > 0 &&
      !(f.resolutionUs > 0 && Math.abs((f.candidate.center ?? 0) - (f.baseline.center ?? 0)) < f.resolutionUs),
  )
}

/**
 * The untested figures in the order a one-line summary names them: the changes for the worse (worseUntested),
 * largest first, then the others.
 */
export function untestedByConcern(d: ComparisonDecision): ComparedFigure[] {
  const worse = worseUntested(d).sort((x, y) => Math.abs(y.changePercent ?? 0) - Math.abs(x.changePercent ?? 0))
  return [...worse, ...d.untested.filter((f) => !worse.includes(f))]
}

/**
 * What a reader looks for first: OVERALL throughput, percentiles, averages, errors, then per-operation throughput
 * and the rest; within each, the largest change first.
 */
function ordered(fs: readonly ComparedFigure[]): ComparedFigure[] {
  return [...fs].sort(
    (x, y) => weight(x) - weight(y) || Math.abs(y.changePercent ?? 0) - Math.abs(x.changePercent ?? 0),
  )
}

function weight(f: ComparedFigure): number {
  if (f.figure === 'throughput' && f.op === 'OVERALL') return 0
  if (/^p\d/.test(f.figure)) return 1
  if (f.figure === 'avg') return 2
  if (f.figure.startsWith('error')) return 3
  if (f.figure === 'throughput') return 4
  return 5
}
