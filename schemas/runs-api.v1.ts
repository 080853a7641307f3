/**
 * HTTP API shapes, version 1: runs. The run list (GET /api/v1/runs), a run as
 * its drivers announced it, its timeline of windows, and the figures per
 * operation and per window that compare, history and sweep read.
 */
import { Type, type Static } from 'typebox'
import { LABEL_TERM, MAX_EPOCH_MS, Nullable } from './api-common.v1.js'

export const TimelineQuery = Type.Object({
  since: Type.Optional(
    Type.Integer({
      minimum: 0,
      maximum: MAX_EPOCH_MS,
      description:
        `only windows starting at or after this time: ms since the Unix ` + `epoch, 0 to ${MAX_EPOCH_MS} (year 2100)`,
    }),
  ),
})
export type TimelineQuery = Static<typeof TimelineQuery>

const GROUP_NAME = {
  pattern: '^[A-Za-z0-9][A-Za-z0-9._:-]{0,63}$',
  description: 'a group name: 1-64 characters from A-Z a-z 0-9 . _ : -, starting with a letter or digit',
}

/** Unknown parameters are refused (a misspelt filter must not silently list every run). */
export const RunsQuery = Type.Object(
  {
    limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 1000, default: 100 })),
    group: Type.Optional(Type.String(GROUP_NAME)),
    label: Type.Optional(
      Type.Array(
        Type.String({ pattern: LABEL_TERM, description: 'key=value: runs whose label key has exactly this value' }),
        {
          maxItems: 32,
          description: 'label filters, all must match (repeat the parameter: label=version=1.2&label=host=a)',
        },
      ),
    ),
  },
  { additionalProperties: false },
)
export type RunsQuery = Static<typeof RunsQuery>

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
  /** Clients the run was to have (an experiment's runs say; 0 when unknown): fewer ended means incomplete. */
  expected_clients: Type.Integer(),
  /** Spread of the clients' first operations, ms; null with fewer than two clients or older drivers. */
  start_skew_ms: Type.Union([Type.Number(), Type.Null()]),
  /** The clients' largest clock offset from the broker's as their agents measured it, ms (absolute); null unknown. */
  clock_offset_max_ms: Type.Union([Type.Number(), Type.Null()]),
  /**
   * Where the run's figures come from: `events` (every operation, or YCSB's interval logs, through the windows) or
   * `reported` (a summary run: only YCSB's final reports, figures as YCSB printed them). Absent: events.
   */
  origin: Type.Optional(Type.Union([Type.Literal('events'), Type.Literal('reported')])),
})
export type RunInfo = Static<typeof RunInfo>

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

/**
 * One operation of a run (or OVERALL) as its report computes it, from the
 * ClickHouse view `run_op_figures`: percentiles from the merged histogram.
 * Latencies are over successful calls, in µs; ops/s of an operation counts
 * its successful calls, OVERALL every call (YCSB's [OVERALL] Throughput).
 */
export const OpFigures = Type.Object({
  op: Type.String(),
  operations: Type.Integer(),
  errors: Type.Integer(),
  opsPerSec: Type.Number(),
  errorRate: Nullable(Type.Number()),
  avgUs: Nullable(Type.Number()),
  minUs: Nullable(Type.Number()),
  maxUs: Nullable(Type.Number()),
  p50Us: Nullable(Type.Number()),
  p90Us: Nullable(Type.Number()),
  p95Us: Nullable(Type.Number()),
  p99Us: Nullable(Type.Number()),
  p999Us: Nullable(Type.Number()),
  p9999Us: Nullable(Type.Number()),
  /** Client-side hits / (hits + misses); null when the binding did not say. */
  cacheHitRatio: Nullable(Type.Number()),
})
export type OpFigures = Static<typeof OpFigures>

/** A run's figures per operation (OVERALL included) and the datastore's own cache-hit ratio per sampler source. */
export const RunFigures = Type.Object({
  runId: Type.String(),
  runtimeMs: Type.Number(),
  ops: Type.Array(OpFigures),
  serverCache: Type.Array(Type.Object({ source: Type.String(), ratio: Nullable(Type.Number()) })),
})
export type RunFigures = Static<typeof RunFigures>

/**
 * One window of a run and operation (view `op_window_figures`): tS is its offset from the run's first window, seconds.
 */
export const WindowFigures = Type.Object({
  runId: Type.String(),
  tS: Type.Number(),
  op: Type.String(),
  windowMs: Type.Integer(),
  operations: Type.Integer(),
  errors: Type.Integer(),
  opsPerSec: Type.Number(),
  errorRate: Nullable(Type.Number()),
  avgUs: Nullable(Type.Number()),
  maxUs: Nullable(Type.Number()),
  p50Us: Nullable(Type.Number()),
  p95Us: Nullable(Type.Number()),
  p99Us: Nullable(Type.Number()),
  p999Us: Nullable(Type.Number()),
  cacheHitRatio: Nullable(Type.Number()),
})
export type WindowFigures = Static<typeof WindowFigures>
