/**
 * What each chart draws, from the run's windows: throughput per operation and in total against the target,
 * latency percentiles per operation, errors per status, client- and server-side cache-hit ratios, throughput per
 * client; a baseline run's total and p99 overlaid, aligned on seconds since each run's start.
 */
import type { LiveOpWindow, LiveWindow } from '../../../schemas/live-api.v1.js'
import { byId } from '../common/dom.js'
import { fmtRate, fmtUs } from '../common/format.js'
import type { Charts, SeriesSpec } from './charts.js'
import { baselineShift, join, keysOf, opsOf, type Table, windowTotal, xOf } from './figures.js'
import type { LiveState, Side } from './stream-state.js'

const COLORS = ['#2563eb', '#dc2626', '#16a34a', '#9333ea', '#ea580c', '#0891b2', '#ca8a04', '#db2777']
const PERCENTILES = [
  { key: 'p50', label: 'p50', stroke: '#16a34a' },
  { key: 'p95', label: 'p95', stroke: '#2563eb' },
  { key: 'p99', label: 'p99', stroke: '#ea580c' },
  { key: 'p999', label: 'p99.9', stroke: '#dc2626' },
] as const
const BASELINE = '#98a2b3'

type Series = SeriesSpec & { data: Array<number | null> }
const color = (i: number): string => COLORS[i % COLORS.length]!

/** What every chart of a render draws from: the run shown, its x values and operations, a baseline's shift. */
interface Context {
  live: LiveState
  charts: Charts
  baselineId: string
  m: Side
  b: Side
  /** Windows per second: a window's count times this is a rate. */
  perS: number
  xs: number[]
  ops: string[]
  /** ms a baseline's windows move to start with the run shown; null without a baseline. */
  shift: number | null
}

const opOf = (w: LiveWindow, op: string): LiveOpWindow | undefined => w.ops[op]

export function renderCharts(live: LiveState, charts: Charts, baselineId: string): void {
  const m = live.main
  const f: Context = {
    live,
    charts,
    baselineId,
    m,
    b: live.base,
    perS: 1000 / (m.windowMs || 1000),
    xs: xOf(m, 0),
    ops: opsOf(m),
    shift: baselineShift(m, live.base, baselineId),
  }
  throughputChart(f)
  latencyCharts(f)
  errorsChart(f)
  cacheChart(f)
  clientsChart(f)
}

/** Throughput: total, per operation, the run's target, and a baseline's total. */
function throughputChart({ live, charts, baselineId, m, b, perS, xs, ops, shift }: Context): void {
  const target = m.run && m.run.target > 0 ? m.run.target : 0
  const thr: SeriesSpec[] = [
    { label: 'total', stroke: '#1d2430', width: 2.5 },
    ...ops.map((op, i) => ({ label: op, stroke: color(i) })),
  ]
  const thrY = [
    m.windows.map((w) => windowTotal(w) * perS),
    ...ops.map((op) => m.windows.map((w) => (opOf(w, op)?.operations ?? 0) * perS)),
  ]
  if (target > 0) {
    thr.push({ label: 'target', stroke: '#dc2626', width: 1, dash: [6, 4] })
    thrY.push(m.windows.map(() => target))
  }
  let thrData: Table = [xs, ...thrY]
  if (shift != null) {
    const bPerS = 1000 / (b.windowMs || m.windowMs || 1000)
    thr.push({ label: 'baseline total (' + baselineId + ')', stroke: BASELINE, width: 2, dash: [3, 3] })
    thrData = join(xs, thrY, xOf(b, shift), [b.windows.map((w) => windowTotal(w) * bPerS)])
  }
  charts.plot('throughput', byId('chart-throughput'), {
    yLabel: 'ops/s',
    fmt: fmtRate,
    height: 260,
    series: thr,
    data: thrData,
    alerts: () => live.main.alerts,
  })
}

/**
 * Latency per operation: percentiles of merged histograms, intended p99, a baseline's p99. Every operation's figure
 * is in the grid before any chart is sized: a chart made while its figure was alone would take the whole row and
 * then overflow onto the next one's (each chart also follows its own container's width: see Charts).
 */
