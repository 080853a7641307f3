/**
 * `npm run demo` / `benchstream demo [--system memory|hbase] [--seconds N] [--target OPS] [--threads N] [--workload
 * FILE]`
 *
 * The whole pipeline on one machine: a local Kafka broker (unless
 * KAFKA_BROKERS is set), the processor and the API in this process with the
 * embedded ClickHouse, and one driver process running a YCSB workload
 * against the embedded store. While it runs, a status line every second is
 * read back *from ClickHouse* (so what you see went through the pipeline);
 * at the end the report is read back from ClickHouse and checked against
 * what the driver says it sent.
 *
 * `--system hbase` (`npm run demo:hbase`): a real HBase and real YCSB through
 * the bridge instead of the driver and the embedded store (demo-hbase.ts).
 *
 * Without --target, the memory demo's target comes from a 2 s probe of the
 * driver unthrottled on this machine (core/reports/demo-target.ts), said with
 * why. The server's own log lines (alert election, Kafka outages, its stop)
 * go into <BENCHSTREAM_DATA_DIR>/demo.log, never between the report's lines;
 * its warnings are echoed on stderr while the run goes on.
 */
import { DEMO_USAGE } from './usage.js'
import { spawn } from 'node:child_process'
import path from 'node:path'
import { readInfraConfig } from '../common/infra-config.js'
import { createFileLogger } from '../common/logger.js'
import { chooseDemoTarget, type DemoProbe } from '../core/reports/demo-target.js'
import { parseYcsbFile } from '../core/ycsb/import.js'
import { useLocalKafka, type LocalKafka } from '../adapters/kafka/local-broker.js'
import { repoRoot } from '../common/repo-root.js'
import { parseFlags, type FlagSpecs } from '../common/args.js'
import { scheduleVerdict } from '../core/reports/schedule-kept.js'
import { THRESHOLD_FAILED_EXIT } from '../common/cli-env.js'
import { BenchstreamError } from '../core/errors.js'
import {
  evaluateThresholds,
  formatThresholdResults,
  parseThreshold,
  type Threshold,
} from '../core/reports/thresholds.js'
import type { ReadModel } from '../core/ports/read-model.js'
import { formatRunReport } from '../core/reports/run-report-text.js'
import { startServer, type Server } from '../server/main.js'
import { demoHBaseOptions, runHBaseDemo, startDemoHBase, type DemoHBase } from './demo-hbase.js'

/** What the demo benchmarks: the embedded store with our driver, or a real HBase with real YCSB. */
const SYSTEMS = ['memory', 'hbase'] as const

interface DemoOptions {
  system: (typeof SYSTEMS)[number]
  seconds: number
  /** undefined: chosen from a probe (memory) or unthrottled (hbase). */
  target: number | undefined
  threads: number
  workload: string
  records: number
  thresholds: Threshold[]
}

/** The demo's flags (parseArgs options). */
export const DEMO_FLAGS = {
  system: { type: 'string', default: 'memory' },
  seconds: { type: 'string', default: '30' },
  target: { type: 'string' },
  threads: { type: 'string', default: '8' },
  records: { type: 'string' },
  workload: { type: 'string', default: 'workloads/workloada' },
  threshold: { type: 'string', multiple: true },
} as const satisfies FlagSpecs

/** The demo's command line; `target` stays undefined without --target (the memory demo probes for one). */
export function parseDemoArgs(argv: readonly string[]): DemoOptions {
  const { values } = parseFlags(argv, DEMO_FLAGS, DEMO_USAGE)
  const num = (flag: string, raw: string, min: number, max: number): number => {
    const n = Number(raw)
    if (raw.trim() === '' || !Number.isInteger(n) || n < min || n > max)
      throw new BenchstreamError(
        'BS_ERR_USAGE',
        `--${flag} ${JSON.stringify(raw)} is not allowed: expected an integer from ${min} to ${max}\n${DEMO_USAGE}`,
      )
    return n
  }
  const system = values.system as DemoOptions['system']
  if (!SYSTEMS.includes(system))
    throw new BenchstreamError(
      'BS_ERR_USAGE',
      `--system ${JSON.stringify(values.system)} is not allowed: one of ${SYSTEMS.join(', ')}\n${DEMO_USAGE}`,
    )
  // HBase on a laptop serves a few thousand operations a second: unthrottled, and fewer records to load.
  const hbase = system === 'hbase'
  return {
    system,
    seconds: num('seconds', values.seconds, 1, 86_400),
    target:
      values.target !== undefined ? num('target', values.target, 0, Number.MAX_SAFE_INTEGER) : hbase ? 0 : undefined,
    threads: num('threads', values.threads, 1, 100_000),
    records: num('records', values.records ?? (hbase ? '10000' : '100000'), 1, 100_000_000),
    workload: values.workload,
    thresholds: (values.threshold ?? []).map(parseThreshold),
  }
}

