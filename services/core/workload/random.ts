/**
 * A small, fast, seedable PRNG for workload generation: xoshiro128** (Blackman
 * and Vigna) on four 32-bit words, seeded through splitmix32 so that nearby
 * seeds (0, 1, 2, ...) give unrelated streams.
 *
 * Why not Math.random(): it cannot be seeded, and tests and reproducible runs
 * need the same sequence of keys and operations for the same seed. Not for
 * anything security-related.
 */

const TWO_POW_32 = 4294967296
// 2^-53: turns a 53-bit integer into a double in [0, 1) with every bit used.
const TWO_POW_MINUS_53 = 1 / 9007199254740992

export class Rng {
  private s0: number
  private s1: number
  private s2: number
  private s3: number

  /**
   * @param seed any finite number; both its low and high 32 bits are used.
   *   Default: a random seed (non-reproducible).
   */
  constructor(seed?: number) {
    const s = seed === undefined || !Number.isFinite(seed) ? Math.floor(Math.random() * TWO_POW_32) : Math.trunc(seed)
    // splitmix32 state, mixing the high word in so seeds above 2^32 differ too.
    let x = (s >>> 0) ^ Math.imul(Math.floor(s / TWO_POW_32) >>> 0, 0x9e3779b9)
    const mix = (): number => {
      x = (x + 0x9e3779b9) | 0
      let z = x
      z = Math.imul(z ^ (z >>> 16), 0x85ebca6b)
      z = Math.imul(z ^ (z >>> 13), 0xc2b2ae35)
      return (z ^ (z >>> 16)) | 0
    }
    this.s0 = mix()
    this.s1 = mix()
    this.s2 = mix()
    this.s3 = mix()
    // xoshiro's only bad state is all zeros.
    if ((this.s0 | this.s1 | this.s2 | this.s3) === 0) this.s0 = 1
  }

  /** Next 32 random bits as an unsigned integer in [0, 2^32). */
  nextUint32(): number {
    const s1 = this.s1
    const r = Math.imul(rotl(Math.imul(s1, 5), 7), 9)
    const t = s1 << 9
    this.s2 ^= this.s0
    this.s3 ^= s1
    this.s1 ^= this.s2
    this.s0 ^= this.s3
    this.s2 ^= t
    this.s3 = rotl(this.s3, 11)
    return r >>> 0
  }

  /** Uniform double in [0, 1), 53 bits of randomness. */
  next(): number {
    const hi = this.nextUint32() >>> 5 // 27 bits
    const lo = this.nextUint32() >>> 6 // 26 bits
    return (hi * 67108864 + lo) * TWO_POW_MINUS_53
  }

  /** Uniform integer in [0, n), for 1 <= n <= 2^53; the bias is at most n / 2^53. */
  int(n: number): number {
    return Math.floor(this.next() * n)
  }
}

function rotl(x: number, k: number): number {
  return (x << k) | (x >>> (32 - k))
}
