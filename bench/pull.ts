/**
 * bench/pull (issue 31): whole runs of raw events pulled out of a running
 * server, and the server's memory while it streams them.
 *
 * A server of its own (`benchstream server`, a process of its own, embedded
 * ClickHouse, a private broker) takes runs of N raw events each (1M and 5M
 * by default). For each run, one after the other:
 *
 * - clickhouse-connect's `query_df` of `SELECT * FROM ops WHERE run_id = ...`
 *   through /clickhouse/ (its defaults: Native, lz4);
 * - the JDBC driver (clickhouse-jdbc 0.10.0) reading every row of the same
 *   query with `next()` (RowBinaryWithNamesAndTypes, compress=1);
 * - `benchstream export RUN --to run.parquet` (through the API; the CLI's
 *   own chDB writes the file);
 *
 * each timed, with the server's peak RSS while it ran (VmHWM in
 * /proc/<pid>/status, reset through /proc/<pid>/clear_refs before each) and
 * the client's. Then the server stops and the baseline reads the same rows
 * straight from chDB in a process of its own (bench/pull-direct-child.ts):
 * streamed in Native, and written as Parquet as the export does without a
 * server. The 1-minute load average is printed beside every figure.
 *
 * Target: every row comes back through each reader; the server's peak RSS
 * while streaming is bounded, the same for 5M events as for 1M (backpressure:
 * a block or two in flight per query), not growing with the result.
 *
 * Needs the clients tier's tools: the Python venv (~/.cache/benchstream/
 * clients-venv, made by `npm run test:clients`) and Maven for the JDBC client;
 * a reader whose tool is missing is skipped, saying so.
 */
import { execFile, spawn, spawnSync, type ChildProcess } from 'node:child_process'
import { cpSync, existsSync, mkdirSync, openSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { promisify } from 'node:util'
import { findServer } from '../services/common/server-file.js'
import { repoRoot } from '../services/common/repo-root.js'
import {
  createTopic,
  fmt,
  fmtInt,
  nowMs,
  openProducer,
  processorEnv,
  produceEvents,
  progress,
  runMain,
  shortId,
  sleep,
  SyntheticStream,
  tempDir,
  withBroker,
} from './common.js'
import { KAFKA_FLAGS, parseFlags } from './flags.js'

const BENCH = 'pull'
const run = promisify(execFile)
const TOOLS = path.join(repoRoot(), 'test/tools')
const BIN = path.join(repoRoot(), 'bin/benchstream.js')
const PYTHON = path.join(os.homedir(), '.cache/benchstream/clients-venv/bin/python')

const FLAGS = {
  events: {
    kind: 'ints',
    default: [1_000_000, 5_000_000],
    min: 1000,
    max: 100_000_000,
    help: 'one run of each size, events each',
  },
  partitions: { kind: 'int', default: 4, min: 1, max: 64, help: 'partitions of the events topic' },
  'timeout-s': {
    kind: 'int',
    default: 600,
    min: 1,
    max: 3600,
    help: "the server's API_QUERY_TIMEOUT_S: a pull must fit in it",
  },
  ...KAFKA_FLAGS,
} as const

interface Measured {
  what: string
  events: number
  rows: number
  seconds: number
  /** The server's RSS when the reader started (its peak counter reset then). */
  serverStartMb?: number
  serverPeakMb?: number
  clientPeakMb?: number
  load: number
  note?: string
}

const load = (): number => os.loadavg()[0]!

/** "start → peak" of the server's RSS for a reader, the RSS alone for a sample, or nothing. */
function serverRss(r: Measured): string {
  if (r.serverPeakMb === undefined) return ''
  return r.serverStartMb === undefined
    ? fmt(r.serverPeakMb, 0)
    : `${fmt(r.serverStartMb, 0)} → ${fmt(r.serverPeakMb, 0)}`
}

function status(pid: number, field: 'VmHWM' | 'VmRSS'): number {
  const kb = new RegExp(`${field}:\\s+(\\d+) kB`).exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1]
  return Number(kb) / 1024
}

/** Resets a process's peak RSS to its current RSS (Linux: clear_refs 5); that RSS, MB. */
function resetPeak(pid: number): number {
  writeFileSync(`/proc/${pid}/clear_refs`, '5')
  return status(pid, 'VmRSS')
}

