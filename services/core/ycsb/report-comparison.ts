/**
 * YCSB's own final report next to Benchstream's report of the same run:
 * operations per operation and status (they must be equal: every call the
 * bridge timed is an event), and the p95/p99 each printed, whose difference
 * is Benchstream's histogram resolution (a bucket is at most 1/128 of its
 * value wide) when one client ran.
 */
import { STATUSES, type Status } from '../../../schemas/events.v1.js'
import type { Report } from '../../../schemas/run-reports-api.v1.js'
import type { SummaryReport } from './report-types.js'

export interface ComparisonRow {
  /** `READ/OK`, `UPDATE/ERROR`. */
  key: string
  ycsb: number
  benchstream: number
}

export interface PercentileRow {
  op: string
  percentile: 95 | 99
  ycsbUs: number
  benchstreamUs: number
}

export interface ReportComparison {
  counts: ComparisonRow[]
  percentiles: PercentileRow[]
  /** True when every operation and status has the same count on both sides. */
  countsEqual: boolean
}

/** A YCSB status name as the bridge sends it (BATCHED_OK is OK; names Benchstream lacks are ERROR). */
export function bridgeStatus(ycsbStatus: string): Status {
  if (ycsbStatus === 'BATCHED_OK') return 'OK'
  return STATUSES.find((s) => s === ycsbStatus) ?? 'ERROR'
}

/** Compares YCSB's report (its `Return=` lines, CLEANUP left out) with Benchstream's. */
export function compareReports(ycsb: SummaryReport, ours: Report): ReportComparison {
  const theirs = new Map<string, number>()
  for (const m of ycsb.measurements) {
    if (
      m.name.kind !== 'operation' ||
      m.name.latency !== 'measured' ||
      m.name.ycsbStatus !== undefined ||
      m.name.part === 'Raw' ||
      m.name.part === 'Bucket'
    )
      continue
    for (const [status, n] of Object.entries(m.returns)) {
      const key = `${m.name.op}/${bridgeStatus(status)}`
      theirs.set(key, (theirs.get(key) ?? 0) + n)
    }
  }
  const mine = new Map<string, number>()
  for (const m of ours.measurements) {
    if (m.name.startsWith('Intended-') || m.name.endsWith('-FAILED')) continue
    for (const [status, n] of Object.entries(m.returns))
      mine.set(`${m.name}/${status}`, (mine.get(`${m.name}/${status}`) ?? 0) + n)
  }
  const keys = [...new Set([...theirs.keys(), ...mine.keys()])].sort()
  const counts = keys.map((key) => ({ key, ycsb: theirs.get(key) ?? 0, benchstream: mine.get(key) ?? 0 }))
  const percentiles: PercentileRow[] = []
  for (const m of ycsb.measurements) {
    if (
      m.name.kind !== 'operation' ||
      m.name.ycsbStatus !== undefined ||
      m.name.part === 'Raw' ||
      m.name.part === 'Bucket'
    )
      continue
    const name = `${m.name.latency === 'intended' ? 'Intended-' : ''}${m.name.op}`
    const b = ours.measurements.find((x) => x.name === name)
    if (b === undefined) continue
    for (const q of [95, 99] as const) {
      const p = m.percentiles.find((x) => x.percentile === q)
      if (p !== undefined)
        percentiles.push({
          op: name,
          percentile: q,
          ycsbUs: p.valueUs,
          benchstreamUs: q === 95 ? b.p95LatencyUs : b.p99LatencyUs,
        })
    }
  }
  return { counts, percentiles, countsEqual: counts.every((r) => r.ycsb === r.benchstream) }
}

/** The comparison as text lines, for a terminal. */
export function formatComparison(c: ReportComparison): string {
  const width = Math.max(12, ...c.counts.map((r) => r.key.length), ...c.percentiles.map((r) => r.op.length + 5))
  const lines = [`${'operations'.padEnd(width)} ${'YCSB'.padStart(12)} ${'Benchstream'.padStart(12)}`]
  for (const r of c.counts)
    lines.push(
      `${r.key.padEnd(width)} ${String(r.ycsb).padStart(12)} ${String(r.benchstream).padStart(12)} ` +
        ` ${r.ycsb === r.benchstream ? 'equal' : `DIFFERENT by ${r.benchstream - r.ycsb}`}`,
    )
  if (c.percentiles.length > 0) {
    lines.push(`${'latency (µs)'.padEnd(width)} ${'YCSB'.padStart(12)} ${'Benchstream'.padStart(12)}`)
    for (const r of c.percentiles) {
      const diff = r.ycsbUs === 0 ? 0 : ((r.benchstreamUs - r.ycsbUs) / r.ycsbUs) * 100
      lines.push(
        `${`${r.op} p${r.percentile}`.padEnd(width)} ${String(r.ycsbUs).padStart(12)} ` +
          `${String(r.benchstreamUs).padStart(12)} ` +
          ` ${diff >= 0 ? '+' : ''}${diff.toFixed(2)}%`,
      )
    }
    lines.push(
      '(YCSB times the call into the bridge, the bridge the call it wraps: each operation differs ' +
        "by the bridge's own microseconds, which moves values in a sparse tail)",
    )
  }
  return lines.join('\n') + '\n'
}
