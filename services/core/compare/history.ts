/**
 * A figure over a release series: every run carrying a label that orders
 * runs (`version`, a date), one point per label value in natural order
 * (0.98.9 before 0.98.10), the point being the median over that value's runs
 * of each run's figure (from its merged histograms, or for a summary run
 * from its YCSB reports as printed: run-values.ts), and the change points
 * of the series found by E-divisive means (change-points.ts), as MongoDB's
 * and Apache Otava's performance CI mark them. A series of imported reports
 * of many releases (`import-ycsb --label version=...`) is a series like any
 * other.
 */
import type { FigureKey, ReleaseHistory } from '../../../schemas/compare-api.v1.js'
import type { RunInfo } from '../../../schemas/runs-api.v1.js'
import { BenchstreamError } from '../errors.js'
import type { ReadModel } from '../ports/read-model.js'
import { eDivisive } from './change-points.js'
import { formatFigureValue } from './format.js'
import { runWorkload, workloadMatches } from './release.js'
import { eventRunValues, figureSpec, reportedRunValues, type RunValues } from './run-values.js'
import { median, relativeChange } from './sample-stats.js'

export type HistorySource = Pick<ReadModel, 'listRuns' | 'runFigures' | 'reportedRuns'>

/** Runs one history reads at most. */
export const MAX_HISTORY_RUNS = 5000
/** Fewest points on each side of a change (change-points.ts minSegment). */
const MIN_SEGMENT = 3

export interface HistoryOptions {
  /** The label that orders the runs. */
  label: string
  /** Only runs of this workload (`workloade` or `e`). */
  workload?: string
  /** An operation or OVERALL. @default 'OVERALL' */
  op?: string
  /** @default 'throughput' */
  figure?: Exclude<FigureKey, 'server_cache_hit_ratio'> | `p${number}`
  /** More label conditions (key=value). */
  filter?: Readonly<Record<string, string>>
  /** Significance of a change point. @default 0.05 */
  significance?: number
}

/**
 * Natural order of label values: digit runs compare as numbers, the rest as
 * text, so 0.98.10 follows 0.98.9 and 2026-12-02 follows 2026-11-30.
 */
export function naturalCompare(a: string, b: string): number {
  const pa = a.match(/\d+|\D+/g) ?? []
  const pb = b.match(/\d+|\D+/g) ?? []
  for (let i = 0; i < Math.min(pa.length, pb.length); i++) {
    const x = pa[i]!
    const y = pb[i]!
    const dx = /^\d/.test(x)
    const dy = /^\d/.test(y)
    if (dx && dy) {
      const d = Number(x) - Number(y)
      // Equal numbers with different zero padding: the shorter text first.
      if (d !== 0) return d
      if (x.length !== y.length) return x.length - y.length
    } else if (x !== y) return x < y ? -1 : 1
  }
  return pa.length - pb.length
}

export async function releaseHistory(src: HistorySource, o: HistoryOptions): Promise<ReleaseHistory> {
  const op = o.op ?? 'OVERALL'
  const figure = o.figure ?? 'throughput'
  if (figureSpec(figure) === undefined)
    throw new BenchstreamError(
      'BS_ERR_BAD_REQUEST',
      `unknown figure ${JSON.stringify(figure)}; allowed: throughput, avg, min, p<percent> (p50, p95, p99, ...), ` +
        `max, errors, error_rate, cache_hit_ratio`,
    )
  let runs: RunInfo[] = await src.listRuns(MAX_HISTORY_RUNS, {
    hasLabel: o.label,
    ...(o.filter === undefined ? {} : { labels: o.filter }),
  })
  if (o.workload !== undefined) runs = runs.filter((r) => workloadMatches(runWorkload(r), o.workload!))
  if (runs.length === 0)
    throw new BenchstreamError(
      'BS_ERR_NOT_FOUND',
      `no run has the label ${o.label}${o.workload === undefined ? '' : ` and workload ${o.workload}`}; ` +
        `label runs with --label ${o.label}=...`,
    )
  const figures = new Map<string, RunValues>()
  for (const f of await src.runFigures(runs.map((r) => r.run_id))) figures.set(f.runId, eventRunValues(f))
  // Runs without windows: summary runs, known from their YCSB reports.
  const missing = runs.map((r) => r.run_id).filter((id) => !figures.has(id))
  if (missing.length > 0) for (const r of await src.reportedRuns(missing)) figures.set(r.runId, reportedRunValues(r))
  const byValue = new Map<string, RunInfo[]>()
  for (const r of runs) {
    const v = r.labels[o.label] ?? ''
    byValue.set(v, [...(byValue.get(v) ?? []), r])
  }
  const values = [...byValue.keys()].sort(naturalCompare)
  const points: ReleaseHistory['points'] = []
  for (const value of values) {
    const rs = byValue.get(value)!.sort((a, b) => (a.started_at ?? '').localeCompare(b.started_at ?? ''))
    const got = rs.map((r) => figures.get(r.run_id)?.ops.get(op)?.get(figure))
    const xs = got.map((g) => (g === undefined || !Number.isFinite(g.value) ? null : g.value))
    const present = xs.filter((x): x is number => x !== null)
    const center = present.length === 0 ? null : median(present)
    const prev = points.at(-1)?.center ?? null
    const rel = prev === null || center === null ? null : relativeChange(prev, center)
    points.push({
      value,
      runs: rs.map((r) => r.run_id),
      values: xs,
      center,
      changePercent: rel === null ? null : rel * 100,
      resolutionUs: Math.max(0, ...got.map((g) => g?.resolutionUs ?? 0)),
    })
  }
  // Points without the figure (no such operation in those runs) are left out of the series.
  const series = points.map((p, i) => ({ i, c: p.center })).filter((p): p is { i: number; c: number } => p.c !== null)
  let note: string | null = null
  let changePoints: ReleaseHistory['changePoints'] = []
  if (series.length < 2 * MIN_SEGMENT) {
    note =
      `${series.length} point${series.length === 1 ? '' : 's'} with the figure: change points need ` +
      `at least ${2 * MIN_SEGMENT} (${MIN_SEGMENT} on each side of a change)`
  } else {
    changePoints = eDivisive(
      series.map((p) => p.c),
      { minSegment: MIN_SEGMENT, significance: o.significance ?? 0.05 },
    ).map((c) => {
      const at = series[c.index]!.i
      return {
        index: at,
        value: points[at]!.value,
        pValue: c.pValue,
        meanBefore: c.meanBefore,
        meanAfter: c.meanAfter,
        changePercent: c.relativeChange === null ? null : c.relativeChange * 100,
      }
    })
  }
  return { label: o.label, workload: o.workload ?? null, op, figure, points, changePoints, note }
}

