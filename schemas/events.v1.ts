/**
 * Benchstream event schema, version 1: the single source of the shapes that
 * drivers put on Kafka and the processor takes off it.
 *
 * One Kafka message carries one *record batch* of one *kind*. Every message
 * starts with the same 4-byte header so a consumer can route or reject it
 * before decoding anything else:
 *
 *   offset 0  u8  0x42 'B'   magic
 *   offset 1  u8  0x53 'S'   magic
 *   offset 2  u8  version    = SCHEMA_VERSION (1); anything else goes to the dead-letter topic
 *   offset 3  u8  kind       one of RECORD_KIND
 *
 * The body of each kind is described next to its type below; the codec lives
 * in services/core/codec/ (event-codec.ts decodes, ops-batch-writer.ts and
 * record-encoders.ts write) and follows this file, nothing else.
 * All integers are little-endian; "varint" is unsigned LEB128 and "zigzag" is
 * a signed varint (protobuf style).
 */

import { Type, type Static } from 'typebox'

export const SCHEMA_VERSION = 1
export const MAGIC_0 = 0x42
export const MAGIC_1 = 0x53

/** Kinds of record batch. Values are wire codes; never renumber. */
export const RECORD_KIND = {
  /** Per-operation latency events (the main stream). */
  OPS: 1,
  /** Pre-aggregated interval histograms (from YCSB/HdrHistogram interval logs). */
  INTERVAL_HISTOGRAM: 2,
  /** Run lifecycle: a driver announcing a run start or end (JSON body). */
  RUN_LIFECYCLE: 3,
  /** Server-side metric samples (cache hits/misses from the datastore; JSON body). */
  SERVER_METRICS: 4,
  /** CPU (or wall-clock) profile samples of a run: folded stacks with counts over a time slice (JSON body). */
  PROFILE: 5,
  /**
   * A final report as an old tool printed it (YCSB's text or JSON exporters): figures reported, not computed here (JSON
   * body).
   */
  SUMMARY_REPORT: 6,
} as const
/** @public The wire codes, as a type (part of the schema's description). */
export type RecordKind = (typeof RECORD_KIND)[keyof typeof RECORD_KIND]

/** YCSB operation names, with their wire codes. */
export const OPERATIONS = ['READ', 'UPDATE', 'INSERT', 'SCAN', 'READ-MODIFY-WRITE', 'DELETE'] as const
export type Operation = (typeof OPERATIONS)[number]
// Wire code of an operation: its index in OPERATIONS plus one (0 is never valid).

/**
 * Outcome of an operation. OK or an error class; the names are YCSB's Status
 * names so reports read the same (`Return=OK`, `Return=NOT_FOUND`).
 */
export const STATUSES = [
  'OK',
  'ERROR',
  'NOT_FOUND',
  'NOT_IMPLEMENTED',
  'UNEXPECTED_STATE',
  'BAD_REQUEST',
  'FORBIDDEN',
  'SERVICE_UNAVAILABLE',
  'TIMEOUT',
] as const
export type Status = (typeof STATUSES)[number]

/** Cache outcome of an operation, as far as the client can know it. */
export const CACHE_OUTCOMES = ['UNKNOWN', 'HIT', 'MISS'] as const
export type CacheOutcome = (typeof CACHE_OUTCOMES)[number]

/** Identifiers (run id, client id, label keys) are short and safe to put in SQL, URLs and metric labels. */
export const ID_PATTERN = /^[A-Za-z0-9][A-Za-z0-9._:-]{0,63}$/
export const ID_RULE = '1-64 characters from A-Z a-z 0-9 . _ : -, starting with a letter or digit'

/** Largest latency accepted: one hour in microseconds (the histogram's documented range). */
export const MAX_LATENCY_US = 3_600_000_000
/** Largest thread index accepted. */
export const MAX_THREAD = 65_535
/** Largest payload size accepted for one operation, in bytes (1 GiB). */
export const MAX_BYTES = 1_073_741_824

