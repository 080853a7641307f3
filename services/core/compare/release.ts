/**
 * Release A vs release B over stored runs: `benchstream compare A B` and GET
 * /api/v1/compare. A side is a run, `group:NAME` or a label selector; each
 * figure is the median over its runs of the run's merged figure, judged by
 * verdict.ts, p-values adjusted together, throttled runs by throttled.ts,
 * setups checked by comparable.ts. The rules: docs/design/verdicts.md.
 * Summary runs (YCSB's reports as printed, run-values.ts) are compared on
 * what their reports hold, paired by workload or --by, never pooled;
 * nothing to compare is BS_ERR_NOTHING_TO_COMPARE: docs/guides/ycsb-reports.md.
 * The sides are read by release-sides.ts, paired by workload-pairing.ts, their
 * windows made samples by window-samples.ts, each row judged by compared-figure.ts.
 */

import type { ComparedFigure, ReleaseComparison } from '../../../schemas/compare-api.v1.js'
import type { ReportedRun } from '../../../schemas/run-reports-api.v1.js'
import type { RunFigures, RunInfo, WindowFigures } from '../../../schemas/runs-api.v1.js'
import { BenchstreamError } from '../errors.js'
import type { SetupDifference } from './comparable.js'
import { adjust, figureRow } from './compared-figure.js'
import { resolveSide, type CompareSource } from './release-sides.js'
import {
  EVENT_OP_FIGURES,
  EVENT_OVERALL_FIGURES,
  eventRunValues,
  figureSpec,
  OVERALL,
  reportedRunValues,
  type FigureSpec,
  type FigureValue,
  type RunValues,
} from './run-values.js'
import { assessThrottle, type SideThrottle } from './throttled.js'
import { groupWindows } from './window-samples.js'
import {
  keyText,
  listed,
  pairingKey,
  pairSetupDifferences,
  pairWorkloads,
  type CompareSideInput,
  type WorkloadPair,
} from './workload-pairing.js'

/** Fewest runs per side for repetitions as samples (verdict.ts). */
const MIN_REPETITIONS = 3

/** CPU profiles of both sides, when the profile store is wired in: the frames whose share changed most. */
export type ProfileComparisonHook = (
  baselineRuns: readonly string[],
  candidateRuns: readonly string[],
) => Promise<ReleaseComparison['profiles']>

export interface CompareOptions {
  /** @default 0.05 */
  alpha?: number
  /** @default 0.01 */
  minEffect?: number
  /** Compare although the setups differ. @default false */
  force?: boolean
  /** Seed of the bootstraps (reproducible output). @default 1 */
  seed?: number
  /** Frame share changes of the sides' CPU profiles (profile-changes.ts); without it profiles is null. */
  profileChanges?: ProfileComparisonHook
  /** Pair runs by this label's value instead of by workload. @default undefined (by workload) */
  by?: string
  /** The test of repetitions (verdict.ts VerdictOptions.test). @default auto */
  test?: 'auto' | 'welch'
}

/** Resolves both sides, reads their figures (and windows where a side has fewer than 3 runs) and compares them. */
export async function compareReleases(
  src: CompareSource,
  baselineRef: string,
  candidateRef: string,
  options: CompareOptions = {},
): Promise<ReleaseComparison> {
  const [a, b] = await Promise.all([resolveSide(src, baselineRef), resolveSide(src, candidateRef)])
  const ids = [...new Set([...a, ...b].map((r) => r.run_id))]
  const figures = await src.runFigures(ids)
  // Runs without windows: summary runs, known from their YCSB reports.
  const withWindows = new Set(figures.map((f) => f.runId))
  const missing = ids.filter((id) => !withWindows.has(id))
  const reported = missing.length === 0 ? [] : await src.reportedRuns(missing)
  const pairs = pairWorkloads(a, b, options.by).pairs
  // Windows are the samples of a side with fewer than 3 runs (summary runs have none).
  const needWindows = pairs.some(
    (p) =>
      (p.baseline.length < MIN_REPETITIONS || p.candidate.length < MIN_REPETITIONS) &&
      [...p.baseline, ...p.candidate].some((r) => withWindows.has(r.run_id)),
  )
  const windows = needWindows ? await src.windowFigures(ids.filter((id) => withWindows.has(id))) : []
  const out = compareRuns(
    { ref: baselineRef, runs: a },
    { ref: candidateRef, runs: b },
    [...figures, ...reported],
    windows,
    options,
  )
  if (options.profileChanges !== undefined)
    out.profiles = await options.profileChanges(out.baseline.runs, out.candidate.runs)
  return out
}

