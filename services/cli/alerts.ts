/**
 * `benchstream alerts`: the alerts people would otherwise dig out of the
 * `alerts` table by hand, and silences.
 *
 *   benchstream alerts [--run R] [--state firing|resolved] [--rule NAME] [--since WHEN] [--limit N] [--json] [--follow]
 *   benchstream alerts silence (--rule NAME | --run R | --op OP | --severity S)... [--for D | --until T] [--from T] ...
 *   benchstream alerts silences [--all] [--json]
 *   benchstream alerts expire ID
 *
 * Incidents and silences are read and written through a running API or
 * ClickHouse itself (reader.ts); --follow reads the alerts topic (Kafka), so
 * it prints each transition as the evaluator publishes it.
 */
import os from 'node:os'
import type { AlertNotice } from '../../schemas/alert-rules.v1.js'
import { RULE_NAME_PATTERN, SEVERITIES } from '../../schemas/alert-rules.v1.js'
import type { Alert, Silence, SilenceBody } from '../../schemas/alerts-api.v1.js'
import { MAX_ALERTS_PAGE } from '../../schemas/alerts-api.v1.js'
import { ID_PATTERN, ID_RULE, OPERATIONS } from '../../schemas/events.v1.js'
import { KafkaAlertFollower } from '../adapters/kafka/alert-follower.js'
import { createKafka } from '../adapters/kafka/client.js'
import { parseFlags, type FlagSpecs } from '../common/args.js'
import { readInfraConfig } from '../common/infra-config.js'
import { matchersText } from '../core/alerting/silences.js'
import { BenchstreamError } from '../core/errors.js'
import type { AlertFilter } from '../core/ports/read-model.js'
import { openReader, type Reader } from './reader.js'
import { ALERTS_USAGE } from './usage.js'

const RULE_NAME = new RegExp(RULE_NAME_PATTERN)
/** `90s`, `30m`, `2h`, `7d`. */
const DURATION = /^(\d+(?:\.\d+)?)(s|m|h|d)$/
const UNIT_MS = { s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 } as const
/** Pages a listing reads at most (--limit is capped by it too). */
const MAX_LISTED = 10 * MAX_ALERTS_PAGE

/** The flags of each form: the listing (no subcommand), silence, silences, expire. */
export const ALERTS_FLAGS = {
  list: {
    run: { type: 'string' },
    state: { type: 'string' },
    rule: { type: 'string' },
    since: { type: 'string' },
    limit: { type: 'string' },
    json: { type: 'boolean' },
    follow: { type: 'boolean' },
  },
  silence: {
    rule: { type: 'string' },
    run: { type: 'string' },
    op: { type: 'string' },
    severity: { type: 'string' },
    for: { type: 'string' },
    until: { type: 'string' },
    from: { type: 'string' },
    comment: { type: 'string' },
    by: { type: 'string' },
    json: { type: 'boolean' },
  },
  silences: { all: { type: 'boolean' }, json: { type: 'boolean' } },
  expire: { json: { type: 'boolean' } },
} as const satisfies Record<string, FlagSpecs>

const usage = (what: string): BenchstreamError => new BenchstreamError('BS_ERR_USAGE', `${what}\n${ALERTS_USAGE}`)

export async function alertsMain(argv: readonly string[]): Promise<number> {
  const [sub, ...rest] = argv
  if (sub === 'silence') return silenceMain(rest)
  if (sub === 'silences') return silencesMain(rest)
  if (sub === 'expire') return expireMain(rest)
  return listMain(argv)
}

function checkRun(v: string | undefined): string | undefined {
  if (v !== undefined && !ID_PATTERN.test(v)) throw usage(`--run ${JSON.stringify(v)} is not allowed: ${ID_RULE}`)
  return v
}

function checkRule(v: string | undefined): string | undefined {
  if (v !== undefined && !RULE_NAME.test(v))
    throw usage(
      `--rule ${JSON.stringify(v)} is not allowed: a rule name of 1-64 characters from A-Z a-z 0-9 _, not starting ` +
        `with a digit`,
    )
  return v
}

/** An ISO 8601 time, or a duration back from now (`10m` = ten minutes ago). */
function timeArg(flag: string, v: string, now: number, direction: -1 | 1): number {
  const d = DURATION.exec(v)
  if (d !== null) return now + direction * Number(d[1]) * UNIT_MS[d[2] as keyof typeof UNIT_MS]
  const t = /^\d{4}-\d{2}-\d{2}T/.test(v) ? Date.parse(v) : Number.NaN
  if (!Number.isFinite(t))
    throw usage(
      `${flag} ${JSON.stringify(v)} is not allowed: expected an ISO 8601 time (2026-01-10T12:00:00Z) or a ` +
        `duration such as 90s, 30m, 2h, 7d`,
    )
  return t
}

