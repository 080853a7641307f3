/**
 * HTTP Content-Encoding as ClickHouse's HTTP interface speaks it: a response
 * is compressed only when the request has `enable_http_compression=1` and
 * an Accept-Encoding naming a method; request bodies are decoded by their
 * Content-Encoding. Methods: gzip, deflate, br (node:zlib), lz4 (an LZ4
 * frame, ./lz4.ts) and zstd.
 *
 * zstd: node:zlib compresses zstd from Node 22.15 on; before that a response
 * is a valid zstd frame of raw (stored) blocks, which every zstd reader
 * reads but which is not smaller, so zstd is chosen only when the client
 * accepts nothing else we write. Request bodies in zstd need node:zlib's
 * decoder.
 */
import zlib from 'node:zlib'
import { lz4CompressBlock, lz4FrameCompress, lz4FrameDecompress, xxh32 } from './lz4.js'

export const HTTP_ENCODINGS = ['gzip', 'deflate', 'br', 'lz4', 'zstd'] as const
export type HttpEncoding = (typeof HTTP_ENCODINGS)[number]

type ZstdZlib = {
  zstdCompressSync?: (b: Uint8Array) => Buffer
  zstdDecompressSync?: (b: Uint8Array, o?: object) => Buffer
  createZstdCompress?: () => zlib.Gzip
}
const z = zlib as ZstdZlib

/** A body in an encoding we cannot read, or one that is malformed or too large once decoded. */
export class HttpEncodingError extends Error {
  constructor(message: string) {
    super(message)
    this.name = 'HttpEncodingError'
  }
}

/**
 * The encoding of a response for an Accept-Encoding header: the first method
 * the client lists (q=0 excluded) that we write, zstd last unless node:zlib
 * compresses it; undefined for none (identity).
 */
export function chooseEncoding(accept: string | undefined): HttpEncoding | undefined {
  if (accept === undefined) return undefined
  const listed = accept
    .split(',')
    .map((part) => {
      const [name = '', ...params] = part.trim().toLowerCase().split(';')
      const q = params.map((p) => /^\s*q=([\d.]+)\s*$/.exec(p)?.[1]).find((v) => v !== undefined)
      return { name: name.trim(), q: q === undefined ? 1 : Number(q) }
    })
    .filter((e) => e.q > 0)
    .map((e) => e.name)
    .filter((n): n is HttpEncoding => (HTTP_ENCODINGS as readonly string[]).includes(n))
  const real = listed.filter((n) => n !== 'zstd' || z.zstdCompressSync !== undefined)
  return real[0] ?? listed[0]
}

/** Zstandard's block size limit (Block_Maximum_Size). */
const ZSTD_BLOCK = 128 * 1024

/** A zstd frame holding the data in raw blocks: single segment, 8-byte content size, no checksum. */
function zstdStored(data: Uint8Array): Buffer {
  const parts: Buffer[] = [Buffer.from([0x28, 0xb5, 0x2f, 0xfd, 0xe0])]
  const size = Buffer.alloc(8)
  size.writeBigUInt64LE(BigInt(data.length))
  parts.push(size)
  let at = 0
  do {
    const piece = data.subarray(at, at + ZSTD_BLOCK)
    at += piece.length
    const last = at >= data.length ? 1 : 0
    // Block header: last-block bit, type 0 (raw), size in the upper 21 bits.
    const h = (piece.length << 3) | last
    parts.push(Buffer.from([h & 0xff, (h >> 8) & 0xff, (h >> 16) & 0xff]), Buffer.from(piece))
  } while (at < data.length)
  return Buffer.concat(parts)
}

/** The body encoded for the Content-Encoding. */
export function encodeBody(encoding: HttpEncoding, data: Uint8Array): Buffer {
  switch (encoding) {
    case 'gzip':
      return zlib.gzipSync(data, { level: 3 })
    case 'deflate':
      return zlib.deflateSync(data, { level: 3 })
    case 'br':
      return zlib.brotliCompressSync(data, { params: { [zlib.constants.BROTLI_PARAM_QUALITY]: 4 } })
    case 'lz4':
      return lz4FrameCompress(data)
    case 'zstd':
      return z.zstdCompressSync === undefined ? zstdStored(data) : z.zstdCompressSync(data)
  }
}

/** A request body decoded by its Content-Encoding; refuses more than `maxSize` bytes once decoded. */
export function decodeBody(encoding: string, data: Uint8Array, maxSize: number): Buffer {
  const e = encoding.trim().toLowerCase()
  const opts = { maxOutputLength: maxSize }
  try {
    switch (e) {
      case 'gzip':
      case 'x-gzip':
        return zlib.gunzipSync(data, opts)
      case 'deflate':
        return zlib.inflateSync(data, opts)
      case 'br':
        return zlib.brotliDecompressSync(data, opts)
      case 'lz4':
        return lz4FrameDecompress(data, maxSize)
      case 'zstd':
        if (z.zstdDecompressSync !== undefined) return z.zstdDecompressSync(data, opts)
        break
      case 'identity':
        return Buffer.from(data)
    }
  } catch (err) {
    throw new HttpEncodingError(
      `the request body could not be decoded as ${e} (${(err as Error).message}); ` +
        `at most ${maxSize} bytes once decoded`,
    )
  }
  throw new HttpEncodingError(
    `Content-Encoding ${JSON.stringify(encoding.slice(0, 40))} is not supported for request bodies; ` +
      `use gzip, deflate, br or lz4`,
  )
}

