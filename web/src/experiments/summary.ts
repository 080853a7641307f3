/** The experiment's headline (what it decided) and its summary line: status, runs, setups, workloads, the plan. */
import type { ExperimentReply } from '../../../schemas/experiments-api.v1.js'
import { byId, el } from '../common/dom.js'
import { fmtDateMs, fmtInt } from '../common/format.js'
import { countsOf, maxAttempts } from './cells.js'

/**
 * What the experiment decided, as the API words it ("Undecided: 3 of 8 runs failed; ..."): the API's `decision`
 * (services/core/experiments/decision.ts), the same words comparison.md and the CLI print, never worked out here.
 */
export function renderHeadline(s: ExperimentReply): void {
  const p = byId('headline')
  const d = s.decision
  p.replaceChildren()
  p.dataset.outcome = d ? d.outcome : ''
  p.hidden = !d
  if (!d) return
  p.append(el('b', d.lead), ' ' + d.text)
}

export function renderSummary(s: ExperimentReply): void {
  const box = byId('summary')
  box.replaceChildren()
  const item = (label: string, value: string, field: string): void => {
    const span = el('span')
    span.append(label + ' ')
    const b = el('b', value)
    b.dataset.field = field
    span.append(b)
    box.append(span)
  }
  const p = s.plan
  const c = countsOf(s)
  item('status', s.status, 'status')
  item('runs', c.done + ' done, ' + c.running + ' running, ' + c.failed + ' failed, ' + c.left + ' left', 'runs')
  item('setups', p.setups.map((x) => x.name).join(', '), 'setups')
  item('workloads', [...new Set(s.cells.map((x) => x.workload))].join(', '), 'workloads')
  // A number, or { min, max }: repetitions until decided (services/core/experiments/plan.ts repetitionsText).
  const reps =
    typeof p.repetitions === 'number'
      ? String(p.repetitions)
      : p.repetitions.min + ' to ' + p.repetitions.max + ' until decided'
  item(
    'repetitions',
    reps + (p.warmup ? ' + ' + p.warmup + ' warm-up' : '') + ', ' + maxAttempts(p) + ' attempts each',
    'repetitions',
  )
  item('binding', (p.driver === 'ycsb' ? 'ycsb ' : '') + p.binding, 'binding')
  item('clients', Array.isArray(p.clients) ? p.clients.join(', ') : String(p.clients), 'clients')
  if (p.target) item('target', fmtInt(p.target) + ' ops/s', 'target')
  item(
    'length',
    p.seconds != null ? p.seconds + ' s' : p.operations != null ? fmtInt(p.operations) + ' ops' : '–',
    'length',
  )
  item('created', fmtDateMs(s.createdAtMs), 'created')
  item('updated', fmtDateMs(s.updatedAtMs) + ' (version ' + s.version + ')', 'updated')
}
