/**
 * Where a run's data stands, per Kafka partition, for windows starting at or
 * after sinceMs: what the alert evaluator and the live view both judge
 * window completeness from (services/core/stats/window-completeness.ts). One
 * query for both, so they can never disagree on which windows are complete.
 */
import type { RunProgress } from '../../core/stats/window-completeness.js'
import { queryRows, type ClickHouse } from './client.js'

type Num = string | number

/** undefined when the run has no windows since sinceMs, or no registered window length yet. */
export async function queryRunProgress(
  ch: ClickHouse,
  db: string,
  runId: string,
  sinceMs: number,
): Promise<RunProgress | undefined> {
  const rows = await queryRows<{ p: Num; max_end_us: Num; first_ms: Num; last_ms: Num; window_ms: Num | null }>(
    ch,
    `
    SELECT src_partition AS p, toUnixTimestamp64Micro(max(last_end)) AS max_end_us,
           toUnixTimestamp64Milli(min(window_start)) AS first_ms, toUnixTimestamp64Milli(max(window_start)) AS last_ms,
           (SELECT any(window_ms) FROM ${db}.runs WHERE run_id = {runId:String}) AS window_ms
    FROM ${db}.op_windows
    WHERE run_id = {runId:String} AND window_start >= fromUnixTimestamp64Milli({since:Int64})
    GROUP BY p`,
    { runId, since: Math.max(0, Math.floor(sinceMs)) },
  )
  if (rows.length === 0 || rows[0]!.window_ms === null) return undefined
  const ends = rows.map((r) => Number(r.max_end_us))
  return {
    // The run's registered length (runs.window_ms), the same for every row.
    windowMs: Number(rows[0]!.window_ms),
    firstWindowMs: Math.min(...rows.map((r) => Number(r.first_ms))),
    lastWindowMs: Math.max(...rows.map((r) => Number(r.last_ms))),
    partitionMaxEndUs: ends,
    lastDataMs: Math.floor(Math.max(...ends) / 1000),
  }
}
