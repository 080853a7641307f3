/**
 * A stored run's report as text: YCSB's lines, then Benchstream's own in the
 * same `[SECTION], Name, value` shape (as the driver prints them), so that a
 * person reads one block and a YCSB report parser skips what it does not know.
 * The alerts the run raised come last, one `[ALERT]` line each, oldest first.
 */
import type { Alert } from '../../../schemas/alerts-api.v1.js'
import type { RunReport } from '../../../schemas/run-reports-api.v1.js'
import { formatYcsb } from './ycsb-report.js'

export function formatRunReport(r: RunReport): string {
  const lines = [`[BENCHSTREAM], RunId, ${r.runId}`]
  if (r.run !== undefined) {
    lines.push(`[BENCHSTREAM], Clients, ${r.run.clients}`)
    if (r.run.target > 0)
      lines.push(
        `[BENCHSTREAM], Target(ops/sec), ${r.run.target}`,
        `[BENCHSTREAM], MaxScheduleLag(ms), ${r.run.schedule_lag_max_ms}`,
        `[BENCHSTREAM], BehindScheduleEpisodes, ${r.run.behind_schedule_episodes}`,
      )
    // An experiment's runs know these (agents measure their clocks, the start barrier the skew); others print neither.
    if (r.run.start_skew_ms !== null) lines.push(`[BENCHSTREAM], StartSkew(ms), ${round4(r.run.start_skew_ms)}`)
    if (r.run.clock_offset_max_ms !== null)
      lines.push(`[BENCHSTREAM], ClockOffsetMax(ms), ${round4(r.run.clock_offset_max_ms)}`)
  }
  for (const [op, ratio] of Object.entries(r.cacheHitRatio))
    if (ratio !== null) lines.push(`[BENCHSTREAM], CacheHitRatio(${op}), ${round4(ratio)}`)
  for (const s of r.serverCache)
    if (s.ratio !== null) lines.push(`[BENCHSTREAM], ServerCacheHitRatio(${s.source}), ${round4(s.ratio)}`)
  lines.push(`[BENCHSTREAM], EventsCounted, ${r.completeness.counted}`)
  if (r.completeness.sent !== null) lines.push(`[BENCHSTREAM], EventsSent, ${r.completeness.sent}`)
  if (r.completeness.undelivered > 0) lines.push(`[BENCHSTREAM], EventsUndelivered, ${r.completeness.undelivered}`)
  if (r.lateEvents > 0) lines.push(`[BENCHSTREAM], LateEvents, ${r.lateEvents}`)
  const alerts = [...r.alerts].sort((a, b) => a.startsAt.localeCompare(b.startsAt) || a.rule.localeCompare(b.rule))
  return formatYcsb(r) + [...lines, ...alerts.map(alertLine)].join('\n') + '\n'
}

/**
 * `[ALERT], Rule(OP) severity state start..end [silenced by ID]: summary, value`: shaped like every YCSB record
 * (`[SECTION], name, number`), so a reader of YCSB reports takes it for one more section it does not know. The name
 * holds no comma or bracket (the summary's are replaced); the number is what the rule measured when it fired
 * (ops/s, an error fraction, or seconds without data).
 */
export function alertLine(a: Alert): string {
  const span =
    a.endsAt === null
      ? `firing since ${a.startsAt}`
      : `resolved ${a.startsAt}..${a.endsAt} (${((Date.parse(a.endsAt) - Date.parse(a.startsAt)) / 1000).toFixed(1)} s)`
  const silenced = a.silencedBy === null ? '' : ` silenced by ${a.silencedBy}`
  const summary = a.summary
    .replace(/(\d),(?=\d{3}\b)/g, '$1')
    .replaceAll(',', ';')
    .replaceAll('[', '(')
    .replaceAll(']', ')')
  return `[ALERT], ${a.rule}(${a.op}) ${a.severity} ${span}${silenced}: ${summary}, ${Number(a.value.toFixed(4))}`
}

function round4(x: number): number {
  return Math.round(x * 10_000) / 10_000
}
