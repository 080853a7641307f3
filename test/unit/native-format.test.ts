/**
 * Re-framing ClickHouse Native output for a client's protocol revision
 * (services/adapters/clickhouse/native-format.ts), on bytes chDB wrote
 * (test/fixtures/native/chdb.json, test/tools/gen-native-fixtures.mjs):
 * revision 0 gives back exactly what the engine wrote, BlockInfo goes in
 * front of every block, cutting at k rows gives exactly what the engine
 * writes for LIMIT k, and no input makes it fail other than with its own
 * error. That clickhouse-go decodes the revision-54460 framing is checked by
 * test/integration/clickhouse-http.test.ts.
 */
import assert from 'node:assert/strict'
import { readFileSync } from 'node:fs'
import path from 'node:path'
import { test } from 'node:test'
import {
  MIN_REVISION_WITH_CUSTOM_SERIALIZATION,
  NativeFormatError,
  NativeReframer,
  typeSpec,
} from '../../services/adapters/clickhouse/native-format.js'
import { repoRoot } from '../../services/common/repo-root.js'

interface Case {
  name: string
  sql: string
  chunks: string[]
  limit?: number
  limitChunks?: string[]
}
const fixtures = JSON.parse(readFileSync(path.join(repoRoot(), 'test/fixtures/native/chdb.json'), 'utf8')) as {
  cases: Case[]
}
const NO_CAPS = { maxRows: Number.MAX_SAFE_INTEGER, maxBytes: Number.MAX_SAFE_INTEGER }
const BLOCK_INFO = Buffer.from('010002ffffffff00', 'hex')
const bytes = (hex: string[]): Buffer => Buffer.concat(hex.map((h) => Buffer.from(h, 'hex')))
const byName = (name: string): Case => fixtures.cases.find((c) => c.name === name) ?? assert.fail(`no fixture ${name}`)

function reframe(input: Buffer[], revision: number, caps = NO_CAPS): { out: Buffer; framer: NativeReframer } {
  const framer = new NativeReframer(revision, caps)
  const out: Buffer[] = []
  for (const chunk of input) out.push(...framer.push({ data: chunk, rows: undefined }))
  framer.end()
  return { out: Buffer.concat(out), framer }
}

/** The input cut into pieces of n bytes: blocks arrive split anywhere (a server's HTTP body). */
function pieces(b: Buffer, n: number): Buffer[] {
  const out: Buffer[] = []
  for (let i = 0; i < b.length; i += n) out.push(b.subarray(i, i + n))
  return out
}

test('revision 0 gives back exactly the bytes the engine wrote, however the stream is cut', () => {
  for (const c of fixtures.cases) {
    const whole = bytes(c.chunks)
    for (const size of [whole.length || 1, 1, 7, 4096]) {
      const { out, framer } = reframe(pieces(whole, size), 0)
      assert.ok(out.equals(whole), `${c.name}, pieces of ${size}: re-framed bytes differ`)
      assert.equal(framer.stoppedBy, undefined)
    }
  }
})

test(
  'SELECT 1 for clickhouse-go (revision 54460): BlockInfo, then ' + 'the custom-serialization byte after the type',
  () => {
    const { out, framer } = reframe([bytes(byName('select 1').chunks)], 54460)
    // BlockInfo | 1 column, 1 row | "1" | "UInt8" | no custom serialization | value 1
    assert.equal(out.toString('hex'), '010002ffffffff00' + '0101' + '0131' + '0555496e7438' + '00' + '01')
    assert.equal(framer.rows, 1)
  },
)

test('a revision between 1 and 54453 gets BlockInfo in front of each block and nothing else', () => {
  for (const c of fixtures.cases) {
    // chDB streams one block per chunk.
    const expected = Buffer.concat(c.chunks.map((h) => Buffer.concat([BLOCK_INFO, Buffer.from(h, 'hex')])))
    assert.ok(reframe([bytes(c.chunks)], MIN_REVISION_WITH_CUSTOM_SERIALIZATION - 1).out.equals(expected), c.name)
  }
})

test('from revision 54454 on, each column type is followed by one zero byte', () => {
  const c = byName('hello (clickhouse-go HTTP handshake)')
  const plain = bytes(c.chunks)
  const framed = reframe([plain], MIN_REVISION_WITH_CUSTOM_SERIALIZATION).out
  // 4 columns: 4 bytes more than BlockInfo + the block.
  assert.equal(framed.length, BLOCK_INFO.length + plain.length + 4)
  for (const type of ['String', 'UInt32']) {
    const at = framed.indexOf(Buffer.concat([Buffer.from([type.length]), Buffer.from(type)]))
    assert.equal(framed[at + 1 + type.length], 0, `a 0 after ${type}`)
  }
})

