/** The experiments, newest first: status and runs done, running, failed and left; the one watched is marked. */
import { el, find } from '../common/dom.js'
import { fmtDateMs, fmtInt } from '../common/format.js'
import { countsOf } from './cells.js'
import type { PageState } from './page-state.js'

export function renderList(page: PageState): void {
  // The watched experiment's row from its state: it is read every second, the list every few.
  const s = page.state
  const rows = page.list.map((e) =>
    s && e.id === s.id
      ? { ...e, status: s.status, updatedAtMs: s.updatedAtMs, runs: countsOf(s), currentRun: s.currentRun }
      : e,
  )
  const body = find('#experiment-list tbody')
  body.replaceChildren()
  if (rows.length === 0) {
    const tr = el('tr')
    const td = el('td', 'none yet', 'empty')
    td.colSpan = 8
    tr.append(td)
    body.append(tr)
  }
  for (const e of rows) {
    const tr = el('tr')
    tr.dataset.id = e.id
    tr.dataset.status = e.status
    if (e.id === page.id) tr.className = 'selected'
    const first = el('td')
    const a = el('a', e.id)
    a.href = '/experiments?id=' + encodeURIComponent(e.id)
    first.append(a)
    tr.append(first, el('td', e.name))
    const status = el('td')
    status.append(el('span', e.status, 'pill status-' + e.status))
    tr.append(status)
    for (const k of ['done', 'running', 'failed', 'left'] as const) {
      const td = el('td', fmtInt(e.runs[k]))
      td.dataset.field = k
      td.dataset.value = String(e.runs[k])
      tr.append(td)
    }
    tr.append(el('td', fmtDateMs(e.createdAtMs)))
    body.append(tr)
  }
}
