/**
 * `benchstream demo --system hbase` (`npm run demo:hbase`): the flagship
 * scenario on one machine. A real HBase 2 (deploy/local/hbase.sh), real YCSB
 * 0.17.0 with Benchstream's HBase binding behind the bridge
 * (`benchstream ycsb`), workload A for --seconds with the region server's
 * block cache sampled from its /jmx every second, a CPU profile of the
 * HBase JVM taken with async-profiler during the run and attached to it.
 * Prints a live line a second read back from ClickHouse, then YCSB's report
 * beside Benchstream's, the server cache-hit ratio, and where the flame
 * graph is.
 */
import { spawn } from 'node:child_process'
import { mkdirSync, writeFileSync } from 'node:fs'
import path from 'node:path'
import {
  startLocalHBase,
  flushLocalHBase,
  stopLocalHBase,
  type LocalHBase,
  type LocalHBaseOptions,
} from '../adapters/datastores/local-hbase.js'
import { repoRoot } from '../common/repo-root.js'
import type { ReadModel } from '../core/ports/read-model.js'
import { evaluateThresholds, formatThresholdResults, type Threshold } from '../core/reports/thresholds.js'
import type { Server } from '../server/main.js'
import { runYcsb } from './ycsb.js'

export interface HBaseDemoOptions {
  seconds: number
  target: number
  threads: number
  workload: string
  records: number
  thresholds: Threshold[]
}

/**
 * Longest wait for YCSB's first stored operation before the profile starts anyway (a JVM start, ZooKeeper, meta:
 * seconds).
 */
const PROFILE_WAIT_MS = 60_000

/**
 * HBase as hbase.sh's own variables place it (HBASE_ZK_PORT, ..., HBASE_VERSION), so a demo finds the HBase a user
 * started.
 */
export function demoHBaseOptions(env: NodeJS.ProcessEnv, log: (l: string) => void): LocalHBaseOptions {
  const port = (name: string, dflt: number): number => {
    const v = env[name]
    return v === undefined || v === '' ? dflt : Number(v)
  }
  return {
    ports: {
      zk: port('HBASE_ZK_PORT', 2181),
      master: port('HBASE_MASTER_PORT', 16000),
      regionServer: port('HBASE_RS_PORT', 16020),
      regionServerInfo: port('HBASE_RS_INFO_PORT', 16030),
    },
    ...(env.HBASE_DATA_DIR === undefined || env.HBASE_DATA_DIR === '' ? {} : { dataDir: env.HBASE_DATA_DIR }),
    ...(env.HBASE_VERSION === undefined || env.HBASE_VERSION === '' ? {} : { version: env.HBASE_VERSION }),
    log,
  }
}

export interface DemoHBase {
  hb: LocalHBase
  /** Stops HBase if this demo started it (one that was running before is left running). */
  stop(): Promise<void>
}

export async function startDemoHBase(o: LocalHBaseOptions, say: (s: string) => void): Promise<DemoHBase> {
  let before = false
  say(
    `[demo] starting HBase ${o.version ?? '(hbase.sh default)'} on 127.0.0.1:${o.ports.zk} (deploy/local/hbase.sh; ` +
      `first run downloads its jars with mvn)`,
  )
  const hb = await startLocalHBase({
    ...o,
    log: (l) => {
      if (/already running/.test(l)) before = true
      o.log?.(l)
    },
  })
  return {
    hb,
    stop: async () =>
      before ? say('[demo] leaving HBase running (it was running before the demo)') : stopLocalHBase(o),
  }
}

