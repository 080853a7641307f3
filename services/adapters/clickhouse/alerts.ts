/**
 * The alerts service's ClickHouse side: complete-window counts merged over
 * clients, statuses and partitions (op_windows), runs and targets (runs),
 * the `alerts` table (schemas/clickhouse/0002-alerts.sql) and the
 * `silences` table (0012-alert-silences.sql). Every query is bounded: by
 * run, by a window-start range, or by a LIMIT.
 */
import {
  ALERT_STATES,
  RULE_TYPES,
  SEVERITIES,
  type AlertState,
  type RuleType,
  type Severity,
} from '../../../schemas/alert-rules.v1.js'
import type { AlertTransition } from '../../core/alerting/alert-rules.js'
import type { SilenceSpec } from '../../core/alerting/silences.js'
import { SILENCE_LABELS, type SilenceLabel } from '../../../schemas/alerts-api.v1.js'
import type { RunProgress } from '../../core/stats/window-completeness.js'
import type { BaselineWindowRow } from '../../core/alerting/baseline-profile.js'
import { BenchstreamError } from '../../core/errors.js'
import type {
  AlertRunInfo,
  AlertStore,
  AlertWindowSource,
  SilenceStore,
  WindowCountRow,
} from '../../core/ports/alerts.js'
import { queryRows, writeTable, type ClickHouse } from './client.js'
import { queryRunProgress } from './run-progress.js'

/** Runs evaluated at once; beyond this the oldest active runs are left out. */
export const MAX_ACTIVE_RUNS = 1000
/** Incidents loaded at start-up. */
export const MAX_LOADED_INCIDENTS = 100_000
/** Baseline windows read for one candidate (a group of 10 one-hour runs with 8 operations is 288,000). */
export const MAX_BASELINE_ROWS = 500_000

type Num = string | number

export class ClickHouseAlertSource implements AlertWindowSource {
  constructor(private readonly ch: ClickHouse) {}

  async runs(sinceMs: number): Promise<AlertRunInfo[]> {
    const rows = await this.query<{
      run_id: string
      started_ms: Num
      ended_ms: Num | null
      target: Num
      baseline: string
    }>(
      `
      SELECT run_id, toUnixTimestamp64Milli(started_at) AS started_ms,
             if(ended_at IS NULL, NULL, toUnixTimestamp64Milli(assumeNotNull(ended_at))) AS ended_ms,
             target, labels['baseline'] AS baseline
      FROM ${this.ch.database}.runs
      WHERE (ended_at IS NULL AND started_at >= fromUnixTimestamp64Milli({since:Int64}))
         OR ended_at >= fromUnixTimestamp64Milli({since:Int64})
      ORDER BY started_at DESC
      LIMIT {limit:UInt32}`,
      { since: Math.max(0, Math.floor(sinceMs)), limit: MAX_ACTIVE_RUNS },
    )
    return rows.map((r) => ({
      runId: r.run_id,
      startedAtMs: Number(r.started_ms),
      endedAtMs: r.ended_ms === null ? undefined : Number(r.ended_ms),
      targetOpsPerSec: Number(r.target),
      ...(r.baseline === '' ? {} : { baseline: r.baseline }),
    }))
  }

  progress(runId: string, sinceMs: number): Promise<RunProgress | undefined> {
    return queryRunProgress(this.ch, this.ch.database, runId, sinceMs)
  }

