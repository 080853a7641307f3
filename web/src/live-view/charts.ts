/**
 * The charts, drawn by uPlot: made for live time series (tens of thousands of
 * points redrawn in a few ms on a canvas, setData() for updates, time axes
 * built in). index.html loads its plain browser build (uPlot.iife.min.js,
 * served from node_modules/uplot) as a classic script ahead of the modules;
 * only its types are imported here.
 *
 * A chart is rebuilt when its series change, otherwise only its data is
 * swapped. The band right of the last point (from frontier.completeBeforeMs
 * to the newest window with data) is drawn shaded with a marker at its edge:
 * those windows are still filling and are not drawn. For tests each chart's
 * uPlot instance is on window.benchstreamLive.charts[key].u.
 */
import type uPlot from 'uplot'
import type { Alert } from '../../../schemas/alerts-api.v1.js'
import { alertTip, drawAlerts } from './alert-spans.js'
import type { Table } from './figures.js'
import type { Side } from './stream-state.js'

declare global {
  interface Window {
    /** uPlot's browser build (a classic script of index.html). */
    readonly uPlot: typeof uPlot
  }
}

/** Time axis steps in seconds. */
const TIME_INCRS = [1, 2, 5, 10, 15, 30, 60, 120, 300, 600, 900, 1800, 3600, 7200, 14400, 43200, 86400]

export interface SeriesSpec {
  label: string
  stroke: string
  width?: number
  dash?: number[]
}

/** One chart: its series and data, the y axis' label, unit and scale, and which alerts it shows. */
export interface ChartSpec {
  yLabel: string
  fmt: (v: number) => string
  height?: number
  log?: boolean
  range?: [number, number]
  series: SeriesSpec[]
  data: Table
  alerts?: () => Alert[]
  /** Said instead of a chart when there is nothing to draw. */
  empty?: string
}

export interface Chart {
  u: uPlot
  /** What the chart was built for: its series' labels, scale and axis; the chart is rebuilt when it changes. */
  sig: string
  el: HTMLElement
}

const chartWidth = (el: Element): number => Math.max(300, el.clientWidth)

/** The page's charts by key ('throughput', 'latency:READ', ...). */
export class Charts {
  /** A plain object, as the page's tests read it (window.benchstreamLive.charts). */
  readonly byKey: Record<string, Chart> = {}
  /** A chart follows its container's width whenever the layout changes (the window, the grid, a new figure). */
  private readonly sized = new ResizeObserver((entries) => {
    for (const e of entries) {
      const c = Object.values(this.byKey).find((x) => x.el === e.target)
      if (c && c.u.width !== chartWidth(e.target)) c.u.setSize({ width: chartWidth(e.target), height: c.u.height })
    }
  })

  /** `main` is the run shown: its frontier places the filling band and the x range's right end. */
  constructor(private readonly main: () => Side) {}

  /** Draws into el; rebuilds the chart when its series change, otherwise only swaps the data. */
  plot(key: string, el: HTMLElement, spec: ChartSpec): void {
    if (spec.series.length === 0 || spec.data[0].length === 0) {
      this.remove(key)
      el.innerHTML = '<div class="empty">' + (spec.empty || 'no complete window yet') + '</div>'
      return
    }
    const sig = JSON.stringify([spec.series.map((s) => s.label), spec.log, spec.yLabel])
    const c = this.byKey[key]
    if (c && c.sig === sig && c.el === el) {
      c.u.setData(spec.data)
      return
    }
    if (c) c.u.destroy()
    el.textContent = ''
    this.byKey[key] = { u: new window.uPlot(this.options(spec, chartWidth(el)), spec.data, el), sig, el }
    this.sized.observe(el)
  }

  /** Every chart goes (another run is shown). */
  clear(): void {
    for (const key of Object.keys(this.byKey)) this.remove(key)
  }

  private remove(key: string): void {
    const c = this.byKey[key]
    if (c === undefined) return
    this.sized.unobserve(c.el)
    c.u.destroy()
    delete this.byKey[key]
  }

