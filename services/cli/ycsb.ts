/**
 * `benchstream ycsb [flags] -- <YCSB arguments>`: real YCSB with the bridge
 * (io.benchstream.ycsb.BenchstreamDB, services/ycsb/bridge) in front of the
 * binding the user named, so any YCSB binding becomes a live Benchstream
 * client. Builds or fetches the class path (deploy/local/ycsb.sh, cached),
 * makes sure the topic exists (the bridge does not create it), runs
 * site.ycsb.Client with -s status lines passed through, then prints YCSB's
 * report, Benchstream's merged report of the run from the API (when a server
 * is reachable) and the counts side by side.
 */
import { execFile, spawn, type ChildProcessWithoutNullStreams } from 'node:child_process'
import { existsSync, readdirSync, readFileSync } from 'node:fs'
import path from 'node:path'
import type { RunReport } from '../../schemas/run-reports-api.v1.js'
import { HBaseJmxSampler } from '../adapters/datastores/hbase-jmx.js'
import { createKafka, ensureTopics } from '../adapters/kafka/client.js'
import { KafkaEventSink } from '../adapters/kafka/event-sink.js'
import { readCliEnv, THRESHOLD_FAILED_EXIT } from '../common/cli-env.js'
import type { Env } from '../common/config.js'
import { readInfraConfig } from '../common/infra-config.js'
import { repoRoot } from '../common/repo-root.js'
import { findServer } from '../common/server-file.js'
import { BenchstreamError } from '../core/errors.js'
import { evaluateThresholds, formatThresholdResults } from '../core/reports/thresholds.js'
import { formatYcsb } from '../core/reports/ycsb-report.js'
import { parseYcsbFile } from '../core/ycsb/import.js'
import { compareReports, formatComparison } from '../core/ycsb/report-comparison.js'
import type { SummaryReport } from '../core/ycsb/report-types.js'
import { sampleServers, waitForMergedReport, type Sampling, type SampleServer } from '../driver/external-client.js'
import {
  bridgeArguments,
  chooseBinding,
  parseBindingsProperties,
  parseYcsbCommand,
  type BindingChoice,
  type ServerMetricsSource,
  type YcsbCommand,
} from './ycsb-args.js'

/** Exit status when stdin ends under --barrier stdin (the agent that started this client is gone), as the driver's. */
const STDIN_CLOSED_EXIT = 75
/** Longest first line on stdin under --barrier stdin: "start <ms>" or "abort" (the bridge reads at most 256). */
const MAX_BARRIER_LINE = 256
/** YCSB's stdout kept for the comparison; a larger one (raw data to stdout) is passed through but not compared. */
const MAX_CAPTURED_STDOUT = 64 * 1024 * 1024
/** JVM flags the HBase client needs on Java 17 (as services/ycsb/hbase/ycsb.sh). */
const HBASE_JVM_FLAGS = [
  '-Dorg.apache.hbase.thirdparty.io.netty.tryReflectionSetAccessible=true',
  ...[
    'java.nio',
    'sun.nio.ch',
    'java.lang',
    'jdk.internal.ref',
    'java.lang.reflect',
    'java.util',
    'java.util.concurrent',
  ].flatMap((p) => ['--add-opens', `java.base/${p}=ALL-UNNAMED`]),
  '--add-exports',
  'java.base/jdk.internal.misc=ALL-UNNAMED',
]
/** YCSB core's own dependencies in our cache: left out when the user's installation brings its own. */
const OUR_YCSB_CORE_JARS =
  /^(?:core-\d[\w.-]*|HdrHistogram-[\w.-]+|jackson-(?:core|mapper)-asl-[\w.-]+|htrace-core4-[\w.-]+)\.jar$/

export interface YcsbRunOutcome {
  exitCode: number
  ycsbStdout: string
  merged: RunReport | undefined
}

export async function ycsbMain(
  argv: readonly string[],
  env: Env = process.env,
  out: (s: string) => void = (s) => process.stdout.write(s),
  err: (s: string) => void = (s) => process.stderr.write(s),
): Promise<number> {
  return (await runYcsb(argv, env, out, err)).exitCode
}

