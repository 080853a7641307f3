/**
 * The codecs of the /clickhouse endpoint's compression (services/core/codec/):
 * CityHash128 v1.0.2 and ClickHouse's compressed blocks against what
 * clickhouse-go v2.47.0's own code produces (test/fixtures/clickhouse-compression,
 * written by test/tools/compression-vectors), the LZ4 block and frame formats
 * and xxHash32 against published vectors and round trips, HTTP encodings, and
 * hostile input: every malformed body fails with the codec's own error, never
 * by reading or writing out of bounds, and never decodes past its size limit.
 * That the JDBC driver and clickhouse-connect read what we write is checked
 * by test/clients/clickhouse-clients.test.ts.
 */
import assert from 'node:assert/strict'
import { randomBytes } from 'node:crypto'
import { readFileSync } from 'node:fs'
import path from 'node:path'
import { test } from 'node:test'
import zlib from 'node:zlib'
import { cityHash128Bytes } from '../../services/core/codec/cityhash102.js'
import {
  CompressedBlockError,
  compressBlocks,
  decompressBlocks,
  METHOD,
} from '../../services/core/codec/compressed-blocks.js'
import { chooseEncoding, decodeBody, encodeBody, HttpEncodingError } from '../../services/core/codec/http-encoding.js'
import {
  Lz4Error,
  lz4CompressBlock,
  lz4DecompressBlock,
  lz4FrameCompress,
  lz4FrameDecompress,
  xxh32,
} from '../../services/core/codec/lz4.js'
import { repoRoot } from '../../services/common/repo-root.js'

const FIXTURES = path.join(repoRoot(), 'test/fixtures/clickhouse-compression')

/** The generator's input of n bytes: byte i is (31 i + 7) mod 251. */
function input(n: number): Buffer {
  const b = Buffer.alloc(n)
  for (let i = 0; i < n; i++) b[i] = (i * 31 + 7) % 251
  return b
}

/** The generator's compressible text (compression-vectors/main.go text()). */
function text(): Buffer {
  let s = ''
  for (let i = 0; s.length < 300_000; i++) s += `READ\t${String.fromCharCode(97 + (i % 26))}\t12345\t0.5\n`
  return Buffer.from(s)
}

const samples = (): Buffer[] => [
  Buffer.alloc(0),
  Buffer.from('a'),
  Buffer.from('abcdabcdabcdabcdabcd'),
  randomBytes(1000),
  Buffer.alloc(200_000, 7),
  text(),
  Buffer.concat([randomBytes(70_000), Buffer.alloc(100, 1), randomBytes(3000)]),
]

test('CityHash128 v1.0.2 equals clickhouse-go lib/cityhash102 at every length class', () => {
  const vectors = JSON.parse(readFileSync(path.join(FIXTURES, 'cityhash128-v102.json'), 'utf8')) as Array<{
    length: number
    hash: string
  }>
  assert.equal(vectors.length, 33)
  for (const v of vectors) assert.equal(cityHash128Bytes(input(v.length)).toString('hex'), v.hash, `${v.length} bytes`)
})

test('compressed blocks: ch-go writes, we read (LZ4 and none); we write, and the checksum is the one it checks', () => {
  const t = text()
  const lz4 = readFileSync(path.join(FIXTURES, 'text.tsv.ch-go-lz4'))
  assert.deepEqual(decompressBlocks(lz4, 1 << 20), t)
  assert.deepEqual(
    decompressBlocks(readFileSync(path.join(FIXTURES, 'text.tsv.ch-go-none')), 1 << 20),
    t.subarray(0, 1000),
  )
  for (const s of samples()) assert.deepEqual(decompressBlocks(compressBlocks(s), 1 << 24), s)
  // Our block: header fields and checksum as ClickHouse lays them out.
  const ours = compressBlocks(t, 1 << 20)
  assert.equal(ours[16], METHOD.LZ4)
  assert.equal(ours.readUInt32LE(17), ours.length - 16)
  assert.equal(ours.readUInt32LE(21), t.length)
  assert.deepEqual(ours.subarray(0, 16), cityHash128Bytes(ours.subarray(16)))
  // Several blocks of at most the block size.
  assert.deepEqual(decompressBlocks(compressBlocks(t, 4096), 1 << 20), t)
})

test('compressed blocks: corrupt, truncated, oversized, unknown-method bodies fail with CompressedBlockError', () => {
  const good = compressBlocks(text())
  const flipped = Buffer.from(good)
  flipped[40] = flipped[40]! ^ 1
  const zstd = Buffer.from(good)
  zstd[16] = METHOD.ZSTD
  zstd.set(cityHash128Bytes(zstd.subarray(16, 16 + zstd.readUInt32LE(17))), 0)
  const cases: Array<[string, Buffer, RegExp]> = [
    ['a flipped data bit', flipped, /checksum/],
    ['cut short', good.subarray(0, good.length - 3), /more than the body holds/],
    ['cut in the header', good.subarray(0, 20), /header/],
    ['over the size limit', good, /more than 1000 bytes/],
    ['an unknown method', Buffer.concat([good.subarray(0, 16), Buffer.from([0x77]), good.subarray(17)]), /checksum/],
  ]
  if ((zlib as { zstdDecompressSync?: unknown }).zstdDecompressSync === undefined)
    cases.push(['ZSTD without a decoder', zstd, /method 0x90 is not supported/])
  for (const [name, body, message] of cases)
    assert.throws(
      () => decompressBlocks(body, name === 'over the size limit' ? 1000 : 1 << 24),
      (e: unknown) => {
        assert.ok(e instanceof CompressedBlockError, `${name}: ${String(e)}`)
        assert.match(e.message, message, name)
        return true
      },
    )
  // Random bytes never escape as anything but the codec's errors.
  for (let i = 0; i < 300; i++) {
    const junk = randomBytes(1 + (i % 90))
    try {
      decompressBlocks(junk, 1 << 16)
    } catch (e) {
      assert.ok(e instanceof CompressedBlockError || e instanceof Lz4Error, String(e))
    }
  }
})