test('cut at k rows: exactly what the engine writes for LIMIT k, in every walked type', () => {
  for (const c of fixtures.cases.filter((x) => x.limit !== undefined)) {
    const { out, framer } = reframe([bytes(c.chunks)], 0, { maxRows: c.limit!, maxBytes: Number.MAX_SAFE_INTEGER })
    assert.ok(out.equals(bytes(c.limitChunks!)), `${c.name}: first ${c.limit} rows differ from LIMIT ${c.limit}`)
    assert.equal(framer.rows, c.limit)
    assert.equal(framer.stoppedBy, 'rows')
  }
})

test('low cardinality columns are cut to k rows keeping their dictionary, and stay well-formed', () => {
  const c = byName('low cardinality')
  const whole = bytes(c.chunks)
  const { out, framer } = reframe([whole], 0, { maxRows: 3, maxBytes: Number.MAX_SAFE_INTEGER })
  assert.equal(framer.rows, 3)
  assert.ok(out.length < whole.length / 3)
  // Read back: one block of 3 rows that walks to its last byte.
  const again = reframe([out], 0)
  assert.ok(again.out.equals(out))
  assert.equal(again.framer.rows, 3)
})

test('the byte cap cuts at a row boundary and never goes over', () => {
  const c = byName('nullable, arrays, maps, tuples')
  const whole = bytes(c.chunks)
  for (const maxBytes of [5000, 12_000, 20_000]) {
    const { out, framer } = reframe([whole], 54460, { maxRows: Number.MAX_SAFE_INTEGER, maxBytes })
    assert.ok(out.length <= maxBytes, `${out.length} > ${maxBytes}`)
    assert.equal(framer.stoppedBy, 'bytes')
    assert.ok(framer.rows > 0)
    // The same rows cut by the row cap give the same bytes.
    assert.ok(
      reframe([whole], 54460, { maxRows: framer.rows, maxBytes: Number.MAX_SAFE_INTEGER }).out.equals(out),
      `bytes cap ${maxBytes}`,
    )
  }
})

test('types it does not walk are refused by name, with what to do instead', () => {
  for (const t of ['JSON', 'Dynamic', 'Variant(String, UInt64)', 'AggregateFunction(sum, UInt64)', "Object('json')"]) {
    assert.throws(
      () => typeSpec(t),
      (e: unknown) => e instanceof NativeFormatError && e.message.includes(t) && /cast them/.test(e.message),
      t,
    )
  }
  for (const t of [
    "Nullable(DateTime64(3, 'UTC'))",
    'Map(LowCardinality(String), Array(Nullable(Decimal(38, 4))))',
    "Tuple(a UInt8, `b c` Enum8('x, y' = 1))",
    'SimpleAggregateFunction(max, UInt64)',
    'MultiPolygon',
  ]) {
    assert.doesNotThrow(() => typeSpec(t), t)
  }
})

test('a stream that ends inside a block is an error, not a hang or a short answer', () => {
  const whole = bytes(byName('numbers and strings').chunks)
  const framer = new NativeReframer(54460, NO_CAPS)
  framer.push({ data: whole.subarray(0, whole.length - 10), rows: undefined })
  assert.throws(() => framer.end(), NativeFormatError)
})

test('hostile bytes: only NativeFormatError, never another exception', () => {
  // A fixed-seed xorshift, so a failure replays.
  let seed = 0x9e3779b9
  const rand = (n: number): number => {
    seed ^= seed << 13
    seed ^= seed >>> 17
    seed ^= seed << 5
    return (seed >>> 0) % n
  }
  const sources = fixtures.cases.filter((c) => c.chunks.length > 0).map((c) => bytes(c.chunks).subarray(0, 4000))
  let refused = 0
  for (let i = 0; i < 2000; i++) {
    const b = Buffer.from(sources[rand(sources.length)]!)
    for (let j = 0; j < 1 + rand(4); j++) b[rand(b.length)] = rand(256)
    const framer = new NativeReframer(54460, { maxRows: 1 + rand(500), maxBytes: 1 + rand(100_000) })
    try {
      framer.push({ data: b, rows: undefined })
      framer.end()
    } catch (err) {
      if (!(err instanceof NativeFormatError)) assert.fail(`case ${i}: ${(err as Error).stack ?? String(err)}`)
      refused++
    }
  }
  assert.ok(refused > 100, `only ${refused} of 2000 mutated streams were refused`)
})
