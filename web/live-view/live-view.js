/*
 * Benchstream live view: a plain browser script (no framework, no bundler),
 * served by the API next to uPlot's own files.
 *
 * It reads one run from GET /api/v1/runs/:id/live (Server-Sent Events): a
 * `snapshot` with every complete window so far, then an `update` whenever
 * more windows become complete. The server sends complete windows only, so
 * nothing here has to guess which window is still filling; the band right of
 * the last point (from frontier.completeBeforeMs to the newest window with
 * data) is drawn shaded with a marker at its edge. Totals and percentiles in
 * the table come from the server's merged histograms, the same rule as the
 * run's report; this script never averages percentiles.
 *
 * The run's alerts come in the snapshot and as an `alerts` event whenever
 * they change: a list above the charts, and on the throughput and latency
 * charts a shaded span from each incident's start to its end (to the newest
 * data while it fires), drawn in a uPlot draw hook like the filling band;
 * hovering a span shows its rule and summary.
 *
 * Shapes: schemas/api.v1.ts (LiveSnapshot, LiveUpdate, LiveWindow, LiveSummary, LiveAlerts, Alert).
 * For tests the state and the uPlot instances are on window.benchstreamLive
 * (each drawn alert span on its chart's u.alertMarks), and the figures on
 * the page carry data-value attributes.
 */
