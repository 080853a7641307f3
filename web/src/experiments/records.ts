/** The experiment's lifecycle steps (with their output) and its notes, the newest NOTES_SHOWN of them. */
import type { ExperimentState } from '../../../schemas/experiment-state.v1.js'
import { byId, el, find } from '../common/dom.js'
import { fmtTime } from '../common/format.js'

/** Notes shown, the newest (an experiment may have up to 1000). */
const NOTES_SHOWN = 50

export function renderSteps(s: ExperimentState): void {
  const body = find('#steps-table tbody')
  body.replaceChildren()
  if (s.steps.length === 0) {
    const tr = el('tr')
    const td = el('td', 'none (the plan has no lifecycle steps, or none ran yet)', 'empty')
    td.colSpan = 6
    tr.append(td)
    body.append(tr)
  }
  for (const st of s.steps) {
    const tr = el('tr')
    tr.dataset.state = st.state
    tr.append(el('td', st.setup), el('td', st.phase), el('td', st.agent))
    const state = el('td')
    state.append(el('span', st.state, 'pill status-' + st.state))
    tr.append(state, el('td', fmtTime(st.atMs)))
    const out = el('td', null, 'output')
    if (st.output) {
      const d = el('details')
      d.append(el('summary', st.output.split('\n')[0]), el('pre', st.output))
      out.append(d)
    } else out.textContent = '–'
    tr.append(out)
    body.append(tr)
  }
}

export function renderNotes(s: ExperimentState): void {
  const list = byId('notes-list', HTMLOListElement)
  list.replaceChildren()
  const shown = s.notes.slice(-NOTES_SHOWN)
  list.start = s.notes.length - shown.length + 1
  for (const n of shown) list.append(el('li', n))
  if (s.notes.length === 0) list.append(el('li', 'none', 'empty'))
}
