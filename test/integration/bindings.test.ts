/**
 * Every binding against its real datastore (memory in-process, Redis and
 * PostgreSQL started here on free ports): insert, read, update, scan and
 * delete semantics, and the server-side cache counters.
 *
 * Bytes are how the Binding interface reports what came back, so the test
 * records are built to make bytes say *which* fields and records came back:
 * field0 of the record at sorted position j is 2^j characters long, so the
 * bytes of a scan over field0 are a bit set of the records it returned.
 */
import assert from 'node:assert/strict'
import { randomUUID } from 'node:crypto'
import { after, before, describe, test } from 'node:test'
import { Redis } from 'ioredis'
import pg from 'pg'
import type { Binding } from '../../services/core/ports/binding.js'
import { createBinding, type BindingName } from '../../services/adapters/datastores/index.js'
import { memoryStore } from '../../services/adapters/datastores/memory.js'
import { REDIS_INDEX_KEY } from '../../services/adapters/datastores/redis.js'
import { waitFor } from '../helpers/env.js'
import { startPostgres, startRedis, type TestServer } from '../helpers/servers.js'

let redis: TestServer
let postgres: TestServer
before(async () => {
  ;[redis, postgres] = await Promise.all([startRedis(), startPostgres()])
})
after(async () => {
  await Promise.all([redis?.stop(), postgres?.stop()])
})

/** Inserted out of order on purpose; byte order puts user10 before user2. */
const NUMBERS = [1, 2, 10, 11, 100, 20, 3, 9, 90, 5]
const FIELD1 = 'y'.repeat(7)
const FIELD2 = 'z'.repeat(11)

interface Fixture {
  binding: Binding
  table: string
  /** Of every key of this fixture. */
  prefix: string
  /** Record keys in byte order. */
  sorted: string[]
  /** Reads a record straight from the store, bypassing the binding (and, for memory, its cache). */
  stored: (key: string) => Promise<Record<string, string> | undefined>
  close(): Promise<void>
}

async function fixture(name: BindingName, redisDb: number): Promise<Fixture> {
  const id = randomUUID().slice(0, 8)
  const table = `it_${id}`
  const prefix = `${id}-`
  const sorted = NUMBERS.map((n) => `${prefix}user${n}`).sort((a, b) => (a < b ? -1 : a > b ? 1 : 0))
  switch (name) {
    case 'memory': {
      // A cache size no other test uses gives this test its own store.
      const binding = createBinding('memory', { 'memory.cachesize': '9973' })
      await binding.init()
      const store = memoryStore(9973)
      return { binding, table, prefix, sorted, stored: async (key) => store.peek(key), close: () => binding.cleanup() }
    }
    case 'redis': {
      const binding = createBinding('redis', { 'redis.port': String(redis.port), 'redis.db': String(redisDb) })
      await binding.init()
      const direct = new Redis({ port: redis.port, db: redisDb, lazyConnect: true })
      await direct.connect()
      return {
        binding,
        table,
        prefix,
        sorted,
        stored: async (key) => {
          const h = await direct.hgetall(key)
          return Object.keys(h).length === 0 ? undefined : h
        },
        close: async () => {
          await binding.cleanup()
          await direct.quit()
        },
      }
    }
    case 'postgres': {
      const binding = createBinding(
        'postgres',
        { 'postgres.url': postgres.url, table, fieldcount: '3' },
        { threads: 2 },
      )
      await binding.init()
      const direct = new pg.Client({ connectionString: postgres.url })
      await direct.connect()
      return {
        binding,
        table,
        prefix,
        sorted,
        stored: async (key) => {
          const r = await direct.query<Record<string, string>>(
            `SELECT field0, field1, field2 FROM ${table} WHERE ycsb_key = $1`,
            [key],
          )
          return r.rows[0] === undefined ? undefined : { ...r.rows[0] }
        },
        close: async () => {
          await binding.cleanup()
          await direct.query(`DROP TABLE ${table}`)
          await direct.end()
        },
      }
    }
  }
}

const record = (rank: number): Record<string, string> => ({
  field0: 'x'.repeat(2 ** rank),
  field1: FIELD1,
  field2: FIELD2,
})
/** Bytes of field0 of the records at these sorted positions. */
const field0Bytes = (...ranks: number[]): number => ranks.reduce((s, r) => s + 2 ** r, 0)

