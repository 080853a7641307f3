import assert from 'node:assert/strict'
import { test } from 'node:test'
import { CACHE_OUTCOMES, OPERATIONS, STATUSES } from '../../schemas/events.v1.js'
import {
  fixedColumn,
  int64Column,
  lowCardinalityColumn,
  nativeBlock,
} from '../../services/adapters/clickhouse/native-insert.js'
import { opsNative } from '../../services/adapters/clickhouse/ops-native.js'
import { RawOps } from '../../services/core/stats/partition-state.js'

const join = (chunks: Uint8Array[]): Buffer => Buffer.concat(chunks)

test('a Native block is byte for byte what ClickHouse itself writes', () => {
  // chDB 26.7.2.1: SELECT toLowCardinality(toString(number % 2)) AS r, toUInt16(number * 300) AS t,
  //   toDateTime64(1764680000 + number, 6, 'UTC') + toIntervalMicrosecond(number) AS d,
  //   CAST(number % 3 AS Enum8('UNKNOWN' = 0, 'HIT' = 1, 'MISS' = 2)) AS c, toUInt32(number * 70000) AS u,
  //   toUInt64(number) * 5000000000 AS o FROM numbers(3) FORMAT Native
  const fromClickHouse = [
    '06030172164c6f7743617264696e616c69747928537472696e67290100000000000000000600000000000003000000000000',
    '000001300131030000000000000001020101740655496e74313600002c0158020164144461746554696d65363428362c2027',
    '555443272900d08a94f744060041129a94f74406008254a994f744060001632b456e756d382827554e4b4e4f574e27203d20',
    '302c202748495427203d20312c20274d49535327203d20322900010201750655496e7433320000000070110100e022020001',
    '6f0655496e743634000000000000000000f2052a0100000000e40b5402000000',
  ].join('')
  const block = nativeBlock(3, [
    {
      name: 'r',
      type: 'LowCardinality(String)',
      data: lowCardinalityColumn(['', '0', '1'], new Uint8Array([1, 2, 1]), 0, 3),
    },
    { name: 't', type: 'UInt16', data: fixedColumn(new Uint16Array([0, 300, 600]), 0, 3) },
    {
      name: 'd',
      type: "DateTime64(6, 'UTC')",
      data: int64Column(new Float64Array([1764680000e6, 1764680001e6 + 1, 1764680002e6 + 2]), 0, 3),
    },
    {
      name: 'c',
      type: "Enum8('UNKNOWN' = 0, 'HIT' = 1, 'MISS' = 2)",
      data: fixedColumn(new Uint8Array([0, 1, 2]), 0, 3),
    },
    { name: 'u', type: 'UInt32', data: fixedColumn(new Uint32Array([0, 70_000, 140_000]), 0, 3) },
    { name: 'o', type: 'UInt64', data: int64Column(new Float64Array([0, 5e9, 10e9]), 0, 3) },
  ])
  assert.equal(join(block).toString('hex'), fromClickHouse)
})

/** Reads back the Native blocks opsNative writes (the types it uses only). */
function readNative(buf: Buffer): { rows: number; columns: Map<string, { type: string; values: unknown[] }> } {
  let p = 0
  const varint = (): number => {
    let n = 0
    for (let shift = 1; ; shift *= 128) {
      const b = buf[p++]!
      n += (b & 0x7f) * shift
      if (b < 0x80) return n
    }
  }
  const str = (): string => {
    const n = varint()
    p += n
    return buf.toString('utf8', p - n, p)
  }
  const u64 = (): number => {
    p += 8
    return Number(buf.readBigUInt64LE(p - 8))
  }
  const ncols = varint()
  const rows = varint()
  const columns = new Map<string, { type: string; values: unknown[] }>()
  for (let c = 0; c < ncols; c++) {
    const name = str()
    const type = str()
    const values: unknown[] = []
    if (type === 'LowCardinality(String)') {
      assert.equal(u64(), 1)
      const indexType = u64()
      assert.equal(indexType & ~0xff, (1 << 9) | (1 << 10))
      const keys = Array.from({ length: u64() }, () => str())
      assert.equal(u64(), rows)
      const width = 1 << (indexType & 0xff)
      for (let i = 0; i < rows; i++, p += width) values.push(keys[buf.readUIntLE(p, width)])
    } else {
      const width = type === 'UInt16' ? 2 : type === 'UInt32' ? 4 : type.startsWith('Enum8') ? 1 : 8
      for (let i = 0; i < rows; i++, p += width)
        values.push(width === 8 ? Number(buf.readBigInt64LE(p)) : buf.readUIntLE(p, width))
    }
    columns.set(name, { type, values })
  }
  assert.equal(p, buf.length, 'nothing after the block')
  return { rows, columns }
}