'use strict'
;(function () {
  const OP_ORDER = ['READ', 'UPDATE', 'INSERT', 'SCAN', 'READ-MODIFY-WRITE', 'DELETE']
  const COLORS = ['#2563eb', '#dc2626', '#16a34a', '#9333ea', '#ea580c', '#0891b2', '#ca8a04', '#db2777']
  const PERCENTILES = [
    { key: 'p50', label: 'p50', stroke: '#16a34a' },
    { key: 'p95', label: 'p95', stroke: '#2563eb' },
    { key: 'p99', label: 'p99', stroke: '#ea580c' },
    { key: 'p999', label: 'p99.9', stroke: '#dc2626' },
  ]
  const BASELINE = '#98a2b3'
  /** Time axis steps in seconds. */
  const TIME_INCRS = [1, 2, 5, 10, 15, 30, 60, 120, 300, 600, 900, 1800, 3600, 7200, 14400, 43200, 86400]
  /** The page keeps at most this many windows per run, as the server does (MAX_LIVE_WINDOWS). */
  const MAX_WINDOWS = 3600

  const params = new URLSearchParams(location.search)
  /** A run named in the address stays; without one the page follows the newest run. */
  const pinnedRun = params.get('run') || ''
  const baselineId = params.get('baseline') || ''

  const $ = (id) => document.getElementById(id)
  const emptySide = () => ({
    run: null,
    windowMs: null,
    startMs: null,
    windows: [],
    dropped: 0,
    frontier: null,
    summary: null,
    alerts: [],
  })
  const live = {
    runId: '',
    es: null,
    main: emptySide(),
    base: emptySide(),
    runs: [],
    updates: 0,
    alertEvents: 0,
    snapshots: 0,
    state: 'connecting',
  }
  const charts = {}
  window.benchstreamLive = { live, charts }

  // ------------------------------------------------------------ formatting

  const fmtInt = (n) => (n == null ? '–' : Math.round(n).toLocaleString('en-US'))
  const fmtRate = (n) => {
    if (n == null) return '–'
    const a = Math.abs(n)
    if (a >= 1e6) return (n / 1e6).toFixed(a >= 1e7 ? 1 : 2) + 'M'
    if (a >= 1e4) return (n / 1e3).toFixed(a >= 1e5 ? 0 : 1) + 'k'
    if (a >= 100 || Number.isInteger(n)) return fmtInt(n)
    return String(Math.round(n * (a >= 10 ? 10 : 100)) / (a >= 10 ? 10 : 100))
  }
  /** Latencies are µs everywhere in Benchstream; axes switch to ms and s where that reads better. */
  const fmtUs = (v) => {
    if (v == null) return '–'
    if (v < 1000) return Math.round(v) + ' µs'
    if (v < 1e6) return (v / 1000).toFixed(v < 1e4 ? 2 : 1) + ' ms'
    return (v / 1e6).toFixed(2) + ' s'
  }
  const fmtMs = (ms) => (ms == null ? '–' : (Math.abs(ms) >= 100 ? Math.round(ms) : Math.round(ms * 10) / 10) + ' ms')
  const fmtPct = (r) => (r == null ? '–' : (100 * r).toFixed(1) + '%')
  const fmtTime = (ms) => (ms == null ? '–' : new Date(ms).toLocaleTimeString('en-GB'))
  const fmtDate = (text) => {
    if (!text) return '–'
    const d = new Date(text.replace(' ', 'T') + 'Z')
    return isNaN(d) ? text : d.toLocaleString('en-GB')
  }

  // ------------------------------------------------------------ state from the stream

  function applySnapshot(side, d) {
    side.run = d.run
    side.windowMs = d.windowMs
    side.startMs = d.startMs
    side.windows = d.windows.slice()
    side.dropped = d.droppedWindows
    side.frontier = d.frontier
    side.summary = d.summary
    side.alerts = d.alerts || []
  }

  function applyUpdate(side, d) {
    side.run = d.run
    side.windowMs = d.windowMs
    side.startMs = d.startMs
    side.frontier = d.frontier
    side.summary = d.summary
    for (const w of d.windows) side.windows.push(w)
    if (side.windows.length > MAX_WINDOWS) {
      const cut = side.windows.length - MAX_WINDOWS
      side.windows.splice(0, cut)
      side.dropped += cut
    }
  }

  function streamUrl(runId) {
    if (!runId) return '/api/v1/live'
    return (
      '/api/v1/runs/' +
      encodeURIComponent(runId) +
      '/live' +
      (baselineId ? '?baseline=' + encodeURIComponent(baselineId) : '')
    )
  }

  function connect(runId) {
    if (live.es) live.es.close()
    live.runId = runId
    live.main = emptySide()
    live.base = emptySide()
    live.updates = 0
    for (const k of Object.keys(charts)) {
      sized.unobserve(charts[k].el)
      charts[k].u.destroy()
      delete charts[k]
    }
    $('latency-charts').replaceChildren()
    setState(runId ? 'connecting' : 'waiting')
    const url = streamUrl(runId)
    const es = new EventSource(url)
    live.es = es
    const on = (name, fn) =>
      es.addEventListener(name, (e) => {
        if (live.es !== es) return
        fn(JSON.parse(e.data))
        changed()
      })
    on('runs', (d) => onRuns(d.runs))
    on('snapshot', (d) => {
      applySnapshot(live.main, d)
      live.snapshots++
      showProblem(reportedNote())
    })
    on('update', (d) => {
      applyUpdate(live.main, d)
      live.updates++
    })
    on('alerts', (d) => {
      live.main.alerts = d.alerts
      live.alertEvents++
    })
    on('baseline-snapshot', (d) => applySnapshot(live.base, d))
    on('baseline-update', (d) => applyUpdate(live.base, d))
    on('problem', (d) => showProblem(d.message))
    es.addEventListener('error', () => {
      if (live.es !== es) return
      // EventSource retries by itself after a dropped connection; an answer
      // other than a stream (503 when too many views are open, 404) closes it.
      if (es.readyState === EventSource.CLOSED) void explainRefusal(url, runId)
      else setState('connecting')
    })
  }

  /** Asks the same address again to read the error's JSON, shows it, and tries again later. */
  async function explainRefusal(url, runId) {
    const abort = new AbortController()
    let retryS = 5
    try {
      const res = await fetch(url, { signal: abort.signal, headers: { accept: 'application/json' } })
      if (res.ok) {
        abort.abort()
        retryS = 1
      } else {
        const body = await res.json().catch(() => ({}))
        retryS = Number(res.headers.get('retry-after')) || (res.status === 404 ? 5 : 10)
        setState('refused')
        showProblem(
          (body.code || 'HTTP ' + res.status) +
            ': ' +
            (body.message || res.statusText) +
            ' (trying again in ' +
            retryS +
            ' s)',
        )
      }
    } catch (err) {
      if (!abort.signal.aborted) showProblem('the server cannot be reached: ' + err.message)
    }
    setTimeout(() => {
      if (live.runId === runId) connect(runId)
    }, retryS * 1000)
  }

  function onRuns(runs) {
    live.runs = runs
    const picker = $('run-picker')
    const options = runs.map((r) => {
      const o = document.createElement('option')
      o.value = r.run_id
      o.textContent = r.run_id + (r.origin === 'reported' ? '  (reported)' : r.ended_at ? '' : '  (running)')
      return o
    })
    if (options.length === 0) {
      const o = document.createElement('option')
      o.value = ''
      o.textContent = 'waiting for runs…'
      options.push(o)
    }
    picker.replaceChildren(...options)
    if (live.runId && !runs.some((r) => r.run_id === live.runId)) {
      const o = document.createElement('option')
      o.value = live.runId
      o.textContent = live.runId
      picker.prepend(o)
    }
    picker.value = live.runId
    // Follow the newest run that has windows to draw; a summary run (imported YCSB reports) has none.
    const newest = runs.find((r) => r.origin !== 'reported')
    if (!pinnedRun && newest && newest.run_id !== live.runId) connect(newest.run_id)
    if (reportedNote()) showProblem(reportedNote())
  }

  /** What the page says about a summary run, which has figures but no time series. */
  function reportedNote() {
    const r = live.runs.find((x) => x.run_id === live.runId)
    if (!r || r.origin !== 'reported') return ''
    return (
      r.run_id +
      " is a summary run (YCSB's final reports as printed): no time series to draw. Its report: " +
      '/api/v1/runs/' +
      encodeURIComponent(r.run_id) +
      '/report?format=text'
    )
  }

  $('run-picker').addEventListener('change', (e) => {
    const next = new URLSearchParams()
    if (e.target.value) next.set('run', e.target.value)
    if (baselineId) next.set('baseline', baselineId)
    location.search = next.toString()
  })

  function setState(s) {
    live.state = s
    const el = $('state')
    el.dataset.state = s
    el.textContent =
      s === 'live'
        ? 'live'
        : s === 'final'
          ? 'final'
          : s === 'refused'
            ? 'refused'
            : s === 'waiting'
              ? live.runId
                ? 'waiting for data'
                : 'waiting for a run'
              : 'connecting'
  }

  function showProblem(message) {
    const el = $('problem')
    el.hidden = !message
    el.textContent = message
  }

  // ------------------------------------------------------------ derived figures

  function opsOf(side) {
    const seen = new Set(Object.keys((side.summary && side.summary.byOp) || {}))
    for (const w of side.windows) for (const op of Object.keys(w.ops)) seen.add(op)
    const rank = (op) => (OP_ORDER.indexOf(op) === -1 ? OP_ORDER.length : OP_ORDER.indexOf(op))
    return [...seen].sort((a, b) => rank(a) - rank(b) || a.localeCompare(b))
  }

  function keysOf(windows, field, skip) {
    const seen = new Set()
    for (const w of windows)
      for (const [k, v] of Object.entries(w[field])) if (k !== skip && v != null && v !== 0) seen.add(k)
    return [...seen].sort((a, b) => a.localeCompare(b))
  }

  const windowTotal = (w) => Object.values(w.ops).reduce((a, o) => a + o.operations, 0)

  /**
   * The newest complete window that covers a whole window length: the first
   * window of a run starts before the run does, and the last one of an ended
   * run is cut short by the end, so neither says what the run sustained.
   */
  function lastFullWindow(side) {
    const ws = side.windows
    const first = side.dropped === 0 && ws.length > 0 ? ws[0].t : -Infinity
    const final = side.frontier && side.frontier.final
    for (let i = ws.length - 1; i >= 0; i--) {
      if (ws[i].t === first) break
      if (final && i === ws.length - 1) continue
      return ws[i]
    }
    return null
  }

  /** x values in seconds (uPlot's unit for time scales); a baseline is shifted onto this run's start. */
  const xOf = (side, shiftMs) => side.windows.map((w) => (w.t + shiftMs) / 1000)

  /** Merges two series tables on their x values; a missing point is null (drawn across with spanGaps). */
  function join(xa, ya, xb, yb) {
    const xs = [...new Set([...xa, ...xb])].sort((a, b) => a - b)
    const ia = new Map(xa.map((x, i) => [x, i]))
    const ib = new Map(xb.map((x, i) => [x, i]))
    const pick = (idx, s) => xs.map((x) => (idx.has(x) ? s[idx.get(x)] : null))
    return [xs, ...ya.map((s) => pick(ia, s)), ...yb.map((s) => pick(ib, s))]
  }

  function baselineShift() {
    const m = live.main
    const b = live.base
    if (!baselineId || !b.windows.length || m.startMs == null || b.startMs == null) return null
    return m.startMs - b.startMs
  }

  // ------------------------------------------------------------ charts (uPlot)

  /** The shaded band where windows are still filling, and a thin marker at its edge. */
  function drawOpenEdge(u) {
    const m = live.main
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

  const ALERT_FILL = {
    firing: 'rgba(220, 38, 38, 0.16)',
    resolved: 'rgba(220, 38, 38, 0.09)',
    silenced: 'rgba(147, 51, 234, 0.12)',
  }
  const ALERT_EDGE = { firing: '#dc2626', resolved: '#f87171', silenced: '#9333ea' }
  const alertKind = (a) => (a.silencedBy ? 'silenced' : a.state)

  /** Where a firing alert's span ends: the newest data, as far as the page knows it. */
  function openAlertEnd(u) {
    const m = live.main
    const f = m.frontier
    if (f && f.newestWindowMs != null && m.windowMs != null) return (f.newestWindowMs + m.windowMs) / 1000
    return u.scales.x.max
  }

  /**
   * The alerts `pick` returns, as shaded spans from start to end (x is a window's start, so the span covers the
   * breaching windows' points), the rule at the top; each drawn span is kept on u.alertMarks in CSS pixels of the
   * plotting area, for the hover and for tests.
   */
  function drawAlerts(u, pick) {
    const marks = []
    const list = pick()
    const xmin = u.scales.x.min
    const xmax = u.scales.x.max
    if (list.length > 0 && xmin != null && xmax != null) {
      const dpr = window.devicePixelRatio || 1
      const { left, top, width, height } = u.bbox
      const ctx = u.ctx
      ctx.save()
      ctx.beginPath()
      ctx.rect(left, top, width, height)
      ctx.clip()
      ctx.font = 11 * dpr + 'px system-ui, sans-serif'
      // uPlot leaves the alignment of its last axis label on the context.
      ctx.textAlign = 'left'
      ctx.textBaseline = 'alphabetic'
      // Labels go in rows from the top; a label takes the first row where it overlaps none (right ends per row).
      const rows = []
      // Oldest first, so a newer span is drawn over an older one.
      for (const a of [...list].sort((p, q) => p.startsAt.localeCompare(q.startsAt) || p.rule.localeCompare(q.rule))) {
        const s = Date.parse(a.startsAt) / 1000
        const e = a.endsAt ? Date.parse(a.endsAt) / 1000 : openAlertEnd(u)
        if (e < xmin || s > xmax) continue
        const kind = alertKind(a)
        const x0 = u.valToPos(Math.max(s, xmin), 'x', true)
        const x1 = Math.max(x0 + dpr, u.valToPos(Math.min(e, xmax), 'x', true))
        ctx.fillStyle = ALERT_FILL[kind]
        ctx.fillRect(x0, top, x1 - x0, height)
        ctx.strokeStyle = ALERT_EDGE[kind]
        ctx.lineWidth = 1.5 * dpr
        ctx.setLineDash([])
        ctx.beginPath()
        ctx.moveTo(x0, top)
        ctx.lineTo(x0, top + height)
        ctx.stroke()
        if (a.endsAt) {
          ctx.setLineDash([3 * dpr, 3 * dpr])
          ctx.beginPath()
          ctx.moveTo(x1, top)
          ctx.lineTo(x1, top + height)
          ctx.stroke()
        }
        const label = '⚠ ' + a.rule + (a.op === 'ALL' ? '' : ' ' + a.op)
        const lx = x0 + 4 * dpr
        let row = rows.findIndex((end) => end < lx)
        if (row === -1) row = rows.push(0) - 1
        rows[row] = lx + ctx.measureText(label).width + 6 * dpr
        ctx.fillStyle = ALERT_EDGE[kind]
        // Below the filling band's label, which sits at the top.
        ctx.fillText(label, lx, top + (26 + 13 * row) * dpr)
        marks.push({
          fingerprint: a.fingerprint,
          rule: a.rule,
          op: a.op,
          state: a.state,
          silencedBy: a.silencedBy,
          summary: a.summary,
          startsAt: a.startsAt,
          endsAt: a.endsAt,
          left: u.valToPos(Math.max(s, xmin), 'x'),
          right: u.valToPos(Math.min(e, xmax), 'x'),
        })
      }
      ctx.restore()
    }
    u.alertMarks = marks
  }

  /** The rule and summary of the alert span under the cursor, in a box inside the plot. */
  function alertTip(u) {
    let tip = u.alertTip
    if (!tip) {
      tip = document.createElement('div')
      tip.className = 'alert-tip'
      tip.hidden = true
      u.over.appendChild(tip)
      u.alertTip = tip
    }
    const x = u.cursor.left
    // Every span under the cursor, newest first; a thin span still catches it within a few pixels.
    const under =
      x == null || x < 0 ? [] : (u.alertMarks || []).filter((k) => x >= k.left - 3 && x <= k.right + 3).reverse()
    if (under.length === 0) {
      tip.hidden = true
      delete tip.dataset.fingerprints
      return
    }
    tip.replaceChildren(
      ...under.map((m) => {
        const item = document.createElement('div')
        item.className = 'alert-tip-item'
        const title = document.createElement('b')
        title.textContent =
          m.rule + (m.op === 'ALL' ? '' : ' (' + m.op + ')') + ' · ' + m.state + (m.silencedBy ? ' · silenced' : '')
        const when = document.createElement('span')
        when.textContent =
          fmtTime(Date.parse(m.startsAt)) + (m.endsAt ? ' – ' + fmtTime(Date.parse(m.endsAt)) : ' – now') + ': '
        item.append(title, when, m.summary)
        return item
      }),
    )
    tip.dataset.fingerprints = under.map((m) => m.fingerprint).join(' ')
    tip.hidden = false
    const w = u.over.clientWidth
    tip.style.left = Math.max(0, Math.min(x + 12, w - tip.offsetWidth - 4)) + 'px'
    tip.style.top = '6px'
  }

  /** The x range: the data, plus the still-filling band so its edge is visible. */
  function xRange(_u, min, max) {
    const m = live.main
    const w = (m.windowMs || 1000) / 1000
    if (min == null || max == null) return [Date.now() / 1000 - 60, Date.now() / 1000]
    let hi = max + w
    const f = m.frontier
    if (f && !f.final && f.newestWindowMs != null) hi = Math.max(hi, (f.newestWindowMs + (m.windowMs || 0)) / 1000)
    return [min, hi]
  }

  function chartOptions(spec, width) {
    const y = {
      label: spec.yLabel,
      labelSize: 18,
      size: 70,
      stroke: '#475467',
      grid: { stroke: '#eef0f3' },
      values: (_u, splits) => splits.map((v) => (v == null ? '' : spec.fmt(v))),
    }
    // On a log axis, labels, ticks and grid lines at powers of ten only.
    if (spec.log) {
      const decades = (_u, splits) =>
        splits.map((v) => (Math.abs(Math.log10(v) - Math.round(Math.log10(v))) < 1e-9 ? v : null))
      y.filter = decades
      y.grid.filter = decades
      y.ticks = { filter: decades }
    }
    return {
      width,
      height: spec.height || 220,
      cursor: { drag: { x: true, y: false } },
      legend: { live: true },
      scales: {
        x: { time: true, range: xRange },
        y: spec.log
          ? { distr: 3, log: 10 }
          : spec.range
            ? { range: spec.range }
            : { range: (_u, min, max) => [0, max > 0 ? max * 1.08 : 1] },
      },
      axes: [
        // Whole seconds at least: windows are a second or longer.
        { label: 'time (local)', labelSize: 18, stroke: '#475467', grid: { stroke: '#eef0f3' }, incrs: TIME_INCRS },
        y,
      ],
      series: [
        { label: 'time', value: (_u, v) => (v == null ? '' : new Date(v * 1000).toLocaleTimeString('en-GB')) },
        ...spec.series.map((s) => ({
          label: s.label,
          stroke: s.stroke,
          width: s.width || 1.5,
          dash: s.dash,
          spanGaps: true,
          points: { show: false },
          value: (_u, v) => (v == null ? '–' : spec.fmt(v)),
        })),
      ],
      hooks: spec.alerts
        ? { draw: [drawOpenEdge, (u) => drawAlerts(u, spec.alerts)], setCursor: [alertTip] }
        : { draw: [drawOpenEdge] },
    }
  }

  /** Draws into el; rebuilds the chart when its series change, otherwise only swaps the data. */
  function plot(key, el, spec) {
    if (spec.series.length === 0 || spec.data[0].length === 0) {
      if (charts[key]) {
        sized.unobserve(charts[key].el)
        charts[key].u.destroy()
        delete charts[key]
      }
      el.innerHTML = '<div class="empty">' + (spec.empty || 'no complete window yet') + '</div>'
      return
    }
    const sig = JSON.stringify([spec.series.map((s) => s.label), spec.log, spec.yLabel])
    const c = charts[key]
    if (c && c.sig === sig && c.el === el) {
      c.u.setData(spec.data)
      return
    }
    if (c) c.u.destroy()
    el.textContent = ''
    charts[key] = { u: new uPlot(chartOptions(spec, chartWidth(el)), spec.data, el), sig, el }
    sized.observe(el)
  }

  const chartWidth = (el) => Math.max(300, el.clientWidth)
  /** A chart follows its container's width whenever the layout changes (the window, the grid, a new figure). */
  const sized = new ResizeObserver((entries) => {
    for (const e of entries) {
      const c = Object.values(charts).find((x) => x.el === e.target)
      if (c && c.u.width !== chartWidth(e.target)) c.u.setSize({ width: chartWidth(e.target), height: c.u.height })
    }
  })

  function renderCharts() {
    const m = live.main
    const W = m.windowMs || 1000
    const perS = 1000 / W
    const xs = xOf(m, 0)
    const ops = opsOf(m)
    const shift = baselineShift()
    const b = live.base
    const target = m.run && m.run.target > 0 ? m.run.target : 0

    // Throughput: total, per operation, the run's target, and a baseline's total.
    const thr = [
      { label: 'total', stroke: '#1d2430', width: 2.5, data: m.windows.map((w) => windowTotal(w) * perS) },
      ...ops.map((op, i) => ({
        label: op,
        stroke: COLORS[i % COLORS.length],
        data: m.windows.map((w) => (w.ops[op] ? w.ops[op].operations : 0) * perS),
      })),
    ]
    if (target > 0)
      thr.push({ label: 'target', stroke: '#dc2626', width: 1, dash: [6, 4], data: m.windows.map(() => target) })
    let thrData = [xs, ...thr.map((s) => s.data)]
    if (shift != null) {
      const bPerS = 1000 / (b.windowMs || W)
      thr.push({ label: 'baseline total (' + baselineId + ')', stroke: BASELINE, width: 2, dash: [3, 3] })
      thrData = join(xs, thrData.slice(1), xOf(b, shift), [b.windows.map((w) => windowTotal(w) * bPerS)])
    }
    plot('throughput', $('chart-throughput'), {
      yLabel: 'ops/s',
      fmt: fmtRate,
      height: 260,
      series: thr,
      data: thrData,
      alerts: () => live.main.alerts,
    })

    // Latency per operation: percentiles of merged histograms, intended p99, a baseline's p99.
    // Every operation's figure is in the grid before any chart is sized: a chart made while its figure was
    // alone would take the whole row and then overflow onto the next one's (each chart also follows its own
    // container's width: see plot()).
    const box = $('latency-charts')
    for (const op of ops) {
      if (document.getElementById('chart-latency-' + op)) continue
      const fig = document.createElement('figure')
      fig.innerHTML = '<figcaption></figcaption><div class="chart"></div>'
      fig.firstChild.textContent = 'Latency of ' + op + ' (OK calls; log scale)'
      fig.lastChild.id = 'chart-latency-' + op
      box.appendChild(fig)
    }
    for (const op of ops) {
      const el = document.getElementById('chart-latency-' + op)
      // A log axis has no 0: a sub-µs value is drawn at 1 µs (the table shows it as it is).
      const v = (x) => (x == null ? null : Math.max(1, x))
      const ser = [
        ...PERCENTILES.map((p) => ({
          label: p.label,
          stroke: p.stroke,
          data: m.windows.map((w) => v(w.ops[op] ? w.ops[op][p.key] : null)),
        })),
        {
          label: 'intended p99',
          stroke: '#9333ea',
          dash: [5, 4],
          width: 1.5,
          data: m.windows.map((w) => v(w.ops[op] ? w.ops[op].intendedP99 : null)),
        },
      ]
      let data = [xs, ...ser.map((s) => s.data)]
      if (shift != null) {
        ser.push({ label: 'baseline p99', stroke: BASELINE, width: 2, dash: [3, 3] })
        data = join(xs, data.slice(1), xOf(b, shift), [b.windows.map((w) => v(w.ops[op] ? w.ops[op].p99 : null))])
      }
      plot('latency:' + op, el, {
        yLabel: 'latency (log)',
        fmt: fmtUs,
        log: true,
        series: ser,
        data,
        // This operation's alerts and those about the whole run.
        alerts: () => live.main.alerts.filter((a) => a.op === op || a.op === 'ALL'),
      })
    }

    // Errors per second by status (every status but OK).
    const statuses = keysOf(m.windows, 'statuses', 'OK')
    const errSeries = statuses.length
      ? statuses.map((s, i) => ({
          label: s,
          stroke: COLORS[(i + 1) % COLORS.length],
          data: m.windows.map((w) => (w.statuses[s] || 0) * perS),
        }))
      : [{ label: 'errors (none so far)', stroke: '#16a34a', data: m.windows.map(() => 0) }]
    plot('errors', $('chart-errors'), {
      yLabel: 'errors/s',
      fmt: fmtRate,
      series: errSeries,
      data: [xs, ...errSeries.map((s) => s.data)],
    })

    // Cache-hit ratio: client side per operation, server side per source.
    const cacheOps = ops.filter((op) =>
      m.windows.some((w) => w.ops[op] && w.ops[op].cacheHits + w.ops[op].cacheMisses > 0),
    )
    const sources = keysOf(m.windows, 'serverCacheHit')
    const cacheSeries = [
      ...cacheOps.map((op) => ({
        label: op + ' (client)',
        stroke: COLORS[ops.indexOf(op) % COLORS.length],
        data: m.windows.map((w) => {
          const o = w.ops[op]
          return o && o.cacheHits + o.cacheMisses > 0 ? (100 * o.cacheHits) / (o.cacheHits + o.cacheMisses) : null
        }),
      })),
      ...sources.map((s, i) => ({
        label: s + ' (server)',
        stroke: COLORS[(ops.length + i) % COLORS.length],
        dash: [6, 3],
        width: 2,
        data: m.windows.map((w) => (w.serverCacheHit[s] == null ? null : 100 * w.serverCacheHit[s])),
      })),
    ]
    plot('cache', $('chart-cache'), {
      yLabel: 'hit ratio',
      fmt: (v) => v.toFixed(0) + '%',
      range: [0, 100],
      series: cacheSeries,
      data: [xs, ...cacheSeries.map((s) => s.data)],
      empty: 'no cache outcome reported by this binding',
    })

    // Throughput per driver client.
    const clients = keysOf(m.windows, 'clients')
    const clientSeries = clients.map((c, i) => ({
      label: c,
      stroke: COLORS[i % COLORS.length],
      data: m.windows.map((w) => (w.clients[c] || 0) * perS),
    }))
    plot('clients', $('chart-clients'), {
      yLabel: 'ops/s',
      fmt: fmtRate,
      series: clientSeries,
      data: [xs, ...clientSeries.map((s) => s.data)],
    })
  }

  // ------------------------------------------------------------ text

  function setFigure(id, value, text, extra) {
    const el = $(id)
    el.dataset.value = value == null ? '' : String(value)
    el.textContent = text
    if (extra) for (const [k, v] of Object.entries(extra)) el.dataset[k] = v == null ? '' : String(v)
  }

  function renderMeta() {
    const r = live.main.run
    const box = $('meta')
    box.replaceChildren()
    if (!r) return
    const item = (label, value, field) => {
      const span = document.createElement('span')
      span.append(label + ' ')
      const b = document.createElement('b')
      b.textContent = value
      if (field) b.dataset.field = field
      span.append(b)
      box.append(span)
    }
    item('run', r.run_id, 'run')
    item('workload', r.workload || '–', 'workload')
    item('binding', r.binding || '–', 'binding')
    item(
      'clients',
      r.clients_ended > 0 ? r.clients_ended + ' of ' + r.clients + ' ended' : String(r.clients),
      'clients',
    )
    item('threads', String(r.threads), 'threads')
    item('target', r.target > 0 ? fmtInt(r.target) + ' ops/s' : 'none', 'target')
    item('window', live.main.windowMs == null ? '–' : live.main.windowMs + ' ms', 'window')
    item('started', fmtDate(r.started_at), 'started')
    item('finished', r.ended_at ? fmtDate(r.ended_at) : 'running', 'finished')
    // An experiment's runs: the spread of the clients' first operations, and the worst client clock offset from the
    // broker's as the agents measured it (windows are cut on the clients' clocks).
    if (r.start_skew_ms != null) item('start skew', fmtMs(r.start_skew_ms), 'startSkew')
    if (r.clock_offset_max_ms != null) item('worst clock offset', fmtMs(r.clock_offset_max_ms), 'clockOffsetMax')
    const labels = document.createElement('span')
    labels.dataset.field = 'labels'
    labels.append('labels ')
    const entries = Object.entries(r.labels || {})
    if (entries.length === 0) labels.append('–')
    for (const [k, v] of entries) {
      const chip = document.createElement('span')
      chip.className = 'label-chip'
      chip.textContent = k + '=' + v
      labels.append(chip, ' ')
    }
    box.append(labels)
    if (baselineId) item('baseline', baselineId + (live.base.run ? '' : ' (waiting)'), 'baseline')
  }

  function renderTiles() {
    const m = live.main
    const s = m.summary
    const W = m.windowMs || 1000
    setFigure('total-ops', s ? s.operations : null, s ? fmtInt(s.operations) : '–')
    const last = lastFullWindow(m)
    const rate = last ? (windowTotal(last) * 1000) / W : null
    setFigure('last-ops', rate, last ? fmtRate(rate) : '–', { t: last ? last.t : null })
    const target = m.run ? m.run.target : null
    $('last-ops-sub').textContent = last
      ? 'ops/s in the window at ' +
        fmtTime(last.t) +
        (target > 0 ? ', ' + Math.round((100 * rate) / target) + '% of target' : '')
      : 'ops/s, last complete window'
    setFigure('target', target, target == null ? '–' : target > 0 ? fmtInt(target) : 'none')
    const byStatus = (s && s.byStatus) || {}
    const errs = Object.entries(byStatus).filter(([k]) => k !== 'OK')
    const errTotal = errs.reduce((a, [, n]) => a + n, 0)
    setFigure('errors', s ? errTotal : null, s ? fmtInt(errTotal) : '–')
    $('errors-sub').textContent = errs.length ? errs.map(([k, n]) => k + ' ' + fmtInt(n)).join(', ') : 'calls not OK'
    let hits = 0
    let misses = 0
    for (const o of Object.values((s && s.byOp) || {})) {
      hits += o.cacheHits
      misses += o.cacheMisses
    }
    const client = hits + misses > 0 ? hits / (hits + misses) : null
    setFigure('hit-client', client, fmtPct(client))
    const server = Object.entries((s && s.serverCacheHit) || {}).filter(([, r]) => r != null)
    setFigure(
      'hit-server',
      server.length === 1 ? server[0][1] : null,
      server.length ? server.map(([, r]) => fmtPct(r)).join(' / ') : '–',
    )
    $('hit-server-sub').textContent = server.length
      ? server.map(([k]) => k).join(' / ') + ' counters'
      : 'datastore counters'
  }

  function renderTable() {
    const s = live.main.summary
    const body = document.querySelector('#ops-table tbody')
    body.replaceChildren()
    if (!s) return
    for (const op of opsOf(live.main)) {
      const o = s.byOp[op]
      if (!o) continue
      const tr = document.createElement('tr')
      tr.dataset.op = op
      const cell = (field, value, text) => {
        const td = document.createElement('td')
        td.dataset.field = field
        td.dataset.value = value == null ? '' : String(value)
        td.textContent = text
        tr.append(td)
      }
      const th = document.createElement('td')
      th.textContent = op
      tr.append(th)
      cell('operations', o.operations, fmtInt(o.operations))
      cell('failed', o.failed, fmtInt(o.failed))
      cell('averageUs', o.averageUs, o.averageUs == null ? '–' : o.averageUs.toFixed(1) + ' µs')
      for (const k of ['p50', 'p95', 'p99', 'p999']) cell(k, o[k], o[k] == null ? '–' : fmtInt(o[k]) + ' µs')
      cell('maxUs', o.maxUs, o.maxUs == null ? '–' : fmtInt(o.maxUs) + ' µs')
      cell('intendedP99', o.intendedP99, o.intendedP99 == null ? '–' : fmtInt(o.intendedP99) + ' µs')
      cell('cacheHitRatio', o.cacheHitRatio, fmtPct(o.cacheHitRatio))
      body.append(tr)
    }
  }

  /** The run's alerts, newest first: state, rule, operation, severity, when, why. */
  function renderAlerts() {
    const list = live.main.alerts || []
    const firing = list.filter((a) => a.state === 'firing').length
    const box = $('alerts')
    box.dataset.count = String(list.length)
    box.dataset.firing = String(firing)
    $('alerts-count').textContent = list.length
      ? '(' + firing + ' firing, ' + (list.length - firing) + ' resolved)'
      : ''
    $('alerts-none').hidden = list.length > 0
    $('alerts-list').replaceChildren(
      ...list.map((a) => {
        const li = document.createElement('li')
        li.dataset.fingerprint = a.fingerprint
        li.dataset.state = a.state
        li.dataset.rule = a.rule
        li.dataset.op = a.op
        li.dataset.startsAt = a.startsAt
        li.dataset.endsAt = a.endsAt || ''
        li.dataset.silenced = String(!!a.silencedBy)
        const part = (cls, text) => {
          const span = document.createElement('span')
          span.className = cls
          span.textContent = text
          li.append(span)
        }
        const start = Date.parse(a.startsAt)
        part('state', a.state)
        part('rule', a.rule + (a.op === 'ALL' ? '' : ' (' + a.op + ')'))
        part('sev', a.severity)
        part(
          'when',
          a.endsAt
            ? fmtTime(start) +
                ' – ' +
                fmtTime(Date.parse(a.endsAt)) +
                ' (' +
                fmtInt((Date.parse(a.endsAt) - start) / 1000) +
                ' s)'
            : 'since ' + fmtTime(start),
        )
        part('summary', a.summary)
        if (a.silencedBy) part('silenced', 'silenced (webhook held back) by ' + a.silencedBy)
        return li
      }),
    )
  }

  function renderHeader() {
    const m = live.main
    const f = m.frontier
    if (m.run) setState(f && f.final ? 'final' : m.windows.length > 0 ? 'live' : 'waiting')
    let edge = ''
    if (f && f.final) edge = 'all ' + fmtInt(m.windows.length + m.dropped) + ' windows complete'
    else if (f && f.completeBeforeMs != null)
      edge =
        'complete up to ' +
        fmtTime(f.completeBeforeMs) +
        (f.newestWindowMs != null && m.windowMs != null ? ', filling to ' + fmtTime(f.newestWindowMs + m.windowMs) : '')
    if (m.dropped > 0) edge += ' · the ' + fmtInt(m.dropped) + ' oldest windows are left out of the charts'
    $('edge').textContent = edge
    const box = $('charts')
    box.dataset.points = String(m.windows.length)
    box.dataset.updates = String(live.updates)
    box.dataset.final = String(!!(f && f.final))
  }

  let pending = false
  function changed() {
    if (pending) return
    pending = true
    requestAnimationFrame(() => {
      pending = false
      renderHeader()
      renderMeta()
      renderTiles()
      renderTable()
      renderAlerts()
      renderCharts()
    })
  }

  connect(pinnedRun)
})()
