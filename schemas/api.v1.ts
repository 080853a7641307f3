/**
 * HTTP API shapes, version 1 (JSON Schema via TypeBox; the TypeScript types
 * are derived from the same objects). Served under /api/v1.
 */
import { Type, type Static, type TSchema } from 'typebox'
import { ALERT_STATES, RULE_NAME_PATTERN, RULE_TYPES, SEVERITIES } from './alert-rules.v1.js'

/** Largest time accepted in a query parameter: 2100-01-01, ms since the epoch. */
const MAX_EPOCH_MS = 4_102_444_800_000

export const RunIdParams = Type.Object({
  runId: Type.String({
    pattern: '^[A-Za-z0-9][A-Za-z0-9._:-]{0,63}$',
    description: 'run id: 1-64 characters from A-Z a-z 0-9 . _ : -',
  }),
})
export type RunIdParams = Static<typeof RunIdParams>

export const ReportQuery = Type.Object({
  format: Type.Optional(
    Type.Union([Type.Literal('json'), Type.Literal('text')], { description: 'json (default) or text (YCSB layout)' }),
  ),
})
export type ReportQuery = Static<typeof ReportQuery>

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

/** A label selector term: `key=value`, the key as a label key (ID rule), the value at most 256 characters. */
const LABEL_TERM = '^[A-Za-z0-9][A-Za-z0-9._:-]{0,63}=.{0,256}$'
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

/**
 * One side of a comparison: a run id, `runs:ID,ID,...` (those runs),
 * `group:NAME` (a group of repetitions), or a selector
 * `key=value[,key=value...]` over labels (and `workload=`, `group=`), e.g.
 * `version=0.98.0,workload=e`.
 */
const SIDE = (what: string) =>
  Type.String({
    minLength: 1,
    maxLength: 2048,
    pattern: '^[A-Za-z0-9][^&]*$',
    description:
      `the ${what}: a run id, runs:ID,ID,..., group:NAME, or key=value[,key=value...] ` + '(labels, workload, group)',
  })

export const CompareQuery = Type.Object(
  {
    baseline: SIDE('baseline (release A)'),
    candidate: SIDE('candidate (release B)'),
    alpha: Type.Optional(
      Type.Number({
        exclusiveMinimum: 0,
        exclusiveMaximum: 1,
        description: 'significance level, greater than 0 and less than 1 (default 0.05)',
      }),
    ),
    minEffect: Type.Optional(
      Type.Number({
        minimum: 0,
        exclusiveMaximum: 1,
        description: 'smallest relative change called a regression or improvement, 0 to below 1 (default 0.01 = 1 %)',
      }),
    ),
    force: Type.Optional(
      Type.Boolean({ description: 'compare even when the setups differ (the differences are listed)' }),
    ),
    by: Type.Optional(
      Type.String({
        pattern: '^[A-Za-z0-9][A-Za-z0-9._:-]{0,63}$',
        description:
          "pair the sides' runs by this label's value instead of by workload (runs of different values are " +
          'never pooled)',
      }),
    ),
    test: Type.Optional(
      Type.Union([Type.Literal('auto'), Type.Literal('welch')], {
        description:
          "the test of repetitions: auto (default: Mann-Whitney where it can find a change, else Welch's t) or " +
          "welch (Welch's t always, as a sequential experiment's looks use it)",
      }),
    ),
    format: Type.Optional(
      Type.Union([Type.Literal('json'), Type.Literal('markdown'), Type.Literal('text')], {
        description: 'json (default), markdown or text (the terminal table)',
      }),
    ),
  },
  { additionalProperties: false },
)
export type CompareQuery = Static<typeof CompareQuery>

/**
 * The figures compare and history know by name. A run with events has throughput, avg, p50, p95, p99, p99.9, max,
 * error_rate and cache_hit_ratio per operation; a summary run (YCSB's report as printed) has throughput, avg, min,
 * max, errors (its `Return=` lines that are not OK), error_rate and every percentile it printed (`p95`, `p99`, and
 * any other as `p<percent>`).
 */
