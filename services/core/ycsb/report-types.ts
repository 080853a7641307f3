/**
 * What Benchstream reads from real YCSB's files, one typed result per file:
 * `summary` (figures as YCSB printed them), `raw` (one latency per operation)
 * or `intervals` (an HdrHistogram log in our buckets). docs/design/ycsb-files.md.
 */
import type { Operation, Status } from '../../../schemas/events.v1.js'
import type { HdrLog } from './hdr-log.js'

/** The formats detectFormat tells apart. */
export const YCSB_FORMATS = ['text', 'json-array', 'json-objects', 'raw', 'hdr-log'] as const
export type YcsbFormat = (typeof YCSB_FORMATS)[number]

/**
 * A YCSB measurement name, taken apart. YCSB composes it as
 * `[Hdr|Raw|Bucket][Intended-]OP[-STATUS]` (Measurements, DBWrapper.measure).
 */
export interface MeasurementName {
  /** As YCSB wrote it: `READ`, `Intended-UPDATE`, `HdrREAD`, `READ-FAILED`, `CLEANUP`. */
  name: string
  /**
   * - `operation`: one of Benchstream's OPERATIONS.
   * - `cleanup`: YCSB's `CLEANUP`, the time of each client thread's
   *   DB.cleanup(). Not a workload operation (YCSB's own Throughput leaves it
   *   out too): reported, kept out of operation counts and throughput.
   * - `other`: a name no YCSB core code writes (a binding's own); kept as written.
   */
  kind: 'operation' | 'cleanup' | 'other'
  /** The operation when kind is `operation`. */
  op: Operation | undefined
  /** `intended`: `Intended-` names, from the intended (scheduled) start, YCSB's coordinated-omission correction. */
  latency: 'measured' | 'intended'
  /** YCSB's status suffix (`READ-NOT_FOUND` -> `NOT_FOUND`, `READ-FAILED` -> `FAILED`); undefined for success. */
  ycsbStatus: string | undefined
  /**
   * Benchstream's status: OK without a suffix, the suffix when Benchstream has it, else ERROR (`FAILED` records no
   * error class).
   */
  status: Status
  /** Which half of a two-in-one measurement (`measurementtype=hdrhistogram+raw` / `hdrhistogram+histogram`) this is. */
  part: 'Hdr' | 'Raw' | 'Bucket' | undefined
}

/**
 * Which of YCSB's measurement types wrote a summary, as far as its lines tell:
 * it decides how the printed percentiles were computed (rank rules of
 * `hdrhistogram`, `raw` and `histogram`; none for `timeseries`):
 * docs/design/ycsb-files.md#what-a-file-becomes-report-typests.
 */
export type SummaryWriter = 'hdrhistogram' | 'raw' | 'histogram' | 'timeseries' | 'unknown'

/** A percentile as YCSB printed it. */
export interface ReportedPercentile {
  /** In percent, as labelled: 95, 99.9. */
  percentile: number
  /** In µs; converted from ms when `unit` is `ms`. */
  valueUs: number
  /**
   * Unit of the printed figure. `ms` (`95thPercentileLatency(ms)`, YCSB
   * 0.1.0 to 0.3.1) means whole milliseconds, so a resolution of 1000 µs;
   * and 0.2.0 to 0.3.1's HdrHistogram measurement printed its p90 under the
   * name 95th.
   */
  unit: 'us' | 'ms'
  /** The label as written: `95thPercentileLatency(us)`, `p99.9`. */
  label: string
  /** 1-based line of the record. */
  line: number
}

/** One measurement of a summary report: one `[NAME]` section. */
export interface SummaryMeasurement {
  name: MeasurementName
  writer: SummaryWriter
  /** `Operations` (histogram types) or `Total Operations` (raw). */
  operations: number | undefined
  /** In µs. HdrHistogram's average is over each value's bucket midpoint; raw's is exact. */
  averageUs: number | undefined
  minUs: number | undefined
  maxUs: number | undefined
  /** `LatencyVariance(us)` of the `histogram` measurement type. */
  varianceUs2: number | undefined
  /** In the order printed. */
  percentiles: ReportedPercentile[]
  /** `Return=STATUS` counts, YCSB status names as written (`OK`, `NOT_FOUND`; `0`/`-1` in YCSB before 0.4.0). */
  returns: Record<string, number>
  /**
   * Lines keyed by a number: the `histogram` type's per-millisecond bucket
   * counts (`[READ], 3, 120`: 120 operations in [3, 4) ms; `>1000` the
   * overflow) or the `timeseries` type's points (`[READ], <ms>, <average µs>`).
   */
  series: Array<{ key: string; value: number; line: number }>
  /** Anything else printed under this name, kept as written. */
  other: Array<{ measurement: string; value: number; line: number }>
}

/**
 * Garbage-collection figures YCSB prints (`[TOTAL_GCs]`, `[TOTAL_GC_TIME]`, `[TOTAL_GC_TIME_%]`, and per collector).
 */
