/**
 * LZ4: the block format (what ClickHouse's compressed blocks carry, method
 * 0x82) and the frame format (HTTP `Content-Encoding: lz4`, as ClickHouse's
 * Lz4DeflatingWriteBuffer writes it and clickhouse-connect and the JDBC
 * driver read it), after the LZ4 block and frame format descriptions.
 *
 * The compressor is the greedy single-probe one of the reference "fast"
 * mode: a 4-byte hash table, no chains, stepping faster through bytes that
 * do not match. Decompression checks every length
 * and offset against the buffers (input comes from clients) and never writes
 * past the size it was told.
 */

/** Thrown for malformed or oversized LZ4 input. */
export class Lz4Error extends Error {
  constructor(message: string) {
    super(message)
    this.name = 'Lz4Error'
  }
}

const MIN_MATCH = 4
/** The last match must start at least this many bytes before the end of the input. */
const MF_LIMIT = 12
/** The last bytes of a block are always literals. */
const LAST_LITERALS = 5
const HASH_BITS = 16
const MAX_OFFSET = 65535

/** The most bytes an LZ4 block of `n` input bytes can take (LZ4_compressBound). */
export function lz4Bound(n: number): number {
  return n + Math.floor(n / 255) + 16
}

function hash4(v: number): number {
  return Math.imul(v, 2654435761) >>> (32 - HASH_BITS)
}

function read32(b: Uint8Array, i: number): number {
  return (b[i]! | (b[i + 1]! << 8) | (b[i + 2]! << 16) | (b[i + 3]! << 24)) >>> 0
}

/**
 * The hash table, kept between calls (a new one per block cost more than the compression of a small block): a
 * position p of a call is stored as base + p + 1, and base moves past every call's positions, so that entries of
 * earlier calls read as empty.
 */
const table = new Int32Array(1 << HASH_BITS)
let base = 0
/** Misses in a row before the search steps over 2 bytes, then 3, ... (LZ4's skip trigger, acceleration 1). */
const SKIP_TRIGGER = 6

/** Compresses `src` into one LZ4 block. */
export function lz4CompressBlock(src: Uint8Array): Buffer {
  const n = src.length
  if (base + n + 2 >= 0x7fffffff) {
    table.fill(0)
    base = 0
  }
  const at = base + 1
  base += n + 1
  // Every byte up to o is written before the block is returned.
  const out = Buffer.allocUnsafe(lz4Bound(n))
  let o = 0
  let anchor = 0
  const writeLength = (len: number): void => {
    while (len >= 255) {
      out[o++] = 255
      len -= 255
    }
    out[o++] = len
  }
  const emit = (literalEnd: number, matchLen: number, offset: number): void => {
    const lit = literalEnd - anchor
    const tokenPos = o++
    out[tokenPos] = (Math.min(lit, 15) << 4) | (matchLen < 0 ? 0 : Math.min(matchLen - MIN_MATCH, 15))
    if (lit >= 15) writeLength(lit - 15)
    out.set(src.subarray(anchor, literalEnd), o)
    o += lit
    if (matchLen < 0) return
    out[o++] = offset & 0xff
    out[o++] = offset >> 8
    if (matchLen - MIN_MATCH >= 15) writeLength(matchLen - MIN_MATCH - 15)
  }
  if (n >= MF_LIMIT + 1) {
    const matchLimit = n - LAST_LITERALS
    let i = 0
    let misses = 0
    while (i < n - MF_LIMIT) {
      const seq = read32(src, i)
      const h = hash4(seq)
      const ref = table[h]! - at
      table[h] = at + i
      if (ref < 0 || i - ref > MAX_OFFSET || read32(src, ref) !== seq) {
        i += 1 + (misses++ >> SKIP_TRIGGER)
        continue
      }
      misses = 0
      // Extend backwards over literals not yet emitted, then forwards.
      let start = i
      let back = ref
      while (start > anchor && back > 0 && src[start - 1] === src[back - 1]) {
        start--
        back--
      }
      let end = i + MIN_MATCH
      let refEnd = ref + MIN_MATCH
      while (end < matchLimit && src[end] === src[refEnd]) {
        end++
        refEnd++
      }
      emit(start, end - start, start - back)
      anchor = end
      i = end
      if (i < n - MF_LIMIT) table[hash4(read32(src, i - 2))] = at + i - 2
    }
  }
  emit(n, -1, 0)
  return out.subarray(0, o)
}

