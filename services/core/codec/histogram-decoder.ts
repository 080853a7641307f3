/**
 * The decoder of an INTERVAL_HISTOGRAM record (a client's per-interval
 * histogram, as imported YCSB HDR logs send them).
 */

import {
  HISTOGRAM_BUCKETS,
  INTERVAL_SECTION,
  OPERATIONS,
  RECORD_KIND,
  STATUSES,
  type IntervalHistogram,
} from '../../../schemas/events.v1.js'
import type { DecodeLimits, DecodeResult } from './decode-result.js'
import type { Reader } from './message-reader.js'

/** Longest interval of an INTERVAL_HISTOGRAM record: one day. */
const MAX_INTERVAL_US = 86_400e6
/** Most operations in one interval (a trillion: far above any real client, far below float trouble). */
const MAX_INTERVAL_COUNT = 1e12

export function decodeHistogram(r: Reader, limits: DecodeLimits): DecodeResult {
  const runId = r.id()
  const clientId = r.id()
  if (runId === undefined || clientId === undefined)
    return {
      ok: false,
      reason: 'invalid_id',
      detail: 'run id or client id is empty, too long or has characters outside A-Z a-z 0-9 . _ : -',
    }
  const opCode = r.u8()
  const statusIndex = r.u8()
  const intervalStartUs = r.f64()
  const intervalLengthUs = r.varint()
  const n = r.varint()
  if (n * 2 > r.buf.length - r.pos)
    return {
      ok: false,
      reason: 'truncated',
      detail: `histogram claims ${n} buckets but only ${r.buf.length - r.pos} bytes follow`,
    }
  if (n > HISTOGRAM_BUCKETS)
    return {
      ok: false,
      reason: 'invalid_histogram',
      detail: `histogram claims ${n} buckets; the layout has ${HISTOGRAM_BUCKETS}`,
    }
  if (intervalLengthUs > MAX_INTERVAL_US)
    return {
      ok: false,
      reason: 'invalid_histogram',
      detail: `interval of ${intervalLengthUs} µs; at most ${MAX_INTERVAL_US} µs (one day) is accepted`,
    }
  const buckets = readBuckets(r, n)
  if (typeof buckets === 'string') return { ok: false, reason: 'invalid_histogram', detail: buckets }
  let intended: Array<[number, number]> | undefined
  if (r.pos < r.buf.length) {
    const tag = r.u8()
    if (tag !== INTERVAL_SECTION.INTENDED)
      return {
        ok: false,
        reason: 'trailing_bytes',
        detail:
          `${r.buf.length - r.pos + 1} bytes after the last bucket, starting with section tag ${tag}; ` +
          `the only section is ${INTERVAL_SECTION.INTENDED} (intended)`,
      }
    const m = r.varint()
    if (m * 2 > r.buf.length - r.pos)
      return {
        ok: false,
        reason: 'truncated',
        detail: `intended histogram claims ${m} buckets but only ${r.buf.length - r.pos} bytes follow`,
      }
    if (m > HISTOGRAM_BUCKETS)
      return {
        ok: false,
        reason: 'invalid_histogram',
        detail: `intended histogram claims ${m} buckets; the layout has ${HISTOGRAM_BUCKETS}`,
      }
    const ib = readBuckets(r, m)
    if (typeof ib === 'string') return { ok: false, reason: 'invalid_histogram', detail: `intended histogram: ${ib}` }
    intended = ib
  }
  if (r.pos !== r.buf.length)
    return { ok: false, reason: 'trailing_bytes', detail: `${r.buf.length - r.pos} bytes after the last bucket` }
  const op = OPERATIONS[opCode - 1]
  const status = STATUSES[statusIndex]
  if (op === undefined)
    return {
      ok: false,
      reason: 'unknown_operation',
      detail: `operation code ${opCode}; valid codes are 1..${OPERATIONS.length}`,
    }
  if (status === undefined)
    return {
      ok: false,
      reason: 'unknown_status',
      detail: `status index ${statusIndex}; valid are 0..${STATUSES.length - 1}`,
    }
  if (!(intervalStartUs >= limits.minStartUs && intervalStartUs <= limits.maxStartUs))
    return {
      ok: false,
      reason: 'timestamp_out_of_range',
      detail: `interval start ${intervalStartUs} µs is outside the accepted range`,
    }
  const record: IntervalHistogram = {
    kind: RECORD_KIND.INTERVAL_HISTOGRAM,
    runId,
    clientId,
    op,
    status,
    intervalStartUs,
    intervalLengthUs,
    buckets,
  }
  if (intended !== undefined) record.intended = intended
  return { ok: true, kind: RECORD_KIND.INTERVAL_HISTOGRAM, record }
}

/** n (index, count) pairs; a string says what is wrong with them. */
function readBuckets(r: Reader, n: number): Array<[number, number]> | string {
  const buckets: Array<[number, number]> = []
  let total = 0
  for (let i = 0; i < n; i++) {
    const idx = r.varint()
    const c = r.varint()
    if (idx >= HISTOGRAM_BUCKETS) return `bucket index ${idx}; valid indexes are 0..${HISTOGRAM_BUCKETS - 1}`
    total += c
    if (total > MAX_INTERVAL_COUNT) return `more than ${MAX_INTERVAL_COUNT} operations in one interval`
    buckets.push([idx, c])
  }
  return buckets
}