/** The command, returning what tests check as well as the exit code. */
export async function runYcsb(
  argv: readonly string[],
  env: Env,
  out: (s: string) => void,
  err: (s: string) => void,
): Promise<YcsbRunOutcome> {
  const cmd = parseYcsbCommand(argv)
  const infra = readInfraConfig({
    ...env,
    ...(cmd.brokers === undefined ? {} : { KAFKA_BROKERS: cmd.brokers }),
    ...(cmd.topic === undefined ? {} : { BENCHSTREAM_TOPIC_EVENTS: cmd.topic }),
  })
  const home = cmd.ycsbHome === undefined ? undefined : readYcsbHome(cmd.ycsbHome)
  const binding = chooseBinding(cmd.binding, home)
  if (binding.note !== undefined) err(`benchstream: note: ${binding.note}\n`)
  const classpath = await buildClasspath(cmd, binding, home, env)
  // The bridge sends to an existing topic only (a broker need not auto-create).
  const kafka = createKafka(infra.kafka, `ycsb-${cmd.clientId}`)
  await ensureTopics(kafka, infra.kafka, infra.topics)
  const cli = readCliEnv(env)
  const javaArgs = [
    ...cli.ycsbJavaOpts,
    ...(binding.classpath === 'hbase' ? HBASE_JVM_FLAGS : []),
    '-cp',
    classpath,
    'site.ycsb.Client',
    ...bridgeArguments(cmd, binding.className, infra.kafka.brokers.join(','), infra.topics.events),
  ]
  err(
    `benchstream: YCSB ${cmd.phase} phase, run ${cmd.runId}, client ${cmd.clientId}: ${binding.className} ` +
      `behind the bridge, events to ${infra.topics.events} at ${infra.kafka.brokers.join(',')}\n`,
  )
  const metrics =
    cmd.phase === 'run' && cmd.serverMetrics.length > 0
      ? await startSampling(cmd, kafka, infra.topics.events, err)
      : undefined
  if (cmd.phase === 'load' && cmd.serverMetrics.length > 0)
    err('benchstream: note: --server-metrics is sampled in the run phase only (as the Node driver does)\n')
  // Without a barrier the run starts now; with one, at the instant the agent names (sampled from then on).
  const barrier: BarrierRelay | undefined = cmd.barrier === undefined ? undefined : new BarrierRelay(err)
  if (barrier === undefined) metrics?.begin()
  else if (metrics !== undefined) barrier.onStart((atMs) => setTimeout(() => metrics.begin(), atMs - Date.now()))
  let ran: Awaited<ReturnType<typeof runJava>>
  try {
    ran = await runJava(javaArgs, env, out, err, barrier)
  } finally {
    await metrics?.stop()
  }
  if (barrier?.calledOff !== undefined)
    throw new BenchstreamError('BS_ERR_AGENT', `the run was called off at its start barrier: ${barrier.calledOff}`)
  const undelivered = /^\[BENCHSTREAM\] run .*: \d+ events measured, \d+ delivered, (\d+) undelivered/m.exec(ran.stderr)
  if (ran.code !== 0) {
    err(`benchstream: YCSB exited with code ${ran.code}${ran.signal === null ? '' : ` (${ran.signal})`}\n`)
    return { exitCode: ran.code === 0 ? 1 : ran.code, ycsbStdout: ran.stdout, merged: undefined }
  }
  const ycsbReport = readYcsbReport(cmd, ran.stdout, err)

  // Benchstream's side, through the API of a running server.
  const api = cli.apiUrl ?? (infra.clickhouse.url === undefined ? findServer(infra.dataDir)?.apiUrl : undefined)
  if (api === undefined) {
    err(
      `benchstream: no Benchstream API found (no server on BENCHSTREAM_DATA_DIR=${infra.dataDir}, ` +
        `BENCHSTREAM_API_URL unset), so Benchstream's report could not be read back; the events are ` +
        `in ${infra.topics.events}: start \`benchstream server\` and run \`benchstream report ${cmd.runId}\`\n`,
    )
    return {
      exitCode: undelivered !== null && Number(undelivered[1]) > 0 ? 3 : 0,
      ycsbStdout: ran.stdout,
      merged: undefined,
    }
  }
  err(`benchstream: waiting up to ${cmd.reportWaitS} s for ${api} to count run ${cmd.runId}\n`)
  const merged = await waitForMergedReport(api, cli.apiToken, cmd.runId, cmd.reportWaitS * 1000)
  if (merged === undefined) {
    err(`benchstream: ${api} did not answer with the report of run ${cmd.runId}\n`)
    return { exitCode: 1, ycsbStdout: ran.stdout, merged: undefined }
  }
  const r = merged.report
  const scope = merged.complete
    ? `merged over ${r.run?.clients ?? 1} client${r.run?.clients === 1 ? '' : 's'}, every event counted`
    : `as counted after ${cmd.reportWaitS} s: ${r.completeness.counted} of ${r.completeness.sent ?? '?'} ` +
      `events, ${r.run?.clients_ended ?? 0} of ${r.run?.clients ?? '?'} clients ended`
  out(`\n# Benchstream's report of run ${cmd.runId} (${scope}; from ${api}):\n`)
  out(formatYcsb(r))
  for (const c of r.serverCache)
    out(
      `[BENCHSTREAM], ServerCacheHitRatio(${c.source}), ` +
        (c.ratio === null
          ? 'n/a (the counters did not move)'
          : `${(c.ratio * 100).toFixed(2)}% (${c.hits} hits, ${c.misses} misses over the run)`) +
        '\n',
    )
  let exitCode = 0
  if (ycsbReport !== undefined) {
    const c = compareReports(ycsbReport, r)
    out(`\n# YCSB's report (this client) vs Benchstream's (the run):\n${formatComparison(c)}`)
    if (!c.countsEqual && merged.complete && (r.run?.clients ?? 1) === 1) {
      err('benchstream: the operation counts differ between YCSB and Benchstream (see above)\n')
      exitCode = 1
    }
  }
  if (cmd.thresholds.length > 0) {
    const results = evaluateThresholds(r, cmd.thresholds)
    err(formatThresholdResults(results, `run ${cmd.runId}, ${scope}`))
    if (!results.every((x) => x.passed)) exitCode = THRESHOLD_FAILED_EXIT
  }
  if (exitCode === 0 && undelivered !== null && Number(undelivered[1]) > 0) exitCode = 3
  return { exitCode, ycsbStdout: ran.stdout, merged: r }
}