const say = (s: string): void => void process.stdout.write(s + '\n')

/** How long the probe of the driver runs unthrottled (after its records are loaded). */
const PROBE_SECONDS = 2

export async function demoMain(argv: readonly string[]): Promise<number> {
  const opts = parseDemoArgs(argv)
  const env: NodeJS.ProcessEnv = { ...process.env }
  const infra = readInfraConfig(env)
  let broker: LocalKafka | undefined
  let svc: Server | undefined
  let hbase: DemoHBase | undefined
  let echo = true
  let stopping: Promise<void> | undefined
  const stopAll = (): Promise<void> =>
    (stopping ??= (async () => {
      echo = false
      await svc?.stop()
      await hbase?.stop().catch((e: unknown) => say(`[demo] stopping HBase failed: ${(e as Error).message}`))
      await broker?.stop().catch((e: unknown) => say(`[demo] stopping Kafka failed: ${(e as Error).message}`))
    })())
  // Ctrl-C stops the server and the broker this demo started rather than leave them behind (one Ctrl-C of `npm run
  // demo` arrives twice: to the process group, and forwarded by npm); a third signal leaves at once.
  let signals = 0
  const onSignal = (): void => {
    signals++
    if (signals >= 3) process.exit(130)
    if (signals > 1) return
    process.stderr.write('[demo] interrupted: stopping the server and the Kafka broker this demo started\n')
    void stopAll().finally(() => process.exit(130))
  }
  process.on('SIGINT', onSignal)
  process.on('SIGTERM', onSignal)
  if (infra.kafka.local !== undefined) {
    // As `benchstream server` does: a broker already answering is used and left running; one started here stops here.
    const port = infra.kafka.local.port
    say(
      `[demo] Kafka on 127.0.0.1:${port}: started with deploy/local/kafka.sh unless one answers there (the first ` +
        'start downloads the broker jars with mvn)',
    )
    broker = await useLocalKafka({
      port,
      dataDir: path.join(infra.dataDir, `kafka-${port}`),
      log: (l) => say(`[kafka] ${l}`),
    })
    if (!broker.startedHere)
      say(
        `[demo] using what already answers on ${broker.brokers} (${broker.said}); it is left running ` +
          '(npm run kafka:stop stops the default one)',
      )
    env.KAFKA_BROKERS = broker.brokers
  }
  // The server's diagnostics go to a file; its warnings also to stderr, but only while the run goes on: what the
  // server logs while it stops (the alert election left, the last commits) must not follow the report.
  const logFile = path.join(infra.dataDir, 'demo.log')
  const log = createFileLogger('benchstream-server', env, logFile, {
    level: 'warn',
    write: (line) => {
      if (echo) process.stderr.write(`[server] ${line}`)
    },
  })
  try {
    const hbOpts = opts.system === 'hbase' ? demoHBaseOptions(env, (l) => say(`[hbase] ${l}`)) : undefined
    if (hbOpts !== undefined) hbase = await startDemoHBase(hbOpts, say)
    svc = await startServer(env, { api: true, log })
    const ch = svc.ch
    const rm = svc.readModel
    say(`[demo] processor running; ClickHouse ${ch.mode} at ${ch.location}; API and live view at ${svc.apiUrl}`)
    say(`[demo] the server's log: ${logFile}`)
    if (hbOpts !== undefined && hbase !== undefined) {
      const r = await runHBaseDemo({ ...opts, target: opts.target ?? 0 }, env, svc, hbOpts, hbase.hb, say, () => {
        echo = false
      })
      return r.code !== 0 ? r.code : r.thresholdsFailed ? THRESHOLD_FAILED_EXIT : 0
    }
    let target = opts.target
    if (target === undefined) {
      say(
        `[demo] no --target: probing what this machine keeps, the driver unthrottled for ${PROBE_SECONDS} s ` +
          `(${opts.threads} threads, ${path.basename(opts.workload)}, no events sent)`,
      )
      const choice = chooseDemoTarget(await probe(opts, env))
      target = choice.target
      say(`[demo] target ${target.toLocaleString('en-US')} ops/s: ${choice.why}`)
    }
    const stamp = new Date().toISOString().replace(/[-:]/g, '').slice(0, 15)
    const runId = `demo-${stamp}-${Math.random().toString(36).slice(2, 6)}`
    const driverArgs = [
      path.join(repoRoot(), 'bin', 'benchstream.js'),
      'run',
      '-P',
      path.join(repoRoot(), opts.workload),
      '-p',
      `recordcount=${opts.records}`,
      '-p',
      'operationcount=0',
      '--seconds',
      String(opts.seconds),
      '-threads',
      String(opts.threads),
      '-target',
      String(target),
      '-db',
      'memory',
      '--run-id',
      runId,
      '--client-id',
      'demo-client-1',
      '--label',
      'system=memory',
      '--label',
      'source=demo',
    ]
    say(
      `[demo] run ${runId}: ${path.basename(opts.workload)} for ${opts.seconds}s, ${opts.threads} ` +
        `threads, target ${target || 'unthrottled'} ops/s`,
    )
    const driver = spawn(process.execPath, driverArgs, { env, stdio: ['ignore', 'pipe', 'pipe'] })
    let driverOut = ''
    let driverErr = ''
    driver.stdout.on('data', (d: Buffer) => (driverOut += d.toString()))
    let pending = ''
    driver.stderr.on('data', (d: Buffer) => {
      driverErr += d.toString()
      // The driver's own notes and warnings (behind schedule, which limit ends the run) are for the user.
      const lines = (pending + d.toString()).split('\n')
      pending = lines.pop() ?? ''
      for (const l of lines)
        if (/^benchstream: (warning|note)/.test(l)) say(`[driver] ${l.replace(/^benchstream: /, '')}`)
    })
    const exited = new Promise<number>((resolve) => driver.on('close', (code) => resolve(code ?? 1)))
    const started = Date.now()
    const ticker = setInterval(() => void status(rm, runId, started).then(say, () => undefined), 1000)
    const code = await exited
    clearInterval(ticker)
    if (code !== 0) {
      process.stderr.write(driverErr + driverOut)
      throw new Error(`the driver exited with code ${code}`)
    }
    const sentEvents = Number(/EventsDelivered, (\d+)/.exec(driverOut)?.[1] ?? NaN)
    say(`[demo] driver finished: ${sentEvents} events delivered to Kafka; waiting for the processor to write them all`)
    const counted = await waitForCount(rm, runId, sentEvents, 120_000)
    const report = await rm.runReport(runId)
    echo = false
    say('\n===== Report from ClickHouse (merged windows) =====')
    process.stdout.write(formatRunReport(report))
    say('\n===== Checks =====')
    const sent = report.run?.sent ?? {}
    const counts = await rm.runCounts(runId)
    for (const [key, n] of Object.entries(sent)) {
      const got = counts.byOpStatus[key] ?? 0
      say(
        `  ${key.padEnd(24)} driver sent ${String(n).padStart(9)}   windows hold ${String(got).padStart(9)} ` +
          `  ${got === Number(n) ? 'exact match' : 'MISMATCH'}`,
      )
    }
    await accuracy(rm, runId)
    const schedule = scheduleVerdict(report)
    if (schedule !== undefined) say(`  schedule: ${schedule.text}`)
    const ratio = Object.entries(report.cacheHitRatio)
      .map(([op, r]) => `${op} ${r === null ? 'n/a' : (r * 100).toFixed(1) + '%'}`)
      .join(', ')
    say(`  cache-hit ratio: ${ratio}`)
    const verdicts = evaluateThresholds(report, opts.thresholds)
    process.stderr.write(formatThresholdResults(verdicts, `run ${runId}, merged`))
    say(`\n===== Run ${runId} =====`)
    say(`  ${counted} operations stored in ClickHouse (${ch.location}).`)
    say(`  The server's log (processor, alerts, API): ${logFile}`)
    say(
      ch.mode === 'server'
        ? '  Ad hoc, after the demo (with the same CLICKHOUSE_URL):'
        : '  Ad hoc, after the demo (no other process may hold the embedded data directory):',
    )
    say(`    npx benchstream report ${runId}`)
    say(
      `    npx benchstream sql "SELECT op, operations, p50_us, p99_us, p999_us, cache_hit_ratio FROM ` +
        `benchstream.run_summary WHERE run_id = '${runId}'"`,
    )
    say(
      `    npx benchstream sql "SELECT op, quantileExact(0.99)(latency_us) FROM benchstream.ops WHERE ` +
        `run_id = '${runId}' GROUP BY op"`,
    )
    say(
      '  While a processor runs: BENCHSTREAM_API_URL=http://127.0.0.1:8080 npx benchstream sql "..." ' +
        ', or open http://127.0.0.1:8080/ for the live view.',
    )
    if (counted !== sentEvents) return 1
    return verdicts.some((v) => !v.passed) ? THRESHOLD_FAILED_EXIT : 0
  } finally {
    await stopAll()
    process.off('SIGINT', onSignal)
    process.off('SIGTERM', onSignal)
  }
}

