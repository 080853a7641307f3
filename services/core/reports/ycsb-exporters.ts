/**
 * YCSB's measurement exporters for a Benchstream report: the records
 * `[metric], measurement, value` that YCSB's exporters write, shaped by
 * YCSB's output properties, rendered as TextMeasurementsExporter (YCSB's
 * default), JSONMeasurementsExporter (one pretty-printed object after
 * another, `} {`, not one JSON document) or JSONArrayMeasurementsExporter
 * (`[ {...}, {...} ]`), byte for byte the layout of Jackson's default
 * pretty printer that YCSB 0.17.0 uses (test/fixtures/ycsb-0.17.0).
 */
import type { Measurement, Report } from '../../../schemas/run-reports-api.v1.js'

/** YCSB's exporter classes (0.17.0 `site.ycsb`, and `com.yahoo.ycsb` before 0.14). */
export const YCSB_EXPORTERS = {
  'site.ycsb.measurements.exporter.TextMeasurementsExporter': 'text',
  'site.ycsb.measurements.exporter.JSONMeasurementsExporter': 'json-objects',
  'site.ycsb.measurements.exporter.JSONArrayMeasurementsExporter': 'json-array',
  'com.yahoo.ycsb.measurements.exporter.TextMeasurementsExporter': 'text',
  'com.yahoo.ycsb.measurements.exporter.JSONMeasurementsExporter': 'json-objects',
  'com.yahoo.ycsb.measurements.exporter.JSONArrayMeasurementsExporter': 'json-array',
} as const
export type YcsbExporter = (typeof YCSB_EXPORTERS)[keyof typeof YCSB_EXPORTERS]

/** The percentiles a report holds, so the ones `hdrhistogram.percentiles` may list. */
export const REPORT_PERCENTILES = [50, 90, 95, 99, 99.9, 99.99] as const

/** YCSB's measurement.interval: which latency sections a report has. */
export type MeasurementInterval = 'op' | 'intended' | 'both'

export interface YcsbRecord {
  metric: string
  measurement: string
  /** A figure; text for Benchstream's own [BENCHSTREAM] records (RunId, ClientId). */
  value: number | string
  /** Written as a Java double (`336.0`): YCSB's averages and throughput; counts and percentiles are longs. */
  double: boolean
}

export interface YcsbOutputShape {
  /** hdrhistogram.percentiles; undefined: all of REPORT_PERCENTILES. */
  percentiles?: readonly number[]
  /**
   * undefined: as the report is (Intended- sections when the run had a target).
   * `op`: measured sections only. `intended`: Intended- sections, the
   * measured ones keep only their Return= lines. `both`: both; without a
   * target the intended latency is the measured one, and printed as such.
   */
  measurementInterval?: MeasurementInterval
}

/** YCSB's ordinal naming of a percentile: 95 -> 95th, 1 -> 1st, 99.9 -> 99.9 (OneMeasurementHdrHistogram.ordinal). */
export function percentileLabel(p: number): string {
  if (!Number.isInteger(p)) return `${p}PercentileLatency(us)`
  const suffix =
    p % 100 >= 11 && p % 100 <= 13
      ? 'th'
      : (['th', 'st', 'nd', 'rd', 'th', 'th', 'th', 'th', 'th', 'th'][p % 10] ?? 'th')
  return `${p}${suffix}PercentileLatency(us)`
}

const PERCENTILE_FIELD: Record<(typeof REPORT_PERCENTILES)[number], keyof Measurement> = {
  50: 'p50LatencyUs',
  90: 'p90LatencyUs',
  95: 'p95LatencyUs',
  99: 'p99LatencyUs',
  99.9: 'p999LatencyUs',
  99.99: 'p9999LatencyUs',
}

/** The report's records in YCSB's order, shaped by the output properties. */
export function ycsbRecords(report: Report, shape: YcsbOutputShape = {}): YcsbRecord[] {
  const out: YcsbRecord[] = [
    { metric: 'OVERALL', measurement: 'RunTime(ms)', value: Math.round(report.runtimeMs), double: false },
    { metric: 'OVERALL', measurement: 'Throughput(ops/sec)', value: report.throughputOpsPerSec, double: true },
  ]
  const percentiles = shape.percentiles ?? REPORT_PERCENTILES
  const intended = (m: Measurement): boolean => m.name.startsWith('Intended-')
  let measurements = report.measurements
  if (shape.measurementInterval === 'op') measurements = measurements.filter((m) => !intended(m))
  if (shape.measurementInterval === 'both' && !measurements.some(intended)) {
    // Unthrottled: the intended start is the actual one, so YCSB prints the same figures twice.
    measurements = [...measurements, ...measurements.map((m) => ({ ...m, name: `Intended-${m.name}`, returns: {} }))]
  }
  for (const m of measurements) {
    const returnsOnly = shape.measurementInterval === 'intended' && !intended(m)
    const n = m.name
    if (!returnsOnly) {
      out.push({ metric: n, measurement: 'Operations', value: m.operations, double: false })
      if (m.operations > 0) {
        out.push(
          { metric: n, measurement: 'AverageLatency(us)', value: m.averageLatencyUs, double: true },
          { metric: n, measurement: 'MinLatency(us)', value: m.minLatencyUs, double: false },
          { metric: n, measurement: 'MaxLatency(us)', value: m.maxLatencyUs, double: false },
        )
        for (const p of percentiles) {
          const field = PERCENTILE_FIELD[p as keyof typeof PERCENTILE_FIELD]
          if (field !== undefined)
            out.push({ metric: n, measurement: percentileLabel(p), value: m[field] as number, double: false })
        }
      }
    }
    for (const [status, c] of Object.entries(m.returns).sort(([a], [b]) => a.localeCompare(b)))
      out.push({ metric: n, measurement: `Return=${status}`, value: c, double: false })
  }
  return out
}

/** Records as one of YCSB's exporters writes them. */
export function renderRecords(records: readonly YcsbRecord[], exporter: YcsbExporter): string {
  if (exporter === 'text') return records.map((r) => `[${r.metric}], ${r.measurement}, ${r.value}`).join('\n') + '\n'
  const objects = records.map(
    (r) =>
      `{\n  "metric" : ${JSON.stringify(r.metric)},\n  "measurement" : ${JSON.stringify(r.measurement)},\n ` +
      ` "value" : ${javaNumber(r.value, r.double)}\n}`,
  )
  return exporter === 'json-array' ? `[ ${objects.join(', ')} ]` : objects.join(' ')
}

/** A number as Jackson writes a Java long or double (`336.0`, `NaN`); text as a JSON string. */
function javaNumber(v: number | string, double: boolean): string {
  if (typeof v === 'string') return JSON.stringify(v)
  if (!Number.isFinite(v)) return Number.isNaN(v) ? '"NaN"' : v > 0 ? '"Infinity"' : '"-Infinity"'
  if (!double) return String(Math.round(v))
  return Number.isInteger(v) ? `${v}.0` : String(v)
}