/** YCSB's report order; other operations after these, by name. */
const OP_ORDER = ['READ', 'UPDATE', 'INSERT', 'SCAN', 'READ-MODIFY-WRITE', 'DELETE']

/** The figures of a run, with events (RunFigures) or a summary run (its clients' YCSB reports). */
export type RunData = RunFigures | ReportedRun

function runValuesOf(d: RunData): RunValues {
  return 'ops' in d ? eventRunValues(d) : reportedRunValues(d)
}

/**
 * The comparison from resolved runs and their figures (pure). `figures` and
 * `windows` may hold more runs than the sides; each side takes its own.
 */
export function compareRuns(
  a: CompareSideInput,
  b: CompareSideInput,
  figures: readonly RunData[],
  windows: readonly WindowFigures[],
  options: CompareOptions = {},
): ReleaseComparison {
  const alpha = options.alpha ?? 0.05
  const minEffect = options.minEffect ?? 0.01
  const force = options.force ?? false
  const by = options.by
  const values = new Map<string, RunValues>()
  const eventFigures = new Map<string, RunFigures>()
  for (const f of figures) {
    values.set(f.runId, runValuesOf(f))
    if ('ops' in f) eventFigures.set(f.runId, f)
  }
  const serverCache = new Map<string, Array<{ source: string; ratio: number | null }>>(
    [...eventFigures].map(([id, f]) => [id, f.serverCache]),
  )
  // A summary run sampled beside its clients (driver pe) has them too.
  for (const f of figures) if (!('ops' in f) && f.serverCache !== undefined) serverCache.set(f.runId, f.serverCache)
  const { pairs, unpaired } = pairWorkloads(a.runs, b.runs, by)
  const notes: string[] = []
  const unknownSetups: string[] = []
  if (pairs.length === 0) {
    const names = (s: CompareSideInput): string =>
      [...new Set(s.runs.map((r) => keyText(pairingKey(r, by), by)))].join(', ')
    throw new BenchstreamError(
      'BS_ERR_NOTHING_TO_COMPARE',
      `nothing to compare: the sides have no ${by === undefined ? 'workload' : `${by} label value`} in common ` +
        `(baseline: ${names(a)}; candidate: ${names(b)}). Compare runs of the same workload (add workload=NAME ` +
        `to both sides), record the workload when importing (import-ycsb --workload NAME or -P FILE), or pair the ` +
        `runs by a label with --by KEY`,
    )
  }

  const differences: SetupDifference[] = []
  for (const p of pairs) {
    const prefix = pairs.length > 1 ? `${p.baselineName}: ` : ''
    if (p.baselineName !== p.candidateName)
      differences.push({
        name: by === undefined ? 'workload' : by,
        baseline: [p.baselineName],
        candidate: [p.candidateName],
        where: ['between sides'],
      })
    for (const d of pairSetupDifferences(p, unknownSetups)) differences.push({ ...d, name: `${prefix}${d.name}` })
  }
  if (unknownSetups.length > 0)
    notes.push(
      `setups compared only where recorded: ${listed(unknownSetups)} ` +
        `${unknownSetups.length === 1 ? 'is a summary run' : 'are summary runs'} imported without -P or a workload ` +
        `file, so ${unknownSetups.length === 1 ? 'its' : 'their'} workload properties are not known`,
    )
  const comparable = differences.length === 0
  if (!comparable && !force) {
    const list = differences
      .map((d) => `${d.name}: ${d.baseline.join(' | ')} vs ${d.candidate.join(' | ')} (${d.where.join(', ')})`)
      .join('; ')
    throw new BenchstreamError(
      'BS_ERR_NOT_COMPARABLE',
      `the runs are not comparable: ${list}. Compare them anyway with --force (API: force=true); the ` +
        `differences are then listed with the result`,
    )
  }

  const windowsByRun = groupWindows(windows)
  const rows: ComparedFigure[] = []
  const workloads: ReleaseComparison['workloads'] = []
  const nothing: string[] = []
  for (const p of pairs) {
    const workload = p.baselineName === p.candidateName ? p.baselineName : `${p.baselineName} vs ${p.candidateName}`
    const va = p.baseline.map((r) => values.get(r.run_id))
    const vb = p.candidate.map((r) => values.get(r.run_id))
    const reportedRuns = {
      baseline: va.filter((v) => v?.origin === 'reported').length,
      candidate: vb.filter((v) => v?.origin === 'reported').length,
    }
    // Summary runs: only the figures both sides have; runs with events only: every figure either side has.
    const summary = reportedRuns.baseline + reportedRuns.candidate > 0
    const opsOf = (side: ReadonlyArray<RunValues | undefined>): Set<string> =>
      new Set(side.flatMap((v) => [...(v?.ops.keys() ?? [])]))
    const opsA = opsOf(va)
    const opsB = opsOf(vb)
    // OVERALL alone is no common ground: runs with no operation in common ran different things.
    const named = (ops: Set<string>): string[] => orderOps([...ops].filter((o) => o !== OVERALL))
    if (!named(opsA).some((o) => opsB.has(o))) {
      nothing.push(
        `${workload}: no operation in common (baseline ${named(opsA).join(', ') || 'none'}; candidate ` +
          `${named(opsB).join(', ') || 'none'})`,
      )
      continue
    }
    const throttle = sideThrottles(
      p,
      p.baseline.map((r) => eventFigures.get(r.run_id)),
      p.candidate.map((r) => eventFigures.get(r.run_id)),
    )
    const before = rows.length
    const ops = orderOps(summary ? [...opsA].filter((o) => opsB.has(o)) : [...new Set([...opsA, ...opsB])])
    for (const op of ops) {
      const keys = summary
        ? figureKeys(va, op).filter((k) => figureKeys(vb, op).includes(k))
        : op === OVERALL
          ? EVENT_OVERALL_FIGURES
          : EVENT_OP_FIGURES
      for (const key of keys) {
        const spec = figureSpec(key)!
        const get = (v: RunValues | undefined): FigureValue | undefined => v?.ops.get(op)?.get(key)
        const row = figureRow(
          workload,
          op,
          spec,
          p,
          { a: va.map(get), b: vb.map(get) },
          windowsByRun,
          { alpha, minEffect, seed: options.seed ?? 1, test: options.test ?? 'auto' },
          throttle,
        )
        if (row !== undefined) rows.push(row)
      }
    }
    for (const source of [
      ...new Set([...p.baseline, ...p.candidate].flatMap((r) => serverCache.get(r.run_id)?.map((c) => c.source) ?? [])),
    ].sort()) {
      const spec: FigureSpec = {
        key: 'server_cache_hit_ratio',
        label: `server cache-hit ratio (${source})`,
        direction: 'higher-is-better',
        logScale: false,
        window: null,
        rank: 8,
      }
      const cached = (runs: readonly RunInfo[]): Array<FigureValue | undefined> =>
        runs.map((r) => {
          const v = serverCache.get(r.run_id)?.find((c) => c.source === source)?.ratio
          return v === null || v === undefined ? undefined : { value: v, resolutionUs: 0, clients: 0, perClient: null }
        })
      const row = figureRow(
        workload,
        OVERALL,
        spec,
        p,
        { a: cached(p.baseline), b: cached(p.candidate) },
        windowsByRun,
        { alpha, minEffect, seed: options.seed ?? 1, test: options.test ?? 'auto' },
        null,
      )
      if (row !== undefined && (!summary || (row.baseline.center !== null && row.candidate.center !== null)))
        rows.push(row)
    }
    if (!rows.slice(before).some((r) => r.baseline.center !== null && r.candidate.center !== null)) {
      rows.length = before
      nothing.push(
        `${workload}: no figure both sides have (baseline runs ${listed(p.baseline.map((r) => r.run_id))}: ` +
          `${figureCount(va)}; candidate runs ${listed(p.candidate.map((r) => r.run_id))}: ${figureCount(vb)})`,
      )
      continue
    }
    const reportedBy = [...new Set([...va, ...vb].flatMap((v) => (v?.producer === undefined ? [] : [v.producer])))]
    workloads.push({
      baseline: p.baselineName,
      candidate: p.candidateName,
      baselineRuns: p.baseline.map((r) => r.run_id),
      candidateRuns: p.candidate.map((r) => r.run_id),
      throttle,
      reportedRuns,
      ...(reportedBy.length === 0 ? {} : { reportedBy: reportedBy.sort() }),
    })
  }
  if (workloads.length === 0) {
    const noData = [...a.runs, ...b.runs].filter((r) => values.get(r.run_id) === undefined).map((r) => r.run_id)
    throw new BenchstreamError(
      'BS_ERR_NOTHING_TO_COMPARE',
      `nothing to compare: ${nothing.join('; ')}. ` +
        (noData.length > 0
          ? `Runs ${listed(noData)} hold no figures (no events and no YCSB report): import their reports with ` +
            '`benchstream import-ycsb`, or check the run ids with `benchstream runs`'
          : 'Compare runs of the same workload: check each run with `benchstream report RUN`, record the workload ' +
            'when importing (import-ycsb --workload NAME or -P FILE), or pair the runs by a label with --by KEY'),
    )
  }
  adjust(rows, alpha)

  const count = (v: ComparedFigure['verdict']): number => rows.filter((r) => r.verdict === v).length
  return {
    baseline: side(a, by),
    candidate: side(b, by),
    alpha,
    minEffect,
    tests: rows.filter((r) => r.adjustedPValue !== null).length,
    comparable,
    forced: !comparable && force,
    differences,
    by: by ?? null,
    notes,
    workloads,
    unpaired: [...unpaired, ...nothing],
    figures: rows,
    summary: {
      regressions: count('regression'),
      improvements: count('improvement'),
      unchanged: count('no significant change'),
      insufficient: count('insufficient data'),
      atTarget: count('at target'),
      belowTarget: count('below target'),
    },
    profiles: null,
  }
}

