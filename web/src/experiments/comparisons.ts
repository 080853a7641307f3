/** The comparisons written at the end: per pair of setups and workload, the runs, what regressed and improved. */
import type { ExperimentState } from '../../../schemas/experiment-state.v1.js'
import { el, find } from '../common/dom.js'
import { stoppedCell } from './stopped.js'

/** A cell listing `items`, one a line (each with class `cls`), or `none` in grey. */
function listCell(items: readonly string[], cls: string, none: string): HTMLTableCellElement {
  const td = el('td', null, 'list')
  if (items.length === 0) td.append(el('span', none, 'muted'))
  for (const x of items) td.append(el('div', x, cls))
  return td
}

export function renderComparisons(s: ExperimentState): void {
  const body = find('#comparisons-table tbody')
  body.replaceChildren()
  if (s.comparisons.length === 0) {
    const tr = el('tr')
    const td = el('td', 'none yet: written at the end, over complete runs only', 'empty')
    td.colSpan = 7
    tr.append(td)
    body.append(tr)
  }
  for (const c of s.comparisons) {
    const tr = el('tr')
    tr.dataset.pair = c.baseline + '/' + c.candidate
    tr.dataset.workload = c.workload
    tr.dataset.regressions = String(c.regressions.length)
    tr.dataset.improvements = String(c.improvements.length)
    tr.append(el('td', c.baseline + ' → ' + c.candidate), el('td', c.workload))
    const runs = el('td', c.baselineRuns.length + ' + ' + c.candidateRuns.length)
    runs.title = 'baseline: ' + c.baselineRuns.join(', ') + '\ncandidate: ' + c.candidateRuns.join(', ')
    tr.append(runs, stoppedCell(c))
    if (c.error) {
      const td = el('td', c.error, 'list problem-text')
      td.colSpan = 2
      tr.append(td)
    } else tr.append(listCell(c.regressions, 'up', 'none'), listCell(c.improvements, 'down', 'none'))
    tr.append(listCell(c.files, 'file', '–'))
    body.append(tr)
  }
}
