/**
 * Benchstream live view (GET /): one run as it goes, read from its event stream and drawn with uPlot. Loaded by
 * index.html as an ES module, after uPlot's own script.
 *
 *   stream.ts        the event stream: snapshot, update, alerts, runs, problem; refusals explained and retried
 *   stream-state.ts  what the page knows of the run shown and of a baseline run
 *   figures.ts       figures derived from the windows (pure)
 *   render.ts        header, meta line, tiles, per-operation table; alert-list.ts the alerts above the charts
 *   chart-series.ts  what each chart draws; charts.ts draws it (uPlot), alert-spans.ts the alerts on the charts
 *
 * ?run=ID picks a run (without it the page follows the newest); &baseline=ID overlays another run's throughput and
 * p99. For tests the state and the uPlot instances are on window.benchstreamLive, and the figures on the page carry
 * data-value attributes.
 */
import { byId } from '../common/dom.js'
import { renderAlerts } from './alert-list.js'
import { renderCharts } from './chart-series.js'
import { type Chart, Charts } from './charts.js'
import { renderHeader, renderMeta, renderTable, renderTiles } from './render.js'
import { onPick } from './run-picker.js'
import { LiveStream } from './stream.js'
import { initialState, type LiveState } from './stream-state.js'

declare global {
  interface Window {
    benchstreamLive: { live: LiveState; charts: Record<string, Chart> }
  }
}

const params = new URLSearchParams(location.search)
const pinnedRun = params.get('run') || ''
const baselineId = params.get('baseline') || ''

const live = initialState()
const charts = new Charts(() => live.main)
window.benchstreamLive = { live, charts: charts.byKey }

/** Draws the page once per frame however many events came in it. */
let pending = false
function changed(): void {
  if (pending) return
  pending = true
  requestAnimationFrame(() => {
    pending = false
    renderHeader(live)
    renderMeta(live, baselineId)
    renderTiles(live)
    renderTable(live)
    renderAlerts(live)
    renderCharts(live, charts, baselineId)
  })
}

const stream = new LiveStream(live, {
  pinnedRun,
  baselineId,
  reset: () => {
    charts.clear()
    byId('latency-charts').replaceChildren()
  },
  changed,
})
onPick(baselineId)
stream.connect(pinnedRun)