test('LZ4 blocks round-trip, compress what repeats, and refuse malformed input', () => {
  for (const s of samples()) assert.deepEqual(lz4DecompressBlock(lz4CompressBlock(s), s.length), s)
  assert.ok(lz4CompressBlock(text()).length < text().length / 20)
  // A literal-only block and an overlapping match, written by hand.
  assert.deepEqual(lz4DecompressBlock(Buffer.from([0x30, 0x61, 0x62, 0x63]), 3), Buffer.from('abc'))
  assert.deepEqual(lz4DecompressBlock(Buffer.from([0x15, 0x61, 0x01, 0x00]), 10), Buffer.from('a'.repeat(10)))
  const bad: Array<[Buffer, number]> = [
    [Buffer.from([0x14, 0x61, 0x02, 0x00]), 10], // offset before the start
    [Buffer.from([0x14, 0x61, 0x00, 0x00]), 10], // offset 0
    [Buffer.from([0xf0, 0xff]), 100], // a length running off the end
    [Buffer.from([0x14, 0x61, 0x01, 0x00]), 3], // more than announced
    [Buffer.from([0x50, 0x61]), 5], // literals past the end
  ]
  for (const [b, n] of bad) assert.throws(() => lz4DecompressBlock(b, n), Lz4Error)
  for (let i = 0; i < 500; i++) {
    try {
      lz4DecompressBlock(randomBytes(1 + (i % 60)), 64)
    } catch (e) {
      assert.ok(e instanceof Lz4Error, String(e))
    }
  }
})

test('xxHash32 and LZ4 frames: published vectors, round trips, linked blocks, limits', () => {
  assert.equal(xxh32(Buffer.alloc(0)), 0x02cc5d05)
  assert.equal(xxh32(Buffer.from('abc')), 0x32d153ff)
  assert.equal(xxh32(Buffer.from('Nobody inspects the spammish repetition')), 0xe2293b2f)
  for (const s of samples()) assert.deepEqual(lz4FrameDecompress(lz4FrameCompress(s), 1 << 24), s)
  // Two frames back to back, as a streamed body may be.
  const two = Buffer.concat([lz4FrameCompress(Buffer.from('ab')), lz4FrameCompress(Buffer.from('cd'))])
  assert.equal(lz4FrameDecompress(two, 100).toString(), 'abcd')
  assert.throws(() => lz4FrameDecompress(lz4FrameCompress(text()), 1000), /more than 1000 bytes/)
  const f = lz4FrameCompress(Buffer.from('hello hello hello'))
  const badHeader = Buffer.from(f)
  badHeader[6] = badHeader[6]! ^ 1
  assert.throws(() => lz4FrameDecompress(badHeader, 100), /header checksum/)
  const badContent = Buffer.from(f)
  badContent[badContent.length - 1] = badContent[badContent.length - 1]! ^ 1
  assert.throws(() => lz4FrameDecompress(badContent, 100), /content checksum/)
  assert.throws(() => lz4FrameDecompress(Buffer.from('not a frame'), 100), /magic/)
})

test("HTTP encodings: the client's first listed method we write, bodies that decode to themselves, limits", () => {
  assert.equal(chooseEncoding('lz4, zstd, br, gzip, deflate'), 'lz4')
  assert.equal(chooseEncoding('gzip'), 'gzip')
  assert.equal(chooseEncoding('gzip;q=0, deflate'), 'deflate')
  assert.equal(chooseEncoding('identity'), undefined)
  assert.equal(chooseEncoding(undefined), undefined)
  assert.equal(chooseEncoding('zstd'), 'zstd')
  const hasZstd = (zlib as { zstdCompressSync?: unknown }).zstdCompressSync !== undefined
  assert.equal(chooseEncoding('zstd, gzip'), hasZstd ? 'zstd' : 'gzip')
  for (const e of ['gzip', 'deflate', 'br', 'lz4'] as const)
    for (const s of samples()) assert.deepEqual(decodeBody(e, encodeBody(e, s), 1 << 24), s, e)
  // zstd: a stored frame, by the format's rules (magic, single segment, 8-byte size, raw blocks of <= 128 KiB).
  const z = encodeBody('zstd', text())
  assert.equal(z.readUInt32LE(0), 0xfd2fb528)
  if (!hasZstd) {
    assert.equal(z[4], 0xe0)
    assert.equal(Number(z.readBigUInt64LE(5)), text().length)
    let at = 13
    let total = 0
    for (;;) {
      const h = z[at]! | (z[at + 1]! << 8) | (z[at + 2]! << 16)
      const size = h >> 3
      assert.equal((h >> 1) & 3, 0, 'raw block')
      assert.ok(size <= 128 * 1024)
      assert.deepEqual(z.subarray(at + 3, at + 3 + size), text().subarray(total, total + size))
      total += size
      at += 3 + size
      if ((h & 1) === 1) break
    }
    assert.equal(total, text().length)
    assert.equal(at, z.length)
    assert.throws(() => decodeBody('zstd', z, 1 << 20), HttpEncodingError)
  }
  // A gzip bomb stops at the limit.
  const bomb = zlib.gzipSync(Buffer.alloc(10 << 20))
  assert.throws(() => decodeBody('gzip', bomb, 1 << 20), HttpEncodingError)
  assert.throws(() => decodeBody('compress', Buffer.from('x'), 100), /not supported/)
})
