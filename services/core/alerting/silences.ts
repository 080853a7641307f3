/**
 * Silences, pure: Alertmanager's model on Benchstream's alerts. A silence is
 * a set of matchers on the alert's labels (alertname, run_id, op, severity:
 * the labels of the webhook's alerts) and a time range; an alert all of whose
 * matchers hold while the silence is active is silenced. A silenced alert is
 * still judged, stored and published on the alerts topic, marked with the
 * silence's id; only notifications that reach people (the webhook) are held
 * back.
 *
 * Two differences from Alertmanager, both where Benchstream knows more:
 *  - a silence may have no end when it names a run (`run_id` equal): it
 *    lasts as long as that run raises alerts ("silence this rule for this
 *    run");
 *  - an incident is silenced or not as a whole, decided when it fires: its
 *    resolved notice follows the firing one, so a receiver never sees the
 *    end of an incident whose start it was not told, nor misses the end of one
 *    it was told of (Alertmanager judges each notification anew).
 */
import {
  SILENCE_LABELS,
  type Silence,
  type SilenceBody,
  type SilenceLabel,
  type SilenceState,
} from '../../../schemas/alerts-api.v1.js'
import { BenchstreamError } from '../errors.js'

export interface SilenceMatcherSpec {
  name: SilenceLabel
  value: string
  /** true: label = value; false: label != value. */
  isEqual: boolean
}

/** A silence as stored, times in ms since the epoch. */
export interface SilenceSpec {
  id: string
  matchers: SilenceMatcherSpec[]
  startsAtMs: number
  /** undefined: no end (a silence for a run). */
  endsAtMs: number | undefined
  createdBy: string
  comment: string
  updatedAtMs: number
}

/** What a silence is matched against: the alert's labels, as the webhook carries them. */
export interface SilenceableAlert {
  rule: string
  runId: string
  op: string
  severity: string
}

export function alertLabels(a: SilenceableAlert): Record<SilenceLabel, string> {
  return { alertname: a.rule, run_id: a.runId, op: a.op, severity: a.severity }
}

export function silenceState(s: Pick<SilenceSpec, 'startsAtMs' | 'endsAtMs'>, nowMs: number): SilenceState {
  if (nowMs < s.startsAtMs) return 'pending'
  if (s.endsAtMs !== undefined && nowMs >= s.endsAtMs) return 'expired'
  return 'active'
}

export function silenceMatches(s: Pick<SilenceSpec, 'matchers'>, a: SilenceableAlert): boolean {
  const labels = alertLabels(a)
  return s.matchers.every((m) => (labels[m.name] === m.value) === m.isEqual)
}

/**
 * The silence that silences this alert at nowMs: the active matching one with the smallest id (any would do; the
 * smallest makes the choice the same on every replay), or undefined.
 */
export function silencedBy(a: SilenceableAlert, silences: readonly SilenceSpec[], nowMs: number): string | undefined {
  let best: string | undefined
  for (const s of silences)
    if (silenceState(s, nowMs) === 'active' && silenceMatches(s, a) && (best === undefined || s.id < best)) best = s.id
  return best
}

/** The run a silence is for: the value of its `run_id` equality matcher, if it has one. */
export function silenceRun(s: Pick<SilenceSpec, 'matchers'>): string | undefined {
  return s.matchers.find((m) => m.name === 'run_id' && m.isEqual)?.value
}

/**
 * A new silence from a request body (already checked against its schema), or BS_ERR_BAD_REQUEST saying what is wrong:
 * at least one equality matcher, an end after the start and after now, no end only for a silence that names a run.
 */
export function newSilence(body: SilenceBody, id: string, nowMs: number): SilenceSpec {
  const bad = (message: string): BenchstreamError => new BenchstreamError('BS_ERR_BAD_REQUEST', `silence: ${message}`)
  const matchers = body.matchers.map((m) => ({ name: m.name, value: m.value, isEqual: m.isEqual ?? true }))
  for (const m of matchers)
    if (!(SILENCE_LABELS as readonly string[]).includes(m.name))
      throw bad(`matcher name ${JSON.stringify(m.name)} is not allowed; allowed: ${SILENCE_LABELS.join(', ')}`)
  if (!matchers.some((m) => m.isEqual))
    throw bad(
      'needs at least one matcher with isEqual true (a silence of only != matchers would silence nearly everything)',
    )
  const startsAtMs = body.startsAt === undefined ? nowMs : Date.parse(body.startsAt)
  const endsAtMs = body.endsAt === undefined ? undefined : Date.parse(body.endsAt)
  if (!Number.isFinite(startsAtMs)) throw bad(`startsAt ${JSON.stringify(body.startsAt)} is not an ISO 8601 time`)
  if (endsAtMs !== undefined && !Number.isFinite(endsAtMs))
    throw bad(`endsAt ${JSON.stringify(body.endsAt)} is not an ISO 8601 time`)
  if (endsAtMs === undefined && silenceRun({ matchers }) === undefined)
    throw bad('endsAt is required unless a run_id matcher (isEqual true) names the run the silence is for')
  if (endsAtMs !== undefined && endsAtMs <= startsAtMs)
    throw bad(`endsAt ${body.endsAt ?? ''} must be after startsAt ${new Date(startsAtMs).toISOString()}`)
  if (endsAtMs !== undefined && endsAtMs <= nowMs)
    throw bad(`endsAt ${body.endsAt ?? ''} is in the past (now is ${new Date(nowMs).toISOString()})`)
  return {
    id,
    matchers,
    startsAtMs,
    endsAtMs,
    createdBy: body.createdBy ?? '',
    comment: body.comment ?? '',
    updatedAtMs: nowMs,
  }
}

/**
 * The silence ended at nowMs (Alertmanager's expire): an active one ends now, a pending one will never start; an
 * expired one is left as it is.
 */
export function expireSilence(s: SilenceSpec, nowMs: number): SilenceSpec {
  const state = silenceState(s, nowMs)
  if (state === 'expired') return s
  return {
    ...s,
    startsAtMs: state === 'pending' ? nowMs : s.startsAtMs,
    endsAtMs: nowMs,
    updatedAtMs: nowMs,
  }
}

/** The API's shape of a stored silence. */
export function silenceView(s: SilenceSpec, nowMs: number): Silence {
  return {
    id: s.id,
    matchers: s.matchers.map((m) => ({ name: m.name, value: m.value, isEqual: m.isEqual })),
    startsAt: new Date(s.startsAtMs).toISOString(),
    endsAt: s.endsAtMs === undefined ? null : new Date(s.endsAtMs).toISOString(),
    createdBy: s.createdBy,
    comment: s.comment,
    updatedAt: new Date(s.updatedAtMs).toISOString(),
    status: { state: silenceState(s, nowMs) },
  }
}

/** `alertname="X", run_id!="Y"`: matchers as Alertmanager prints them. */
export function matchersText(s: Pick<SilenceSpec, 'matchers'>): string {
  return s.matchers.map((m) => `${m.name}${m.isEqual ? '=' : '!='}${JSON.stringify(m.value)}`).join(', ')
}
