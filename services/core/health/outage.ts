/**
 * An outage of a dependency as its client sees it: from the first failure (or
 * the first request left unanswered too long) to the first success after it.
 * Each outage is reported twice, when it starts and when it ends with how long
 * it lasted, so that a log says both that something is wrong and for how long
 * it was. Pure: the caller says when things fail and succeed, and the clock is
 * injected.
 */

export interface OutageState {
  /** Wall-clock ms of the first failure of the outage. */
  sinceMs: number
  /** The latest failure, in words. */
  problem: string
  /** Failures seen during the outage. */
  failures: number
}

export type OutageEvent =
  | { type: 'started'; what: string; problem: string; atMs: number }
  | {
      type: 'ended'
      what: string
      /** From the first failure to the success that ended it. */
      durationMs: number
      failures: number
      /** The last failure seen before it ended. */
      lastProblem: string
      atMs: number
    }

export class OutageTracker {
  private state: OutageState | undefined
  private readonly history: Array<{ durationMs: number; endedAtMs: number }> = []

  constructor(
    /** What is out, as the events say it: "Kafka (fetch and commit)". */
    private readonly what: string,
    private readonly report: (e: OutageEvent) => void = () => undefined,
    private readonly now: () => number = Date.now,
  ) {}

  /** Something failed (or has gone unanswered too long): opens an outage, or extends the open one. */
  failed(problem: string, atMs = this.now()): void {
    if (this.state === undefined) {
      this.state = { sinceMs: atMs, problem, failures: 1 }
      this.report({ type: 'started', what: this.what, problem, atMs })
      return
    }
    this.state.problem = problem
    this.state.failures++
  }

  /** Something succeeded: ends the open outage, if any. */
  ok(atMs = this.now()): void {
    const s = this.state
    if (s === undefined) return
    this.state = undefined
    const durationMs = Math.max(0, atMs - s.sinceMs)
    this.history.push({ durationMs, endedAtMs: atMs })
    if (this.history.length > MAX_HISTORY) this.history.shift()
    this.report({ type: 'ended', what: this.what, durationMs, failures: s.failures, lastProblem: s.problem, atMs })
  }

  /** The open outage with how long it has lasted, or undefined. */
  current(atMs = this.now()): (OutageState & { forMs: number }) | undefined {
    const s = this.state
    return s === undefined ? undefined : { ...s, forMs: Math.max(0, atMs - s.sinceMs) }
  }

  /** The last outages that ended (at most MAX_HISTORY), oldest first. */
  ended(): ReadonlyArray<{ durationMs: number; endedAtMs: number }> {
    return this.history
  }
}

/** Ended outages kept for status pages. */
const MAX_HISTORY = 20

/** "3.2 s", "45 s", "2 min 5 s": a duration as a log line says it. */
export function formatDuration(ms: number): string {
  if (ms < 10_000) return `${(ms / 1000).toFixed(1)} s`
  const s = Math.round(ms / 1000)
  return s < 120 ? `${s} s` : `${Math.floor(s / 60)} min ${s % 60} s`
}

/** An outage event as a log line: the message and its fields (durations in ms and in words). */
export function outageLogLine(e: OutageEvent): { msg: string; fields: Record<string, string | number> } {
  if (e.type === 'started')
    return {
      msg: `${e.what} unreachable or its partition leader moving: ${e.problem}`,
      fields: { outage: 'started', since: new Date(e.atMs).toISOString() },
    }
  const failures = `${e.failures} failure${e.failures === 1 ? '' : 's'}`
  return {
    msg: `${e.what} back after ${formatDuration(e.durationMs)} (${failures}; last: ${e.lastProblem})`,
    fields: { outage: 'ended', durationMs: e.durationMs, failures: e.failures },
  }
}