/** The figure keys any run of a side has for an operation, in table order. */
function figureKeys(side: ReadonlyArray<RunValues | undefined>, op: string): string[] {
  const keys = new Set(side.flatMap((v) => [...(v?.ops.get(op)?.keys() ?? [])]))
  return [...keys].sort((x, y) => figureSpec(x)!.rank - figureSpec(y)!.rank)
}

function figureCount(side: ReadonlyArray<RunValues | undefined>): string {
  const ops = [...new Set(side.flatMap((v) => [...(v?.ops.keys() ?? [])]))]
  return ops.length === 0 ? 'no figures' : orderOps(ops).join(', ')
}

function side(s: CompareSideInput, by: string | undefined): ReleaseComparison['baseline'] {
  return {
    ref: s.ref,
    runs: s.runs.map((r) => r.run_id),
    groups: [...new Set(s.runs.map((r) => r.group_id).filter((g) => g !== ''))].sort(),
    workloads: [...new Set(s.runs.map((r) => keyText(pairingKey(r, by), by)))].sort(),
  }
}

function orderOps(ops: readonly string[]): string[] {
  const rank = (op: string): number =>
    op === OVERALL ? -1 : OP_ORDER.includes(op) ? OP_ORDER.indexOf(op) : OP_ORDER.length
  return [...ops].sort((x, y) => rank(x) - rank(y) || x.localeCompare(y))
}

