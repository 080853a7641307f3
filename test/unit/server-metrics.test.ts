/**
 * Server metrics beside a client: the sampling loop (first sample at once,
 * one a period, a last one on stop, failures said and survived), and
 * `benchstream ycsb --server-metrics hbase=URL` from the command line through
 * the HBase /jmx sampler (a real region server's answer, its counters moving)
 * and the loop to the server cache ratio the report computes.
 */
import assert from 'node:assert/strict'
import { readFileSync } from 'node:fs'
import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import { test } from 'node:test'
import { RECORD_KIND, type RunLifecycle, type ServerMetrics } from '../../schemas/events.v1.js'
import { HBaseJmxSampler, REGION_SERVER_BEAN } from '../../services/adapters/datastores/hbase-jmx.js'
import { parseServerMetrics, parseYcsbCommand } from '../../services/cli/ycsb-args.js'
import { repoRoot } from '../../services/common/repo-root.js'
import { isBenchstreamError } from '../../services/core/errors.js'
import { NullSink, type EventSink, type SinkStats } from '../../services/core/ports/event-sink.js'
import { serverCacheFigures } from '../../services/core/reports/server-cache.js'
import { sampleServers } from '../../services/driver/external-client.js'
import { startServerMetrics } from '../../services/driver/server-metrics.js'

/** Keeps the control records it is given. */
class RecordingSink implements EventSink {
  readonly records: ServerMetrics[] = []
  private readonly none = new NullSink()
  record(): void {}
  async sendRecord(r: RunLifecycle | ServerMetrics): Promise<void> {
    if (r.kind === RECORD_KIND.SERVER_METRICS) this.records.push(r)
  }
  closed = false
  async flush(): Promise<void> {}
  stats(): SinkStats {
    return this.none.stats()
  }
  async close(): Promise<void> {
    this.closed = true
  }
}

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms))

