/**
 * One row of a release comparison: a figure of one workload and operation,
 * judged by verdict.ts and then by what a verdict alone cannot know (equal
 * values, the printed resolution, clients' medians, a throttled side); and
 * the Benjamini-Hochberg adjustment over every tested row.
 */

import type { ComparedFigure } from '../../../schemas/compare-api.v1.js'
import type { RunInfo, WindowFigures } from '../../../schemas/runs-api.v1.js'
import { benjaminiHochberg } from './multiple-testing.js'
import { median, relativeChange, summarize } from './sample-stats.js'
import { OVERALL, type FigureSpec, type FigureValue } from './run-values.js'
import { throttledThroughputVerdict, type SideThrottle } from './throttled.js'
import { compareFigure, type Verdict } from './verdict.js'
import type { WorkloadPair } from './workload-pairing.js'

interface RowOptions {
  alpha: number
  minEffect: number
  seed: number
  test: 'auto' | 'welch'
}

export function figureRow(
  workload: string,
  op: string,
  spec: FigureSpec,
  p: WorkloadPair,
  given: { a: ReadonlyArray<FigureValue | undefined>; b: ReadonlyArray<FigureValue | undefined> },
  windowsByRun: Map<string, Map<string, WindowFigures[]>>,
  o: RowOptions,
  throttle: { baseline: SideThrottle; candidate: SideThrottle } | null,
): ComparedFigure | undefined {
  const plain = (side: ReadonlyArray<FigureValue | undefined>): Array<number | null> =>
    side.map((v) => (v === undefined || !Number.isFinite(v.value) ? null : v.value))
  const va = plain(given.a)
  const vb = plain(given.b)
  const ra = va.filter((v): v is number => v !== null)
  const rb = vb.filter((v): v is number => v !== null)
  if (ra.length === 0 && rb.length === 0) return undefined
  const winValues = (runs: readonly RunInfo[]): number[][] => {
    const get = spec.window
    if (get === null) return []
    return runs.map((r) =>
      (windowsByRun.get(r.run_id)?.get(op) ?? []).map(get).filter((v): v is number => v !== null && Number.isFinite(v)),
    )
  }
  const verdict = compareFigure(
    { runs: ra, windows: winValues(p.baseline) },
    { runs: rb, windows: winValues(p.candidate) },
    {
      direction: spec.direction,
      alpha: o.alpha,
      minEffect: o.minEffect,
      seed: o.seed,
      logScale: spec.logScale,
      test: o.test,
    },
  )
  const center = (xs: number[]): number | null => (xs.length === 0 ? null : median(xs))
  const ca = center(ra)
  const cb = center(rb)
  const rel = ca === null || cb === null ? null : relativeChange(ca, cb)
  const all = [...given.a, ...given.b].filter((v): v is FigureValue => v !== undefined)
  const resolutionUs = Math.max(0, ...all.map((v) => v.resolutionUs))
  const clientMedian = Math.max(0, ...all.map((v) => v.clients))
  const perClient = (runs: readonly RunInfo[], side: ReadonlyArray<FigureValue | undefined>) => {
    const list = runs.flatMap((r, i) => (side[i]?.perClient ?? []).map((c) => ({ runId: r.run_id, ...c })))
    return list.length === 0 ? null : list
  }
  const row: ComparedFigure = {
    workload,
    op,
    figure: spec.key,
    label: `${op} ${spec.label}`,
    direction: spec.direction,
    baseline: {
      center: ca,
      spreadPercent: spread(ra),
      values: va,
      n: verdict.samples === 'none' ? ra.length : verdict.baseline.n,
      perClient: perClient(p.baseline, given.a),
    },
    candidate: {
      center: cb,
      spreadPercent: spread(rb),
      values: vb,
      n: verdict.samples === 'none' ? rb.length : verdict.candidate.n,
      perClient: perClient(p.candidate, given.b),
    },
    changePercent: rel === null ? null : rel * 100,
    verdict: verdict.verdict,
    samples: verdict.samples,
    method: verdict.method,
    pValue: verdict.pValue,
    adjustedPValue: null,
    effectPercent: verdict.effect.relativeChange === null ? null : verdict.effect.relativeChange * 100,
    ci: verdict.ci,
    note: verdict.belowMinEffect ? `below ${trim(o.minEffect * 100)}% minimum effect` : null,
    reason: verdict.reason,
    resolutionUs,
    clientMedian,
  }
  if (verdict.verdict === 'insufficient data' && identical(verdict, ra, rb)) {
    // Error rates of 0 on every run, a ratio of 1 everywhere: nothing to test, nothing changed.
    row.verdict = 'no significant change'
    row.reason = `every run of both sides has the same value (${ra[0]}): no change`
  } else if (verdict.verdict === 'insufficient data' && verdict.samples === 'none' && ca !== null && cb !== null) {
    row.reason =
      `n = ${ra.length} + ${rb.length}: not testable (${verdict.reason}); the values and their change are shown, ` +
      `no verdict`
  }
  // YCSB before 0.4.0 printed percentiles in whole ms: a smaller change is below what the report can tell.
  if (resolutionUs > 0 && ca !== null && cb !== null && Math.abs(cb - ca) < resolutionUs) {
    const ms = `${trim(resolutionUs / 1000)} ms`
    if (row.verdict === 'regression' || row.verdict === 'improvement') {
      row.verdict = 'no significant change'
      row.reason =
        `${row.reason}; but the change of ${trim(Math.abs(cb - ca))} µs is below the ${ms} resolution of the ` +
        'printed figures: not called'
    }
    row.note = `within the ${ms} resolution`
  }
  if (clientMedian > 1) {
    const n = `median of ${clientMedian} clients`
    row.note = row.note === null ? n : `${row.note}; ${n}`
    row.reason =
      `${row.reason}; each run's value is the median of its ${clientMedian} clients' printed ${spec.key} ` +
      `(percentiles of clients cannot be merged)`
  }
  if (
    spec.key === 'throughput' &&
    throttle !== null &&
    (throttle.baseline.status !== 'unthrottled' || throttle.candidate.status !== 'unthrottled')
  ) {
    if (op === OVERALL) {
      const t = throttledThroughputVerdict(throttle.baseline, throttle.candidate, verdict)
      row.verdict = t.verdict
      row.reason = t.reason
      if (t.verdict === 'below target')
        row.note =
          `${(t.candidate.shortfallPercent ?? 0).toFixed(1)}% short of target ` +
          `${trim(t.candidate.target ?? 0)} ops/s`
    } else if (throttle.candidate.status === 'at target') {
      row.verdict = 'at target'
      row.reason =
        `the candidate met its target of ${throttle.candidate.target} ops/s, so ${op}'s share of it ` +
        `carries no throughput signal`
    }
    if (row.verdict === 'at target') row.note = null
  }
  return row
}