/** A sampler per --server-metrics source; the datastores whose counters YCSB's Java side cannot send. */
function samplerFor(m: ServerMetricsSource): SampleServer {
  const jmx = new HBaseJmxSampler(m.url)
  return () => jmx.sample()
}

/**
 * Samples the servers that --server-metrics names into the run, as this client (the driver's sampleServers: one
 * sample first, before YCSB or PE starts, then every second from begin() on).
 */
export async function startSampling(
  cmd: Pick<YcsbCommand, 'runId' | 'clientId' | 'serverMetrics'>,
  kafka: ReturnType<typeof createKafka>,
  topic: string,
  err: (s: string) => void,
): Promise<Sampling> {
  return sampleServers(
    cmd.serverMetrics.map((m) => ({ ...m, sample: samplerFor(m) })),
    () => KafkaEventSink.open(kafka, { topic, runId: cmd.runId, clientId: cmd.clientId }),
    cmd,
    err,
  )
}

/** YCSB's final report from its stdout or its exportfile; undefined (and said) when there is none to compare. */
function readYcsbReport(cmd: YcsbCommand, stdout: string, err: (s: string) => void): SummaryReport | undefined {
  const from = cmd.exportFile ?? '(YCSB stdout)'
  try {
    const text = cmd.exportFile === undefined ? stdout : readFileSync(cmd.exportFile, 'utf8')
    const f = parseYcsbFile(from, text)
    if (f.kind === 'summary') return f
    if (f.kind === 'raw' && f.summary !== undefined) return f.summary
  } catch (e) {
    err(`benchstream: YCSB's report in ${from} could not be read (${(e as Error).message}); no comparison\n`)
    return undefined
  }
  err(`benchstream: ${from} holds no final report; no comparison\n`)
  return undefined
}

