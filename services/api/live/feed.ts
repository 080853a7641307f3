/**
 * One run's live feed: reads the windows that became complete since its last
 * read, about once a second, and hands them to every page watching the run.
 * One feed per run, however many pages watch it, so the store's load grows
 * with the runs watched, not with the viewers; it reads only while someone
 * listens and stops for good once the run is final.
 *
 * A window is complete when every Kafka partition carrying the run has moved
 * past its end by the allowed lateness: the same rule the alerts judge by
 * (services/core/stats/window-completeness.ts). A still-filling window is never
 * sent; that is what made the old page read 1,796 ops/s during a 10,000 ops/s
 * run. Once the run has ended, the remaining windows (the last one, cut short
 * by the end, included) are sent when everything its drivers said they sent
 * is counted, or after FINAL_WAIT_MS when some never arrives.
 *
 * The run's alerts are read on every tick too (a small query: the run's
 * incidents) and pushed as an `alerts` event when they change. The evaluator
 * resolves what still fires once it has judged the run to its end, which
 * may come after the last window: a final feed keeps reading the alerts while
 * one fires, for FINAL_ALERTS_WAIT_MS at most.
 */
import type { Alert } from '../../../schemas/alerts-api.v1.js'
import type { LiveEvent, LiveFrontier, LiveSnapshot, LiveWindow } from '../../../schemas/live-api.v1.js'
import type { RunInfo } from '../../../schemas/runs-api.v1.js'
import { completeBefore, progressSinceMs, type WindowCompleteness } from '../../core/stats/window-completeness.js'
import type { ReadModel } from '../../core/ports/read-model.js'
import { assembleWindows, LiveTotals } from './windows.js'

/** Windows a feed keeps for the page (an hour of 1 s windows); older ones leave the charts, the totals keep them. */
export const MAX_LIVE_WINDOWS = 3600
/** Windows read per query. */
const WINDOWS_PER_READ = 600
/** Queries per read at most, so that catching up on a long run does not hold the connection for long. */
const READS_PER_TICK = 10
/** After the end, how long to wait for every sent event to be counted before the windows are taken as they are. */
const FINAL_WAIT_MS = 60_000
/**
 * Rebuilds from scratch (when windows already sent changed after being judged complete) before taking what is there.
 */
const MAX_REBUILDS = 3
/** Alerts a page gets at most (the newest): a run raising more has a problem the page would not show better. */
export const MAX_LIVE_ALERTS = 200
/** After the run is final, how long alerts that still fire are read again (the evaluator resolves them at the end). */
const FINAL_ALERTS_WAIT_MS = 60_000

/** What a feed tells its pages about its run (a baseline's events are renamed by the stream: plugin.ts). */
export type FeedEvent = Extract<LiveEvent, { type: 'snapshot' | 'update' | 'alerts' | 'problem' }>
export type FeedListener = (e: FeedEvent) => void

export interface FeedOptions {
  intervalMs: number
  /** When a window is complete: the alerts' rule, from the same settings. */
  completeness: WindowCompleteness
  now?: () => number
  /** Unexpected read failures (also sent to the pages as `problem`). */
  onError?: (err: unknown) => void
}

interface FeedState {
  run: RunInfo | undefined
  windowMs: number | null
  startMs: number | null
  /** Next window start to read; everything before it has been sent. */
  cursorMs: number | undefined
  windows: LiveWindow[]
  dropped: number
  totals: LiveTotals
  newestWindowMs: number | null
  final: boolean
  /** A snapshot has been sent since the last (re)start. */
  ready: boolean
}

function freshState(): FeedState {
  return {
    run: undefined,
    windowMs: null,
    startMs: null,
    cursorMs: undefined,
    windows: [],
    dropped: 0,
    totals: new LiveTotals(),
    newestWindowMs: null,
    final: false,
    ready: false,
  }
}

