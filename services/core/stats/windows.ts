/**
 * Event-time tumbling windows. drain() hands out *partial* rows (what arrived
 * since the last drain), which the store adds up when queried, so open windows
 * are written every second and a late event is one more partial row. A window
 * closes when the run's watermark passes its end + allowedLateness; a later
 * event still counts, as late (docs/design/windows.md).
 */
import { OPERATIONS, STATUSES, type Operation, type Status } from '../../../schemas/events.v1.js'
import type { DecodedOp } from '../codec/decode-result.js'
import { Histogram } from './histogram.js'

const STATUS_OK = 0
/** A run whose newest event is this far behind the newest of any run is forgotten (10 min). */
const RUN_IDLE_US = 600e6
/** Watermarks kept at most; beyond, the oldest are forgotten. */
const MAX_RUNS = 10_000
const CACHE_HIT = 1
const CACHE_MISS = 2

/** One partial window row, the shape of a row in ClickHouse `op_windows` (less the bookkeeping columns). */
export interface WindowRow {
  runId: string
  clientId: string
  op: Operation
  status: Status
  /** Window start, µs since epoch (a multiple of the window length). */
  windowStartUs: number
  windowUs: number
  count: number
  errors: number
  sumUs: number
  minUs: number
  maxUs: number
  intendedSumUs: number
  intendedMaxUs: number
  cacheHits: number
  cacheMisses: number
  bytes: number
  /** Bucket index -> count (services/core/stats/histogram.ts). */
  hist: Histogram
  intendedHist: Histogram
  /** Events in this row that arrived after their window had closed. */
  lateEvents: number
  /** Earliest operation start in the row, µs since epoch. */
  firstStartUs: number
  /** Latest operation end (start + latency) in the row, µs since epoch. */
  lastEndUs: number
}

class Acc {
  count = 0
  errors = 0
  sumUs = 0
  minUs = Number.MAX_SAFE_INTEGER
  maxUs = 0
  intendedSumUs = 0
  intendedMaxUs = 0
  cacheHits = 0
  cacheMisses = 0
  bytes = 0
  lateEvents = 0
  firstStartUs = Number.MAX_SAFE_INTEGER
  lastEndUs = 0
  readonly hist = new Histogram()
  readonly intendedHist = new Histogram()
}

interface Group {
  runId: string
  clientId: string
  /** key = windowIndex * 256 + opCode * 16 + statusIndex */
  accs: Map<number, Acc>
}

export interface WindowOptions {
  /** Window length in µs. @default 1_000_000 */
  windowUs: number
  /** How long after a window's end events still count as on time, in µs. @default 2_000_000 */
  allowedLatenessUs: number
}

export class WindowAggregator {
  private groups = new Map<string, Group>()
  private current: Group | undefined
  /**
   * The current group's accumulators of one window, by opCode * 16 +
   * statusIndex: events of a message mostly fall into the window of the one
   * before, so this spares a Map lookup per event (keys above 2^31 are heap
   * numbers, hashed on every get).
   */
  private recentWindow = Number.NaN
  /** The recent window's first µs and the first µs after it (none while there is no recent window). */
  private recentLo = Number.POSITIVE_INFINITY
  private recentHi = Number.NEGATIVE_INFINITY
  /** An event of the recent window is late once the watermark has passed this (its end + allowed lateness). */
  private recentLateBefore = Number.POSITIVE_INFINITY
  private readonly recent: Array<Acc | undefined> = Array.from({ length: 256 }, () => undefined)
  /** Newest event time seen per run (µs): the watermark. Survives drains. */
  private readonly watermarks = new Map<string, number>()
  /** Newest event time seen for any run (µs): how old a run's watermark is, for forgetting idle runs. */
  private newest = 0
  private currentWatermark = 0
  private currentRun = ''
  /** Events added since the last drain. */
  pending = 0
  /** Late events since the processor started (for metrics). */
  lateTotal = 0

  constructor(readonly options: WindowOptions) {}

