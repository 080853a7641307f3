/**
 * The run's alerts on the throughput and latency charts: a shaded span from
 * each incident's start to its end (to the newest data while it fires),
 * drawn in a uPlot draw hook like the filling band, the rule at the top;
 * hovering a span shows its rule and summary. Each drawn span is kept on the
 * chart (u.alertMarks, CSS pixels of the plotting area) for the hover and
 * for tests.
 */
import type uPlot from 'uplot'
import type { Alert } from '../../../schemas/alerts-api.v1.js'
import { fmtTime } from '../common/format.js'
import type { Side } from './stream-state.js'

/** One drawn span: the alert's fields the tip shows, and where it lies. */
interface AlertMark {
  fingerprint: string
  rule: string
  op: string
  state: Alert['state']
  silencedBy: string | null
  summary: string
  startsAt: string
  endsAt: string | null
  left: number
  right: number
}

/** A chart with its drawn spans and its tip box. */
type MarkedChart = uPlot & { alertMarks?: AlertMark[]; alertTip?: HTMLDivElement }

type AlertKind = 'firing' | 'resolved' | 'silenced'
const ALERT_FILL: Record<AlertKind, string> = {
  firing: 'rgba(220, 38, 38, 0.16)',
  resolved: 'rgba(220, 38, 38, 0.09)',
  silenced: 'rgba(147, 51, 234, 0.12)',
}
const ALERT_EDGE: Record<AlertKind, string> = { firing: '#dc2626', resolved: '#f87171', silenced: '#9333ea' }
const alertKind = (a: Alert): AlertKind => (a.silencedBy ? 'silenced' : a.state)

/** Where a firing alert's span ends: the newest data, as far as the page knows it, else the chart's right end. */
function openAlertEnd(m: Side, xmax: number): number {
  const f = m.frontier
  if (f && f.newestWindowMs != null && m.windowMs != null) return (f.newestWindowMs + m.windowMs) / 1000
  return xmax
}

/**
 * The alerts in `list` as shaded spans from start to end (x is a window's start, so the span covers the breaching
 * windows' points); `m` is the run shown, whose newest data ends a firing alert's span.
 */
export function drawAlerts(chart: uPlot, list: readonly Alert[], m: Side): void {
  const u: MarkedChart = chart
  const marks: AlertMark[] = []
  const xmin = u.scales.x?.min
  const xmax = u.scales.x?.max
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
    const rows: number[] = []
    // Oldest first, so a newer span is drawn over an older one.
    for (const a of [...list].sort((p, q) => p.startsAt.localeCompare(q.startsAt) || p.rule.localeCompare(q.rule))) {
      const s = Date.parse(a.startsAt) / 1000
      const e = a.endsAt ? Date.parse(a.endsAt) / 1000 : openAlertEnd(m, xmax)
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

/** The rule and summary of the alert span under the cursor, in a box inside the plot (a setCursor hook). */
export function alertTip(chart: uPlot): void {
  const u: MarkedChart = chart
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
  if (x == null || under.length === 0) {
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