function latencyCharts({ live, charts, m, b, xs, ops, shift }: Context): void {
  const box = byId('latency-charts')
  for (const op of ops) {
    if (document.getElementById('chart-latency-' + op)) continue
    const fig = document.createElement('figure')
    const caption = document.createElement('figcaption')
    caption.textContent = 'Latency of ' + op + ' (OK calls; log scale)'
    const chart = document.createElement('div')
    chart.className = 'chart'
    chart.id = 'chart-latency-' + op
    fig.append(caption, chart)
    box.appendChild(fig)
  }
  // A log axis has no 0: a sub-µs value is drawn at 1 µs (the table shows it as it is).
  const v = (x: number | null | undefined): number | null => (x == null ? null : Math.max(1, x))
  for (const op of ops) {
    const ser: Series[] = [
      ...PERCENTILES.map((p) => ({
        label: p.label,
        stroke: p.stroke,
        data: m.windows.map((w) => v(opOf(w, op)?.[p.key])),
      })),
      {
        label: 'intended p99',
        stroke: '#9333ea',
        dash: [5, 4],
        width: 1.5,
        data: m.windows.map((w) => v(opOf(w, op)?.intendedP99)),
      },
    ]
    const ys = ser.map((s) => s.data)
    let data: Table = [xs, ...ys]
    const specs: SeriesSpec[] = [...ser]
    if (shift != null) {
      specs.push({ label: 'baseline p99', stroke: BASELINE, width: 2, dash: [3, 3] })
      data = join(xs, ys, xOf(b, shift), [b.windows.map((w) => v(opOf(w, op)?.p99))])
    }
    charts.plot('latency:' + op, byId('chart-latency-' + op), {
      yLabel: 'latency (log)',
      fmt: fmtUs,
      log: true,
      series: specs,
      data,
      // This operation's alerts and those about the whole run.
      alerts: () => live.main.alerts.filter((a) => a.op === op || a.op === 'ALL'),
    })
  }
}

/** Errors per second by status (every status but OK). */
function errorsChart({ charts, m, perS, xs }: Context): void {
  const statuses = keysOf(m.windows, 'statuses', 'OK')
  const series: Series[] = statuses.length
    ? statuses.map((s, i) => ({
        label: s,
        stroke: color(i + 1),
        data: m.windows.map((w) => (w.statuses[s] || 0) * perS),
      }))
    : [{ label: 'errors (none so far)', stroke: '#16a34a', data: m.windows.map(() => 0) }]
  charts.plot('errors', byId('chart-errors'), {
    yLabel: 'errors/s',
    fmt: fmtRate,
    series,
    data: [xs, ...series.map((s) => s.data)],
  })
}

/** Cache-hit ratio: client side per operation, server side per source. */
function cacheChart({ charts, m, xs, ops }: Context): void {
  const cacheOps = ops.filter((op) =>
    m.windows.some((w) => {
      const o = opOf(w, op)
      return o !== undefined && o.cacheHits + o.cacheMisses > 0
    }),
  )
  const sources = keysOf(m.windows, 'serverCacheHit')
  const series: Series[] = [
    ...cacheOps.map((op) => ({
      label: op + ' (client)',
      stroke: color(ops.indexOf(op)),
      data: m.windows.map((w) => {
        const o = opOf(w, op)
        return o && o.cacheHits + o.cacheMisses > 0 ? (100 * o.cacheHits) / (o.cacheHits + o.cacheMisses) : null
      }),
    })),
    ...sources.map((s, i) => ({
      label: s + ' (server)',
      stroke: color(ops.length + i),
      dash: [6, 3],
      width: 2,
      data: m.windows.map((w) => {
        const r = w.serverCacheHit[s]
        return r == null ? null : 100 * r
      }),
    })),
  ]
  charts.plot('cache', byId('chart-cache'), {
    yLabel: 'hit ratio',
    fmt: (v) => v.toFixed(0) + '%',
    range: [0, 100],
    series,
    data: [xs, ...series.map((s) => s.data)],
    empty: 'no cache outcome reported by this binding',
  })
}

/** Throughput per driver client. */
function clientsChart({ charts, m, perS, xs }: Context): void {
  const clients = keysOf(m.windows, 'clients')
  const series: Series[] = clients.map((c, i) => ({
    label: c,
    stroke: color(i),
    data: m.windows.map((w) => (w.clients[c] || 0) * perS),
  }))
  charts.plot('clients', byId('chart-clients'), {
    yLabel: 'ops/s',
    fmt: fmtRate,
    series,
    data: [xs, ...series.map((s) => s.data)],
  })
}