export async function runHBaseDemo(
  opts: HBaseDemoOptions,
  env: NodeJS.ProcessEnv,
  svc: Server,
  hbOpts: LocalHBaseOptions,
  hb: LocalHBase,
  say: (s: string) => void,
  /** Called when the run is over and the reports begin: the server's warnings stop reaching the screen. */
  reporting: () => void = () => undefined,
): Promise<{ code: number; thresholdsFailed: boolean }> {
  const rm = svc.readModel
  const apiUrl = svc.apiUrl!
  const runEnv: NodeJS.ProcessEnv = { ...env, BENCHSTREAM_API_URL: apiUrl }
  const stamp = new Date().toISOString().replace(/[-:]/g, '').slice(0, 15)
  const runId = `demo-hbase-${stamp}-${Math.random().toString(36).slice(2, 6)}`
  const ycsbNotes: string[] = []
  const keepErr = (s: string): void => {
    ycsbNotes.push(s)
    if (ycsbNotes.length > 400) ycsbNotes.splice(0, 200)
  }
  const common = [
    '-db',
    'hbase',
    ...hb.ycsbProperties,
    '-P',
    path.join(repoRoot(), opts.workload),
    '-p',
    `recordcount=${opts.records}`,
  ]

  say(
    `[demo] loading ${opts.records} records into usertable with YCSB (run ${runId}-load), then flushing ` +
      `them to HFiles so reads go through the block cache`,
  )
  const load = await runYcsb(
    [
      '--run-id',
      `${runId}-load`,
      '--client-id',
      'demo-loader',
      '--label',
      'system=hbase',
      '--label',
      'source=demo',
      '--',
      'load',
      ...common,
      '-threads',
      String(opts.threads),
    ],
    runEnv,
    () => undefined,
    keepErr,
  )
  if (load.exitCode !== 0) {
    process.stderr.write(ycsbNotes.join(''))
    throw new Error(`the YCSB load phase exited with code ${load.exitCode}`)
  }
  await flushLocalHBase(hbOpts)

  say(
    `[demo] run ${runId}: ${path.basename(opts.workload)} for ${opts.seconds}s, YCSB with ${opts.threads} ` +
      `threads, target ${opts.target || 'unthrottled'} ops/s; region server block cache from ${hb.infoUrl}/jmx; ` +
      `CPU profile of HBase pid ${hb.pid}`,
  )
  const started = Date.now()
  const ticker = setInterval(() => void status(rm, runId, started).then(say, () => undefined), 1000)
  // The profile covers the run, not YCSB's JVM start: it begins with the first operations stored.
  const profile = firstOperations(rm, runId, PROFILE_WAIT_MS).then(() =>
    captureProfile(hb.pid, runId, Math.max(1, opts.seconds - 2), runEnv),
  )
  let ycsbHeader = false
  let run
  try {
    run = await runYcsb(
      [
        '--run-id',
        runId,
        '--client-id',
        'demo-ycsb-1',
        '--label',
        'system=hbase',
        '--label',
        'source=demo',
        '--server-metrics',
        `hbase=${hb.infoUrl}`,
        '--report-wait',
        '120',
        '--',
        'run',
        ...common,
        '-p',
        'operationcount=2000000000',
        '-p',
        `maxexecutiontime=${opts.seconds}`,
        '-threads',
        String(opts.threads),
        '-target',
        String(opts.target),
      ],
      runEnv,
      (s) => {
        if (!ycsbHeader) process.stdout.write(`\n# YCSB's own report of run ${runId} (its stdout):\n`)
        ycsbHeader = true
        process.stdout.write(s)
      },
      (s) => {
        keepErr(s)
        // The command's own lines (which run, where events go, what it waits for) are for the user; the JVM's log is
        // not.
        for (const l of s.split('\n'))
          if (l.startsWith('benchstream: ')) say(`[ycsb] ${l.replace(/^benchstream: /, '')}`)
      },
    )
  } finally {
    clearInterval(ticker)
  }
  reporting()
  const profiled = await profile.catch((e: unknown) => `no profile: ${(e as Error).message}`)
  if (run.exitCode !== 0 || run.merged === undefined) {
    process.stderr.write(ycsbNotes.join('').slice(-8000))
    return { code: run.exitCode === 0 ? 1 : run.exitCode, thresholdsFailed: false }
  }
  const r = run.merged
  say('\n===== HBase =====')
  for (const c of r.serverCache)
    say(
      `  region server block cache hit ratio over ` +
        `the run: ${c.ratio === null ? 'n/a' : `${(c.ratio * 100).toFixed(2)}%`} ` +
        `(${c.hits} hits, ${c.misses} misses; sampled every second from ${hb.infoUrl}/jmx)`,
    )
  if (r.serverCache.length === 0) say('  no block cache samples were stored (see the [ycsb] lines above)')
  say(`  ${profiled}`)
  // The flame graph as a file: the page needs a running server, the SVG does not.
  let svgFile: string | undefined
  const svg = await fetch(`${apiUrl}/api/v1/profiles/flamegraph?run=${encodeURIComponent(runId)}&format=svg`, {
    signal: AbortSignal.timeout(30_000),
  }).catch(() => undefined)
  if (svg?.ok === true) {
    const dir = path.resolve(env.BENCHSTREAM_DATA_DIR ?? path.join(repoRoot(), '.benchstream'), 'flamegraphs')
    mkdirSync(dir, { recursive: true })
    svgFile = path.join(dir, `${runId}-hbase.svg`)
    writeFileSync(svgFile, Buffer.from(await svg.arrayBuffer()))
  }
  const verdicts = evaluateThresholds(r, opts.thresholds)
  process.stderr.write(formatThresholdResults(verdicts, `run ${runId}, merged`))
  say(`\n===== Run ${runId} =====`)
  say(`  ${r.completeness.counted} operations stored in ClickHouse; YCSB's counts and Benchstream's compared above.`)
  if (svgFile !== undefined) say(`  Flame graph of the HBase JVM during the run: ${svgFile}`)
  say('  After the demo (no other process may hold the embedded data directory):')
  say(`    npx benchstream report ${runId}`)
  const api = `http://127.0.0.1:${env.API_PORT ?? '8080'}`
  say(`    npx benchstream server   # then open ${api}/profiles?run=${runId} (flame graph) and ${api}/ (live view)`)
  say(
    `    npx benchstream sql "SELECT at, name, value FROM benchstream.server_metrics WHERE run_id ` +
      `= '${runId}' AND name LIKE 'blockCache%Count' ORDER BY at"`,
  )
  return { code: 0, thresholdsFailed: verdicts.some((v) => !v.passed) }
}