export const FIGURE_KEYS = [
  'throughput',
  'avg',
  'min',
  'p50',
  'p90',
  'p95',
  'p99',
  'p99.9',
  'p99.99',
  'max',
  'errors',
  'error_rate',
  'cache_hit_ratio',
  'server_cache_hit_ratio',
] as const
export type FigureKey = (typeof FIGURE_KEYS)[number]
/** A figure of a comparison: a named one, or a percentile a report printed (`p75`). */
export const FIGURE_KEY_PATTERN =
  '^(?:throughput|avg|min|max|errors|error_rate|cache_hit_ratio|server_cache_hit_ratio|p\\d+(?:\\.\\d+)?)$'

export const HistoryQuery = Type.Object(
  {
    label: Type.String({
      pattern: '^[A-Za-z0-9][A-Za-z0-9._:-]{0,63}$',
      description: 'the label that orders the series, e.g. version (natural order: 0.98.10 after 0.98.9)',
    }),
    workload: Type.Optional(
      Type.String({ minLength: 1, maxLength: 1024, description: 'only runs of this workload (workloade, or e)' }),
    ),
    op: Type.Optional(
      Type.String({ pattern: '^[A-Z][A-Z-]{0,31}$', description: 'operation (READ, SCAN, ...) or OVERALL (default)' }),
    ),
    figure: Type.Optional(
      Type.Enum(
        [
          'throughput',
          'avg',
          'min',
          'p50',
          'p90',
          'p95',
          'p99',
          'p99.9',
          'p99.99',
          'max',
          'errors',
          'error_rate',
          'cache_hit_ratio',
        ],
        {
          description:
            'throughput (default), avg, min, p50, p90, p95, p99, p99.9, p99.99, max, errors, error_rate, ' +
            'cache_hit_ratio (min and errors: summary runs; percentiles a summary run did not print are absent)',
        },
      ),
    ),
    filter: Type.Optional(
      Type.Array(Type.String({ pattern: LABEL_TERM }), {
        maxItems: 32,
        description: 'more label filters key=value (repeatable)',
      }),
    ),
  },
  { additionalProperties: false },
)
export type HistoryQuery = Static<typeof HistoryQuery>

export const SqlBody = Type.Object(
  {
    sql: Type.String({
      minLength: 1,
      maxLength: 262_144,
      description:
        'one SELECT (or WITH ... SELECT) over the benchstream database; an optional FORMAT clause returns ' +
        'text in that format',
    }),
    maxRows: Type.Optional(
      Type.Integer({
        minimum: 1,
        maximum: Number.MAX_SAFE_INTEGER,
        description:
          'cut the result after this many rows, as asked: the answer says truncated: true (JSON) or ' +
          'X-Benchstream-Truncated: true (trailer) when it had more. Without it every row comes back',
      }),
    ),
    format: Type.Optional(
      Type.String({
        pattern: '^[A-Za-z][A-Za-z0-9_]{0,63}$',
        description:
          'a ClickHouse output format (TSV, CSV, PrettyCompact, JSON, ...) when the query has no FORMAT ' +
          'clause: the answer is that text',
      }),
    ),
  },
  { additionalProperties: false },
)
export type SqlBody = Static<typeof SqlBody>

/** Rows and bytes of a result; a limit not set is absent. */
const resultLimits = (description: string) =>
  Type.Object(
    {
      rows: Type.Optional(Type.Integer({ minimum: 1 })),
      bytes: Type.Optional(Type.Integer({ minimum: 1 })),
    },
    { additionalProperties: false, description },
  )

/**
 * POST /api/v1/query's answer without a format: every row, streamed (the
 * rows first, the counts after them). A failure part-way ends the body
 * without its end (the JSON does not parse, the connection breaks).
 */
export const QueryResult = Type.Object(
  {
    rows: Type.Array(Type.Record(Type.String(), Type.Unknown()), {
      description: 'the rows, as JSONEachRow writes them',
    }),
    rowCount: Type.Integer({ minimum: 0 }),
    bytes: Type.Integer({ minimum: 0, description: 'bytes of the rows as JSON lines' }),
    truncated: Type.Boolean({
      description: 'true only when the result was cut at maxRows, as asked, and had more rows',
    }),
    limits: Type.Object(
      {
        cut: resultLimits('where the request asked the result to stop (maxRows)'),
        fail: resultLimits('what the result may hold before the query fails (API_MAX_QUERY_ROWS, API_QUERY_MAX_BYTES)'),
      },
      { additionalProperties: false },
    ),
    elapsedMs: Type.Integer({ minimum: 0 }),
  },
  { additionalProperties: false },
)
export type QueryResult = Static<typeof QueryResult>

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

