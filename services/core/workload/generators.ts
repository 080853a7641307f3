/**
 * Number generators with YCSB's semantics (site.ycsb.generator.*). Randomness
 * comes from an Rng argument (seeded, reproducible); nothing allocates per
 * draw (docs/design/workload.md#generators-generatorsts).
 */
import { BenchstreamError } from '../errors.js'
import type { Rng } from './random.js'

/** What YCSB calls a NumberGenerator: draws values and remembers the last one. */
export interface NumberGenerator {
  nextValue(): number
  /** The value most recently drawn (YCSB's lastValue()). */
  lastValue(): number
}

function invalid(message: string): BenchstreamError {
  return new BenchstreamError('BS_ERR_WORKLOAD', message)
}

function requireInteger(name: string, value: number, min = 0): void {
  if (!Number.isSafeInteger(value) || value < min) {
    throw invalid(`${name} must be an integer in [${min}, ${Number.MAX_SAFE_INTEGER}]; got ${value}`)
  }
}

function requireRange(lbName: string, lb: number, ubName: string, ub: number): void {
  requireInteger(lbName, lb)
  requireInteger(ubName, ub)
  if (ub < lb) throw invalid(`${ubName} (${ub}) must be >= ${lbName} (${lb})`)
}

// ---------------------------------------------------------------------------
// FNV-1a 64-bit, as YCSB's Utils.fnvhash64: the eight little-endian bytes of
// the value, offset basis 0xcbf29ce484222325, prime 0x100000001b3, then
// Math.abs of the signed 64-bit result. Done on two 32-bit halves so that key
// building never touches BigInt (about 20x slower here).

const TWO_POW_32 = 4294967296
const FNV_OFFSET_HI = 0xcbf29ce4
const FNV_OFFSET_LO = 0x84222325
// The prime is 2^40 + 435: multiplying is "times 435" plus "shift left by 40".
const FNV_PRIME_LOW = 435

// The hash of the last fnv() call, as Math.abs'd unsigned halves. Module
// scratch instead of a returned pair: no allocation on the hot path.
let hashHi = 0
let hashLo = 0

function fnv(value: number): void {
  let vLo = value >>> 0
  let vHi = Math.floor(value / TWO_POW_32) >>> 0
  let hHi = FNV_OFFSET_HI
  let hLo = FNV_OFFSET_LO
  for (let i = 0; i < 8; i++) {
    hLo = (hLo ^ (vLo & 0xff)) >>> 0
    vLo = ((vLo >>> 8) | ((vHi & 0xff) << 24)) >>> 0
    vHi >>>= 8
    const lo = hLo * FNV_PRIME_LOW // < 2^41, exact in a double
    hHi = (Math.imul(hHi, FNV_PRIME_LOW) + Math.floor(lo / TWO_POW_32) + (hLo << 8)) >>> 0
    hLo = lo >>> 0
  }
  if (hHi >= 0x80000000) {
    // Two's-complement negation (Java's Math.abs of a negative long).
    hLo = (~hLo + 1) >>> 0
    hHi = (~hHi + (hLo === 0 ? 1 : 0)) >>> 0
  }
  hashHi = hHi
  hashLo = hLo
}

function checkHashInput(value: number): void {
  if (!(value >= 0 && Number.isSafeInteger(value))) {
    throw invalid(`fnvhash64 takes an integer in [0, ${Number.MAX_SAFE_INTEGER}]; got ${value}`)
  }
}

/**
 * YCSB's `Utils.fnvhash64(value)` as a decimal string, exactly what Java's
 * `Long.toString` prints, so hashed key names match YCSB's ("user" + this).
 * `value` must be a non-negative safe integer.
 */
export function fnvhash64(value: number): string {
  checkHashInput(value)
  fnv(value)
  const hi = hashHi
  const lo = hashLo
  // Math.abs(Long.MIN_VALUE) stays negative in Java; 1 chance in 2^64.
  if (hi === 0x80000000 && lo === 0) return '-9223372036854775808'
  // Long division by 10^7 in 16-bit steps; every intermediate stays below 2^53.
  const qHi = Math.floor(hi / 1e7)
  let r = hi - qHi * 1e7
  let x = r * 65536 + (lo >>> 16)
  const qMid = Math.floor(x / 1e7)
  r = x - qMid * 1e7
  x = r * 65536 + (lo & 0xffff)
  const qLo = Math.floor(x / 1e7)
  r = x - qLo * 1e7
  const q = qHi * TWO_POW_32 + qMid * 65536 + qLo
  if (q === 0) return String(r)
  return String(q) + String(r + 1e7).slice(1)
}

/** Largest modulus fnvhash64Mod takes without BigInt: r * 2^16 must stay exact. */
const FNV_MOD_LIMIT = 2 ** 37

/**
 * `fnvhash64(value) % n` as YCSB's ScrambledZipfianGenerator computes it, for
 * 1 <= n <= 2^37 (key spaces far beyond any benchmark's record count).
 */
