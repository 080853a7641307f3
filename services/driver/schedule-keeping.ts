/**
 * Schedule keeping of a throttled phase: how late each JS thread's client
 * threads start their operations (ScheduleTracker), and the client's
 * episodes of being behind from those of its JS threads (ScheduleEpisodes),
 * so that the client warns once per episode however many threads are late.
 */

/** The client fell behind its schedule, or caught up again. */
export type ScheduleEvent =
  | { kind: 'behind'; lagMs: number; elapsedMs: number }
  | { kind: 'caught-up'; maxLagMs: number; durationMs: number; elapsedMs: number }

/** How well the client kept its schedule over the phase (all zero without a target). */
export interface ScheduleSummary {
  /** Largest delay of an operation's start behind its scheduled start, ms. */
  maxLagMs: number
  /** Times the client fell behind by more than maxScheduleLagMs. */
  episodes: number
}

/** Default of PhaseOptions.maxScheduleLagMs. */
export const DEFAULT_MAX_SCHEDULE_LAG_MS = 100
/** A client counts as caught up once no operation has started late for this long. */
const CAUGHT_UP_AFTER_MS = 1000

/**
 * How late the operations of one JS thread's client threads start. Once
 * one starts more than `boundMs` late, they are behind until none has
 * started late for CAUGHT_UP_AFTER_MS (threads catch up one by one); one
 * 'behind' and one 'caught-up' event per episode.
 */
export class ScheduleTracker {
  /** Largest lag seen, ms. */
  maxLagMs = 0
  episodes = 0
  private behindSince = -1
  private lastLateAt = 0
  private episodeMaxLagMs = 0

  /**
   * @param t0 the phase's origin in this thread's performance.now(): events' elapsedMs count from there.
   */
  constructor(
    private readonly boundMs: number,
    private readonly t0: number,
    private readonly emit: (e: ScheduleEvent) => void,
  ) {}

  /** An operation scheduled for `intendedStart` starts at `start` (performance.now(), ms). */
  started(start: number, intendedStart: number): void {
    const lagMs = start - intendedStart
    if (lagMs > this.maxLagMs) this.maxLagMs = lagMs
    if (lagMs > this.boundMs) {
      this.lastLateAt = start
      if (this.behindSince < 0) {
        this.behindSince = start
        this.episodeMaxLagMs = 0
        this.episodes++
        this.emit({ kind: 'behind', lagMs, elapsedMs: start - this.t0 })
      }
      if (lagMs > this.episodeMaxLagMs) this.episodeMaxLagMs = lagMs
    } else if (this.behindSince >= 0 && start - this.lastLateAt > CAUGHT_UP_AFTER_MS) {
      this.emit({
        kind: 'caught-up',
        maxLagMs: this.episodeMaxLagMs,
        durationMs: this.lastLateAt - this.behindSince,
        elapsedMs: start - this.t0,
      })
      this.behindSince = -1
    }
  }
}

/**
 * The client's schedule episodes from those of its JS threads (worker
 * threads, each with a ScheduleTracker): the client falls behind when the
 * first of them does and has caught up when the last of them has, so it
 * warns once per episode however many threads are late.
 */
export class ScheduleEpisodes {
  episodes = 0
  /** Sources behind now -> elapsedMs of their 'behind' event. */
  private readonly behind = new Map<number, number>()
  private since = 0
  private lastLate = 0
  private maxLagMs = 0

  constructor(private readonly emit: ((e: ScheduleEvent) => void) | undefined) {}

  /** Source `source` reported `e` (elapsedMs from the phase's common origin). */
  add(source: number, e: ScheduleEvent): void {
    if (e.kind === 'behind') {
      if (this.behind.size === 0) {
        this.episodes++
        this.since = e.elapsedMs
        this.lastLate = e.elapsedMs
        this.maxLagMs = 0
        this.emit?.(e)
      }
      this.behind.set(source, e.elapsedMs)
      if (e.lagMs > this.maxLagMs) this.maxLagMs = e.lagMs
      return
    }
    const from = this.behind.get(source)
    if (from === undefined) return
    this.behind.delete(source)
    if (e.maxLagMs > this.maxLagMs) this.maxLagMs = e.maxLagMs
    if (from + e.durationMs > this.lastLate) this.lastLate = from + e.durationMs
    if (this.behind.size === 0)
      this.emit?.({
        kind: 'caught-up',
        maxLagMs: this.maxLagMs,
        durationMs: this.lastLate - this.since,
        elapsedMs: e.elapsedMs,
      })
  }
}