/** One status line from the newest complete window (the one before the newest that has data). */
async function status(rm: ReadModel, runId: string, started: number): Promise<string> {
  const points = await rm.timeline(runId, Date.now() - 10_000)
  const elapsed = Math.round((Date.now() - started) / 1000)
  const starts = [...new Set(points.map((p) => p.t))].sort((a, b) => a - b)
  const complete = starts.length >= 3 ? starts[starts.length - 3] : undefined
  if (complete === undefined) return `[live] ${String(elapsed).padStart(3)}s  waiting for the first complete window...`
  const rows = points.filter((p) => p.t === complete)
  const ops = rows.reduce((a, r) => a + r.ops, 0)
  const hits = rows.reduce((a, r) => a + r.hits, 0)
  const misses = rows.reduce((a, r) => a + r.misses, 0)
  // With a target, intended p99 beside the measured one: the wait behind a slow operation shows there.
  const p99 = rows
    .map((r) => `${r.op} ${r.p99}µs${r.intendedP99 > r.p99 ? ` (intended ${r.intendedP99}µs)` : ''}`)
    .join(' ')
  const total = (await rm.runCounts(runId)).total
  return (
    `[live] ${String(elapsed).padStart(3)}s  ${Math.round(ops).toLocaleString('en-US').padStart(8)} ` +
    `ops/s  p99 ${p99}  cache hit ${hits + misses === 0 ? 'n/a' : ((100 * hits) / (hits + misses)).toFixed(1) + '%'} ` +
    ` stored ${total.toLocaleString('en-US')}`
  )
}

