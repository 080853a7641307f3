/**
 * Benchstream experiment page (GET /experiments). It polls: the
 * experiment's whole state (GET /api/v1/experiments/:id) every second, the
 * list (GET /api/v1/experiments) every few seconds, each request after the
 * last one answered, and redraws only what changed (the answer's text is
 * compared). Polling rather than a stream: the coordinator PUTs the state
 * after every change, a state is small, and a page that loses the server
 * picks up again on its next request without any reconnect logic.
 *
 *   reading.ts   the reads, bounded in time; cells.ts the matrix's rule (services/core/experiments/state.ts)
 *   list.ts      the experiments; summary.ts, matrix.ts, records.ts, comparisons.ts, frame.ts the one watched
 *
 * ?id=ID picks an experiment; without it the page follows the newest running one. For tests the page's state is on
 * window.benchstreamExperiments, and what it draws carries data-* attributes.
 */
import type { ExperimentList, ExperimentReply } from '../../../schemas/experiments-api.v1.js'
import { byId } from '../common/dom.js'
import { fmtTime } from '../common/format.js'
import { renderList } from './list.js'
import { initialPage, type PageState } from './page-state.js'
import { HttpProblem, read } from './reading.js'
import { renderState } from './render.js'
import { setState, showProblem } from './status.js'

declare global {
  interface Window {
    benchstreamExperiments: PageState
  }
}

/** How often the experiment is read, ms. */
const STATE_MS = 1000
/** How often the list is read, ms (it changes when an experiment starts or ends; the state keeps its own row). */
const LIST_MS = 5000
const LIST_LIMIT = 100

/** An experiment named in the address stays; without one the page follows the newest running one. */
const pinned = new URLSearchParams(location.search).get('id') || ''
const page = initialPage(pinned)
window.benchstreamExperiments = page

/** The experiment to watch when none is named: the newest running one, else the newest; a running one stays. */
function follow(): void {
  if (pinned) return
  const running = page.list.find((e) => e.status === 'running')
  const current = page.list.find((e) => e.id === page.id)
  if (!page.id || !current || (current.status !== 'running' && running && running.id !== page.id)) {
    const next = running || page.list[0]
    if (next && next.id !== page.id) {
      page.id = next.id
      page.stateText = ''
    }
  }
}

async function poll(): Promise<void> {
  try {
    if (Date.now() >= page.listDueAt) {
      const text = await read('/api/v1/experiments?limit=' + LIST_LIMIT)
      page.listDueAt = Date.now() + LIST_MS
      if (text !== page.listText) {
        page.listText = text
        page.list = (JSON.parse(text) as ExperimentList).experiments
        renderList(page)
      }
      follow()
    }
    if (page.id) {
      const text = await read('/api/v1/experiments/' + encodeURIComponent(page.id))
      if (text !== page.stateText) {
        page.stateText = text
        page.state = JSON.parse(text) as ExperimentReply
        renderState(page)
        renderList(page)
      }
    }
    showProblem(page, '')
    setState(page, !page.id ? 'waiting' : page.state && page.state.status === 'running' ? 'live' : 'final')
    byId('updated').textContent = 'read at ' + fmtTime(Date.now())
  } catch (err) {
    setState(page, 'error')
    showProblem(
      page,
      err instanceof HttpProblem
        ? err.message
        : 'the server cannot be reached: ' + (err as Error).message + ' (trying again)',
    )
  }
  page.polls++
  setTimeout(() => void poll(), STATE_MS)
}

void poll()
