/**
 * The page's text: the header's edge of complete data, the run's meta line, the tiles and the per-operation table.
 * Totals and percentiles come from the server's merged histograms, the same rule as the run's report; the figures
 * carry data-value attributes (the tests read them).
 */
import { byId, find } from '../common/dom.js'
import { fmtInt, fmtMs, fmtPct, fmtRate, fmtSqlDate, fmtTime } from '../common/format.js'
import { lastFullWindow, opsOf, windowTotal } from './figures.js'
import { setState } from './status.js'
import type { LiveState } from './stream-state.js'

type Value = string | number | null | undefined

function setFigure(id: string, value: Value, text: string, extra?: Record<string, Value>): void {
  const e = byId(id)
  e.dataset.value = value == null ? '' : String(value)
  e.textContent = text
  if (extra) for (const [k, v] of Object.entries(extra)) e.dataset[k] = v == null ? '' : String(v)
}

/** The state pill, how far windows are complete, and the charts' data-* counters. */
export function renderHeader(live: LiveState): void {
  const m = live.main
  const f = m.frontier
  if (m.run) setState(live, f && f.final ? 'final' : m.windows.length > 0 ? 'live' : 'waiting')
  let edge = ''
  if (f && f.final) edge = 'all ' + fmtInt(m.windows.length + m.dropped) + ' windows complete'
  else if (f && f.completeBeforeMs != null)
    edge =
      'complete up to ' +
      fmtTime(f.completeBeforeMs) +
      (f.newestWindowMs != null && m.windowMs != null ? ', filling to ' + fmtTime(f.newestWindowMs + m.windowMs) : '')
  if (m.dropped > 0) edge += ' · the ' + fmtInt(m.dropped) + ' oldest windows are left out of the charts'
  byId('edge').textContent = edge
  const box = byId('charts')
  box.dataset.points = String(m.windows.length)
  box.dataset.updates = String(live.updates)
  box.dataset.final = String(!!(f && f.final))
}

export function renderMeta(live: LiveState, baselineId: string): void {
  const r = live.main.run
  const box = byId('meta')
  box.replaceChildren()
  if (!r) return
  const item = (label: string, value: string, field: string): void => {
    const span = document.createElement('span')
    span.append(label + ' ')
    const b = document.createElement('b')
    b.textContent = value
    b.dataset.field = field
    span.append(b)
    box.append(span)
  }
  item('run', r.run_id, 'run')
  item('workload', r.workload || '–', 'workload')
  item('binding', r.binding || '–', 'binding')
  item('clients', r.clients_ended > 0 ? r.clients_ended + ' of ' + r.clients + ' ended' : String(r.clients), 'clients')
  item('threads', String(r.threads), 'threads')
  item('target', r.target > 0 ? fmtInt(r.target) + ' ops/s' : 'none', 'target')
  item('window', live.main.windowMs == null ? '–' : live.main.windowMs + ' ms', 'window')
  item('started', fmtSqlDate(r.started_at), 'started')
  item('finished', r.ended_at ? fmtSqlDate(r.ended_at) : 'running', 'finished')
  // An experiment's runs: the spread of the clients' first operations, and the worst client clock offset from the
  // broker's as the agents measured it (windows are cut on the clients' clocks).
  if (r.start_skew_ms != null) item('start skew', fmtMs(r.start_skew_ms), 'startSkew')
  if (r.clock_offset_max_ms != null) item('worst clock offset', fmtMs(r.clock_offset_max_ms), 'clockOffsetMax')
  const labels = document.createElement('span')
  labels.dataset.field = 'labels'
  labels.append('labels ')
  const entries = Object.entries(r.labels)
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

export function renderTiles(live: LiveState): void {
  const m = live.main
  const s = m.summary
  const W = m.windowMs || 1000
  setFigure('total-ops', s ? s.operations : null, s ? fmtInt(s.operations) : '–')
  const last = lastFullWindow(m)
  const rate = last ? (windowTotal(last) * 1000) / W : null
  setFigure('last-ops', rate, last ? fmtRate(rate) : '–', { t: last ? last.t : null })
  const target = m.run ? m.run.target : null
  byId('last-ops-sub').textContent =
    last && rate != null
      ? 'ops/s in the window at ' +
        fmtTime(last.t) +
        (target != null && target > 0 ? ', ' + Math.round((100 * rate) / target) + '% of target' : '')
      : 'ops/s, last complete window'
  setFigure('target', target, target == null ? '–' : target > 0 ? fmtInt(target) : 'none')
  const errs = Object.entries(s?.byStatus ?? {}).filter(([k]) => k !== 'OK')
  const errTotal = errs.reduce((a, [, n]) => a + n, 0)
  setFigure('errors', s ? errTotal : null, s ? fmtInt(errTotal) : '–')
  byId('errors-sub').textContent = errs.length ? errs.map(([k, n]) => k + ' ' + fmtInt(n)).join(', ') : 'calls not OK'
  let hits = 0
  let misses = 0
  for (const o of Object.values(s?.byOp ?? {})) {
    hits += o.cacheHits
    misses += o.cacheMisses
  }
  const client = hits + misses > 0 ? hits / (hits + misses) : null
  setFigure('hit-client', client, fmtPct(client))
  const server = Object.entries(s?.serverCacheHit ?? {}).filter(([, r]) => r != null)
  setFigure(
    'hit-server',
    server.length === 1 ? server[0]![1] : null,
    server.length ? server.map(([, r]) => fmtPct(r)).join(' / ') : '–',
  )
  byId('hit-server-sub').textContent = server.length
    ? server.map(([k]) => k).join(' / ') + ' counters'
    : 'datastore counters'
}

/** Per operation over the complete windows: counts, average, percentiles, max, intended p99, cache hits. */
export function renderTable(live: LiveState): void {
  const s = live.main.summary
  const body = find('#ops-table tbody')
  body.replaceChildren()
  if (!s) return
  for (const op of opsOf(live.main)) {
    const o = s.byOp[op]
    if (!o) continue
    const tr = document.createElement('tr')
    tr.dataset.op = op
    const cell = (field: string, value: number | null, text: string): void => {
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
    for (const k of ['p50', 'p95', 'p99', 'p999'] as const) cell(k, o[k], o[k] == null ? '–' : fmtInt(o[k]) + ' µs')
    cell('maxUs', o.maxUs, o.maxUs == null ? '–' : fmtInt(o.maxUs) + ' µs')
    cell('intendedP99', o.intendedP99, o.intendedP99 == null ? '–' : fmtInt(o.intendedP99) + ' µs')
    cell('cacheHitRatio', o.cacheHitRatio, fmtPct(o.cacheHitRatio))
    body.append(tr)
  }
}
