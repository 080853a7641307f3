/**
 * WindowStore on ClickHouse. Each table gets one INSERT per flush, tagged
 * with insert_deduplication_token = `<batch token>:<table>`; the tables keep
 * a non_replicated_deduplication_window, so a repeated flush of the same
 * offset range is dropped by ClickHouse instead of counted twice. A
 * verified write (a replay, a retry) then checks that the rows are there:
 * see writeStep for the one case where ClickHouse drops a replay that it
 * should have taken.
 */
import { randomUUID } from 'node:crypto'
import { mkdir, readdir, rm, writeFile } from 'node:fs/promises'
import path from 'node:path'
import { Readable } from 'node:stream'
import { finished } from 'node:stream/promises'
import { Session } from 'chdb'
import { CACHE_OUTCOMES, OPERATIONS, STATUSES, type SummaryReportRecord } from '../../../schemas/events.v1.js'
import { BenchstreamError } from '../../core/errors.js'
import type { FlushBatch, RawOps } from '../../core/stats/partition-state.js'
import type { MissingRows, RefusedRow, WindowStore, WriteOptions, WriteResult } from '../../core/ports/window-store.js'
import { queryRows, verifiedCountSql, writeTable, type ClickHouse } from './client.js'
import { knownStacks, profileRecordRows, type ProfileRows } from './profile-store.js'
import {
  fixedColumn,
  indexArray,
  int64Column,
  lowCardinalityColumn,
  nativeBlock,
  type NativeColumn,
} from './native-insert.js'

/** `seconds.micros` text that DateTime64(6) parses exactly (no float rounding). */
export function usToDateTime64(us: number): string {
  const s = Math.floor(us / 1e6)
  return `${s}.${String(us - s * 1e6).padStart(6, '0')}`
}

/** The ms of a `seconds.millis` DateTime64(3) text (as msToDateTime64 and the profile rows write it). */
function textToMs(text: string): number {
  const [s, ms = '0'] = text.split('.')
  return Number(s) * 1000 + Number(ms.padEnd(3, '0').slice(0, 3))
}

function msToDateTime64(us: number): string {
  const ms = Math.floor(us / 1000)
  const s = Math.floor(ms / 1000)
  return `${s}.${String(ms - s * 1000).padStart(3, '0')}`
}

/**
 * ClickHouse error codes that mean "this data cannot be stored", whatever
 * the retry: parse and type errors of a value. Anything else (connection
 * refused, timeouts, memory, too many parts, an error without a code) is
 * treated as retryable.
 */
const NON_RETRYABLE_CODES = new Set([
  6, // CANNOT_PARSE_TEXT
  25, // CANNOT_PARSE_ESCAPE_SEQUENCE
  26, // CANNOT_PARSE_QUOTED_STRING
  27, // CANNOT_PARSE_INPUT_ASSERTION_FAILED
  32, // ATTEMPT_TO_READ_AFTER_EOF
  38, // CANNOT_PARSE_DATE
  41, // CANNOT_PARSE_DATETIME
  43, // ILLEGAL_TYPE_OF_ARGUMENT
  53, // TYPE_MISMATCH
  69, // ARGUMENT_OUT_OF_BOUND
  70, // CANNOT_CONVERT_TYPE
  72, // CANNOT_PARSE_NUMBER
  117, // INCORRECT_DATA
  131, // TOO_LARGE_STRING_SIZE
  321, // VALUE_IS_OUT_OF_RANGE_OF_DATA_TYPE
  349, // CANNOT_INSERT_NULL_IN_ORDINARY_COLUMN
  1001, // STD_EXCEPTION (e.g. a malformed UTF-8 sequence)
])

/** The ClickHouse error code of an error from @clickhouse/client (HTTP or chDB), or undefined. */
export function clickhouseErrorCode(err: unknown): number | undefined {
  const e = err as { code?: unknown; message?: unknown }
  if (typeof e.code === 'string' && /^\d+$/.test(e.code)) return Number(e.code)
  const m = /\bCode: (\d+)\b/.exec(typeof e.message === 'string' ? e.message : '')
  return m === null ? undefined : Number(m[1])
}

/** True when retrying the same insert cannot help: the data itself is refused. */
export function isDataError(err: unknown): boolean {
  const code = clickhouseErrorCode(err)
  return code !== undefined && NON_RETRYABLE_CODES.has(code)
}