async function listMain(argv: readonly string[]): Promise<number> {
  const { values: v, positionals } = parseFlags(argv, ALERTS_FLAGS.list, ALERTS_USAGE, true)
  if (positionals.length > 0)
    throw usage(`unknown subcommand ${JSON.stringify(positionals[0])}: expected silence, silences or expire`)
  const filter: AlertFilter = {}
  const run = checkRun(v.run)
  if (run !== undefined) filter.runId = run
  const rule = checkRule(v.rule)
  if (rule !== undefined) filter.rule = rule
  if (v.state !== undefined) {
    if (v.state !== 'firing' && v.state !== 'resolved')
      throw usage(`--state ${JSON.stringify(v.state)} is not allowed: expected firing or resolved`)
    filter.state = v.state
  }
  if (v.since !== undefined) filter.sinceMs = timeArg('--since', v.since, Date.now(), -1)
  const limit = v.limit === undefined ? 100 : Number(v.limit)
  if (!Number.isInteger(limit) || limit < 1 || limit > MAX_LISTED)
    throw usage(`--limit ${JSON.stringify(v.limit)} is not allowed: expected an integer from 1 to ${MAX_LISTED}`)
  const json = v.json === true

  // --follow: the topic's position first, then the stored alerts, then what is published from that position on.
  const follower = v.follow === true ? await openFollower() : undefined
  const reader = openReader(process.env)
  let alerts: Alert[]
  try {
    alerts = await listAlerts(reader, filter, limit)
  } catch (err) {
    await follower?.close()
    throw err
  } finally {
    await reader.close()
  }
  if (follower === undefined) {
    process.stdout.write(
      json ? JSON.stringify(alerts, null, 2) + '\n' : alerts.map(incidentLine).join('') || noneLine(filter),
    )
    return 0
  }
  // Oldest first, as the transitions that follow.
  const seen = new Set<string>()
  for (const a of [...alerts].reverse()) {
    seen.add(`${a.fingerprint}/firing`)
    if (a.state === 'resolved') seen.add(`${a.fingerprint}/resolved`)
    process.stdout.write(json ? JSON.stringify(a) + '\n' : incidentLine(a))
  }
  const matches = (n: AlertNotice): boolean =>
    (filter.runId === undefined || n.runId === filter.runId) &&
    (filter.rule === undefined || n.rule === filter.rule) &&
    (filter.state === undefined || n.state === filter.state)
  await follower.run((n) => {
    const key = `${n.fingerprint}/${n.state}`
    if (seen.has(key) || !matches(n)) return
    seen.add(key)
    process.stdout.write(json ? JSON.stringify(n) + '\n' : noticeLine(n))
  })
  process.stderr.write(`benchstream: following alert transitions on ${follower.topic} (Ctrl-C to stop)\n`)
  await new Promise<void>((resolve) => {
    process.once('SIGINT', resolve)
    process.once('SIGTERM', resolve)
  })
  await follower.close()
  return 0
}

async function openFollower(): Promise<KafkaAlertFollower> {
  const infra = readInfraConfig(process.env)
  return KafkaAlertFollower.open(createKafka(infra.kafka, 'alerts-follow'), infra.topics.alerts)
}

async function listAlerts(reader: Reader, filter: AlertFilter, limit: number): Promise<Alert[]> {
  const out: Alert[] = []
  let cursor: string | undefined
  while (out.length < limit) {
    const page = await reader.alerts(filter, {
      limit: Math.min(MAX_ALERTS_PAGE, limit - out.length),
      ...(cursor === undefined ? {} : { cursor }),
    })
    out.push(...page.alerts)
    if (page.nextCursor === null) break
    cursor = page.nextCursor
  }
  return out
}

function noneLine(f: AlertFilter): string {
  const terms = [
    f.runId === undefined ? '' : `run ${f.runId}`,
    f.state === undefined ? '' : `state ${f.state}`,
    f.rule === undefined ? '' : `rule ${f.rule}`,
    f.sinceMs === undefined ? '' : `since ${new Date(f.sinceMs).toISOString()}`,
  ].filter((x) => x !== '')
  return `no alerts${terms.length === 0 ? '' : ` (${terms.join(', ')})`}\n`
}

/** One incident: state, start, end, rule, severity, run, operation, why; tab-separated like `benchstream runs`. */
function incidentLine(a: Alert): string {
  return (
    [a.state, a.startsAt, a.endsAt ?? '-', a.rule, a.severity, a.runId, a.op, a.summary].join('\t') +
    (a.silencedBy === null ? '' : `\tsilenced by ${a.silencedBy}`) +
    '\n'
  )
}

