/**
 * A ReadModel that remembers what cannot change any more: the report,
 * timeline and run info of a run that ended a while ago (its drivers sent
 * their end records after their last events, and the lateness grace has
 * passed), and, for a second, the run list. Finished runs are what people
 * open again and again (compare, history, dashboards); recomputing them from
 * the windows on every request is what made the API slow under load.
 * Identical requests that arrive while one is being computed share its
 * answer (a burst of 50 clients asking for one report costs one query).
 */
import type {
  AlertFilter,
  AlertPageRequest,
  AlertsPage,
  ReadModel,
  ReportedRun,
  RunFigures,
  RunFilter,
  RunInfo,
  RunReport,
  TimelinePoint,
  WindowFigures,
} from '../core/ports/read-model.js'

export interface CacheOptions {
  /** A run is final this long after its end record. */
  finalAfterMs: number
  /** Entries kept at most (least recently used go first). */
  maxEntries: number
  /** How long a run list is reused. */
  listTtlMs: number
  now?: () => number
}

export class CachedReadModel implements ReadModel {
  private readonly entries = new Map<string, unknown>()
  private readonly lists = new Map<number, { at: number; value: Array<RunInfo & { operations: number }> }>()
  /** Computations in progress, by key: later identical requests wait for them. */
  private readonly inflight = new Map<string, Promise<unknown>>()
  private readonly now: () => number
  /** Answers served from the cache and computed (metrics, tests). */
  readonly stats = { hits: 0, misses: 0 }

  constructor(
    private readonly inner: ReadModel,
    private readonly opts: CacheOptions,
  ) {
    this.now = opts.now ?? Date.now
  }

  async listRuns(limit: number, filter: RunFilter = {}): Promise<Array<RunInfo & { operations: number }>> {
    // Filtered lists (compare, history) are read fresh: only the plain list is what dashboards poll.
    if (filter.group !== undefined || filter.hasLabel !== undefined || Object.keys(filter.labels ?? {}).length > 0)
      return this.inner.listRuns(limit, filter)
    const refresh = (): Promise<Array<RunInfo & { operations: number }>> =>
      this.shared(`list:${limit}`, async () => {
        const value = await this.inner.listRuns(limit)
        this.lists.set(limit, { at: this.now(), value })
        return value
      })
    const hit = this.lists.get(limit)
    if (hit === undefined) return refresh()
    // A list older than its time to live is still served while a fresh one is read in the background.
    if (this.now() - hit.at >= this.opts.listTtlMs) refresh().catch(() => undefined)
    return hit.value
  }

  async getRun(runId: string): Promise<RunInfo | undefined> {
    return this.cached(
      `run:${runId}`,
      () => this.inner.getRun(runId),
      (r) => this.isFinal(r),
    )
  }

  async runReport(runId: string): Promise<RunReport> {
    return this.cached(
      `report:${runId}`,
      () => this.inner.runReport(runId),
      // An alert still firing will be resolved (at the latest when the evaluator sees the run has ended): read again.
      (r) => this.isFinal(r.run) && r.alerts.every((a) => a.state === 'resolved'),
    )
  }

  async timeline(runId: string, sinceMs: number): Promise<TimelinePoint[]> {
    const run = await this.getRun(runId)
    if (!this.isFinal(run))
      return this.shared(`timeline:${runId}:${sinceMs}`, () => this.inner.timeline(runId, sinceMs))
    return this.cached(
      `timeline:${runId}:${sinceMs}`,
      () => this.inner.timeline(runId, sinceMs),
      () => true,
    )
  }

  runFigures(runIds: readonly string[]): Promise<RunFigures[]> {
    return this.inner.runFigures(runIds)
  }

  windowFigures(runIds: readonly string[]): Promise<WindowFigures[]> {
    return this.inner.windowFigures(runIds)
  }

  reportedRuns(runIds: readonly string[]): Promise<ReportedRun[]> {
    return this.inner.reportedRuns(runIds)
  }

  runCounts(runId: string): ReturnType<ReadModel['runCounts']> {
    return this.inner.runCounts(runId)
  }

  percentileCheck(runId: string, quantiles: readonly number[]): ReturnType<ReadModel['percentileCheck']> {
    return this.inner.percentileCheck(runId, quantiles)
  }

  /** Alerts change while a run is judged, and silences are created any time: read fresh. */
  alerts(filter: AlertFilter, page: AlertPageRequest): Promise<AlertsPage> {
    return this.inner.alerts(filter, page)
  }

  deadLetterCounts(): Promise<Record<string, number>> {
    return this.inner.deadLetterCounts()
  }

  ping(): Promise<void> {
    return this.inner.ping()
  }

  // The live view's reads: it asks only for what became complete since its last read, so nothing to keep.
  liveProgress(runId: string, sinceMs: number): ReturnType<ReadModel['liveProgress']> {
    return this.inner.liveProgress(runId, sinceMs)
  }

  liveWindows(runId: string, fromMs: number, toMs: number): ReturnType<ReadModel['liveWindows']> {
    return this.inner.liveWindows(runId, fromMs, toMs)
  }

  clientWindows(runId: string, fromMs: number, toMs: number): ReturnType<ReadModel['clientWindows']> {
    return this.inner.clientWindows(runId, fromMs, toMs)
  }

  serverCacheWindows(
    runId: string,
    fromMs: number,
    toMs: number,
    windowMs: number,
  ): ReturnType<ReadModel['serverCacheWindows']> {
    return this.inner.serverCacheWindows(runId, fromMs, toMs, windowMs)
  }

  /** One computation per key at a time; callers that come meanwhile get its answer. */
  private shared<T>(key: string, compute: () => Promise<T>): Promise<T> {
    const running = this.inflight.get(key)
    if (running !== undefined) return running as Promise<T>
    const p = compute().finally(() => this.inflight.delete(key))
    this.inflight.set(key, p)
    return p
  }

  /** Ended, every client ended, and longer ago than the lateness grace: its windows are final. */
  private isFinal(run: RunInfo | undefined): boolean {
    if (run === undefined || run.ended_at === null) return false
    const ended = Date.parse(`${run.ended_at.replace(' ', 'T')}Z`)
    return Number.isFinite(ended) && this.now() - ended >= this.opts.finalAfterMs
  }

  private async cached<T>(key: string, compute: () => Promise<T>, keep: (v: T) => boolean): Promise<T> {
    if (this.entries.has(key)) {
      const v = this.entries.get(key) as T
      // Least recently used first: move it to the end.
      this.entries.delete(key)
      this.entries.set(key, v)
      this.stats.hits++
      return v
    }
    this.stats.misses++
    const v = await this.shared(key, compute)
    if (keep(v)) {
      this.entries.set(key, v)
      for (const k of this.entries.keys()) {
        if (this.entries.size <= this.opts.maxEntries) break
        this.entries.delete(k)
      }
    }
    return v
  }
}
