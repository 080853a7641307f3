/**
 * The datastore binding interface: what a datastore must offer to be
 * benchmarked. Modelled on YCSB's DB class, so porting a YCSB binding
 * (HBase, Cassandra, ...) is mechanical. A binding never measures time and
 * never throws for a failed operation: it returns the outcome, and the
 * driver measures around the call.
 */
import type { CacheOutcome, Status } from '../../../schemas/events.v1.js'
import type { FieldValues } from '../workload/workload-types.js'

export interface OpResult {
  status: Status
  /** HIT/MISS when the binding can tell, else UNKNOWN. */
  cache: CacheOutcome
  /** Payload bytes read or written. */
  bytes: number
}

export interface Binding {
  /** Name used with -db / --binding. */
  readonly name: string
  /** Connects and prepares (create tables etc.). Called once per client before any thread runs. */
  init(): Promise<void>
  read(table: string, key: string, fields: string[] | undefined): Promise<OpResult>
  scan(table: string, startKey: string, count: number, fields: string[] | undefined): Promise<OpResult>
  update(table: string, key: string, values: FieldValues): Promise<OpResult>
  insert(table: string, key: string, values: FieldValues): Promise<OpResult>
  delete(table: string, key: string): Promise<OpResult>
  /**
   * Optional: cumulative server-side counters (cache hits/misses...) sampled
   * once a second during the run and sent as SERVER_METRICS records.
   */
  sampleServerMetrics?(): Promise<{ source: string; values: Record<string, number> }>
  /** Releases connections. */
  cleanup(): Promise<void>
}

/** Bytes of a set of field values, counted as YCSB's ByteIterators would (UTF-16 chars ~ bytes for ASCII). */
export function valuesBytes(values: FieldValues): number {
  let n = 0
  for (const k in values) n += values[k]!.length
  return n
}

/** Maps an exception from a client library to a YCSB status class. */
export function statusOf(err: unknown): Status {
  const msg = String((err as { message?: unknown })?.message ?? err).toLowerCase()
  if (msg.includes('timeout') || msg.includes('timed out')) return 'TIMEOUT'
  if (msg.includes('econnrefused') || msg.includes('connection') || msg.includes('unavailable'))
    return 'SERVICE_UNAVAILABLE'
  return 'ERROR'
}