test('raw events become one Native block in the columns of ops; any row range encodes on its own', () => {
  const ops = new RawOps()
  ops.runIds.push('run-1', 'run.2', 'run-1')
  ops.clientIds.push('c:a', 'c_b', 'c_b')
  const starts = [1_764_680_000_000_000, 1_764_680_000_999_999, 1_764_680_001_000_001, 1_000_000, 9_007_199_254_740_991]
  const events: Array<{
    group: number
    thread: number
    opCode: number
    statusIndex: number
    cacheIndex: number
    startUs: number
    latencyUs: number
    intendedUs: number
    bytes: number
    offset: number
  }> = []
  for (let i = 0; i < 10_000; i++) {
    const latencyUs = (i * 7919) % 3_000_000_000
    const e = {
      group: i % 3,
      thread: i % 65_536,
      opCode: 1 + (i % 6),
      statusIndex: i % STATUSES.length,
      cacheIndex: i % 3,
      startUs: starts[i % starts.length]! + i,
      latencyUs,
      intendedUs: latencyUs + (i % 7 === 0 ? (i * 104729) % 600_000_000 : 0),
      bytes: i * 31,
      offset: 1e12 + i,
    }
    ops.push(e.group, e, e.offset)
    events.push(e)
  }
  for (const [from, to] of [
    [0, 10_000],
    [0, 1],
    [4_999, 5_001],
    [9_999, 10_000],
  ] as const) {
    const { rows, columns } = readNative(join(opsNative(ops, 7, from, to)))
    assert.equal(rows, to - from)
    assert.deepEqual(
      [...columns.keys()],
      [
        'run_id',
        'client_id',
        'thread',
        'op',
        'start',
        'latency_us',
        'wait_us',
        'status',
        'cache',
        'bytes',
        'src_partition',
        'src_offset',
      ],
    )
    const col = (name: string): unknown[] => columns.get(name)!.values
    const slice = events.slice(from, to)
    assert.deepEqual(
      col('run_id'),
      slice.map((e) => ops.runIds[e.group]),
    )
    assert.deepEqual(
      col('client_id'),
      slice.map((e) => ops.clientIds[e.group]),
    )
    assert.deepEqual(
      col('thread'),
      slice.map((e) => e.thread),
    )
    assert.deepEqual(
      col('op'),
      slice.map((e) => OPERATIONS[e.opCode - 1]),
    )
    assert.deepEqual(
      col('start'),
      slice.map((e) => e.startUs),
    )
    assert.deepEqual(
      col('latency_us'),
      slice.map((e) => e.latencyUs),
    )
    assert.deepEqual(
      col('wait_us'),
      slice.map((e) => e.intendedUs - e.latencyUs),
    )
    assert.deepEqual(
      col('status'),
      slice.map((e) => STATUSES[e.statusIndex]),
    )
    assert.equal(columns.get('cache')!.type, `Enum8(${CACHE_OUTCOMES.map((c, i) => `'${c}' = ${i}`).join(', ')})`)
    assert.deepEqual(
      col('cache'),
      slice.map((e) => e.cacheIndex),
    )
    assert.deepEqual(
      col('bytes'),
      slice.map((e) => e.bytes),
    )
    assert.deepEqual(
      col('src_partition'),
      slice.map(() => 7),
    )
    assert.deepEqual(
      col('src_offset'),
      slice.map((e) => e.offset),
    )
  }
})
