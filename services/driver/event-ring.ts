/**
 * A single-producer, single-consumer ring of fixed-size event records in a
 * SharedArrayBuffer: a client thread writes one record per operation (eight
 * numbers into preallocated memory, no allocation, no encoding), and the
 * delivery thread reads them, encodes OPS batches and sends them to Kafka.
 *
 * Head and tail are free-running 32-bit counters (capacity is a power of two
 * far below 2^31, so `head - tail` is exact); the producer owns the head and
 * the consumer the tail, each on its own cache line. The producer publishes
 * its head with Atomics.store, which orders the record's plain writes before
 * it, and the consumer reads the head with Atomics.load before the records.
 *
 * When the ring is full (the delivery thread got no CPU for a while) the
 * record is dropped and counted, never waited for: telemetry must not slow
 * the benchmark. The count travels with the ring and ends up in the run's
 * undelivered events.
 */

/** Bytes of one record: startUs (float64), latency, intended, bytes, codes (uint32 each), 4 spare. */
const RECORD_BYTES = 32
/** Header: head, tail, dropped (hi, lo), each on its own 64-byte line where it matters. */
const HEADER_BYTES = 192
// Int32 indexes in the header.
const HEAD = 0
const TAIL = 16
const DROPPED_SEQ = 32
const DROPPED_HI = 33
const DROPPED_LO = 34
/** Largest value of a uint32 field; larger values are clamped (the processor rejects them anyway). */
const U32_MAX = 0xffff_ffff

/** Default records per ring: 2^16 (2 MiB), about 65 ms of a client doing 1M ops/s. */
export const DEFAULT_RING_RECORDS = 1 << 16

/** A new ring's shared memory, for a producer and a consumer to attach to. */
export function createEventRing(records = DEFAULT_RING_RECORDS): SharedArrayBuffer {
  if (!Number.isInteger(records) || records < 2 || records > 1 << 24 || (records & (records - 1)) !== 0) {
    throw new RangeError(`ring size must be a power of two from 2 to 2^24 records; got ${records}`)
  }
  return new SharedArrayBuffer(HEADER_BYTES + records * RECORD_BYTES)
}

function capacityOf(sab: SharedArrayBuffer): number {
  const n = (sab.byteLength - HEADER_BYTES) / RECORD_BYTES
  if (!Number.isInteger(n) || n < 2 || (n & (n - 1)) !== 0)
    throw new RangeError('not an event ring: create it with createEventRing()')
  return n
}

/** Receives records from a ring; the argument order is EventSink.record()'s. */
export interface EventVisitor {
  /**
   * Makes the records written so far visible to whoever drains them, for a writer that publishes in steps
   * (RingProducer with publishEvery > 1): the client threads call it when they step aside and before they sleep.
   */
  publish?(): void
  record(
    thread: number,
    opCode: number,
    cacheIndex: number,
    statusIndex: number,
    startUs: number,
    latencyUs: number,
    intendedUs: number,
    bytes: number,
  ): void
}

/** The writing end; one per producing JS thread. Implements EventSink.record()'s signature. */
export class RingProducer implements EventVisitor {
  private readonly ctl: Int32Array
  private readonly f64: Float64Array
  private readonly u32: Uint32Array
  private readonly mask: number
  private readonly capacity: number
  private head: number
  private tail: number
  private unpublished = 0
  private droppedCount = 0

  /**
   * @param publishEvery records written between two publications of the head;
   *   1 makes every record visible at once. Larger values save a fenced store
   *   (and the cache line's trip to the consumer's core) per record; publish()
   *   shows the rest, and the client threads call it whenever they step aside
   *   or sleep (ThreadGroup in thread-group.ts).
   */
  constructor(
    sab: SharedArrayBuffer,
    private readonly publishEvery = 1,
  ) {
    this.capacity = capacityOf(sab)
    this.mask = this.capacity - 1
    this.ctl = new Int32Array(sab, 0, HEADER_BYTES / 4)
    this.f64 = new Float64Array(sab, HEADER_BYTES)
    this.u32 = new Uint32Array(sab, HEADER_BYTES)
    this.head = Atomics.load(this.ctl, HEAD)
    this.tail = Atomics.load(this.ctl, TAIL)
  }

