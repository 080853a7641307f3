/**
 * What a workload hands the driver: one transaction at a time, as plain data.
 * The workload decides *what* to do (YCSB's CoreWorkload semantics); the
 * driver's runner executes it against a binding and measures it. Nothing
 * here touches a datastore.
 */
import type { Operation } from '../../../schemas/events.v1.js'

export type FieldValues = Record<string, string>

export type Transaction =
  | { op: 'READ'; table: string; key: string; /** undefined = all fields */ fields: string[] | undefined }
  | { op: 'UPDATE'; table: string; key: string; values: FieldValues }
  | {
      op: 'INSERT'
      table: string
      key: string
      values: FieldValues
      /** key number, for 'latest' bookkeeping */ keynum: number
    }
  | { op: 'SCAN'; table: string; startKey: string; count: number; fields: string[] | undefined }
  | { op: 'READ-MODIFY-WRITE'; table: string; key: string; fields: string[] | undefined; values: FieldValues }
  | { op: 'DELETE'; table: string; key: string }

/** The driver-facing surface of a workload (implemented by CoreWorkload). */
export interface Workload {
  readonly table: string
  /** Records the load phase inserts (this client's share: insertcount). */
  readonly loadCount: number
  /** Transactions the run phase performs across all threads; 0 = until maxExecutionTimeS. */
  readonly operationCount: number
  /** Seconds after which the run stops; 0 = no limit. */
  readonly maxExecutionTimeS: number
  /** Next insert of the load phase, or undefined when this client's range is done. */
  nextLoad(): Transaction | undefined
  /** Next transaction of the run phase. */
  nextTransaction(): Transaction
  /** Tells the workload an insert finished (YCSB's acknowledged-key counter for 'latest'). */
  acknowledgeInsert(keynum: number): void
}

export type { Operation }
