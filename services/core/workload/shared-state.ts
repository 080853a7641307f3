/**
 * The part of a CoreWorkload YCSB's client threads share, in a
 * SharedArrayBuffer, so one client's worker_threads behave as YCSB's threads:
 * the load key sequence, the run-phase insert sequence with its acknowledgement
 * window, and the `sequential` position. Counters are 64-bit; the acknowledged
 * limit is cached behind a generation word (docs/design/workload.md).
 */
import { BenchstreamError } from '../errors.js'
import { ACK_WINDOW_DEFAULT } from './generators.js'
import type { NumberGenerator } from './number-generator.js'

// BigInt64Array slots.
const LOAD_NEXT = 0
const INSERT_NEXT = 1
const INSERT_LIMIT = 2
const SEQUENTIAL_NEXT = 3
const INSERT_START = 4
const BIG_SLOTS = 8
// Int32Array slots, after the 64-bit ones.
const LOCK = 0
const GENERATION = 1
const WINDOW_BITS = 2
const INT_SLOTS = 16
const HEADER_BYTES = BIG_SLOTS * 8 + INT_SLOTS * 4

function invalid(message: string): BenchstreamError {
  return new BenchstreamError('BS_ERR_WORKLOAD', message)
}

/** Starting points of the shared sequences (from the workload's properties). */
export interface SharedStateInit {
  /** First key number of the load phase (insertstart). */
  loadStart: number
  /** First key number of run-phase inserts (recordcount). */
  insertStart: number
  /** Slots of the acknowledgement window, a power of two. @default ACK_WINDOW_DEFAULT (2^20) */
  windowSize?: number
}

/** A fresh shared state for one phase of one client. */
export function createSharedWorkloadState(init: SharedStateInit): SharedArrayBuffer {
  const windowSize = init.windowSize ?? ACK_WINDOW_DEFAULT
  if (
    !Number.isSafeInteger(windowSize) ||
    windowSize < 1 ||
    (windowSize & (windowSize - 1)) !== 0 ||
    windowSize > 2 ** 30
  ) {
    throw invalid(`acknowledgement window must be a power of two in [1, 2^30]; got ${windowSize}`)
  }
  const sab = new SharedArrayBuffer(HEADER_BYTES + windowSize)
  const big = new BigInt64Array(sab, 0, BIG_SLOTS)
  const ints = new Int32Array(sab, BIG_SLOTS * 8, INT_SLOTS)
  big[LOAD_NEXT] = BigInt(init.loadStart)
  big[INSERT_NEXT] = BigInt(init.insertStart)
  big[INSERT_LIMIT] = BigInt(init.insertStart - 1)
  big[INSERT_START] = BigInt(init.insertStart)
  big[SEQUENTIAL_NEXT] = 0n
  ints[WINDOW_BITS] = Math.log2(windowSize)
  return sab
}

interface Views {
  big: BigInt64Array
  ints: Int32Array
  window: Uint8Array
}

function views(sab: SharedArrayBuffer): Views {
  if (sab.byteLength < HEADER_BYTES + 1)
    throw invalid('shared workload state is too small: create it with createSharedWorkloadState()')
  const ints = new Int32Array(sab, BIG_SLOTS * 8, INT_SLOTS)
  const size = 2 ** ints[WINDOW_BITS]!
  if (sab.byteLength !== HEADER_BYTES + size)
    throw invalid('shared workload state has the wrong size: create it with createSharedWorkloadState()')
  return { big: new BigInt64Array(sab, 0, BIG_SLOTS), ints, window: new Uint8Array(sab, HEADER_BYTES, size) }
}

/** The load key sequence: start, start+1, ... across all threads (YCSB's CounterGenerator). */
export class SharedCounterGenerator implements NumberGenerator {
  private readonly big: BigInt64Array
  constructor(sab: SharedArrayBuffer) {
    this.big = views(sab).big
  }
  nextValue(): number {
    return Number(Atomics.add(this.big, LOAD_NEXT, 1n))
  }
  lastValue(): number {
    return Number(Atomics.load(this.big, LOAD_NEXT)) - 1
  }
}