/** Untestable because every run of both sides has the same value (zero variance): no change. */
function identical(v: Verdict, a: readonly number[], b: readonly number[]): boolean {
  const all = [...a, ...b]
  return v.verdict === 'insufficient data' && a.length > 0 && b.length > 0 && all.every((x) => x === all[0])
}

/** Every run within ± this many percent of the median; null with fewer than 2 runs or a zero median. */
function spread(xs: readonly number[]): number | null {
  return xs.length < 2 ? null : summarize(xs, xs.length).spreadPercent
}

/**
 * Benjamini-Hochberg over every tested figure (at target and below target
 * rows are rules, not tests): a regression or improvement whose adjusted
 * p-value is not below alpha becomes no significant change, and says so.
 */
export function adjust(rows: ComparedFigure[], alpha: number): void {
  const tested = rows.filter(
    (r) =>
      r.pValue !== null &&
      (r.verdict === 'regression' || r.verdict === 'improvement' || r.verdict === 'no significant change'),
  )
  const adjusted = benjaminiHochberg(tested.map((r) => r.pValue!))
  tested.forEach((r, i) => {
    const q = adjusted[i]!
    r.adjustedPValue = q
    if ((r.verdict === 'regression' || r.verdict === 'improvement') && !(q < alpha)) {
      r.reason =
        `${r.reason}; not significant once adjusted for ${tested.length} ` + `figures (Benjamini-Hochberg p=${fmtP(q)})`
      r.verdict = 'no significant change'
      r.note = r.note === null ? `adjusted p=${fmtP(q)}` : `adjusted p=${fmtP(q)}; ${r.note}`
    }
  })
}

function fmtP(p: number): string {
  return p < 0.001 ? p.toExponential(1) : p.toFixed(3)
}

function trim(v: number): string {
  return String(Number(v.toFixed(6)))
}