  /** Selects the (run, client) that the following add() calls belong to. */
  begin(runId: string, clientId: string): void {
    this.flushWatermark()
    const key = `${runId}\u0000${clientId}`
    let g = this.groups.get(key)
    if (g === undefined) {
      g = { runId, clientId, accs: new Map() }
      this.groups.set(key, g)
    }
    this.current = g
    this.currentRun = runId
    this.currentWatermark = this.watermarks.get(runId) ?? 0
    this.forgetRecent()
  }

  add(e: DecodedOp): void {
    const g = this.current
    if (g === undefined) throw new Error('WindowAggregator.add() before begin()')
    const startUs = e.startUs
    const slot = e.opCode * 16 + e.statusIndex
    let a: Acc | undefined
    // Events of a message mostly fall into the window of the one before: its bounds spare a division per event.
    // Whole µs (what every client sends) fall in [lo, hi) exactly when floor(startUs / W) is that window.
    if (startUs >= this.recentLo && startUs < this.recentHi && Number.isInteger(startUs)) a = this.recent[slot]
    else this.selectWindow(Math.floor(startUs / this.options.windowUs))
    if (a === undefined) {
      const key = this.recentWindow * 256 + slot
      a = g.accs.get(key)
      if (a === undefined) {
        a = new Acc()
        g.accs.set(key, a)
      }
      this.recent[slot] = a
    }
    a.count++
    if (e.statusIndex !== STATUS_OK) a.errors++
    const latencyUs = e.latencyUs
    const intendedUs = e.intendedUs
    a.sumUs += latencyUs
    if (latencyUs < a.minUs) a.minUs = latencyUs
    if (latencyUs > a.maxUs) a.maxUs = latencyUs
    a.intendedSumUs += intendedUs
    if (intendedUs > a.intendedMaxUs) a.intendedMaxUs = intendedUs
    if (e.cacheIndex === CACHE_HIT) a.cacheHits++
    else if (e.cacheIndex === CACHE_MISS) a.cacheMisses++
    a.bytes += e.bytes
    if (startUs < a.firstStartUs) a.firstStartUs = startUs
    const end = startUs + latencyUs
    if (end > a.lastEndUs) a.lastEndUs = end
    a.hist.record(latencyUs)
    a.intendedHist.record(intendedUs)
    if (this.recentLateBefore < this.currentWatermark) {
      a.lateEvents++
      this.lateTotal++
    }
    if (startUs > this.currentWatermark) this.currentWatermark = startUs
    this.pending++
  }

  /** Makes `windowIndex` the recent window (its accumulators looked up afresh). */
  private selectWindow(windowIndex: number): void {
    if (windowIndex === this.recentWindow) return
    this.forgetRecent()
    const W = this.options.windowUs
    this.recentWindow = windowIndex
    this.recentLo = windowIndex * W
    this.recentHi = this.recentLo + W
    this.recentLateBefore = this.recentHi + this.options.allowedLatenessUs
  }

  /**
   * Adds a pre-aggregated interval histogram. Its counts go to the window of
   * the interval's start: an interval log has no finer timing to split by.
   * `intended` is the same interval's intended-latency histogram (YCSB's
   * Intended- log); without it intended latency equals measured.
   */
  addHistogram(
    runId: string,
    clientId: string,
    op: Operation,
    status: Status,
    intervalStartUs: number,
    buckets: ReadonlyArray<readonly [number, number]>,
    bucketValue: (i: number) => number,
    intervalLengthUs = 0,
    intended?: ReadonlyArray<readonly [number, number]>,
  ): void {
    this.begin(runId, clientId)
    const g = this.current!
    const opCode = OPERATIONS.indexOf(op) + 1
    const statusIndex = STATUSES.indexOf(status)
    const windowIndex = Math.floor(intervalStartUs / this.options.windowUs)
    const key = windowIndex * 256 + opCode * 16 + statusIndex
    let a = g.accs.get(key)
    if (a === undefined) {
      a = new Acc()
      g.accs.set(key, a)
    }
    for (const [i, c] of buckets) {
      if (c === 0) continue
      const v = bucketValue(i)
      a.count += c
      if (statusIndex !== STATUS_OK) a.errors += c
      // Bucket midpoints can be x.5: round so sums stay integer microseconds.
      a.sumUs += Math.round(v * c)
      if (v < a.minUs) a.minUs = Math.floor(v)
      if (v > a.maxUs) a.maxUs = Math.ceil(v)
      a.hist.recordBucket(i, c)
      this.pending += c
    }
    // Without an intended histogram (an unthrottled client) intended = measured.
    for (const [i, c] of intended ?? buckets) {
      if (c === 0) continue
      const v = bucketValue(i)
      a.intendedSumUs += Math.round(v * c)
      if (v > a.intendedMaxUs) a.intendedMaxUs = Math.ceil(v)
      a.intendedHist.recordBucket(i, c)
    }
    if (intervalStartUs < a.firstStartUs) a.firstStartUs = intervalStartUs
    // The interval's operations ended by its end, not its start.
    if (intervalStartUs + intervalLengthUs > a.lastEndUs) a.lastEndUs = intervalStartUs + intervalLengthUs
    this.flushWatermark()
    this.current = undefined
  }

