/**
 * The sides of a release comparison: what a side names (a run, `runs:ID,...`,
 * `group:NAME` or a label selector) and the runs it resolves to, oldest first.
 */

import type { RunInfo } from '../../../schemas/runs-api.v1.js'
import { ID_PATTERN, ID_RULE } from '../../../schemas/events.v1.js'
import { BenchstreamError } from '../errors.js'
import type { ReadModel, RunFilter } from '../ports/read-model.js'
import { normalizeWorkload } from '../ycsb/workload-source.js'

/** What compareReleases reads (a subset of the ReadModel port). */
export type CompareSource = Pick<ReadModel, 'getRun' | 'listRuns' | 'runFigures' | 'windowFigures' | 'reportedRuns'>

/** Runs one side may have at most; a selector matching more is refused (narrow it). */
export const MAX_RUNS_PER_SIDE = 1000

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
