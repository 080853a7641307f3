/**
 * What `benchstream import-ycsb` sends for the files of one YCSB client,
 * decided before anything is sent: interval logs become INTERVAL_HISTOGRAM
 * records (an `Intended-` log in the intended histogram of the same
 * operation), raw data becomes one event per operation, final reports become
 * SUMMARY_REPORT records (figures as reported). CLEANUP is reported, never
 * sent as operations (YCSB's own Throughput leaves it out too). Pure: parsed
 * files in, records out; the CLI does the reading and the sending.
 */
import {
  MAX_LATENCY_US,
  type IntervalHistogram,
  type Operation,
  type Status,
  type SummaryReportBody,
} from '../../../schemas/events.v1.js'
import type { HdrInterval } from './hdr-log.js'
import { groupIntervalLogs } from './import.js'
import type { IntervalLogReport, RawReport, RawSeries, SummaryReport, YcsbFile } from './report-types.js'
import { decodeError } from './text-input.js'

/** One interval record to send (run and client are the CLI's). */
export type PlannedInterval = Omit<IntervalHistogram, 'kind' | 'runId' | 'clientId'>

/** One operation's raw events, column by column (a file may hold millions). */
export interface PlannedRawSeries {
  op: Operation
  status: Status
  source: string
  /** µs since epoch: completion ms * 1000 - latency. */
  startUs: Float64Array
  latencyUs: Float64Array
  /** From the Intended- series when the file has one, else the latency. */
  intendedUs: Float64Array
}

export interface ImportPlan {
  intervals: PlannedInterval[]
  raw: PlannedRawSeries[]
  /** Final reports, one record each (the client's own figures). */
  summaries: Array<Omit<SummaryReportBody, 'runId' | 'clientId' | 'atUs'>>
  /** Operations sent, by `OP/STATUS` (what the end record's `sent` carries). */
  sent: Record<string, number>
  /** CLEANUP operations seen (reported, not sent), by where they came from. */
  cleanup: Array<{ source: string; operations: number }>
  /**
   * Raw pairs where the intended latency (paired in completion order) was below the measured one, so the measured one
   * was kept.
   */
  intendedClamped: number
  /** Earliest event or interval start, latest end, µs since epoch; undefined with summaries only. */
  firstUs: number | undefined
  lastUs: number | undefined
  /** From the events' span, else the longest RunTime(ms) a report states. */
  runtimeMs: number | undefined
  /** One line per file: what it held and what will be sent. */
  described: string[]
}

/**
 * Plans the import of one client's files. Throws BS_ERR_DECODE when the
 * files contradict each other: the same measurement given twice (two logs,
 * or an interval log and raw data of one operation), or two final reports
 * (one client has one).
 */