  /** Watermark (µs) of a run: the newest event time seen for it. */
  watermark(runId: string): number {
    this.flushWatermark()
    return this.watermarks.get(runId) ?? 0
  }

  /** Returns every partial row accumulated since the last drain, and starts afresh. */
  drain(): WindowRow[] {
    this.flushWatermark()
    this.forgetIdleRuns()
    const rows: WindowRow[] = []
    const W = this.options.windowUs
    for (const g of this.groups.values()) {
      for (const [key, a] of g.accs) {
        const windowIndex = Math.floor(key / 256)
        const opCode = Math.floor((key % 256) / 16)
        const statusIndex = key % 16
        rows.push({
          runId: g.runId,
          clientId: g.clientId,
          op: OPERATIONS[opCode - 1]!,
          status: STATUSES[statusIndex]!,
          windowStartUs: windowIndex * W,
          windowUs: W,
          count: a.count,
          errors: a.errors,
          sumUs: a.sumUs,
          minUs: a.minUs,
          maxUs: a.maxUs,
          intendedSumUs: a.intendedSumUs,
          intendedMaxUs: a.intendedMaxUs,
          cacheHits: a.cacheHits,
          cacheMisses: a.cacheMisses,
          bytes: a.bytes,
          hist: a.hist,
          intendedHist: a.intendedHist,
          lateEvents: a.lateEvents,
          firstStartUs: a.firstStartUs,
          lastEndUs: a.lastEndUs,
        })
      }
    }
    this.groups = new Map()
    this.current = undefined
    this.forgetRecent()
    this.pending = 0
    return rows
  }

  private forgetRecent(): void {
    this.recent.fill(undefined)
    this.recentWindow = Number.NaN
    this.recentLo = Number.POSITIVE_INFINITY
    this.recentHi = Number.NEGATIVE_INFINITY
    this.recentLateBefore = Number.POSITIVE_INFINITY
  }

  /**
   * A run's watermark only decides the `late` flag of events that come after
   * it (counts never depend on it). Runs whose newest event is far behind the
   * newest of all are done: forget them, so that state stays bounded however
   * many runs pass through (a run that comes back starts a new watermark).
   */
  private forgetIdleRuns(): void {
    const idleBefore = this.newest - Math.max(RUN_IDLE_US, 10 * this.options.allowedLatenessUs)
    if (this.watermarks.size <= MAX_RUNS && idleBefore <= 0) return
    for (const [run, wm] of this.watermarks) if (wm < idleBefore) this.watermarks.delete(run)
    // Still too many live runs: drop the oldest watermarks (Map order: first set, first out).
    for (const run of this.watermarks.keys()) {
      if (this.watermarks.size <= MAX_RUNS) break
      this.watermarks.delete(run)
    }
  }

  private flushWatermark(): void {
    if (this.currentWatermark > this.newest) this.newest = this.currentWatermark
    if (this.currentRun !== '' && this.currentWatermark > (this.watermarks.get(this.currentRun) ?? 0)) {
      this.watermarks.set(this.currentRun, this.currentWatermark)
    }
  }
}