/**
 * Decompresses one LZ4 block into `out` from `outStart` (earlier bytes of
 * `out` may be referenced: linked frame blocks); returns the end position.
 */
export function lz4DecompressInto(src: Uint8Array, out: Uint8Array, outStart = 0): number {
  let i = 0
  let o = outStart
  const n = src.length
  const readLength = (len: number): number => {
    if (len !== 15) return len
    for (;;) {
      if (i >= n) throw new Lz4Error('an LZ4 length runs past the end of the block')
      const b = src[i++]!
      len += b
      if (b !== 255) return len
    }
  }
  while (i < n) {
    const token = src[i++]!
    const lit = readLength(token >> 4)
    if (i + lit > n) throw new Lz4Error('LZ4 literals run past the end of the block')
    if (o + lit > out.length) throw new Lz4Error('LZ4 data decompresses to more bytes than announced')
    out.set(src.subarray(i, i + lit), o)
    i += lit
    o += lit
    if (i === n) break
    if (i + 2 > n) throw new Lz4Error('an LZ4 match offset runs past the end of the block')
    const offset = src[i]! | (src[i + 1]! << 8)
    i += 2
    if (offset === 0 || offset > o) throw new Lz4Error('an LZ4 match points before the start of the data')
    const len = readLength(token & 15) + MIN_MATCH
    if (o + len > out.length) throw new Lz4Error('LZ4 data decompresses to more bytes than announced')
    // Byte by byte: a match may overlap the bytes it produces.
    for (let k = 0; k < len; k++, o++) out[o] = out[o - offset]!
  }
  return o
}

/** Decompresses one LZ4 block that must yield exactly `size` bytes. */
export function lz4DecompressBlock(src: Uint8Array, size: number): Buffer {
  const out = Buffer.alloc(size)
  const end = lz4DecompressInto(src, out)
  if (end !== size) throw new Lz4Error(`an LZ4 block decompressed to ${end} bytes, ${size} were announced`)
  return out
}

// xxHash32 (the frame format's header and content checksums).
const P1 = 2654435761
const P2 = 2246822519
const P3 = 3266489917
const P4 = 668265263
const P5 = 374761393
const rotl = (x: number, r: number): number => ((x << r) | (x >>> (32 - r))) >>> 0
const round = (acc: number, lane: number): number => Math.imul(rotl((acc + Math.imul(lane, P2)) >>> 0, 13), P1) >>> 0

/** xxHash32 of the bytes with a seed. */
export function xxh32(b: Uint8Array, seed = 0): number {
  const n = b.length
  let i = 0
  let h: number
  if (n >= 16) {
    let v1 = (seed + P1 + P2) >>> 0
    let v2 = (seed + P2) >>> 0
    let v3 = seed >>> 0
    let v4 = (seed - P1) >>> 0
    for (; i + 16 <= n; i += 16) {
      v1 = round(v1, read32(b, i))
      v2 = round(v2, read32(b, i + 4))
      v3 = round(v3, read32(b, i + 8))
      v4 = round(v4, read32(b, i + 12))
    }
    h = (rotl(v1, 1) + rotl(v2, 7) + rotl(v3, 12) + rotl(v4, 18)) >>> 0
  } else h = (seed + P5) >>> 0
  h = (h + n) >>> 0
  for (; i + 4 <= n; i += 4) h = Math.imul(rotl((h + Math.imul(read32(b, i), P3)) >>> 0, 17), P4) >>> 0
  for (; i < n; i++) h = Math.imul(rotl((h + Math.imul(b[i]!, P5)) >>> 0, 11), P1) >>> 0
  h = Math.imul(h ^ (h >>> 15), P2) >>> 0
  h = Math.imul(h ^ (h >>> 13), P3) >>> 0
  return (h ^ (h >>> 16)) >>> 0
}

const FRAME_MAGIC = 0x184d2204
/** Block maximum sizes by the BD byte's code (4: 64 KiB ... 7: 4 MiB). */
const FRAME_BLOCK_SIZES: Record<number, number> = { 4: 65536, 5: 262144, 6: 1 << 20, 7: 4 << 20 }
const FRAME_BLOCK = 1 << 20

