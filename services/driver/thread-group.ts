/**
 * The ThreadGroup: what the client threads of one JS thread share (their
 * measurements, a turn of the event loop, the sleeping and waking of
 * throttled threads until their next scheduled start). runPhase (runner.ts)
 * makes one for the calling thread, each worker (worker.ts) one for its own.
 */
import type { EventVisitor } from './event-ring.js'
import { Measurements } from './measurements.js'
import type { ScheduleTracker } from './schedule-keeping.js'

/** Longest stretch client threads run without letting timers and I/O in, ms. */
const YIELD_EVERY_MS = 5
/**
 * A JS thread blocks for the next scheduled operation only when it is at most this far ahead; further, it sleeps on a
 * timer first, ms.
 */
const BLOCK_AT_MOST_MS = 20

interface Sleeper {
  until: number
  resolve: () => void
}

/**
 * What the client threads of one JS thread share: the measurements (the
 * status timer swaps `interval`), a turn of the event loop, the scheduler
 * of throttled operations and their schedule keeping.
 *
 * Throttled client threads sleep here until their next scheduled start.
 * When every client thread of this JS thread is asleep, nothing but the next
 * start can happen on it, so it blocks with Atomics.wait until then: precise
 * to tens of µs, as YCSB's threads park, and without burning a core. While
 * any thread is awake (an operation in flight, or behind schedule) the event
 * loop must run; the sleepers are looked at again whenever an operation
 * completes, and by a timer.
 */
export class ThreadGroup {
  readonly total: Measurements
  /** undefined when no status lines are wanted. */
  interval: Measurements | undefined
  /** Client threads of this JS thread that are not asleep (running, waiting for a reply or for their turn). */
  private active = 0
  private yieldEpoch = 0
  private lastYieldAt: number
  private readonly sleepers: Sleeper[] = []
  private timer: NodeJS.Timeout | undefined
  private timerAt = 0
  private readonly wake = (): void => {
    this.timer = undefined
    this.schedule()
  }

  /**
   * @param intended keep intended latencies (the phase has a target).
   * @param block a word that stays 0 while the phase runs: Atomics.wait
   *   sleeps on it, and whoever stops the phase sets it and notifies.
   * @param lag schedule keeping of throttled operations; undefined = unthrottled.
   *   Settable later: a worker knows the phase's origin only at its start.
   */
  constructor(
    status: boolean,
    readonly intended: boolean,
    readonly events: EventVisitor,
    now: number,
    private readonly block: { word: Int32Array; index: number },
    public lag?: ScheduleTracker,
  ) {
    this.total = new Measurements(intended)
    this.interval = status ? new Measurements(intended) : undefined
    this.lastYieldAt = now
  }

  /**
   * Bumps the epoch every YIELD_EVERY_MS; each thread yields once per epoch. The events recorded so far become
   * visible to the delivery thread then (a ring publishes in steps), so none waits longer than that.
   */
  epoch(now: number): number {
    if (now - this.lastYieldAt >= YIELD_EVERY_MS) {
      this.lastYieldAt = now
      this.yieldEpoch++
      this.events.publish?.()
    }
    return this.yieldEpoch
  }

  /** A client thread starts. */
  enter(): void {
    this.active++
  }

  /** A client thread is done; the others may now be all asleep. */
  leave(): void {
    this.active--
    if (this.active === 0) this.events.publish?.()
    this.schedule()
  }

  /** Resolves at `until` (this thread's performance.now()), or at once when the phase is stopped. */
  sleep(until: number): Promise<void> {
    return new Promise((resolve) => {
      this.sleepers.push({ until, resolve })
      this.active--
      this.schedule()
    })
  }

  /**
   * Wakes the sleepers that are due; blocks for the next one when every thread is asleep. Called on sleep, on
   * completion, on leave, by the timer.
   */
  schedule(): void {
    const sleepers = this.sleepers
    for (;;) {
      if (sleepers.length === 0) return
      const now = performance.now()
      const stopped = Atomics.load(this.block.word, this.block.index) !== 0
      let earliest = Number.POSITIVE_INFINITY
      let woke = false
      for (let i = sleepers.length - 1; i >= 0; i--) {
        const s = sleepers[i]!
        if (s.until <= now || stopped) {
          sleepers.splice(i, 1)
          this.active++
          s.resolve()
          woke = true
        } else if (s.until < earliest) earliest = s.until
      }
      // Woken threads run first (their continuations are queued); they come back here.
      if (woke || sleepers.length === 0) break
      const ahead = earliest - now
      if (this.active > 0 || ahead > BLOCK_AT_MOST_MS) break
      // Nothing runs on this thread until the next start: what it recorded goes out meanwhile.
      this.events.publish?.()
      Atomics.wait(this.block.word, this.block.index, 0, ahead)
    }
    if (sleepers.length === 0) {
      if (this.timer !== undefined) clearTimeout(this.timer)
      this.timer = undefined
      return
    }
    let earliest = Number.POSITIVE_INFINITY
    for (const s of sleepers) if (s.until < earliest) earliest = s.until
    if (this.active === 0) this.events.publish?.()
    // Far ahead: wake up a little early and block for the rest.
    const at = earliest > performance.now() + BLOCK_AT_MOST_MS ? earliest - BLOCK_AT_MOST_MS / 2 : earliest - 1
    if (this.timer !== undefined && this.timerAt <= at) return
    if (this.timer !== undefined) clearTimeout(this.timer)
    this.timerAt = at
    this.timer = setTimeout(this.wake, Math.max(0, at - performance.now()))
  }
}
