/**
 * HTTP API shapes, version 1 (JSON Schema via TypeBox; the TypeScript types
 * are derived from the same objects). Served under /api/v1.
 */
import { Type, type Static } from 'typebox'

/** Largest time accepted in a query parameter: 2100-01-01, ms since the epoch. */
const MAX_EPOCH_MS = 4_102_444_800_000

export const RunIdParams = Type.Object({
  runId: Type.String({ pattern: '^[A-Za-z0-9][A-Za-z0-9._:-]{0,63}$', description: 'run id: 1-64 characters from A-Z a-z 0-9 . _ : -' }),
})
export type RunIdParams = Static<typeof RunIdParams>

export const ReportQuery = Type.Object({
  format: Type.Optional(Type.Union([Type.Literal('json'), Type.Literal('text')], { description: 'json (default) or text (YCSB layout)' })),
})
export type ReportQuery = Static<typeof ReportQuery>

export const TimelineQuery = Type.Object({
  since: Type.Optional(Type.Integer({ minimum: 0, maximum: MAX_EPOCH_MS, description: `only windows starting at or after this time: ms since the Unix epoch, 0 to ${MAX_EPOCH_MS} (year 2100)` })),
})
export type TimelineQuery = Static<typeof TimelineQuery>

export const RunsQuery = Type.Object({
  limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 1000, default: 100 })),
})
export type RunsQuery = Static<typeof RunsQuery>

export const CompareQuery = Type.Object({
  baseline: Type.String({ pattern: '^[A-Za-z0-9][A-Za-z0-9._:-]{0,63}$', description: 'run id of the baseline (e.g. release A)' }),
  candidate: Type.String({ pattern: '^[A-Za-z0-9][A-Za-z0-9._:-]{0,63}$', description: 'run id of the candidate (e.g. release B)' }),
})
export type CompareQuery = Static<typeof CompareQuery>

export const SqlBody = Type.Object(
  {
    sql: Type.String({ minLength: 1, maxLength: 262_144, description: 'one SELECT (or WITH ... SELECT) over the benchstream database; an optional FORMAT clause returns text in that format' }),
    maxRows: Type.Optional(Type.Integer({ minimum: 1, maximum: 10_000_000, description: 'fewer rows than the server\'s cap (API_MAX_QUERY_ROWS)' })),
    format: Type.Optional(Type.String({ pattern: '^[A-Za-z][A-Za-z0-9_]{0,63}$', description: 'a ClickHouse output format (TSV, CSV, PrettyCompact, JSON, ...) when the query has no FORMAT clause: the answer is that text' })),
  },
  { additionalProperties: false },
)
export type SqlBody = Static<typeof SqlBody>

export const ErrorReply = Type.Object({
  statusCode: Type.Integer(),
  code: Type.String(),
  error: Type.String(),
  message: Type.String(),
})
export type ErrorReply = Static<typeof ErrorReply>

// ---------------------------------------------------------------- response shapes

/** One measurement of a report: an operation (`READ`) or its failures (`READ-FAILED`), YCSB's naming. */
export const Measurement = Type.Object({
  name: Type.String(),
  operations: Type.Integer(),
  averageLatencyUs: Type.Number(),
  minLatencyUs: Type.Number(),
  maxLatencyUs: Type.Number(),
  p50LatencyUs: Type.Number(),
  p90LatencyUs: Type.Number(),
  p95LatencyUs: Type.Number(),
  p99LatencyUs: Type.Number(),
  p999LatencyUs: Type.Number(),
  p9999LatencyUs: Type.Number(),
  /** Return=STATUS counts; only on the operation's own measurement, as YCSB does. */
  returns: Type.Record(Type.String(), Type.Integer()),
})
export type Measurement = Static<typeof Measurement>

/** A run's figures, merged over clients: what YCSB prints at the end. */
export const Report = Type.Object({
  runtimeMs: Type.Number(),
  operations: Type.Integer(),
  throughputOpsPerSec: Type.Number(),
  measurements: Type.Array(Measurement),
})
export type Report = Static<typeof Report>

