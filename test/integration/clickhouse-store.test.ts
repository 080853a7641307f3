/**
 * The ClickHouse side against the real engine (embedded chDB): migrations,
 * idempotent flushes, and SQL percentiles identical to the TypeScript ones.
 */
import assert from 'node:assert/strict'
import { test } from 'node:test'
import { ClickHouseWindowStore } from '../../services/adapters/clickhouse/window-store.js'
import { loadMigrations, migrate, openClickHouse, queryRows } from '../../services/adapters/clickhouse/client.js'
import { readInfraConfig } from '../../services/common/infra-config.js'
import { isBenchstreamError } from '../../services/core/errors.js'
import { OpsBatchWriter } from '../../services/core/codec/ops-batch-writer.js'
import { entriesFromMap, Histogram, quantileFromEntries } from '../../services/core/stats/histogram.js'
import { PartitionState } from '../../services/core/stats/partition-state.js'
import { migratedClickHouse } from '../helpers/clickhouse.js'
import { testEnv } from '../helpers/env.js'
import { joinRegExp } from '../helpers/regexp.js'

const NOW = Date.now() * 1000

test(
  'migrations apply once and re-run safely; flushes are idempotent ' + 'by token; SQL quantiles equal TS quantiles',
  async (t) => {
    const te = testEnv({ KAFKA_BROKERS: '127.0.0.1:1' })
    t.after(te.cleanup)
    const infra = readInfraConfig(te.env)
    const ch = openClickHouse(infra.clickhouse)
    t.after(() => ch.close())
    // Every migration file, in order, exactly once. Numbers may have gaps (a number reserved on another branch).
    const versions = loadMigrations('benchstream').map((m) => m.version)
    assert.ok(
      versions.length >= 4 && versions[0] === 1 && versions.every((v, i) => i === 0 || v > versions[i - 1]!),
      `migrations are numbered from 1, increasing, none twice: ${versions.join(', ')}`,
    )
    assert.deepEqual(await migrate(ch, { opsTtlDays: 30 }), versions)
    assert.deepEqual(await migrate(ch, { opsTtlDays: 0 }), [], 'second run applies nothing')
    assert.deepEqual(await migrate(ch, { opsTtlDays: 7 }), [])
    const ttl = await queryRows<{ q: string }>(
      ch,
      `SELECT create_table_query AS q FROM system.tables WHERE database = 'benchstream' AND name = 'ops'`,
    )
    assert.match(ttl[0]!.q, /TTL toDateTime\(start\) \+ toIntervalDay\(7\)/)

    // Build one flush from real encoded messages.
    const st = new PartitionState('topic', 0, 0, {
      windowUs: 1_000_000,
      allowedLatenessUs: 0,
      storeRawEvents: true,
      maxEventAgeUs: 86_400e6,
      maxEventFutureUs: 600e6,
    })
    const w = new OpsBatchWriter('run-ch', 'client-1')
    const values: number[] = []
    let seed = 3
    for (let i = 0; i < 20_000; i++) {
      seed = (seed * 16807) % 2147483647
      const v = Math.round(20 + (seed % 1000) * (i % 10 === 0 ? 90 : 1))
      values.push(v)
      w.add(i % 4, 1, 1 + (i % 2), 0, NOW + i * 100, v, v, 10)
    }
    st.add(w.finish(), 0, NOW)
    st.add(Buffer.from('garbage'), 1, NOW)
    const batch = st.drain('g')
    const store = new ClickHouseWindowStore(ch)
    await store.write(batch)
    await store.write(batch) // the retry after a crash: must be dropped
    const [c] = await queryRows<{ n: string; raw: string; dl: string }>(
      ch,
      `SELECT (SELECT sum(count) FROM benchstream.op_windows) AS n, (SELECT count() FROM benchstream.ops) ` +
        `AS raw, (SELECT count() FROM benchstream.dead_letters) AS dl`,
    )
    assert.equal(Number(c!.n), 20_000)
    assert.equal(Number(c!.raw), 20_000)
    assert.equal(Number(c!.dl), 1)

    const h = new Histogram()
    for (const v of values) h.record(v)
    const rows = await queryRows<{ hist: Record<string, string>; p50: number; p99: number; p999: number; e99: number }>(
      ch,
      `
    SELECT sumMap(hist) AS hist,
      bs_quantile(0.5, hist) AS p50, bs_quantile(0.99, hist) AS p99, bs_quantile(0.999, hist) AS p999,
      (SELECT arraySort(groupArray(latency_us))[bs_rank(0.99, count())] FROM benchstream.ops) AS e99
    FROM benchstream.op_windows`,
    )
    const r = rows[0]!
    assert.deepEqual(entriesFromMap(r.hist), h.entries())
    assert.equal(r.p50, h.quantile(0.5))
    assert.equal(r.p99, h.quantile(0.99))
    assert.equal(r.p999, quantileFromEntries(h.entries(), 0.999))
    assert.ok(Math.abs(r.p99 - r.e99) / r.e99 <= 0.01, `p99 ${r.p99} vs exact ${r.e99}`)
    const summary = await queryRows<{ operations: string; cache_hit_ratio: number }>(
      ch,
      `SELECT operations, cache_hit_ratio FROM benchstream.run_summary WHERE run_id = 'run-ch'`,
    )
    assert.equal(Number(summary[0]!.operations), 20_000)
    assert.equal(summary[0]!.cache_hit_ratio, 0.5)
    // The parameterized view takes seconds since the run's first window: the
    // whole run gives the same percentiles, a later stretch only its events,
    // and no raw histogram map comes out.
    const whole = await queryRows<Record<string, unknown>>(
      ch,
      `SELECT * FROM benchstream.op_percentiles(run_id = 'run-ch', from_s = 0, to_s = 86400)`,
    )
    assert.equal(Number(whole[0]!.operations), 20_000)
    assert.equal(whole[0]!.p99_us, h.quantile(0.99))
    assert.equal(whole[0]!.intended_p99_us, h.quantile(0.99)) // these events have intended = measured
    assert.ok(
      Object.values(whole[0]!).every((v) => typeof v !== 'object' || v === null),
      `no map or array column: ${Object.keys(whole[0]!).join(', ')}`,
    )
    const firstWindowS = Math.floor(NOW / 1_000_000)
    const expected = Array.from({ length: 20_000 }, (_, i) => Math.floor((NOW + i * 100) / 1_000_000)).filter(
      (s) => s >= firstWindowS + 1,
    ).length
    const part = await queryRows<{ operations: string }>(
      ch,
      `SELECT operations FROM benchstream.op_percentiles(run_id = 'run-ch', from_s = 1, to_s = 86400)`,
    )
    assert.ok(expected > 0 && expected < 20_000)
    assert.equal(Number(part[0]!.operations), expected)
  },
)