/**
 * Rows of one table that come from one source message (or one aggregated
 * window): the unit a refused insert is split into.
 */
interface Unit<R> {
  offset: number
  runId: string
  rows: R[]
}

/** Error text kept in a dead letter. */
const MAX_ERROR_CHARS = 2000

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
  /** The embedded engine's spool directory, once created. */
  private spool: Promise<string> | undefined

  constructor(private readonly ch: ClickHouse) {}

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
        rows: [
          {
            run_id: r.runId,
            client_id: r.clientId,
            phase: r.phase,
            at: usToDateTime64(Math.round(r.atUs)),
            labels: r.labels,
            workload: r.workload,
            binding: r.binding,
            threads: r.threads,
            target: r.target,
            sent: r.sent ?? {},
            undelivered: r.undelivered ?? 0,
            runtime_ms: Math.round(r.runtimeMs ?? 0),
            src_partition: b.partition,
            src_offset: offset,
            group_id: r.group ?? '',
            repeat: r.repeat ?? 0,
            properties: r.properties ?? {},
            schedule_lag_max_ms: r.scheduleLagMaxMs ?? 0,
            behind_schedule_episodes: r.behindScheduleEpisodes ?? 0,
            expected_clients: r.expectedClients ?? 0,
            clock_offset_ms: r.clockOffsetMs ?? null,
            first_op_at: r.firstOpUs === undefined ? null : usToDateTime64(Math.round(r.firstOpUs)),
          },
        ],
      })),
      this.bySourceOffset(b, runsOf(b.lifecycle.map((l) => l.record.runId))),
    )
    rows(
      `${db}.server_metrics`,
      b.serverMetrics
        .map(({ offset, record: r }) => ({
          offset,
          runId: r.runId,
          rows: Object.entries(r.values).map(([name, value]) => ({
            run_id: r.runId,
            client_id: r.clientId,
            at: usToDateTime64(Math.round(r.atUs)),
            source: r.source,
            name,
            value,
            src_partition: b.partition,
            src_offset: offset,
          })),
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
        rows: [
          {
            run_id: w.runId,
            client_id: w.clientId,
            op: w.op,
            status: w.status,
            window_start: msToDateTime64(w.windowStartUs),
            window_ms: Math.round(w.windowUs / 1000),
            count: w.count,
            errors: w.errors,
            sum_us: w.sumUs,
            min_us: w.minUs,
            max_us: w.maxUs,
            intended_sum_us: w.intendedSumUs,
            intended_max_us: w.intendedMaxUs,
            cache_hits: w.cacheHits,
            cache_misses: w.cacheMisses,
            bytes: w.bytes,
            hist: w.hist.toMap(),
            intended_hist: w.intendedHist.toMap(),
            late_events: w.lateEvents,
            first_start: usToDateTime64(w.firstStartUs),
            last_end: usToDateTime64(w.lastEndUs),
            src_partition: b.partition,
            src_first_offset: b.firstOffset,
            src_last_offset: b.lastOffset,
          },
        ],
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
      await this.insertNative(table, OPS_COLUMNS, opsNative(ops, partition, 0, ops.length), token)
      return { refused: [], stored: ops.length }
    } catch (err) {
      if (!isDataError(err)) throw err
    }
    const refused = await bisect(
      ops.length,
      `${token}/rows`,
      (from, to, t) => this.insertNative(table, OPS_COLUMNS, opsNative(ops, partition, from, to), t),
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

  /**
   * One INSERT of a Native block. @clickhouse/client's insert() takes text
   * formats only, and its chDB connection turns every body into a JS string
   * (binary would not survive), so: on a server the block is the body of a
   * plain INSERT (exec); in the embedded engine it goes through a file that
   * the engine reads itself (FROM INFILE), written just before and removed
   * just after, on a chDB session of its own: one session runs one query at a
   * time (measured: 4 concurrent inserts on one session finish one after the
   * other; on 4 sessions of the same directory they overlap), so partitions'
   * raw-event inserts neither wait for each other nor hold up the small
   * inserts and lookups on the shared connection. A session on a directory
   * the process has open costs well under a millisecond. The token is part of
   * the statement: a SET on a shared session would outlive this insert.
   */
  private async insertNative(
    table: string,
    columns: readonly string[],
    block: Uint8Array[],
    token: string,
  ): Promise<void> {
    const head = `INSERT INTO ${writeTable(this.ch, table)} (${columns.join(', ')})`
    const settings = `SETTINGS insert_deduplication_token = ${sqlString(token)}`
    if (this.ch.mode === 'server') {
      const r = await this.ch.client.exec({
        query: `${head} ${settings} FORMAT Native`,
        values: Readable.from(block, { objectMode: false }),
      })
      await finished(r.stream.resume())
      return
    }
    const file = await this.spoolFile()
    try {
      await writeFile(file, block)
      const session = new Session(this.ch.location)
      try {
        await session.queryAsync(`${head} FROM INFILE ${sqlString(file)} ${settings} FORMAT Native`)
      } finally {
        session.close()
      }
    } finally {
      await rm(file, { force: true })
    }
  }

  /**
   * A fresh file name in the embedded engine's directory, insert-spool/. Files
   * of other processes are left there only by a crash during an insert (one
   * process owns the directory at a time): removed on first use.
   */
  private async spoolFile(): Promise<string> {
    this.spool ??= (async () => {
      const dir = path.join(this.ch.location, 'insert-spool')
      await mkdir(dir, { recursive: true })
      const mine = `${process.pid}-`
      for (const f of await readdir(dir)) if (!f.startsWith(mine)) await rm(path.join(dir, f), { force: true })
      return dir
    })()
    return path.join(await this.spool, `${process.pid}-${randomUUID()}.native`)
  }
}

/**
 * Tries items [0, n) in one insert, then halves of a refused range, down to
 * single items, which are refused. Deterministic: the same refusals give the
 * same inserts with the same tokens.
 */
async function bisect(
  n: number,
  token: string,
  insertRange: (from: number, to: number, token: string) => Promise<void>,
  refuse: (i: number, err: unknown) => RefusedRow,
): Promise<RefusedRow[]> {
  const refused: RefusedRow[] = []
  const attempt = async (from: number, to: number, t: string): Promise<void> => {
    if (from >= to) return
    try {
      await insertRange(from, to, t)
    } catch (err) {
      if (!isDataError(err)) throw err
      if (to - from === 1) {
        refused.push(refuse(from, err))
        return
      }
      const mid = from + Math.ceil((to - from) / 2)
      await attempt(from, mid, `${t}/a`)
      await attempt(mid, to, `${t}/b`)
    }
  }
  await attempt(0, n, token)
  return refused
}

function errorText(err: unknown): string {
  return String((err as Error).message ?? err)
    .replace(/\s+/g, ' ')
    .trim()
    .slice(0, MAX_ERROR_CHARS)
}

/** Rows of reported_measurements (schemas/clickhouse/0008-reported-summaries.sql) for one SUMMARY_REPORT record. */
function reportedRows(r: SummaryReportRecord, partition: number, offset: number): Array<Record<string, unknown>> {
  return r.measurements.map((m) => ({
    run_id: r.runId,
    client_id: r.clientId,
    measurement: m.name,
    kind: m.kind,
    op: m.op,
    latency: m.latency,
    status: m.status,
    origin: 'reported',
    format: r.format,
    source: r.source,
    imported_at: usToDateTime64(Math.round(r.atUs)),
    runtime_ms: r.runtimeMs ?? null,
    throughput: r.throughputOpsPerSec ?? null,
    operations: m.operations ?? null,
    average_us: m.averageUs ?? null,
    min_us: m.minUs ?? null,
    max_us: m.maxUs ?? null,
    percentiles_us: Object.fromEntries(m.percentiles.map((p) => [String(p.percentile), p.valueUs])),
    percentiles_in_ms: m.percentiles.some((p) => p.unit === 'ms') ? 1 : 0,
    returns: m.returns,
    src_partition: partition,
    src_offset: offset,
  }))
}

function jsonPayload(rows: Array<Record<string, unknown>>): Buffer {
  return Buffer.from(JSON.stringify(rows))
}

/**
 * The columns of `ops` a raw-event insert writes (schemas/clickhouse/0007-ops-storage.sql); `intended_us` is latency_us
 * + wait_us.
 */
const OPS_COLUMNS = [
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
function opsRow(ops: RawOps, partition: number, i: number): Record<string, string | number> & { run_id: string } {
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

/** A ClickHouse string literal. */
function sqlString(s: string): string {
  return `'${s.replaceAll('\\', '\\\\').replaceAll("'", "\\'")}'`
}
