/**
 * k6-style pass/fail criteria on a run's report:
 * `<measurement>.<metric><operator><value>[unit]`, e.g. `READ.p99<2ms`.
 * Latencies need a unit: a bare "2" is 2 ms to a k6 user and 2 µs to a YCSB
 * user. The grammar: docs/reference/cli.md#thresholds.
 */
import { OPERATIONS } from '../../../schemas/events.v1.js'
import type { Report } from '../../../schemas/run-reports-api.v1.js'
import { BenchstreamError } from '../errors.js'
import { closest } from '../suggest.js'

const LATENCY = {
  avg: 'averageLatencyUs',
  min: 'minLatencyUs',
  max: 'maxLatencyUs',
  p50: 'p50LatencyUs',
  p90: 'p90LatencyUs',
  p95: 'p95LatencyUs',
  p99: 'p99LatencyUs',
  'p99.9': 'p999LatencyUs',
  'p99.99': 'p9999LatencyUs',
} as const
type LatencyMetric = keyof typeof LATENCY
const COUNTS = ['throughput', 'operations', 'errors', 'error_rate'] as const
type CountMetric = (typeof COUNTS)[number]
export type ThresholdMetric = LatencyMetric | CountMetric
const METRICS: readonly string[] = [...Object.keys(LATENCY), ...COUNTS]

const OPERATORS = ['<=', '>=', '==', '!=', '<', '>'] as const
type Operator = (typeof OPERATORS)[number]

const UNIT_US: Record<string, number> = { us: 1, µs: 1, ms: 1000, s: 1_000_000 }

export interface Threshold {
  /** As the user wrote it, for the verdict line. */
  source: string
  measurement: string
  metric: ThresholdMetric
  operator: Operator
  /** In the metric's base unit: µs for latency, ops/s, a count, or a fraction for error_rate. */
  value: number
}

export interface ThresholdResult {
  threshold: Threshold
  /** The report's figure in the base unit; null when the report has no such measurement. */
  actual: number | null
  passed: boolean
  /** The figure as a person reads it ("1.84 ms", "9,512 ops/s", "no READ operations in the run"). */
  shown: string
}

const RULE =
  'expected <measurement>.<metric><operator><value>[unit], e.g. READ.p99<2ms, OVERALL.throughput>9000, ' +
  'UPDATE.error_rate<1%'

/** Known measurement names: OVERALL, the operations, their -FAILED and Intended- forms. */
export function thresholdMeasurements(): string[] {
  return ['OVERALL', ...OPERATIONS.flatMap((o) => [o, `${o}-FAILED`, `Intended-${o}`, `Intended-${o}-FAILED`])]
}

/** <measurement>.<metric> <operator> <value><unit>, each part a group. */
const THRESHOLD_SYNTAX = new RegExp(
  [
    /^([A-Za-z][A-Za-z-]*)/, // measurement: READ, Intended-READ, READ-FAILED
    /\.([A-Za-z_]+[0-9.]*|p\([0-9.]+\))/, // metric: p99.9, error_rate, k6's p(99)
    /\s*(<=|>=|==|!=|<|>)\s*/, // operator
    /([0-9]*\.?[0-9]+(?:e[+-]?[0-9]+)?)/, // value: 2, .5, 1e3
    /\s*([A-Za-zµ%/]*)$/, // unit
  ]
    .map((part) => part.source)
    .join(''),
)