/** ClickHouse's DateTime64 text (UTC) as ms since the epoch. */
function epochMs(text: string | null): number | undefined {
  if (text === null) return undefined
  const ms = Date.parse(`${text.replace(' ', 'T')}Z`)
  return Number.isFinite(ms) ? ms : undefined
}

export class RunFeed {
  private readonly listeners = new Set<FeedListener>()
  private st: FeedState = freshState()
  private timer: NodeJS.Timeout | undefined
  private ticking = false
  private closed = false
  private rebuilds = 0
  /** The run's alerts as last read, and when the feed became final (alerts are followed a while longer). */
  private alerts: Alert[] = []
  private alertsKey = '[]'
  private finalAtMs: number | undefined
  private readonly now: () => number
  /** Reads of the store (tests check that a feed without listeners stops reading). */
  reads = 0

  constructor(
    readonly runId: string,
    private readonly rm: ReadModel,
    private readonly opts: FeedOptions,
  ) {
    this.now = opts.now ?? Date.now
  }

  /**
   * Adds a listener: it gets the snapshot as soon as there is one, then every update. Returns the function that removes
   * it.
   */
  subscribe(fn: FeedListener): () => void {
    this.listeners.add(fn)
    if (this.st.ready) fn({ type: 'snapshot', data: this.snapshot() })
    if (this.timer === undefined && !this.ticking && this.reading()) this.schedule(0)
    return () => {
      this.listeners.delete(fn)
    }
  }

  get listening(): number {
    return this.listeners.size
  }

  /** Stops reading for good (the last page left, or the server closes). */
  close(): void {
    this.closed = true
    this.listeners.clear()
    clearTimeout(this.timer)
    this.timer = undefined
  }

  /** Whether there is anything left to read: windows until final, then alerts while one fires (bounded). */
  private reading(): boolean {
    if (!this.st.final) return true
    this.finalAtMs ??= this.now()
    return this.alerts.some((a) => a.state === 'firing') && this.now() < this.finalAtMs + FINAL_ALERTS_WAIT_MS
  }

  private schedule(ms: number): void {
    if (this.closed || this.listeners.size === 0 || !this.reading()) return
    this.timer = setTimeout(() => {
      this.timer = undefined
      void this.tick()
    }, ms)
  }

  private async tick(): Promise<void> {
    this.ticking = true
    try {
      const fresh = this.st.final ? [] : await this.read()
      const alertsChanged = await this.readAlerts()
      // A first snapshot carries the alerts itself.
      const announced = this.st.ready
      this.publish(fresh)
      if (alertsChanged && announced) this.emit({ type: 'alerts', data: { alerts: this.alerts } })
    } catch (err) {
      this.opts.onError?.(err)
      this.emit({
        type: 'problem',
        data: { message: `reading the run's windows failed: ${(err as Error).message}; retrying` },
      })
    } finally {
      this.ticking = false
    }
    this.schedule(this.opts.intervalMs)
  }

  /** Reads what became complete; returns the new windows. */
  private async read(): Promise<LiveWindow[]> {
    const st = this.st
    const run = await this.counted(() => this.rm.getRun(this.runId))
    st.run = run
    if (run === undefined || run.window_ms === null) return []
    const W = run.window_ms
    const since = progressSinceMs(st.cursorMs, W, this.opts.completeness)
    const p = await this.counted(() => this.rm.liveProgress(this.runId, since))
    if (p === undefined) return []
    st.windowMs = p.windowMs
    st.cursorMs ??= p.firstWindowMs
    st.startMs ??= epochMs(run.started_at) ?? p.firstWindowMs
    st.newestWindowMs = Math.max(st.newestWindowMs ?? 0, p.lastWindowMs)
    const now = this.now()
    const endedAtMs = epochMs(run.ended_at)
    const opts = { ...this.opts.completeness, nowMs: now }
    const bound = completeBefore(p, { ...opts, endedAtMs })
    if (!bound.final || endedAtMs === undefined) return this.readUpTo(bound.beforeMs)

    // Ended: everything up to the end of the last window, once it is all there.
    const counted = (await this.counted(() => this.rm.runCounts(this.runId))).total
    const sent = Object.values(run.sent).reduce((a, b) => a + Number(b), 0)
    const settled = run.clients_ended === 0 || counted >= sent || now >= endedAtMs + FINAL_WAIT_MS
    if (!settled) return this.readUpTo(completeBefore(p, { ...opts, endedAtMs: undefined }).beforeMs)
    const end = p.lastWindowMs + p.windowMs
    const fresh = await this.readUpTo(end)
    if (st.cursorMs < end) return fresh
    if (st.totals.operations !== counted && this.rebuilds < MAX_REBUILDS) {
      // Windows sent earlier got more rows after they were judged complete (events later than the lateness): start
      // again.
      this.rebuilds++
      this.st = freshState()
      return []
    }
    st.final = true
    return fresh
  }

