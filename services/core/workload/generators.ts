/**
 * Number generators with YCSB's semantics (site.ycsb.generator.*). Randomness
 * comes from an Rng argument (seeded, reproducible); nothing allocates per
 * draw (docs/design/workload.md#generators-generatorsts). The Zipfian ones
 * are zipfian-generators.ts; the interface and argument checks
 * number-generator.ts; the key hash fnv-hash.ts.
 */

import { invalid, requireInteger, requireRange, type NumberGenerator } from './number-generator.js'
import type { Rng } from './random.js'

/** Always the same value (YCSB's ConstantIntegerGenerator). */
export class ConstantIntegerGenerator implements NumberGenerator {
  constructor(private readonly value: number) {}
  nextValue(): number {
    return this.value
  }
  lastValue(): number {
    return this.value
  }
}

/** Uniform integers in [lb, ub], both inclusive (YCSB's UniformLongGenerator). */
export class UniformLongGenerator implements NumberGenerator {
  private readonly interval: number
  private last: number
  constructor(
    private readonly rng: Rng,
    private readonly lb: number,
    ub: number,
  ) {
    requireRange('lower bound', lb, 'upper bound', ub)
    this.interval = ub - lb + 1
    this.last = lb
  }
  nextValue(): number {
    this.last = this.lb + this.rng.int(this.interval)
    return this.last
  }
  lastValue(): number {
    return this.last
  }
}

/** lb, lb+1, ..., ub, lb, ... (YCSB's SequentialGenerator, which wraps around). */
export class SequentialGenerator implements NumberGenerator {
  private readonly interval: number
  private offset = 0
  private last: number
  constructor(
    private readonly lb: number,
    ub: number,
  ) {
    requireRange('lower bound', lb, 'upper bound', ub)
    this.interval = ub - lb + 1
    this.last = lb
  }
  nextValue(): number {
    this.last = this.lb + this.offset
    this.offset = this.offset + 1 === this.interval ? 0 : this.offset + 1
    return this.last
  }
  lastValue(): number {
    return this.last
  }
}

/** start, start+1, ... (YCSB's CounterGenerator). */
export class CounterGenerator implements NumberGenerator {
  protected counter: number
  constructor(start: number) {
    requireInteger('counter start', start)
    this.counter = start
  }
  nextValue(): number {
    return this.counter++
  }
  /** The value most recently handed out (start - 1 before the first). */
  lastValue(): number {
    return this.counter - 1
  }
}

/** Default acknowledgement window: YCSB's 2^20 slots, 1 MiB here. */
export const ACK_WINDOW_DEFAULT = 1 << 20

/**
 * YCSB's AcknowledgedCounterGenerator: lastValue() is the end of the
 * contiguous acknowledged prefix, so reads never see keys still being
 * inserted. A ring of `windowSize` slots bounds memory; a value more than
 * `windowSize` past the prefix throws rather than overwrite a pending slot.
 */
export class AcknowledgedCounterGenerator extends CounterGenerator {
  private readonly window: Uint8Array
  private readonly mask: number
  private limit: number
  private readonly start: number

  constructor(start: number, windowSize = ACK_WINDOW_DEFAULT) {
    super(start)
    if (
      !Number.isSafeInteger(windowSize) ||
      windowSize < 1 ||
      (windowSize & (windowSize - 1)) !== 0 ||
      windowSize > 2 ** 30
    ) {
      throw invalid(`acknowledgement window must be a power of two in [1, 2^30]; got ${windowSize}`)
    }
    this.window = new Uint8Array(windowSize)
    this.mask = windowSize - 1
    this.start = start
    this.limit = start - 1
  }

  override nextValue(): number {
    // The slot of `counter` is shared with counter - windowSize, which must already be acknowledged.
    if (this.counter - this.limit > this.window.length) {
      throw invalid(
        `more than ${this.window.length} insert keys are unacknowledged (oldest pending key ${this.limit + 1}); ` +
          'every insert handed out must be acknowledged, whether it succeeded or failed',
      )
    }
    return this.counter++
  }

  /** The highest value v such that every value in [start, v] is acknowledged (start - 1 when none). */
  override lastValue(): number {
    return this.limit
  }

  /**
   * Marks a handed-out value as finished. Values below the start or already
   * inside the acknowledged prefix are ignored (acknowledging twice is harmless).
   */
  acknowledge(value: number): void {
    if (value <= this.limit || value < this.start) return
    if (value >= this.counter || !Number.isSafeInteger(value)) {
      throw invalid(`cannot acknowledge ${value}: it was never handed out (next value is ${this.counter})`)
    }
    const w = this.window
    const mask = this.mask
    w[value & mask] = 1
    if (value !== this.limit + 1) return
    let i = value
    while (w[i & mask] === 1) {
      w[i & mask] = 0
      i++
    }
    this.limit = i - 1
  }
}

