/**
 * YCSB's final report, from its records (`[metric], measurement, value`,
 * whichever exporter wrote them) to a SummaryReport; and the summary run of
 * several clients' reports. The figures stay YCSB's: units converted
 * (`(ms)` percentiles to µs), nothing recomputed.
 */
import type {
  GcFigures,
  ReportedPercentile,
  SummaryMeasurement,
  SummaryReport,
  SummaryRun,
  SummaryRunMeasurement,
  SummaryWriter,
} from './report-types.js'
import { parseMeasurementName } from './measurement-name.js'
import { decodeError } from './text-input.js'

/** One `[metric], measurement, value` record as any exporter wrote it. */
export interface ReportRecord {
  metric: string
  measurement: string
  value: number
  line: number
}

const PERCENTILE = /^(\d+(?:\.\d+)?)(?:st|nd|rd|th)?PercentileLatency\((us|ms)\)$/
const RAW_PERCENTILE = /^p(\d+(?:\.\d+)?)$/
const RAW_SUMMARY_MARKER = 'Below is a summary of latency in microseconds:'

/**
 * Builds the report; throws BS_ERR_DECODE naming the line of a figure that cannot be what its name says, or of a
 * repeated one.
 */
export function buildSummaryReport(
  records: readonly ReportRecord[],
  format: SummaryReport['format'],
  source: string,
  ignoredLines: number,
): SummaryReport {
  const seen = new Map<string, number>()
  const report: SummaryReport = {
    kind: 'summary',
    format,
    source,
    origin: 'reported',
    runtimeMs: undefined,
    throughputOpsPerSec: undefined,
    gc: { count: undefined, timeMs: undefined, timePercent: undefined, collectors: [] },
    measurements: [],
    operations: 0,
    other: [],
    ignoredLines,
  }
  const byName = new Map<string, SummaryMeasurement & { rawMarker: boolean }>()
  for (const r of records) {
    const key = `${r.metric}\u0000${r.measurement}`
    const first = seen.get(key)
    if (first !== undefined) {
      throw decodeError(
        source,
        r.line,
        `[${r.metric}], ${r.measurement} appears again (first at line ${first}); expected one report ` +
          `per file: give each client's report as its own file`,
      )
    }
    seen.set(key, r.line)
    const count = (what: string): number => {
      if (!Number.isSafeInteger(r.value) || r.value < 0)
        throw decodeError(
          source,
          r.line,
          `[${r.metric}], ${r.measurement} is ${r.value}; expected a whole ${what} >= 0`,
        )
      return r.value
    }
    const nonNegative = (): number => {
      if (!(r.value >= 0) || r.value === Number.POSITIVE_INFINITY)
        throw decodeError(
          source,
          r.line,
          `[${r.metric}], ${r.measurement} is ${r.value}; expected a finite number >= 0`,
        )
      return r.value
    }
    if (r.metric === 'OVERALL') {
      if (r.measurement === 'RunTime(ms)') report.runtimeMs = count('number of ms')
      else if (r.measurement === 'Throughput(ops/sec)')
        report.throughputOpsPerSec = Number.isNaN(r.value) ? undefined : nonNegative()
      else report.other.push({ metric: r.metric, measurement: r.measurement, value: r.value, line: r.line })
      continue
    }
    if (gcRecord(report.gc, r, count, nonNegative)) continue
    let m = byName.get(r.metric)
    if (m === undefined) {
      m = {
        name: parseMeasurementName(r.metric),
        writer: 'unknown',
        operations: undefined,
        averageUs: undefined,
        minUs: undefined,
        maxUs: undefined,
        varianceUs2: undefined,
        percentiles: [],
        returns: {},
        series: [],
        other: [],
        rawMarker: false,
      }
      byName.set(r.metric, m)
    }
    const latency = (): number | undefined => (Number.isNaN(r.value) ? undefined : nonNegative())
    const pct = PERCENTILE.exec(r.measurement) ?? RAW_PERCENTILE.exec(r.measurement)
    switch (r.measurement) {
      case 'Operations':
      case 'Total Operations':
        m.operations = count('number of operations')
        break
      case 'AverageLatency(us)':
      case 'Average':
        m.averageUs = latency()
        break
      case 'MinLatency(us)':
      case 'Min':
        m.minUs = latency()
        break
      case 'MaxLatency(us)':
      case 'Max':
        m.maxUs = latency()
        break
      case 'LatencyVariance(us)':
        m.varianceUs2 = Number.isNaN(r.value) ? undefined : r.value
        break
      case RAW_SUMMARY_MARKER:
        m.rawMarker = true
        break
      default:
        if (r.measurement.startsWith('Return='))
          m.returns[r.measurement.slice('Return='.length)] = count('number of operations')
        else if (pct !== null) {
          const unit = pct[2] === 'ms' ? 'ms' : 'us'
          const v = nonNegative()
          const p: ReportedPercentile = {
            percentile: Number(pct[1]),
            valueUs: unit === 'ms' ? v * 1000 : v,
            unit,
            label: r.measurement,
            line: r.line,
          }
          m.percentiles.push(p)
        } else if (/^>?\d+$/.test(r.measurement)) m.series.push({ key: r.measurement, value: r.value, line: r.line })
        else m.other.push({ measurement: r.measurement, value: r.value, line: r.line })
    }
  }
  for (const m of byName.values()) {
    const { rawMarker, ...measurement } = m
    measurement.writer = writerOf(measurement, rawMarker)
    report.measurements.push(measurement)
    const n = measurement.name
    if (n.kind === 'operation' && n.latency === 'measured' && n.part !== 'Raw' && n.part !== 'Bucket')
      report.operations += measurement.operations ?? 0
  }
  return report
}

