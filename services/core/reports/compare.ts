/**
 * Release A vs release B from two run reports: per measurement, throughput
 * and latencies with the change in percent.
 */
import type { Comparison, ComparisonSide, RunReport } from '../../../schemas/api.v1.js'

export function compareReports(a: RunReport, b: RunReport): Comparison {
  const names = ['OVERALL', ...new Set([...a.measurements, ...b.measurements].map((m) => m.name))]
  return {
    baseline: a.runId,
    candidate: b.runId,
    rows: names.map((name) => {
      const x = side(a, name)
      const y = side(b, name)
      return {
        name,
        baseline: x,
        candidate: y,
        changePercent: {
          throughput: change(x?.throughputOpsPerSec, y?.throughputOpsPerSec),
          averageLatency: change(x?.averageLatencyUs, y?.averageLatencyUs),
          p95Latency: change(x?.p95LatencyUs, y?.p95LatencyUs),
          p99Latency: change(x?.p99LatencyUs, y?.p99LatencyUs),
        },
      }
    }),
  }
}

function side(r: RunReport, name: string): ComparisonSide | null {
  if (name === 'OVERALL') return { throughputOpsPerSec: r.throughputOpsPerSec, averageLatencyUs: weightedAverage(r), p95LatencyUs: null, p99LatencyUs: null }
  const m = r.measurements.find((x) => x.name === name)
  if (m === undefined) return null
  return { throughputOpsPerSec: r.runtimeMs > 0 ? (m.operations * 1000) / r.runtimeMs : 0, averageLatencyUs: m.averageLatencyUs, p95LatencyUs: m.p95LatencyUs, p99LatencyUs: m.p99LatencyUs }
}

function change(x: number | null | undefined, y: number | null | undefined): number | null {
  if (x === undefined || y === undefined || x === null || y === null || !Number.isFinite(x) || !Number.isFinite(y) || x === 0) return null
  return ((y - x) / x) * 100
}

function weightedAverage(r: RunReport): number {
  let n = 0
  let sum = 0
  for (const m of r.measurements) {
    n += m.operations
    sum += m.averageLatencyUs * m.operations
  }
  return n === 0 ? 0 : sum / n
}