/**
 * An encoder of a body sent in pieces (a streamed result): every piece comes
 * out whole, flushed, so that a client decodes each as it arrives and the
 * last piece (an exception, say) is readable even if the body never ends.
 */
export interface BodyEncoder {
  /** The encoded bytes of the next piece. */
  push(data: Buffer): Promise<Buffer>
  /** What ends the encoded body (a gzip trailer, an end mark). */
  end(): Promise<Buffer>
}

/** A streaming encoder for the Content-Encoding. */
export function bodyEncoder(encoding: HttpEncoding): BodyEncoder {
  switch (encoding) {
    case 'gzip':
      return zlibEncoder(zlib.createGzip({ level: 3 }), zlib.constants.Z_SYNC_FLUSH)
    case 'deflate':
      return zlibEncoder(zlib.createDeflate({ level: 3 }), zlib.constants.Z_SYNC_FLUSH)
    case 'br':
      return zlibEncoder(
        zlib.createBrotliCompress({ params: { [zlib.constants.BROTLI_PARAM_QUALITY]: 4 } }),
        zlib.constants.BROTLI_OPERATION_FLUSH,
      )
    case 'lz4':
      return lz4FrameEncoder()
    case 'zstd':
      return z.createZstdCompress === undefined
        ? zstdStoredEncoder()
        : // ZSTD_e_flush (1): every piece ends a block the reader can decode.
          zlibEncoder(z.createZstdCompress(), 1)
  }
}

/** node:zlib's streams, flushed after every piece. */
function zlibEncoder(stream: zlib.Gzip | zlib.Deflate | zlib.BrotliCompress, flushKind: number): BodyEncoder {
  let out: Buffer[] = []
  // In flowing mode: a paused stream stops at its high-water mark and the flush never completes.
  stream.on('data', (c: Buffer) => out.push(c))
  const take = (): Buffer => {
    const b = out.length === 1 ? out[0]! : Buffer.concat(out)
    out = []
    return b
  }
  return {
    async push(data) {
      stream.write(data)
      await new Promise<void>((resolve) => stream.flush(flushKind, () => resolve()))
      return take()
    },
    async end() {
      const ended = new Promise<void>((resolve, reject) => {
        stream.once('end', resolve)
        stream.once('error', reject)
      })
      stream.end()
      await ended
      return take()
    },
  }
}

/** An LZ4 frame written a piece at a time: independent 1 MiB blocks, no content checksum (it needs the whole). */
function lz4FrameEncoder(): BodyEncoder {
  let started = false
  return {
    async push(data) {
      const parts: Buffer[] = []
      if (!started) {
        started = true
        // FLG: version 01, independent blocks; BD: 1 MiB blocks (code 6).
        const descriptor = Buffer.from([0b0110_0000, 6 << 4])
        const magic = Buffer.alloc(4)
        magic.writeUInt32LE(0x184d2204)
        parts.push(magic, descriptor, Buffer.from([(xxh32(descriptor) >>> 8) & 0xff]))
      }
      for (let at = 0; at < data.length; at += 1 << 20) {
        const raw = data.subarray(at, at + (1 << 20))
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
      return Buffer.concat(parts)
    },
    async end() {
      // The end mark; a body with no piece is still one (empty) frame.
      const head = started ? Buffer.alloc(0) : await this.push(Buffer.alloc(0))
      return Buffer.concat([head, Buffer.alloc(4)])
    },
  }
}

/** A zstd frame of raw blocks written a piece at a time (no content size: it is not known up front). */
function zstdStoredEncoder(): BodyEncoder {
  let started = false
  const block = (piece: Uint8Array, last: boolean): Buffer[] => {
    // Block header: last-block bit, type 0 (raw), size in the upper 21 bits.
    const h = (piece.length << 3) | (last ? 1 : 0)
    return [Buffer.from([h & 0xff, (h >> 8) & 0xff, (h >> 16) & 0xff]), Buffer.from(piece)]
  }
  const header = (): Buffer[] => {
    if (started) return []
    started = true
    // Frame header descriptor 0: no content size, not single segment, no checksum; window 2^17 (Window_Descriptor
    // 0x38), the size of a raw block.
    return [Buffer.from([0x28, 0xb5, 0x2f, 0xfd, 0x00, 0x38])]
  }
  return {
    async push(data) {
      const parts = header()
      for (let at = 0; at < data.length; at += ZSTD_BLOCK)
        parts.push(...block(data.subarray(at, at + ZSTD_BLOCK), false))
      return Buffer.concat(parts)
    },
    async end() {
      return Buffer.concat([...header(), ...block(Buffer.alloc(0), true)])
    },
  }
}