/** The history as an aligned table (or Markdown), change points marked. */
export function formatHistory(h: ReleaseHistory, markdown = false): string {
  const unit =
    h.figure === 'throughput'
      ? 'ops/s'
      : h.figure === 'error_rate' || h.figure === 'cache_hit_ratio' || h.figure === 'errors'
        ? ''
        : 'µs'
  const header = [h.label, 'runs', `${h.op} ${h.figure}${unit === '' ? '' : ` (${unit})`}`, 'change', 'change point']
  // Percentiles YCSB printed in whole ms are shown as printed (format.ts formatFigureValue), never as µs they lack.
  const resolutionUs = Math.max(0, ...h.points.map((p) => p.resolutionUs))
  const value = (v: number): string => (resolutionUs > 0 ? formatFigureValue(v, resolutionUs) : fmt(v))
  const cells = h.points.map((p, i) => {
    const cp = h.changePoints.find((c) => c.index === i)
    return [
      p.value,
      String(p.runs.length),
      p.center === null ? '—' : value(p.center),
      p.changePercent === null ? '' : `${p.changePercent >= 0 ? '+' : ''}${p.changePercent.toFixed(1)}%`,
      cp === undefined
        ? ''
        : '◆ ' +
          (cp.changePercent === null ? '' : `${cp.changePercent >= 0 ? '+' : ''}${cp.changePercent.toFixed(1)}% `) +
          '(mean ' +
          `${value(cp.meanBefore)} → ${value(cp.meanAfter)}, p=${cp.pValue.toFixed(3)})`,
    ]
  })
  const lines: string[] = []
  if (markdown) {
    lines.push(
      `| ${header.join(' | ')} |`,
      `| :--- | ---: | ---: | ---: | :--- |`,
      ...cells.map((c) => `| ${c.map((x) => x.replace(/\|/g, '\\|')).join(' | ')} |`),
    )
  } else {
    const widths = header.map((hd, i) => Math.max(hd.length, ...cells.map((c) => c[i]!.length)))
    const line = (c: readonly string[]): string =>
      c
        .map((x, i) => (i === 0 || i === c.length - 1 ? x.padEnd(widths[i]!) : x.padStart(widths[i]!)))
        .join('  ')
        .trimEnd()
    lines.push(line(header), ...cells.map(line))
  }
  lines.push(
    '',
    h.note ??
      `${h.changePoints.length} change point${h.changePoints.length === 1 ? '' : 's'} (E-divisive ` +
        (`means, permutation test at 0.05) over ${h.points.length} values ` +
          `of ${h.label}${h.workload === null ? '' : `, workload ${h.workload}`}`),
  )
  return lines.join('\n') + '\n'
}

function fmt(v: number): string {
  return Math.abs(v) >= 100 ? v.toFixed(0) : Math.abs(v) >= 1 ? v.toFixed(2) : v.toPrecision(3)
}
