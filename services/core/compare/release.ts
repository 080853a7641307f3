/**
 * Release A vs release B over stored runs: `benchstream compare A B` and GET
 * /api/v1/compare. A side is a run, `group:NAME` or a label selector; each
 * figure is the median over its runs of the run's merged figure, judged by
 * verdict.ts, p-values adjusted together, throttled runs by throttled.ts,
 * setups checked by comparable.ts. The rules: docs/design/verdicts.md.
 * Summary runs (YCSB's reports as printed, run-values.ts) are compared on
 * what their reports hold, paired by workload or --by, never pooled;
 * nothing to compare is BS_ERR_NOTHING_TO_COMPARE: docs/guides/ycsb-reports.md.
 */
import type { ComparedFigure, ReleaseComparison } from '../../../schemas/compare-api.v1.js'
import type { ReportedRun } from '../../../schemas/run-reports-api.v1.js'
import type { RunFigures, RunInfo, WindowFigures } from '../../../schemas/runs-api.v1.js'
import { ID_PATTERN, ID_RULE } from '../../../schemas/events.v1.js'
import { BenchstreamError } from '../errors.js'
import type { ReadModel, RunFilter } from '../ports/read-model.js'
import { compareSetups, type RunSetup, type SetupDifference } from './comparable.js'
import { benjaminiHochberg } from './multiple-testing.js'
import { median, relativeChange, summarize } from './sample-stats.js'
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
import { assessThrottle, throttledThroughputVerdict, type SideThrottle } from './throttled.js'
import { compareFigure, type Verdict } from './verdict.js'
import { normalizeWorkload } from '../ycsb/workload-source.js'

/** What compareReleases reads (a subset of the ReadModel port). */
export type CompareSource = Pick<ReadModel, 'getRun' | 'listRuns' | 'runFigures' | 'windowFigures' | 'reportedRuns'>

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

/**
 * The workload a run ran: the one recorded with it (the driver's -P files, import-ycsb's --workload, -P or workload
 * file), else its `workload` label (normalized: `e` is `workloade`); '' when neither says.
 */
export function runWorkload(r: RunInfo): string {
  const w = r.workload !== '' ? r.workload : (r.labels.workload ?? '')
  return normalizeWorkload(w)
}

/** What pairs a run with the other side's runs: its workload, or the value of the label named by `by`; '' unknown. */
function pairingKey(r: RunInfo, by: string | undefined): string {
  return by === undefined ? runWorkload(r) : (r.labels[by] ?? '')
}

/** How an unknown pairing key is shown. */
function keyText(key: string, by: string | undefined): string {
  if (key !== '') return key
  return by === undefined ? '(workload not recorded)' : `(no ${by} label)`
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

/**
 * One workload each: compared with each other; several: by equal name, the rest listed as unpaired. Runs whose
 * workload (or `by` label) is unknown are never pooled: more than one of them on a side is refused, since nothing
 * tells whether they ran the same workload (BS_ERR_NOT_COMPARABLE, whatever --force says).
 */
function pairWorkloads(
  a: readonly RunInfo[],
  b: readonly RunInfo[],
  by: string | undefined,
): { pairs: WorkloadPair[]; unpaired: string[] } {
  for (const [name, runs] of [
    ['baseline', a],
    ['candidate', b],
  ] as const) {
    const unknown = runs.filter((r) => pairingKey(r, by) === '')
    if (unknown.length > 1)
      throw new BenchstreamError(
        'BS_ERR_NOT_COMPARABLE',
        `the ${name}'s runs ${listed(unknown.map((r) => r.run_id))} have ` +
          (by === undefined ? 'no recorded workload (and no workload label)' : `no ${by} label`) +
          `: nothing tells whether they ran the same workload, and runs of different workloads are never pooled ` +
          `into one sample. Record the workload when importing (import-ycsb --workload NAME, -P FILE, or the ` +
          `workload file next to the report), ` +
          (by === undefined
            ? 'or label the runs (--label workload=e) or pair them with --by KEY'
            : `or label every run with ${by}=...`),
      )
  }
  const names = (runs: readonly RunInfo[]): string[] => [...new Set(runs.map((r) => pairingKey(r, by)))].sort()
  const wa = names(a)
  const wb = names(b)
  if (wa.length === 1 && wb.length === 1)
    return {
      pairs: [
        { baselineName: keyText(wa[0]!, by), candidateName: keyText(wb[0]!, by), baseline: [...a], candidate: [...b] },
      ],
      unpaired: [],
    }
  const pairs = wa
    .filter((w) => wb.includes(w))
    .map((w) => ({
      baselineName: keyText(w, by),
      candidateName: keyText(w, by),
      baseline: a.filter((r) => pairingKey(r, by) === w),
      candidate: b.filter((r) => pairingKey(r, by) === w),
    }))
  const unpaired = [
    ...wa.filter((w) => !wb.includes(w)).map((w) => `${keyText(w, by)} (baseline only)`),
    ...wb.filter((w) => !wa.includes(w)).map((w) => `${keyText(w, by)} (candidate only)`),
  ]
  return { pairs, unpaired }
}

/** Run ids for a message: the first few, then how many more. */
function listed(ids: readonly string[]): string {
  return ids.length <= 4 ? ids.join(', ') : `${ids.slice(0, 4).join(', ')} and ${ids.length - 4} more`
}

/**
 * A summary run imported without -P or a workload file records no properties: its setup is unknown, not different.
 * Its properties and record count are left out of the comparison (and a note says so); clients still count.
 */
function setupUnknown(r: RunInfo): boolean {
  return r.origin === 'reported' && Object.keys(r.properties ?? {}).length === 0
}

function pairSetupDifferences(p: WorkloadPair, unknownSetups: string[]): SetupDifference[] {
  const ka = p.baseline.filter((r) => !setupUnknown(r))
  const kb = p.candidate.filter((r) => !setupUnknown(r))
  if (ka.length === p.baseline.length && kb.length === p.candidate.length)
    return compareSetups(p.baseline.map(runSetup), p.candidate.map(runSetup)).differences
  unknownSetups.push(...[...p.baseline, ...p.candidate].filter(setupUnknown).map((r) => r.run_id))
  const clientsOnly = (r: RunInfo): RunSetup => ({
    ...runSetup(r),
    properties: {},
    recordCount: null,
    threads: 0,
    target: null,
    durationS: null,
  })
  const known = ka.length > 0 && kb.length > 0 ? compareSetups(ka.map(runSetup), kb.map(runSetup)).differences : []
  const clients = compareSetups(p.baseline.map(clientsOnly), p.candidate.map(clientsOnly)).differences
  return [...known.filter((d) => d.name !== 'clients'), ...clients]
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
  test: 'auto' | 'welch'
}

function figureRow(
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
