/** How a comparison's repetitions ended, what is decided, and what the undecided could have found. */
import type { StopReason } from '../../../schemas/experiment-decisions.v1.js'
import type { ComparisonRecord } from '../../../schemas/experiment-state.v1.js'
import { el } from '../common/dom.js'
import { fmtP } from './figures.js'

/** Why a comparison's repetitions stopped, in words (services/experiments/sequential.ts stopText). */
const STOP_TEXT: Record<StopReason, string> = {
  decided: 'every figure decided',
  max: 'max repetitions reached',
  budget: 'time budget spent',
  fixed: 'fixed repetitions',
  'unknown figure': 'a named figure is in no comparison',
  'no runs': 'a setup has no complete run',
  interrupted: 'interrupted',
}

/** Undecided figures listed by name before the rest are counted. */
const LISTED = 5

export function stoppedCell(c: ComparisonRecord): HTMLTableCellElement {
  const td = el('td', null, 'list')
  const d = c.decisions
  if (!d) {
    td.append(el('span', '–', 'muted'))
    return td
  }
  td.dataset.stop = d.stop
  const open = d.figures.filter((f) => f.decision === 'undecided')
  td.append(el('div', STOP_TEXT[d.stop]))
  const decided = d.figures.length - open.length + ' of ' + d.figures.length + ' decided at ' + fmtP(d.alpha)
  td.append(el('div', decided, 'muted'))
  for (const f of open.slice(0, LISTED)) {
    const could = f.detectable
      ? 'could have found +' +
        f.detectable.increasePercent.toFixed(1) +
        '% / -' +
        f.detectable.decreasePercent.toFixed(1) +
        '%'
      : 'undecided'
    const line = el('div', f.label + ': ' + could, 'undecided')
    line.title = f.reason
    td.append(line)
  }
  if (open.length > LISTED) td.append(el('div', '… and ' + (open.length - LISTED) + ' more undecided', 'muted'))
  return td
}
