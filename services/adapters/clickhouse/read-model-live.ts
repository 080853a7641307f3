/**
 * What the live view reads while a run goes on: its timeline, its windows by operation and status, by client, and
 * the server caches' hits and misses per window from cumulative counters.
 */
import type { ClientWindowRow, ServerCacheRow, TimelinePoint, WindowOpStatusRow } from '../../core/ports/read-model.js'
import { SERVER_CACHE_COUNTERS } from '../../core/reports/server-cache.js'
import { entriesFromMap, quantileFromEntries } from '../../core/stats/histogram.js'
import { queryRows, type ClickHouse } from './client.js'

type Num = string | number

/**
 * How far before a range server samples are read, so the first sample in it has a predecessor to take its increase from
 * (the drivers sample every second).
 */
const SERVER_SAMPLE_LOOKBACK_MS = 60_000

export async function timeline(ch: ClickHouse, runId: string, sinceMs: number): Promise<TimelinePoint[]> {
  const db = ch.database
  const rows = await queryRows<{
    t: Num
    op: string
    ops: Num
    errors: Num
    hist: Record<string, Num>
    ihist: Record<string, Num>
    hits: Num
    misses: Num
    window_ms: Num
  }>(
    ch,
    `
      SELECT toUnixTimestamp64Milli(window_start) AS t, op, sum(count) AS ops, sum(errors) AS errors,
             sumMap(hist) AS hist, sumMap(intended_hist) AS ihist,
             sum(cache_hits) AS hits, sum(cache_misses) AS misses,
             (SELECT any(window_ms) FROM ${db}.runs WHERE run_id = {runId:String}) AS window_ms
      FROM ${db}.op_windows
      WHERE run_id = {runId:String} AND window_start >= fromUnixTimestamp64Milli({since:Int64})
      GROUP BY t, op ORDER BY t, op`,
    { runId, since: sinceMs },
  )
  return rows.map((r) => {
    const e = entriesFromMap(r.hist)
    const perSec = 1000 / Number(r.window_ms)
    return {
      t: Number(r.t),
      op: r.op,
      ops: Number(r.ops) * perSec,
      errors: Number(r.errors) * perSec,
      p50: quantileFromEntries(e, 0.5),
      p99: quantileFromEntries(e, 0.99),
      intendedP99: quantileFromEntries(entriesFromMap(r.ihist), 0.99),
      hits: Number(r.hits),
      misses: Number(r.misses),
    }
  })
}

export async function liveWindows(
  ch: ClickHouse,
  runId: string,
  fromMs: number,
  toMs: number,
): Promise<WindowOpStatusRow[]> {
  const db = ch.database
  const rows = await queryRows<{
    t: Num
    op: string
    status: string
    n: Num
    sum_us: Num
    min_us: Num
    max_us: Num
    hist: Record<string, Num>
    ihist: Record<string, Num>
    hits: Num
    misses: Num
  }>(
    ch,
    `
      SELECT toUnixTimestamp64Milli(window_start) AS t, op, status, sum(count) AS n,
             sum(sum_us) AS sum_us, min(min_us) AS min_us, max(max_us) AS max_us,
             sumMap(hist) AS hist, sumMap(intended_hist) AS ihist, sum(cache_hits) AS hits, sum(cache_misses) AS misses
      FROM ${db}.op_windows
      WHERE run_id = {runId:String}
        AND window_start >= fromUnixTimestamp64Milli({from:Int64})
        AND window_start < fromUnixTimestamp64Milli({to:Int64})
      GROUP BY t, op, status ORDER BY t, op, status`,
    { runId, from: fromMs, to: toMs },
  )
  return rows.map((r) => ({
    startMs: Number(r.t),
    op: r.op,
    status: r.status,
    count: Number(r.n),
    sumUs: Number(r.sum_us),
    minUs: Number(r.min_us),
    maxUs: Number(r.max_us),
    hist: entriesFromMap(r.hist),
    intendedHist: entriesFromMap(r.ihist),
    cacheHits: Number(r.hits),
    cacheMisses: Number(r.misses),
  }))
}

export async function clientWindows(
  ch: ClickHouse,
  runId: string,
  fromMs: number,
  toMs: number,
): Promise<ClientWindowRow[]> {
  const db = ch.database
  const rows = await queryRows<{ t: Num; client_id: string; n: Num }>(
    ch,
    `
      SELECT toUnixTimestamp64Milli(window_start) AS t, client_id, sum(count) AS n
      FROM ${db}.op_windows
      WHERE run_id = {runId:String}
        AND window_start >= fromUnixTimestamp64Milli({from:Int64})
        AND window_start < fromUnixTimestamp64Milli({to:Int64})
      GROUP BY t, client_id ORDER BY t, client_id`,
    { runId, from: fromMs, to: toMs },
  )
  return rows.map((r) => ({ startMs: Number(r.t), clientId: r.client_id, count: Number(r.n) }))
}

export async function serverCacheWindows(
  ch: ClickHouse,
  runId: string,
  fromMs: number,
  toMs: number,
  windowMs: number,
): Promise<ServerCacheRow[]> {
  const db = ch.database
  const entries = Object.entries(SERVER_CACHE_COUNTERS)
  const sources = entries.map(([s]) => s)
  const hitNames = entries.map(([, c]) => c.hits)
  const missNames = entries.map(([, c]) => c.misses)
  // Counters are cumulative: each sample's increase over the previous one
  // of the same client and counter (a counter that went down, a restarted
  // server, counts from zero), summed per window of the sample's time.
  const rows = await queryRows<{ t: Num; source: string; hits: Num; misses: Num }>(
    ch,
    `
      SELECT intDiv(toUnixTimestamp64Milli(at), {w:UInt32}) * {w:UInt32} AS t, source,
             sumIf(delta, is_hit) AS hits, sumIf(delta, NOT is_hit) AS misses
      FROM
      (
          SELECT at, source, has(arrayZip({sources:Array(String)}, {hitNames:Array(String)}), (source, name)) AS is_hit,
                 if(value >= prev, value - prev, value) AS delta
          FROM
          (
              SELECT at, source, name, value, lagInFrame(value) OVER w AS prev, row_number() OVER w AS n
              FROM ${db}.server_metrics
              WHERE run_id = {runId:String}
                AND (has(arrayZip({sources:Array(String)}, {hitNames:Array(String)}), (source, name))
                     OR has(arrayZip({sources:Array(String)}, {missNames:Array(String)}), (source, name)))
                AND at >= fromUnixTimestamp64Milli({lookFrom:Int64}) AND at < fromUnixTimestamp64Milli({to:Int64})
              WINDOW w AS (PARTITION BY client_id, source, name ORDER BY at
                           ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW)
          )
          WHERE n > 1 AND at >= fromUnixTimestamp64Milli({from:Int64})
      )
      GROUP BY t, source ORDER BY t, source`,
    {
      runId,
      w: windowMs,
      sources,
      hitNames,
      missNames,
      from: fromMs,
      lookFrom: Math.max(0, fromMs - SERVER_SAMPLE_LOOKBACK_MS),
      to: toMs,
    },
  )
  return rows.map((r) => ({ startMs: Number(r.t), source: r.source, hits: Number(r.hits), misses: Number(r.misses) }))
}
