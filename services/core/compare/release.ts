/**
 * Release A vs release B over stored runs: `benchstream compare A B` and GET
 * /api/v1/compare. A side is a run, `group:NAME` or a label selector; each
 * figure is the median over its runs of the run's merged figure, judged by
 * verdict.ts, p-values adjusted together, throttled runs by throttled.ts,
 * setups checked by comparable.ts. The rules: docs/design/verdicts.md.
 */
import type {
  ComparedFigure,
  FigureKey,
  OpFigures,
  ReleaseComparison,
  RunFigures,
  RunInfo,
  WindowFigures,
} from '../../../schemas/api.v1.js'
import { ID_PATTERN, ID_RULE } from '../../../schemas/events.v1.js'
import { BenchstreamError } from '../errors.js'
import type { ReadModel, RunFilter } from '../ports/read-model.js'
import { compareSetups, type RunSetup, type SetupDifference } from './comparable.js'
import { benjaminiHochberg } from './multiple-testing.js'
import { median, relativeChange, summarize } from './sample-stats.js'
import { assessThrottle, throttledThroughputVerdict, type SideThrottle } from './throttled.js'
import type { Direction } from './types.js'
import { compareFigure, type Verdict } from './verdict.js'

/** What compareReleases reads (a subset of the ReadModel port). */
export type CompareSource = Pick<ReadModel, 'getRun' | 'listRuns' | 'runFigures' | 'windowFigures'>

/** Runs one side may have at most; a selector matching more is refused (narrow it). */
export const MAX_RUNS_PER_SIDE = 1000
/** Fewest runs per side for repetitions as samples (verdict.ts). */
const MIN_REPETITIONS = 3

export type SideRef =
  | { kind: 'run'; runId: string }
  | { kind: 'runs'; runIds: string[] }
  | { kind: 'group'; group: string }
  | { kind: 'selector'; labels: Record<string, string>; workload?: string; group?: string }

/**
 * Reads a side: `runs:ID,ID,...` (exactly those runs: an experiment's
 * complete ones), `group:NAME`, a selector `key=value[,key=value...]` (label
 * keys, plus `workload` and `group`), or a run id. BS_ERR_BAD_REQUEST when
 * it is none of them.
 */
export function parseSideRef(text: string): SideRef {
  const bad = (why: string): BenchstreamError =>
    new BenchstreamError(
      'BS_ERR_BAD_REQUEST',
      `${JSON.stringify(text)} is not a run id, group:NAME or key=value[,key=value...] selector: ${why}`,
    )
  if (text.startsWith('runs:')) {
    const runIds = text.slice('runs:'.length).split(',')
    if (runIds.length > MAX_RUNS_PER_SIDE) throw bad(`more than ${MAX_RUNS_PER_SIDE} runs`)
    for (const id of runIds) if (!ID_PATTERN.test(id)) throw bad(`${JSON.stringify(id)}: a run id is ${ID_RULE}`)
    if (new Set(runIds).size !== runIds.length) throw bad('a run is named twice')
    return { kind: 'runs', runIds }
  }
  if (text.startsWith('group:')) {
    const group = text.slice('group:'.length)
    if (!ID_PATTERN.test(group)) throw bad(`the group name must be ${ID_RULE}`)
    return { kind: 'group', group }
  }
  if (!text.includes('=')) {
    if (!ID_PATTERN.test(text)) throw bad(`a run id is ${ID_RULE}`)
    return { kind: 'run', runId: text }
  }
  const labels: Record<string, string> = {}
  let workload: string | undefined
  let group: string | undefined
  for (const term of text.split(',')) {
    const eq = term.indexOf('=')
    const key = term.slice(0, eq).trim()
    const value = term.slice(eq + 1).trim()
    if (eq <= 0 || !ID_PATTERN.test(key)) throw bad(`${JSON.stringify(term)} is not key=value with a key of ${ID_RULE}`)
    if (value.length > 256) throw bad(`the value of ${key} is longer than 256 characters`)
    if (key === 'workload') workload = value
    else if (key === 'group') group = value
    else {
      if (Object.hasOwn(labels, key)) throw bad(`${key} is given twice`)
      labels[key] = value
    }
  }
  return {
    kind: 'selector',
    labels,
    ...(workload === undefined ? {} : { workload }),
    ...(group === undefined ? {} : { group }),
  }
}

