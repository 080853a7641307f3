/**
 * Are two sets of runs comparable? Lists every setting whose values differ
 * between the sides (and among the runs of one side), so that "B is 30 %
 * slower" cannot silently come from "B ran 64 threads". Properties that only
 * name or report a run are ignored (IGNORED_PROPERTIES, IGNORED_PREFIXES);
 * passwords are masked. Which, and why: docs/design/verdicts.md#comparable-runs.
 */
import { requireHalfOpenRange } from './sample-stats.js'

/** What one run was asked to do. */
export interface RunSetup {
  runId: string
  /** Workload and driver properties (`-P` files merged with `-p` overrides). */
  properties: Readonly<Record<string, string>>
  /** Records in the store (`recordcount`); null when unknown. */
  recordCount: number | null
  /** Threads of the run, summed over its clients. */
  threads: number
  /** Target of the run in ops/s, summed over its clients; null or 0 when unthrottled. */
  target: number | null
  /**
   * How long the run was asked to run, seconds (maxexecutiontime); null when
   * it was bounded by operationcount instead. Not the measured runtime: a
   * faster release finishes an operationcount-bounded run sooner, and that is
   * a result, not a setup difference.
   */
  durationS: number | null
  /** Driver processes (clients) of the run. */
  clients: number
}

export const IGNORED_PROPERTIES: readonly string[] = [
  'runid',
  'clientid',
  'label',
  'group',
  'repeat',
  'exportfile',
  'exporter',
  'status',
  'status.interval',
  'measurementtype',
  'hdrhistogram.fileoutput',
  'hdrhistogram.output.path',
  'hdrhistogram.percentiles',
  'histogram.buckets',
  'timeseries.granularity',
]
export const IGNORED_PREFIXES: readonly string[] = ['label.']

export interface SetupDifference {
  /** `threads`, `target`, `recordCount`, `durationS`, `clients`, or `property <name>`. */
  name: string
  /**
   * Distinct values among the baseline's runs, sorted; `(unset)` for a property a run did not have, `(none)` for null.
   */
  baseline: string[]
  candidate: string[]
  /** Between the two sides, and/or among the runs of one side. */
  where: Array<'between sides' | 'within baseline' | 'within candidate'>
}

export interface Comparability {
  /** True when no setting differs (ignored properties aside). */
  comparable: boolean
  differences: SetupDifference[]
  /** Properties present in some run and ignored, sorted. */
  ignored: string[]
}

export interface ComparableOptions {
  /** More property names to ignore; a name ending in `.` or `*` ignores a prefix (`redis.*`). */
  ignore?: readonly string[]
  /**
   * Durations within this fraction of each other count as equal, for callers
   * that only know the measured duration of a time-bounded run (it ends a
   * little after maxexecutiontime). @default 0.05
   */
  durationTolerance?: number
}

const UNSET = '(unset)'
const NONE = '(none)'

/** Compares the setups of two sets of runs (see the file comment). */
export function compareSetups(
  baseline: readonly RunSetup[],
  candidate: readonly RunSetup[],
  options: ComparableOptions = {},
): Comparability {
  const tolerance = options.durationTolerance ?? 0.05
  requireHalfOpenRange('durationTolerance', tolerance, 0, 1)
  const extra = options.ignore ?? []
  const isIgnored = (key: string): boolean =>
    IGNORED_PROPERTIES.includes(key) ||
    IGNORED_PREFIXES.some((p) => key.startsWith(p)) ||
    key.toLowerCase().endsWith('password') ||
    extra.some((e) =>
      e.endsWith('*') ? key.startsWith(e.slice(0, -1)) : e.endsWith('.') ? key.startsWith(e) : key === e,
    )

  const differences: SetupDifference[] = []
  const check = (
    name: string,
    value: (r: RunSetup) => string,
    same: (a: string, b: string) => boolean = (a, b) => a === b,
  ): void => {
    const a = distinct(baseline.map(value))
    const b = distinct(candidate.map(value))
    const where: SetupDifference['where'] = []
    if (!allSame([...a, ...b], same)) {
      if (!a.every((x) => b.some((y) => same(x, y))) || !b.every((y) => a.some((x) => same(x, y))))
        where.push('between sides')
      if (!allSame(a, same)) where.push('within baseline')
      if (!allSame(b, same)) where.push('within candidate')
      differences.push({ name, baseline: a, candidate: b, where })
    }
  }
  const num = (v: number | null): string => (v === null ? NONE : String(v))
  check('threads', (r) => num(r.threads))
  check('target', (r) => num(r.target === 0 ? null : r.target))
  check('recordCount', (r) => num(r.recordCount))
  check(
    'durationS',
    (r) => num(r.durationS),
    (x, y) => x === y || withinTolerance(x, y, tolerance),
  )
  check('clients', (r) => num(r.clients))

  const all = [...baseline, ...candidate]
  const keys = [...new Set(all.flatMap((r) => Object.keys(r.properties)))].sort()
  const ignored: string[] = []
  for (const key of keys) {
    if (isIgnored(key)) {
      ignored.push(key)
      continue
    }
    check(`property ${key}`, (r) =>
      Object.hasOwn(r.properties, key) ? maskUrlPassword(r.properties[key] ?? '') : UNSET,
    )
  }
  return { comparable: differences.length === 0, differences, ignored }
}

function distinct(values: readonly string[]): string[] {
  return [...new Set(values)].sort()
}

function allSame(values: readonly string[], same: (a: string, b: string) => boolean): boolean {
  return values.every((v) => same(v, values[0] ?? v))
}

function withinTolerance(a: string, b: string, tolerance: number): boolean {
  const x = Number(a)
  const y = Number(b)
  if (a === NONE || b === NONE || !Number.isFinite(x) || !Number.isFinite(y)) return false
  return Math.abs(x - y) <= tolerance * Math.max(Math.abs(x), Math.abs(y))
}

/** `scheme://user:secret@host` → `scheme://user:***@host`, so a listed difference never shows a password. */
function maskUrlPassword(value: string): string {
  return value.replace(/^([a-z][a-z0-9+.-]*:\/\/[^:/@]*):[^@/]*@/i, '$1:***@')
}
