/**
 * ClickHouse's compressed blocks: the framing of `compress=1` responses and
 * `decompress=1` request bodies on the HTTP interface (and of the native
 * protocol), as src/Compression/CompressedReadBufferBase.cpp reads it and
 * CompressionInfo.h names its parts:
 *
 *   16 bytes   CityHash128 v1.0.2 of everything after it in the block (low, high; little-endian)
 *    1 byte    method: 0x02 none, 0x82 LZ4, 0x90 ZSTD
 *    4 bytes   compressed size, these 9 header bytes included (UInt32 LE)
 *    4 bytes   uncompressed size (UInt32 LE)
 *    ...       the data
 *
 * Blocks follow each other to the end of the body. We write LZ4 blocks of at
 * most 1 MiB of data (max_compress_block_size) and read none and LZ4 (ZSTD
 * only where node:zlib has it).
 */
import zlib from 'node:zlib'
import { cityHash128Bytes } from './cityhash102.js'
import { lz4CompressBlock, lz4DecompressBlock } from './lz4.js'

/** Method bytes (CompressionMethodByte). */
export const METHOD = { NONE: 0x02, LZ4: 0x82, ZSTD: 0x90 } as const
const CHECKSUM_SIZE = 16
const HEADER_SIZE = 9
/** Bytes of data per block we write: ClickHouse's max_compress_block_size. */
export const BLOCK_SIZE = 1 << 20

/** A body that is not well-formed compressed blocks, fails its checksum or is too large. */
export class CompressedBlockError extends Error {
  constructor(message: string) {
    super(message)
    this.name = 'CompressedBlockError'
  }
}

type ZstdZlib = { zstdDecompressSync?: (b: Uint8Array, o?: object) => Buffer }

function block(method: number, data: Uint8Array, rawSize: number): Buffer {
  const out = Buffer.alloc(CHECKSUM_SIZE + HEADER_SIZE + data.length)
  out[CHECKSUM_SIZE] = method
  out.writeUInt32LE(HEADER_SIZE + data.length, CHECKSUM_SIZE + 1)
  out.writeUInt32LE(rawSize, CHECKSUM_SIZE + 5)
  out.set(data, CHECKSUM_SIZE + HEADER_SIZE)
  cityHash128Bytes(out.subarray(CHECKSUM_SIZE)).copy(out, 0)
  return out
}

/** The data as LZ4 compressed blocks of at most `blockSize` bytes each (none for empty data). */
export function compressBlocks(data: Uint8Array, blockSize = BLOCK_SIZE): Buffer {
  const parts: Buffer[] = []
  for (let at = 0; at < data.length; at += blockSize) {
    const raw = data.subarray(at, at + blockSize)
    parts.push(block(METHOD.LZ4, lz4CompressBlock(raw), raw.length))
  }
  return Buffer.concat(parts)
}

/** Reads a body of compressed blocks back to its data; refuses more than `maxSize` bytes of data. */
export function decompressBlocks(body: Uint8Array, maxSize: number): Buffer {
  const b = Buffer.from(body.buffer, body.byteOffset, body.byteLength)
  const parts: Buffer[] = []
  let total = 0
  for (let at = 0; at < b.length;) {
    if (at + CHECKSUM_SIZE + HEADER_SIZE > b.length)
      throw new CompressedBlockError('the body ends inside a compressed block header')
    const method = b[at + CHECKSUM_SIZE]!
    const size = b.readUInt32LE(at + CHECKSUM_SIZE + 1)
    const rawSize = b.readUInt32LE(at + CHECKSUM_SIZE + 5)
    if (size < HEADER_SIZE || at + CHECKSUM_SIZE + size > b.length)
      throw new CompressedBlockError(`a compressed block says it is ${size} bytes: more than the body holds`)
    if (total + rawSize > maxSize)
      throw new CompressedBlockError(`the compressed body holds more than ${maxSize} bytes of data`)
    const framed = b.subarray(at + CHECKSUM_SIZE, at + CHECKSUM_SIZE + size)
    if (!cityHash128Bytes(framed).equals(b.subarray(at, at + CHECKSUM_SIZE)))
      throw new CompressedBlockError("checksum doesn't match: corrupted data (CityHash128 of a compressed block)")
    const data = framed.subarray(HEADER_SIZE)
    let raw: Buffer
    if (method === METHOD.NONE) raw = Buffer.from(data)
    else if (method === METHOD.LZ4) raw = lz4DecompressBlock(data, rawSize)
    else if (method === METHOD.ZSTD && (zlib as ZstdZlib).zstdDecompressSync !== undefined)
      raw = (zlib as ZstdZlib).zstdDecompressSync!(data, { maxOutputLength: rawSize })
    else
      throw new CompressedBlockError(
        `compression method 0x${method.toString(16)} is not supported here; ` +
          'send LZ4 (0x82) or uncompressed (0x02) blocks',
      )
    if (raw.length !== rawSize)
      throw new CompressedBlockError(
        `a compressed block decompressed to ${raw.length} bytes, ${rawSize} were announced`,
      )
    parts.push(raw)
    total += rawSize
    at += CHECKSUM_SIZE + size
  }
  return Buffer.concat(parts)
}