/**
 * The throttle status of both sides, or null when no run had a target or a
 * side mixes targets (listed as a difference). A run asked for T seconds
 * (maxexecutiontime) that lasted them is judged on its operations / T: its
 * run time also holds the ramp at the start and the operations finishing
 * after T, which cost a 3 s run about 1 %, the whole tolerance, and its
 * windows hold clients that started a moment apart. Any other run (bounded
 * by operationcount, or stopped early) on its report's throughput.
 */
function sideThrottles(
  p: WorkloadPair,
  fa: ReadonlyArray<RunFigures | undefined>,
  fb: ReadonlyArray<RunFigures | undefined>,
): { baseline: SideThrottle; candidate: SideThrottle } | null {
  const tp = (r: RunInfo, f: RunFigures | undefined): number => {
    const all = f?.ops.find((o) => o.op === OVERALL)
    if (all === undefined || f === undefined) return 0
    const asked = Number(r.properties?.maxexecutiontime ?? '')
    if (Number.isFinite(asked) && asked > 0 && f.runtimeMs >= asked * 1000) return (all.operations + all.errors) / asked
    return all.opsPerSec
  }
  if (![...p.baseline, ...p.candidate].some((r) => r.target > 0)) return null
  try {
    return {
      baseline: assessThrottle(p.baseline.map((r, i) => ({ throughput: tp(r, fa[i]), target: r.target }))),
      candidate: assessThrottle(p.candidate.map((r, i) => ({ throughput: tp(r, fb[i]), target: r.target }))),
    }
  } catch {
    return null
  }
}
