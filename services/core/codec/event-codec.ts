/**
 * Decoding of the messages of schemas/events.v1.ts: decodeMessage checks the
 * header and hands each record kind to its decoder (ops-decoder.ts,
 * histogram-decoder.ts, json-record-decoders.ts); peekRunId reads a message's
 * run id without decoding it. The writers are ops-batch-writer.ts and
 * record-encoders.ts.
 *
 * The hot paths (a driver appending an event, the processor visiting one)
 * allocate nothing per event: the writer appends varints into a growing
 * buffer and the reader hands a reused object to a visitor.
 */

import { ID_PATTERN, MAGIC_0, MAGIC_1, RECORD_KIND, SCHEMA_VERSION } from '../../../schemas/events.v1.js'
import type { DecodeLimits, DecodeResult, OpsVisitor } from './decode-result.js'
import { decodeHistogram } from './histogram-decoder.js'
import { decodeJson, decodeProfile, decodeSummaryReport } from './json-record-decoders.js'
import { MAX_ID_BYTES, Reader, Truncated } from './message-reader.js'
import { decodeOps } from './ops-decoder.js'

/**
 * The run id of a message without decoding it: binary kinds carry it right
 * after the header, JSON kinds in their body. undefined when the message is
 * not a well-formed Benchstream message (decodeMessage then says why).
 */
export function peekRunId(buf: Buffer | null): string | undefined {
  if (buf === null || buf.length < 6 || buf[0] !== MAGIC_0 || buf[1] !== MAGIC_1 || buf[2] !== SCHEMA_VERSION)
    return undefined
  const kind = buf[3]
  if (kind === RECORD_KIND.OPS || kind === RECORD_KIND.INTERVAL_HISTOGRAM) {
    const len = buf[4]!
    if (len === 0 || len > MAX_ID_BYTES || 5 + len > buf.length) return undefined
    const id = buf.toString('utf8', 5, 5 + len)
    return ID_PATTERN.test(id) ? id : undefined
  }
  if (
    kind === RECORD_KIND.RUN_LIFECYCLE ||
    kind === RECORD_KIND.SERVER_METRICS ||
    kind === RECORD_KIND.PROFILE ||
    kind === RECORD_KIND.SUMMARY_REPORT
  ) {
    try {
      const v = JSON.parse(buf.toString('utf8', 4)) as { runId?: unknown }
      return typeof v.runId === 'string' && ID_PATTERN.test(v.runId) ? v.runId : undefined
    } catch {
      return undefined
    }
  }
  return undefined
}

/**
 * Decodes one Kafka message. OPS events are streamed to the visitor;
 * structural problems reject the whole message, value problems reject the
 * single event. Never throws on any input.
 */
export function decodeMessage(buf: Buffer | null, limits: DecodeLimits, visitor: OpsVisitor): DecodeResult {
  if (buf === null || buf.length === 0) return { ok: false, reason: 'empty_message', detail: 'message has no value' }
  if (buf.length < 4)
    return { ok: false, reason: 'truncated', detail: `message is ${buf.length} bytes; the header alone is 4` }
  if (buf[0] !== MAGIC_0 || buf[1] !== MAGIC_1) {
    return {
      ok: false,
      reason: 'bad_magic',
      detail: `first bytes are 0x${buf.subarray(0, 2).toString('hex')}; expected 0x4253 ("BS")`,
    }
  }
  if (buf[2] !== SCHEMA_VERSION) {
    return {
      ok: false,
      reason: 'unknown_schema_version',
      detail: `schema version ${buf[2]}; this processor reads version ${SCHEMA_VERSION}`,
    }
  }
  const kind = buf[3]!
  try {
    switch (kind) {
      case RECORD_KIND.OPS:
        return decodeOps(new Reader(buf, 4), limits, visitor)
      case RECORD_KIND.INTERVAL_HISTOGRAM:
        return decodeHistogram(new Reader(buf, 4), limits)
      case RECORD_KIND.RUN_LIFECYCLE:
      case RECORD_KIND.SERVER_METRICS:
        return decodeJson(buf, kind, limits)
      case RECORD_KIND.PROFILE:
        return decodeProfile(buf, limits)
      case RECORD_KIND.SUMMARY_REPORT:
        return decodeSummaryReport(buf, limits)
      default:
        return {
          ok: false,
          reason: 'unknown_record_kind',
          detail: `record kind ${kind}; known kinds are ${Object.entries(RECORD_KIND)
            .map(([k, v]) => `${v} (${k})`)
            .join(', ')}`,
        }
    }
  } catch (err) {
    if (err instanceof Truncated)
      return { ok: false, reason: 'truncated', detail: `message of ${buf.length} bytes ends inside a field` }
    throw err
  }
}