/** lb .. ub and round again, one position for all threads (YCSB's SequentialGenerator). */
export class SharedSequentialGenerator implements NumberGenerator {
  private readonly big: BigInt64Array
  private readonly interval: bigint
  private last: number
  constructor(
    sab: SharedArrayBuffer,
    private readonly lb: number,
    ub: number,
  ) {
    if (!Number.isSafeInteger(lb) || !Number.isSafeInteger(ub) || ub < lb || lb < 0)
      throw invalid(`upper bound (${ub}) must be >= lower bound (${lb}), both integers >= 0`)
    this.big = views(sab).big
    this.interval = BigInt(ub - lb + 1)
    this.last = lb
  }
  nextValue(): number {
    this.last = this.lb + Number(Atomics.add(this.big, SEQUENTIAL_NEXT, 1n) % this.interval)
    return this.last
  }
  lastValue(): number {
    return this.last
  }
}

/**
 * The run-phase insert key sequence with its acknowledgement window, shared by
 * all threads. acknowledge() marks its slot; whoever gets the lock advances the
 * limit (YCSB's tryLock), and the holder re-checks the next slot after
 * unlocking, so no acknowledgement is left behind.
 */
export class SharedAcknowledgedCounterGenerator implements NumberGenerator {
  private readonly big: BigInt64Array
  private readonly ints: Int32Array
  private readonly window: Uint8Array
  private readonly mask: number
  private readonly start: number
  private generation = -1
  private limit = 0

  constructor(sab: SharedArrayBuffer) {
    const v = views(sab)
    this.big = v.big
    this.ints = v.ints
    this.window = v.window
    this.mask = v.window.length - 1
    this.start = Number(v.big[INSERT_START])
  }

  nextValue(): number {
    const value = Number(Atomics.add(this.big, INSERT_NEXT, 1n))
    // The slot of `value` is shared with value - windowSize, which must already be acknowledged.
    if (value - this.lastValue() > this.window.length) {
      throw invalid(
        `more than ${this.window.length} insert keys are unacknowledged ` +
          `(oldest pending key ${this.lastValue() + 1}); ` +
          'every insert handed out must be acknowledged, whether it succeeded or failed',
      )
    }
    return value
  }

  /** The highest value v such that every value in [start, v] is acknowledged (start - 1 when none). */
  lastValue(): number {
    const g = Atomics.load(this.ints, GENERATION)
    if (g !== this.generation) {
      // Read the generation first: a limit read after it is at least as new.
      this.generation = g
      this.limit = Number(Atomics.load(this.big, INSERT_LIMIT))
    }
    return this.limit
  }

  acknowledge(value: number): void {
    if (value < this.start || value <= this.lastValue()) return
    if (!Number.isSafeInteger(value) || value >= Number(Atomics.load(this.big, INSERT_NEXT))) {
      throw invalid(`cannot acknowledge ${value}: it was never handed out`)
    }
    const w = this.window
    const mask = this.mask
    Atomics.store(w, value & mask, 1)
    for (;;) {
      if (Atomics.compareExchange(this.ints, LOCK, 0, 1) !== 0) return
      const limit = Number(Atomics.load(this.big, INSERT_LIMIT))
      let i = limit + 1
      while (Atomics.load(w, i & mask) === 1) {
        Atomics.store(w, i & mask, 0)
        i++
      }
      if (i - 1 !== limit) {
        Atomics.store(this.big, INSERT_LIMIT, BigInt(i - 1))
        Atomics.add(this.ints, GENERATION, 1)
      }
      Atomics.store(this.ints, LOCK, 0)
      // An acknowledgement that found the lock taken may have marked slot i meanwhile.
      if (Atomics.load(w, i & mask) !== 1) return
    }
  }
}