test('--server-metrics hbase=URL: the info server root or its /jmx, anything else refused with what is allowed', () => {
  assert.deepEqual(parseServerMetrics('hbase=http://127.0.0.1:16030'), {
    source: 'hbase',
    url: 'http://127.0.0.1:16030',
  })
  assert.deepEqual(parseServerMetrics('hbase=http://127.0.0.1:16030/jmx'), {
    source: 'hbase',
    url: 'http://127.0.0.1:16030',
  })
  assert.deepEqual(parseServerMetrics('hbase=http://h:1/jmx/?qry=x'), { source: 'hbase', url: 'http://h:1' })
  assert.deepEqual(parseServerMetrics('hbase=https://h:1/proxy/rs/'), { source: 'hbase', url: 'https://h:1/proxy/rs' })
  const usage =
    (re: RegExp) =>
    (e: unknown): boolean =>
      isBenchstreamError(e, 'BS_ERR_USAGE') && re.test(e.message)
  assert.throws(
    () => parseServerMetrics('redis=http://h:1'),
    usage(/--server-metrics "redis=http:\/\/h:1" is not allowed: expected hbase=URL \(a region server's info server/),
  )
  assert.throws(() => parseServerMetrics('http://h:1'), usage(/expected hbase=URL/))
  assert.throws(() => parseServerMetrics('hbase=127.0.0.1:16030'), usage(/is not a URL/))
  assert.throws(() => parseServerMetrics('hbase=ftp://h:1'), usage(/only http and https/))
  const cmd = parseYcsbCommand(['--server-metrics', 'hbase=http://127.0.0.1:16030/jmx', '--', 'run', '-db', 'hbase'])
  assert.deepEqual(cmd.serverMetrics, [{ source: 'hbase', url: 'http://127.0.0.1:16030' }])
  assert.deepEqual(parseYcsbCommand(['--', 'run']).serverMetrics, [])
})

test(
  'the loop samples at once, every period and once more on stop; ' + 'a failed sample is said and the loop goes on',
  async () => {
    const sink = new RecordingSink()
    let n = 0
    const errors: string[] = []
    const loop = startServerMetrics(
      async () => {
        n++
        if (n === 2) throw new Error('busy')
        return { source: 's', values: { hits: n } }
      },
      sink,
      { runId: 'r1', clientId: 'c1', intervalMs: 20, onError: (e) => errors.push(e.message) },
    )
    // Samples counted, not time slept: a busy machine fires a 20 ms timer late (seen: 2 records in 110 ms at load 40).
    for (const deadline = Date.now() + 30_000; n < 5 && Date.now() < deadline;) await sleep(5)
    const before = n
    await loop.stop()
    assert.equal(n, before + 1, 'one last sample on stop')
    await loop.stop()
    assert.equal(n, before + 1, 'stop is idempotent')
    await sleep(50)
    assert.equal(n, before + 1, 'no sample after stop')
    assert.deepEqual(errors, ['busy'])
    assert.ok(sink.records.length >= 4, `${sink.records.length} records`)
    assert.equal(sink.records.length, n - 1)
    assert.deepEqual(loop.counts(), { sent: n - 1, failed: 1 })
    for (const r of sink.records)
      assert.deepEqual([r.kind, r.runId, r.clientId, r.source], [RECORD_KIND.SERVER_METRICS, 'r1', 'c1', 's'])
    assert.equal(sink.records.at(-1)!.values.hits, n, 'the last sample is the one taken on stop')
  },
)

test('stop waits for a slow sample in flight', async () => {
  const sink = new RecordingSink()
  let calls = 0
  const loop = startServerMetrics(
    async () => {
      calls++
      await sleep(calls === 1 ? 80 : 1)
      return { source: 's', values: { v: calls } }
    },
    sink,
    { runId: 'r', clientId: 'c', intervalMs: 10_000, onError: () => undefined },
  )
  await loop.stop()
  assert.equal(sink.records.length, 2, 'the first (slow) sample and the last both sent before stop resolved')
})

test(
  'beside an external client (benchstream ycsb, pe): a server that cannot be read stops the command before the ' +
    'sink opens; begin() starts once, stop() sends the last samples and closes the sink; failures said 3 times at most',
  async () => {
    const ids = { runId: 'r', clientId: 'c' }
    let opened = 0
    const open = async (sink: RecordingSink): Promise<EventSink> => (opened++, sink)
    const refused = sampleServers(
      [{ source: 'hbase', url: 'http://h:1', sample: async () => Promise.reject(new Error('connect ECONNREFUSED')) }],
      () => open(new RecordingSink()),
      ids,
      () => undefined,
    )
    await assert.rejects(refused, (e: unknown) => {
      assert.ok(isBenchstreamError(e, 'BS_ERR_BINDING'))
      assert.equal(e.message, '--server-metrics hbase=http://h:1: connect ECONNREFUSED')
      return true
    })
    assert.equal(opened, 0, 'no sink opened for a run that does not start')

    // One server answers; three fail after the probe, at begin and on stop: 6 failures, 3 of them said.
    const sink = new RecordingSink()
    const said: string[] = []
    let calls = 0
    const servers = [
      { source: 'a', url: 'http://a:1', sample: async () => ({ source: 'a', values: { hits: ++calls } }) },
      ...['b', 'c', 'd'].map((name) => {
        let n = 0
        return {
          source: name,
          url: `http://${name}:1`,
          sample: async () => {
            if (n++ > 0) throw new Error(`${name} busy`)
            return { source: name, values: { hits: 0 } }
          },
        }
      }),
    ]
    const sampling = await sampleServers(
      servers,
      () => open(sink),
      ids,
      (s) => said.push(s),
    )
    assert.equal(opened, 1)
    assert.equal(calls, 1, 'each server read once before the client starts')
    sampling.begin()
    sampling.begin()
    await sampling.stop()
    assert.equal(calls, 3, 'a sample at begin and one on stop, begun once')
    assert.deepEqual(
      sink.records.map((r) => [r.runId, r.clientId, r.source, r.values.hits]),
      [
        ['r', 'c', 'a', 2],
        ['r', 'c', 'a', 3],
      ],
    )
    assert.ok(sink.closed)
    const warnings = said.filter((s) => s.includes('warning'))
    assert.equal(warnings.length, 3, said.join(''))
    assert.match(warnings[0]!, /^benchstream: warning: [bcd] server metrics sample failed: [bcd] busy\n$/)
    assert.ok(said.includes('benchstream: server metrics: 2 samples sent, 6 failed, 0 undelivered\n'), said.join(''))
    assert.ok(said.some((s) => s.startsWith('benchstream: sampling a at http://a:1, b at http://b:1')))
  },
)

test(
  'benchstream ycsb --server-metrics wiring: a region server /jmx answer whose counters move, ' +
    'through the sampler and the loop, gives the report its ratio',
  async (t) => {
    const body = JSON.parse(
      readFileSync(`${repoRoot()}/test/fixtures/hbase/jmx-regionserver-server-2.5.10-hadoop3.json`, 'utf8'),
    ) as { beans: Array<Record<string, unknown>> }
    const bean = body.beans.find((b) => b.name === REGION_SERVER_BEAN)!
    const hits0 = Number(bean.blockCacheHitCount)
    const misses0 = Number(bean.blockCacheMissCount)
    let served = 0
    const server = createServer((req, res) => {
      assert.equal(req.url, `/jmx?qry=${encodeURIComponent(REGION_SERVER_BEAN)}`)
      // Each answer: 90 more hits and 10 more misses, as a region server busy with a workload.
      bean.blockCacheHitCount = hits0 + 90 * served
      bean.blockCacheMissCount = misses0 + 10 * served
      served++
      res.setHeader('content-type', 'application/json')
      res.end(JSON.stringify(body))
    })
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r))
    t.after(() => server.close())
    const cmd = parseYcsbCommand([
      '--run-id',
      'hb',
      '--client-id',
      'c1',
      '--server-metrics',
      `hbase=http://127.0.0.1:${(server.address() as AddressInfo).port}/jmx`,
      '--',
      'run',
      '-db',
      'hbase',
    ])
    const jmx = new HBaseJmxSampler(cmd.serverMetrics[0]!.url)
    const sink = new RecordingSink()
    const loop = startServerMetrics(() => jmx.sample(), sink, {
      runId: cmd.runId,
      clientId: cmd.clientId,
      intervalMs: 30,
      onError: (e) => assert.fail(e.message),
    })
    await sleep(150)
    await loop.stop()
    assert.equal(sink.records.length, served)
    const samples = sink.records.flatMap((r) =>
      Object.entries(r.values).map(([name, value]) => ({
        clientId: r.clientId,
        source: r.source,
        name,
        atUs: r.atUs,
        value,
      })),
    )
    const [fig] = serverCacheFigures(samples)
    assert.deepEqual(fig, { source: 'hbase', hits: 90 * (served - 1), misses: 10 * (served - 1), ratio: 0.9 })
  },
)