  async windows(runId: string, fromMs: number, toMs: number): Promise<WindowCountRow[]> {
    // p99 as the report computes it: successful operations, merged histogram, clamped into [min, max] (view
    // op_window_figures).
    const rows = await this.query<{ t: Num; op: string; n: Num; e: Num; p50: Num | null; p99: Num | null }>(
      `
      SELECT toUnixTimestamp64Milli(window_start) AS t, op, sum(count) AS n, sum(errors) AS e,
             if(sumIf(count, status = 'OK') = 0, NULL,
                least(greatest(bs_quantile(0.50, sumMapIf(hist, status = 'OK')), minIf(min_us, status = 'OK')),
                      maxIf(max_us, status = 'OK'))) AS p50,
             if(sumIf(count, status = 'OK') = 0, NULL,
                least(greatest(bs_quantile(0.99, sumMapIf(hist, status = 'OK')), minIf(min_us, status = 'OK')),
                      maxIf(max_us, status = 'OK'))) AS p99
      FROM ${this.ch.database}.op_windows
      WHERE run_id = {runId:String}
        AND window_start >= fromUnixTimestamp64Milli({from:Int64})
        AND window_start < fromUnixTimestamp64Milli({to:Int64})
      GROUP BY t, op ORDER BY t, op`,
      { runId, from: fromMs, to: toMs },
    )
    return rows.map((r) => ({
      startMs: Number(r.t),
      op: r.op,
      count: Number(r.n),
      errors: Number(r.e),
      p50Us: r.p50 === null ? null : Number(r.p50),
      p99Us: r.p99 === null ? null : Number(r.p99),
    }))
  }

  async baselineWindows(ref: string): Promise<BaselineWindowRow[]> {
    const group = ref.startsWith('group:') ? ref.slice('group:'.length) : ''
    const rows = await this.query<{
      run_id: string
      t_s: Num
      op: string
      window_ms: Num
      n: Num
      p50: Num | null
      p99: Num | null
    }>(
      `
      SELECT run_id, t_s, op, window_ms, operations + errors AS n, p50_us AS p50, p99_us AS p99
      FROM ${this.ch.database}.op_window_figures
      WHERE run_id IN (SELECT DISTINCT run_id FROM ${this.ch.database}.run_clients
                       WHERE if({group:String} = '', run_id = {ref:String}, group_id = {group:String}))
      ORDER BY run_id, t_s, op
      LIMIT {limit:UInt32}`,
      { ref, group, limit: MAX_BASELINE_ROWS },
    )
    return rows.map((r) => ({
      runId: r.run_id,
      offset: Math.round((Number(r.t_s) * 1000) / Number(r.window_ms)),
      op: r.op,
      windowMs: Number(r.window_ms),
      count: Number(r.n),
      p50Us: r.p50 === null ? null : Number(r.p50),
      p99Us: r.p99 === null ? null : Number(r.p99),
    }))
  }

  private async query<T>(sql: string, params: Record<string, unknown>): Promise<T[]> {
    try {
      return await queryRows<T>(this.ch, sql, params)
    } catch (err) {
      throw new BenchstreamError(
        'BS_ERR_CLICKHOUSE',
        `alerts: reading windows from ClickHouse (${this.ch.location}) failed: ${(err as Error).message}`,
        { cause: err },
      )
    }
  }
}

interface AlertRow {
  rule: string
  rule_type: string
  severity: string
  run_id: string
  op: string
  state: string
  starts_ms: Num
  ends_ms: Num | null
  at_window_ms: Num
  value: number
  threshold: number
  summary: string
  description: string
  fingerprint: string
  silenced_by: string
}

const ALERT_COLUMNS = `rule, rule_type, severity, run_id, op, state, toUnixTimestamp64Milli(starts_at) AS starts_ms,
  if(ends_at IS NULL, NULL, toUnixTimestamp64Milli(assumeNotNull(ends_at))) AS ends_ms,
  toUnixTimestamp64Milli(at_window) AS at_window_ms,
  value, threshold, summary, description, fingerprint, silenced_by`

export class ClickHouseAlertStore implements AlertStore {
  constructor(private readonly ch: ClickHouse) {}

  async loadOpen(): Promise<AlertTransition[]> {
    const db = this.ch.database
    return this.load(
      `
      SELECT ${ALERT_COLUMNS} FROM ${db}.alerts
      WHERE state = 'firing' AND fingerprint NOT IN (SELECT fingerprint FROM ${db}.alerts WHERE state = 'resolved')
      ORDER BY fingerprint LIMIT 1 BY fingerprint LIMIT {limit:UInt32}`,
      { limit: MAX_LOADED_INCIDENTS },
    )
  }