/** `e` names workloade; a full name names itself. */
export function workloadMatches(runWorkload: string, asked: string): boolean {
  return runWorkload === asked || runWorkload === `workload${asked}`
}

/** The runs a side names, oldest first; BS_ERR_NOT_FOUND when none. */
export async function resolveSide(src: CompareSource, text: string): Promise<RunInfo[]> {
  const ref = parseSideRef(text)
  let runs: RunInfo[]
  if (ref.kind === 'run') {
    const run = await src.getRun(ref.runId)
    runs = run === undefined ? [] : [run]
  } else if (ref.kind === 'runs') {
    runs = []
    for (const id of ref.runIds) {
      const run = await src.getRun(id)
      if (run === undefined)
        throw new BenchstreamError('BS_ERR_NOT_FOUND', `no run ${JSON.stringify(id)} (named in ${text.slice(0, 200)})`)
      runs.push(run)
    }
  } else {
    const filter: RunFilter =
      ref.kind === 'group'
        ? { group: ref.group }
        : { labels: ref.labels, ...(ref.group === undefined ? {} : { group: ref.group }) }
    runs = await src.listRuns(MAX_RUNS_PER_SIDE + 1, filter)
    if (ref.kind === 'selector' && ref.workload !== undefined)
      runs = runs.filter((r) => workloadMatches(r.workload, ref.workload!))
    if (runs.length > MAX_RUNS_PER_SIDE)
      throw new BenchstreamError(
        'BS_ERR_TOO_LARGE',
        `${text} matches more than ${MAX_RUNS_PER_SIDE} runs; narrow it (add a label, workload= or group=)`,
      )
  }
  if (runs.length === 0)
    throw new BenchstreamError(
      'BS_ERR_NOT_FOUND',
      `no run matches ${JSON.stringify(text)}; list runs with \`benchstream runs [--group G] [--label k=v]\``,
    )
  // Oldest first: repetitions in the order they ran.
  return [...runs].sort(
    (a, b) =>
      (a.started_at ?? '').localeCompare(b.started_at ?? '') || a.repeat - b.repeat || a.run_id.localeCompare(b.run_id),
  )
}

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
  const pairs = pairWorkloads(a, b).pairs
  // Windows are the samples of a side with fewer than 3 runs.
  const needWindows = pairs.some((p) => p.baseline.length < MIN_REPETITIONS || p.candidate.length < MIN_REPETITIONS)
  const windows = needWindows ? await src.windowFigures(ids) : []
  const out = compareRuns({ ref: baselineRef, runs: a }, { ref: candidateRef, runs: b }, figures, windows, options)
  if (options.profileChanges !== undefined)
    out.profiles = await options.profileChanges(out.baseline.runs, out.candidate.runs)
  return out
}

export interface CompareSideInput {
  ref: string
  runs: readonly RunInfo[]
}

interface WorkloadPair {
  baselineName: string
  candidateName: string
  baseline: RunInfo[]
  candidate: RunInfo[]
}

/** One workload each: compared with each other; several: by equal name, the rest listed as unpaired. */
function pairWorkloads(a: readonly RunInfo[], b: readonly RunInfo[]): { pairs: WorkloadPair[]; unpaired: string[] } {
  const names = (runs: readonly RunInfo[]): string[] => [...new Set(runs.map((r) => r.workload))].sort()
  const wa = names(a)
  const wb = names(b)
  if (wa.length === 1 && wb.length === 1)
    return {
      pairs: [{ baselineName: wa[0]!, candidateName: wb[0]!, baseline: [...a], candidate: [...b] }],
      unpaired: [],
    }
  const pairs = wa
    .filter((w) => wb.includes(w))
    .map((w) => ({
      baselineName: w,
      candidateName: w,
      baseline: a.filter((r) => r.workload === w),
      candidate: b.filter((r) => r.workload === w),
    }))
  const unpaired = [
    ...wa.filter((w) => !wb.includes(w)).map((w) => `${w} (baseline only)`),
    ...wb.filter((w) => !wa.includes(w)).map((w) => `${w} (candidate only)`),
  ]
  return { pairs, unpaired }
}

