/**
 * HTTP API shapes, version 1: the live view (GET /) and its stream of
 * Server-Sent Events, every event by name and its data (LiveEvents).
 */
import { Type, type Static } from 'typebox'
import { Alert } from './alerts-api.v1.js'
import { RunInfo } from './runs-api.v1.js'

const NullableNumber = Type.Union([Type.Number(), Type.Null()])

export const LiveQuery = Type.Object({
  baseline: Type.Optional(
    Type.String({
      pattern: '^[A-Za-z0-9][A-Za-z0-9._:-]{0,63}$',
      description: "a second run whose throughput and p99 are overlaid, aligned on seconds since each run's start",
    }),
  ),
})
export type LiveQuery = Static<typeof LiveQuery>

/**
 * One operation in one complete window, merged over clients and partitions.
 * Latencies in µs over the operation's OK calls (YCSB's measurement of that
 * name), from the merged histogram: null when none succeeded in the window.
 */
export const LiveOpWindow = Type.Object({
  /** Calls of every status. */
  operations: Type.Integer(),
  /** Calls that returned OK: what the latencies describe. */
  ok: Type.Integer(),
  p50: NullableNumber,
  p95: NullableNumber,
  p99: NullableNumber,
  p999: NullableNumber,
  max: NullableNumber,
  /** p99 from the intended start (the schedule), corrected for coordinated omission. */
  intendedP99: NullableNumber,
  cacheHits: Type.Integer(),
  cacheMisses: Type.Integer(),
})
export type LiveOpWindow = Static<typeof LiveOpWindow>

/** One complete window of a run. Counts are per window: divide by the window length for rates. */
export const LiveWindow = Type.Object({
  /** Window start, ms since the epoch. */
  t: Type.Integer(),
  ops: Type.Record(Type.String(), LiveOpWindow),
  /** Calls per status, all operations (OK included). */
  statuses: Type.Record(Type.String(), Type.Integer()),
  /** Calls per driver client. */
  clients: Type.Record(Type.String(), Type.Integer()),
  /**
   * Datastore-side cache-hit ratio per source: Δhits / (Δhits + Δmisses) of its cumulative counters; null when no
   * sample fell into the window.
   */
  serverCacheHit: Type.Record(Type.String(), NullableNumber),
})
export type LiveWindow = Static<typeof LiveWindow>

/** An operation over every complete window so far, from the merged histogram (the same rule as the run's report). */
export const LiveOpSummary = Type.Object({
  /** OK calls (YCSB's `[READ], Operations`). */
  operations: Type.Integer(),
  /** Calls with any other status (`[READ-FAILED]`). */
  failed: Type.Integer(),
  averageUs: NullableNumber,
  minUs: NullableNumber,
  maxUs: NullableNumber,
  p50: NullableNumber,
  p95: NullableNumber,
  p99: NullableNumber,
  p999: NullableNumber,
  intendedP99: NullableNumber,
  /** Client-side: hits / (hits + misses) as the binding reported them; null when unknown. */
  cacheHitRatio: NullableNumber,
  cacheHits: Type.Integer(),
  cacheMisses: Type.Integer(),
})
export type LiveOpSummary = Static<typeof LiveOpSummary>

export const LiveSummary = Type.Object({
  /** Calls of every operation and status in the complete windows. */
  operations: Type.Integer(),
  byOp: Type.Record(Type.String(), LiveOpSummary),
  byStatus: Type.Record(Type.String(), Type.Integer()),
  /** Datastore-side hit ratio per source over the same windows. */
  serverCacheHit: Type.Record(Type.String(), NullableNumber),
})
export type LiveSummary = Static<typeof LiveSummary>

/** Where complete data ends. */
export const LiveFrontier = Type.Object({
  /** Windows starting before this (ms) are complete and sent; null before the run has data. */
  completeBeforeMs: Type.Union([Type.Integer(), Type.Null()]),
  /**
   * Start of the newest window holding any data (ms): it and those before it back to completeBeforeMs are still
   * filling.
   */
  newestWindowMs: Type.Union([Type.Integer(), Type.Null()]),
  /** The run has ended and every window, the last one included, has been sent: nothing more will come. */
  final: Type.Boolean(),
})
export type LiveFrontier = Static<typeof LiveFrontier>

/** The run's alerts, newest first: in a snapshot, and as an `alerts` event whenever they change. */
export const LiveAlerts = Type.Object({ alerts: Type.Array(Alert) })
export type LiveAlerts = Static<typeof LiveAlerts>

/** Everything the page needs for one run: the first message of a stream (and again after a rebuild). */
export const LiveSnapshot = Type.Object({
  run: RunInfo,
  /** The run's window length, ms; null before it has data. */
  windowMs: Type.Union([Type.Integer(), Type.Null()]),
  /** The run's start (its first client's start record, else its first window), ms; what a baseline is aligned on. */
  startMs: Type.Union([Type.Integer(), Type.Null()]),
  /** Complete windows in time order, the newest at most MAX_LIVE_WINDOWS of them. */
  windows: Type.Array(LiveWindow),
  /** Complete windows left out at the start to bound the page (the summary still covers them). */
  droppedWindows: Type.Integer(),
  frontier: LiveFrontier,
  summary: LiveSummary,
  /** The run's alerts (incidents with their latest state), newest first. */
  alerts: Type.Array(Alert),
})
export type LiveSnapshot = Static<typeof LiveSnapshot>

/** Windows that became complete since the last message, in time order, with the new totals. */
export const LiveUpdate = Type.Object({
  run: RunInfo,
  windowMs: Type.Union([Type.Integer(), Type.Null()]),
  startMs: Type.Union([Type.Integer(), Type.Null()]),
  windows: Type.Array(LiveWindow),
  frontier: LiveFrontier,
  summary: LiveSummary,
})
export type LiveUpdate = Static<typeof LiveUpdate>

/** A run in the page's picker. */
export const LiveRunItem = Type.Object({
  run_id: Type.String(),
  started_at: Type.Union([Type.String(), Type.Null()]),
  ended_at: Type.Union([Type.String(), Type.Null()]),
  operations: Type.Integer(),
  /** `reported`: a summary run (YCSB's final reports only): no windows to draw, its report instead. */
  origin: Type.Union([Type.Literal('events'), Type.Literal('reported')]),
})
export type LiveRunItem = Static<typeof LiveRunItem>

/** The run list, sent as a `runs` event when it changes (the picker). */
export const LiveRuns = Type.Object({ runs: Type.Array(LiveRunItem) })
export type LiveRuns = Static<typeof LiveRuns>

/** A read that failed, sent as a `problem` event; the stream goes on and the read is retried. */
export const LiveProblem = Type.Object({ message: Type.String() })
export type LiveProblem = Static<typeof LiveProblem>

/**
 * Every event of a live stream by name, and its data: what services/api/live/ sends and the page (web/src/live-view/)
 * reads. A baseline run's events are its run's, prefixed `baseline-`.
 */
export interface LiveEvents {
  runs: LiveRuns
  snapshot: LiveSnapshot
  update: LiveUpdate
  alerts: LiveAlerts
  'baseline-snapshot': LiveSnapshot
  'baseline-update': LiveUpdate
  /** Sent, not drawn: the page shows the alerts of the run shown only. */
  'baseline-alerts': LiveAlerts
  problem: LiveProblem
}
/** One event of a live stream: its name and its data. */
export type LiveEvent = { [K in keyof LiveEvents]: { type: K; data: LiveEvents[K] } }[keyof LiveEvents]