/**
 * One operation, as measured by a driver.
 *
 * | field        | unit / range                         | meaning |
 * |--------------|--------------------------------------|---------|
 * | runId        | ID_PATTERN                           | the benchmark run; several clients share it |
 * | clientId     | ID_PATTERN                           | the driver process (one machine, one YCSB client) |
 * | thread       | 0..MAX_THREAD                        | worker index inside the client |
 * | op           | OPERATIONS                           | YCSB operation |
 * | startUs      | µs since the Unix epoch              | when the operation was actually issued (event time) |
 * | latencyUs    | 0..MAX_LATENCY_US µs                 | measured service time: issue to completion |
 * | intendedUs | latencyUs..MAX_LATENCY_US µs | from the *scheduled* start to completion; equals latencyUs when
 * unthrottled. Corrects coordinated omission (YCSB `measurement.interval=both`) |
 * | status       | STATUSES                             | OK or the error class |
 * | cache        | CACHE_OUTCOMES                       | HIT/MISS where the binding knows, else UNKNOWN |
 * | bytes        | 0..MAX_BYTES                         | payload bytes read or written |
 */
export interface OpEvent {
  runId: string
  clientId: string
  thread: number
  op: Operation
  startUs: number
  latencyUs: number
  intendedUs: number
  status: Status
  cache: CacheOutcome
  bytes: number
}

/**
 * OPS body (kind 1). Run and client are written once per batch, the events as
 * rows of small varints relative to a base time, about 9-12 bytes an event:
 *
 *   u8 len + utf8   runId
 *   u8 len + utf8   clientId
 *   f64             baseStartUs (µs since epoch; every startUs is base + delta)
 *   varint          event count N
 *   N times:
 *     varint        thread
 *     u8            (opCode << 4) | (cache index << 2)      low 2 bits reserved, must be 0
 *     u8            status index
 *     zigzag        startUs - baseStartUs
 *     varint        latencyUs
 *     varint        intendedUs - latencyUs                    (never negative)
 *     varint        bytes
 */
export interface OpsBatch {
  kind: typeof RECORD_KIND.OPS
  runId: string
  clientId: string
  events: OpEvent[]
}

/**
 * Number of buckets of Benchstream's histogram layout: bucket indexes on the
 * wire are 0..HISTOGRAM_BUCKETS-1 (layout: services/core/stats/histogram.ts,
 * 128 linear sub-buckets per power of two from 1 µs to 2^32 µs).
 */
export const HISTOGRAM_BUCKETS = 3328

/**
 * INTERVAL_HISTOGRAM body (kind 2): one operation's latencies over one
 * interval, already bucketed in Benchstream's histogram layout
 * (services/core/stats/histogram.ts). Adapters convert HdrHistogram interval logs
 * into this; the processor merges it into the same windows as OPS events.
 *
 *   u8 len + utf8   runId
 *   u8 len + utf8   clientId
 *   u8              opCode
 *   u8              status index
 *   f64             intervalStartUs
 *   varint          intervalLengthUs
 *   varint          bucket count B
 *   B times: varint bucket index, varint count
 *   optional, to the end of the message (absent in records written before it existed):
 *     u8            INTERVAL_SECTION.INTENDED (1)
 *     varint        bucket count I
 *     I times: varint bucket index, varint count
 *
 * Without the intended section the intended latencies are the measured ones
 * (an unthrottled client). With it, they are its buckets: YCSB's
 * `Intended-READ` log of the same interval (`measurement.interval=both`),
 * latency from the scheduled start. Its total may differ from the measured
 * one by the operations that crossed the interval's edge between the two
 * recordings; over a run the totals are equal.
 */
export interface IntervalHistogram {
  kind: typeof RECORD_KIND.INTERVAL_HISTOGRAM
  runId: string
  clientId: string
  op: Operation
  status: Status
  intervalStartUs: number
  intervalLengthUs: number
  buckets: Array<[index: number, count: number]>
  /** Intended latencies of the same interval; absent = equal to `buckets`. */
  intended?: Array<[index: number, count: number]>
}

/** Tags of the optional sections that may follow an INTERVAL_HISTOGRAM's buckets. Wire codes; never renumber. */
export const INTERVAL_SECTION = {
  /** The intended-latency histogram of the same interval. */
  INTENDED: 1,
} as const

