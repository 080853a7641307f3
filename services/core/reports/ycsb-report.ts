/**
 * The final report, in YCSB's text layout and as JSON. Built from per
 * (operation, status) aggregates, whether they come from the driver's own
 * histograms or from merged ClickHouse windows, so both read the same.
 */
import type { Measurement, Report } from '../../../schemas/run-reports-api.v1.js'
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
  /** The same operations' intended latency (from their scheduled start), when the run had a target. */
  intended?: LatencyAggregate
}

/** Latency figures of a set of operations: sum, extremes and histogram. */
export interface LatencyAggregate {
  sumUs: number
  minUs: number
  maxUs: number
  hist: Array<[number, number]>
}

const ORDER = ['READ', 'UPDATE', 'INSERT', 'SCAN', 'READ-MODIFY-WRITE', 'DELETE']

/**
 * YCSB's report from per (operation, status) aggregates. With `intended`
 * (a run with a target) every measurement gets an `Intended-` twin after all
 * measured ones, as YCSB prints them with measurement.interval=both; the
 * twins carry no Return= lines (YCSB counts returns on the measured side).
 */
export function buildReport(
  aggregates: readonly OpStatusAggregate[],
  runtimeMs: number,
  opts: { intended?: boolean } = {},
): Report {
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
  const measurements = names.map((name) => {
    const parts = byName.get(name)!
    return measurement(
      name,
      parts.map((p) => ({ count: p.count, latency: p })),
      name.endsWith('-FAILED') ? {} : (returns.get(name) ?? {}),
    )
  })
  // An operation whose every call failed still gets its Return= lines.
  for (const [op, r] of returns) {
    if (!byName.has(op)) measurements.push({ ...measurement(op, [], {}), returns: r })
  }
  measurements.sort((x, y) => rank(x.name) - rank(y.name) || x.name.localeCompare(y.name))
  if (opts.intended === true) {
    for (const name of names) {
      const parts = byName.get(name)!
      measurements.push(
        measurement(
          `Intended-${name}`,
          parts.map((p) => ({ count: p.count, latency: p.intended ?? p })),
          {},
        ),
      )
    }
  }
  return {
    runtimeMs,
    operations: total,
    throughputOpsPerSec: runtimeMs > 0 ? (total * 1000) / runtimeMs : 0,
    measurements,
  }
}

/** One measurement from the latency aggregates of its parts, merged exactly. */
function measurement(
  name: string,
  parts: ReadonlyArray<{ count: number; latency: LatencyAggregate }>,
  returns: Record<string, number>,
): Measurement {
  const merged = new Map<number, number>()
  let count = 0
  let sum = 0
  let min = Number.POSITIVE_INFINITY
  let max = 0
  for (const { count: n, latency: l } of parts) {
    count += n
    sum += l.sumUs
    min = Math.min(min, l.minUs)
    max = Math.max(max, l.maxUs)
    for (const [i, c] of l.hist) merged.set(i, (merged.get(i) ?? 0) + c)
  }
  const entries = [...merged.entries()].sort((a, b) => a[0] - b[0])
  const q = (x: number): number => quantileFromEntries(entries, x, count === 0 ? 0 : min, max)
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
    returns,
  }
}

/** True for the `Intended-` twin of a measurement. */
export function isIntended(name: string): boolean {
  return name.startsWith('Intended-')
}

function rank(name: string): number {
  const base = name.endsWith('-FAILED') ? name.slice(0, -7) : name
  const i = ORDER.indexOf(base)
  return (i === -1 ? ORDER.length : i) * 2 + (name.endsWith('-FAILED') ? 1 : 0)
}

/** YCSB's text layout (`[OVERALL], RunTime(ms), 10110`). */
export function formatYcsb(report: Report): string {
  const lines = [
    `[OVERALL], RunTime(ms), ${Math.round(report.runtimeMs)}`,
    `[OVERALL], Throughput(ops/sec), ${report.throughputOpsPerSec}`,
  ]
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
    for (const [status, c] of Object.entries(m.returns).sort(([a], [b]) => a.localeCompare(b)))
      lines.push(`${n}, Return=${status}, ${c}`)
  }
  return lines.join('\n') + '\n'
}