export function fnvhash64Mod(value: number, n: number): number {
  fnv(value)
  // The one Long.MIN_VALUE hash is read as 2^63 so the result is never negative.
  let r = hashHi % n
  r = (r * 65536 + (hashLo >>> 16)) % n
  return (r * 65536 + (hashLo & 0xffff)) % n
}

// ---------------------------------------------------------------------------
// Zeta: the normaliser of a Zipfian distribution, sum_{i=1..n} 1/i^theta.

const ZETA_EXACT_LIMIT = 10_000
// Terms summed exactly before the Euler-Maclaurin tail starts; at 1000 the
// first dropped correction term is below 1e-25, far under double rounding.
const ZETA_EM_HEAD = 1_000

/** sum_{i=st+1..n} 1/i^theta added to `initial` (YCSB's zetastatic). */
export function zetaRange(st: number, n: number, theta: number, initial: number): number {
  let sum = initial
  for (let i = st; i < n; i++) sum += 1 / Math.pow(i + 1, theta)
  return sum
}

/**
 * zeta(n, theta) = sum_{i=1..n} 1/i^theta. Exact summation for small n; above
 * that the first terms are summed and the rest is an Euler-Maclaurin
 * expansion, which agrees with exact summation to ~1e-13 and costs O(1000)
 * instead of O(n), so a Zipfian over 10^10 items is built in microseconds.
 */
export function zeta(n: number, theta: number): number {
  if (n <= ZETA_EXACT_LIMIT) return zetaRange(0, n, theta, 0)
  const m = ZETA_EM_HEAD
  const head = zetaRange(0, m - 1, theta, 0)
  const f = (x: number): number => Math.pow(x, -theta)
  const t1 = theta
  const t3 = theta * (theta + 1) * (theta + 2)
  const t5 = t3 * (theta + 3) * (theta + 4)
  // Odd derivatives of x^-theta, without their (negative) sign.
  const d1 = (x: number): number => t1 * Math.pow(x, -theta - 1)
  const d3 = (x: number): number => t3 * Math.pow(x, -theta - 3)
  const d5 = (x: number): number => t5 * Math.pow(x, -theta - 5)
  // n^(1-theta) - m^(1-theta), written with expm1 so theta near 1 keeps its digits.
  const integral =
    theta === 1 ? Math.log(n / m) : (Math.pow(m, 1 - theta) * Math.expm1((1 - theta) * Math.log(n / m))) / (1 - theta)
  // Bernoulli terms B2/2!, B4/4!, B6/6! = 1/12, -1/720, 1/30240 applied to f', f''', f^(5).
  const corrections = -(d1(n) - d1(m)) / 12 + (d3(n) - d3(m)) / 720 - (d5(n) - d5(m)) / 30240
  return head + integral + (f(m) + f(n)) / 2 + corrections
}

// ---------------------------------------------------------------------------

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
 * Zipfian integers in [min, max], min the most popular (YCSB's
 * ZipfianGenerator, after Gray et al., SIGMOD 1994): ranks 1 and 2 exact, the
 * rest by Gray's approximation, as YCSB measures. nextForCount() grows the
 * item count and updates zeta incrementally.
 */
export class ZipfianGenerator implements NumberGenerator {
  /** YCSB's default zipfian constant. */
  static readonly DEFAULT_CONSTANT = 0.99
  private readonly base: number
  private readonly theta: number
  private readonly alpha: number
  private readonly zeta2theta: number
  // 1 + 0.5^theta: the cumulative weight of ranks 1 and 2, in units of 1/zetan.
  private readonly rank2Bound: number
  private countForZeta: number
  private zetan: number
  private eta: number
  private last: number

  /**
   * @param zipfianConstant theta, in (0, 1) (Gray's method needs theta != 1).
   * @param zetan zeta(max - min + 1, theta) when already known, to skip computing it.
   */
  constructor(
    private readonly rng: Rng,
    min: number,
    max: number,
    zipfianConstant = ZipfianGenerator.DEFAULT_CONSTANT,
    zetan?: number,
  ) {
    requireRange('zipfian min', min, 'zipfian max', max)
    if (!(zipfianConstant > 0 && zipfianConstant < 1)) {
      throw invalid(`zipfianconstant must be in (0, 1), exclusive; got ${zipfianConstant}`)
    }
    this.base = min
    this.theta = zipfianConstant
    this.alpha = 1 / (1 - zipfianConstant)
    this.zeta2theta = zeta(2, zipfianConstant)
    this.rank2Bound = 1 + Math.pow(0.5, zipfianConstant)
    this.countForZeta = max - min + 1
    this.zetan = zetan ?? zeta(this.countForZeta, zipfianConstant)
    this.eta = this.computeEta(this.countForZeta)
    this.last = min
  }

  private computeEta(items: number): number {
    return (1 - Math.pow(2 / items, 1 - this.theta)) / (1 - this.zeta2theta / this.zetan)
  }