/** Resolves when the run has operations in ClickHouse, or after timeoutMs. */
async function firstOperations(rm: ReadModel, runId: string, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs
  while (Date.now() < deadline) {
    if ((await rm.runCounts(runId).catch(() => ({ total: 0 }))).total > 0) return
    await new Promise((r) => setTimeout(r, 250))
  }
}

/** `benchstream profile capture` of the HBase JVM, stored through the demo's API; its one-line answer. */
function captureProfile(pid: number, runId: string, seconds: number, env: NodeJS.ProcessEnv): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = spawn(
      process.execPath,
      [
        path.join(repoRoot(), 'bin', 'benchstream.js'),
        'profile',
        'capture',
        '--pid',
        String(pid),
        '--run-id',
        runId,
        '--seconds',
        String(seconds),
        '--label',
        'role=hbase',
      ],
      { env, stdio: ['ignore', 'pipe', 'pipe'] },
    )
    let out = ''
    let err = ''
    child.stdout.on('data', (d: Buffer) => (out += d.toString()))
    child.stderr.on('data', (d: Buffer) => (err += d.toString()))
    child.on('error', reject)
    child.on('close', (code) =>
      code === 0
        ? resolve(out.trim())
        : reject(new Error(`profile capture exited with ${code}: ${err.trim().split('\n').slice(-3).join(' / ')}`)),
    )
  })
}

/**
 * One live line from ClickHouse: the newest complete window's throughput and p99s, the region server's block cache over
 * the last seconds.
 */
async function status(rm: ReadModel, runId: string, started: number): Promise<string> {
  const now = Date.now()
  const elapsed = Math.round((now - started) / 1000)
  const points = await rm.timeline(runId, now - 10_000)
  const starts = [...new Set(points.map((p) => p.t))].sort((a, b) => a - b)
  const complete = starts.length >= 3 ? starts[starts.length - 3] : undefined
  if (complete === undefined)
    return (
      `[live] ${String(elapsed).padStart(3)}s  waiting for YCSB's first operations (a JVM starts, ` +
      `connects to ZooKeeper and finds the region)...`
    )
  const rows = points.filter((p) => p.t === complete)
  const ops = rows.reduce((a, r) => a + r.ops, 0)
  const p99 = rows.map((r) => `${r.op} ${r.p99}µs`).join(' ')
  const cache = await rm.serverCacheWindows(runId, now - 5000, now, 5000)
  const hits = cache.reduce((a, c) => a + c.hits, 0)
  const misses = cache.reduce((a, c) => a + c.misses, 0)
  const total = (await rm.runCounts(runId)).total
  return (
    `[live] ${String(elapsed).padStart(3)}s  ${Math.round(ops).toLocaleString('en-US').padStart(7)} ` +
    `ops/s  p99 ${p99}  block cache hit ` +
    (hits + misses === 0 ? 'n/a' : ((100 * hits) / (hits + misses)).toFixed(1) + '%') +
    ' ' +
    ` stored ${total.toLocaleString('en-US')}`
  )
}