  async loadRuns(runIds: readonly string[]): Promise<AlertTransition[]> {
    // resolved sorts after firing in the enum: DESC puts each incident's latest state first.
    return this.load(
      `
      SELECT ${ALERT_COLUMNS} FROM ${this.ch.database}.alerts
      WHERE run_id IN {runIds:Array(String)}
      ORDER BY fingerprint, state DESC LIMIT 1 BY fingerprint LIMIT {limit:UInt32}`,
      { runIds, limit: MAX_LOADED_INCIDENTS },
    )
  }

  async record(t: AlertTransition, notifiedAtMs: number | undefined): Promise<void> {
    try {
      await this.ch.client.insert({
        table: writeTable(this.ch, `${this.ch.database}.alerts`),
        format: 'JSONEachRow',
        values: [
          {
            rule: t.rule,
            rule_type: t.ruleType,
            severity: t.severity,
            run_id: t.runId,
            op: t.op,
            state: t.state,
            starts_at: msText(t.startsAtMs),
            ends_at: t.endsAtMs === undefined ? null : msText(t.endsAtMs),
            at_window: msText(t.atWindowMs),
            value: finite(t.value),
            threshold: finite(t.threshold),
            summary: t.summary,
            description: t.description,
            fingerprint: t.fingerprint,
            notified_at: notifiedAtMs === undefined ? null : msText(notifiedAtMs),
            silenced_by: t.silencedBy ?? '',
          },
        ],
        // The same state change recorded twice (a retry after a lost reply) is stored once.
        clickhouse_settings: { insert_deduplication_token: `alerts:${t.fingerprint}:${t.state}` },
      })
    } catch (err) {
      throw new BenchstreamError(
        'BS_ERR_CLICKHOUSE',
        `alerts: recording ${t.state} ${t.rule} (run ${t.runId}) in ClickHouse (${this.ch.location}) ` +
          `failed: ${(err as Error).message}`,
        { cause: err },
      )
    }
  }

  private async load(sql: string, params: Record<string, unknown>): Promise<AlertTransition[]> {
    let rows: AlertRow[]
    try {
      rows = await queryRows<AlertRow>(this.ch, sql, params)
    } catch (err) {
      throw new BenchstreamError(
        'BS_ERR_CLICKHOUSE',
        `alerts: loading incidents from ClickHouse (${this.ch.location}) failed: ${(err as Error).message}`,
        { cause: err },
      )
    }
    return rows.map((r) => ({
      state: pick<AlertState>(ALERT_STATES, r.state, 'firing'),
      rule: r.rule,
      ruleType: pick<RuleType>(RULE_TYPES, r.rule_type, 'drop_vs_baseline'),
      severity: pick<Severity>(SEVERITIES, r.severity, 'warning'),
      runId: r.run_id,
      op: r.op,
      fingerprint: r.fingerprint,
      startsAtMs: Number(r.starts_ms),
      endsAtMs: r.ends_ms === null ? undefined : Number(r.ends_ms),
      atWindowMs: Number(r.at_window_ms),
      value: Number(r.value),
      threshold: Number(r.threshold),
      summary: r.summary,
      description: r.description,
      silencedBy: r.silenced_by === '' ? undefined : r.silenced_by,
    }))
  }
}

/** Silences read at once (pending and active ones by the engine, any by a listing); beyond it, the oldest are left. */
export const MAX_SILENCES = 10_000

interface SilenceRow {
  id: string
  'matchers.name': string[]
  'matchers.value': string[]
  'matchers.is_equal': number[]
  starts_ms: Num
  ends_ms: Num | null
  created_by: string
  comment: string
  updated_ms: Num
}

/** The `silences` table (schemas/clickhouse/0012-alert-silences.sql): one row per version, the latest wins. */
export class ClickHouseSilenceStore implements SilenceStore {
  constructor(private readonly ch: ClickHouse) {}

