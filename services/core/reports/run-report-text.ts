/**
 * A stored run's report as text: YCSB's lines, then Benchstream's own in the
 * same `[SECTION], Name, value` shape (as the driver prints them), so that a
 * person reads one block and a YCSB report parser skips what it does not know.
 */
import type { RunReport } from '../../../schemas/api.v1.js'
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
  return formatYcsb(r) + lines.join('\n') + '\n'
}

function round4(x: number): number {
  return Math.round(x * 10_000) / 10_000
}