/** What a run was asked to do, for comparable.ts. */
export function runSetup(r: RunInfo): RunSetup {
  const p = r.properties ?? {}
  const n = (v: string | undefined): number | null =>
    v === undefined || v.trim() === '' || !Number.isFinite(Number(v)) ? null : Number(v)
  const duration = n(p.maxexecutiontime)
  return {
    runId: r.run_id,
    properties: p,
    recordCount: n(p.recordcount),
    threads: r.threads,
    target: r.target === 0 ? null : r.target,
    durationS: duration === 0 ? null : duration,
    clients: r.clients,
  }
}

interface FigureDef {
  key: FigureKey
  /** Shown after the operation: `p99 (µs)`. */
  label: string
  direction: Direction
  run: (f: OpFigures) => number | null
  window: ((w: WindowFigures) => number | null) | null
}

const LATENCY = (
  key: FigureKey,
  label: string,
  run: (f: OpFigures) => number | null,
  window: (w: WindowFigures) => number | null,
): FigureDef => ({ key, label: `${label} (µs)`, direction: 'lower-is-better', run, window })
const THROUGHPUT: FigureDef = {
  key: 'throughput',
  label: 'throughput (ops/s)',
  direction: 'higher-is-better',
  run: (f) => f.opsPerSec,
  window: (w) => w.opsPerSec,
}
const ERROR_RATE: FigureDef = {
  key: 'error_rate',
  label: 'error rate',
  direction: 'lower-is-better',
  run: (f) => f.errorRate,
  window: (w) => w.errorRate,
}

/** The figures of an operation, in the order they are shown. */
export const OP_FIGURES: readonly FigureDef[] = [
  THROUGHPUT,
  LATENCY(
    'avg',
    'avg',
    (f) => f.avgUs,
    (w) => w.avgUs,
  ),
  LATENCY(
    'p50',
    'p50',
    (f) => f.p50Us,
    (w) => w.p50Us,
  ),
  LATENCY(
    'p95',
    'p95',
    (f) => f.p95Us,
    (w) => w.p95Us,
  ),
  LATENCY(
    'p99',
    'p99',
    (f) => f.p99Us,
    (w) => w.p99Us,
  ),
  LATENCY(
    'p99.9',
    'p99.9',
    (f) => f.p999Us,
    (w) => w.p999Us,
  ),
  LATENCY(
    'max',
    'max',
    (f) => f.maxUs,
    (w) => w.maxUs,
  ),
  ERROR_RATE,
  {
    key: 'cache_hit_ratio',
    label: 'cache-hit ratio',
    direction: 'higher-is-better',
    run: (f) => f.cacheHitRatio,
    window: (w) => w.cacheHitRatio,
  },
]
/** OVERALL: what YCSB's [OVERALL] has, and the error rate; latencies are compared per operation. */
const OVERALL_FIGURES: readonly FigureDef[] = [THROUGHPUT, ERROR_RATE]
const OVERALL = 'OVERALL'
/** YCSB's report order; other operations after these, by name. */
const OP_ORDER = ['READ', 'UPDATE', 'INSERT', 'SCAN', 'READ-MODIFY-WRITE', 'DELETE']

/**
 * The comparison from resolved runs and their figures (pure). `figures` and
 * `windows` may hold more runs than the sides; each side takes its own.
 */