export function planImport(files: readonly YcsbFile[]): ImportPlan {
  const plan: ImportPlan = {
    intervals: [],
    raw: [],
    summaries: [],
    sent: {},
    cleanup: [],
    intendedClamped: 0,
    firstUs: undefined,
    lastUs: undefined,
    runtimeMs: undefined,
    described: [],
  }
  const logs = files.filter((f): f is IntervalLogReport => f.kind === 'intervals')
  const raws = files.filter((f): f is RawReport => f.kind === 'raw')
  const reports: SummaryReport[] = [
    ...files.filter((f): f is SummaryReport => f.kind === 'summary'),
    ...raws.flatMap((r) => (r.summary === undefined ? [] : [r.summary])),
  ]
  if (reports.length > 1)
    throw decodeError(
      reports[1]!.source,
      undefined,
      `is a second final report for this client (the first is ${reports[0]!.source}); import each ` +
        `client's report with its own --client-id`,
    )

  // Which file measures each operation and status, so none is counted twice.
  const measuredBy = new Map<string, string>()
  const claim = (op: Operation, status: Status, latency: string, source: string): void => {
    const key = `${op}/${status}/${latency}`
    const before = measuredBy.get(key)
    if (before !== undefined && before !== source)
      throw decodeError(
        source,
        undefined,
        `measures ${latency === 'intended' ? 'Intended-' : ''}${op}${status === 'OK' ? '' : `-${status}`} ` +
          `again (already in ${before}); give each measurement of a client once`,
      )
    measuredBy.set(key, source)
  }

  const span = (startUs: number, endUs: number): void => {
    plan.firstUs = Math.min(plan.firstUs ?? startUs, startUs)
    plan.lastUs = Math.max(plan.lastUs ?? endUs, endUs)
  }
  const count = (op: Operation, status: Status, n: number): void => {
    if (n > 0) plan.sent[`${op}/${status}`] = (plan.sent[`${op}/${status}`] ?? 0) + n
  }

  const grouped = groupIntervalLogs(logs)
  for (const l of logs) {
    if (l.name.kind === 'operation') claim(l.name.op!, l.name.status, l.name.latency, l.source)
    plan.described.push(
      `${l.source}: HdrHistogram interval log (${l.log.intervals[0]?.encoding ?? 'empty'}) of ${l.name.name}, ` +
        `${l.log.intervals.length} intervals, ${l.total} operations` +
        (l.name.kind === 'cleanup'
          ? ' (CLEANUP: reported, not counted)'
          : l.name.kind === 'other'
            ? ' (not a YCSB operation: skipped)'
            : ''),
    )
    if (l.name.kind === 'cleanup' && l.name.latency === 'measured')
      plan.cleanup.push({ source: l.source, operations: l.total })
  }
  for (const o of grouped.operations) {
    for (const iv of pairIntervals(o.measured, o.intended)) {
      plan.intervals.push({ op: o.op, status: o.status, ...iv })
      let n = 0
      for (const [, c] of iv.buckets) n += c
      count(o.op, o.status, n)
      span(iv.intervalStartUs, iv.intervalStartUs + iv.intervalLengthUs)
    }
  }

  for (const r of raws) {
    const intended = new Map<string, RawSeries>()
    for (const s of r.series)
      if (s.name.kind === 'operation' && s.name.latency === 'intended' && s.name.part !== 'Hdr')
        intended.set(`${s.name.op}/${s.name.status}`, s)
    let events = 0
    for (const s of r.series) {
      const n = s.name
      if (n.kind === 'cleanup' && n.latency === 'measured')
        plan.cleanup.push({ source: `${r.source} (${n.name})`, operations: s.count })
      if (n.kind !== 'operation' || n.latency !== 'measured' || n.part === 'Hdr' || n.part === 'Bucket') continue
      claim(n.op!, n.status, 'measured', r.source)
      const p = rawSeries(r.source, s, intended.get(`${n.op}/${n.status}`))
      plan.intendedClamped += p.clamped
      plan.raw.push(p.series)
      count(n.op!, n.status, s.count)
      events += s.count
      for (let i = 0; i < s.count; i++) span(p.series.startUs[i]!, p.series.startUs[i]! + p.series.latencyUs[i]!)
    }
    plan.described.push(
      `${r.source}: raw data (measurementtype=raw), ${r.series.length} series, ${events} operations ` +
        `as events${r.summary === undefined ? '' : ', and the report printed with it'}`,
    )
  }

  for (const rep of reports) {
    const withRaw = raws.some((r) => r.summary === rep)
    plan.summaries.push(summaryBody(rep, withRaw ? 'raw' : rep.format))
    const cleanup = rep.measurements.find((m) => m.name.kind === 'cleanup' && m.name.latency === 'measured')
    if (cleanup !== undefined && !plan.cleanup.some((c) => c.source.startsWith(rep.source)))
      plan.cleanup.push({ source: `${rep.source} ([CLEANUP])`, operations: cleanup.operations ?? 0 })
    if (!withRaw) {
      plan.described.push(
        `${rep.source}: final report (` +
          (rep.format === 'text'
            ? 'text'
            : `JSON, ${rep.format === 'json-array' ? 'JSONArrayMeasurementsExporter' : 'JSONMeasurementsExporter'}`) +
          '), ' +
          `${rep.measurements.length} measurements, ${rep.operations} operations as reported`,
      )
    }
  }
  if (plan.firstUs !== undefined && plan.lastUs !== undefined)
    plan.runtimeMs = Math.round((plan.lastUs - plan.firstUs) / 1000)
  else plan.runtimeMs = reports.find((r) => r.runtimeMs !== undefined)?.runtimeMs
  return plan
}

/**
 * Pairs one operation's measured and intended interval logs interval by
 * interval: YCSB writes the i-th interval of `READ.hdr` and of
 * `Intended-READ.hdr` at the same status tick. The record takes the
 * measured interval's time (the intended one's when there is no measured
 * one). Without intended logs, records carry no intended section.
 */
