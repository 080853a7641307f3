/**
 * Raw events (RawOps) as the rows of the `ops` table: one Native block per insert, written straight from the typed
 * arrays, and one event as a row object for a refused row's dead letter.
 */
import { CACHE_OUTCOMES, OPERATIONS, STATUSES } from '../../../schemas/events.v1.js'
import type { RawOps } from '../../core/stats/partition-state.js'
import { usToDateTime64 } from './datetime64-text.js'
import {
  fixedColumn,
  indexArray,
  int64Column,
  lowCardinalityColumn,
  nativeBlock,
  type NativeColumn,
} from './native-insert.js'

/**
 * The columns of `ops` a raw-event insert writes (schemas/clickhouse/0007-ops-storage.sql); `intended_us` is latency_us
 * + wait_us.
 */
export const OPS_COLUMNS = [
  'run_id',
  'client_id',
  'thread',
  'op',
  'start',
  'latency_us',
  'wait_us',
  'status',
  'cache',
  'bytes',
  'src_partition',
  'src_offset',
] as const

/**
 * Raw events [from, to) as one Native block in OPS_COLUMNS order, written
 * straight from RawOps' typed arrays: most columns are views on them, and
 * only run and client ids (a dictionary index per row), the two 64-bit
 * columns and wait_us take a pass over the rows. No string per event.
 */
export function opsNative(ops: RawOps, partition: number, from: number, to: number): Uint8Array[] {
  const rows = to - from
  // run_id and client_id: one dictionary entry per distinct id, an index per row.
  const dictionary = (ids: readonly string[]): { keys: string[]; ofGroup: Uint32Array } => {
    const at = new Map<string, number>()
    const ofGroup = new Uint32Array(ids.length)
    ids.forEach((id, g) => {
      let k = at.get(id)
      if (k === undefined) at.set(id, (k = at.size))
      ofGroup[g] = k
    })
    return { keys: [...at.keys()], ofGroup }
  }
  const runs = dictionary(ops.runIds)
  const clients = dictionary(ops.clientIds)
  const runIndex = indexArray(runs.keys.length, rows)
  const clientIndex = indexArray(clients.keys.length, rows)
  const wait = new Uint32Array(rows)
  const partitions = new Uint16Array(rows).fill(partition)
  for (let i = 0; i < rows; i++) {
    const g = ops.group[from + i]!
    runIndex[i] = runs.ofGroup[g]!
    clientIndex[i] = clients.ofGroup[g]!
    // The wire format guarantees intendedUs >= latencyUs (schemas/events.v1.ts).
    wait[i] = ops.intendedUs[from + i]! - ops.latencyUs[from + i]!
  }
  const columns: NativeColumn[] = [
    { name: 'run_id', type: 'LowCardinality(String)', data: lowCardinalityColumn(runs.keys, runIndex, 0, rows) },
    {
      name: 'client_id',
      type: 'LowCardinality(String)',
      data: lowCardinalityColumn(clients.keys, clientIndex, 0, rows),
    },
    { name: 'thread', type: 'UInt16', data: fixedColumn(ops.thread, from, to) },
    // opCode is 1-based: key 0 is never used.
    { name: 'op', type: 'LowCardinality(String)', data: lowCardinalityColumn(OP_KEYS, ops.opCode, from, to) },
    { name: 'start', type: "DateTime64(6, 'UTC')", data: int64Column(ops.startUs, from, to) },
    { name: 'latency_us', type: 'UInt32', data: fixedColumn(ops.latencyUs, from, to) },
    { name: 'wait_us', type: 'UInt32', data: fixedColumn(wait, 0, rows) },
    { name: 'status', type: 'LowCardinality(String)', data: lowCardinalityColumn(STATUSES, ops.statusIndex, from, to) },
    { name: 'cache', type: CACHE_ENUM, data: fixedColumn(ops.cacheIndex, from, to) },
    { name: 'bytes', type: 'UInt32', data: fixedColumn(ops.bytes, from, to) },
    { name: 'src_partition', type: 'UInt16', data: fixedColumn(partitions, 0, rows) },
    { name: 'src_offset', type: 'UInt64', data: int64Column(ops.offset, from, to) },
  ]
  return nativeBlock(rows, columns)
}

const OP_KEYS = ['', ...OPERATIONS]
/** The type of `ops.cache`: the enum's values are the indexes of CACHE_OUTCOMES. */
const CACHE_ENUM = `Enum8(${CACHE_OUTCOMES.map((c, i) => `'${c}' = ${i}`).join(', ')})`

/** One raw event as a row object (the payload of a refused row's dead letter). */
export function opsRow(
  ops: RawOps,
  partition: number,
  i: number,
): Record<string, string | number> & { run_id: string } {
  const g = ops.group[i]!
  return {
    run_id: ops.runIds[g]!,
    client_id: ops.clientIds[g]!,
    thread: ops.thread[i]!,
    op: OPERATIONS[ops.opCode[i]! - 1]!,
    start: usToDateTime64(ops.startUs[i]!),
    latency_us: ops.latencyUs[i]!,
    intended_us: ops.intendedUs[i]!,
    status: STATUSES[ops.statusIndex[i]!]!,
    cache: CACHE_OUTCOMES[ops.cacheIndex[i]!]!,
    bytes: ops.bytes[i]!,
    src_partition: partition,
    src_offset: ops.offset[i]!,
  }
}
