/**
 * HTTP API shapes, version 1: a run's report (GET /api/v1/runs/:id/report).
 * A run with events has its figures merged over clients as YCSB prints them
 * (Report), with completeness, caches and alerts (RunReport); a summary run
 * has its clients' final reports as printed (ReportedRunReport).
 */
import { Type, type Static } from 'typebox'
import { Alert } from './alerts-api.v1.js'
import { Nullable } from './api-common.v1.js'
import { RunInfo } from './runs-api.v1.js'

export const ReportQuery = Type.Object({
  format: Type.Optional(
    Type.Union([Type.Literal('json'), Type.Literal('text')], { description: 'json (default) or text (YCSB layout)' }),
  ),
})
export type ReportQuery = Static<typeof ReportQuery>

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

/** A percentile as YCSB printed it. */
export const ReportedPercentile = Type.Object({
  /** In percent: 95, 99.9. */
  percentile: Type.Number(),
  valueUs: Type.Number(),
  /** `ms`: printed in whole milliseconds (YCSB 0.1.0 to 0.3.1), so a resolution of 1000 µs. */
  unit: Type.Union([Type.Literal('us'), Type.Literal('ms')]),
})
export type ReportedPercentile = Static<typeof ReportedPercentile>

/** One `[NAME]` section of a YCSB report, figures as printed (µs). */
export const ReportedMeasurement = Type.Object({
  /** As printed: READ, READ-FAILED, Intended-UPDATE, CLEANUP, HdrREAD. */
  name: Type.String(),
  kind: Type.Union([Type.Literal('operation'), Type.Literal('cleanup'), Type.Literal('other')]),
  /** The operation for kind operation, else ''. */
  op: Type.String(),
  latency: Type.Union([Type.Literal('measured'), Type.Literal('intended')]),
  status: Type.String(),
  operations: Nullable(Type.Integer()),
  averageUs: Nullable(Type.Number()),
  minUs: Nullable(Type.Number()),
  maxUs: Nullable(Type.Number()),
  /** In ascending order of percentile. */
  percentiles: Type.Array(ReportedPercentile),
  /** `Return=STATUS` counts as printed (`OK`, `NOT_FOUND`; `0`/`-1` before YCSB 0.4.0). */
  returns: Type.Record(Type.String(), Type.Integer()),
})
export type ReportedMeasurement = Static<typeof ReportedMeasurement>

/** One client's final report as stored (table reported_measurements). */
export const ReportedClient = Type.Object({
  clientId: Type.String(),
  /** The file it was imported from. */
  source: Type.String(),
  /** text, json-array, json-objects or raw. */
  format: Type.String(),
  runtimeMs: Nullable(Type.Number()),
  throughputOpsPerSec: Nullable(Type.Number()),
  measurements: Type.Array(ReportedMeasurement),
})
export type ReportedClient = Static<typeof ReportedClient>

/** A datastore's cache counters over a run, per sampler source: growth summed over the clients that sampled. */
const ServerCacheFigure = Type.Object({
  source: Type.String(),
  hits: Type.Number(),
  misses: Type.Number(),
  ratio: Type.Union([Type.Number(), Type.Null()]),
})

/** The final reports of one run's clients. */
export const ReportedRun = Type.Object({
  runId: Type.String(),
  clients: Type.Array(ReportedClient),
  /**
   * The datastore's cache counters sampled beside the clients (`driver: pe`'s region server /jmx, as for a run with
   * events); absent when none were sampled.
   */
  serverCache: Type.Optional(Type.Array(ServerCacheFigure)),
})
export type ReportedRun = Static<typeof ReportedRun>

/**
 * The report of a summary run (GET /api/v1/runs/:id/report of a run with origin `reported`): YCSB's figures as
 * printed, merged over clients only where a merge is exact (counts and throughput add up, averages weigh by
 * operations, min of mins, max of maxes); percentiles only per client when there are several.
 */
export const ReportedRunReport = Type.Object({
  runId: Type.String(),
  origin: Type.Literal('reported'),
  run: Type.Optional(RunInfo),
  clients: Type.Integer(),
  /** The longest client's RunTime(ms). */
  runtimeMs: Nullable(Type.Number()),
  /** Sum of the clients' Throughput(ops/sec). */
  throughputOpsPerSec: Nullable(Type.Number()),
  /** Operations of the run: measured operations of every client (CLEANUP and the Raw half of two-in-one left out). */
  operations: Type.Integer(),
  /** Each measurement over the clients that report it; percentiles only when one client does. */
  measurements: Type.Array(Type.Object({ ...ReportedMeasurement.properties, clients: Type.Integer() })),
  /** True with more than one client: the percentiles are in perClient only. */
  percentilesPerClient: Type.Boolean(),
  perClient: Type.Array(ReportedClient),
  /** The datastore's cache counters over the run, when they were sampled (ReportedRun.serverCache). */
  serverCache: Type.Optional(Type.Array(ServerCacheFigure)),
})
export type ReportedRunReport = Static<typeof ReportedRunReport>

export const RunReport = Type.Object({
  ...Report.properties,
  runId: Type.String(),
  run: Type.Optional(RunInfo),
  /** Per operation: cache hit ratio (hits / (hits + misses)), null when unknown. */
  cacheHitRatio: Type.Record(Type.String(), Type.Union([Type.Number(), Type.Null()])),
  /**
   * The datastore's own cache counters over the run, per sampler source (redis, postgres, hbase, ...): growth summed
   * over clients.
   */
  serverCache: Type.Array(
    Type.Object({
      source: Type.String(),
      hits: Type.Number(),
      misses: Type.Number(),
      ratio: Type.Union([Type.Number(), Type.Null()]),
    }),
  ),
  /** Events the drivers said they sent (from their end records) vs. events counted into windows. */
  completeness: Type.Object({
    sent: Type.Union([Type.Integer(), Type.Null()]),
    counted: Type.Integer(),
    undelivered: Type.Integer(),
  }),
  lateEvents: Type.Integer(),
  /** The alerts the run raised (incidents, newest first), silenced ones included. */
  alerts: Type.Array(Alert),
})
export type RunReport = Static<typeof RunReport>