const Nullable = <T extends TSchema>(t: T) => Type.Union([t, Type.Null()])

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

// ---------------------------------------------------------------- alerts and silences

const RUN_ID = {
  pattern: '^[A-Za-z0-9][A-Za-z0-9._:-]{0,63}$',
  description: 'run id: 1-64 characters from A-Z a-z 0-9 . _ : -',
}
/** Where the next page starts: `<startsAt ms>-<fingerprint>` of the last alert of a page (keyset paging). */
export const ALERT_CURSOR_PATTERN = '^[0-9]{1,16}-[0-9a-f]{16}$'
/** Alerts per page at most (GET /api/v1/alerts?limit=). */
export const MAX_ALERTS_PAGE = 1000

/** GET /api/v1/alerts: incidents, newest first; every given filter must hold. Unknown parameters are refused. */
export const AlertsQuery = Type.Object(
  {
    run: Type.Optional(Type.String(RUN_ID)),
    state: Type.Optional(
      Type.Enum([...ALERT_STATES], {
        description: 'firing (open now) or resolved: the latest state of the incident',
      }),
    ),
    rule: Type.Optional(
      Type.String({ pattern: RULE_NAME_PATTERN, description: 'a rule name (the alertname label), exactly' }),
    ),
    since: Type.Optional(
      Type.Integer({
        minimum: 0,
        maximum: MAX_EPOCH_MS,
        description:
          'only incidents firing at some time at or after this one (still open, or ended at or after it): ms since ' +
          `the Unix epoch, 0 to ${MAX_EPOCH_MS} (year 2100)`,
      }),
    ),
    limit: Type.Optional(
      Type.Integer({ minimum: 1, maximum: MAX_ALERTS_PAGE, description: `alerts per page, 1 to ${MAX_ALERTS_PAGE}` }),
    ),
    cursor: Type.Optional(
      Type.String({
        pattern: ALERT_CURSOR_PATTERN,
        description: 'nextCursor of the previous page: the page after it',
      }),
    ),
  },
  { additionalProperties: false },
)
export type AlertsQuery = Static<typeof AlertsQuery>

/**
 * One incident of an alert rule (rule, run, operation, start), with its latest state: the rows of table `alerts`
 * (one per state change) folded into one.
 */
export const Alert = Type.Object({
  /** Identifies the incident; the webhook's and the alerts topic's fingerprint. */
  fingerprint: Type.String(),
  rule: Type.String(),
  ruleType: Type.Enum([...RULE_TYPES]),
  severity: Type.Enum([...SEVERITIES]),
  runId: Type.String(),
  /** An operation, or ALL for a rule about the whole run. */
  op: Type.String(),
  state: Type.Enum([...ALERT_STATES]),
  /** Start of the first breaching window, ISO 8601 (UTC). */
  startsAt: Type.String(),
  /** When it ended (start of the first good window, or the run's end); null while firing. */
  endsAt: Nullable(Type.String()),
  /** What fired it: the measured value at the firing window and what it was compared with. */
  value: Type.Number(),
  threshold: Type.Number(),
  /** Why it fired, in words. */
  summary: Type.String(),
  description: Type.String(),
  /** How it ended, in words; null while firing. */
  resolvedSummary: Nullable(Type.String()),
  /** The silence that held its webhook back, decided when it fired; null when it was not silenced. */
  silencedBy: Nullable(Type.String()),
})
export type Alert = Static<typeof Alert>

export const AlertsPage = Type.Object({
  alerts: Type.Array(Alert),
  /** Pass as ?cursor= for the next page; null on the last one. */
  nextCursor: Nullable(Type.String()),
})
export type AlertsPage = Static<typeof AlertsPage>

/** Label names a silence can match: the labels of the webhook's alerts (and of the generated Prometheus rules). */
export const SILENCE_LABELS = ['alertname', 'run_id', 'op', 'severity'] as const
export type SilenceLabel = (typeof SILENCE_LABELS)[number]