  /** Item count zeta is currently computed for. */
  get itemCount(): number {
    return this.countForZeta
  }

  nextValue(): number {
    return this.nextForCount(this.countForZeta)
  }

  /** A value in [min, min + itemCount - 1], first adjusting zeta if itemCount changed. */
  nextForCount(itemCount: number): number {
    if (itemCount !== this.countForZeta) this.resize(itemCount)
    const u = this.rng.next()
    const uz = u * this.zetan
    let ret: number
    if (uz < 1) ret = this.base
    else if (uz < this.rank2Bound) ret = this.base + 1
    else {
      ret = this.base + Math.floor(itemCount * Math.pow(this.eta * u - this.eta + 1, this.alpha))
      // Rounding can reach itemCount when u is within 2^-53 of 1.
      if (ret >= this.base + itemCount) ret = this.base + itemCount - 1
    }
    this.last = ret
    return ret
  }

  private resize(itemCount: number): void {
    requireInteger('zipfian item count', itemCount, 1)
    const old = this.countForZeta
    const delta = itemCount - old
    // Growing or shrinking by a few items (one insert acknowledged) is a few
    // terms; a big jump costs at most O(ZETA_EXACT_LIMIT) through zeta().
    if (Math.abs(delta) < ZETA_EM_HEAD) {
      this.zetan =
        delta > 0
          ? zetaRange(old, itemCount, this.theta, this.zetan)
          : this.zetan - zetaRange(itemCount, old, this.theta, 0)
    } else {
      this.zetan = zeta(itemCount, this.theta)
    }
    this.countForZeta = itemCount
    this.eta = this.computeEta(itemCount)
  }

  lastValue(): number {
    return this.last
  }
}

/**
 * Zipfian popularity spread over [min, max] instead of clustered at min
 * (YCSB's ScrambledZipfianGenerator, the default 'zipfian' request
 * distribution): a Zipfian rank over a fixed, huge item space is FNV-hashed
 * onto the range. Because the item space is a constant (10^10, as in YCSB),
 * zeta for theta = 0.99 is a precomputed constant and construction is O(1)
 * whatever the record count; popular items are the same for every range size.
 */
export class ScrambledZipfianGenerator implements NumberGenerator {
  /** YCSB's item space for the underlying Zipfian. */
  static readonly ITEM_COUNT = 10_000_000_000
  /** zeta(ITEM_COUNT + 1, 0.99), YCSB's precomputed value. */
  static readonly ZETAN = 26.46902820178302
  static readonly USED_ZIPFIAN_CONSTANT = 0.99
  private readonly gen: ZipfianGenerator
  private readonly itemCount: number
  private last: number

  constructor(
    rng: Rng,
    private readonly min: number,
    max: number,
    zipfianConstant = ScrambledZipfianGenerator.USED_ZIPFIAN_CONSTANT,
  ) {
    requireRange('scrambled zipfian min', min, 'scrambled zipfian max', max)
    this.itemCount = max - min + 1
    if (this.itemCount > FNV_MOD_LIMIT)
      throw invalid(`scrambled zipfian range must hold at most 2^37 items; got ${this.itemCount}`)
    const known =
      zipfianConstant === ScrambledZipfianGenerator.USED_ZIPFIAN_CONSTANT ? ScrambledZipfianGenerator.ZETAN : undefined
    // [0, ITEM_COUNT] inclusive, as YCSB builds it; other constants get zeta from the Euler-Maclaurin path.
    this.gen = new ZipfianGenerator(rng, 0, ScrambledZipfianGenerator.ITEM_COUNT, zipfianConstant, known)
    this.last = min
  }

  nextValue(): number {
    this.last = this.min + fnvhash64Mod(this.gen.nextValue(), this.itemCount)
    return this.last
  }

  lastValue(): number {
    return this.last
  }
}

/**
 * Zipfian over recency: the newest value of `basis` is the most popular, the
 * one before it next, and so on (YCSB's SkewedLatestGenerator, the 'latest'
 * request distribution). `basis.lastValue()` is read on every draw, so values
 * acknowledged since the last draw are included at once.
 *
 * Unlike YCSB, which skews over [1, last] and so never picks 0, this picks
 * from [0, last]: every loaded key can be read.
 */
export class SkewedLatestGenerator implements NumberGenerator {
  private readonly zipfian: ZipfianGenerator
  private last: number

  constructor(
    rng: Rng,
    private readonly basis: { lastValue(): number },
    zipfianConstant = ZipfianGenerator.DEFAULT_CONSTANT,
  ) {
    const max = basis.lastValue()
    requireInteger('latest generator basis', max)
    this.zipfian = new ZipfianGenerator(rng, 0, max, zipfianConstant)
    this.last = max
  }

  nextValue(): number {
    const max = this.basis.lastValue()
    this.last = max - this.zipfian.nextForCount(max + 1)
    return this.last
  }

  lastValue(): number {
    return this.last
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
