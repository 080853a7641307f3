/**
 * The records an import sends besides the intervals and reports: its RUN_LIFECYCLE start and end, and the raw
 * series as OPS messages.
 */
import { RECORD_KIND, type RunLifecycle } from '../../schemas/events.v1.js'
import { OpsBatchWriter } from '../core/codec/ops-batch-writer.js'
import { opCodes } from '../core/codec/record-encoders.js'
import type { ImportPlan } from '../core/ycsb/import-plan.js'
import type { ImportYcsbArgs } from './import-ycsb-args.js'
import type { FoundWorkload } from './import-ycsb-workload.js'

/** Raw events per OPS message (about 10 bytes each). */
const EVENTS_PER_BATCH = 4096

export function lifecycle(
  args: ImportYcsbArgs,
  phase: 'start' | 'end',
  atUs: number,
  source: string,
  workload: FoundWorkload | undefined,
  sent?: Record<string, number>,
  runtimeMs?: number,
): RunLifecycle {
  return {
    kind: RECORD_KIND.RUN_LIFECYCLE,
    phase,
    runId: args.runId,
    clientId: args.clientId,
    atUs,
    labels: { source, ...args.labels },
    workload: workload?.name ?? '',
    ...(workload?.properties === undefined ? {} : { properties: workload.properties }),
    binding: 'ycsb',
    threads: 0,
    target: 0,
    ...(phase === 'end' ? { sent: sent ?? {}, undelivered: 0, ...(runtimeMs === undefined ? {} : { runtimeMs }) } : {}),
  }
}

/** OPS messages of the raw series, EVENTS_PER_BATCH events each. */
export function* rawMessages(args: ImportYcsbArgs, plan: ImportPlan): Generator<Buffer> {
  const w = new OpsBatchWriter(args.runId, args.clientId)
  for (const s of plan.raw) {
    const [opCode, statusIndex, cacheIndex] = opCodes(s.op, s.status, 'UNKNOWN')
    for (let i = 0; i < s.startUs.length; i++) {
      w.add(0, opCode, cacheIndex, statusIndex, s.startUs[i]!, s.latencyUs[i]!, s.intendedUs[i]!, 0)
      if (w.count >= EVENTS_PER_BATCH) yield w.finish()
    }
  }
  if (w.count > 0) yield w.finish()
}