test('an unusable data directory is a clear BS_ERR_CONFIG at once, not a hang', () => {
  for (const dir of ['/proc/benchstream-no-such-dir', '/etc/passwd/below-a-file']) {
    const t0 = Date.now()
    assert.throws(
      () => openClickHouse(readInfraConfig({ BENCHSTREAM_DATA_DIR: dir }).clickhouse),
      (e: unknown) =>
        isBenchstreamError(e, 'BS_ERR_CONFIG') &&
        joinRegExp([
          /BENCHSTREAM_DATA_DIR: the embedded ClickHouse directory .* /,
          /cannot be created or written \((ENOENT|ENOTDIR|EACCES)\)/,
        ]).test(e.message),
    )
    assert.ok(Date.now() - t0 < 2000)
  }
})

test(
  'a replay that ClickHouse drops as a duplicate of rows that are ' + 'not there is found and written again, once',
  async (t) => {
    const te = testEnv({ KAFKA_BROKERS: '127.0.0.1:1' })
    t.after(te.cleanup)
    const ch = await migratedClickHouse(t, readInfraConfig(te.env).clickhouse)
    const st = new PartitionState('topic', 3, 100, {
      windowUs: 1_000_000,
      allowedLatenessUs: 0,
      storeRawEvents: true,
      maxEventAgeUs: 86_400e6,
      maxEventFutureUs: 600e6,
    })
    const w = new OpsBatchWriter('run-phantom', 'client-1')
    for (let i = 0; i < 5_000; i++) w.add(i % 4, 1, 1, 0, NOW + i * 1000, 50 + (i % 200), 50 + (i % 200), 10)
    st.add(w.finish(), 100, NOW)
    st.add(Buffer.from('garbage'), 101, NOW)
    const batch = st.drain('g')
    const store = new ClickHouseWindowStore(ch)
    const counts = async (): Promise<number[]> => {
      const [c] = await queryRows<{ n: string; raw: string; dl: string }>(
        ch,
        `SELECT (SELECT sum(count) FROM benchstream.op_windows WHERE run_id = 'run-phantom') AS n, (SELECT ` +
          (`count() FROM benchstream.ops WHERE run_id = 'run-phantom') AS ` +
            `raw, (SELECT count() FROM benchstream.dead_letters `) +
          `WHERE src_partition = 3) AS dl`,
      )
      return [Number(c!.n), Number(c!.raw), Number(c!.dl)]
    }
    assert.deepEqual((await store.write(batch)).missing, [], 'an unverified write reports nothing')
    assert.deepEqual(await counts(), [5_000, 5_000, 1])
    // What a SIGKILL between ClickHouse's deduplication record and its part leaves behind: the
    // record of each insert's token, and not its rows. Deleting the rows (the records stay) makes
    // that state on purpose.
    for (const table of ['op_windows', 'ops'])
      await ch.client.command({
        query: `ALTER TABLE benchstream.${table} DELETE WHERE run_id = 'run-phantom' SETTINGS mutations_sync = 2`,
      })
    await ch.client.command({
      query: 'ALTER TABLE benchstream.dead_letters DELETE WHERE src_partition = 3 SETTINGS mutations_sync = 2',
    })
    assert.deepEqual(await counts(), [0, 0, 0])
    // The replay as it was written before verification: dropped by the tokens, silently.
    await store.write(batch)
    assert.deepEqual(await counts(), [0, 0, 0], 'the tokens drop the replay although its rows are not there')
    // Verified: every table's rows found missing, written again under a recovery token.
    const r = await store.write(batch, { verify: true })
    assert.deepEqual(
      r.missing
        .map((m) => [m.table, m.expected, m.found, m.restored])
        .sort((x, y) => String(x[0]).localeCompare(String(y[0]))),
      [
        ['benchstream.dead_letters', 1, 0, true],
        ['benchstream.op_windows', batch.windows.length, 0, true],
        ['benchstream.ops', 5_000, 0, true],
      ],
    )
    assert.deepEqual(await counts(), [5_000, 5_000, 1])
    // Once: a further replay (verified or not) finds everything and writes nothing.
    assert.deepEqual((await store.write(batch, { verify: true })).missing, [])
    await store.write(batch)
    assert.deepEqual(await counts(), [5_000, 5_000, 1])
  },
)