  record(
    thread: number,
    opCode: number,
    cacheIndex: number,
    statusIndex: number,
    startUs: number,
    latencyUs: number,
    intendedUs: number,
    bytes: number,
  ): void {
    const h = this.head
    if (((h - this.tail) | 0) >= this.capacity) {
      this.tail = Atomics.load(this.ctl, TAIL)
      if (((h - this.tail) | 0) >= this.capacity) {
        this.drop()
        return
      }
    }
    const slot = h & this.mask
    this.f64[slot * 4] = startUs
    const u = slot * 8 + 2
    const u32 = this.u32
    u32[u] = latencyUs > U32_MAX ? U32_MAX : latencyUs
    u32[u + 1] = intendedUs > U32_MAX ? U32_MAX : intendedUs
    u32[u + 2] = bytes > U32_MAX ? U32_MAX : bytes
    u32[u + 3] = (thread << 16) | (opCode << 8) | (cacheIndex << 4) | statusIndex
    this.head = (h + 1) | 0
    if (++this.unpublished >= this.publishEvery) this.publish()
  }

  /** Makes every record written so far visible to the consumer. */
  publish(): void {
    if (this.unpublished === 0) return
    this.unpublished = 0
    Atomics.store(this.ctl, HEAD, this.head)
  }

  /** Records written but not published yet. */
  get unpublishedCount(): number {
    return this.unpublished
  }

  private drop(): void {
    this.droppedCount++
    // Two words so the count never wraps, behind a sequence word (odd while
    // writing) so that the consumer never reads half an update.
    Atomics.add(this.ctl, DROPPED_SEQ, 1)
    Atomics.store(this.ctl, DROPPED_LO, this.droppedCount % 2 ** 31)
    Atomics.store(this.ctl, DROPPED_HI, Math.floor(this.droppedCount / 2 ** 31))
    Atomics.add(this.ctl, DROPPED_SEQ, 1)
  }
}

/** The reading end; one per ring, in the delivery thread (or whoever delivers). */
export class RingConsumer {
  /** Records the ring holds. */
  readonly capacity: number
  private readonly ctl: Int32Array
  private readonly f64: Float64Array
  private readonly u32: Uint32Array
  private readonly mask: number
  private tail: number

  constructor(sab: SharedArrayBuffer) {
    this.capacity = capacityOf(sab)
    this.mask = this.capacity - 1
    this.ctl = new Int32Array(sab, 0, HEADER_BYTES / 4)
    this.f64 = new Float64Array(sab, HEADER_BYTES)
    this.u32 = new Uint32Array(sab, HEADER_BYTES)
    this.tail = Atomics.load(this.ctl, TAIL)
  }

  /** Hands every published record to the visitor, in order; returns how many. */
  drain(visitor: EventVisitor): number {
    const head = Atomics.load(this.ctl, HEAD)
    let t = this.tail
    const n = (head - t) | 0
    if (n === 0) return 0
    const f64 = this.f64
    const u32 = this.u32
    const mask = this.mask
    for (let i = 0; i < n; i++) {
      const slot = t & mask
      const u = slot * 8 + 2
      const codes = u32[u + 3]!
      visitor.record(
        codes >>> 16,
        (codes >>> 8) & 0xff,
        (codes >>> 4) & 0xf,
        codes & 0xf,
        f64[slot * 4]!,
        u32[u]!,
        u32[u + 1]!,
        u32[u + 2]!,
      )
      t = (t + 1) | 0
    }
    this.tail = t
    Atomics.store(this.ctl, TAIL, t)
    return n
  }
}

/**
 * What a ring holds now, readable from any thread: records published and not
 * yet drained, and records the producer dropped because the ring was full.
 */
export function ringState(sab: SharedArrayBuffer): { pending: number; dropped: number } {
  const ctl = new Int32Array(sab, 0, HEADER_BYTES / 4)
  return { pending: (Atomics.load(ctl, HEAD) - Atomics.load(ctl, TAIL)) | 0, dropped: readDropped(ctl) }
}

function readDropped(ctl: Int32Array): number {
  for (;;) {
    const seq = Atomics.load(ctl, DROPPED_SEQ)
    const hi = Atomics.load(ctl, DROPPED_HI)
    const lo = Atomics.load(ctl, DROPPED_LO)
    if ((seq & 1) === 0 && Atomics.load(ctl, DROPPED_SEQ) === seq) return hi * 2 ** 31 + lo
  }
}