for (const name of ['memory', 'redis', 'postgres'] as const) {
  describe(`${name} binding`, () => {
    test('insert, read, update, scan and delete', async (t) => {
      const f = await fixture(name, 1)
      t.after(() => f.close())
      const { binding: b, table, sorted } = f
      const k = (rank: number): string => sorted[rank]!

      // Insert in the shuffled NUMBERS order, not key order.
      for (const n of NUMBERS) {
        const key = `${f.prefix}user${n}`
        const rank = sorted.indexOf(key)
        assert.deepEqual(await b.insert(table, key, record(rank)), {
          status: 'OK',
          cache: 'UNKNOWN',
          bytes: 2 ** rank + 18,
        })
      }

      // Read after insert: all fields, and the requested ones only.
      for (let rank = 0; rank < sorted.length; rank++) {
        assert.deepEqual(
          await b.read(table, k(rank), undefined),
          { status: 'OK', cache: name === 'memory' ? 'MISS' : 'UNKNOWN', bytes: 2 ** rank + 18 },
          `read ${k(rank)}`,
        )
        assert.equal((await b.read(table, k(rank), ['field0'])).bytes, 2 ** rank)
        assert.equal((await b.read(table, k(rank), ['field1', 'field2'])).bytes, 18)
        assert.deepEqual(await f.stored(k(rank)), record(rank), `stored ${k(rank)}`)
      }
      if (name === 'memory') assert.equal((await b.read(table, k(0), undefined)).cache, 'HIT')

      // Update changes one field and leaves the others.
      const longer = 'w'.repeat(40)
      assert.deepEqual(await b.update(table, k(3), { field1: longer }), { status: 'OK', cache: 'UNKNOWN', bytes: 40 })
      assert.equal((await b.read(table, k(3), ['field1'])).bytes, 40)
      assert.equal((await b.read(table, k(3), undefined)).bytes, 2 ** 3 + 40 + 11)
      assert.deepEqual(await f.stored(k(3)), { ...record(3), field1: longer })
      assert.equal((await b.read(table, k(4), ['field1'])).bytes, 7)
      assert.equal((await b.update(table, `${k(0)}-missing`, { field1: 'v' })).status, 'NOT_FOUND')
      assert.equal(await f.stored(`${k(0)}-missing`), undefined, 'an update of a missing key must not create it')

      // Scan: `count` records in key order from startKey.
      assert.deepEqual(await b.scan(table, k(2), 4, ['field0']), {
        status: 'OK',
        cache: 'UNKNOWN',
        bytes: field0Bytes(2, 3, 4, 5),
      })
      // A start key between records starts at the next one (user12 -> user2).
      const between = `${f.prefix}user12`
      assert.equal((await b.scan(table, between, 2, ['field0'])).bytes, field0Bytes(4, 5))
      assert.equal((await b.scan(table, `${f.prefix}user0`, 3, ['field0'])).bytes, field0Bytes(0, 1, 2))
      // Past the end: only what is there.
      assert.equal((await b.scan(table, k(7), 10, ['field0'])).bytes, field0Bytes(7, 8, 9))
      // All fields.
      assert.equal((await b.scan(table, k(0), 2, undefined)).bytes, 2 ** 0 + 18 + 2 ** 1 + 18)

      // Missing keys.
      assert.deepEqual(await b.read(table, `${k(0)}-missing`, undefined), {
        status: 'NOT_FOUND',
        cache: 'UNKNOWN',
        bytes: 0,
      })
      assert.equal((await b.read(table, `${k(0)}-missing`, ['field0'])).status, 'NOT_FOUND')

      // Delete: gone for reads, for scans (the index entry too), and a second delete finds nothing.
      assert.equal((await b.delete(table, k(4))).status, 'OK')
      assert.equal((await b.read(table, k(4), undefined)).status, 'NOT_FOUND')
      assert.equal((await b.read(table, k(4), ['field0'])).status, 'NOT_FOUND')
      assert.equal((await b.delete(table, k(4))).status, 'NOT_FOUND')
      assert.equal((await b.scan(table, k(3), 3, ['field0'])).bytes, field0Bytes(3, 5, 6))
      assert.equal(await f.stored(k(4)), undefined)
      if (name === 'redis') {
        const direct = new Redis({ port: redis.port, db: 1 })
        t.after(() => direct.quit())
        assert.equal(await direct.zscore(REDIS_INDEX_KEY, k(4)), null)
        assert.equal(await direct.zscore(REDIS_INDEX_KEY, k(5)), '0')
      }
    })
  })
}

