/**
 * WindowStore on ClickHouse. Each table gets one INSERT per flush, tagged
 * with insert_deduplication_token = `<batch token>:<table>`; the tables keep
 * a non_replicated_deduplication_window, so a repeated flush of the same
 * offset range is dropped by ClickHouse instead of counted twice. A
 * verified write (a replay, a retry) then checks that the rows are there:
 * see writeStep for the one case where ClickHouse drops a replay that it
 * should have taken. The rows come from window-store-rows.ts and
 * ops-native.ts; refused data is isolated by insert-refusals.ts.
 */
import { BenchstreamError } from '../../core/errors.js'
import type { FlushBatch, RawOps } from '../../core/stats/partition-state.js'
import type { MissingRows, RefusedRow, WindowStore, WriteOptions, WriteResult } from '../../core/ports/window-store.js'
import { queryRows, verifiedCountSql, writeTable, type ClickHouse } from './client.js'
import { textToMs } from './datetime64-text.js'
import { bisect, errorText, isDataError } from './insert-refusals.js'
import { NativeInserter } from './native-inserter.js'
import { OPS_COLUMNS, opsNative, opsRow } from './ops-native.js'
import { knownStacks, profileRecordRows, type ProfileRows } from './profile-store.js'
import { reportedRows, runClientRow, serverMetricRows, windowRow } from './window-store-rows.js'

/**
 * Rows of one table that come from one source message (or one aggregated
 * window): the unit a refused insert is split into.
 */
interface Unit<R> {
  offset: number
  runId: string
  rows: R[]
}

/** What writing one table's rows of a batch did. */
interface StepResult {
  refused: RefusedRow[]
  /** Rows written (all but the refused). */
  stored: number
}

/** One table's share of a batch (see ClickHouseWindowStore.steps). */
interface TableStep {
  table: string
  write(tokenPrefix: string): Promise<StepResult>
  /** SQL condition selecting this batch's rows of the table, with its parameters. */
  where: string
  params: Record<string, unknown>
  /** Rows of the step that `where` can see, when not all that were written. */
  countable?: number
}

/** Rewrites of a table step whose rows a verified write found missing (each under its own token). */
const MAX_RECOVERIES = 4

export class ClickHouseWindowStore implements WindowStore {
  private readonly native: NativeInserter

  constructor(private readonly ch: ClickHouse) {
    this.native = new NativeInserter(ch)
  }

  async write(b: FlushBatch, opts: WriteOptions = {}): Promise<WriteResult> {
    const refused: RefusedRow[] = []
    const missing: MissingRows[] = []
    try {
      // In order: windows last but for the dead letters, as they are what reports count, so they
      // land only after everything else of this range.
      for (const step of await this.steps(b)) {
        const done = await this.writeStep(b, step, opts.verify === true)
        refused.push(...done.refused)
        if (done.missing !== undefined) missing.push(done.missing)
      }
      const db = this.ch.database
      const letters = [
        ...b.deadLetters.map((d) => ({
          src_partition: b.partition,
          src_offset: d.offset,
          reason: d.reason,
          run_id: d.runId,
          events: d.events,
          detail: d.detail,
        })),
        ...refused.map((r) => ({
          src_partition: b.partition,
          src_offset: Math.max(0, r.offset),
          reason: 'store_rejected',
          run_id: r.runId,
          events: 0,
          detail: `${r.table}: ${r.error}`,
        })),
      ]
      if (letters.length > 0) {
        const table = `${db}.dead_letters`
        const done = await this.writeStep(
          b,
          {
            table,
            write: async (prefix) => {
              await this.insertRows(table, `${prefix}:${table}`, letters)
              return { refused: [], stored: letters.length }
            },
            ...this.bySourceOffset(b, null),
            // A refused window row has no offset of its own (written as 0): only the others can be counted.
            countable: letters.filter((l) => l.src_offset >= b.firstOffset && l.src_offset <= b.lastOffset).length,
          },
          opts.verify === true,
        )
        if (done.missing !== undefined) missing.push(done.missing)
      }
    } catch (err) {
      throw new BenchstreamError(
        'BS_ERR_CLICKHOUSE',
        `writing offsets ${b.firstOffset}-${b.lastOffset} of ${b.topic}[${b.partition}] to ClickHouse ` +
          `(${this.ch.location}) failed: ${(err as Error).message}`,
        { cause: err, retryable: true },
      )
    }
    return { refused, missing }
  }