export function parseThreshold(text: string): Threshold {
  const bad = (why: string): BenchstreamError =>
    new BenchstreamError('BS_ERR_USAGE', `threshold ${JSON.stringify(text)}: ${why}`)
  const src = text.trim()
  const m = THRESHOLD_SYNTAX.exec(src)
  if (m === null) throw bad(RULE)
  const [, measurement, rawMetric, operator, rawValue, rawUnit] = m as unknown as [
    string,
    string,
    string,
    Operator,
    string,
    string,
  ]
  const known = thresholdMeasurements()
  if (!known.includes(measurement)) {
    const c = closest(measurement, known)
    throw bad(
      `unknown measurement ${measurement}${c === undefined ? '' : ` (did you mean ${c}?)`}; allowed: ` +
        `OVERALL, ${OPERATIONS.join(', ')}, with -FAILED or Intended- forms`,
    )
  }
  // k6 writes p(99); YCSB users write p99.
  const metric = rawMetric.replace(/^p\(([0-9.]+)\)$/, 'p$1')
  if (!METRICS.includes(metric)) {
    const c = closest(metric, METRICS)
    throw bad(
      `unknown metric ${rawMetric}${c === undefined ? '' : ` (did you mean ${c}?)`}; allowed: ${METRICS.join(', ')}`,
    )
  }
  const value = Number(rawValue)
  const unit = rawUnit.toLowerCase()
  if (metric in LATENCY) {
    if (measurement === 'OVERALL')
      throw bad(`OVERALL has no latency (YCSB reports latency per operation); name an operation, e.g. READ.${metric}`)
    const scale = UNIT_US[unit]
    if (scale === undefined)
      throw bad(`latency needs a unit: us, ms or s (got ${rawUnit === '' ? 'none' : JSON.stringify(rawUnit)})`)
    return { source: src, measurement, metric: metric as LatencyMetric, operator, value: value * scale }
  }
  if (metric === 'error_rate') {
    if (unit !== '' && unit !== '%')
      throw bad(`error_rate is a fraction (0.01) or a percentage (1%), not ${JSON.stringify(rawUnit)}`)
    return { source: src, measurement, metric, operator, value: unit === '%' ? value / 100 : value }
  }
  if (metric === 'throughput' && unit !== '' && unit !== 'ops/s')
    throw bad(`throughput is in ops/s, not ${JSON.stringify(rawUnit)}`)
  if ((metric === 'operations' || metric === 'errors') && unit !== '')
    throw bad(`${metric} is a count and takes no unit`)
  return { source: src, measurement, metric: metric as CountMetric, operator, value }
}

/** Each threshold against the report, with the figure it was compared with. */
export function evaluateThresholds(report: Report, thresholds: readonly Threshold[]): ThresholdResult[] {
  return thresholds.map((t) => {
    const actual = figure(report, t)
    if (actual === null)
      return { threshold: t, actual, passed: false, shown: `no ${t.measurement} operations in the run` }
    return { threshold: t, actual, passed: compare(actual, t.operator, t.value), shown: show(t.metric, actual) }
  })
}

/** k6's summary block: one ✓/✗ line per threshold. */
export function formatThresholdResults(results: readonly ThresholdResult[], scope: string): string {
  if (results.length === 0) return ''
  const width = Math.max(...results.map((r) => r.threshold.source.length))
  const failed = results.filter((r) => !r.passed).length
  const lines = results.map((r) => `  ${r.passed ? '✓' : '✗'} ${r.threshold.source.padEnd(width)}  ${r.shown}`)
  const verdict = failed === 0 ? 'all passed' : `${failed} of ${results.length} failed`
  return `thresholds (${scope}): ${verdict}\n${lines.join('\n')}\n`
}

function figure(report: Report, t: Threshold): number | null {
  const base = t.measurement.replace(/^Intended-/, '').replace(/-FAILED$/, '')
  if (t.measurement === 'OVERALL') {
    const failed = report.measurements
      .filter((m) => m.name.endsWith('-FAILED') && !m.name.startsWith('Intended-'))
      .reduce((a, m) => a + m.operations, 0)
    switch (t.metric) {
      case 'throughput':
        return report.throughputOpsPerSec
      case 'operations':
        return report.operations
      case 'errors':
        return failed
      case 'error_rate':
        return report.operations === 0 ? null : failed / report.operations
      default:
        return null
    }
  }
  const m = report.measurements.find((x) => x.name === t.measurement)
  if (t.metric === 'errors' || t.metric === 'error_rate') {
    const ok = report.measurements.find((x) => x.name === base)?.operations ?? 0
    const failed = report.measurements.find((x) => x.name === `${base}-FAILED`)?.operations ?? 0
    if (ok + failed === 0) return null
    return t.metric === 'errors' ? failed : failed / (ok + failed)
  }
  if (m === undefined || m.operations === 0) return null
  if (t.metric === 'operations') return m.operations
  if (t.metric === 'throughput') return report.runtimeMs > 0 ? (m.operations * 1000) / report.runtimeMs : null
  return m[LATENCY[t.metric]]
}

function compare(a: number, op: Operator, b: number): boolean {
  switch (op) {
    case '<':
      return a < b
    case '<=':
      return a <= b
    case '>':
      return a > b
    case '>=':
      return a >= b
    case '==':
      return a === b
    case '!=':
      return a !== b
  }
}

function show(metric: ThresholdMetric, v: number): string {
  if (metric in LATENCY)
    return v >= 1_000_000 ? `${round(v / 1_000_000)} s` : v >= 1000 ? `${round(v / 1000)} ms` : `${round(v)} µs`
  if (metric === 'throughput') return `${round(v)} ops/s`
  if (metric === 'error_rate') return `${round(v * 100)}%`
  return String(v)
}

function round(x: number): string {
  return String(Math.round(x * 100) / 100)
}
