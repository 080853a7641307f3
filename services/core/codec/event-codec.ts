/**
 * Encoder and decoder for the record batches of schemas/events.v1.ts.
 *
 * The hot paths (a driver appending an event, the processor visiting one)
 * allocate nothing per event: the writer appends varints into a growing
 * buffer and the reader hands a reused object to a visitor.
 */
import {
  CACHE_OUTCOMES,
  HISTOGRAM_BUCKETS,
  ID_PATTERN,
  INTERVAL_SECTION,
  MAGIC_0,
  MAGIC_1,
  MAX_BYTES,
  MAX_LATENCY_US,
  MAX_THREAD,
  OPERATIONS,
  RECORD_KIND,
  SCHEMA_VERSION,
  STATUSES,
  MAX_JSON_RECORD_BYTES,
  MAX_PROFILE_RECORD_BYTES,
  MAX_PROFILE_SPAN_US,
  ProfileRecordBody,
  RunLifecycleBody,
  ServerMetricsBody,
  SummaryReportBody,
  type IntervalHistogram,
  type Operation,
  type ProfileRecord,
  type RunLifecycle,
  type ServerMetrics,
  type Status,
  type SummaryReportRecord,
} from '../../../schemas/events.v1.js'
import type { Static } from 'typebox'
import { Compile } from 'typebox/compile'
import { schemaProblems } from '../validation.js'

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

const MAX_ID_BYTES = 64
/** Longest interval of an INTERVAL_HISTOGRAM record: one day. */
const MAX_INTERVAL_US = 86_400e6
/** Most operations in one interval (a trillion: far above any real client, far below float trouble). */
const MAX_INTERVAL_COUNT = 1e12
/** Smallest encoded event: six one-byte fields plus the zigzag delta. */
const MIN_EVENT_BYTES = 7

// ---------------------------------------------------------------- writer

/** Most bytes one event takes: five varints of at most 8 bytes (values up to 2^53) and two code bytes. */
const MAX_EVENT_BYTES = 48
/** Most bytes of a batch's event count (a varint; 5 bytes hold 2^35 events). */
const MAX_COUNT_BYTES = 5
/** Finished buffers a writer keeps for later batches (recycle()). */
const MAX_SPARE_BUFFERS = 32

/**
 * Builds one OPS batch. Not thread-safe; one per emitting lane.
 *
 * The events are written after room reserved for the header, and finish()
 * writes the header into that room. A message that fills at least half of
 * the buffer is a view of it, not a copy, and the writer goes on in another
 * buffer: a spare one given back with recycle() once the message was sent,
 * else a new one. A smaller message is copied out (a sealed batch must not
 * hold far more memory than its bytes: a sink keeps thousands while Kafka is
 * down) and the writer keeps its buffer.
 */
export class OpsBatchWriter {
  private buf: Buffer
  private pos: number
  private baseUs = 0
  count = 0
  /** Magic, version, kind, run id and client id: the start of every batch's header. */
  private readonly prefix: Buffer
  /** Bytes reserved before the events: the prefix, the base time and the longest count. */
  private readonly reserved: number
  /** Memory of the messages finish() returned and recycle() has not taken back (it takes back only those). */
  private readonly handedOut = new WeakSet<ArrayBuffer>()
  private readonly spare: Buffer[] = []

  constructor(
    readonly runId: string,
    readonly clientId: string,
    initialBytes = 64 * 1024,
  ) {
    const run = Buffer.from(runId)
    const client = Buffer.from(clientId)
    this.prefix = Buffer.concat([
      Buffer.from([MAGIC_0, MAGIC_1, SCHEMA_VERSION, RECORD_KIND.OPS, run.length]),
      run,
      Buffer.from([client.length]),
      client,
    ])
    this.reserved = this.prefix.length + 8 + MAX_COUNT_BYTES
    this.buf = this.allocate(Math.max(initialBytes, this.reserved + MAX_EVENT_BYTES))
    this.pos = this.reserved
  }

  /** Appends one event. Codes are indexes into the schema's tables (op code = index + 1). */
  add(
    thread: number,
    opCode: number,
    cacheIndex: number,
    statusIndex: number,
    startUs: number,
    latencyUs: number,
    intendedUs: number,
    bytes: number,
  ): void {
    if (this.buf.length - this.pos < MAX_EVENT_BYTES) this.grow()
    if (this.count === 0) this.baseUs = startUs
    this.count++
    const buf = this.buf
    let p = writeVarint(buf, this.pos, thread)
    buf[p++] = (opCode << 4) | (cacheIndex << 2)
    buf[p++] = statusIndex
    const delta = startUs - this.baseUs
    p = writeVarint(buf, p, delta >= 0 ? delta * 2 : -delta * 2 - 1)
    p = writeVarint(buf, p, latencyUs)
    p = writeVarint(buf, p, intendedUs > latencyUs ? intendedUs - latencyUs : 0)
    this.pos = writeVarint(buf, p, bytes)
  }

  /** Encoded size of the events so far, for batch-size limits. */
  get size(): number {
    return this.pos - this.reserved
  }

