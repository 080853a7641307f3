/**
 * The page's event stream: GET /api/v1/runs/:id/live for a run (with ?baseline=), GET /api/v1/live for the run
 * list alone before any run exists. Events change the state (stream-state.ts), then the page is drawn again.
 * EventSource retries by itself after a dropped connection; an answer other than a stream (503 when too many views
 * are open, 404 for an unknown run) closes it: the page asks the address again for the error's text, shows it and
 * tries again later.
 */
import type { ErrorReply } from '../../../schemas/api-common.v1.js'
import type { LiveEvents, LiveRunItem } from '../../../schemas/live-api.v1.js'
import { showRuns } from './run-picker.js'
import { reportedNote, setState, showProblem } from './status.js'
import { applySnapshot, applyUpdate, emptySide, type LiveState } from './stream-state.js'

export interface StreamOptions {
  /** A run named in the address stays; without one ('') the page follows the newest run. */
  pinnedRun: string
  /** A run to overlay ('' for none). */
  baselineId: string
  /** Another run is shown: what was drawn for the last one goes. */
  reset: () => void
  /** The state changed: draw the page again. */
  changed: () => void
}

export class LiveStream {
  constructor(
    private readonly live: LiveState,
    private readonly opts: StreamOptions,
  ) {}

  /** Shows runId ('' for none yet: the run list only), dropping what the page had. */
  connect(runId: string): void {
    const live = this.live
    if (live.es) live.es.close()
    live.runId = runId
    live.main = emptySide()
    live.base = emptySide()
    live.updates = 0
    this.opts.reset()
    setState(live, runId ? 'connecting' : 'waiting')
    const url = this.url(runId)
    const es = new EventSource(url)
    live.es = es
    const on = <E extends keyof LiveEvents>(name: E, fn: (d: LiveEvents[E]) => void): void =>
      es.addEventListener(name, (e) => {
        if (live.es !== es) return
        fn(JSON.parse(e.data as string) as LiveEvents[E])
        this.opts.changed()
      })
    on('runs', (d) => this.onRuns(d.runs))
    on('snapshot', (d) => {
      applySnapshot(live.main, d)
      live.snapshots++
      showProblem(reportedNote(live))
    })
    on('update', (d) => {
      applyUpdate(live.main, d)
      live.updates++
    })
    on('alerts', (d) => {
      live.main.alerts = d.alerts
      live.alertEvents++
    })
    on('baseline-snapshot', (d) => applySnapshot(live.base, d))
    on('baseline-update', (d) => applyUpdate(live.base, d))
    on('problem', (d) => showProblem(d.message))
    es.addEventListener('error', () => {
      if (live.es !== es) return
      if (es.readyState === EventSource.CLOSED) void this.explainRefusal(url, runId)
      else setState(live, 'connecting')
    })
  }

  private url(runId: string): string {
    if (!runId) return '/api/v1/live'
    const baseline = this.opts.baselineId
    return (
      '/api/v1/runs/' +
      encodeURIComponent(runId) +
      '/live' +
      (baseline ? '?baseline=' + encodeURIComponent(baseline) : '')
    )
  }

  /** Asks the same address again to read the error's JSON, shows it, and tries again later. */
  private async explainRefusal(url: string, runId: string): Promise<void> {
    const abort = new AbortController()
    let retryS = 5
    try {
      const res = await fetch(url, { signal: abort.signal, headers: { accept: 'application/json' } })
      if (res.ok) {
        abort.abort()
        retryS = 1
      } else {
        const body = (await res.json().catch(() => ({}))) as Partial<ErrorReply>
        retryS = Number(res.headers.get('retry-after')) || (res.status === 404 ? 5 : 10)
        setState(this.live, 'refused')
        showProblem(
          (body.code || 'HTTP ' + res.status) +
            ': ' +
            (body.message || res.statusText) +
            ' (trying again in ' +
            retryS +
            ' s)',
        )
      }
    } catch (err) {
      if (!abort.signal.aborted) showProblem('the server cannot be reached: ' + (err as Error).message)
    }
    setTimeout(() => {
      if (this.live.runId === runId) this.connect(runId)
    }, retryS * 1000)
  }

  private onRuns(runs: LiveRunItem[]): void {
    const live = this.live
    live.runs = runs
    showRuns(runs, live.runId)
    // Follow the newest run that has windows to draw; a summary run (imported YCSB reports) has none.
    const newest = runs.find((r) => r.origin !== 'reported')
    if (!this.opts.pinnedRun && newest && newest.run_id !== live.runId) this.connect(newest.run_id)
    if (reportedNote(live)) showProblem(reportedNote(live))
  }
}
