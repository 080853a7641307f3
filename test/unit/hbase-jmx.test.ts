/**
 * The HBase region server sampler against real /jmx answers of HBase 2.5.10
 * and 2.6.1 (test/fixtures/hbase), served over HTTP as the info server does.
 */
import assert from 'node:assert/strict'
import { readFileSync } from 'node:fs'
import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import { test } from 'node:test'
import {
  HBaseJmxSampler,
  parseRegionServerJmx,
  REGION_SERVER_BEAN,
} from '../../services/adapters/datastores/hbase-jmx.js'
import { repoRoot } from '../../services/common/repo-root.js'
import { isBenchstreamError } from '../../services/core/errors.js'

const fixture = (v: string): string =>
  readFileSync(`${repoRoot()}/test/fixtures/hbase/jmx-regionserver-server-${v}.json`, 'utf8')

test('real /jmx answers give the block cache counters the report reads', async (t) => {
  for (const v of ['2.5.10-hadoop3', '2.6.1-hadoop3']) {
    const body = fixture(v)
    const bean = (JSON.parse(body) as { beans: Array<Record<string, number>> }).beans.find(
      (b) => (b as unknown as { name: string }).name === REGION_SERVER_BEAN,
    )!
    let asked = ''
    const server = createServer((req, res) => {
      asked = req.url ?? ''
      res.setHeader('content-type', 'application/json')
      res.end(body)
    })
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r))
    t.after(() => server.close())
    const s = await new HBaseJmxSampler(`http://127.0.0.1:${(server.address() as AddressInfo).port}/`).sample()
    assert.equal(asked, `/jmx?qry=${encodeURIComponent(REGION_SERVER_BEAN)}`)
    assert.equal(s.source, 'hbase')
    assert.equal(s.values.blockCacheHitCount, bean.blockCacheHitCount, v)
    assert.equal(s.values.blockCacheMissCount, bean.blockCacheMissCount, v)
    assert.equal(s.values.totalRequestCount, bean.totalRequestCount, v)
  }
})

test('a port that is not a region server, or a dead one, is a clear BS_ERR_BINDING', async () => {
  assert.throws(
    () => parseRegionServerJmx({ beans: [{ name: 'java.lang:type=Memory' }] }, 'http://x/jmx'),
    (e: unknown) =>
      isBenchstreamError(e, 'BS_ERR_BINDING') &&
      /no Hadoop:service=HBase,name=RegionServer,sub=Server bean: is it a region server's info port/.test(e.message),
  )
  assert.throws(
    () => parseRegionServerJmx('<html>', 'http://x/jmx'),
    (e: unknown) => isBenchstreamError(e, 'BS_ERR_BINDING'),
  )
  await assert.rejects(
    new HBaseJmxSampler('http://127.0.0.1:1', 500).sample(),
    (e: unknown) =>
      isBenchstreamError(e, 'BS_ERR_BINDING') &&
      e.retryable &&
      /HBase metrics at http:\/\/127\.0\.0\.1:1\/jmx/.test(e.message),
  )
})
