/** The header's state pill and the problem line under it: what the page says about its stream. */
import { byId } from '../common/dom.js'
import type { LiveState, ViewState } from './stream-state.js'

const WORDS: Record<Exclude<ViewState, 'waiting'>, string> = {
  live: 'live',
  final: 'final',
  refused: 'refused',
  connecting: 'connecting',
}

export function setState(live: LiveState, s: ViewState): void {
  live.state = s
  const e = byId('state')
  e.dataset.state = s
  e.textContent = s === 'waiting' ? (live.runId ? 'waiting for data' : 'waiting for a run') : WORDS[s]
}

/** Shows a message under the header; an empty one hides the line. */
export function showProblem(message: string): void {
  const e = byId('problem')
  e.hidden = !message
  e.textContent = message
}

/** What the page says about a summary run, which has figures but no time series; '' for any other run. */
export function reportedNote(live: LiveState): string {
  const r = live.runs.find((x) => x.run_id === live.runId)
  if (!r || r.origin !== 'reported') return ''
  return (
    r.run_id +
    " is a summary run (YCSB's final reports as printed): no time series to draw. Its report: " +
    '/api/v1/runs/' +
    encodeURIComponent(r.run_id) +
    '/report?format=text'
  )
}