/**
 * One matcher of a silence, Alertmanager's shape: `isEqual` true matches alerts whose label has this value, false those
 * whose label has another. Regular expressions are not supported (isRegex, if given, must be false).
 */
export const SilenceMatcher = Type.Object(
  {
    name: Type.Enum([...SILENCE_LABELS], { description: `a label: ${SILENCE_LABELS.join(', ')}` }),
    value: Type.String({ minLength: 1, maxLength: 256, description: 'the label value, 1-256 characters' }),
    isEqual: Type.Optional(Type.Boolean({ description: 'true (default): label = value; false: label != value' })),
    isRegex: Type.Optional(
      Type.Literal(false, { description: 'false: only exact values are matched (no regular expressions)' }),
    ),
  },
  { additionalProperties: false },
)
export type SilenceMatcher = Static<typeof SilenceMatcher>

/**
 * POST /api/v1/silences: Alertmanager's postable silence, with two differences: times default (startsAt: now), and
 * endsAt may be left out when a matcher names a run (`run_id` equal): the silence then lasts as long as that run.
 */
export const SilenceBody = Type.Object(
  {
    matchers: Type.Array(SilenceMatcher, {
      minItems: 1,
      maxItems: 16,
      description: 'at least one matcher with isEqual true, at most 16; an alert is silenced when all match',
    }),
    startsAt: Type.Optional(Type.String({ format: 'date-time', description: 'ISO 8601 time; default now' })),
    endsAt: Type.Optional(
      Type.String({
        format: 'date-time',
        description: 'ISO 8601 time after startsAt; required unless a run_id matcher with isEqual true is given',
      }),
    ),
    createdBy: Type.Optional(Type.String({ maxLength: 256, description: 'who made it, at most 256 characters' })),
    comment: Type.Optional(Type.String({ maxLength: 1000, description: 'why, at most 1000 characters' })),
  },
  { additionalProperties: false },
)
export type SilenceBody = Static<typeof SilenceBody>

export const SILENCE_STATES = ['pending', 'active', 'expired'] as const
export type SilenceState = (typeof SILENCE_STATES)[number]

/** A stored silence (Alertmanager's gettable silence). */
export const Silence = Type.Object({
  id: Type.String(),
  matchers: Type.Array(
    Type.Object({ name: Type.Enum([...SILENCE_LABELS]), value: Type.String(), isEqual: Type.Boolean() }),
  ),
  startsAt: Type.String(),
  /** null: until the run it names has no more alerts (a silence for a run). */
  endsAt: Nullable(Type.String()),
  createdBy: Type.String(),
  comment: Type.String(),
  updatedAt: Type.String(),
  /** pending before startsAt, active until endsAt, then expired. */
  status: Type.Object({ state: Type.Enum([...SILENCE_STATES]) }),
})
export type Silence = Static<typeof Silence>

export const SilencesQuery = Type.Object(
  {
    state: Type.Optional(Type.Enum([...SILENCE_STATES], { description: 'pending, active or expired' })),
  },
  { additionalProperties: false },
)
export type SilencesQuery = Static<typeof SilencesQuery>

export const SilenceIdParams = Type.Object({
  silenceId: Type.String({ pattern: '^[0-9a-f-]{36}$', description: 'a silence id (a UUID)' }),
})
export type SilenceIdParams = Static<typeof SilenceIdParams>
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

/** The final reports of one run's clients. */
/** A datastore's cache counters over a run, per sampler source: growth summed over the clients that sampled. */
const ServerCacheFigure = Type.Object({
  source: Type.String(),
  hits: Type.Number(),
  misses: Type.Number(),
  ratio: Type.Union([Type.Number(), Type.Null()]),
})

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

const VERDICTS = [
  'regression',
  'improvement',
  'no significant change',
  'insufficient data',
  'at target',
  'below target',
] as const

/** One side of one compared figure. */
const ComparedSide = Type.Object({
  /** Median over the side's runs of each run's figure (each from its own merged histogram); null when no run has it. */
  center: Nullable(Type.Number()),
  /** Every run's figure lies within ± this many percent of the center; null with one run or a zero center. */
  spreadPercent: Nullable(Type.Number()),
  /** Each run's figure, in the order of the side's runs. */
  values: Type.Array(Nullable(Type.Number())),
  /** Samples the test used: runs, or windows over all runs. */
  n: Type.Integer(),
  /**
   * A percentile of a summary run with several clients: each client's figure as printed (the run's figure is their
   * median, see ComparedFigure.clientMedian); null otherwise.
   */
  perClient: Nullable(Type.Array(Type.Object({ runId: Type.String(), clientId: Type.String(), value: Type.Number() }))),
})

