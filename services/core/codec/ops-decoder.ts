/**
 * The decoder of an OPS batch, the processor's hot path: a message of up to
 * MAX_COLUMN_EVENTS events is parsed once into a column scratch and visited
 * from there, a larger one in two passes; the visitor gets one reused object
 * per event and nothing is allocated per event.
 */

import {
  CACHE_OUTCOMES,
  MAX_BYTES,
  MAX_LATENCY_US,
  MAX_THREAD,
  OPERATIONS,
  RECORD_KIND,
  STATUSES,
} from '../../../schemas/events.v1.js'
import type { DecodedOp, DecodeLimits, DecodeResult, OpsVisitor, RejectReason } from './decode-result.js'
import { Truncated, type Reader } from './message-reader.js'

/** Smallest encoded event: six one-byte fields plus the zigzag delta. */
const MIN_EVENT_BYTES = 7

const scratch: DecodedOp = {
  thread: 0,
  opCode: 0,
  statusIndex: 0,
  cacheIndex: 0,
  startUs: 0,
  latencyUs: 0,
  intendedUs: 0,
  bytes: 0,
}

/**
 * Fields of one event in the column scratch: thread, op byte, status, zigzag start delta, latency, intended delta,
 * bytes.
 */
const FIELDS = 7
/** Events whose fields are parsed once into the column scratch; a message with more takes the two-pass path. */
const MAX_COLUMN_EVENTS = 65_536
/** The column scratch, grown to the largest message seen (at most MAX_COLUMN_EVENTS events: 3.7 MB). */
let columns = new Float64Array(4096 * FIELDS)
/** Where varintAt stopped. */
let varintEnd = 0

/**
 * The varint at p (as Reader.varint: at most 8 bytes), its end in varintEnd; -1 when it runs past `end` or past
 * 8 bytes. A function of its own, not a Reader method, so that the hot loop keeps its position in a local.
 */
function varintAt(buf: Buffer, p: number, end: number): number {
  if (p >= end) return -1
  let b = buf[p++]!
  if (b < 0x80) {
    varintEnd = p
    return b
  }
  let result = b & 0x7f
  let mul = 0x80
  for (let i = 1; i < 8; i++) {
    if (p >= end) return -1
    b = buf[p++]!
    result += (b & 0x7f) * mul
    if (b < 0x80) {
      varintEnd = p
      return result
    }
    mul *= 0x80
  }
  return -1
}

export function decodeOps(r: Reader, limits: DecodeLimits, visitor: OpsVisitor): DecodeResult {
  const runId = r.id()
  const clientId = r.id()
  if (runId === undefined || clientId === undefined)
    return {
      ok: false,
      reason: 'invalid_id',
      detail: 'run id or client id is empty, too long or has characters outside A-Z a-z 0-9 . _ : -',
    }
  const base = r.f64()
  const count = r.varint()
  if (!Number.isFinite(base))
    return { ok: false, reason: 'timestamp_out_of_range', detail: 'batch base time is not a finite number' }
  if (count * MIN_EVENT_BYTES > r.buf.length - r.pos) {
    return {
      ok: false,
      reason: 'truncated',
      detail: `batch claims ${count} events but only ${r.buf.length - r.pos} bytes follow`,
    }
  }
  // Structure first: a message that does not parse to the end is rejected
  // whole, before any of its events reach the visitor. A message of up to
  // MAX_COLUMN_EVENTS is parsed once, into the column scratch, and visited
  // from there; a larger one is parsed twice (a first pass that checks it).
  if (count > MAX_COLUMN_EVENTS) return decodeOpsTwoPasses(r, base, count, runId, clientId, limits, visitor)
  if (columns.length < count * FIELDS) columns = new Float64Array(count * FIELDS)
  const f = columns
  const buf = r.buf
  const end = buf.length
  let p = r.pos
  for (let i = 0, k = 0; i < count; i++, k += FIELDS) {
    let v = varintAt(buf, p, end)
    if (v < 0) throw new Truncated()
    f[k] = v
    p = varintEnd
    if (p + 2 > end) throw new Truncated()
    f[k + 1] = buf[p]!
    f[k + 2] = buf[p + 1]!
    p += 2
    for (let j = 3; j < FIELDS; j++) {
      v = varintAt(buf, p, end)
      if (v < 0) throw new Truncated()
      f[k + j] = v
      p = varintEnd
    }
  }
  if (p !== end)
    return {
      ok: false,
      reason: 'trailing_bytes',
      detail: `${end - p} bytes after the last of ${count} events`,
    }
  let rejected = 0
  const e = scratch
  for (let i = 0, k = 0; i < count; i++, k += FIELDS) {
    e.thread = f[k]!
    const opByte = f[k + 1]!
    e.opCode = opByte >> 4
    e.cacheIndex = (opByte >> 2) & 3
    e.statusIndex = f[k + 2]!
    const z = f[k + 3]!
    e.startUs = base + (z % 2 === 0 ? z / 2 : -(z + 1) / 2)
    e.latencyUs = f[k + 4]!
    e.intendedUs = e.latencyUs + f[k + 5]!
    e.bytes = f[k + 6]!
    const reason = checkEvent(e, opByte, limits)
    if (reason === undefined) visitor.event(e)
    else {
      rejected++
      visitor.reject(reason, i, e)
    }
  }
  return { ok: true, kind: RECORD_KIND.OPS, runId, clientId, count, rejected }
}