/** Largest JSON record (RUN_LIFECYCLE, SERVER_METRICS) accepted, bytes of the whole message. */
export const MAX_JSON_RECORD_BYTES = 256 * 1024
/** Longest label value, workload property value, and similar free text. */
export const MAX_TEXT = 4096
const id = (description: string) => Type.String({ pattern: ID_PATTERN.source, description })
const count = (description: string) => Type.Integer({ minimum: 0, maximum: Number.MAX_SAFE_INTEGER, description })

/**
 * RUN_LIFECYCLE body (kind 3): UTF-8 JSON of RunLifecycle. A driver sends
 * `start` before its first event and `end` after its last event was
 * acknowledged by Kafka, carrying what it sent so that anyone can check the
 * pipeline's totals against the driver's. Every field is bounded: the
 * processor dead-letters a record outside these bounds (reason
 * invalid_record) instead of letting it reach ClickHouse.
 */
export const RunLifecycleBody = Type.Object(
  {
    phase: Type.Enum(['start', 'end'], { description: 'start or end' }),
    runId: id(ID_RULE),
    clientId: id(ID_RULE),
    atUs: Type.Number({
      description:
        'µs since the Unix epoch, inside the accepted event-time range (MAX_EVENT_AGE_S, MAX_EVENT_FUTURE_S)',
    }),
    labels: Type.Optional(
      Type.Record(Type.String({ pattern: ID_PATTERN.source }), Type.String({ maxLength: 256 }), {
        maxProperties: 64,
        description: 'at most 64 labels: key of ' + ID_RULE + ', value of at most 256 characters',
      }),
    ),
    workload: Type.Optional(Type.String({ maxLength: 1024, description: 'workload name, at most 1024 characters' })),
    binding: Type.Optional(Type.String({ maxLength: 256, description: 'binding name, at most 256 characters' })),
    threads: Type.Optional(
      Type.Integer({ minimum: 0, maximum: 1_000_000, description: 'an integer from 0 to 1000000' }),
    ),
    target: Type.Optional(
      Type.Number({ minimum: 0, maximum: 1e9, description: 'ops/s of this client, 0 = unthrottled, at most 1e9' }),
    ),
    /** Group of repetitions this run belongs to (release comparisons use repeated runs as samples). */
    group: Type.Optional(id('a group name: ' + ID_RULE)),
    /** 1-based repetition of the run inside its group. */
    repeat: Type.Optional(Type.Integer({ minimum: 1, maximum: 100_000, description: 'an integer from 1 to 100000' })),
    /** The workload properties the run used (recordcount, threadcount, ...), to tell comparable runs apart. */
    properties: Type.Optional(
      Type.Record(Type.String({ maxLength: 256 }), Type.String({ maxLength: MAX_TEXT }), {
        maxProperties: 512,
        description: 'at most 512 properties, values of at most 4096 characters',
      }),
    ),
    sent: Type.Optional(
      Type.Record(Type.String({ pattern: '^[A-Z-]{1,32}/[A-Z_]{1,32}$' }), count('events'), {
        maxProperties: 256,
        description: 'counts by OP/STATUS, at most 256 entries',
      }),
    ),
    undelivered: Type.Optional(count('events the driver could not deliver')),
    runtimeMs: Type.Optional(
      Type.Number({ minimum: 0, maximum: 10 * 365 * 86400e3, description: 'run time in ms, at most ten years' }),
    ),
    /** On `end`, with a target: the largest delay of an operation's start behind its schedule, ms. */
    scheduleLagMaxMs: Type.Optional(
      Type.Number({ minimum: 0, maximum: 10 * 365 * 86400e3, description: 'ms, at most ten years' }),
    ),
    /** On `end`, with a target: how many times the client fell behind its schedule by more than its bound. */
    behindScheduleEpisodes: Type.Optional(count('episodes')),
    /** On `start`: how many clients the run has (an experiment says; a client missing at the end is then seen). */
    expectedClients: Type.Optional(
      Type.Integer({ minimum: 1, maximum: 1024, description: 'an integer from 1 to 1024' }),
    ),
    /** On `start`: this machine's clock minus the broker's, as its agent measured it, ms. */
    clockOffsetMs: Type.Optional(
      Type.Number({ minimum: -86_400_000, maximum: 86_400_000, description: 'ms, within a day either way' }),
    ),
    /** On `end`: when the client's first operation started, µs since the epoch (the start skew between clients). */
    firstOpUs: Type.Optional(Type.Number({ minimum: 0, maximum: 1e17, description: 'µs since the Unix epoch' })),
  },
  { additionalProperties: true },
)

