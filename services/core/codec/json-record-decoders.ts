/**
 * Decoders of the record kinds whose body is JSON (run lifecycle, server
 * metrics, summary report, profile), each checked against its schema in
 * schemas/events.v1.ts, and the profile body check the API's upload shares.
 */

import {
  MAX_JSON_RECORD_BYTES,
  MAX_PROFILE_RECORD_BYTES,
  MAX_PROFILE_SPAN_US,
  OPERATIONS,
  ProfileRecordBody,
  RECORD_KIND,
  RunLifecycleBody,
  ServerMetricsBody,
  SummaryReportBody,
  type Operation,
  type ProfileRecord,
  type RunLifecycle,
  type SummaryReportRecord,
} from '../../../schemas/events.v1.js'
import type { Static } from 'typebox'
import { Compile } from 'typebox/compile'
import { schemaProblems } from '../validation.js'
import type { DecodeLimits, DecodeResult, RejectReason } from './decode-result.js'

/** Compiled once: the JSON record bodies are checked against schemas/events.v1.ts. */
const lifecycleBody = Compile(RunLifecycleBody)
const serverMetricsBody = Compile(ServerMetricsBody)
/** Problems named in one dead letter's detail. */
const MAX_PROBLEMS_LISTED = 3

export function decodeJson(
  buf: Buffer,
  kind: typeof RECORD_KIND.RUN_LIFECYCLE | typeof RECORD_KIND.SERVER_METRICS,
  limits: DecodeLimits,
): DecodeResult {
  if (buf.length > MAX_JSON_RECORD_BYTES)
    return {
      ok: false,
      reason: 'record_too_large',
      detail:
        `a ${kind === RECORD_KIND.RUN_LIFECYCLE ? 'run lifecycle' : 'server metrics'} record of ${buf.length} ` +
        `bytes; at most ${MAX_JSON_RECORD_BYTES} are accepted`,
    }
  let value: unknown
  try {
    value = JSON.parse(buf.toString('utf8', 4))
  } catch (err) {
    return { ok: false, reason: 'invalid_json', detail: `body is not JSON: ${(err as Error).message}` }
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value))
    return { ok: false, reason: 'invalid_json', detail: 'body is not a JSON object' }
  const schema = kind === RECORD_KIND.RUN_LIFECYCLE ? lifecycleBody : serverMetricsBody
  if (!schema.Check(value)) {
    const problems = schemaProblems(
      kind === RECORD_KIND.RUN_LIFECYCLE ? RunLifecycleBody : ServerMetricsBody,
      value,
      '',
      'the record',
    )
    return {
      ok: false,
      reason: 'invalid_record',
      detail:
        problems.slice(0, MAX_PROBLEMS_LISTED).join('; ') +
        (problems.length > MAX_PROBLEMS_LISTED ? `; and ${problems.length - MAX_PROBLEMS_LISTED} more` : ''),
    }
  }
  const v = value as { runId: string; clientId: string; atUs: number }
  if (!(v.atUs >= limits.minStartUs && v.atUs <= limits.maxStartUs)) {
    return {
      ok: false,
      reason: 'timestamp_out_of_range',
      detail:
        `atUs ${v.atUs} is outside the accepted event-time range ${limits.minStartUs}..${limits.maxStartUs} ` +
        `µs (MAX_EVENT_AGE_S, MAX_EVENT_FUTURE_S)`,
    }
  }
  if (kind === RECORD_KIND.RUN_LIFECYCLE) {
    const l = value as Static<typeof RunLifecycleBody>
    const record: RunLifecycle = {
      kind,
      phase: l.phase,
      runId: l.runId,
      clientId: l.clientId,
      atUs: l.atUs,
      labels: l.labels ?? {},
      workload: l.workload ?? '',
      binding: l.binding ?? '',
      threads: l.threads ?? 0,
      target: l.target ?? 0,
    }
    if (l.group !== undefined) record.group = l.group
    if (l.repeat !== undefined) record.repeat = l.repeat
    if (l.properties !== undefined) record.properties = l.properties
    if (l.sent !== undefined) record.sent = l.sent
    if (l.undelivered !== undefined) record.undelivered = l.undelivered
    if (l.runtimeMs !== undefined) record.runtimeMs = l.runtimeMs
    if (l.scheduleLagMaxMs !== undefined) record.scheduleLagMaxMs = l.scheduleLagMaxMs
    if (l.behindScheduleEpisodes !== undefined) record.behindScheduleEpisodes = l.behindScheduleEpisodes
    if (l.expectedClients !== undefined) record.expectedClients = l.expectedClients
    if (l.clockOffsetMs !== undefined) record.clockOffsetMs = l.clockOffsetMs
    if (l.firstOpUs !== undefined) record.firstOpUs = l.firstOpUs
    return { ok: true, kind, record }
  }
  const m = value as Static<typeof ServerMetricsBody>
  return {
    ok: true,
    kind,
    record: { kind, runId: m.runId, clientId: m.clientId, atUs: m.atUs, source: m.source, values: m.values },
  }
}