describe('server metrics', () => {
  test('redis keyspace_hits and keyspace_misses count the reads', async (t) => {
    const f = await fixture('redis', 2)
    t.after(() => f.close())
    const b = f.binding
    for (let r = 0; r < 5; r++) await b.insert(f.table, f.sorted[r]!, record(r))
    const m0 = await b.sampleServerMetrics!()
    assert.equal(m0.source, 'redis')
    for (let i = 0; i < 20; i++) assert.equal((await b.read(f.table, f.sorted[i % 5]!, undefined)).status, 'OK')
    for (let i = 0; i < 7; i++) assert.equal((await b.read(f.table, `missing-${i}`, undefined)).status, 'NOT_FOUND')
    const m1 = await b.sampleServerMetrics!()
    // This server and database are the test's own: the deltas are exact.
    assert.equal(m1.values.keyspace_hits! - m0.values.keyspace_hits!, 20)
    assert.equal(m1.values.keyspace_misses! - m0.values.keyspace_misses!, 7)
  })

  test('postgres blks_hit grows with reads', async (t) => {
    const f = await fixture('postgres', 0)
    t.after(() => f.close())
    const b = f.binding
    for (let r = 0; r < 5; r++) await b.insert(f.table, f.sorted[r]!, record(r))
    const m0 = await b.sampleServerMetrics!()
    assert.equal(m0.source, 'postgres')
    assert.ok(Number.isFinite(m0.values.blks_hit) && Number.isFinite(m0.values.blks_read), JSON.stringify(m0))
    const reads = 50
    for (let i = 0; i < reads; i++) assert.equal((await b.read(f.table, f.sorted[i % 5]!, undefined)).status, 'OK')
    // Backends publish their counters at most once a second: wait for them.
    // Each keyed read touches at least an index page and a heap page.
    const m1 = await waitFor(
      'blks_hit to count the reads',
      async () => {
        const m = await b.sampleServerMetrics!()
        return m.values.blks_hit! - m0.values.blks_hit! >= 2 * reads ? m : undefined
      },
      15_000,
      250,
    )
    assert.ok(m1.values.blks_read! >= m0.values.blks_read!)
  })
})

describe('connection settings', () => {
  test('a server that cannot be used fails init() with what was tried', async (t) => {
    const closed = String(postgres.port === 1 ? 2 : 1)
    const make = (name: BindingName, props: Record<string, string>): Binding => {
      const b = createBinding(name, props)
      t.after(() => b.cleanup())
      return b
    }
    type Coded = Error & { code?: string }
    await assert.rejects(
      make('redis', { 'redis.port': closed, 'redis.timeout': '500' }).init(),
      (err: Coded) =>
        err.code === 'BS_ERR_BINDING' &&
        err.message.includes(`127.0.0.1:${closed}`) &&
        err.message.includes('ECONNREFUSED'),
    )
    // Redis has 16 databases unless configured otherwise.
    await assert.rejects(
      make('redis', { 'redis.port': String(redis.port), 'redis.db': '99' }).init(),
      (err: Coded) =>
        err.code === 'BS_ERR_BINDING' &&
        err.message.includes('(db 99)') &&
        /DB index is out of range/i.test(err.message),
    )
    await assert.rejects(
      make('postgres', { 'postgres.port': closed, 'postgres.password': 'secret' }).init(),
      (err: Coded) =>
        err.code === 'BS_ERR_BINDING' && err.message.includes(`127.0.0.1:${closed}`) && !err.message.includes('secret'),
    )
    await assert.rejects(
      make('postgres', { 'postgres.url': postgres.url.replace(/\/postgres$/, '/no_such_db') }).init(),
      (err: Coded) => err.code === 'BS_ERR_BINDING' && err.message.includes('no_such_db'),
    )
  })
})