  /** Reads the run's alerts; true when they differ from the last read. */
  private async readAlerts(): Promise<boolean> {
    const page = await this.counted(() => this.rm.alerts({ runId: this.runId }, { limit: MAX_LIVE_ALERTS }))
    const key = JSON.stringify(page.alerts)
    if (key === this.alertsKey) return false
    this.alertsKey = key
    this.alerts = page.alerts
    return true
  }

  private async readUpTo(targetMs: number): Promise<LiveWindow[]> {
    const st = this.st
    const W = st.windowMs!
    const out: LiveWindow[] = []
    for (let i = 0; i < READS_PER_TICK && st.cursorMs! < targetMs; i++) {
      const from = st.cursorMs!
      const to = Math.min(targetMs, from + WINDOWS_PER_READ * W)
      const rows = await this.counted(() => this.rm.liveWindows(this.runId, from, to))
      const clients = await this.counted(() => this.rm.clientWindows(this.runId, from, to))
      const server = await this.counted(() => this.rm.serverCacheWindows(this.runId, from, to, W))
      st.totals.add(rows, server)
      out.push(...assembleWindows(from, to, W, rows, clients, server))
      st.cursorMs = to
    }
    st.windows.push(...out)
    if (st.windows.length > MAX_LIVE_WINDOWS) {
      const cut = st.windows.length - MAX_LIVE_WINDOWS
      st.windows.splice(0, cut)
      st.dropped += cut
    }
    return out
  }

  private counted<T>(read: () => Promise<T>): Promise<T> {
    this.reads++
    return read()
  }

  private frontier(): LiveFrontier {
    return { completeBeforeMs: this.st.cursorMs ?? null, newestWindowMs: this.st.newestWindowMs, final: this.st.final }
  }

  private lastSent = ''

  private publish(fresh: LiveWindow[]): void {
    const st = this.st
    if (st.run === undefined) return
    if (!st.ready) {
      st.ready = true
      this.lastSent = JSON.stringify([st.run, this.frontier()])
      this.emit({ type: 'snapshot', data: this.snapshot() })
      return
    }
    const key = JSON.stringify([st.run, this.frontier()])
    if (fresh.length === 0 && key === this.lastSent) return
    this.lastSent = key
    this.emit({
      type: 'update',
      data: {
        run: st.run,
        windowMs: st.windowMs,
        startMs: st.startMs,
        windows: fresh.length > MAX_LIVE_WINDOWS ? fresh.slice(-MAX_LIVE_WINDOWS) : fresh,
        frontier: this.frontier(),
        summary: st.totals.summary(),
      },
    })
  }

  private snapshot(): LiveSnapshot {
    const st = this.st
    return {
      run: st.run!,
      windowMs: st.windowMs,
      startMs: st.startMs,
      windows: st.windows,
      droppedWindows: st.dropped,
      frontier: this.frontier(),
      summary: st.totals.summary(),
      alerts: this.alerts,
    }
  }

  private emit(e: FeedEvent): void {
    for (const fn of this.listeners) fn(e)
  }
}
