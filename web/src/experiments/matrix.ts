/**
 * The matrix: one row per workload and setup, one column per run (warm-up runs first, then the repetitions, in
 * formatMatrix's order); each cell its mark and attempts, its runs and why an attempt did not count in its tooltip,
 * and a link to its last run in the live view.
 */
import type { Attempt, Cell, ExperimentState } from '../../../schemas/experiment-state.v1.js'
import { el, find } from '../common/dom.js'
import { fmtInt, fmtMs, fmtTime } from '../common/format.js'
import { cellStatus, MARK } from './cells.js'

interface Column {
  key: string
  warmup: boolean
  repetition: number
}

interface Row {
  workload: string
  setup: string
  cells: Map<string, Cell>
}

const columnKey = (c: Cell): string => (c.warmup ? 'w' : 'r') + c.repetition

function attemptLine(a: Attempt, i: number): string {
  const parts = ['attempt ' + (i + 1) + ': ' + a.runId + ' ' + a.state]
  if (a.startedAtMs != null)
    parts.push(fmtTime(a.startedAtMs) + (a.endedAtMs != null ? '–' + fmtTime(a.endedAtMs) : ' (going on)'))
  const clocks = []
  if (a.startSkewMs != null) clocks.push('start skew ' + fmtMs(a.startSkewMs))
  if (a.maxClockOffsetMs != null) clocks.push('worst clock offset ' + fmtMs(a.maxClockOffsetMs))
  if (clocks.length) parts.push(clocks.join(', '))
  // A summary run (driver pe) sends no events: its clients' operations are reported, not counted.
  if (a.state === 'done' && a.counted != null && a.sent == null)
    parts.push(fmtInt(a.counted) + ' operations as its clients reported')
  else if (a.counted != null || a.sent != null) parts.push(fmtInt(a.counted) + ' of ' + fmtInt(a.sent) + ' counted')
  const ended = a.clients.filter((x) => x.state === 'ended').length
  if (a.clients.length) parts.push(ended + ' of ' + a.clients.length + ' clients ended')
  return parts.join('; ') + (a.reason ? ' — ' + a.reason : '')
}

export function renderMatrix(s: ExperimentState): void {
  const plan = s.plan
  // Columns: warm-up runs, then repetitions, as the cells have them (formatMatrix's order).
  const cols: Column[] = []
  const seen = new Set<string>()
  for (const c of s.cells) {
    const k = columnKey(c)
    if (!seen.has(k)) {
      seen.add(k)
      cols.push({ key: k, warmup: c.warmup, repetition: c.repetition })
    }
  }
  cols.sort((a, b) => (a.warmup === b.warmup ? a.repetition - b.repetition : a.warmup ? -1 : 1))
  // Rows: workloads in run order, setups in the plan's order.
  const workloads = [...new Set(s.cells.map((c) => c.workload))]
  const setupRank = new Map(plan.setups.map((x, i) => [x.name, i]))
  const rows = new Map<string, Row>()
  for (const c of s.cells) {
    const key = c.workload + '\u0000' + c.setup
    let row = rows.get(key)
    if (row === undefined) {
      row = { workload: c.workload, setup: c.setup, cells: new Map() }
      rows.set(key, row)
    }
    row.cells.set(columnKey(c), c)
  }
  const ordered = [...rows.values()].sort(
    (a, b) =>
      workloads.indexOf(a.workload) - workloads.indexOf(b.workload) ||
      (setupRank.get(a.setup) ?? 99) - (setupRank.get(b.setup) ?? 99),
  )

  const head = find('#matrix thead')
  head.replaceChildren()
  const warm = cols.filter((c) => c.warmup).length
  const top = el('tr')
  const corner = el('th', '')
  corner.colSpan = 2
  top.append(corner)
  if (warm > 0) {
    const th = el('th', 'warm-up', 'group warm')
    th.colSpan = warm
    top.append(th)
  }
  if (cols.length > warm) {
    const th = el('th', 'repetitions', 'group')
    th.colSpan = cols.length - warm
    top.append(th)
  }
  const second = el('tr')
  second.append(el('th', 'workload'), el('th', 'setup'))
  for (const c of cols) second.append(el('th', String(c.repetition), c.warmup ? 'col warm' : 'col'))
  head.append(top, second)

  const labels = new Map(plan.setups.map((x) => [x.name, x.labels || {}]))
  const body = find('#matrix tbody')
  body.replaceChildren()
  let lastWorkload: string | null = null
  for (const r of ordered) {
    const tr = el('tr')
    tr.dataset.workload = r.workload
    tr.dataset.setup = r.setup
    if (r.workload !== lastWorkload) tr.className = 'first'
    tr.append(el('td', r.workload === lastWorkload ? '' : r.workload, 'workload'))
    lastWorkload = r.workload
    const setup = el('td', r.setup, 'setup')
    const lab = Object.entries(labels.get(r.setup) || {})
    if (lab.length) setup.title = lab.map(([k, v]) => k + '=' + v).join(' ')
    tr.append(setup)
    for (const col of cols) {
      const c = r.cells.get(col.key)
      if (!c) {
        tr.append(el('td', '', 'cell none'))
        continue
      }
      tr.append(cellOf(s, c, col))
    }
    body.append(tr)
  }
}

function cellOf(s: ExperimentState, c: Cell, col: Column): HTMLTableCellElement {
  const status = cellStatus(c, s.plan)
  const td = el('td', null, 'cell ' + status + (col.warmup ? ' warm' : ''))
  td.dataset.key = c.key
  td.dataset.state = status
  td.dataset.attempts = String(c.attempts.length)
  td.dataset.runs = c.attempts.map((a) => a.runId).join(' ')
  if (s.currentRun && c.attempts.some((a) => a.runId === s.currentRun)) td.classList.add('current')
  td.title = [
    c.workload + ' × ' + c.setup + ', ' + (c.warmup ? 'warm-up ' : 'repetition ') + c.repetition + ': ' + status,
    'group ' + c.group,
    ...(c.attempts.length ? c.attempts.map(attemptLine) : ['no attempt yet']),
  ].join('\n')
  // The number of attempts where it says more than the mark: a retry, or tries that did not end the cell.
  const shown = c.attempts.length > 1 || (c.attempts.length === 1 && (status === 'left' || status === 'failed'))
  const last = c.attempts[c.attempts.length - 1]
  let inner: HTMLElement
  if (last) {
    const a = el('a')
    a.href = '/?run=' + encodeURIComponent(last.runId)
    a.target = '_blank'
    a.rel = 'noopener'
    inner = a
  } else inner = el('span')
  inner.append(MARK[status])
  if (shown) inner.append(el('sup', String(c.attempts.length)))
  td.append(inner)
  return td
}