/** decodeOps for a message of more than MAX_COLUMN_EVENTS events: checks its structure, then parses it again. */
function decodeOpsTwoPasses(
  r: Reader,
  base: number,
  count: number,
  runId: string,
  clientId: string,
  limits: DecodeLimits,
  visitor: OpsVisitor,
): DecodeResult {
  const start = r.pos
  for (let i = 0; i < count; i++) {
    r.varint()
    r.u8()
    r.u8()
    r.varint()
    r.varint()
    r.varint()
    r.varint()
  }
  if (r.pos !== r.buf.length)
    return {
      ok: false,
      reason: 'trailing_bytes',
      detail: `${r.buf.length - r.pos} bytes after the last of ${count} events`,
    }
  r.pos = start
  let rejected = 0
  const e = scratch
  for (let i = 0; i < count; i++) {
    e.thread = r.varint()
    const opByte = r.u8()
    e.opCode = opByte >> 4
    e.cacheIndex = (opByte >> 2) & 3
    e.statusIndex = r.u8()
    const z = r.varint()
    e.startUs = base + (z % 2 === 0 ? z / 2 : -(z + 1) / 2)
    e.latencyUs = r.varint()
    e.intendedUs = e.latencyUs + r.varint()
    e.bytes = r.varint()
    const reason = checkEvent(e, opByte, limits)
    if (reason === undefined) visitor.event(e)
    else {
      rejected++
      visitor.reject(reason, i, e)
    }
  }
  return { ok: true, kind: RECORD_KIND.OPS, runId, clientId, count, rejected }
}

function checkEvent(e: DecodedOp, opByte: number, limits: DecodeLimits): RejectReason | undefined {
  if (e.opCode < 1 || e.opCode > OPERATIONS.length) return 'unknown_operation'
  if (e.cacheIndex >= CACHE_OUTCOMES.length) return 'unknown_cache_outcome'
  if ((opByte & 3) !== 0) return 'reserved_bits_set'
  if (e.statusIndex >= STATUSES.length) return 'unknown_status'
  if (e.latencyUs > MAX_LATENCY_US) return 'latency_out_of_range'
  if (e.intendedUs > MAX_LATENCY_US) return 'intended_latency_out_of_range'
  if (!(e.startUs >= limits.minStartUs && e.startUs <= limits.maxStartUs)) return 'timestamp_out_of_range'
  if (e.thread > MAX_THREAD) return 'thread_out_of_range'
  if (e.bytes > MAX_BYTES) return 'bytes_out_of_range'
  return undefined
}
