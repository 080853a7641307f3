import type { ClickHouse } from '../../services/adapters/clickhouse/client.js'
import { queryRows } from '../../services/adapters/clickhouse/client.js'
import type { Truth } from './produce.js'

export interface Stored {
  events: number
  byOp: Record<string, number>
  latencySumByOp: Record<string, number>
  /** Sum of histogram bucket counts per op: must equal the counts. */
  histTotalByOp: Record<string, number>
  raw: number
}

/** What ClickHouse holds for a run, in the shape of the producer's Truth. */
export async function stored(ch: ClickHouse, runId: string): Promise<Stored> {
  const rows = await queryRows<{ op: string; n: string; s: string; h: string }>(
    ch,
    `
    SELECT op, sum(count) AS n, sum(sum_us) AS s, arraySum(mapValues(sumMap(hist))) AS h
    FROM ${ch.database}.op_windows WHERE run_id = {runId:String} GROUP BY op`,
    { runId },
  )
  const raw = await queryRows<{ n: string }>(
    ch,
    `SELECT count() AS n FROM ${ch.database}.ops WHERE run_id = {runId:String}`,
    { runId },
  )
  const out: Stored = { events: 0, byOp: {}, latencySumByOp: {}, histTotalByOp: {}, raw: Number(raw[0]?.n ?? 0) }
  for (const r of rows) {
    out.byOp[r.op] = Number(r.n)
    out.latencySumByOp[r.op] = Number(r.s)
    out.histTotalByOp[r.op] = Number(r.h)
    out.events += Number(r.n)
  }
  return out
}

export function sameAsTruth(s: Stored, t: Truth): boolean {
  return s.events === t.events && JSON.stringify(sortKeys(s.byOp)) === JSON.stringify(sortKeys(t.byOp))
}

export function sortKeys(o: Record<string, number>): Record<string, number> {
  return Object.fromEntries(Object.entries(o).sort(([a], [b]) => a.localeCompare(b)))
}
