/** The watched experiment, drawn whole whenever its state's text changed. */
import { byId, el } from '../common/dom.js'
import { renderBisect } from './bisect.js'
import { renderComparisons } from './comparisons.js'
import { renderFrame } from './frame.js'
import { renderMatrix } from './matrix.js'
import type { PageState } from './page-state.js'
import { renderNotes, renderSteps } from './records.js'
import { renderHeadline, renderSummary } from './summary.js'

export function renderState(page: PageState): void {
  const s = page.state
  if (s === null) return
  const box = byId('experiment')
  box.hidden = false
  box.dataset.id = s.id
  box.dataset.version = String(s.version)
  document.title = s.name + ' · Benchstream experiments'
  const title = byId('title')
  title.textContent = s.name + ' '
  title.append(el('code', s.id))
  renderHeadline(s)
  renderSummary(s)
  renderBisect(s)
  renderMatrix(s)
  renderSteps(s)
  renderNotes(s)
  renderComparisons(s)
  renderFrame(page, s)
  page.renders++
  box.dataset.renders = String(page.renders)
}
