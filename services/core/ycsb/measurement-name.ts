/**
 * YCSB measurement names, taken apart, from a report's `[NAME]` or an
 * interval log's file name. YCSB composes them as
 * `[Hdr|Raw|Bucket][Intended-]OP[-STATUS]`: Measurements.constructOneMeasurement
 * prefixes the halves of a two-in-one type, getOpIntendedMeasurement adds
 * `Intended-`, DBWrapper.measure appends `-FAILED` or the status name of a
 * failed operation. Interval logs are `<hdrhistogram.output.path><NAME>.hdr`.
 */
import { OPERATIONS, STATUSES, type Operation, type Status } from '../../../schemas/events.v1.js'
import type { MeasurementName } from './report-types.js'

/** Longest first, so READ-MODIFY-WRITE is not read as READ with a suffix. */
const OP_NAMES = [...OPERATIONS, 'CLEANUP'].sort((a, b) => b.length - a.length)
const OP_ALTERNATION = OP_NAMES.map((o) => o.replace(/-/g, '\\-')).join('|')
/** In a report the name stands alone, so any upper-case suffix is a status. */
const NAME = new RegExp(`^(Hdr|Raw|Bucket)?(Intended-)?(${OP_ALTERNATION})(?:-([A-Z][A-Z0-9_]*))?$`)
/** YCSB's Status names (site.ycsb.Status) and FAILED: in a file name, only these end a name. */
const YCSB_STATUSES = new Set([
  'OK',
  'ERROR',
  'NOT_FOUND',
  'NOT_IMPLEMENTED',
  'UNEXPECTED_STATE',
  'BAD_REQUEST',
  'FORBIDDEN',
  'SERVICE_UNAVAILABLE',
  'BATCHED_OK',
  'FAILED',
  'TIMEOUT',
])

/** Takes apart a measurement name as printed in `[NAME]`; names no YCSB core code writes come back as kind `other`. */
export function parseMeasurementName(name: string): MeasurementName {
  const m = NAME.exec(name)
  if (m === null)
    return {
      name,
      kind: 'other',
      op: undefined,
      latency: 'measured',
      ycsbStatus: undefined,
      status: 'OK',
      part: undefined,
    }
  const op = m[3]!
  const ycsbStatus = m[4]
  return {
    name,
    kind: op === 'CLEANUP' ? 'cleanup' : 'operation',
    op: op === 'CLEANUP' ? undefined : (op as Operation),
    latency: m[2] === undefined ? 'measured' : 'intended',
    ycsbStatus,
    status: benchstreamStatus(ycsbStatus),
    part: m[1] as MeasurementName['part'],
  }
}

function benchstreamStatus(ycsbStatus: string | undefined): Status {
  if (ycsbStatus === undefined || ycsbStatus === 'BATCHED_OK') return 'OK'
  return STATUSES.find((s) => s === ycsbStatus) ?? 'ERROR'
}

/**
 * The measurement a log file's name stands for: `<prefix><NAME>.hdr`, the
 * prefix being whatever `hdrhistogram.output.path` was (`ycsb-`, `run1/client2-`).
 * The shortest prefix that leaves a YCSB name wins; a status suffix must be
 * one of YCSB's, so `READ-UPDATE.hdr` is UPDATE with prefix `READ-`.
 * Undefined when the name holds no operation.
 */
export function measurementFromFileName(fileName: string): { name: MeasurementName; prefix: string } | undefined {
  const base = (fileName.split(/[\\/]/).pop() ?? fileName).replace(/\.(?:hdr|hlog|log|txt)$/i, '')
  for (let i = 0; i < base.length; i++) {
    const name = parseMeasurementName(base.slice(i))
    if (name.kind !== 'other' && (name.ycsbStatus === undefined || YCSB_STATUSES.has(name.ycsbStatus)))
      return { name, prefix: base.slice(0, i) }
  }
  return undefined
}
