/**
 * The HBase flagship in one minute: a real HBase 2 (deploy/local/hbase.sh,
 * free ports, a temporary data directory), real YCSB 0.17.0 with our HBase
 * binding behind the bridge (`benchstream ycsb -db hbase`), 10 s of workload
 * A, the region server's block cache sampled from its /jmx every second
 * (`--server-metrics hbase=URL`) into server_metrics, through real Kafka into
 * a running server:
 *
 * - counts per operation and status equal YCSB's own report exactly, in the
 *   load and in the run;
 * - the report's server cache ratio for hbase is there and is the ratio of
 *   the stored samples' counter growth;
 * - HBase is stopped (and its directory removed) whatever happens.
 *
 * Needs Java 17+ and Maven (first run: HBase's jars and the binding). About
 * 60-90 s on two cores, most of it HBase's start and the JVMs'.
 */
import assert from 'node:assert/strict'
import { test } from 'node:test'
import { queryRows } from '../../services/adapters/clickhouse/client.js'
import { runYcsb } from '../../services/cli/ycsb.js'
import { parseYcsbFile } from '../../services/core/ycsb/import.js'
import type { SummaryReport } from '../../services/core/ycsb/report-types.js'
import { startServer } from '../../services/server/main.js'
import { testEnv } from '../helpers/env.js'
import { startHBase } from '../helpers/hbase.js'
import { ourReturns, ycsbReturns } from '../helpers/ycsb-counts.js'

// Bounded: a hang (once seen on CI, in the after hooks after a failure) fails here with its output instead of holding
// the whole run.
test(
  'HBase smoke: 10 s of workload A through benchstream ycsb against a real HBase, counts exact ' +
    'against YCSB, block cache ratio from /jmx',
  { timeout: 300_000 },
  async (t) => {
    const t0 = Date.now()
    const hb = await startHBase()
    t.after(() => hb.stop())
    t.diagnostic(`HBase ${hb.version} up in ${((Date.now() - t0) / 1000).toFixed(1)} s`)
    const te = testEnv({ ALERTS_ENABLED: 'false' })
    const svc = await startServer(te.env, { api: true })
    t.after(async () => {
      await svc.stop()
      te.cleanup()
    })
    const quiet = (): void => undefined
    const runId = `hbase-smoke-${Date.now()}`
    const common = ['-db', 'hbase', ...hb.ycsbProperties, '-P', 'workloads/workloada', '-p', 'recordcount=1000']

    const load = await runYcsb(
      ['--run-id', `${runId}-load`, '--client-id', 'loader', '--', 'load', ...common, '-threads', '4'],
      te.env,
      quiet,
      quiet,
    )
    assert.equal(load.exitCode, 0)
    assert.deepEqual(ourReturns(load.merged!), ycsbReturns(parseYcsbFile('load', load.ycsbStdout) as SummaryReport))
    assert.equal(load.merged!.measurements.find((m) => m.name === 'INSERT')?.operations, 1000)
    // Reads of what is only in the memstore never touch the block cache.
    await hb.flush()

    const t1 = Date.now()
    const run = await runYcsb(
      [
        '--run-id',
        runId,
        '--client-id',
        'c1',
        '--label',
        'system=hbase',
        '--server-metrics',
        `hbase=${hb.infoUrl}/jmx`,
        '--',
        'run',
        ...common,
        '-p',
        'operationcount=100000000',
        '-p',
        'maxexecutiontime=10',
        '-threads',
        '4',
      ],
      te.env,
      quiet,
      quiet,
    )
    assert.equal(run.exitCode, 0)
    const ycsb = parseYcsbFile('run', run.ycsbStdout) as SummaryReport
    const theirs = ycsbReturns(ycsb)
    assert.ok((theirs['READ/OK'] ?? 0) > 0 && (theirs['UPDATE/OK'] ?? 0) > 0, JSON.stringify(theirs))
    assert.deepEqual(ourReturns(run.merged!), theirs, "counts per operation and status equal YCSB's report exactly")

    const samples = await queryRows<{ n: string; hits: string; misses: string }>(
      svc.ch,
      `SELECT count() AS n,
            max(value) FILTER (WHERE name = 'blockCacheHitCount')
              - min(value) FILTER (WHERE name = 'blockCacheHitCount') AS hits,
            max(value) FILTER (WHERE name = 'blockCacheMissCount')
              - min(value) FILTER (WHERE name = 'blockCacheMissCount') AS misses
       FROM benchstream.server_metrics
       WHERE run_id = {r:String} AND source = 'hbase' AND name IN ('blockCacheHitCount', 'blockCacheMissCount')`,
      { r: runId },
    )
    const n = Number(samples[0]!.n) / 2
    assert.ok(n >= 8, `${n} samples of the region server in a 10 s run (one a second)`)
    const cache = run.merged!.serverCache.find((c) => c.source === 'hbase')
    assert.ok(
      cache !== undefined && cache.ratio !== null,
      `server cache ratio for hbase in the report: ${JSON.stringify(run.merged!.serverCache)}`,
    )
    assert.ok(cache.hits > 0, 'reads of flushed rows hit the block cache')
    // The report's figure is the counters' growth over the samples stored when it was read (the last sample may come
    // later).
    assert.ok(
      cache.hits <= Number(samples[0]!.hits) && cache.misses <= Number(samples[0]!.misses),
      `${JSON.stringify(cache)} within the stored samples' growth ${JSON.stringify(samples[0])}`,
    )
    t.diagnostic(
      `run: ${JSON.stringify(theirs)} in ${ycsb.runtimeMs} ms (${(ycsb.throughputOpsPerSec ?? 0).toFixed(0)} ` +
        `ops/s), block cache hit ratio ${(cache.ratio * 100).toFixed(2)}% (${cache.hits} hits, ${cache.misses} ` +
        (`misses; ${n} samples); run ${((Date.now() - t1) / 1000).toFixed(1)} ` +
          `s, total ${((Date.now() - t0) / 1000).toFixed(1)} s`),
    )
  },
)