/** What the processor keeps of a RUN_LIFECYCLE record (defaults filled in). */
export interface RunLifecycle {
  kind: typeof RECORD_KIND.RUN_LIFECYCLE
  phase: 'start' | 'end'
  runId: string
  clientId: string
  /** µs since epoch of the phase. */
  atUs: number
  labels: Record<string, string>
  workload: string
  binding: string
  threads: number
  /** Target ops/s of this client, 0 = unthrottled. */
  target: number
  group?: string
  repeat?: number
  properties?: Record<string, string>
  /** On `end`: operations whose events Kafka acknowledged, by operation and status (`READ/OK`). */
  sent?: Record<string, number>
  /** On `end`: events the driver measured but could not deliver (buffer full, broker down). */
  undelivered?: number
  /** On `end`: the driver's measured run time in ms. */
  runtimeMs?: number
  /** On `end`: the largest delay of an operation's start behind its schedule, ms (0 unthrottled). */
  scheduleLagMaxMs?: number
  /** On `end`: times the client fell behind its schedule by more than its bound. */
  behindScheduleEpisodes?: number
  /** On `start`: the run's number of clients, when a coordinator knows it. */
  expectedClients?: number
  /** On `start`: this machine's clock offset from the broker's, ms (an experiment's agent measured it). */
  clockOffsetMs?: number
  /** On `end`: µs since epoch of the client's first operation. */
  firstOpUs?: number
}

/**
 * SERVER_METRICS body (kind 4): UTF-8 JSON of ServerMetrics: cumulative
 * counters sampled from the datastore (e.g. Redis keyspace_hits, PostgreSQL
 * blks_hit, HBase blockCacheHitCount) at `atUs`.
 */
export const ServerMetricsBody = Type.Object(
  {
    runId: id(ID_RULE),
    clientId: id(ID_RULE),
    atUs: Type.Number({ description: 'µs since the Unix epoch, inside the accepted event-time range' }),
    source: Type.String({ maxLength: 64, description: 'the metric source, at most 64 characters' }),
    values: Type.Record(Type.String({ pattern: '^[A-Za-z0-9_.:-]{1,128}$' }), Type.Number(), {
      maxProperties: 256,
      description: 'at most 256 named numbers',
    }),
  },
  { additionalProperties: true },
)

export interface ServerMetrics {
  kind: typeof RECORD_KIND.SERVER_METRICS
  runId: string
  clientId: string
  atUs: number
  source: string
  values: Record<string, number>
}

/**
 * Largest PROFILE record, bytes of the whole message: under Kafka's default message.max.bytes (1 MiB) with room for the
 * batch around it.
 */
export const MAX_PROFILE_RECORD_BYTES = 768 * 1024
/** Longest frame name (a function, a C++ template instance). */
export const MAX_FRAME_CHARS = 4096
/** Most frames in one stack (async-profiler's default jstackdepth is 2048). */
export const MAX_STACK_DEPTH = 4096
/** Most distinct frame names, and most stacks, in one PROFILE record or upload. */
export const MAX_PROFILE_FRAMES = 200_000
export const MAX_PROFILE_STACKS = 200_000
/** Longest time slice one PROFILE record covers: one day, in µs. */
export const MAX_PROFILE_SPAN_US = 86_400e6
/** Frame names: anything but the folded format's separators (';' between frames, a line break between stacks). */
export const FRAME_PATTERN = '^[^;\\n\\r]*$'

