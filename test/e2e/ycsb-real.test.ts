/**
 * Real YCSB 0.17.0 (site.ycsb:core from Maven Central, built into the class
 * path by deploy/local/ycsb.sh with the bridge and our Redis binding) against
 * a private redis-server, into a running server through real Kafka:
 *
 * - `benchstream ycsb -- run -db redis ...`: Benchstream's operation counts
 *   per operation and status equal YCSB's report exactly; p95/p99 within
 *   Benchstream's histogram resolution of what YCSB printed; the same
 *   through `--ycsb-home` (an installation's layout and binding names);
 * - two concurrent YCSB clients of one run: the merged p95/p99 lie between
 *   the clients' own and within 1% of an exact merge of their HdrHistograms
 *   (YCSB's own interval logs, summed index by index at HdrHistogram's
 *   resolution);
 * - `import-ycsb --follow` on a live YCSB run (no bridge, only
 *   hdrhistogram.fileoutput): exact counts, intended counts too.
 *
 * Needs Java 17+, Maven (first build) and redis-server. About a minute.
 */
import assert from 'node:assert/strict'
import { spawn } from 'node:child_process'
import { mkdirSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs'
import path from 'node:path'
import { test } from 'node:test'
import type { Report } from '../../schemas/run-reports-api.v1.js'
import { queryRows, type ClickHouse } from '../../services/adapters/clickhouse/client.js'
import { importYcsbMain } from '../../services/cli/import-ycsb.js'
import { runYcsb } from '../../services/cli/ycsb.js'
import { repoRoot } from '../../services/common/repo-root.js'
import { hdrBucketRange, hdrLayout, decodeHistogramBase64 } from '../../services/core/ycsb/hdr-log.js'
import { parseYcsbFile } from '../../services/core/ycsb/import.js'
import type { SummaryReport } from '../../services/core/ycsb/report-types.js'
import { quantileRank } from '../../services/core/stats/histogram.js'
import { startServer } from '../../services/server/main.js'
import { startRedis } from '../helpers/servers.js'
import { testEnv, waitFor } from '../helpers/env.js'

const printed = (r: SummaryReport, name: string, q: number): number =>
  r.measurements.find((m) => m.name.name === name)!.percentiles.find((p) => p.percentile === q)!.valueUs
const ops = (r: SummaryReport, name: string): number =>
  r.measurements.find((m) => m.name.name === name)?.operations ?? 0
const returns = (r: SummaryReport): Record<string, number> => {
  const out: Record<string, number> = {}
  for (const m of r.measurements) {
    if (m.name.kind !== 'operation' || m.name.latency !== 'measured' || m.name.ycsbStatus !== undefined) continue
    for (const [s, n] of Object.entries(m.returns)) out[`${m.name.op}/${s}`] = n
  }
  return out
}
const ourReturns = (r: Report): Record<string, number> => {
  const out: Record<string, number> = {}
  for (const m of r.measurements)
    if (!m.name.startsWith('Intended-') && !m.name.endsWith('-FAILED'))
      for (const [s, n] of Object.entries(m.returns)) out[`${m.name}/${s}`] = n
  return out
}
/** Benchstream's resolution: a bucket is at most 1/128 of its value wide, exact below 256 µs. */
const withinResolution = (ours: number, theirs: number): boolean =>
  Math.abs(ours - theirs) <= Math.max(0.008 * theirs + 1, 2)

/**
 * Exact merge at HdrHistogram's resolution of interval logs (any clients): the value HdrHistogram 2.1.4 reports at q.
 */
function exactHdrPercentile(files: readonly string[], q: number): number {
  const counts = new Map<number, number>()
  let sd = 3
  for (const f of files) {
    for (const line of readFileSync(f, 'utf8').split('\n')) {
      const fields = line.trim().split(',')
      if (line.startsWith('#') || line.startsWith('"') || fields.length !== 4) continue
      const h = decodeHistogramBase64(fields[3]!)
      sd = h.significantDigits
      for (const [i, c] of h.counts) counts.set(i, (counts.get(i) ?? 0) + c)
    }
  }
  const entries = [...counts].sort((a, b) => a[0] - b[0])
  const n = entries.reduce((a, [, c]) => a + c, 0)
  const rank = quantileRank(q, n)
  let seen = 0
  const layout = hdrLayout(sd, 1)
  for (const [i, c] of entries) {
    seen += c
    if (seen >= rank) {
      const { low, width } = hdrBucketRange(layout, i)
      return low + width - 1
    }
  }
  throw new Error('empty')
}

/** Exact percentile (HdrHistogram 2.1.4's rank, bs_rank) over the raw events of a run (one client or all). */
async function exactPercentile(
  ch: ClickHouse,
  runId: string,
  client: string | undefined,
  op: string,
  q: number,
): Promise<number> {
  const [r] = await queryRows<{ v: number }>(
    ch,
    `SELECT arraySort(groupArray(latency_us)) AS s, s[bs_rank({q:Float64}, length(s))] AS v FROM ` +
      (`benchstream.ops WHERE run_id = {r:String} AND op = {op:String} ` +
        `AND status = 'OK' ${client === undefined ? '' : 'AND client_id = {c:String}'}`),
    { r: runId, op, q, c: client ?? '' },
  )
  return Number(r!.v)
}

/** Fractions of a run's events of op below and at most v: where v lies in Benchstream's distribution. */
async function rankSpan(ch: ClickHouse, runId: string, op: string, v: number): Promise<[number, number]> {
  const [r] = await queryRows<{ below: number; at_most: number }>(
    ch,
    `SELECT countIf(latency_us < {v:UInt32}) / count() AS below, countIf(latency_us <= {v:UInt32}) ` +
      `/ count() AS at_most FROM benchstream.ops WHERE run_id = {r:String} AND op = {op:String} AND status = 'OK'`,
    { r: runId, op, v },
  )
  return [Number(r!.below), Number(r!.at_most)]
}

/** A jar file name: one of `names` (each a regular expression), then `.jar`. */
function jarNamed(names: readonly RegExp[]): RegExp {
  return new RegExp(`^(?:${names.map((n) => n.source).join('|')})\\.jar$`)
}

/** deploy/local/ycsb.sh's class path (YCSB core 0.17.0, the bridge, our Redis binding). */
function classpath(): Promise<string> {
  return new Promise<string>((resolve, reject) => {
    const c = spawn('bash', [path.join(repoRoot(), 'deploy/local/ycsb.sh'), 'classpath'], {
      stdio: ['ignore', 'pipe', 'inherit'],
    })
    let s = ''
    c.stdout.on('data', (d: Buffer) => (s += d.toString()))
    c.on('close', (code) => (code === 0 ? resolve(s.trim()) : reject(new Error(`ycsb.sh classpath: ${code}`))))
  })
}

test(
  'real YCSB 0.17.0 through benchstream ycsb, two concurrent clients, and import-ycsb --follow ' +
    'against a private Redis',
  async (t) => {
    const te = testEnv({ ALERTS_ENABLED: 'false' })
    t.after(te.cleanup)
    const redis = await startRedis()
    t.after(() => redis.stop())
    const svc = await startServer(te.env, { api: true })
    t.after(() => svc.stop())
    const redisArgs = ['-db', 'redis', '-p', 'redis.host=127.0.0.1', '-p', `redis.port=${redis.port}`]
    const common = ['-P', 'workloads/workloada', '-p', 'recordcount=1000']
    const quiet = (): void => undefined
    const runId = `ycsb-real-${Date.now()}`
    const t0 = Date.now()

    // Load, then a run through the bridge with -s status lines.
    const load = await runYcsb(
      [
        '--run-id',
        `${runId}-load`,
        '--client-id',
        'loader',
        '--report-wait',
        '60',
        '--',
        'load',
        ...redisArgs,
        ...common,
        '-threads',
        '4',
      ],
      te.env,
      quiet,
      quiet,
    )
    assert.equal(load.exitCode, 0)
    assert.deepEqual(ourReturns(load.merged!), returns(parseYcsbFile('load', load.ycsbStdout) as SummaryReport))

    let statusLines = 0
    const run = await runYcsb(
      [
        '--run-id',
        runId,
        '--client-id',
        'c1',
        '--label',
        'test=ycsb-real',
        '--',
        'run',
        ...redisArgs,
        ...common,
        '-p',
        'operationcount=6000',
        '-threads',
        '2',
        '-s',
        '-p',
        'status.interval=1',
      ],
      te.env,
      quiet,
      (s) => {
        statusLines += s.split('\n').filter((l) => / sec: \d+ operations;/.test(l)).length
      },
    )
    assert.equal(run.exitCode, 0)
    assert.ok(statusLines >= 1, 'YCSB -s status lines passed through')
    const ycsb = parseYcsbFile('run', run.ycsbStdout) as SummaryReport
    assert.equal(ycsb.operations, 6000)
    assert.deepEqual(
      ourReturns(run.merged!),
      returns(ycsb),
      "counts per operation and status equal YCSB's report exactly",
    )
    for (const op of ['READ', 'UPDATE']) {
      const m = run.merged!.measurements.find((x) => x.name === op)!
      for (const [q, ours] of [
        [95, m.p95LatencyUs],
        [99, m.p99LatencyUs],
      ] as const) {
        const theirs = printed(ycsb, op, q)
        // Benchstream's percentile from merged windows equals the exact one over the bridge's own events, within its
        // resolution.
        const exact = await exactPercentile(svc.ch, runId, undefined, op, q / 100)
        assert.ok(withinResolution(ours, exact), `${op} p${q}: windows ${ours} µs, exact over the events ${exact} µs`)
        // The bridge times the wrapped call, YCSB's DBWrapper the call into the bridge: YCSB's time of every
        // operation holds the bridge's, plus the bridge's own work and any preemption inside it. So YCSB's printed
        // value lies at or above q in Benchstream's distribution (0.5 percentage points for the two histograms'
        // rank rules); how far above depends on how busy the machine is, and is printed, not held.
        const [below, atMost] = await rankSpan(svc.ch, runId, op, theirs)
        t.diagnostic(
          `${op} p${q}: YCSB printed ${theirs} µs, Benchstream ${ours} µs ` +
            `(${(((ours - theirs) / theirs) * 100).toFixed(2)}%), ` +
            (`exact over the events ${exact} µs; YCSB's value sits at Benchstream's ` +
              `p${(below * 100).toFixed(2)}..p${(atMost * 100).toFixed(2)}`),
        )
        assert.ok(
          atMost >= q / 100 - 0.005,
          `${op} p${q}: YCSB's ${theirs} µs lies at ` +
            `Benchstream's p${(below * 100).toFixed(2)}..p${(atMost * 100).toFixed(2)}`,
        )
      }
    }
    t.diagnostic(`load + run through the bridge: ${((Date.now() - t0) / 1000).toFixed(1)} s`)

    // --ycsb-home: a YCSB installation's layout (lib/, <name>-binding/lib, bin/bindings.properties), made of the
    // same Maven Central jars; YCSB core then comes only from its lib/ (ours leaves core out), the binding by its name.
    const home = path.join(te.dataDir, 'ycsb-home')
    const jars = (await classpath()).split(':')
    const coreJar = jarNamed([
      /core-0\.17\.0/,
      /HdrHistogram-[\w.-]+/,
      /jackson-(?:core|mapper)-asl-[\w.-]+/,
      /htrace-core4-[\w.-]+/,
      /jaxb-api-[\w.-]+/,
      /javax\.activation-api-[\w.-]+/,
    ])
    const bindingJar = jarNamed([
      /ycsb-redis-[\w.-]+/,
      /jedis-[\w.-]+/,
      /commons-pool2-[\w.-]+/,
      /gson-[\w.-]+/,
      /json-[\w.-]+/,
    ])
    for (const [dir, re] of [
      ['lib', coreJar],
      ['myredis-binding/lib', bindingJar],
    ] as const) {
      mkdirSync(path.join(home, dir), { recursive: true })
      for (const j of jars.filter((x) => re.test(path.basename(x))))
        symlinkSync(j, path.join(home, dir, path.basename(j)))
    }
    mkdirSync(path.join(home, 'bin'))
    writeFileSync(
      path.join(home, 'bin', 'bindings.properties'),
      '# name:class, as YCSB ships it\nmyredis:io.benchstream.ycsb.redis.RedisClient\n',
    )
    const viaHome = await runYcsb(
      [
        '--ycsb-home',
        home,
        '--run-id',
        `${runId}-home`,
        '--client-id',
        'h1',
        '--',
        'run',
        ...redisArgs.map((a) => (a === 'redis' ? 'myredis' : a)),
        ...common,
        '-p',
        'operationcount=1500',
        '-threads',
        '2',
      ],
      te.env,
      quiet,
      quiet,
    )
    assert.equal(viaHome.exitCode, 0)
    assert.deepEqual(ourReturns(viaHome.merged!), returns(parseYcsbFile('home', viaHome.ycsbStdout) as SummaryReport))

    // Two concurrent clients of one run, each also writing YCSB's own interval logs.
    const logs = path.join(te.dataDir, 'two')
    mkdirSync(logs)
    const twoId = `${runId}-two`
    const client = (c: string, threads: number, target: number): ReturnType<typeof runYcsb> =>
      runYcsb(
        [
          '--run-id',
          twoId,
          '--client-id',
          c,
          '--report-wait',
          '90',
          '--',
          'run',
          ...redisArgs,
          ...common,
          '-p',
          'operationcount=4000',
          '-threads',
          String(threads),
          '-target',
          String(target),
          '-p',
          'hdrhistogram.fileoutput=true',
          '-p',
          `hdrhistogram.output.path=${logs}/${c}-`,
        ],
        te.env,
        quiet,
        quiet,
      )
    // Different threads and targets, so the clients' latencies differ.
    const [a, b] = await Promise.all([client('a', 1, 1500), client('b', 8, 0)])
    assert.equal(a.exitCode, 0)
    assert.equal(b.exitCode, 0)
    const ra = parseYcsbFile('a', a.ycsbStdout) as SummaryReport
    const rb = parseYcsbFile('b', b.ycsbStdout) as SummaryReport
    const merged = await waitFor(
      'both clients counted',
      async () => {
        const res = await svc.api!.inject({ method: 'GET', url: `/api/v1/runs/${twoId}/report` })
        const r = res.json<Report & { completeness: { counted: number } }>()
        return res.statusCode === 200 && r.completeness.counted === 8000 ? r : undefined
      },
      90_000,
    )
    assert.deepEqual(
      ourReturns(merged),
      Object.fromEntries(Object.entries(returns(ra)).map(([k, v]) => [k, v + (returns(rb)[k] ?? 0)])),
    )
    for (const op of ['READ', 'UPDATE']) {
      const m = merged.measurements.find((x) => x.name === op)!
      for (const [q, ours] of [
        [95, m.p95LatencyUs],
        [99, m.p99LatencyUs],
      ] as const) {
        // The clients' own histograms: each client's events (exact), merged exactly as HdrHistogram would (the bridge's
        // latencies), and YCSB's own interval logs of both clients merged index by index (YCSB's latencies).
        const own = [
          await exactPercentile(svc.ch, twoId, 'a', op, q / 100),
          await exactPercentile(svc.ch, twoId, 'b', op, q / 100),
        ]
        const exact = await exactPercentile(svc.ch, twoId, undefined, op, q / 100)
        const hdr = exactHdrPercentile([`${logs}/a-${op}.hdr`, `${logs}/b-${op}.hdr`], q / 100)
        const [below, atMost] = await rankSpan(svc.ch, twoId, op, hdr)
        t.diagnostic(
          `two clients, ${op} p${q}: merged ${ours} µs; exact merge of both clients' events ${exact} µs ` +
            `(${(((ours - exact) / exact) * 100).toFixed(2)}%); clients' own ${own.join(' / ')} µs (YCSB ` +
            `printed ${printed(ra, op, q)} / ${printed(rb, op, q)}); YCSB's logs merged ${hdr} µs, at Benchstream's ` +
            `p${(below * 100).toFixed(2)}..p${(atMost * 100).toFixed(2)}`,
        )
        assert.ok(Math.abs(ours - exact) <= 0.01 * exact, `${op} p${q}: merged ${ours} vs exact merge ${exact}`)
        assert.ok(
          ours >= Math.min(...own) - 1 && ours <= Math.max(...own) * 1.008 + 1,
          `${op} p${q}: merged ${ours} outside the clients' ${own.join('..')}`,
        )
        assert.ok(
          atMost >= q / 100 - 0.005,
          `${op} p${q}: YCSB's merged ${hdr} µs lies ` +
            `at Benchstream's p${(below * 100).toFixed(2)}..p${(atMost * 100).toFixed(2)}`,
        )
      }
    }

    // --follow on a live YCSB run without the bridge: only its interval logs, Intended- ones too.
    const followDir = path.join(te.dataDir, 'follow')
    mkdirSync(followDir)
    const followId = `${runId}-follow`
    const cp = await classpath()
    const ycsbProc = spawn(
      'java',
      [
        '-Xmx512m',
        '-cp',
        cp,
        'site.ycsb.Client',
        '-t',
        '-db',
        'io.benchstream.ycsb.redis.RedisClient',
        '-p',
        'redis.host=127.0.0.1',
        '-p',
        `redis.port=${redis.port}`,
        ...common,
        '-p',
        'operationcount=4000',
        '-threads',
        '2',
        // 8 s: time for intervals to be counted while it runs.
        '-target',
        '500',
        '-s',
        '-p',
        'status.interval=1',
        '-p',
        'measurement.interval=both',
        '-p',
        'hdrhistogram.fileoutput=true',
        '-p',
        `hdrhistogram.output.path=${followDir}/ycsb-`,
      ],
      { cwd: repoRoot(), stdio: ['ignore', 'pipe', 'ignore'] },
    )
    let followStdout = ''
    ycsbProc.stdout.on('data', (d: Buffer) => (followStdout += d.toString()))
    const exited = new Promise<number | null>((resolve) => ycsbProc.on('close', resolve))
    // Interval records must reach ClickHouse while YCSB runs, not only at the end: a part of the run counted by a
    // query made before YCSB printed its final report. (Not "before the process exited": a JVM on a busy machine
    // can take seconds to exit after its run, and everything is rightly counted by then.)
    let liveCount = 0
    const probe = setInterval(() => {
      if (followStdout.includes('[OVERALL]')) return
      void queryRows<{ n: string }>(
        svc.ch,
        `SELECT sum(count) AS n FROM benchstream.op_windows WHERE run_id = {r:String}`,
        { r: followId },
      ).then(
        (r) => {
          const n = Number(r[0]?.n ?? 0)
          if (n < 4000) liveCount = Math.max(liveCount, n)
        },
        () => undefined,
      )
    }, 500)
    const out: string[] = []
    const code = await importYcsbMain(
      [
        '--follow',
        '--run-id',
        followId,
        '--client-id',
        'f1',
        '--pid',
        String(ycsbProc.pid),
        '--idle-timeout',
        '120',
        `${followDir}/ycsb-`,
      ],
      te.env,
      (s) => out.push(s),
    )
    clearInterval(probe)
    assert.equal(code, 0)
    assert.equal(await exited, 0)
    assert.match(out.join(''), /process \d+ exited/)
    const fr = parseYcsbFile('follow', followStdout) as SummaryReport
    const expected = { READ: ops(fr, 'READ'), UPDATE: ops(fr, 'UPDATE') }
    assert.equal(expected.READ + expected.UPDATE, 4000)
    const rows = await waitFor('the followed run stored', async () => {
      const r = await queryRows<{ op: string; n: string; intended: string }>(
        svc.ch,
        `SELECT op, sum(count) AS n, sum(arraySum(mapValues(intended_hist))) AS intended FROM benchstream.op_windows ` +
          `WHERE run_id = {r:String} GROUP BY op ORDER BY op`,
        { r: followId },
      )
      return r.reduce((a, x) => a + Number(x.n), 0) === 4000 ? r : undefined
    })
    assert.deepEqual(
      rows.map((r) => [r.op, Number(r.n), Number(r.intended)]),
      [
        ['READ', expected.READ, ops(fr, 'Intended-READ')],
        ['UPDATE', expected.UPDATE, ops(fr, 'Intended-UPDATE')],
      ],
    )
    assert.ok(
      liveCount > 0 && liveCount < 4000,
      `intervals arrived while YCSB ran (seen ${liveCount} of 4000 before its final report)`,
    )
    t.diagnostic(
      `--follow: ${liveCount} of 4000 operations visible in ClickHouse ` +
        `while YCSB ran; total ${((Date.now() - t0) / 1000).toFixed(1)} s`,
    )
  },
)