export function pairIntervals(
  measured: readonly HdrInterval[],
  intended: readonly HdrInterval[],
): Array<Pick<PlannedInterval, 'intervalStartUs' | 'intervalLengthUs' | 'buckets' | 'intended'>> {
  const out: Array<Pick<PlannedInterval, 'intervalStartUs' | 'intervalLengthUs' | 'buckets' | 'intended'>> = []
  const n = Math.max(measured.length, intended.length)
  for (let i = 0; i < n; i++) {
    const m = measured[i]
    const it = intended[i]
    const time = (m ?? it)!
    const rec: Pick<PlannedInterval, 'intervalStartUs' | 'intervalLengthUs' | 'buckets' | 'intended'> = {
      intervalStartUs: time.startUs,
      intervalLengthUs: time.lengthUs,
      buckets: m?.buckets ?? [],
    }
    if (intended.length > 0) rec.intended = it?.buckets ?? []
    // An interval with nothing in it on either side is not worth a record.
    if (rec.buckets.length === 0 && (rec.intended === undefined || rec.intended.length === 0)) continue
    out.push(rec)
  }
  return out
}

/**
 * One raw series as events. With an Intended- series of the same
 * operation, intended latencies are paired in completion order (both are
 * recorded right after the operation returns, to the ms); where two
 * operations completing in the same ms make a pair's intended latency lower
 * than its measured one, the measured one is kept and counted.
 */
function rawSeries(
  source: string,
  s: RawSeries,
  intended: RawSeries | undefined,
): { series: PlannedRawSeries; clamped: number } {
  for (let i = 0; i < s.count; i++) {
    if (s.latencyUs[i]! > MAX_LATENCY_US)
      throw decodeError(
        source,
        undefined,
        `${s.name.name} raw data from line ${s.line}, entry ${i + 1}: latency ${s.latencyUs[i]} µs is ` +
          `above the largest accepted, ${MAX_LATENCY_US} µs (one hour)`,
      )
  }
  let clamped = 0
  const intendedUs = Float64Array.from(s.latencyUs)
  if (intended !== undefined) {
    if (intended.count !== s.count)
      throw decodeError(
        source,
        intended.line,
        `${intended.name.name} has ${intended.count} raw entries but ${s.name.name} has ${s.count}; ` +
          `YCSB records one intended latency per operation`,
      )
    const order = (x: RawSeries): Uint32Array =>
      Uint32Array.from({ length: x.count }, (_, i) => i).sort((a, b) => x.endMs[a]! - x.endMs[b]! || a - b)
    const mo = order(s)
    const io = order(intended)
    for (let k = 0; k < s.count; k++) {
      const mi = mo[k]!
      const v = Math.min(intended.latencyUs[io[k]!]!, MAX_LATENCY_US)
      if (v < s.latencyUs[mi]!) clamped++
      else intendedUs[mi] = v
    }
  }
  return {
    series: { op: s.name.op!, status: s.name.status, source, startUs: s.startUs, latencyUs: s.latencyUs, intendedUs },
    clamped,
  }
}

/** A final report as a SUMMARY_REPORT body: YCSB's figures, named and converted to µs, nothing computed. */
export function summaryBody(
  r: SummaryReport,
  format: SummaryReportBody['format'] = r.format,
): Omit<SummaryReportBody, 'runId' | 'clientId' | 'atUs'> {
  const body: Omit<SummaryReportBody, 'runId' | 'clientId' | 'atUs'> = {
    source: r.source,
    format,
    measurements: r.measurements.map((m) => {
      const out: SummaryReportBody['measurements'][number] = {
        name: m.name.name,
        kind: m.name.kind,
        op: m.name.op ?? '',
        latency: m.name.latency,
        status: m.name.status,
        percentiles: m.percentiles.map((p) => ({ percentile: p.percentile, valueUs: p.valueUs, unit: p.unit })),
        returns: m.returns,
      }
      if (m.operations !== undefined) out.operations = m.operations
      if (m.averageUs !== undefined) out.averageUs = m.averageUs
      if (m.minUs !== undefined) out.minUs = m.minUs
      if (m.maxUs !== undefined) out.maxUs = m.maxUs
      return out
    }),
  }
  if (r.runtimeMs !== undefined) body.runtimeMs = r.runtimeMs
  if (r.throughputOpsPerSec !== undefined) body.throughputOpsPerSec = r.throughputOpsPerSec
  return body
}
