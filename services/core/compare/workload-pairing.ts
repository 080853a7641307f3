/**
 * How a release comparison pairs the two sides' runs: by workload (or by the
 * value of a label, --by), never pooling runs whose workload is unknown, and
 * which setup differences each pair has (comparable.ts).
 */

import type { RunInfo } from '../../../schemas/runs-api.v1.js'
import { BenchstreamError } from '../errors.js'
import { compareSetups, type RunSetup, type SetupDifference } from './comparable.js'
import { runWorkload } from './release-sides.js'

/** What pairs a run with the other side's runs: its workload, or the value of the label named by `by`; '' unknown. */
export function pairingKey(r: RunInfo, by: string | undefined): string {
  return by === undefined ? runWorkload(r) : (r.labels[by] ?? '')
}

/** How an unknown pairing key is shown. */
export function keyText(key: string, by: string | undefined): string {
  if (key !== '') return key
  return by === undefined ? '(workload not recorded)' : `(no ${by} label)`
}

export interface CompareSideInput {
  ref: string
  runs: readonly RunInfo[]
}

export interface WorkloadPair {
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
export function pairWorkloads(
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
export function listed(ids: readonly string[]): string {
  return ids.length <= 4 ? ids.join(', ') : `${ids.slice(0, 4).join(', ')} and ${ids.length - 4} more`
}

/**
 * A summary run imported without -P or a workload file records no properties: its setup is unknown, not different.
 * Its properties and record count are left out of the comparison (and a note says so); clients still count.
 */
function setupUnknown(r: RunInfo): boolean {
  return r.origin === 'reported' && Object.keys(r.properties ?? {}).length === 0
}

export function pairSetupDifferences(p: WorkloadPair, unknownSetups: string[]): SetupDifference[] {
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
