/**
 * YCSB's FNV-1a 64-bit hash of a key number (Utils.fnvhash64), as a decimal
 * string for key names and reduced modulo n for the scrambled Zipfian, on the
 * driver's hot path without BigInt.
 */
import { invalid } from './number-generator.js'

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
export const FNV_MOD_LIMIT = 2 ** 37

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
