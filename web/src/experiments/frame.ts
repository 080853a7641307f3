/**
 * The frame at the bottom: the live view of the experiment's current run (/?run=ID), else of the run started last,
 * moved to the next run when currentRun changes (not reloaded while it stays).
 */
import type { ExperimentState } from '../../../schemas/experiment-state.v1.js'
import { byId } from '../common/dom.js'
import { runToShow } from './cells.js'
import type { PageState } from './page-state.js'

export function renderFrame(page: PageState, s: ExperimentState): void {
  const run = runToShow(s)
  byId('current-label').textContent = s.currentRun ? 'Current run' : run ? 'Last run' : 'No run yet'
  byId('current-run').textContent = run || '–'
  const open = byId('current-open', HTMLAnchorElement)
  open.hidden = !run
  open.href = '/?run=' + encodeURIComponent(run)
  const frame = byId('current-frame', HTMLIFrameElement)
  frame.hidden = !run
  if (run && run !== page.frameRun) {
    page.frameRun = run
    frame.dataset.run = run
    frame.src = '/?run=' + encodeURIComponent(run)
  }
}