async function waitForCount(rm: ReadModel, runId: string, expected: number, timeoutMs: number): Promise<number> {
  const deadline = Date.now() + timeoutMs
  for (;;) {
    const c = await rm.runCounts(runId)
    if ((c.total >= expected && c.clientsEnded > 0) || Date.now() > deadline) return c.total
    await new Promise((r) => setTimeout(r, 250))
  }
}

/** Percentiles from merged windows against exact ones over the raw events, same rank rule. */
async function accuracy(rm: ReadModel, runId: string): Promise<void> {
  for (const r of await rm.percentileCheck(runId, [0.5, 0.95, 0.99, 0.999])) {
    const err = r.exact === 0 ? Math.abs(r.windows - r.exact) : Math.abs(r.windows - r.exact) / r.exact
    say(
      `  ${r.op.padEnd(18)} p${String(r.q * 100).padEnd(5)} windows ${String(r.windows).padStart(8)}µs ` +
        ` exact (raw events) ${String(r.exact).padStart(8)}µs  error ${(err * 100).toFixed(2)}%`,
    )
  }
}

/**
 * The driver as the run will use it (workload, records, threads, the memory store), unthrottled and sending no
 * events, for PROBE_SECONDS: the figures of its report as printed (parsed as any YCSB report).
 */
async function probe(opts: DemoOptions, env: NodeJS.ProcessEnv): Promise<DemoProbe> {
  const args = [
    path.join(repoRoot(), 'bin', 'benchstream.js'),
    'run',
    '-P',
    path.join(repoRoot(), opts.workload),
    '-p',
    `recordcount=${opts.records}`,
    '-p',
    'operationcount=0',
    '--seconds',
    String(PROBE_SECONDS),
    '-threads',
    String(opts.threads),
    '-target',
    '0',
    '-db',
    'memory',
    '--no-emit',
  ]
  const child = spawn(process.execPath, args, { env, stdio: ['ignore', 'pipe', 'pipe'] })
  let out = ''
  let err = ''
  child.stdout.on('data', (d: Buffer) => (out += d.toString()))
  child.stderr.on('data', (d: Buffer) => (err += d.toString()))
  const code = await new Promise<number>((resolve) => child.on('close', (c) => resolve(c ?? 1)))
  if (code !== 0)
    throw new Error(
      `the probe of the driver (benchstream run ... --no-emit) exited with code ${code}; the run would fail the ` +
        `same way:\n${err.slice(-2000)}`,
    )
  const r = parseYcsbFile('probe', out)
  if (r.kind !== 'summary') throw new Error(`the probe of the driver printed no report:\n${out.slice(-2000)}`)
  return { opsPerSec: r.throughputOpsPerSec ?? null, runtimeMs: r.runtimeMs ?? null, operations: r.operations }
}
