/**
 * YCSB's skewed generators: Zipfian over a range, the scrambled Zipfian (a
 * Zipfian rank hashed onto the range) and skewed-latest (Zipfian back from
 * the newest acknowledged key). The other generators are generators.ts.
 */

import { FNV_MOD_LIMIT, fnvhash64Mod } from './fnv-hash.js'
import { invalid, requireInteger, requireRange, type NumberGenerator } from './number-generator.js'
import type { Rng } from './random.js'
import { ZETA_EM_HEAD, zeta, zetaRange } from './zeta.js'

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