/** Runs a command, sampling its peak RSS until it exits (VmHWM is monotonic: the last sample is the peak). */
async function measured(
  cmd: string,
  args: string[],
  env: NodeJS.ProcessEnv = process.env,
): Promise<{ stdout: string; stderr: string; code: number | null; peakMb: number; seconds: number }> {
  const t0 = nowMs()
  const child = spawn(cmd, args, { env, stdio: ['ignore', 'pipe', 'pipe'] })
  let stdout = ''
  let stderr = ''
  child.stdout.on('data', (d: Buffer) => (stdout += d.toString()))
  child.stderr.on('data', (d: Buffer) => (stderr += d.toString()))
  let peakMb = 0
  const timer = setInterval(() => {
    try {
      // An exited child not yet reaped has no VmHWM line (NaN): the last reading stands.
      const hwm = status(child.pid!, 'VmHWM')
      if (Number.isFinite(hwm)) peakMb = Math.max(peakMb, hwm)
    } catch {
      // reaped
    }
  }, 20)
  const code = await new Promise<number | null>((resolve) => child.on('close', resolve))
  clearInterval(timer)
  return { stdout, stderr, code, peakMb, seconds: (nowMs() - t0) / 1000 }
}

/** Builds the JDBC client with Maven (~/.m2 as cache); its classpath, or why not. */
async function jdbcClasspath(dir: string): Promise<string | { skip: string }> {
  if (spawnSync('mvn', ['-v']).status !== 0) return { skip: 'mvn is not on PATH' }
  const src = path.join(dir, 'jdbc')
  cpSync(path.join(TOOLS, 'clickhouse-jdbc-client'), src, {
    recursive: true,
    filter: (f) => !f.includes(`${path.sep}target`),
  })
  try {
    await run('mvn', ['-q', '-B', 'package', 'dependency:build-classpath', '-Dmdep.outputFile=target/classpath.txt'], {
      cwd: src,
      timeout: 600_000,
    })
  } catch (err) {
    return { skip: `the JDBC client did not build: ${String((err as Error).message).split('\n')[0]}` }
  }
  const deps = readFileSync(path.join(src, 'target/classpath.txt'), 'utf8').trim()
  return `${path.join(src, 'target/clickhouse-jdbc-client-1.jar')}${path.delimiter}${deps}`
}