  private options(spec: ChartSpec, width: number): uPlot.Options {
    const grid: uPlot.Axis.Grid = { stroke: '#eef0f3' }
    const y: uPlot.Axis = {
      label: spec.yLabel,
      labelSize: 18,
      size: 70,
      stroke: '#475467',
      grid,
      values: (_u, splits) => splits.map((v) => (v == null ? '' : spec.fmt(v))),
    }
    // On a log axis, labels, ticks and grid lines at powers of ten only.
    if (spec.log) {
      const decades: uPlot.Axis.Filter = (_u, splits) =>
        splits.map((v) => (Math.abs(Math.log10(v) - Math.round(Math.log10(v))) < 1e-9 ? v : null))
      y.filter = decades
      grid.filter = decades
      y.ticks = { filter: decades }
    }
    const range: uPlot.Range.Function = (_u, _min, max) => [0, max > 0 ? max * 1.08 : 1]
    const main = this.main
    return {
      width,
      height: spec.height || 220,
      cursor: { drag: { x: true, y: false } },
      legend: { live: true },
      scales: {
        x: { time: true, range: (_u, min, max) => xRange(main(), min, max) },
        y: spec.log ? { distr: 3, log: 10 } : spec.range ? { range: spec.range } : { range },
      },
      axes: [
        // Whole seconds at least: windows are a second or longer.
        { label: 'time (local)', labelSize: 18, stroke: '#475467', grid: { stroke: '#eef0f3' }, incrs: TIME_INCRS },
        y,
      ],
      series: [
        { label: 'time', value: (_u, v) => (v == null ? '' : new Date(v * 1000).toLocaleTimeString('en-GB')) },
        ...spec.series.map((s): uPlot.Series => ({
          label: s.label,
          stroke: s.stroke,
          width: s.width || 1.5,
          ...(s.dash === undefined ? {} : { dash: s.dash }),
          spanGaps: true,
          points: { show: false },
          value: (_u, v) => (v == null ? '–' : spec.fmt(v)),
        })),
      ],
      hooks: spec.alerts
        ? {
            draw: [(u) => drawOpenEdge(u, main()), (u) => drawAlerts(u, spec.alerts!(), main())],
            setCursor: [alertTip],
          }
        : { draw: [(u) => drawOpenEdge(u, main())] },
    }
  }
}

/** The x range: the data, plus the still-filling band so its edge is visible. */
function xRange(m: Side, min: number | null, max: number | null): uPlot.Range.MinMax {
  const w = (m.windowMs || 1000) / 1000
  if (min == null || max == null) return [Date.now() / 1000 - 60, Date.now() / 1000]
  let hi = max + w
  const f = m.frontier
  if (f && !f.final && f.newestWindowMs != null) hi = Math.max(hi, (f.newestWindowMs + (m.windowMs || 0)) / 1000)
  return [min, hi]
}

/** The shaded band where windows are still filling, and a thin marker at its edge. */
function drawOpenEdge(u: uPlot, m: Side): void {
  const f = m.frontier
  if (!f || f.final || f.completeBeforeMs == null || m.windowMs == null) return
  const dpr = window.devicePixelRatio || 1
  const x0 = u.valToPos(f.completeBeforeMs / 1000, 'x', true)
  const x1 = u.valToPos(Math.max(f.completeBeforeMs, (f.newestWindowMs ?? 0) + m.windowMs) / 1000, 'x', true)
  const { top, height } = u.bbox
  const ctx = u.ctx
  ctx.save()
  ctx.fillStyle = 'rgba(250, 204, 21, 0.15)'
  ctx.fillRect(x0, top, Math.max(0, x1 - x0), height)
  ctx.strokeStyle = '#ca8a04'
  ctx.lineWidth = dpr
  ctx.setLineDash([4 * dpr, 3 * dpr])
  ctx.beginPath()
  ctx.moveTo(x0, top)
  ctx.lineTo(x0, top + height)
  ctx.stroke()
  ctx.fillStyle = '#854d0e'
  ctx.font = 11 * dpr + 'px system-ui, sans-serif'
  ctx.fillText('filling', x0 + 4 * dpr, top + 12 * dpr)
  ctx.restore()
}