  /**
   * Returns the finished message and resets the writer for the next batch.
   * The message stays valid until it is given to recycle().
   */
  finish(): Buffer {
    const buf = this.buf
    let countBytes = 1
    for (let c = this.count; c >= 0x80; c = Math.floor(c / 0x80)) countBytes++
    const start = this.reserved - (this.prefix.length + 8 + countBytes)
    const p = start + this.prefix.copy(buf, start)
    buf.writeDoubleLE(this.baseUs, p)
    writeVarint(buf, p + 8, this.count)
    const end = this.pos
    this.pos = this.reserved
    this.count = 0
    if ((end - start) * 2 < buf.length) return Buffer.from(buf.subarray(start, end))
    this.handedOut.add(buf.buffer as ArrayBuffer)
    this.buf = this.spare.pop() ?? this.allocate(buf.length)
    return buf.subarray(start, end)
  }

  /**
   * Gives back a message finish() returned, once nothing reads it any more
   * (the broker acknowledged it, or it was dropped): a later batch is written
   * into its memory. Anything else is ignored.
   */
  recycle(message: Buffer): void {
    const whole = message.buffer
    if (!(whole instanceof ArrayBuffer) || !this.handedOut.has(whole)) return
    // Taken back once: a second recycle() of the same message must not hand its memory out twice.
    this.handedOut.delete(whole)
    if (this.spare.length < MAX_SPARE_BUFFERS) this.spare.push(Buffer.from(whole))
  }

  private allocate(bytes: number): Buffer {
    // Never from Node's shared pool: the memory is this writer's alone, so it can be reused.
    return Buffer.allocUnsafeSlow(bytes)
  }

  private grow(): void {
    const next = this.allocate(this.buf.length * 2)
    this.buf.copy(next, 0, 0, this.pos)
    this.buf = next
  }
}

/**
 * Writes an unsigned LEB128 varint of a non-negative integer up to 2^53. Below 2^31 (every value but far
 * timestamps) with 32-bit integer operations; the same bytes as the division below.
 */
function writeVarint(buf: Buffer, pos: number, v: number): number {
  if (v < 0x8000_0000) {
    while (v >= 0x80) {
      buf[pos++] = (v & 0x7f) | 0x80
      v >>>= 7
    }
    buf[pos++] = v
    return pos
  }
  while (v >= 0x80) {
    buf[pos++] = (v % 0x80) | 0x80
    v = Math.floor(v / 0x80)
  }
  buf[pos++] = v
  return pos
}

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

// ---------------------------------------------------------------- reader

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

class Truncated extends Error {}

/** Cursor over a message; throws Truncated when reading past the end. */
class Reader {
  pos: number
  constructor(
    readonly buf: Buffer,
    start: number,
  ) {
    this.pos = start
  }
  u8(): number {
    if (this.pos >= this.buf.length) throw new Truncated()
    return this.buf[this.pos++]!
  }
  f64(): number {
    if (this.pos + 8 > this.buf.length) throw new Truncated()
    const v = this.buf.readDoubleLE(this.pos)
    this.pos += 8
    return v
  }
  varint(): number {
    const buf = this.buf
    let result = 0
    let mul = 1
    for (let i = 0; i < 8; i++) {
      if (this.pos >= buf.length) throw new Truncated()
      const b = buf[this.pos++]!
      result += (b & 0x7f) * mul
      if (b < 0x80) return result
      mul *= 0x80
    }
    // More than 8 varint bytes would exceed 2^56: never produced by the writer.
    throw new Truncated()
  }
  id(): string | undefined {
    const len = this.u8()
    if (this.pos + len > this.buf.length) throw new Truncated()
    const s = this.buf.toString('utf8', this.pos, this.pos + len)
    this.pos += len
    return len > 0 && len <= MAX_ID_BYTES && ID_PATTERN.test(s) ? s : undefined
  }
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

function decodeOps(r: Reader, limits: DecodeLimits, visitor: OpsVisitor): DecodeResult {
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

function decodeHistogram(r: Reader, limits: DecodeLimits): DecodeResult {
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

/** Compiled once: the JSON record bodies are checked against schemas/events.v1.ts. */
const lifecycleBody = Compile(RunLifecycleBody)
const serverMetricsBody = Compile(ServerMetricsBody)
/** Problems named in one dead letter's detail. */
const MAX_PROBLEMS_LISTED = 3

function decodeJson(
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

function decodeSummaryReport(buf: Buffer, limits: DecodeLimits): DecodeResult {
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

function decodeProfile(buf: Buffer, limits: DecodeLimits): DecodeResult {
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

/** Writer for the per-event fields of OpEvent-shaped objects (tests, adapters). */
export function opCodes(
  op: Operation,
  status: Status,
  cache: (typeof CACHE_OUTCOMES)[number],
): [opCode: number, statusIndex: number, cacheIndex: number] {
  return [OPERATIONS.indexOf(op) + 1, STATUSES.indexOf(status), CACHE_OUTCOMES.indexOf(cache)]
}
