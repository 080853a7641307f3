/**
 * WindowStore on ClickHouse. Each table gets one INSERT per flush, tagged
 * with insert_deduplication_token = `<batch token>:<table>`; the tables keep
 * a non_replicated_deduplication_window, so a repeated flush of the same
 * offset range is dropped by ClickHouse instead of counted twice.
 */
import { Readable } from 'node:stream'
import { CACHE_OUTCOMES, OPERATIONS, STATUSES } from '../../../schemas/events.v1.js'
import { BenchstreamError } from '../../core/errors.js'
import type { FlushBatch, RawOps } from '../../core/stats/partition-state.js'
import type { WindowStore } from '../../core/ports/window-store.js'
import type { ClickHouse } from './client.js'

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

export class ClickHouseWindowStore implements WindowStore {
  constructor(private readonly ch: ClickHouse) {}

  async write(b: FlushBatch): Promise<void> {
    const db = this.ch.database
    try {
      if (b.ops !== undefined) await this.insertStream(`${db}.ops`, b.token, opsTsv(b.ops, b.partition))
      if (b.lifecycle.length > 0) {
        await this.insertRows(`${db}.run_clients`, b.token, b.lifecycle.map(({ offset, record: r }) => ({
          run_id: r.runId, client_id: r.clientId, phase: r.phase, at: usToDateTime64(Math.round(r.atUs)), labels: r.labels, workload: r.workload, binding: r.binding,
          threads: r.threads, target: r.target, sent: r.sent ?? {}, undelivered: r.undelivered ?? 0, runtime_ms: Math.round(r.runtimeMs ?? 0), src_partition: b.partition, src_offset: offset,
        })))
      }
      if (b.serverMetrics.length > 0) {
        const rows = b.serverMetrics.flatMap(({ offset, record: r }) => Object.entries(r.values).map(([name, value]) => ({
          run_id: r.runId, client_id: r.clientId, at: usToDateTime64(Math.round(r.atUs)), source: r.source, name, value, src_partition: b.partition, src_offset: offset,
        })))
        if (rows.length > 0) await this.insertRows(`${db}.server_metrics`, b.token, rows)
      }
      if (b.deadLetters.length > 0) {
        await this.insertRows(`${db}.dead_letters`, b.token, b.deadLetters.map((d) => ({
          src_partition: b.partition, src_offset: d.offset, reason: d.reason, run_id: d.runId, events: d.events, detail: d.detail,
        })))
      }
      // Windows last: they are what reports count, so they land only after everything else of this range.
      if (b.windows.length > 0) {
        await this.insertRows(`${db}.op_windows`, b.token, b.windows.map((w) => ({
          run_id: w.runId, client_id: w.clientId, op: w.op, status: w.status, window_start: msToDateTime64(w.windowStartUs), window_ms: Math.round(w.windowUs / 1000),
          count: w.count, errors: w.errors, sum_us: w.sumUs, min_us: w.minUs, max_us: w.maxUs, intended_sum_us: w.intendedSumUs, intended_max_us: w.intendedMaxUs,
          cache_hits: w.cacheHits, cache_misses: w.cacheMisses, bytes: w.bytes, hist: w.hist.toMap(), intended_hist: w.intendedHist.toMap(), late_events: w.lateEvents,
          first_start: usToDateTime64(w.firstStartUs), last_end: usToDateTime64(w.lastEndUs), src_partition: b.partition, src_first_offset: b.firstOffset, src_last_offset: b.lastOffset,
        })))
      }
    } catch (err) {
      throw new BenchstreamError('BS_ERR_CLICKHOUSE', `writing offsets ${b.firstOffset}-${b.lastOffset} of ${b.topic}[${b.partition}] to ClickHouse (${this.ch.location}) failed: ${(err as Error).message}`, { cause: err })
    }
  }

  private async insertRows(table: string, token: string, values: Array<Record<string, unknown>>): Promise<void> {
    await this.ch.client.insert({ table, values, format: 'JSONEachRow', clickhouse_settings: { insert_deduplication_token: `${token}:${table}` } })
  }

  private async insertStream(table: string, token: string, body: Buffer): Promise<void> {
    await this.ch.client.insert({
      table,
      values: Readable.from([body], { objectMode: false }),
      format: 'TabSeparated',
      clickhouse_settings: { insert_deduplication_token: `${token}:${table}` },
    })
  }
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
