/**
 * The final report, in YCSB's text layout and as JSON. Built from per
 * (operation, status) aggregates, whether they come from the driver's own
 * histograms or from merged ClickHouse windows, so both read the same.
 */
import type { Measurement, Report } from '../../../schemas/api.v1.js'
import { quantileFromEntries } from '../stats/histogram.js'

export type { Report }

/** Aggregate of one (operation, status) over a run. */
export interface OpStatusAggregate {
  op: string
  status: string
  count: number
  sumUs: number
  minUs: number
  maxUs: number
  /** [bucket index, count], sorted by index. */
  hist: Array<[number, number]>
}

const ORDER = ['READ', 'UPDATE', 'INSERT', 'SCAN', 'READ-MODIFY-WRITE', 'DELETE']

export function buildReport(aggregates: OpStatusAggregate[], runtimeMs: number): Report {
  const byName = new Map<string, OpStatusAggregate[]>()
  const returns = new Map<string, Record<string, number>>()
  let total = 0
  for (const a of aggregates) {
    if (a.count === 0) continue
    total += a.count
    const name = a.status === 'OK' ? a.op : `${a.op}-FAILED`
    byName.set(name, [...(byName.get(name) ?? []), a])
    const r = returns.get(a.op) ?? {}
    r[a.status] = (r[a.status] ?? 0) + a.count
    returns.set(a.op, r)
  }
  const names = [...byName.keys()].sort((x, y) => rank(x) - rank(y) || x.localeCompare(y))
  const measurements = names.map((name): Measurement => {
    const parts = byName.get(name)!
    const merged = new Map<number, number>()
    let count = 0
    let sum = 0
    let min = Number.POSITIVE_INFINITY
    let max = 0
    for (const p of parts) {
      count += p.count
      sum += p.sumUs
      min = Math.min(min, p.minUs)
      max = Math.max(max, p.maxUs)
      for (const [i, c] of p.hist) merged.set(i, (merged.get(i) ?? 0) + c)
    }
    const entries = [...merged.entries()].sort((a, b) => a[0] - b[0])
    const q = (x: number): number => quantileFromEntries(entries, x, count === 0 ? 0 : min, max)
    const isFailed = name.endsWith('-FAILED')
    return {
      name,
      operations: count,
      averageLatencyUs: count === 0 ? 0 : sum / count,
      minLatencyUs: count === 0 ? 0 : min,
      maxLatencyUs: max,
      p50LatencyUs: q(0.5),
      p90LatencyUs: q(0.9),
      p95LatencyUs: q(0.95),
      p99LatencyUs: q(0.99),
      p999LatencyUs: q(0.999),
      p9999LatencyUs: q(0.9999),
      returns: isFailed ? {} : (returns.get(name) ?? {}),
    }
  })
  // An operation whose every call failed still gets its Return= lines.
  for (const [op, r] of returns) {
    if (!byName.has(op)) measurements.push({ name: op, operations: 0, averageLatencyUs: 0, minLatencyUs: 0, maxLatencyUs: 0, p50LatencyUs: 0, p90LatencyUs: 0, p95LatencyUs: 0, p99LatencyUs: 0, p999LatencyUs: 0, p9999LatencyUs: 0, returns: r })
  }
  measurements.sort((x, y) => rank(x.name) - rank(y.name) || x.name.localeCompare(y.name))
  return { runtimeMs, operations: total, throughputOpsPerSec: runtimeMs > 0 ? (total * 1000) / runtimeMs : 0, measurements }
}

function rank(name: string): number {
  const base = name.endsWith('-FAILED') ? name.slice(0, -7) : name
  const i = ORDER.indexOf(base)
  return (i === -1 ? ORDER.length : i) * 2 + (name.endsWith('-FAILED') ? 1 : 0)
}

/** YCSB's text layout (`[OVERALL], RunTime(ms), 10110`). */
export function formatYcsb(report: Report): string {
  const lines = [`[OVERALL], RunTime(ms), ${Math.round(report.runtimeMs)}`, `[OVERALL], Throughput(ops/sec), ${report.throughputOpsPerSec}`]
  for (const m of report.measurements) {
    const n = `[${m.name}]`
    lines.push(`${n}, Operations, ${m.operations}`)
    if (m.operations > 0) {
      lines.push(
        `${n}, AverageLatency(us), ${m.averageLatencyUs}`,
        `${n}, MinLatency(us), ${m.minLatencyUs}`,
        `${n}, MaxLatency(us), ${m.maxLatencyUs}`,
        `${n}, 50thPercentileLatency(us), ${m.p50LatencyUs}`,
        `${n}, 90thPercentileLatency(us), ${m.p90LatencyUs}`,
        `${n}, 95thPercentileLatency(us), ${m.p95LatencyUs}`,
        `${n}, 99thPercentileLatency(us), ${m.p99LatencyUs}`,
        `${n}, 99.9PercentileLatency(us), ${m.p999LatencyUs}`,
        `${n}, 99.99PercentileLatency(us), ${m.p9999LatencyUs}`,
      )
    }
    for (const [status, c] of Object.entries(m.returns).sort(([a], [b]) => a.localeCompare(b))) lines.push(`${n}, Return=${status}, ${c}`)
  }
  return lines.join('\n') + '\n'
}