/** An LZ4 frame: independent 1 MiB blocks, a content checksum, no content size. */
export function lz4FrameCompress(src: Uint8Array): Buffer {
  // FLG: version 01, independent blocks, content checksum; BD: 1 MiB blocks (code 6).
  const descriptor = Buffer.from([0b0110_0100, 6 << 4])
  const parts: Buffer[] = [Buffer.alloc(4), descriptor, Buffer.from([(xxh32(descriptor) >>> 8) & 0xff])]
  parts[0]!.writeUInt32LE(FRAME_MAGIC)
  for (let at = 0; at < src.length; at += FRAME_BLOCK) {
    const raw = src.subarray(at, at + FRAME_BLOCK)
    const packed = lz4CompressBlock(raw)
    const size = Buffer.alloc(4)
    // The high bit marks a block stored uncompressed, when compressing did not help.
    if (packed.length >= raw.length) {
      size.writeUInt32LE((raw.length | 0x80000000) >>> 0)
      parts.push(size, Buffer.from(raw))
    } else {
      size.writeUInt32LE(packed.length)
      parts.push(size, packed)
    }
  }
  const tail = Buffer.alloc(8)
  tail.writeUInt32LE(xxh32(src), 4)
  parts.push(tail)
  return Buffer.concat(parts)
}

/** Decompresses one or more concatenated LZ4 frames, refusing output beyond `maxSize` bytes. */
export function lz4FrameDecompress(src: Uint8Array, maxSize: number): Buffer {
  const b = Buffer.from(src.buffer, src.byteOffset, src.byteLength)
  const outputs: Buffer[] = []
  let total = 0
  let i = 0
  const need = (k: number): void => {
    if (i + k > b.length) throw new Lz4Error('the LZ4 frame ends early')
  }
  while (i < b.length) {
    need(7)
    const magic = b.readUInt32LE(i)
    if (magic >= 0x184d2a50 && magic <= 0x184d2a5f) {
      // A skippable frame.
      i += 8 + b.readUInt32LE(i + 4)
      continue
    }
    if (magic !== FRAME_MAGIC) throw new Lz4Error('not an LZ4 frame (bad magic number)')
    const flg = b[i + 4]!
    const bd = b[i + 5]!
    if (flg >> 6 !== 1) throw new Lz4Error(`LZ4 frame version ${flg >> 6} is not supported`)
    if ((flg & 1) !== 0) throw new Lz4Error('LZ4 frames with a dictionary are not supported')
    const blockChecksum = (flg & 0x10) !== 0
    const contentSize = (flg & 0x08) !== 0
    const contentChecksum = (flg & 0x04) !== 0
    const blockMax = FRAME_BLOCK_SIZES[(bd >> 4) & 7]
    if (blockMax === undefined) throw new Lz4Error('the LZ4 frame has a bad block size')
    const descLen = 2 + (contentSize ? 8 : 0)
    need(4 + descLen + 1)
    const hc = (xxh32(b.subarray(i + 4, i + 4 + descLen)) >>> 8) & 0xff
    if (b[i + 4 + descLen] !== hc) throw new Lz4Error('the LZ4 frame header checksum is wrong')
    i += 4 + descLen + 1
    // One buffer per frame: linked blocks may refer to the previous ones.
    let frame = Buffer.alloc(Math.min(maxSize - total, blockMax * 4))
    let o = 0
    for (;;) {
      need(4)
      const word = b.readUInt32LE(i)
      i += 4
      if (word === 0) break
      const stored = (word & 0x80000000) !== 0
      const size = word & 0x7fffffff
      if (size > blockMax) throw new Lz4Error('an LZ4 frame block is larger than its frame allows')
      need(size + (blockChecksum ? 4 : 0))
      if (o + blockMax > frame.length) {
        const grown = Buffer.alloc(Math.min(Math.max(frame.length * 2, o + blockMax), maxSize - total + blockMax))
        frame.copy(grown, 0, 0, o)
        frame = grown
      }
      const data = b.subarray(i, i + size)
      if (stored) {
        data.copy(frame, o)
        o += size
      } else o = lz4DecompressInto(data, frame.subarray(0, Math.min(frame.length, o + blockMax)), o)
      if (total + o > maxSize) throw new Lz4Error(`the LZ4 body decompresses to more than ${maxSize} bytes`)
      i += size + (blockChecksum ? 4 : 0)
    }
    const content = frame.subarray(0, o)
    if (contentChecksum) {
      need(4)
      if (b.readUInt32LE(i) !== xxh32(content)) throw new Lz4Error('the LZ4 frame content checksum is wrong')
      i += 4
    }
    outputs.push(content)
    total += o
  }
  return Buffer.concat(outputs)
}
