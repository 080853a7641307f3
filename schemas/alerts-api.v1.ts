/**
 * HTTP API shapes, version 1: alerts (GET /api/v1/alerts, incidents of the
 * alert rules, paged) and silences (/api/v1/silences, Alertmanager's shapes).
 */
import { Type, type Static } from 'typebox'
import { ALERT_STATES, RULE_NAME_PATTERN, RULE_TYPES, SEVERITIES } from './alert-rules.v1.js'
import { MAX_EPOCH_MS, Nullable } from './api-common.v1.js'

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