  /**
   * One table's part of a batch, written under a token prefix (the batch's
   * token, or a recovery prefix, see writeStep), and how to count the
   * batch's rows in that table.
   */
  private async steps(b: FlushBatch): Promise<TableStep[]> {
    const db = this.ch.database
    const steps: TableStep[] = []
    const rows = (
      table: string,
      units: Array<Unit<Record<string, unknown>>>,
      where: Pick<TableStep, 'where' | 'params'>,
    ): void => {
      if (units.length > 0) steps.push(this.rowsStep(table, units, where))
    }
    const runsOf = (ids: Iterable<string>): string[] => [...new Set(ids)]
    const ops = b.ops
    if (ops !== undefined && ops.length > 0) {
      const table = `${db}.ops`
      steps.push({
        table,
        write: (prefix) => this.isolateOps(table, prefix, ops, b.partition),
        ...this.bySourceOffset(b, ops.runIds),
      })
    }
    rows(
      `${db}.run_clients`,
      b.lifecycle.map(({ offset, record: r }) => ({
        offset,
        runId: r.runId,
        rows: [runClientRow(r, b.partition, offset)],
      })),
      this.bySourceOffset(b, runsOf(b.lifecycle.map((l) => l.record.runId))),
    )
    rows(
      `${db}.server_metrics`,
      b.serverMetrics
        .map(({ offset, record: r }) => ({
          offset,
          runId: r.runId,
          rows: serverMetricRows(r, b.partition, offset),
        }))
        .filter((u) => u.rows.length > 0),
      this.bySourceOffset(b, runsOf(b.serverMetrics.map((m) => m.record.runId))),
    )
    if (b.profiles.length > 0) steps.push(...(await this.profileSteps(b)))
    rows(
      `${db}.reported_measurements`,
      b.summaries
        .map(({ offset, record: r }) => ({ offset, runId: r.runId, rows: reportedRows(r, b.partition, offset) }))
        .filter((u) => u.rows.length > 0),
      this.bySourceOffset(b, runsOf(b.summaries.map((x) => x.record.runId))),
    )
    rows(
      `${db}.op_windows`,
      b.windows.map((w) => ({
        offset: -1,
        runId: w.runId,
        rows: [windowRow(w, b)],
      })),
      {
        where:
          'run_id IN {runs:Array(String)} AND src_partition = {p:UInt16} AND src_first_offset = {a:UInt64} ' +
          'AND src_last_offset = {b:UInt64}',
        params: { runs: runsOf(b.windows.map((w) => w.runId)), p: b.partition, a: b.firstOffset, b: b.lastOffset },
      },
    )
    return steps
  }

  /** Rows keyed by the source partition and offset (and run, the tables' first sort key, when the table has it). */
  private bySourceOffset(b: FlushBatch, runs: string[] | null): Pick<TableStep, 'where' | 'params'> {
    const range = 'src_partition = {p:Int64} AND src_offset BETWEEN {a:Int64} AND {b:Int64}'
    return {
      where: runs === null ? range : `run_id IN {runs:Array(String)} AND ${range}`,
      params: { runs: runs ?? [], p: b.partition, a: b.firstOffset, b: b.lastOffset },
    }
  }

  /**
   * Writes a step under the batch's token. With `verify`, counts the
   * batch's rows in the table afterwards. None at all while some were
   * written means ClickHouse took the insert for a duplicate of one that
   * never landed: a MergeTree table records the token in its deduplication
   * log before it renames the new part into place, so a process killed in
   * between leaves the token without the part, and the replay of that batch
   * is dropped (ClickHouse's MergeTreeSink; reproduced here with chDB,
   * about 1 of 100 SIGKILLs during tokenized inserts). Then the step is
   * written again under a recovery prefix, itself deterministic (`#r1`,
   * `#r2`, ...), so that a crash during the recovery is replayed the same
   * way. Some rows but not all (a refused-row split whose parts fared
   * differently) cannot be told apart safely: reported, not rewritten.
   */
  private async writeStep(
    b: FlushBatch,
    step: TableStep,
    verify: boolean,
  ): Promise<{ refused: RefusedRow[]; missing?: MissingRows }> {
    let done = await step.write(b.token)
    const expected = (): number => Math.min(step.countable ?? done.stored, done.stored)
    if (!verify || expected() === 0) return { refused: done.refused }
    const found = await this.countRows(step)
    if (found >= expected()) return { refused: done.refused }
    if (found > 0)
      return { refused: done.refused, missing: { table: step.table, expected: expected(), found, restored: false } }
    for (let k = 1; k <= MAX_RECOVERIES; k++) {
      done = await step.write(`${b.token}#r${k}`)
      if ((await this.countRows(step)) >= expected())
        return { refused: done.refused, missing: { table: step.table, expected: expected(), found, restored: true } }
    }
    return {
      refused: done.refused,
      missing: { table: step.table, expected: expected(), found: await this.countRows(step), restored: false },
    }
  }

  private async countRows(step: TableStep): Promise<number> {
    const [r] = await queryRows<{ n: string }>(this.ch, verifiedCountSql(this.ch, step.table, step.where), step.params)
    return Number(r?.n ?? 0)
  }