/** One run, as its drivers announced it (ClickHouse view `runs`). */
export const RunInfo = Type.Object({
  run_id: Type.String(),
  started_at: Type.Union([Type.String(), Type.Null()]),
  ended_at: Type.Union([Type.String(), Type.Null()]),
  clients: Type.Integer(),
  clients_ended: Type.Integer(),
  threads: Type.Integer(),
  target: Type.Number(),
  labels: Type.Record(Type.String(), Type.String()),
  workload: Type.String(),
  binding: Type.String(),
  sent: Type.Record(Type.String(), Type.Integer()),
  undelivered: Type.Integer(),
  runtime_ms: Type.Number(),
  /** The run's window length, registered by the first processor that saw it; null before any data. */
  window_ms: Type.Union([Type.Integer(), Type.Null()]),
  /** Group of repeated runs this one belongs to ('' for none) and its repetition (0 for none). */
  group_id: Type.String(),
  repeat: Type.Integer(),
  /** The workload properties the run used, as its first client announced them. */
  properties: Type.Record(Type.String(), Type.String()),
  /** Largest delay of an operation's start behind its schedule over all clients, ms (0 when unthrottled). */
  schedule_lag_max_ms: Type.Number(),
  /** Times a client fell behind its schedule by more than its bound; above 0 the run did not hold its target. */
  behind_schedule_episodes: Type.Integer(),
})
export type RunInfo = Static<typeof RunInfo>

export const RunReport = Type.Object({
  ...Report.properties,
  runId: Type.String(),
  run: Type.Optional(RunInfo),
  /** Per operation: cache hit ratio (hits / (hits + misses)), null when unknown. */
  cacheHitRatio: Type.Record(Type.String(), Type.Union([Type.Number(), Type.Null()])),
  /** The datastore's own cache counters over the run, per sampler source (redis, postgres, hbase, ...): growth summed over clients. */
  serverCache: Type.Array(Type.Object({
    source: Type.String(),
    hits: Type.Number(),
    misses: Type.Number(),
    ratio: Type.Union([Type.Number(), Type.Null()]),
  })),
  /** Events the drivers said they sent (from their end records) vs. events counted into windows. */
  completeness: Type.Object({ sent: Type.Union([Type.Integer(), Type.Null()]), counted: Type.Integer(), undelivered: Type.Integer() }),
  lateEvents: Type.Integer(),
})
export type RunReport = Static<typeof RunReport>

/** Merged figures of one window and operation. */
export const TimelinePoint = Type.Object({
  /** Window start, ms since epoch. */
  t: Type.Integer(),
  op: Type.String(),
  /** Operations per second in the window. */
  ops: Type.Number(),
  errors: Type.Number(),
  p50: Type.Number(),
  p99: Type.Number(),
  /** p99 of intended latency (from the scheduled start; equal to p99's basis when unthrottled). */
  intendedP99: Type.Number(),
  hits: Type.Integer(),
  misses: Type.Integer(),
})
export type TimelinePoint = Static<typeof TimelinePoint>

const ComparisonSide = Type.Object({
  throughputOpsPerSec: Type.Number(),
  averageLatencyUs: Type.Number(),
  /** null where the figure is undefined (OVERALL has no merged percentile). */
  p95LatencyUs: Type.Union([Type.Number(), Type.Null()]),
  p99LatencyUs: Type.Union([Type.Number(), Type.Null()]),
})
export type ComparisonSide = Static<typeof ComparisonSide>

const Change = Type.Union([Type.Number(), Type.Null()])
export const Comparison = Type.Object({
  baseline: Type.String(),
  candidate: Type.String(),
  rows: Type.Array(Type.Object({
    /** Measurement name (READ, READ-FAILED, ...) or OVERALL. */
    name: Type.String(),
    baseline: Type.Union([ComparisonSide, Type.Null()]),
    candidate: Type.Union([ComparisonSide, Type.Null()]),
    /** Change of candidate against baseline in percent (null when either side is missing or zero). */
    changePercent: Type.Object({ throughput: Change, averageLatency: Change, p95Latency: Change, p99Latency: Change }),
  })),
})
export type Comparison = Static<typeof Comparison>

// ---------------------------------------------------------------- live view (GET /, Server-Sent Events)

const NullableNumber = Type.Union([Type.Number(), Type.Null()])

export const LiveQuery = Type.Object({
  baseline: Type.Optional(Type.String({ pattern: '^[A-Za-z0-9][A-Za-z0-9._:-]{0,63}$', description: 'a second run whose throughput and p99 are overlaid, aligned on seconds since each run\'s start' })),
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
  /** Datastore-side cache-hit ratio per source: Δhits / (Δhits + Δmisses) of its cumulative counters; null when no sample fell into the window. */
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
  /** Start of the newest window holding any data (ms): it and those before it back to completeBeforeMs are still filling. */
  newestWindowMs: Type.Union([Type.Integer(), Type.Null()]),
  /** The run has ended and every window, the last one included, has been sent: nothing more will come. */
  final: Type.Boolean(),
})
export type LiveFrontier = Static<typeof LiveFrontier>

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
})
export type LiveRunItem = Static<typeof LiveRunItem>
