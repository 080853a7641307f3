/**
 * One run's figures per operation, whatever the run is made of, for compare
 * and history:
 *
 * - a run with events: its figures from its merged histograms
 *   (run_op_figures, the same numbers as its report);
 * - a summary run: its clients' final YCSB reports as printed. Exact merges
 *   over clients (operations and throughput add up, averages weigh by
 *   operations, min of minimums, max of maximums, Return= counts add up);
 *   a percentile of several clients is the median of their printed ones,
 *   and says so (clients > 1): the p99 of all operations cannot be computed
 *   from the clients' p99s, and their maximum would be biased upwards.
 */
import type { ReportedRun } from '../../../schemas/run-reports-api.v1.js'
import type { OpFigures, RunFigures, WindowFigures } from '../../../schemas/runs-api.v1.js'
import { isOkReturn, isPrimaryMeasurement } from '../reports/reported-report.js'
import { median } from './sample-stats.js'
import type { Direction } from './types.js'

/** One figure of one run and operation. */
export interface FigureValue {
  value: number
  /** Smallest step of the figure as printed, µs: 1000 for YCSB's whole-ms percentiles (before 0.4.0), else 0. */
  resolutionUs: number
  /** How many clients' printed figures the value is the median of; 0 when it is the run's own figure. */
  clients: number
  /** Each client's printed figure when the value is their median. */
  perClient: Array<{ clientId: string; value: number }> | null
}

export interface RunValues {
  origin: 'events' | 'reported'
  /** Who printed a summary run's figures: YCSB (import-ycsb) or HBase's PerformanceEvaluation (format pe). */
  producer?: 'ycsb' | 'pe'
  /** Operation (or OVERALL) -> figure key -> value. */
  ops: Map<string, Map<string, FigureValue>>
}

export const OVERALL = 'OVERALL'

/** How a figure is named, ordered, judged and read from a window. */
export interface FigureSpec {
  key: string
  /** Shown after the operation: `p99 (µs)`. */
  label: string
  direction: Direction
  /** Changes by factors: tested on logarithms (verdict.ts). */
  logScale: boolean
  /** The figure of one window of a run with events; null when windows do not have it. */
  window: ((w: WindowFigures) => number | null) | null
  /** Position in a table. */
  rank: number
}

const PERCENTILE_KEY = /^p(\d+(?:\.\d+)?)$/

/** The spec of a figure key (FIGURE_KEYS or `p<percent>`); undefined for an unknown key. */
export function figureSpec(key: string): FigureSpec | undefined {
  const latency = (label: string, rank: number, window: FigureSpec['window']): FigureSpec => ({
    key,
    label: `${label} (µs)`,
    direction: 'lower-is-better',
    logScale: true,
    window,
    rank,
  })
  switch (key) {
    case 'throughput':
      return {
        key,
        label: 'throughput (ops/s)',
        direction: 'higher-is-better',
        logScale: true,
        window: (w) => w.opsPerSec,
        rank: 0,
      }
    case 'avg':
      return latency('avg', 1, (w) => w.avgUs)
    case 'min':
      return latency('min', 2, null)
    case 'max':
      return latency('max', 4, (w) => w.maxUs)
    case 'errors':
      return { key, label: 'errors', direction: 'lower-is-better', logScale: false, window: null, rank: 5 }
    case 'error_rate':
      return {
        key,
        label: 'error rate',
        direction: 'lower-is-better',
        logScale: false,
        window: (w) => w.errorRate,
        rank: 6,
      }
    case 'cache_hit_ratio':
      return {
        key,
        label: 'cache-hit ratio',
        direction: 'higher-is-better',
        logScale: false,
        window: (w) => w.cacheHitRatio,
        rank: 7,
      }
  }
  const p = PERCENTILE_KEY.exec(key)
  if (p === null) return undefined
  const q = Number(p[1])
  if (!(q > 0 && q <= 100)) return undefined
  const windows: Record<string, FigureSpec['window']> = {
    p50: (w) => w.p50Us,
    p95: (w) => w.p95Us,
    p99: (w) => w.p99Us,
    'p99.9': (w) => w.p999Us,
  }
  // Between min and max, in percentile order.
  return latency(key, 3 + q / 1000, windows[key] ?? null)
}

/** The figures of a run with events that compare shows per operation, in order. */
export const EVENT_OP_FIGURES = [
  'throughput',
  'avg',
  'p50',
  'p95',
  'p99',
  'p99.9',
  'max',
  'error_rate',
  'cache_hit_ratio',
]
/** OVERALL of a run with events: what YCSB's [OVERALL] has, and the error rate; latencies are per operation. */
export const EVENT_OVERALL_FIGURES = ['throughput', 'error_rate']

