/**
 * What the page knows of a run, from its stream (GET /api/v1/runs/:id/live): a `snapshot` with every complete
 * window so far, then an `update` whenever more windows become complete. The server sends complete windows only, so
 * nothing here has to guess which window is still filling. One side is the run shown, the other a baseline run
 * (&baseline=ID) overlaid on it.
 */
import type { Alert } from '../../../schemas/alerts-api.v1.js'
import type {
  LiveFrontier,
  LiveRunItem,
  LiveSnapshot,
  LiveSummary,
  LiveUpdate,
  LiveWindow,
} from '../../../schemas/live-api.v1.js'
import type { RunInfo } from '../../../schemas/runs-api.v1.js'

/** The page keeps at most this many windows per run, as the server does (MAX_LIVE_WINDOWS). */
const MAX_WINDOWS = 3600

/** One run's windows and figures, as far as its stream has told them. */
export interface Side {
  run: RunInfo | null
  windowMs: number | null
  startMs: number | null
  windows: LiveWindow[]
  /** Complete windows left out at the start (by the server or by MAX_WINDOWS); the summary still covers them. */
  dropped: number
  frontier: LiveFrontier | null
  summary: LiveSummary | null
  alerts: Alert[]
}

/** The pill in the header: connecting, waiting (for a run, or for its data), live, final, refused (503, 404). */
export type ViewState = 'connecting' | 'waiting' | 'live' | 'final' | 'refused'

/** The whole page's state (on window.benchstreamLive for tests). */
export interface LiveState {
  runId: string
  es: EventSource | null
  main: Side
  base: Side
  runs: LiveRunItem[]
  updates: number
  alertEvents: number
  snapshots: number
  state: ViewState
}

export const emptySide = (): Side => ({
  run: null,
  windowMs: null,
  startMs: null,
  windows: [],
  dropped: 0,
  frontier: null,
  summary: null,
  alerts: [],
})

export const initialState = (): LiveState => ({
  runId: '',
  es: null,
  main: emptySide(),
  base: emptySide(),
  runs: [],
  updates: 0,
  alertEvents: 0,
  snapshots: 0,
  state: 'connecting',
})

export function applySnapshot(side: Side, d: LiveSnapshot): void {
  side.run = d.run
  side.windowMs = d.windowMs
  side.startMs = d.startMs
  side.windows = d.windows.slice()
  side.dropped = d.droppedWindows
  side.frontier = d.frontier
  side.summary = d.summary
  side.alerts = d.alerts
}

export function applyUpdate(side: Side, d: LiveUpdate): void {
  side.run = d.run
  side.windowMs = d.windowMs
  side.startMs = d.startMs
  side.frontier = d.frontier
  side.summary = d.summary
  for (const w of d.windows) side.windows.push(w)
  if (side.windows.length > MAX_WINDOWS) {
    const cut = side.windows.length - MAX_WINDOWS
    side.windows.splice(0, cut)
    side.dropped += cut
  }
}
