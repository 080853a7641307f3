/** The header's state pill and the problem line under it. */
import { byId } from '../common/dom.js'
import type { PageState } from './page-state.js'

/** live: a running experiment; final: an ended one (its status shown); waiting: none yet; error: a read failed. */
export type PageStatus = 'connecting' | 'live' | 'final' | 'waiting' | 'error'

export function setState(page: PageState, s: PageStatus): void {
  const e = byId('state')
  e.dataset.state = s
  e.textContent =
    s === 'live'
      ? 'running'
      : s === 'final'
        ? (page.state && page.state.status) || 'final'
        : s === 'waiting'
          ? 'no experiment yet'
          : s === 'error'
            ? 'error'
            : 'connecting'
}

/** Shows a message under the header; an empty one hides the line. */
export function showProblem(page: PageState, message: string): void {
  page.problem = message
  const e = byId('problem')
  e.hidden = !message
  e.textContent = message
}
