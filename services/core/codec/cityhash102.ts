/**
 * CityHash128, version 1.0.2: the checksum of ClickHouse's compressed blocks
 * (src/Compression/CompressedReadBufferBase.cpp checks it; the server, the
 * JDBC driver and clickhouse-go write it). ClickHouse froze this old version of
 * Google's CityHash (contrib/cityhash102); later CityHash releases hash
 * differently, so no other implementation will do.
 *
 * 64-bit arithmetic on BigInt, every result wrapped to 64 bits. About 40 ms
 * per MiB: a block is at most 1 MiB (max_compress_block_size), hashed once.
 */

const M64 = (1n << 64n) - 1n
const K0 = 0xc3a5c85c97cb3127n
const K1 = 0xb492b66fbe98f273n
const K2 = 0x9ae16a3b2f90404fn
const K3 = 0xc949d7c7509e6557n
const KMUL = 0x9ddfea08eb382d69n

/** A 128-bit hash as ClickHouse stores it: `low` first, then `high`, each little-endian. */
export interface U128 {
  low: bigint
  high: bigint
}

const mul = (a: bigint, b: bigint): bigint => (a * b) & M64
const add = (...xs: bigint[]): bigint => xs.reduce((s, x) => s + x, 0n) & M64
const rot = (v: bigint, s: bigint): bigint => (s === 0n ? v : ((v >> s) | (v << (64n - s))) & M64)
const shiftMix = (v: bigint): bigint => v ^ (v >> 47n)

class Bytes {
  private readonly view: DataView
  constructor(private readonly b: Uint8Array) {
    this.view = new DataView(b.buffer, b.byteOffset, b.byteLength)
  }
  u64(at: number): bigint {
    return this.view.getBigUint64(at, true)
  }
  u32(at: number): bigint {
    return BigInt(this.view.getUint32(at, true))
  }
  u8(at: number): bigint {
    return BigInt(this.b[at]!)
  }
}

function hashLen16(u: bigint, v: bigint): bigint {
  let a = mul(u ^ v, KMUL)
  a ^= a >> 47n
  let b = mul(v ^ a, KMUL)
  b ^= b >> 47n
  return mul(b, KMUL)
}

/** CityHash64's short-input case, which CityMurmur uses for 16 bytes or fewer (at `off`, `len` bytes). */
function hashLen0to16(s: Bytes, off: number, len: number): bigint {
  const n = BigInt(len)
  if (len > 8) {
    const a = s.u64(off)
    const b = s.u64(off + len - 8)
    return hashLen16(a, rot(add(b, n), n)) ^ b
  }
  if (len >= 4) return hashLen16(add(n, (s.u32(off) << 3n) & M64), s.u32(off + len - 4))
  if (len > 0) {
    const y = s.u8(off) + (s.u8(off + (len >> 1)) << 8n)
    const z = n + (s.u8(off + len - 1) << 2n)
    return mul(shiftMix(mul(y, K2) ^ mul(z, K3)), K2)
  }
  return K2
}

/** Returns [a + z, b + c] of the 32 bytes at `off` mixed with seeds a and b. */
function weak32(s: Bytes, off: number, a0: bigint, b0: bigint): [bigint, bigint] {
  const w = s.u64(off)
  const x = s.u64(off + 8)
  const y = s.u64(off + 16)
  const z = s.u64(off + 24)
  let a = add(a0, w)
  let b = rot(add(b0, a, z), 21n)
  const c = a
  a = add(a, x, y)
  b = add(b, rot(a, 44n))
  return [add(a, z), add(b, c)]
}

