/**
 * What the decoders of schemas/events.v1.ts messages hand back: the reject
 * reasons, the reused event object a visitor is given, the accepted time range
 * and the result of decoding one message (event-codec.ts's decodeMessage).
 */

import type {
  IntervalHistogram,
  ProfileRecord,
  RECORD_KIND,
  RunLifecycle,
  ServerMetrics,
  SummaryReportRecord,
} from '../../../schemas/events.v1.js'

/** Why a message or an event was rejected. Stable names: they are metric labels and dead-letter reasons. */
export const REJECT_REASONS = [
  'empty_message',
  'bad_magic',
  'unknown_schema_version',
  'unknown_record_kind',
  'truncated',
  'trailing_bytes',
  'invalid_id',
  'invalid_json',
  'unknown_operation',
  'unknown_status',
  'unknown_cache_outcome',
  'reserved_bits_set',
  'latency_out_of_range',
  'intended_latency_out_of_range',
  'timestamp_out_of_range',
  'thread_out_of_range',
  'bytes_out_of_range',
  'invalid_histogram',
  'window_length_mismatch',
  'invalid_record',
  'record_too_large',
] as const
export type RejectReason = (typeof REJECT_REASONS)[number]

/** One decoded event. The reader reuses a single instance: copy what you keep. */
export interface DecodedOp {
  thread: number
  opCode: number
  statusIndex: number
  cacheIndex: number
  startUs: number
  latencyUs: number
  intendedUs: number
  bytes: number
}

export interface DecodeLimits {
  /** Earliest accepted startUs (µs since epoch). */
  minStartUs: number
  /** Latest accepted startUs (µs since epoch). */
  maxStartUs: number
}

export interface OpsVisitor {
  /** Called once per valid event, with a reused object. */
  event(e: DecodedOp): void
  /** Called once per invalid event: the message was well-formed but this event's values are not. */
  reject(reason: RejectReason, index: number, e: DecodedOp): void
}

export type DecodeResult =
  | { ok: true; kind: typeof RECORD_KIND.OPS; runId: string; clientId: string; count: number; rejected: number }
  | { ok: true; kind: typeof RECORD_KIND.INTERVAL_HISTOGRAM; record: IntervalHistogram }
  | { ok: true; kind: typeof RECORD_KIND.RUN_LIFECYCLE; record: RunLifecycle }
  | { ok: true; kind: typeof RECORD_KIND.SERVER_METRICS; record: ServerMetrics }
  | { ok: true; kind: typeof RECORD_KIND.PROFILE; record: ProfileRecord }
  | { ok: true; kind: typeof RECORD_KIND.SUMMARY_REPORT; record: SummaryReportRecord }
  | { ok: false; reason: RejectReason; detail: string }