/**
 * A hot set and a cold set (YCSB's HotspotIntegerGenerator): the first
 * floor(range * hotsetFraction) values of [lb, ub] receive hotOpnFraction of
 * the draws, uniformly; the rest of the range receives the remainder.
 */
export class HotspotIntegerGenerator implements NumberGenerator {
  /** Number of values in the hot set [lb, lb + hotInterval). */
  readonly hotInterval: number
  readonly coldInterval: number
  private last: number

  constructor(
    private readonly rng: Rng,
    private readonly lb: number,
    ub: number,
    hotsetFraction: number,
    private readonly hotOpnFraction: number,
  ) {
    requireRange('hotspot lower bound', lb, 'hotspot upper bound', ub)
    if (!(hotsetFraction >= 0 && hotsetFraction <= 1))
      throw invalid(`hotspotdatafraction must be in [0, 1]; got ${hotsetFraction}`)
    if (!(hotOpnFraction >= 0 && hotOpnFraction <= 1))
      throw invalid(`hotspotopnfraction must be in [0, 1]; got ${hotOpnFraction}`)
    const interval = ub - lb + 1
    this.hotInterval = Math.floor(interval * hotsetFraction)
    this.coldInterval = interval - this.hotInterval
    this.last = lb
  }

  nextValue(): number {
    // An empty set gets no draws (YCSB would divide by zero).
    const hot = this.coldInterval === 0 || (this.hotInterval > 0 && this.rng.next() < this.hotOpnFraction)
    this.last = hot
      ? this.lb + this.rng.int(this.hotInterval)
      : this.lb + this.hotInterval + this.rng.int(this.coldInterval)
    return this.last
  }

  lastValue(): number {
    return this.last
  }
}

/**
 * Exponentially distributed doubles >= 0 such that `percentile` per cent of
 * the draws fall below `range` (YCSB's ExponentialGenerator; CoreWorkload
 * subtracts the draw from the newest key, so recent keys are hot).
 */
export class ExponentialGenerator implements NumberGenerator {
  /** Rate parameter: 1 / mean. */
  private readonly gamma: number
  private last = 0

  constructor(
    private readonly rng: Rng,
    percentile: number,
    range: number,
  ) {
    if (!(percentile > 0 && percentile < 100))
      throw invalid(`exponential.percentile must be in (0, 100), exclusive; got ${percentile}`)
    if (!(range > 0 && Number.isFinite(range)))
      throw invalid(`exponential range (recordcount * exponential.frac) must be > 0; got ${range}`)
    this.gamma = -Math.log(1 - percentile / 100) / range
  }

  nextValue(): number {
    // 1 - u is in (0, 1], so the log is finite.
    this.last = -Math.log(1 - this.rng.next()) / this.gamma
    return this.last
  }

  lastValue(): number {
    return this.last
  }
}

/** One weighted choice of a DiscreteGenerator. */
export interface WeightedChoice<T> {
  weight: number
  value: T
}

/**
 * Weighted choice among values (YCSB's DiscreteGenerator, which picks the
 * operation of each transaction). Weights need not add up to 1; zero-weight
 * choices are never picked.
 */
export class DiscreteGenerator<T> {
  private readonly values: T[]
  // Cumulative probabilities; the last is exactly 1 so every u < 1 lands somewhere.
  private readonly cumulative: Float64Array
  private last: T

  constructor(
    private readonly rng: Rng,
    choices: ReadonlyArray<WeightedChoice<T>>,
  ) {
    const kept = choices.filter((c) => {
      if (!(c.weight >= 0 && Number.isFinite(c.weight)))
        throw invalid(`weights must be finite and >= 0; got ${c.weight} for ${String(c.value)}`)
      return c.weight > 0
    })
    const first = kept[0]
    if (first === undefined) throw invalid('a discrete choice needs at least one positive weight')
    const total = kept.reduce((s, c) => s + c.weight, 0)
    this.values = kept.map((c) => c.value)
    this.cumulative = new Float64Array(kept.length)
    let acc = 0
    kept.forEach((c, i) => {
      acc += c.weight
      this.cumulative[i] = acc / total
    })
    this.cumulative[kept.length - 1] = 1
    this.last = first.value
  }

  nextValue(): T {
    const u = this.rng.next()
    const cum = this.cumulative
    let i = 0
    while (u >= cum[i]!) i++
    this.last = this.values[i]!
    return this.last
  }

  lastValue(): T {
    return this.last
  }
}