/**
 * PROFILE body (kind 5): UTF-8 JSON of ProfileRecordBody. One record holds
 * the samples of one profile (a host/process of a run, e.g. an async-profiler
 * capture of a broker) over one time slice [fromUs, toUs): a table of frame
 * names and the stacks as rows of indexes into it, root first, leaf last,
 * each led by its sample count. A profile larger than one record, or
 * streamed slice by slice, is several records with the same profileId;
 * their counts add up. Bounded like the other JSON kinds: the processor
 * dead-letters a record outside these bounds (invalid_record) or larger than
 * MAX_PROFILE_RECORD_BYTES (record_too_large).
 */
export const ProfileRecordBody = Type.Object(
  {
    profileId: id('a profile id: ' + ID_RULE + '; every record of one profile carries the same'),
    runId: id(ID_RULE),
    labels: Type.Optional(
      Type.Record(Type.String({ pattern: ID_PATTERN.source }), Type.String({ maxLength: 256 }), {
        maxProperties: 64,
        description: 'at most 64 labels (host, process, ...): key of ' + ID_RULE + ', value of at most 256 characters',
      }),
    ),
    fromUs: Type.Number({
      description:
        'start of the time slice the samples cover: µs since the Unix epoch, inside the accepted event-time range',
    }),
    toUs: Type.Number({
      description: 'end of the time slice: µs since the Unix epoch, at least fromUs and at most one day after it',
    }),
    event: Type.String({
      pattern: '^[A-Za-z0-9_.:-]{1,64}$',
      description:
        'what one sample stands for: cpu, itimer, ctimer, wall, or a perf event such as perf:cpu-clock ' +
        '(1-64 characters from A-Z a-z 0-9 _ . : -)',
    }),
    intervalNs: Type.Optional(
      Type.Integer({
        minimum: 0,
        maximum: 3_600_000_000_000,
        description: 'sampling interval in ns, 0 = unknown; at most one hour',
      }),
    ),
    source: Type.Optional(
      Type.String({
        maxLength: 256,
        description: 'what wrote the stacks (async-profiler 4.6, perf script, ...), at most 256 characters',
      }),
    ),
    cpuMs: Type.Optional(
      Type.Number({
        minimum: 0,
        maximum: 1e12,
        description: 'CPU time the profiled process used over the slice, ms (to turn samples into time)',
      }),
    ),
    frames: Type.Array(Type.String({ maxLength: MAX_FRAME_CHARS, pattern: FRAME_PATTERN }), {
      maxItems: MAX_PROFILE_FRAMES,
      description:
        `distinct frame names, at most ${MAX_PROFILE_FRAMES}, each of at most ${MAX_FRAME_CHARS} characters ` +
        `without ; or line breaks`,
    }),
    stacks: Type.Array(
      Type.Array(Type.Integer({ minimum: 0, maximum: Number.MAX_SAFE_INTEGER }), {
        minItems: 2,
        maxItems: MAX_STACK_DEPTH + 1,
      }),
      {
        maxItems: MAX_PROFILE_STACKS,
        description:
          `at most ${MAX_PROFILE_STACKS} stacks, each [samples, root frame index, ..., leaf frame index] ` +
          `with 1 to ${MAX_STACK_DEPTH} frames`,
      },
    ),
  },
  { additionalProperties: true },
)

/** What the processor keeps of a PROFILE record (defaults filled in). */
export interface ProfileRecord {
  kind: typeof RECORD_KIND.PROFILE
  profileId: string
  runId: string
  labels: Record<string, string>
  fromUs: number
  toUs: number
  event: string
  /** Sampling interval in ns, 0 = unknown. */
  intervalNs: number
  source: string
  cpuMs?: number
  frames: string[]
  /** [samples, frame index of the root, ..., of the leaf]; samples >= 1, indexes < frames.length. */
  stacks: number[][]
}

/** Most measurements in one SUMMARY_REPORT record (YCSB prints a dozen; a binding's own names add a few). */
export const MAX_SUMMARY_MEASUREMENTS = 256
/** Most percentiles of one measurement (hdrhistogram.percentiles lists them). */
export const MAX_SUMMARY_PERCENTILES = 64
const latencyFigure = (description: string) => Type.Optional(Type.Number({ minimum: 0, maximum: 1e15, description }))