  current(nowMs: number): Promise<SilenceSpec[]> {
    return this.read(`ends_at IS NULL OR ends_at > fromUnixTimestamp64Milli({now:Int64})`, { now: Math.floor(nowMs) })
  }

  list(limit: number): Promise<SilenceSpec[]> {
    return this.read('1', {}, Math.min(limit, MAX_SILENCES))
  }

  async get(id: string): Promise<SilenceSpec | undefined> {
    return (await this.read('id = {id:String}', { id }))[0]
  }

  async save(x: SilenceSpec): Promise<void> {
    try {
      await this.ch.client.insert({
        table: writeTable(this.ch, `${this.ch.database}.silences`),
        format: 'JSONEachRow',
        values: [
          {
            id: x.id,
            'matchers.name': x.matchers.map((m) => m.name),
            'matchers.value': x.matchers.map((m) => m.value),
            'matchers.is_equal': x.matchers.map((m) => (m.isEqual ? 1 : 0)),
            starts_at: msText(x.startsAtMs),
            ends_at: x.endsAtMs === undefined ? null : msText(x.endsAtMs),
            created_by: x.createdBy,
            comment: x.comment,
            updated_at: msText(x.updatedAtMs),
          },
        ],
      })
    } catch (err) {
      throw new BenchstreamError(
        'BS_ERR_CLICKHOUSE',
        `silences: storing silence ${x.id} in ClickHouse (${this.ch.location}) failed: ${(err as Error).message}`,
        { cause: err },
      )
    }
  }

  /** The latest version of every silence, filtered after picking it (an expiry must hide the earlier version). */
  private async read(where: string, params: Record<string, unknown>, limit = MAX_SILENCES): Promise<SilenceSpec[]> {
    let rows: SilenceRow[]
    try {
      rows = await queryRows<SilenceRow>(
        this.ch,
        `
        SELECT id, \`matchers.name\`, \`matchers.value\`, \`matchers.is_equal\`,
               toUnixTimestamp64Milli(starts_at) AS starts_ms,
               if(ends_at IS NULL, NULL, toUnixTimestamp64Milli(assumeNotNull(ends_at))) AS ends_ms,
               created_by, comment, toUnixTimestamp64Milli(updated_at) AS updated_ms
        FROM (SELECT * FROM ${this.ch.database}.silences ORDER BY id, updated_at DESC LIMIT 1 BY id)
        WHERE ${where}
        ORDER BY updated_at DESC, id
        LIMIT {limit:UInt32}`,
        { ...params, limit },
      )
    } catch (err) {
      throw new BenchstreamError(
        'BS_ERR_CLICKHOUSE',
        `silences: reading from ClickHouse (${this.ch.location}) failed: ${(err as Error).message}`,
        { cause: err },
      )
    }
    return rows.map((r) => ({
      id: r.id,
      matchers: r['matchers.name'].map((name, i) => ({
        name: pick<SilenceLabel>(SILENCE_LABELS, name, 'alertname'),
        value: r['matchers.value'][i] ?? '',
        isEqual: Number(r['matchers.is_equal'][i]) === 1,
      })),
      startsAtMs: Number(r.starts_ms),
      endsAtMs: r.ends_ms === null ? undefined : Number(r.ends_ms),
      createdBy: r.created_by,
      comment: r.comment,
      updatedAtMs: Number(r.updated_ms),
    }))
  }
}

/** `seconds.millis` text that DateTime64(3) parses exactly. */
export function msText(ms: number): string {
  const m = Math.floor(ms)
  const s = Math.floor(m / 1000)
  return `${s}.${String(m - s * 1000).padStart(3, '0')}`
}

/** ClickHouse's JSON input takes no NaN/Infinity. */
function finite(v: number): number {
  return Number.isFinite(v) ? v : 0
}

/** A stored value back to its type; a row written by a newer version with an unknown value falls back. */
function pick<T extends string>(allowed: readonly T[], v: string, fallback: T): T {
  return (allowed as readonly string[]).includes(v) ? (v as T) : fallback
}