export function compareRuns(
  a: CompareSideInput,
  b: CompareSideInput,
  figures: readonly RunFigures[],
  windows: readonly WindowFigures[],
  options: CompareOptions = {},
): ReleaseComparison {
  const alpha = options.alpha ?? 0.05
  const minEffect = options.minEffect ?? 0.01
  const force = options.force ?? false
  const byRun = new Map(figures.map((f) => [f.runId, f]))
  const { pairs, unpaired } = pairWorkloads(a.runs, b.runs)
  if (pairs.length === 0)
    throw new BenchstreamError('BS_ERR_NOT_COMPARABLE', `the sides ran no workload in common: ${unpaired.join(', ')}`)

  const differences: SetupDifference[] = []
  for (const p of pairs) {
    const prefix = pairs.length > 1 ? `${p.baselineName}: ` : ''
    if (p.baselineName !== p.candidateName)
      differences.push({
        name: 'workload',
        baseline: [p.baselineName],
        candidate: [p.candidateName],
        where: ['between sides'],
      })
    for (const d of compareSetups(p.baseline.map(runSetup), p.candidate.map(runSetup)).differences)
      differences.push({ ...d, name: `${prefix}${d.name}` })
  }
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
  for (const p of pairs) {
    const workload = p.baselineName === p.candidateName ? p.baselineName : `${p.baselineName} vs ${p.candidateName}`
    const fa = p.baseline.map((r) => byRun.get(r.run_id))
    const fb = p.candidate.map((r) => byRun.get(r.run_id))
    const throttle = sideThrottles(p, fa, fb)
    workloads.push({
      baseline: p.baselineName,
      candidate: p.candidateName,
      baselineRuns: p.baseline.map((r) => r.run_id),
      candidateRuns: p.candidate.map((r) => r.run_id),
      throttle,
    })
    const ops = orderOps([...new Set([...fa, ...fb].flatMap((f) => f?.ops.map((o) => o.op) ?? []))])
    for (const op of ops) {
      for (const def of op === OVERALL ? OVERALL_FIGURES : OP_FIGURES) {
        const row = figureRow(
          workload,
          op,
          def,
          p,
          fa,
          fb,
          windowsByRun,
          { alpha, minEffect, seed: options.seed ?? 1 },
          throttle,
        )
        if (row !== undefined) rows.push(row)
      }
    }
    for (const source of [
      ...new Set([...fa, ...fb].flatMap((f) => f?.serverCache.map((c) => c.source) ?? [])),
    ].sort()) {
      const def: FigureDef = {
        key: 'server_cache_hit_ratio',
        label: `server cache-hit ratio (${source})`,
        direction: 'higher-is-better',
        run: () => null,
        window: null,
      }
      const values = (side: ReadonlyArray<RunFigures | undefined>): Array<number | null> =>
        side.map((f) => f?.serverCache.find((c) => c.source === source)?.ratio ?? null)
      const row = figureRow(
        workload,
        OVERALL,
        def,
        p,
        fa,
        fb,
        windowsByRun,
        { alpha, minEffect, seed: options.seed ?? 1 },
        null,
        { a: values(fa), b: values(fb) },
      )
      if (row !== undefined) rows.push(row)
    }
  }
  adjust(rows, alpha)

  const count = (v: ComparedFigure['verdict']): number => rows.filter((r) => r.verdict === v).length
  return {
    baseline: side(a),
    candidate: side(b),
    alpha,
    minEffect,
    tests: rows.filter((r) => r.adjustedPValue !== null).length,
    comparable,
    forced: !comparable && force,
    differences,
    workloads,
    unpaired,
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

function side(s: CompareSideInput): ReleaseComparison['baseline'] {
  return {
    ref: s.ref,
    runs: s.runs.map((r) => r.run_id),
    groups: [...new Set(s.runs.map((r) => r.group_id).filter((g) => g !== ''))].sort(),
    workloads: [...new Set(s.runs.map((r) => r.workload))].sort(),
  }
}

function orderOps(ops: readonly string[]): string[] {
  const rank = (op: string): number =>
    op === OVERALL ? -1 : OP_ORDER.includes(op) ? OP_ORDER.indexOf(op) : OP_ORDER.length
  return [...ops].sort((x, y) => rank(x) - rank(y) || x.localeCompare(y))
}

/** Per run and operation: the steady windows in time order (the run's first and last window left out). */
function groupWindows(windows: readonly WindowFigures[]): Map<string, Map<string, WindowFigures[]>> {
  const span = new Map<string, { first: number; last: number }>()
  for (const w of windows) {
    const s = span.get(w.runId)
    span.set(
      w.runId,
      s === undefined ? { first: w.tS, last: w.tS } : { first: Math.min(s.first, w.tS), last: Math.max(s.last, w.tS) },
    )
  }
  const out = new Map<string, Map<string, WindowFigures[]>>()
  for (const w of windows) {
    const s = span.get(w.runId)!
    // Partial windows: the run started and ended inside them.
    if (w.tS === s.first || w.tS === s.last) continue
    let ops = out.get(w.runId)
    if (ops === undefined) out.set(w.runId, (ops = new Map()))
    const list = ops.get(w.op)
    if (list === undefined) ops.set(w.op, [w])
    else list.push(w)
  }
  for (const ops of out.values()) {
    // OVERALL per window: every call of every operation (its throughput counts failed calls too, as the report's does).
    const all = new Map<number, WindowFigures>()
    for (const list of ops.values()) {
      for (const w of list) {
        const o = all.get(w.tS) ?? {
          ...w,
          op: OVERALL,
          operations: 0,
          errors: 0,
          opsPerSec: 0,
          errorRate: null,
          avgUs: null,
          maxUs: null,
          p50Us: null,
          p95Us: null,
          p99Us: null,
          p999Us: null,
          cacheHitRatio: null,
        }
        o.operations += w.operations
        o.errors += w.errors
        o.opsPerSec = ((o.operations + o.errors) * 1000) / o.windowMs
        o.errorRate = o.operations + o.errors === 0 ? null : o.errors / (o.operations + o.errors)
        all.set(w.tS, o)
      }
    }
    for (const list of ops.values()) list.sort((x, y) => x.tS - y.tS)
    ops.set(
      OVERALL,
      [...all.values()].sort((x, y) => x.tS - y.tS),
    )
  }
  return out
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

interface RowOptions {
  alpha: number
  minEffect: number
  seed: number
}

function figureRow(
  workload: string,
  op: string,
  def: FigureDef,
  p: WorkloadPair,
  fa: ReadonlyArray<RunFigures | undefined>,
  fb: ReadonlyArray<RunFigures | undefined>,
  windowsByRun: Map<string, Map<string, WindowFigures[]>>,
  o: RowOptions,
  throttle: { baseline: SideThrottle; candidate: SideThrottle } | null,
  given?: { a: Array<number | null>; b: Array<number | null> },
): ComparedFigure | undefined {
  const runValues = (side: ReadonlyArray<RunFigures | undefined>): Array<number | null> =>
    side.map((f) => {
      const x = f?.ops.find((e) => e.op === op)
      const v = x === undefined ? null : def.run(x)
      return v === null || !Number.isFinite(v) ? null : v
    })
  const va = given?.a ?? runValues(fa)
  const vb = given?.b ?? runValues(fb)
  const ra = va.filter((v): v is number => v !== null)
  const rb = vb.filter((v): v is number => v !== null)
  if (ra.length === 0 && rb.length === 0) return undefined
  const winValues = (runs: readonly RunInfo[]): number[][] => {
    const get = def.window
    if (get === null) return []
    return runs.map((r) =>
      (windowsByRun.get(r.run_id)?.get(op) ?? []).map(get).filter((v): v is number => v !== null && Number.isFinite(v)),
    )
  }
  // Latencies and throughput change by factors: tested on logarithms (verdict.ts); rates and ratios as they are.
  const logScale = def.key !== 'error_rate' && def.key !== 'cache_hit_ratio' && def.key !== 'server_cache_hit_ratio'
  const verdict = compareFigure(
    { runs: ra, windows: winValues(p.baseline) },
    { runs: rb, windows: winValues(p.candidate) },
    { direction: def.direction, alpha: o.alpha, minEffect: o.minEffect, seed: o.seed, logScale },
  )
  const center = (xs: number[]): number | null => (xs.length === 0 ? null : median(xs))
  const ca = center(ra)
  const cb = center(rb)
  const rel = ca === null || cb === null ? null : relativeChange(ca, cb)
  const row: ComparedFigure = {
    workload,
    op,
    figure: def.key,
    label: `${op} ${def.label}`,
    direction: def.direction,
    baseline: {
      center: ca,
      spreadPercent: spread(ra),
      values: va,
      n: verdict.samples === 'none' ? ra.length : verdict.baseline.n,
    },
    candidate: {
      center: cb,
      spreadPercent: spread(rb),
      values: vb,
      n: verdict.samples === 'none' ? rb.length : verdict.candidate.n,
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
  }
  if (verdict.verdict === 'insufficient data' && identical(verdict, ra, rb)) {
    // Error rates of 0 on every run, a ratio of 1 everywhere: nothing to test, nothing changed.
    row.verdict = 'no significant change'
    row.reason = `every run of both sides has the same value (${ra[0]}): no change`
  }
  if (
    def.key === 'throughput' &&
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
function adjust(rows: ComparedFigure[], alpha: number): void {
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
      r.note = `adjusted p=${fmtP(q)}`
    }
  })
}

function fmtP(p: number): string {
  return p < 0.001 ? p.toExponential(1) : p.toFixed(3)
}

function trim(v: number): string {
  return String(Number(v.toFixed(6)))
}