async function main(): Promise<void> {
  const f = parseFlags(
    BENCH,
    'whole runs pulled through a running server: time and peak RSS',
    process.argv.slice(2),
    process.env,
    FLAGS,
  )
  const work = tempDir('pull')
  const jdbc = await jdbcClasspath(work)
  const python = existsSync(PYTHON) ? PYTHON : undefined
  if (typeof jdbc !== 'string') progress(BENCH, `JDBC skipped: ${jdbc.skip}`)
  if (python === undefined) progress(BENCH, `query_df skipped: no venv at ${PYTHON} (npm run test:clients makes it)`)
  const results: Measured[] = []
  try {
    await withBroker(BENCH, f['kafka-port'], async (b) => {
      const topic = `bench-pull-${shortId()}`
      await createTopic(b.kafka, topic, f.partitions)
      const dataDir = path.join(work, 'data')
      mkdirSync(dataDir)
      const env = {
        ...process.env,
        ...processorEnv({
          brokers: b.brokers,
          topic,
          partitions: f.partitions,
          dataDir,
          group: `bench-pull-${shortId()}`,
          storeRaw: true,
        }),
        API_QUERY_TIMEOUT_S: String(f['timeout-s']),
        ALERTS_ENABLED: 'false',
      }
      const log = openSync(path.join(work, 'server.log'), 'w')
      const server: ChildProcess = spawn(process.execPath, [BIN, 'server'], { env, stdio: ['ignore', log, log] })
      let api: string | undefined
      for (let i = 0; i < 600 && api === undefined; i++) {
        await sleep(100)
        api = findServer(dataDir)?.apiUrl
      }
      if (api === undefined) throw new Error(`the server did not start: ${path.join(work, 'server.log')}`)
      const pid = server.pid!
      const apiPort = new URL(api).port
      progress(BENCH, `server pid ${pid} at ${api}`)
      const count = async (runId: string): Promise<number> => {
        const res = await fetch(`${api}/api/v1/query`, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({ sql: `SELECT count() AS n FROM ops WHERE run_id = '${runId}'` }),
        })
        return Number(((await res.json()) as { rows: Array<{ n: string }> }).rows[0]?.n ?? 0)
      }
      try {
        const producer = await openProducer(b.kafka)
        for (const n of f.events) {
          const runId = `pull-${n}`
          const stream = new SyntheticStream({
            runId,
            clients: 4,
            eventsPerSecond: 100_000,
            startUs: Date.now() * 1000,
          })
          progress(BENCH, `producing ${fmtInt(n)} events of ${runId}`)
          await produceEvents(producer, topic, f.partitions, n, (k) => stream.next(k))
          for (let i = 0; (await count(runId)) < n; i++) {
            if (i > 6000) throw new Error(`${runId} was not stored in 10 minutes`)
            await sleep(100)
          }
        }
        await producer.disconnect()
        await sleep(2000)
        const idle = status(pid, 'VmRSS')
        progress(BENCH, `server idle RSS ${fmt(idle, 0)} MB`)
        results.push({
          what: 'server idle, runs stored',
          events: 0,
          rows: 0,
          seconds: 0,
          serverPeakMb: idle,
          load: load(),
        })
        for (const n of f.events) {
          const runId = `pull-${n}`
          const sql = `SELECT * FROM ops WHERE run_id = '${runId}'`
          if (python !== undefined) {
            const start = resetPeak(pid)
            const r = await measured(python, [
              path.join(TOOLS, 'clickhouse-connect-client/pull.py'),
              '127.0.0.1',
              apiPort,
              sql,
            ])
            const out = JSON.parse(r.stdout) as {
              rows?: number
              seconds?: number
              peak_rss_mb?: number
              error?: string
            }
            results.push({
              what: 'clickhouse-connect query_df',
              events: n,
              rows: out.rows ?? -1,
              seconds: out.seconds ?? r.seconds,
              serverStartMb: start,
              serverPeakMb: status(pid, 'VmHWM'),
              clientPeakMb: out.peak_rss_mb ?? r.peakMb,
              load: load(),
              ...(out.error === undefined ? {} : { note: out.error }),
            })
            progress(BENCH, `query_df ${runId}: ${JSON.stringify(results.at(-1))}`)
          }
          if (typeof jdbc === 'string') {
            const start = resetPeak(pid)
            const url = `jdbc:clickhouse:http://127.0.0.1:${apiPort}/clickhouse/benchstream`
            const r = await measured('java', [
              '-Xmx2g',
              '-cp',
              jdbc,
              'benchstream.Main',
              url,
              'bench',
              '',
              `sum:latency_us:${sql}`,
            ])
            const out = JSON.parse(r.stdout.trim().split('\n').at(-1) ?? '{}') as {
              rows?: number
              ms?: number
              error?: string
            }
            results.push({
              what: 'JDBC, every row with next()',
              events: n,
              rows: out.rows ?? -1,
              seconds: (out.ms ?? r.seconds * 1000) / 1000,
              serverStartMb: start,
              serverPeakMb: status(pid, 'VmHWM'),
              clientPeakMb: r.peakMb,
              load: load(),
              ...(out.error === undefined ? {} : { note: out.error }),
            })
            progress(BENCH, `JDBC ${runId}: ${JSON.stringify(results.at(-1))}`)
          }
          const start = resetPeak(pid)
          const file = path.join(work, `${runId}.parquet`)
          const r = await measured(process.execPath, [BIN, 'export', runId, '--to', file], {
            ...process.env,
            BENCHSTREAM_API_URL: api,
          })
          results.push({
            what: 'benchstream export --to .parquet',
            events: n,
            rows: r.code === 0 ? Number(/wrote (\d+) raw events/.exec(r.stdout)?.[1] ?? -1) : -1,
            seconds: r.seconds,
            serverStartMb: start,
            serverPeakMb: status(pid, 'VmHWM'),
            clientPeakMb: r.peakMb,
            load: load(),
            ...(r.code === 0 ? { note: `${fmt(statSync(file).size / 1e6, 1)} MB file` } : { note: r.stderr.trim() }),
          })
          progress(BENCH, `export ${runId}: ${JSON.stringify(results.at(-1))}`)
          rmSync(file, { force: true })
        }
      } finally {
        server.kill('SIGTERM')
        await new Promise((resolve) => server.once('exit', resolve))
      }
      // The baseline: the same rows straight from chDB, in a process of its own, on the server's data directory.
      for (const n of f.events) {
        const runId = `pull-${n}`
        const sql = `SELECT * FROM benchstream.ops WHERE run_id = '${runId}'`
        for (const mode of ['stream', 'parquet'] as const) {
          const file = path.join(work, `${runId}-direct.parquet`)
          const r = await measured(process.execPath, [
            path.join(repoRoot(), 'dist/bench/pull-direct-child.js'),
            path.join(dataDir, 'clickhouse'),
            mode,
            sql,
            ...(mode === 'parquet' ? [file] : []),
          ])
          const out = JSON.parse(r.stdout || '{}') as { rows?: number; ms?: number; peakMb?: number }
          results.push({
            what: mode === 'stream' ? 'baseline: chDB direct, Native stream' : 'baseline: chDB direct, to .parquet',
            events: n,
            rows: out.rows ?? -1,
            seconds: (out.ms ?? 0) / 1000,
            clientPeakMb: out.peakMb ?? r.peakMb,
            load: load(),
            ...(r.code === 0 ? {} : { note: r.stderr.trim().split('\n')[0] ?? '' }),
          })
          progress(BENCH, `baseline ${mode} ${runId}: ${JSON.stringify(results.at(-1))}`)
          rmSync(file, { force: true })
        }
      }
    })
  } finally {
    rmSync(work, { recursive: true, force: true })
  }
  const lines = [
    `bench/pull: ${os.cpus().length} cores, ${fmt(os.totalmem() / 2 ** 30, 0)} GiB; ` +
      `API_QUERY_TIMEOUT_S=${f['timeout-s']}`,
    '| reader | events | rows | time (s) | rows/s | server RSS at start → peak (MB) | reader peak RSS (MB) ' +
      '| load (1 min) | note |',
    '|---|---|---|---|---|---|---|---|---|',
    ...results.map(
      (r) =>
        `| ${r.what} | ${r.events === 0 ? '' : fmtInt(r.events)} | ${r.events === 0 ? '' : fmtInt(r.rows)} | ` +
        `${r.events === 0 ? '' : fmt(r.seconds, 2)} | ` +
        `${r.seconds > 0 ? fmtInt(Math.round(r.rows / r.seconds)) : ''} | ` +
        `${serverRss(r)} | ` +
        `${r.clientPeakMb === undefined ? '' : fmt(r.clientPeakMb, 0)} | ${fmt(r.load, 1)} | ${r.note ?? ''} |`,
    ),
  ]
  const pulls = results.filter((r) => r.serverPeakMb !== undefined && r.events > 0)
  const idle = results.find((r) => r.events === 0)?.serverPeakMb ?? 0
  const whole = results.filter((r) => r.events > 0).every((r) => r.rows === r.events)
  // What a pull added to the server's RSS: its peak over the RSS when it started.
  const added = (r: Measured): number => r.serverPeakMb! - (r.serverStartMb ?? r.serverPeakMb!)
  const bySize = f.events.map((n) => Math.max(...pulls.filter((r) => r.events === n).map(added)))
  lines.push(
    '',
    `every row came back through every reader: ${whole ? 'yes' : 'NO'}`,
    `server: ${fmt(idle, 0)} MB once the runs were stored; the most a pull added to its RSS: ` +
      `${bySize.map((m, i) => `${fmt(m, 0)} MB at ${fmtInt(f.events[i]!)} events`).join(', ')}`,
    `target (bounded: what the largest run's pulls added within 1.1x of the smallest's, +16 MB): ` +
      `${bySize.length < 2 || bySize.at(-1)! <= 1.1 * bySize[0]! + 16 ? 'met' : 'NOT met'}`,
  )
  process.stdout.write(`${lines.join('\n')}\n`)
}

runMain(main)