export const ComparedFigure = Type.Object({
  workload: Type.String(),
  /** An operation, or OVERALL. */
  op: Type.String(),
  /** One of FIGURE_KEYS, or a percentile a report printed (`p75`). */
  figure: Type.String({ pattern: FIGURE_KEY_PATTERN }),
  /** `READ p99 (µs)`, `OVERALL throughput (ops/s)`. */
  label: Type.String(),
  direction: Type.Union([Type.Literal('higher-is-better'), Type.Literal('lower-is-better')]),
  baseline: ComparedSide,
  candidate: ComparedSide,
  /** Change of the centers, percent; null when either is missing or the baseline's is 0. */
  changePercent: Nullable(Type.Number()),
  verdict: Type.Enum([...VERDICTS]),
  samples: Type.Union([Type.Literal('repetitions'), Type.Literal('windows'), Type.Literal('none')]),
  /** mann-whitney-u-exact, welch-t, circular-block-bootstrap, none. */
  method: Type.String(),
  pValue: Nullable(Type.Number()),
  /** Benjamini-Hochberg adjusted p-value over every tested figure of the comparison: what the verdict uses. */
  adjustedPValue: Nullable(Type.Number()),
  /** Relative change the test is about (medians or means of the samples), percent. */
  effectPercent: Nullable(Type.Number()),
  ci: Nullable(Type.Object({ level: Type.Number(), low: Type.Number(), high: Type.Number() })),
  note: Nullable(Type.String()),
  reason: Type.String(),
  /**
   * Smallest step of the figure as printed, µs: 1000 for the whole-ms percentiles of YCSB before 0.4.0 (a change
   * smaller than this is never called; a center or value of 0 is a printed 0 ms, any latency under 1 ms, and the
   * tables print it `< 1 ms`), 0 when exact or finer than the figure.
   */
  resolutionUs: Type.Number(),
  /**
   * Largest number of clients whose printed percentiles a run's value is the median of (summary runs with several
   * clients: percentiles of clients cannot be merged); 0 when each run's value is its own figure.
   */
  clientMedian: Type.Integer(),
})
export type ComparedFigure = Static<typeof ComparedFigure>

/**
 * A frame (function, wherever called from) in both sides' merged CPU profiles: shares in percent of each side's
 * samples.
 */
const FrameShareChange = Type.Object({
  frame: Type.String(),
  baseline: Type.Number(),
  candidate: Type.Number(),
  /** candidate - baseline, percentage points. */
  change: Type.Number(),
  baselineSamples: Type.Integer(),
  candidateSamples: Type.Integer(),
})

/**
 * The frames whose share of CPU samples changed most between the sides (services/core/profiles/flame-graph.ts
 * frameShareChanges).
 */
export const ProfileChanges = Type.Object({
  baselineSamples: Type.Integer(),
  candidateSamples: Type.Integer(),
  /** By self share (the frame was the leaf: time spent in it). */
  self: Type.Array(FrameShareChange),
  /** By total share (the frame anywhere on the stack: time spent in it and its callees). */
  total: Type.Array(FrameShareChange),
  /** Path of the differential flame graph of the same runs on the API (the profiles page). */
  diffFlameGraph: Type.String(),
})
export type ProfileChanges = Static<typeof ProfileChanges>

const SideThrottle = Type.Object({
  status: Type.Union([Type.Literal('unthrottled'), Type.Literal('at target'), Type.Literal('below target')]),
  target: Nullable(Type.Number()),
  runs: Type.Integer(),
  runsBelow: Type.Integer(),
  medianRatio: Nullable(Type.Number()),
  shortfallPercent: Nullable(Type.Number()),
})

const CompareSide = Type.Object({
  /** What was asked for: a run id, group:NAME or a selector. */
  ref: Type.String(),
  runs: Type.Array(Type.String()),
  groups: Type.Array(Type.String()),
  workloads: Type.Array(Type.String()),
})

