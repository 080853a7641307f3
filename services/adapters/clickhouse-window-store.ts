/**
 * WindowStore on ClickHouse. Each table gets one INSERT per flush, tagged
 * with insert_deduplication_token = `<batch token>:<table>`; the tables keep
 * a non_replicated_deduplication_window, so a repeated flush of the same
 * offset range is dropped by ClickHouse instead of counted twice.
 */
import { Readable } from 'node:stream'
import { CACHE_OUTCOMES, OPERATIONS, STATUSES } from '../../schemas/events.v1.js'
import { BenchstreamError } from '../core/errors.js'
import type { FlushBatch, RawOps } from '../processor/partition-state.js'
import type { WindowStore } from '../processor/window-store.js'
import type { ClickHouse } from './clickhouse.js'

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

  private async insertStream(table: string, token: string, body: string): Promise<void> {
    await this.ch.client.insert({
      table,
      values: Readable.from([Buffer.from(body)], { objectMode: false }),
      format: 'TabSeparated',
      clickhouse_settings: { insert_deduplication_token: `${token}:${table}` },
    })
  }
}

/** Raw events as TabSeparated rows in the column order of `ops`. */
function opsTsv(ops: RawOps, partition: number): string {
  const parts: string[] = new Array(ops.length)
  for (let i = 0; i < ops.length; i++) {
    const g = ops.group[i]!
    parts[i] = `${ops.runIds[g]}\t${ops.clientIds[g]}\t${ops.thread[i]}\t${OPERATIONS[ops.opCode[i]! - 1]}\t${usToDateTime64(ops.startUs[i]!)}\t${ops.latencyUs[i]}\t${ops.intendedUs[i]}\t${STATUSES[ops.statusIndex[i]!]}\t${CACHE_OUTCOMES[ops.cacheIndex[i]!]}\t${ops.bytes[i]}\t${partition}\t${ops.offset[i]}\n`
  }
  return parts.join('')
}