/**
 * SUMMARY_REPORT body (kind 6): UTF-8 JSON of SummaryReportBody. One client's
 * final report as YCSB printed it (text exporter, JSON exporters, or the
 * report after raw data), or one client of an HBase PerformanceEvaluation
 * test as PE printed it (format `pe`), every figure *reported*, not computed by
 * Benchstream: its percentiles cannot be merged with other clients' (the p99
 * of a union is not a function of the parts' p99s), so they are stored per
 * client. `atUs` is when the report was imported (an old report carries no
 * time of its own), so old reports pass the event-age limit.
 */
export const SummaryReportBody = Type.Object(
  {
    runId: id(ID_RULE),
    clientId: id(ID_RULE),
    atUs: Type.Number({
      description: 'µs since the Unix epoch when the report was imported, inside the accepted event-time range',
    }),
    source: Type.String({ maxLength: 1024, description: 'the file the report came from, at most 1024 characters' }),
    format: Type.Enum(['text', 'json-array', 'json-objects', 'raw', 'pe'], {
      description: "text, json-array, json-objects or raw (YCSB's), or pe (HBase PerformanceEvaluation's output)",
    }),
    runtimeMs: Type.Optional(
      Type.Number({ minimum: 0, maximum: 10 * 365 * 86400e3, description: '[OVERALL] RunTime(ms), at most ten years' }),
    ),
    throughputOpsPerSec: Type.Optional(
      Type.Number({ minimum: 0, maximum: 1e12, description: '[OVERALL] Throughput(ops/sec)' }),
    ),
    measurements: Type.Array(
      Type.Object({
        name: Type.String({
          minLength: 1,
          maxLength: 128,
          description: 'the measurement as printed: READ, Intended-UPDATE, READ-FAILED, CLEANUP',
        }),
        kind: Type.Enum(['operation', 'cleanup', 'other'], {
          description: 'operation, cleanup (never counted as operations) or other (a name no YCSB core code writes)',
        }),
        op: Type.String({ maxLength: 32, description: 'the operation for kind operation, else empty' }),
        latency: Type.Enum(['measured', 'intended'], {
          description: 'measured, or intended (from the scheduled start)',
        }),
        status: Type.Enum([...STATUSES], { description: 'Benchstream status of the measurement' }),
        operations: Type.Optional(count('operations')),
        averageUs: latencyFigure('µs'),
        minUs: latencyFigure('µs'),
        maxUs: latencyFigure('µs'),
        percentiles: Type.Array(
          Type.Object({
            percentile: Type.Number({ exclusiveMinimum: 0, maximum: 100, description: 'in percent' }),
            valueUs: Type.Number({ minimum: 0, maximum: 1e15, description: 'µs' }),
            unit: Type.Enum(['us', 'ms'], { description: 'unit printed: ms means a resolution of 1000 µs' }),
          }),
          { maxItems: MAX_SUMMARY_PERCENTILES, description: `at most ${MAX_SUMMARY_PERCENTILES}` },
        ),
        returns: Type.Record(Type.String({ pattern: '^[A-Za-z0-9_-]{1,64}$' }), count('operations'), {
          maxProperties: 32,
          description: 'Return=STATUS counts, at most 32',
        }),
      }),
      { maxItems: MAX_SUMMARY_MEASUREMENTS, description: `at most ${MAX_SUMMARY_MEASUREMENTS} measurements` },
    ),
  },
  { additionalProperties: true },
)
export type SummaryReportBody = Static<typeof SummaryReportBody>

/** What the processor keeps of a SUMMARY_REPORT record. */
export interface SummaryReportRecord extends SummaryReportBody {
  kind: typeof RECORD_KIND.SUMMARY_REPORT
}

/** @public Every record kind a message can carry. */
export type RecordBatch =
  | OpsBatch
  | IntervalHistogram
  | RunLifecycle
  | ServerMetrics
  | ProfileRecord
  | SummaryReportRecord
