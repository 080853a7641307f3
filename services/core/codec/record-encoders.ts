/**
 * Encoders of the record kinds other than OPS (an interval histogram, the JSON
 * records) and the codes of one event's fields. The OPS batch has its own
 * writer (ops-batch-writer.ts).
 */

import {
  CACHE_OUTCOMES,
  INTERVAL_SECTION,
  MAGIC_0,
  MAGIC_1,
  OPERATIONS,
  RECORD_KIND,
  SCHEMA_VERSION,
  STATUSES,
  type IntervalHistogram,
  type Operation,
  type RunLifecycle,
  type ServerMetrics,
  type Status,
  type SummaryReportRecord,
} from '../../../schemas/events.v1.js'
import { writeVarint } from './varint.js'

function header(kind: number): Buffer {
  return Buffer.from([MAGIC_0, MAGIC_1, SCHEMA_VERSION, kind])
}

function idBytes(id: string): Buffer {
  const b = Buffer.from(id)
  return Buffer.concat([Buffer.from([b.length]), b])
}

export function encodeIntervalHistogram(h: Omit<IntervalHistogram, 'kind'>): Buffer {
  const body = Buffer.allocUnsafe(40 + (h.buckets.length + (h.intended?.length ?? 0)) * 12)
  let p = 0
  body[p++] = OPERATIONS.indexOf(h.op) + 1
  body[p++] = STATUSES.indexOf(h.status)
  body.writeDoubleLE(h.intervalStartUs, p)
  p += 8
  p = writeVarint(body, p, h.intervalLengthUs)
  p = writeVarint(body, p, h.buckets.length)
  for (const [i, c] of h.buckets) {
    p = writeVarint(body, p, i)
    p = writeVarint(body, p, c)
  }
  if (h.intended !== undefined) {
    body[p++] = INTERVAL_SECTION.INTENDED
    p = writeVarint(body, p, h.intended.length)
    for (const [i, c] of h.intended) {
      p = writeVarint(body, p, i)
      p = writeVarint(body, p, c)
    }
  }
  return Buffer.concat([
    header(RECORD_KIND.INTERVAL_HISTOGRAM),
    idBytes(h.runId),
    idBytes(h.clientId),
    body.subarray(0, p),
  ])
}

export function encodeJsonRecord(record: RunLifecycle | ServerMetrics | SummaryReportRecord): Buffer {
  return Buffer.concat([header(record.kind), Buffer.from(JSON.stringify(record))])
}

/** Writer for the per-event fields of OpEvent-shaped objects (tests, adapters). */
export function opCodes(
  op: Operation,
  status: Status,
  cache: (typeof CACHE_OUTCOMES)[number],
): [opCode: number, statusIndex: number, cacheIndex: number] {
  return [OPERATIONS.indexOf(op) + 1, STATUSES.indexOf(status), CACHE_OUTCOMES.indexOf(cache)]
}