interface YcsbHome {
  dir: string
  bindings: Record<string, string>
}

function readYcsbHome(dir: string): YcsbHome {
  if (!existsSync(path.join(dir, 'lib')))
    throw new BenchstreamError(
      'BS_ERR_USAGE',
      `--ycsb-home ${dir}: no lib/ folder there; expected a YCSB installation (the unpacked ycsb-<version>.tar.gz: ` +
        `bin/, lib/, <binding>-binding/)`,
    )
  const props = path.join(dir, 'bin', 'bindings.properties')
  return { dir, bindings: existsSync(props) ? parseBindingsProperties(readFileSync(props, 'utf8')) : {} }
}

const jarsIn = (dir: string): string[] =>
  existsSync(dir)
    ? readdirSync(dir)
        .filter((f) => f.endsWith('.jar'))
        .sort()
        .map((f) => path.join(dir, f))
    : []

/** The class path: YCSB (ours or the user's), the bridge and Kafka's client, the binding's jars. */
async function buildClasspath(
  cmd: YcsbCommand,
  binding: BindingChoice,
  home: YcsbHome | undefined,
  env: Env,
): Promise<string> {
  const script = path.join(repoRoot(), 'deploy', 'local', 'ycsb.sh')
  let ours = (await sh(script, ['classpath'], env)).split(':').filter((s) => s !== '')
  const parts: string[] = []
  if (home !== undefined) {
    // The installation's YCSB first; ours only adds the bridge and what it needs.
    parts.push(...jarsIn(path.join(home.dir, 'lib')))
    const names = Object.entries(home.bindings)
      .filter(([, c]) => c === binding.className)
      .map(([n]) => n)
    for (const n of names.length > 0 ? names : []) {
      const bdir = path.join(home.dir, `${n.split('-')[0]}-binding`)
      parts.push(...jarsIn(path.join(bdir, 'lib')))
      if (existsSync(path.join(bdir, 'conf'))) parts.push(path.join(bdir, 'conf'))
    }
    ours = ours.filter((j) => !OUR_YCSB_CORE_JARS.test(path.basename(j)))
  }
  parts.push(...ours)
  if (binding.classpath === 'hbase') {
    const hbase = (await sh(script, ['binding-classpath', 'hbase'], env)).split(':').filter((s) => s !== '')
    // The HBase client logs through log4j2's SLF4J binding: one binding on the path.
    parts.splice(0, parts.length, ...parts.filter((j) => !/slf4j-simple/.test(path.basename(j))), ...hbase)
  }
  if (cmd.classpath !== undefined) parts.push(...cmd.classpath.split(':').filter((s) => s !== ''))
  return [...new Set(parts)].join(':')
}

function sh(script: string, args: string[], env: Env): Promise<string> {
  return new Promise((resolve, reject) => {
    // stderr passes through: a first build says what it is doing for a minute.
    const child = execFile(
      'bash',
      [script, ...args],
      { env: { ...process.env, ...env }, maxBuffer: 16 * 1024 * 1024 },
      (e, stdout) => {
        if (e !== null)
          reject(
            new BenchstreamError(
              'BS_ERR_CONFIG',
              `${path.basename(script)} ${args.join(' ')} failed: ${e.message.split('\n')[0]} (it needs Java ` +
                `17+ and Maven; see services/ycsb/README.md)`,
              { cause: e },
            ),
          )
        else resolve(stdout.trim())
      },
    )
    child.stderr?.on('data', (d: Buffer) => process.stderr.write(d))
  })
}

/**
 * --barrier stdin: this process's stdin goes to YCSB's (the bridge reads the barrier's line there and watches for
 * its end), and this process ends with it: the end of stdin means the agent that started this client is gone, so
 * YCSB is killed (SIGKILL: no shutdown hook sends an end record) and this process exits at once, before the start
 * or after it. The first line is read here too, to know the start instant or that the run was called off.
 */