function writerOf(m: SummaryMeasurement, rawMarker: boolean): SummaryWriter {
  if (rawMarker || m.percentiles.some((p) => p.label.startsWith('p'))) return 'raw'
  if (m.varianceUs2 !== undefined) return 'histogram'
  if (m.percentiles.some((p) => p.unit === 'us')) return 'hdrhistogram'
  if (m.series.length > 0 && m.percentiles.length === 0) return 'timeseries'
  return 'unknown'
}

/** `[TOTAL_GCs]`, `[TOTAL_GC_TIME]`, `[TOTAL_GC_TIME_%]` and their per-collector forms; false for any other record. */
function gcRecord(gc: GcFigures, r: ReportRecord, count: (what: string) => number, nonNegative: () => number): boolean {
  const collector = (name: string): GcFigures['collectors'][number] => {
    let c = gc.collectors.find((x) => x.name === name)
    if (c === undefined) {
      c = { name, count: undefined, timeMs: undefined, timePercent: undefined }
      gc.collectors.push(c)
    }
    return c
  }
  const forms: Array<[RegExp, string, (name: string | undefined) => void]> = [
    [/^TOTAL_GCs$/, 'Count', () => (gc.count = count('number of collections'))],
    [/^TOTAL_GC_TIME$/, 'Time(ms)', () => (gc.timeMs = count('number of ms'))],
    // GC time over run time: YCSB prints NaN when the run took 0 ms (operationcount=0).
    [/^TOTAL_GC_TIME_%$/, 'Time(%)', () => (gc.timePercent = Number.isNaN(r.value) ? undefined : nonNegative())],
    [/^TOTAL_GCS_(.+)$/, 'Count', (name) => (collector(name!).count = count('number of collections'))],
    [
      /^TOTAL_GC_TIME_%_(.+)$/,
      'Time(%)',
      (name) => (collector(name!).timePercent = Number.isNaN(r.value) ? undefined : nonNegative()),
    ],
    [/^TOTAL_GC_TIME_(.+)$/, 'Time(ms)', (name) => (collector(name!).timeMs = count('number of ms'))],
  ]
  for (const [re, measurement, set] of forms) {
    const m = re.exec(r.metric)
    if (m === null) continue
    if (r.measurement !== measurement) return false
    set(m[1])
    return true
  }
  return false
}

/**
 * The summary run of several clients' final reports (one per client, each
 * its own file). Counts and throughput add up, averages combine weighted by
 * operations, min and max combine; percentiles do not, so with more than one
 * client they stay in each client's report and `percentilesPerClient` says so.
 */
export function summaryRun(clients: ReadonlyArray<{ clientId: string; report: SummaryReport }>): SummaryRun {
  const measurements = new Map<string, SummaryRunMeasurement & { weighted: number; weight: number }>()
  let runtimeMs: number | undefined
  let throughput: number | undefined
  let operations = 0
  for (const { report } of clients) {
    if (report.runtimeMs !== undefined) runtimeMs = Math.max(runtimeMs ?? 0, report.runtimeMs)
    if (report.throughputOpsPerSec !== undefined) throughput = (throughput ?? 0) + report.throughputOpsPerSec
    operations += report.operations
    for (const m of report.measurements) {
      let s = measurements.get(m.name.name)
      if (s === undefined) {
        s = {
          name: m.name,
          operations: 0,
          averageUs: undefined,
          minUs: undefined,
          maxUs: undefined,
          percentiles: clients.length === 1 ? m.percentiles : [],
          returns: {},
          clients: 0,
          weighted: 0,
          weight: 0,
        }
        measurements.set(m.name.name, s)
      }
      s.clients++
      s.operations += m.operations ?? 0
      if (m.averageUs !== undefined && m.operations !== undefined) {
        s.weighted += m.averageUs * m.operations
        s.weight += m.operations
      }
      if (m.minUs !== undefined) s.minUs = Math.min(s.minUs ?? Number.POSITIVE_INFINITY, m.minUs)
      if (m.maxUs !== undefined) s.maxUs = Math.max(s.maxUs ?? 0, m.maxUs)
      for (const [status, n] of Object.entries(m.returns)) s.returns[status] = (s.returns[status] ?? 0) + n
    }
  }
  return {
    kind: 'summary-run',
    origin: 'reported',
    clients: [...clients],
    percentilesPerClient: clients.length > 1,
    runtimeMs,
    throughputOpsPerSec: throughput,
    operations,
    measurements: [...measurements.values()].map(({ weighted, weight, ...m }) => ({
      ...m,
      averageUs: weight > 0 ? weighted / weight : undefined,
    })),
  }
}