/** Release A vs release B: GET /api/v1/compare, `benchstream compare --format json`. */
export const ReleaseComparison = Type.Object({
  baseline: CompareSide,
  candidate: CompareSide,
  alpha: Type.Number(),
  minEffect: Type.Number(),
  /** Figures whose p-values were adjusted together (Benjamini-Hochberg). */
  tests: Type.Integer(),
  comparable: Type.Boolean(),
  /** Compared although not comparable (--force). */
  forced: Type.Boolean(),
  /** Settings that differ between the sides or among one side's runs (workload-prefixed when several are compared). */
  differences: Type.Array(
    Type.Object({
      name: Type.String(),
      baseline: Type.Array(Type.String()),
      candidate: Type.Array(Type.String()),
      where: Type.Array(Type.String()),
    }),
  ),
  /**
   * What pairs the sides' runs: null for the workload (the run's workload, else its `workload` label), or the label
   * named with --by.
   */
  by: Nullable(Type.String()),
  /** What the reader must know about how the sides were compared (setups that could not be compared, and why). */
  notes: Type.Array(Type.String()),
  /** Workload pairs compared; a workload only one side ran is listed in unpaired. */
  workloads: Type.Array(
    Type.Object({
      baseline: Type.String(),
      candidate: Type.String(),
      baselineRuns: Type.Array(Type.String()),
      candidateRuns: Type.Array(Type.String()),
      throttle: Nullable(Type.Object({ baseline: SideThrottle, candidate: SideThrottle })),
      /** Runs of this pair that are summary runs (figures as YCSB reported them), per side. */
      reportedRuns: Type.Object({ baseline: Type.Integer(), candidate: Type.Integer() }),
      /** Who printed the summary runs' figures: `ycsb` (YCSB's reports), `pe` (HBase PerformanceEvaluation). */
      reportedBy: Type.Optional(Type.Array(Type.Union([Type.Literal('ycsb'), Type.Literal('pe')]))),
    }),
  ),
  /** Workloads (or --by values) one side only has, and pairs with nothing to compare, each with why. */
  unpaired: Type.Array(Type.String()),
  figures: Type.Array(ComparedFigure),
  summary: Type.Object({
    regressions: Type.Integer(),
    improvements: Type.Integer(),
    unchanged: Type.Integer(),
    insufficient: Type.Integer(),
    atTarget: Type.Integer(),
    belowTarget: Type.Integer(),
  }),
  /**
   * Where the CPU time went: frame share changes between the sides' CPU profiles; null when a side has no profile
   * samples (or profiles are not served).
   */
  profiles: Nullable(ProfileChanges),
})
export type ReleaseComparison = Static<typeof ReleaseComparison>

/** A figure over a label-ordered series of runs (benchstream history, GET /api/v1/history). */
export const ReleaseHistory = Type.Object({
  label: Type.String(),
  workload: Nullable(Type.String()),
  op: Type.String(),
  figure: Type.String(),
  points: Type.Array(
    Type.Object({
      value: Type.String(),
      runs: Type.Array(Type.String()),
      /** Each run's figure. */
      values: Type.Array(Nullable(Type.Number())),
      /** Median of the runs' figures; null when none has it. */
      center: Nullable(Type.Number()),
      /** Change from the previous point, percent. */
      changePercent: Nullable(Type.Number()),
      /**
       * Smallest step of the figure as printed, µs, as ComparedFigure.resolutionUs: 1000 when a run's figure is a
       * percentile YCSB printed in whole ms (a value of 0 is then under 1 ms, not 0 µs), 0 when exact.
       */
      resolutionUs: Type.Number(),
    }),
  ),
  changePoints: Type.Array(
    Type.Object({
      /** Index in points of the first point after the change. */
      index: Type.Integer(),
      value: Type.String(),
      pValue: Type.Number(),
      meanBefore: Type.Number(),
      meanAfter: Type.Number(),
      changePercent: Nullable(Type.Number()),
    }),
  ),
  /** Why no change point could be looked for, when so (too few points). */
  note: Nullable(Type.String()),
})
export type ReleaseHistory = Static<typeof ReleaseHistory>

// ---------------------------------------------------------------- live view (GET /, Server-Sent Events)

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