class BarrierRelay {
  /** Why the run was called off at the barrier (abort, stdin closed before the start, not the protocol). */
  calledOff: string | undefined
  private line = ''
  private settled = false
  private readonly starts: Array<(atMs: number) => void> = []

  constructor(private readonly err: (s: string) => void) {}

  /** Called with the start instant (ms since the epoch) once `start <ms>` went through to YCSB. */
  onStart(fn: (atMs: number) => void): void {
    this.starts.push(fn)
  }

  attach(child: ChildProcessWithoutNullStreams): void {
    // YCSB may end before it read everything (a failed start): not this process's error.
    child.stdin.on('error', () => undefined)
    process.stdin.on('data', (chunk: Buffer) => {
      if (child.stdin.writable) child.stdin.write(chunk)
      if (!this.settled) this.read(chunk.toString('utf8'))
    })
    process.stdin.once('end', () => {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL')
      this.err('benchstream: stdin closed (the agent that started this client is gone): ending now\n')
      process.exit(STDIN_CLOSED_EXIT)
    })
    process.stdin.resume()
  }

  /** The first line, as the bridge reads it (StartBarrier): start <ms since epoch>, or anything else calls it off. */
  private read(text: string): void {
    this.line += text
    const nl = this.line.indexOf('\n')
    if (nl < 0 && this.line.length <= MAX_BARRIER_LINE) return
    this.settled = true
    const first = (nl < 0 ? this.line : this.line.slice(0, nl)).trim()
    const m = /^start (\d{12,15})$/.exec(first)
    if (m === null) {
      this.calledOff =
        first === 'abort'
          ? 'abort'
          : `${JSON.stringify(first.slice(0, 80))} on stdin, expected "start <ms since epoch>"`
      return
    }
    for (const fn of this.starts) fn(Number(m[1]))
  }
}

/** Runs YCSB; its stdout and stderr pass through as they come and are kept (bounded). */
function runJava(
  args: string[],
  env: Env,
  out: (s: string) => void,
  err: (s: string) => void,
  barrier: BarrierRelay | undefined,
): Promise<{ code: number; signal: NodeJS.Signals | null; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const java = env.JAVA_HOME !== undefined && env.JAVA_HOME !== '' ? path.join(env.JAVA_HOME, 'bin', 'java') : 'java'
    const child = spawn(java, args, { env: { ...process.env, ...env }, stdio: ['pipe', 'pipe', 'pipe'] })
    if (barrier === undefined) child.stdin.end()
    else barrier.attach(child)
    let stdout = ''
    let stderr = ''
    let dropped = false
    child.stdout.setEncoding('utf8').on('data', (d: string) => {
      out(d)
      if (stdout.length + d.length <= MAX_CAPTURED_STDOUT) stdout += d
      else dropped = true
    })
    child.stderr.setEncoding('utf8').on('data', (d: string) => {
      err(d)
      // Only the tail matters (the bridge's summary line comes last); status lines can run for hours.
      stderr = (stderr + d).slice(-64 * 1024)
    })
    // Ctrl-C reaches YCSB through the terminal's process group; a TERM sent to us is passed on.
    const onTerm = (): void => {
      child.kill('SIGTERM')
    }
    process.once('SIGTERM', onTerm)
    child.on('error', (e) => {
      process.off('SIGTERM', onTerm)
      reject(
        new BenchstreamError(
          'BS_ERR_CONFIG',
          `cannot start ${java}: ${e.message} (install a JDK 17+, or set JAVA_HOME)`,
          { cause: e },
        ),
      )
    })
    child.on('close', (code, signal) => {
      process.off('SIGTERM', onTerm)
      if (dropped)
        err(`benchstream: YCSB's stdout was larger than ${MAX_CAPTURED_STDOUT} bytes: passed through, not compared\n`)
      resolve({ code: code ?? 1, signal, stdout: dropped ? '' : stdout, stderr })
    })
  })
}
