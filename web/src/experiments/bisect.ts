/** A bisection's chain (services/core/experiments/bisect.ts formatChain): each step links to its experiment. */
import type { ExperimentState } from '../../../schemas/experiment-state.v1.js'
import { byId, el, find } from '../common/dom.js'
import { fmtChange, fmtP } from './figures.js'

export function renderBisect(s: ExperimentState): void {
  const box = byId('bisect')
  const b = s.bisect
  box.hidden = !b
  byId('matrix-box').hidden = !!b
  if (!b) return
  const r = b.result
  const result = byId('bisect-result')
  result.dataset.result = r ? r.kind : 'running'
  result.textContent =
    'good ' +
    b.good +
    ', bad ' +
    b.bad +
    ', ' +
    b.versions.length +
    ' versions (' +
    b.source +
    ')' +
    (b.figures.length ? '; following ' + b.figures.join(', ') : '') +
    '. ' +
    (r ? (r.kind === 'found' ? '' : r.kind + ': ') + r.message : 'going on')
  const body = find('#bisect-table tbody')
  body.replaceChildren()
  b.chain.forEach((x, k) => {
    const tr = el('tr')
    tr.dataset.version = x.version
    tr.dataset.outcome = x.outcome
    tr.append(el('td', k === 0 ? 'ends' : String(k)))
    const v = el('td')
    const a = el('a', x.version)
    a.href = '/experiments?id=' + encodeURIComponent(x.experiment)
    a.title = "the step's experiment " + x.experiment
    v.append(a)
    tr.append(v, el('td', x.runs.baseline + ' + ' + x.runs.candidate), el('td', fmtChange(x.changePercent)))
    tr.append(el('td', fmtP(x.pValue)))
    const verdict = el('td')
    const text = x.outcome === 'running' ? 'running' : x.outcome + ' (' + x.verdict + ')'
    verdict.append(el('span', text, 'pill bisect-' + x.outcome))
    tr.append(verdict, el('td', x.reason, 'list'))
    body.append(tr)
  })
}
