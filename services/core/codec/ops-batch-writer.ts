/**
 * The OPS batch writer: a driver lane appends one event at a time into a
 * growing buffer, allocating nothing per event (schemas/events.v1.ts, RECORD_KIND.OPS).
 */

import { MAGIC_0, MAGIC_1, RECORD_KIND, SCHEMA_VERSION } from '../../../schemas/events.v1.js'
import { writeVarint } from './varint.js'

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