function cityMurmur(s: Bytes, off: number, len: number, seedLow: bigint, seedHigh: bigint): U128 {
  let a = seedLow
  let b = seedHigh
  let c: bigint
  let d: bigint
  if (len <= 16) {
    a = mul(shiftMix(mul(a, K1)), K1)
    c = add(mul(b, K1), hashLen0to16(s, off, len))
    d = shiftMix(add(a, len >= 8 ? s.u64(off) : c))
  } else {
    c = hashLen16(add(s.u64(off + len - 8), K1), a)
    d = hashLen16(add(b, BigInt(len)), add(c, s.u64(off + len - 16)))
    a = add(a, d)
    // Whole 16-byte steps while more than 16 bytes are left (the last step may read into the tail: as 1.0.2 does).
    let p = off
    let l = len - 16
    do {
      a ^= mul(shiftMix(mul(s.u64(p), K1)), K1)
      a = mul(a, K1)
      b ^= a
      c ^= mul(shiftMix(mul(s.u64(p + 8), K1)), K1)
      c = mul(c, K1)
      d ^= c
      p += 16
      l -= 16
    } while (l > 0)
  }
  a = hashLen16(a, c)
  b = hashLen16(d, b)
  return { low: a ^ b, high: hashLen16(b, a) }
}

function cityHash128WithSeed(s: Bytes, off: number, len: number, seedLow: bigint, seedHigh: bigint): U128 {
  if (len < 128) return cityMurmur(s, off, len, seedLow, seedHigh)
  let x = seedLow
  let y = seedHigh
  let z = mul(BigInt(len), K1)
  const v: [bigint, bigint] = [0n, 0n]
  v[0] = add(mul(rot(y ^ K1, 49n), K1), s.u64(off))
  v[1] = add(mul(rot(v[0], 42n), K1), s.u64(off + 8))
  const w: [bigint, bigint] = [add(mul(rot(add(y, z), 35n), K1), x), mul(rot(add(x, s.u64(off + 88)), 53n), K1)]
  let p = off
  let left = len
  // 128 bytes per round, as two 64-byte steps.
  const step = (): void => {
    x = mul(rot(add(x, y, v[0], s.u64(p + 16)), 37n), K1)
    y = mul(rot(add(y, v[1], s.u64(p + 48)), 42n), K1)
    x ^= w[1]
    y ^= v[0]
    z = rot(z ^ w[0], 33n)
    const nv = weak32(s, p, mul(v[1], K1), add(x, w[0]))
    const nw = weak32(s, p + 32, add(z, w[1]), y)
    v[0] = nv[0]
    v[1] = nv[1]
    w[0] = nw[0]
    w[1] = nw[1]
    const t = z
    z = x
    x = t
    p += 64
  }
  do {
    step()
    step()
    left -= 128
  } while (left >= 128)
  y = add(y, mul(rot(w[0], 37n), K0), z)
  x = add(x, mul(rot(add(v[0], z), 49n), K0))
  // The tail, in 32-byte pieces from its end (reading back into bytes already hashed, as 1.0.2 does).
  for (let done = 0; done < left;) {
    done += 32
    y = add(mul(rot((y - x) & M64, 42n), K0), v[1])
    w[0] = add(w[0], s.u64(p + left - done + 16))
    x = add(mul(rot(x, 49n), K0), w[0])
    w[0] = add(w[0], v[0])
    const nv = weak32(s, p + left - done, v[0], v[1])
    v[0] = nv[0]
    v[1] = nv[1]
  }
  x = hashLen16(x, v[0])
  y = hashLen16(y, w[0])
  return { low: add(hashLen16(add(x, v[1]), w[1]), y), high: hashLen16(add(x, w[1]), add(y, v[1])) }
}

/** CityHash128 v1.0.2 of the bytes. */
export function cityHash128(data: Uint8Array): U128 {
  const s = new Bytes(data)
  const len = data.length
  if (len >= 16) return cityHash128WithSeed(s, 16, len - 16, s.u64(0) ^ K3, s.u64(8))
  if (len >= 8) return cityHash128WithSeed(s, 0, 0, s.u64(0) ^ mul(BigInt(len), K0), s.u64(len - 8) ^ K1)
  return cityHash128WithSeed(s, 0, len, K0, K1)
}

/** The 16 bytes ClickHouse writes before a compressed block: low then high, little-endian. */
export function cityHash128Bytes(data: Uint8Array): Buffer {
  const h = cityHash128(data)
  const out = Buffer.alloc(16)
  out.writeBigUInt64LE(h.low, 0)
  out.writeBigUInt64LE(h.high, 8)
  return out
}