  /**
   * PROFILE records: new stacks, then samples, then the slice rows that make
   * them visible, each table isolated per record like the other kinds.
   */
  private async profileSteps(b: FlushBatch): Promise<TableStep[]> {
    const db = this.ch.database
    const records = b.profiles.map(({ offset, record }) => ({
      offset,
      runId: record.runId,
      rows: profileRecordRows(record, b.partition, offset),
    }))
    const seen = await knownStacks(
      this.ch,
      records.flatMap((r) => r.rows.stacks.map((s) => s.stack_id)),
    )
    const runs = [...new Set(records.map((r) => r.runId))]
    const fresh = (r: ProfileRows): object[] =>
      r.stacks.filter((s) => {
        if (seen.has(s.stack_id)) return false
        seen.add(s.stack_id)
        return true
      })
    const slices = records.map((r) => r.rows.slice)
    const tables: Array<[string, (r: ProfileRows) => object[], Pick<TableStep, 'where' | 'params'>]> = [
      // A stack new to the store is written with the first record that has it; stacks are shared, so any row of the id
      // counts.
      [
        'profile_stacks',
        fresh,
        {
          where: 'stack_id IN {ids:Array(UInt64)}',
          params: { ids: [...new Set(records.flatMap((r) => r.rows.stacks.map((s) => BigInt(s.stack_id))))] },
        },
      ],
      // Samples carry no source offset: a record's samples are those of its profile and slice.
      [
        'profile_samples',
        (r) => r.samples,
        {
          where:
            'run_id IN {runs:Array(String)} AND (profile_id, toUnixTimestamp64Milli(window_start)) ' +
            'IN {keys:Array(Tuple(String, Int64))}',
          params: { runs, keys: slices.map((x) => [x.profile_id, textToMs(x.window_start)]) },
        },
      ],
      ['profile_slices', (r) => [r.slice], this.bySourceOffset(b, runs)],
    ]
    const steps: TableStep[] = []
    for (const [name, rowsOf, where] of tables) {
      const table = `${db}.${name}`
      // Rows are taken once: the stack filter is stateful, and a rewrite must write the same rows.
      const units = records
        .map((r) => ({ offset: r.offset, runId: r.runId, rows: rowsOf(r.rows) as Array<Record<string, unknown>> }))
        .filter((u) => u.rows.length > 0)
      if (units.length > 0) steps.push(this.rowsStep(table, units, where))
    }
    return steps
  }

  /** A step of JSON rows, isolated per unit when ClickHouse refuses some. */
  private rowsStep(
    table: string,
    units: Array<Unit<Record<string, unknown>>>,
    where: Pick<TableStep, 'where' | 'params'>,
  ): TableStep {
    return {
      table,
      write: (prefix) =>
        this.isolate(table, prefix, units, (rows, token) => this.insertRows(table, token, rows), jsonPayload),
      ...where,
    }
  }

  /**
   * Inserts all units; when ClickHouse refuses the data itself, splits the
   * units in halves until the refused ones stand alone, stores the rest and
   * returns the refused. Each part carries a token derived from its place in
   * the split, so a replay of the same batch (same units, same refusals)
   * repeats the same inserts and ClickHouse drops them. Retryable errors
   * propagate: the caller retries the whole batch.
   */
  private async isolate<R>(
    table: string,
    batchToken: string,
    units: Array<Unit<R>>,
    insert: (rows: R[], token: string) => Promise<void>,
    payload: (rows: R[]) => Buffer,
  ): Promise<StepResult> {
    let stored = units.reduce((n, u) => n + u.rows.length, 0)
    const refused = await bisect(
      units.length,
      `${batchToken}:${table}`,
      (from, to, token) =>
        insert(
          units.slice(from, to).flatMap((u) => u.rows),
          token,
        ),
      (i, err) => {
        const u = units[i]!
        stored -= u.rows.length
        return { table, offset: u.offset, runId: u.runId, error: errorText(err), payload: payload(u.rows) }
      },
    )
    return { refused, stored }
  }

  /**
   * Raw events: one Native insert of all rows; only a refused one is split,
   * by row ranges, until the refused rows stand alone (bisect). Every part
   * is encoded again from the columns, so a replay encodes the same bytes.
   */
  private async isolateOps(table: string, batchToken: string, ops: RawOps, partition: number): Promise<StepResult> {
    const token = `${batchToken}:${table}`
    try {
      await this.native.insert(table, OPS_COLUMNS, opsNative(ops, partition, 0, ops.length), token)
      return { refused: [], stored: ops.length }
    } catch (err) {
      if (!isDataError(err)) throw err
    }
    const refused = await bisect(
      ops.length,
      `${token}/rows`,
      (from, to, t) => this.native.insert(table, OPS_COLUMNS, opsNative(ops, partition, from, to), t),
      (i, err) => {
        const row = opsRow(ops, partition, i)
        return {
          table,
          offset: ops.offset[i]!,
          runId: row.run_id,
          error: errorText(err),
          payload: Buffer.from(JSON.stringify(row)),
        }
      },
    )
    return { refused, stored: ops.length - refused.length }
  }

  private async insertRows(table: string, token: string, values: Array<Record<string, unknown>>): Promise<void> {
    await this.ch.client.insert({
      table: writeTable(this.ch, table),
      values,
      format: 'JSONEachRow',
      clickhouse_settings: { insert_deduplication_token: token },
    })
  }
}

function jsonPayload(rows: Array<Record<string, unknown>>): Buffer {
  return Buffer.from(JSON.stringify(rows))
}