const profileBody = Compile(ProfileRecordBody)
const summaryReportBody = Compile(SummaryReportBody)

export function decodeSummaryReport(buf: Buffer, limits: DecodeLimits): DecodeResult {
  if (buf.length > MAX_JSON_RECORD_BYTES)
    return {
      ok: false,
      reason: 'record_too_large',
      detail: `a summary report record of ${buf.length} bytes; at most ${MAX_JSON_RECORD_BYTES} are accepted`,
    }
  let value: unknown
  try {
    value = JSON.parse(buf.toString('utf8', 4))
  } catch (err) {
    return { ok: false, reason: 'invalid_json', detail: `body is not JSON: ${(err as Error).message}` }
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value))
    return { ok: false, reason: 'invalid_json', detail: 'body is not a JSON object' }
  if (!summaryReportBody.Check(value)) {
    const problems = schemaProblems(SummaryReportBody, value, '', 'the record')
    return {
      ok: false,
      reason: 'invalid_record',
      detail:
        problems.slice(0, MAX_PROBLEMS_LISTED).join('; ') +
        (problems.length > MAX_PROBLEMS_LISTED ? `; and ${problems.length - MAX_PROBLEMS_LISTED} more` : ''),
    }
  }
  const v = value
  if (!(v.atUs >= limits.minStartUs && v.atUs <= limits.maxStartUs)) {
    return {
      ok: false,
      reason: 'timestamp_out_of_range',
      detail: `atUs ${v.atUs} is outside the accepted event-time range ${limits.minStartUs}..${limits.maxStartUs} µs`,
    }
  }
  for (const m of v.measurements) {
    if (m.kind === 'operation' ? !OPERATIONS.includes(m.op as Operation) : m.op !== '')
      return {
        ok: false,
        reason: 'invalid_record',
        detail:
          `measurement ${m.name}: op ${JSON.stringify(m.op)} does not fit kind ${m.kind} (an operation ` +
          `names one of ${OPERATIONS.join(', ')}; the others none)`,
      }
  }
  const record: SummaryReportRecord = {
    kind: RECORD_KIND.SUMMARY_REPORT,
    runId: v.runId,
    clientId: v.clientId,
    atUs: v.atUs,
    source: v.source,
    format: v.format,
    measurements: v.measurements,
  }
  if (v.runtimeMs !== undefined) record.runtimeMs = v.runtimeMs
  if (v.throughputOpsPerSec !== undefined) record.throughputOpsPerSec = v.throughputOpsPerSec
  return { ok: true, kind: RECORD_KIND.SUMMARY_REPORT, record }
}

