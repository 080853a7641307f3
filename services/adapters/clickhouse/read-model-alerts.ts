/**
 * Alert incidents as the read model lists them (alert_incidents), a page at a time, newest first.
 */
import { ALERT_STATES, RULE_TYPES, SEVERITIES } from '../../../schemas/alert-rules.v1.js'
import type { Alert, AlertFilter, AlertPageRequest, AlertsPage } from '../../core/ports/read-model.js'
import { queryRows, type ClickHouse } from './client.js'

type Num = string | number

interface IncidentRow {
  run_id: string
  fingerprint: string
  rule: string
  rule_type: string
  severity: string
  op: string
  state: string
  starts_ms: Num
  ends_ms: Num | null
  value: number
  threshold: number
  summary: string
  description: string
  resolved_summary: string
  silenced_by: string
}

function incident(r: IncidentRow): Alert {
  const one = <T extends string>(allowed: readonly T[], v: string, fallback: T): T =>
    (allowed as readonly string[]).includes(v) ? (v as T) : fallback
  return {
    fingerprint: r.fingerprint,
    rule: r.rule,
    ruleType: one(RULE_TYPES, r.rule_type, 'drop_vs_baseline'),
    severity: one(SEVERITIES, r.severity, 'warning'),
    runId: r.run_id,
    op: r.op,
    state: one(ALERT_STATES, r.state, 'firing'),
    startsAt: new Date(Number(r.starts_ms)).toISOString(),
    endsAt: r.ends_ms === null ? null : new Date(Number(r.ends_ms)).toISOString(),
    value: Number(r.value),
    threshold: Number(r.threshold),
    summary: r.summary,
    description: r.description,
    resolvedSummary: r.resolved_summary === '' ? null : r.resolved_summary,
    silencedBy: r.silenced_by === '' ? null : r.silenced_by,
  }
}

export async function alerts(ch: ClickHouse, filter: AlertFilter, page: AlertPageRequest): Promise<AlertsPage> {
  const db = ch.database
  const where: string[] = []
  const having: string[] = []
  const params: Record<string, unknown> = { limit: page.limit + 1 }
  if (filter.runId !== undefined) {
    where.push('run_id = {runId:String}')
    params.runId = filter.runId
  }
  if (filter.rule !== undefined) {
    where.push('rule = {rule:String}')
    params.rule = filter.rule
  }
  if (filter.state !== undefined) {
    having.push('state = {state:String}')
    params.state = filter.state
  }
  if (filter.sinceMs !== undefined) {
    having.push('(ends_ms IS NULL OR ends_ms >= {since:Int64})')
    params.since = filter.sinceMs
  }
  if (page.cursor !== undefined) {
    const dash = page.cursor.indexOf('-')
    having.push('(starts_ms, fingerprint) < ({cursorMs:Int64}, {cursorFp:String})')
    params.cursorMs = Number(page.cursor.slice(0, dash))
    params.cursorFp = page.cursor.slice(dash + 1)
  }
  const rows = await queryRows<IncidentRow>(
    ch,
    `
      SELECT run_id, fingerprint, rule, rule_type, severity, op, state,
             toUnixTimestamp64Milli(starts_at) AS starts_ms,
             if(ends_at IS NULL, NULL, toUnixTimestamp64Milli(assumeNotNull(ends_at))) AS ends_ms,
             value, threshold, summary, description, resolved_summary, silenced_by
      FROM ${db}.alert_incidents
      WHERE ${[...where, ...having].join(' AND ') || '1'}
      ORDER BY starts_ms DESC, fingerprint DESC
      LIMIT {limit:UInt32}`,
    params,
  )
  const alerts = rows.slice(0, page.limit).map(incident)
  const last = rows.length > page.limit ? rows[page.limit - 1] : undefined
  return { alerts, nextCursor: last === undefined ? null : `${Number(last.starts_ms)}-${last.fingerprint}` }
}
