/**
 * The datastore's cache-hit ratio from cumulative counters: growth per
 * client, summed; a restart (counter going down) counts from zero; only the
 * counters each source defines; real HBase /jmx samples give real counters.
 */
import assert from 'node:assert/strict'
import { readFileSync } from 'node:fs'
import { test } from 'node:test'
import { repoRoot } from '../../services/common/repo-root.js'
import {
  SERVER_CACHE_COUNTERS,
  serverCacheFigures,
  type CounterSample,
} from '../../services/core/reports/server-cache.js'

const s = (clientId: string, source: string, name: string, atS: number, value: number): CounterSample => ({
  clientId,
  source,
  name,
  atUs: atS * 1e6,
  value,
})

test('growth per client, summed over clients, per source', () => {
  const figures = serverCacheFigures([
    // client a: hits 100 -> 190 (+90), misses 10 -> 20 (+10); samples out of order
    s('a', 'redis', 'keyspace_hits', 2, 190),
    s('a', 'redis', 'keyspace_hits', 0, 100),
    s('a', 'redis', 'keyspace_misses', 0, 10),
    s('a', 'redis', 'keyspace_misses', 2, 20),
    // client b reads the same server: its own growth counts too
    s('b', 'redis', 'keyspace_hits', 0, 500),
    s('b', 'redis', 'keyspace_hits', 1, 530),
    s('b', 'redis', 'keyspace_misses', 1, 70),
    s('b', 'redis', 'keyspace_misses', 0, 60),
    // a counter this source does not define is ignored
    s('a', 'redis', 'used_memory', 0, 1),
    s('a', 'redis', 'used_memory', 1, 99),
    // an unknown source is ignored
    s('a', 'cassandra', 'hits', 0, 1),
    s('a', 'cassandra', 'hits', 1, 5),
  ])
  assert.deepEqual(figures, [{ source: 'redis', hits: 120, misses: 20, ratio: 120 / 140 }])
})

test('a counter that goes down (server restart) counts again from zero; no movement is a null ratio', () => {
  const figures = serverCacheFigures([
    s('a', 'hbase', 'blockCacheHitCount', 0, 1000),
    s('a', 'hbase', 'blockCacheHitCount', 1, 1500),
    s('a', 'hbase', 'blockCacheHitCount', 2, 30),
    s('a', 'hbase', 'blockCacheHitCount', 3, 80),
    s('a', 'hbase', 'blockCacheMissCount', 0, 5),
    s('a', 'hbase', 'blockCacheMissCount', 3, 5),
    s('a', 'postgres', 'blks_hit', 0, 7),
    s('a', 'postgres', 'blks_hit', 1, 7),
  ])
  assert.deepEqual(figures, [
    { source: 'hbase', hits: 500 + 30 + 50, misses: 0, ratio: 1 },
    { source: 'postgres', hits: 0, misses: 0, ratio: null },
  ])
})

test('the HBase counters are the ones a real region server exposes (HBase 2.5.10 and 2.6.1 /jmx)', () => {
  for (const v of ['2.5.10-hadoop3', '2.6.1-hadoop3']) {
    const jmx = JSON.parse(
      readFileSync(`${repoRoot()}/test/fixtures/hbase/jmx-regionserver-server-${v}.json`, 'utf8'),
    ) as { beans: Array<Record<string, unknown>> }
    const bean = jmx.beans.find((b) => b.name === 'Hadoop:service=HBase,name=RegionServer,sub=Server')!
    for (const name of [SERVER_CACHE_COUNTERS.hbase.hits, SERVER_CACHE_COUNTERS.hbase.misses])
      assert.equal(typeof bean[name], 'number', `${v}: ${name}`)
  }
})