export function decodeProfile(buf: Buffer, limits: DecodeLimits): DecodeResult {
  if (buf.length > MAX_PROFILE_RECORD_BYTES)
    return {
      ok: false,
      reason: 'record_too_large',
      detail:
        `a profile record of ${buf.length} bytes; at most ${MAX_PROFILE_RECORD_BYTES} are accepted (send ` +
        `a large profile as several records with the same profileId)`,
    }
  let value: unknown
  try {
    value = JSON.parse(buf.toString('utf8', 4))
  } catch (err) {
    return { ok: false, reason: 'invalid_json', detail: `body is not JSON: ${(err as Error).message}` }
  }
  const r = checkProfileBody(value, limits)
  return r.ok
    ? { ok: true, kind: RECORD_KIND.PROFILE, record: r.record }
    : { ok: false, reason: r.reason, detail: r.detail }
}

/**
 * Checks a parsed PROFILE body (a Kafka record's, or an upload's through the
 * API) against ProfileRecordBody and what a schema cannot say: frame indexes
 * inside the frame table, at least one sample per stack, a time slice inside
 * `limits` and at most MAX_PROFILE_SPAN_US long.
 */
export function checkProfileBody(
  value: unknown,
  limits: DecodeLimits,
): { ok: true; record: ProfileRecord } | { ok: false; reason: RejectReason; detail: string } {
  if (typeof value !== 'object' || value === null || Array.isArray(value))
    return { ok: false, reason: 'invalid_json', detail: 'body is not a JSON object' }
  if (!profileBody.Check(value)) {
    const problems = schemaProblems(ProfileRecordBody, value, '', 'the record')
    return {
      ok: false,
      reason: 'invalid_record',
      detail:
        problems.slice(0, MAX_PROBLEMS_LISTED).join('; ') +
        (problems.length > MAX_PROBLEMS_LISTED ? `; and ${problems.length - MAX_PROBLEMS_LISTED} more` : ''),
    }
  }
  const p = value
  if (!(p.fromUs >= limits.minStartUs && p.fromUs <= limits.maxStartUs)) {
    return {
      ok: false,
      reason: 'timestamp_out_of_range',
      detail:
        `fromUs ${p.fromUs} is outside the accepted ` +
        `event-time range ${limits.minStartUs}..${limits.maxStartUs} µs`,
    }
  }
  if (!(p.toUs >= p.fromUs && p.toUs - p.fromUs <= MAX_PROFILE_SPAN_US)) {
    return {
      ok: false,
      reason: 'invalid_record',
      detail:
        `toUs ${p.toUs} must be at least fromUs ${p.fromUs} and at most ` +
        `${MAX_PROFILE_SPAN_US} µs (one day) after it`,
    }
  }
  let total = 0
  for (let i = 0; i < p.stacks.length; i++) {
    const s = p.stacks[i]!
    if (s[0]! < 1)
      return {
        ok: false,
        reason: 'invalid_record',
        detail: `stacks[${i}]: a count of ${s[0]} samples; each stack needs at least 1`,
      }
    total += s[0]!
    for (let j = 1; j < s.length; j++) {
      if (s[j]! >= p.frames.length)
        return {
          ok: false,
          reason: 'invalid_record',
          detail:
            `stacks[${i}][${j}]: frame index ${s[j]}; the record has ${p.frames.length} frames (indexes ` +
            `0..${p.frames.length - 1})`,
        }
    }
  }
  if (total > Number.MAX_SAFE_INTEGER)
    return {
      ok: false,
      reason: 'invalid_record',
      detail: `the record counts ${total} samples; at most ${Number.MAX_SAFE_INTEGER}`,
    }
  const record: ProfileRecord = {
    kind: RECORD_KIND.PROFILE,
    profileId: p.profileId,
    runId: p.runId,
    labels: p.labels ?? {},
    fromUs: p.fromUs,
    toUs: p.toUs,
    event: p.event,
    intervalNs: p.intervalNs ?? 0,
    source: p.source ?? '',
    frames: p.frames,
    stacks: p.stacks,
  }
  if (p.cpuMs !== undefined) record.cpuMs = p.cpuMs
  return { ok: true, record }
}