export interface GcFigures {
  count: number | undefined
  timeMs: number | undefined
  timePercent: number | undefined
  /** Per collector, by the name YCSB printed (spaces are underscores: `G1_Young_Generation`). */
  collectors: Array<{
    name: string
    count: number | undefined
    timeMs: number | undefined
    timePercent: number | undefined
  }>
}

/** A final report: YCSB's own figures, nothing computed. */
export interface SummaryReport {
  kind: 'summary'
  format: 'text' | 'json-array' | 'json-objects'
  /** The file, for messages. */
  source: string
  /** Every figure is as YCSB printed it (reported, not computed by Benchstream). */
  origin: 'reported'
  runtimeMs: number | undefined
  throughputOpsPerSec: number | undefined
  gc: GcFigures
  /** In the order printed. */
  measurements: SummaryMeasurement[]
  /**
   * Operations of the run: `Operations` added over the measured (not
   * Intended-) operation measurements, failed ones (`READ-FAILED`) included;
   * CLEANUP and names no YCSB core code writes left out; of a two-in-one
   * measurement only the Hdr half, so nothing counts twice.
   */
  operations: number
  /** `[OVERALL]` (or other) records that are not RunTime/Throughput, kept as written. */
  other: Array<{ metric: string; measurement: string; value: number; line: number }>
  /** Non-empty lines that hold no record (YCSB's chatter, a mail's words around a pasted report). */
  ignoredLines: number
}

/** The latencies of one measurement of a raw file, one entry per operation, in the order YCSB wrote them. */
export interface RawSeries {
  name: MeasurementName
  /** Line of the `NAME latency raw data: ...` header, or of the first data line when there is none. */
  line: number
  count: number
  /**
   * `timestamp(ms)` as written: OneMeasurementRaw stamps each point with
   * System.currentTimeMillis() when DBWrapper records it, right after the
   * operation returned: the completion time, truncated to the ms.
   */
  endMs: Float64Array
  /** `latency(us)` as written: (end - start) in whole µs, from System.nanoTime(). */
  latencyUs: Float64Array
  /**
   * endMs * 1000 - latencyUs, µs since epoch. The issue time to within 1 ms
   * (the ms truncation of the end time puts the true start up to 1 ms later);
   * for an Intended- series it is the intended (scheduled) start.
   */
  startUs: Float64Array
}

/** A `measurementtype=raw` file: every latency, and YCSB's summary when the file holds it. */
export interface RawReport {
  kind: 'raw'
  format: 'raw'
  source: string
  series: RawSeries[]
  /** The report printed after the raw lines (raw to stdout); undefined for a `measurement.raw.output_file`. */
  summary: SummaryReport | undefined
}

/** One HdrHistogram interval log: one measurement of one client. */
export interface IntervalLogReport {
  kind: 'intervals'
  format: 'hdr-log'
  source: string
  name: MeasurementName
  /**
   * Where the name came from: the caller, the file name (`<prefix>READ.hdr`) or YCSB's `#[Logging for: READ]` comment.
   */
  nameFrom: 'given' | 'file-name' | 'log-comment'
  /**
   * What precedes the measurement name in the file name (YCSB's `hdrhistogram.output.path`), when the name came from
   * it.
   */
  prefix: string | undefined
  log: HdrLog
  /** Sum of the counts of every interval. */
  total: number
}

export type YcsbFile = SummaryReport | RawReport | IntervalLogReport

/** One measurement over the clients of a summary run. */
export interface SummaryRunMeasurement {
  name: MeasurementName
  /** Sum over the clients that report it. */
  operations: number
  /** Average of the clients' averages weighted by their operations: exact for the union. */
  averageUs: number | undefined
  minUs: number | undefined
  maxUs: number | undefined
  /** The client's own percentiles when there is one client; empty otherwise (see SummaryRun.percentilesPerClient). */
  percentiles: ReportedPercentile[]
  returns: Record<string, number>
  /** How many clients report this measurement. */
  clients: number
}

/**
 * A run known only from YCSB's final reports (text or JSON exporters), one
 * per client. Everything is as YCSB reported it, not computed from latencies.
 */
export interface SummaryRun {
  kind: 'summary-run'
  origin: 'reported'
  clients: Array<{ clientId: string; report: SummaryReport }>
  /**
   * True when the run has more than one client: percentiles cannot be merged
   * from summaries (the p99 of a union is not a function of each part's
   * p99), so they exist only per client, in `clients[i].report`. Counts,
   * throughput, averages (weighted by operations), min and max combine exactly.
   */
  percentilesPerClient: boolean
  /** The longest client RunTime(ms). */
  runtimeMs: number | undefined
  /** Sum of the clients' Throughput(ops/sec): the run's when the clients ran at the same time. */
  throughputOpsPerSec: number | undefined
  /** Operations of the run (each client's `operations`, added). */
  operations: number
  measurements: SummaryRunMeasurement[]
}
