/**
 * The run picker in the header: the runs the stream lists (newest first), the run shown kept in it even when the
 * list no longer has it. Picking one loads the page for it, keeping a baseline.
 */
import type { LiveRunItem } from '../../../schemas/live-api.v1.js'
import { byId } from '../common/dom.js'

const picker = (): HTMLSelectElement => byId('run-picker', HTMLSelectElement)

function option(value: string, text: string): HTMLOptionElement {
  const o = document.createElement('option')
  o.value = value
  o.textContent = text
  return o
}

export function showRuns(runs: readonly LiveRunItem[], shown: string): void {
  const p = picker()
  const options = runs.map((r) =>
    option(r.run_id, r.run_id + (r.origin === 'reported' ? '  (reported)' : r.ended_at ? '' : '  (running)')),
  )
  if (options.length === 0) options.push(option('', 'waiting for runs…'))
  p.replaceChildren(...options)
  if (shown && !runs.some((r) => r.run_id === shown)) p.prepend(option(shown, shown))
  p.value = shown
}

/** A run picked loads the page for it (?run=), with the same baseline. */
export function onPick(baselineId: string): void {
  const p = picker()
  p.addEventListener('change', () => {
    const next = new URLSearchParams()
    if (p.value) next.set('run', p.value)
    if (baselineId) next.set('baseline', baselineId)
    location.search = next.toString()
  })
}