/** The figures of a run with events (every figure of run_op_figures, OVERALL's latencies too: history reads them). */
export function eventRunValues(f: RunFigures): RunValues {
  const ops = new Map<string, Map<string, FigureValue>>()
  const read: Array<[string, (o: OpFigures) => number | null]> = [
    ['throughput', (o) => o.opsPerSec],
    ['avg', (o) => o.avgUs],
    ['p50', (o) => o.p50Us],
    ['p95', (o) => o.p95Us],
    ['p99', (o) => o.p99Us],
    ['p99.9', (o) => o.p999Us],
    ['max', (o) => o.maxUs],
    ['error_rate', (o) => o.errorRate],
    ['cache_hit_ratio', (o) => o.cacheHitRatio],
  ]
  for (const o of f.ops) {
    const m = new Map<string, FigureValue>()
    for (const [key, get] of read) {
      const v = get(o)
      if (v !== null && Number.isFinite(v)) m.set(key, own(v))
    }
    ops.set(o.op, m)
  }
  return { origin: 'events', ops }
}

function own(value: number, resolutionUs = 0): FigureValue {
  return { value, resolutionUs, clients: 0, perClient: null }
}

/**
 * The figures of a summary run, per operation: throughput (operations / RunTime of each client, added), avg
 * (weighted by operations), min, max, each printed percentile (`p95`, `p99`, ...; the median over clients when
 * several printed it), errors (the `Return=` counts that are not OK) and the error rate (errors / all Return=
 * counts); OVERALL: YCSB's Throughput(ops/sec) added over clients, errors and error rate over every operation.
 * Intended- sections (coordinated-omission corrected) and CLEANUP are not compared.
 */
export function reportedRunValues(r: ReportedRun): RunValues {
  const ops = new Map<string, Map<string, FigureValue>>()
  interface Acc {
    operations: number
    throughput: number | null
    weighted: number
    weight: number
    min: number | null
    max: number | null
    errors: number
    returns: number
    percentiles: Map<number, { unit: 'us' | 'ms'; values: Array<{ clientId: string; value: number }> }>
  }
  const accs = new Map<string, Acc>()
  const acc = (op: string): Acc => {
    let a = accs.get(op)
    if (a === undefined)
      accs.set(
        op,
        (a = {
          operations: 0,
          throughput: null,
          weighted: 0,
          weight: 0,
          min: null,
          max: null,
          errors: 0,
          returns: 0,
          percentiles: new Map(),
        }),
      )
    return a
  }
  let overallThroughput: number | null = null
  for (const c of r.clients) {
    if (c.throughputOpsPerSec !== null) overallThroughput = (overallThroughput ?? 0) + c.throughputOpsPerSec
    for (const m of c.measurements) {
      if (m.kind !== 'operation' || m.latency !== 'measured' || !isPrimaryMeasurement(m)) continue
      const a = acc(m.op)
      const all = acc(OVERALL)
      // Return= lines count every call of the operation, success or not, in its own section.
      for (const [status, n] of Object.entries(m.returns)) {
        a.returns += n
        all.returns += n
        if (!isOkReturn(status)) {
          a.errors += n
          all.errors += n
        }
      }
      // The operation's own section (READ, HdrREAD), not READ-FAILED: YCSB's latencies of successful calls.
      if (m.status !== 'OK') continue
      const n = m.operations ?? 0
      a.operations += n
      if (c.runtimeMs !== null && c.runtimeMs > 0) a.throughput = (a.throughput ?? 0) + (n * 1000) / c.runtimeMs
      if (m.averageUs !== null && n > 0) {
        a.weighted += m.averageUs * n
        a.weight += n
      }
      if (m.minUs !== null) a.min = Math.min(a.min ?? Number.POSITIVE_INFINITY, m.minUs)
      if (m.maxUs !== null) a.max = Math.max(a.max ?? 0, m.maxUs)
      for (const p of m.percentiles) {
        let e = a.percentiles.get(p.percentile)
        if (e === undefined) a.percentiles.set(p.percentile, (e = { unit: p.unit, values: [] }))
        if (p.unit === 'ms') e.unit = 'ms'
        e.values.push({ clientId: c.clientId, value: p.valueUs })
      }
    }
  }
  for (const [op, a] of accs) {
    const m = new Map<string, FigureValue>()
    const throughput = op === OVERALL ? overallThroughput : a.throughput
    if (throughput !== null) m.set('throughput', own(throughput))
    if (op !== OVERALL) {
      if (a.weight > 0) m.set('avg', own(a.weighted / a.weight))
      if (a.min !== null) m.set('min', own(a.min))
      for (const [q, e] of [...a.percentiles].sort(([x], [y]) => x - y)) {
        const values = e.values.map((v) => v.value)
        m.set(`p${q}`, {
          value: values.length === 1 ? values[0]! : median(values),
          resolutionUs: e.unit === 'ms' ? 1000 : 0,
          clients: values.length > 1 ? values.length : 0,
          perClient: values.length > 1 ? e.values : null,
        })
      }
      if (a.max !== null) m.set('max', own(a.max))
    }
    if (a.returns > 0) {
      m.set('errors', own(a.errors))
      m.set('error_rate', own(a.errors / a.returns))
    }
    ops.set(op, m)
  }
  const pe = r.clients.length > 0 && r.clients.every((c) => c.format === 'pe')
  return { origin: 'reported', producer: pe ? 'pe' : 'ycsb', ops }
}
