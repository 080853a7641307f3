/**
 * WindowStore on ClickHouse. Each table gets one INSERT per flush, tagged
 * with insert_deduplication_token = `<batch token>:<table>`; the tables keep
 * a non_replicated_deduplication_window, so a repeated flush of the same
 * offset range is dropped by ClickHouse instead of counted twice.
 */
import { Readable } from 'node:stream'
import { CACHE_OUTCOMES, OPERATIONS, STATUSES, type SummaryReportRecord } from '../../../schemas/events.v1.js'
import { BenchstreamError } from '../../core/errors.js'
import type { FlushBatch, RawOps } from '../../core/stats/partition-state.js'
import type { RefusedRow, WindowStore, WriteResult } from '../../core/ports/window-store.js'
import type { ClickHouse } from './client.js'
import { knownStacks, profileRecordRows, type ProfileRows } from './profile-store.js'

/** `seconds.micros` text that DateTime64(6) parses exactly (no float rounding). */
export function usToDateTime64(us: number): string {
  const s = Math.floor(us / 1e6)
  return `${s}.${String(us - s * 1e6).padStart(6, '0')}`
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

export class ClickHouseWindowStore implements WindowStore {
  constructor(private readonly ch: ClickHouse) {}

  async write(b: FlushBatch): Promise<WriteResult> {
    const db = this.ch.database
    const refused: RefusedRow[] = []
    try {
      if (b.ops !== undefined) {
        refused.push(...(await this.isolateOps(`${db}.ops`, b.token, opsTsv(b.ops, b.partition), (line) => line.toString('latin1', 0, Math.max(0, line.indexOf(0x09))))))
      }
      if (b.lifecycle.length > 0) {
        const units = b.lifecycle.map(({ offset, record: r }) => ({
          offset,
          runId: r.runId,
          rows: [{
            run_id: r.runId, client_id: r.clientId, phase: r.phase, at: usToDateTime64(Math.round(r.atUs)), labels: r.labels, workload: r.workload, binding: r.binding,
            threads: r.threads, target: r.target, sent: r.sent ?? {}, undelivered: r.undelivered ?? 0, runtime_ms: Math.round(r.runtimeMs ?? 0), src_partition: b.partition, src_offset: offset,
            group_id: r.group ?? '', repeat: r.repeat ?? 0, properties: r.properties ?? {},
            schedule_lag_max_ms: r.scheduleLagMaxMs ?? 0, behind_schedule_episodes: r.behindScheduleEpisodes ?? 0,
          }],
        }))
        refused.push(...(await this.isolate(`${db}.run_clients`, b.token, units, (rows, token) => this.insertRows(`${db}.run_clients`, token, rows), jsonPayload)))
      }
      if (b.serverMetrics.length > 0) {
        const units = b.serverMetrics
          .map(({ offset, record: r }) => ({
            offset,
            runId: r.runId,
            rows: Object.entries(r.values).map(([name, value]) => ({ run_id: r.runId, client_id: r.clientId, at: usToDateTime64(Math.round(r.atUs)), source: r.source, name, value, src_partition: b.partition, src_offset: offset })),
          }))
          .filter((u) => u.rows.length > 0)
        if (units.length > 0) refused.push(...(await this.isolate(`${db}.server_metrics`, b.token, units, (rows, token) => this.insertRows(`${db}.server_metrics`, token, rows), jsonPayload)))
      }
      if (b.profiles.length > 0) refused.push(...(await this.writeProfiles(b)))
      if (b.summaries.length > 0) {
        const units = b.summaries.map(({ offset, record: r }) => ({ offset, runId: r.runId, rows: reportedRows(r, b.partition, offset) })).filter((u) => u.rows.length > 0)
        if (units.length > 0) refused.push(...(await this.isolate(`${db}.reported_measurements`, b.token, units, (rows, token) => this.insertRows(`${db}.reported_measurements`, token, rows), jsonPayload)))
      }
      if (b.windows.length > 0) {
        const units = b.windows.map((w) => ({
          offset: -1,
          runId: w.runId,
          rows: [{
            run_id: w.runId, client_id: w.clientId, op: w.op, status: w.status, window_start: msToDateTime64(w.windowStartUs), window_ms: Math.round(w.windowUs / 1000),
            count: w.count, errors: w.errors, sum_us: w.sumUs, min_us: w.minUs, max_us: w.maxUs, intended_sum_us: w.intendedSumUs, intended_max_us: w.intendedMaxUs,
            cache_hits: w.cacheHits, cache_misses: w.cacheMisses, bytes: w.bytes, hist: w.hist.toMap(), intended_hist: w.intendedHist.toMap(), late_events: w.lateEvents,
            first_start: usToDateTime64(w.firstStartUs), last_end: usToDateTime64(w.lastEndUs), src_partition: b.partition, src_first_offset: b.firstOffset, src_last_offset: b.lastOffset,
          }],
        }))
        // Windows last but for the dead letters: they are what reports count, so
        // they land only after everything else of this range.
        refused.push(...(await this.isolate(`${db}.op_windows`, b.token, units, (rows, token) => this.insertRows(`${db}.op_windows`, token, rows), jsonPayload)))
      }
      const letters = [
        ...b.deadLetters.map((d) => ({ src_partition: b.partition, src_offset: d.offset, reason: d.reason, run_id: d.runId, events: d.events, detail: d.detail })),
        ...refused.map((r) => ({ src_partition: b.partition, src_offset: Math.max(0, r.offset), reason: 'store_rejected', run_id: r.runId, events: 0, detail: `${r.table}: ${r.error}` })),
      ]
      if (letters.length > 0) await this.insertRows(`${db}.dead_letters`, `${b.token}:${db}.dead_letters`, letters)
    } catch (err) {
      throw new BenchstreamError('BS_ERR_CLICKHOUSE', `writing offsets ${b.firstOffset}-${b.lastOffset} of ${b.topic}[${b.partition}] to ClickHouse (${this.ch.location}) failed: ${(err as Error).message}`, { cause: err, retryable: true })
    }
    return { refused }
  }

  /**
   * PROFILE records: new stacks, then samples, then the slice rows that make
   * them visible, each table isolated per record like the other kinds.
   */
  private async writeProfiles(b: FlushBatch): Promise<RefusedRow[]> {
    const db = this.ch.database
    const records = b.profiles.map(({ offset, record }) => ({ offset, runId: record.runId, rows: profileRecordRows(record, b.partition, offset) }))
    const seen = await knownStacks(this.ch, records.flatMap((r) => r.rows.stacks.map((s) => s.stack_id)))
    const tables: Array<[string, (r: ProfileRows) => object[]]> = [
      // A stack new to the store is written with the first record that has it.
      [
        'profile_stacks',
        (r) => r.stacks.filter((s) => {
          if (seen.has(s.stack_id)) return false
          seen.add(s.stack_id)
          return true
        }),
      ],
      ['profile_samples', (r) => r.samples],
      ['profile_slices', (r) => [r.slice]],
    ]
    const refused: RefusedRow[] = []
    for (const [name, rowsOf] of tables) {
      const table = `${db}.${name}`
      const units = records.map((r) => ({ offset: r.offset, runId: r.runId, rows: rowsOf(r.rows) as Array<Record<string, unknown>> })).filter((u) => u.rows.length > 0)
      if (units.length > 0) refused.push(...(await this.isolate(table, b.token, units, (rows, token) => this.insertRows(table, token, rows), jsonPayload)))
    }
    return refused
  }

  /**
   * Inserts all units; when ClickHouse refuses the data itself, splits the
   * units in halves until the refused ones stand alone, stores the rest and
   * returns the refused. Each part carries a token derived from its place in
   * the split, so a replay of the same batch (same units, same refusals)
   * repeats the same inserts and ClickHouse drops them. Retryable errors
   * propagate: the caller retries the whole batch.
   */
  private async isolate<R>(table: string, batchToken: string, units: Array<Unit<R>>, insert: (rows: R[], token: string) => Promise<void>, payload: (rows: R[]) => Buffer): Promise<RefusedRow[]> {
    return bisect(units.length, `${batchToken}:${table}`, (from, to, token) => insert(units.slice(from, to).flatMap((u) => u.rows), token), (i, err) => {
      const u = units[i]!
      return { table, offset: u.offset, runId: u.runId, error: errorText(err), payload: payload(u.rows) }
    })
  }

  /** Raw events: the whole buffer in one insert; only a refused one is cut into lines and split. */
  private async isolateOps(table: string, batchToken: string, body: Buffer, runIdOf: (line: Buffer) => string): Promise<RefusedRow[]> {
    const token = `${batchToken}:${table}`
    try {
      await this.insertTsv(table, body, token)
      return []
    } catch (err) {
      if (!isDataError(err)) throw err
    }
    const starts: number[] = []
    for (let p = 0; p < body.length; p = body.indexOf(0x0a, p) + 1) {
      starts.push(p)
      if (body.indexOf(0x0a, p) < 0) break
    }
    const end = (i: number): number => (i < starts.length ? starts[i]! : body.length)
    const line = (i: number): Buffer => body.subarray(end(i), end(i + 1))
    return bisect(starts.length, `${token}/lines`, (from, to, t) => this.insertTsv(table, body.subarray(end(from), end(to)), t), (i, err) => {
      const l = line(i)
      // The last field of an ops line is its source offset.
      const offset = Number(/(\d+)\n?$/.exec(l.toString('latin1'))?.[1] ?? -1)
      return { table, offset, runId: runIdOf(l), error: errorText(err), payload: Buffer.from(l) }
    })
  }

  private async insertRows(table: string, token: string, values: Array<Record<string, unknown>>): Promise<void> {
    await this.ch.client.insert({ table, values, format: 'JSONEachRow', clickhouse_settings: { insert_deduplication_token: token } })
  }

  private async insertTsv(table: string, body: Buffer, token: string): Promise<void> {
    await this.ch.client.insert({ table, values: Readable.from([body], { objectMode: false }), format: 'TabSeparated', clickhouse_settings: { insert_deduplication_token: token } })
  }
}

/**
 * Tries items [0, n) in one insert, then halves of a refused range, down to
 * single items, which are refused. Deterministic: the same refusals give the
 * same inserts with the same tokens.
 */
async function bisect(n: number, token: string, insertRange: (from: number, to: number, token: string) => Promise<void>, refuse: (i: number, err: unknown) => RefusedRow): Promise<RefusedRow[]> {
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
  return String((err as Error).message ?? err).replace(/\s+/g, ' ').trim().slice(0, MAX_ERROR_CHARS)
}

/** Rows of reported_measurements (schemas/clickhouse/0009-reported-summaries.sql) for one SUMMARY_REPORT record. */
function reportedRows(r: SummaryReportRecord, partition: number, offset: number): Array<Record<string, unknown>> {
  return r.measurements.map((m) => ({
    run_id: r.runId, client_id: r.clientId, measurement: m.name, kind: m.kind, op: m.op, latency: m.latency, status: m.status, origin: 'reported',
    format: r.format, source: r.source, imported_at: usToDateTime64(Math.round(r.atUs)), runtime_ms: r.runtimeMs ?? null, throughput: r.throughputOpsPerSec ?? null,
    operations: m.operations ?? null, average_us: m.averageUs ?? null, min_us: m.minUs ?? null, max_us: m.maxUs ?? null,
    percentiles_us: Object.fromEntries(m.percentiles.map((p) => [String(p.percentile), p.valueUs])), percentiles_in_ms: m.percentiles.some((p) => p.unit === 'ms') ? 1 : 0,
    returns: m.returns, src_partition: partition, src_offset: offset,
  }))
}

function jsonPayload(rows: Array<Record<string, unknown>>): Buffer {
  return Buffer.from(JSON.stringify(rows))
}

/**
 * Raw events as TabSeparated rows in the column order of `ops`, written
 * straight into one Buffer: no string per event (this runs for every event
 * when raw storage is on, and strings made it garbage-collector bound).
 */
export function opsTsv(ops: RawOps, partition: number): Buffer {
  const ascii = (x: string): Buffer => Buffer.from(x, 'latin1')
  const prefixes = ops.runIds.map((r, i) => ascii(`${r}\t${ops.clientIds[i]}\t`))
  const opNames = OPERATIONS.map((o) => ascii(`\t${o}\t`))
  const statusNames = STATUSES.map((x) => ascii(`\t${x}\t`))
  const cacheNames = CACHE_OUTCOMES.map((x) => ascii(`${x}\t`))
  const partitionText = ascii(`\t${partition}\t`)
  let longestPrefix = 0
  for (const p of prefixes) longestPrefix = Math.max(longestPrefix, p.length)
  // Upper bound per row: prefix + names (≤ 45) + numbers (≤ 90) + separators.
  const out = Buffer.allocUnsafe(ops.length * (longestPrefix + 160) + 16)
  let pos = 0
  for (let i = 0; i < ops.length; i++) {
    pos += prefixes[ops.group[i]!]!.copy(out, pos)
    pos = writeUint(out, pos, ops.thread[i]!)
    pos += opNames[ops.opCode[i]! - 1]!.copy(out, pos)
    const us = ops.startUs[i]!
    const sec = Math.floor(us / 1e6)
    pos = writeUint(out, pos, sec)
    out[pos++] = 0x2e // '.'
    pos = writeFraction6(out, pos, us - sec * 1e6)
    out[pos++] = 0x09
    pos = writeUint(out, pos, ops.latencyUs[i]!)
    out[pos++] = 0x09
    pos = writeUint(out, pos, ops.intendedUs[i]!)
    pos += statusNames[ops.statusIndex[i]!]!.copy(out, pos)
    pos += cacheNames[ops.cacheIndex[i]!]!.copy(out, pos)
    pos = writeUint(out, pos, ops.bytes[i]!)
    pos += partitionText.copy(out, pos)
    pos = writeUint(out, pos, ops.offset[i]!)
    out[pos++] = 0x0a
  }
  return out.subarray(0, pos)
}

/** Decimal digits of a non-negative integer (< 2^53). */
function writeUint(buf: Buffer, pos: number, n: number): number {
  if (n < 10) {
    buf[pos] = 48 + n
    return pos + 1
  }
  let digits = 0
  for (let m = n; m >= 1; m = Math.floor(m / 10)) digits++
  let end = pos + digits
  for (let m = n; end > pos; m = Math.floor(m / 10)) buf[--end] = 48 + (m % 10)
  return pos + digits
}

/** Exactly six digits, zero-padded (the microseconds of a DateTime64(6)). */
function writeFraction6(buf: Buffer, pos: number, n: number): number {
  for (let i = 5; i >= 0; i--) {
    buf[pos + i] = 48 + (n % 10)
    n = Math.floor(n / 10)
  }
  return pos + 6
}