/** One transition from the topic: the same columns; a resolved one says how it ended. */
function noticeLine(n: AlertNotice): string {
  return (
    [n.state, n.startsAt, n.endsAt ?? '-', n.rule, n.severity, n.runId, n.op, n.summary].join('\t') +
    (n.silencedBy === undefined || n.silencedBy === null ? '' : `\tsilenced by ${n.silencedBy}`) +
    '\n'
  )
}

async function silenceMain(argv: readonly string[]): Promise<number> {
  const { values: v } = parseFlags(argv, ALERTS_FLAGS.silence, ALERTS_USAGE)
  const matchers: SilenceBody['matchers'] = []
  const rule = checkRule(v.rule)
  if (rule !== undefined) matchers.push({ name: 'alertname', value: rule })
  const run = checkRun(v.run)
  if (run !== undefined) matchers.push({ name: 'run_id', value: run })
  if (v.op !== undefined) {
    if (!(OPERATIONS as readonly string[]).includes(v.op) && v.op !== 'ALL')
      throw usage(`--op ${JSON.stringify(v.op)} is not allowed: expected ${OPERATIONS.join(', ')} or ALL`)
    matchers.push({ name: 'op', value: v.op })
  }
  if (v.severity !== undefined) {
    if (!(SEVERITIES as readonly string[]).includes(v.severity))
      throw usage(`--severity ${JSON.stringify(v.severity)} is not allowed: expected ${SEVERITIES.join(', ')}`)
    matchers.push({ name: 'severity', value: v.severity })
  }
  if (matchers.length === 0) throw usage('alerts silence needs at least one of --rule, --run, --op, --severity')
  if (v.for !== undefined && v.until !== undefined) throw usage('give --for or --until, not both')
  const now = Date.now()
  const startsAtMs = v.from === undefined ? now : timeArg('--from', v.from, now, 1)
  let endsAtMs: number | undefined
  if (v.for !== undefined) {
    if (!DURATION.test(v.for))
      throw usage(`--for ${JSON.stringify(v.for)} is not allowed: expected a duration such as 90s, 30m, 2h, 7d`)
    endsAtMs = timeArg('--for', v.for, startsAtMs, 1)
  } else if (v.until !== undefined) endsAtMs = timeArg('--until', v.until, now, 1)
  if (endsAtMs === undefined && run === undefined)
    throw usage('a silence without --run needs an end: --for DURATION or --until TIME')
  const body: SilenceBody = {
    matchers,
    startsAt: new Date(startsAtMs).toISOString(),
    ...(endsAtMs === undefined ? {} : { endsAt: new Date(endsAtMs).toISOString() }),
    createdBy: v.by ?? userName(),
    comment: v.comment ?? '',
  }
  const reader = openReader(process.env)
  try {
    const s = await reader.createSilence(body)
    process.stdout.write(v.json === true ? JSON.stringify(s, null, 2) + '\n' : silenceLine(s))
  } finally {
    await reader.close()
  }
  return 0
}

async function silencesMain(argv: readonly string[]): Promise<number> {
  const { values: v } = parseFlags(argv, ALERTS_FLAGS.silences, ALERTS_USAGE)
  const reader = openReader(process.env)
  try {
    const all = await reader.silences()
    const shown = v.all === true ? all : all.filter((s) => s.status.state !== 'expired')
    process.stdout.write(
      v.json === true
        ? JSON.stringify(shown, null, 2) + '\n'
        : shown.map(silenceLine).join('') || `no ${v.all === true ? '' : 'active or pending '}silences\n`,
    )
  } finally {
    await reader.close()
  }
  return 0
}

async function expireMain(argv: readonly string[]): Promise<number> {
  const { values: v, positionals } = parseFlags(argv, ALERTS_FLAGS.expire, ALERTS_USAGE, true)
  if (positionals.length !== 1) throw usage(`alerts expire takes one silence id, got ${positionals.length}`)
  const reader = openReader(process.env)
  try {
    const s = await reader.expireSilence(positionals[0]!)
    process.stdout.write(v.json === true ? JSON.stringify(s, null, 2) + '\n' : silenceLine(s))
  } finally {
    await reader.close()
  }
  return 0
}

/** `ID  state  matchers  start..end  by: comment`. */
function silenceLine(s: Silence): string {
  const end = s.endsAt ?? 'the end of the run'
  const who = s.createdBy === '' ? '' : `\t${s.createdBy}${s.comment === '' ? '' : `: ${s.comment}`}`
  return `${s.id}\t${s.status.state}\t${matchersText(s)}\t${s.startsAt} .. ${end}${who}\n`
}

function userName(): string {
  try {
    return os.userInfo().username
  } catch {
    return ''
  }
}
