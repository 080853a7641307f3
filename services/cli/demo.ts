/**
 * `npm run demo` / `benchstream demo [--seconds N] [--target OPS] [--threads N] [--workload FILE]`
 *
 * The whole pipeline on one machine: a local Kafka broker (unless
 * KAFKA_BROKERS is set), the processor and the API in this process with the
 * embedded ClickHouse, and one driver process running a YCSB workload
 * against the embedded store. While it runs, a status line every second is
 * read back *from ClickHouse* (so what you see went through the pipeline);
 * at the end the report is read back from ClickHouse and checked against
 * what the driver says it sent.
 */
import { spawn } from 'node:child_process'
import path from 'node:path'
import { queryRows } from '../adapters/clickhouse/client.js'
import { startLocalKafka, stopLocalKafka } from '../adapters/kafka/local-broker.js'
import { runReport } from '../adapters/clickhouse/read-model.js'
import { repoRoot } from '../common/repo-root.js'
import { BenchstreamError } from '../core/errors.js'
import { entriesFromMap, quantileFromEntries } from '../core/stats/histogram.js'
import { formatYcsb } from '../core/reports/ycsb-report.js'
import { startProcessorService } from '../server/main.js'

interface DemoOptions {
  seconds: number
  target: number
  threads: number
  workload: string
  records: number
}

function parse(argv: readonly string[]): DemoOptions {
  const o: DemoOptions = { seconds: 30, target: 20_000, threads: 8, workload: 'workloads/workloada', records: 100_000 }
  for (let i = 0; i < argv.length; i++) {
    const flag = argv[i]!
    const value = argv[++i]
    const num = (): number => {
      const n = Number(value)
      if (!Number.isInteger(n) || n < 0) throw new BenchstreamError('BS_ERR_USAGE', `${flag} ${JSON.stringify(value ?? '')} is not allowed: expected a non-negative integer`)
      return n
    }
    if (flag === '--seconds') o.seconds = Math.max(1, num())
    else if (flag === '--target') o.target = num()
    else if (flag === '--threads') o.threads = Math.max(1, num())
    else if (flag === '--records') o.records = Math.max(1, num())
    else if (flag === '--workload' && value !== undefined) o.workload = value
    else throw new BenchstreamError('BS_ERR_USAGE', `unknown demo option ${JSON.stringify(flag)}; valid: --seconds N (default 30), --target OPS (default 20000, 0 = unthrottled), --threads N (default 8), --records N (default 100000), --workload FILE (default workloads/workloada)`)
  }
  return o
}

const say = (s: string): void => void process.stdout.write(s + '\n')

export async function demoMain(argv: readonly string[]): Promise<number> {
  const opts = parse(argv)
  const env: NodeJS.ProcessEnv = { ...process.env }
  let kafkaPort: number | undefined
  if (env.KAFKA_BROKERS === undefined || env.KAFKA_BROKERS === '') {
    kafkaPort = Number(env.KAFKA_PORT ?? 9092)
    say(`[demo] starting Kafka on 127.0.0.1:${kafkaPort} (deploy/local/kafka.sh; first run downloads the broker jars with mvn)`)
    env.KAFKA_BROKERS = await startLocalKafka({ port: kafkaPort, log: (l) => say(`[kafka] ${l}`) })
  }
  let svc: Awaited<ReturnType<typeof startProcessorService>> | undefined
  try {
    svc = await startProcessorService(env, { api: true })
    const ch = svc.ch
    say(`[demo] processor running; ClickHouse ${ch.mode} at ${ch.location}; API and live view at ${svc.apiUrl}`)
    const runId = `demo-${new Date().toISOString().replace(/[-:]/g, '').slice(0, 15)}-${Math.random().toString(36).slice(2, 6)}`
    const driverArgs = [
      path.join(repoRoot(), 'bin', 'benchstream.js'), 'run', '-P', path.join(repoRoot(), opts.workload),
      '-p', `recordcount=${opts.records}`, '-p', 'operationcount=0', '--seconds', String(opts.seconds),
      '-threads', String(opts.threads), '-target', String(opts.target), '-db', 'memory',
      '--run-id', runId, '--client-id', 'demo-client-1', '--label', 'system=memory', '--label', 'source=demo',
    ]
    say(`[demo] run ${runId}: ${path.basename(opts.workload)} for ${opts.seconds}s, ${opts.threads} threads, target ${opts.target || 'unthrottled'} ops/s`)
    const driver = spawn(process.execPath, driverArgs, { env, stdio: ['ignore', 'pipe', 'pipe'] })
    let driverOut = ''
    let driverErr = ''
    driver.stdout.on('data', (d: Buffer) => (driverOut += d.toString()))
    driver.stderr.on('data', (d: Buffer) => (driverErr += d.toString()))
    const exited = new Promise<number>((resolve) => driver.on('close', (code) => resolve(code ?? 1)))
    const started = Date.now()
    const ticker = setInterval(() => void status(ch, runId, started).then(say, () => undefined), 1000)
    const code = await exited
    clearInterval(ticker)
    if (code !== 0) {
      process.stderr.write(driverErr + driverOut)
      throw new Error(`the driver exited with code ${code}`)
    }
    const sentEvents = Number(/EventsDelivered, (\d+)/.exec(driverOut)?.[1] ?? NaN)
    say(`[demo] driver finished: ${sentEvents} events delivered to Kafka; waiting for the processor to write them all`)
    const counted = await waitForCount(ch, runId, sentEvents, 120_000)
    const report = await runReport(ch, runId)
    say('\n===== Report from ClickHouse (merged windows) =====')
    process.stdout.write(formatYcsb(report))
    say('\n===== Checks =====')
    const sent = report.run?.sent ?? {}
    for (const [key, n] of Object.entries(sent)) {
      const [op, st] = key.split('/')
      const inCh = await queryRows<{ n: string }>(ch, `SELECT sum(count) AS n FROM ${ch.database}.op_windows WHERE run_id = {runId:String} AND op = {op:String} AND status = {st:String}`, { runId, op, st })
      const got = Number(inCh[0]?.n ?? 0)
      say(`  ${key.padEnd(24)} driver sent ${String(n).padStart(9)}   windows hold ${String(got).padStart(9)}   ${got === Number(n) ? 'exact match' : 'MISMATCH'}`)
    }
    await accuracy(ch, runId)
    const ratio = Object.entries(report.cacheHitRatio).map(([op, r]) => `${op} ${r === null ? 'n/a' : (r * 100).toFixed(1) + '%'}`).join(', ')
    say(`  cache-hit ratio: ${ratio}`)
    say(`\n===== Run ${runId} =====`)
    say(`  ${counted} operations stored in ClickHouse (${ch.location}).`)
    say('  Ad hoc, after the demo (no other process may hold the embedded data directory):')
    say(`    npx benchstream report ${runId}`)
    say(`    npx benchstream sql "SELECT op, operations, p50_us, p99_us, p999_us, cache_hit_ratio FROM benchstream.run_summary WHERE run_id = '${runId}'"`)
    say(`    npx benchstream sql "SELECT op, quantileExact(0.99)(latency_us) FROM benchstream.ops WHERE run_id = '${runId}' GROUP BY op"`)
    say('  While a processor runs: BENCHSTREAM_API_URL=http://127.0.0.1:8080 npx benchstream sql "..." , or open http://127.0.0.1:8080/ for the live view.')
    return counted === sentEvents ? 0 : 1
  } finally {
    await svc?.stop()
    if (kafkaPort !== undefined) await stopLocalKafka({ port: kafkaPort }).catch((e: unknown) => say(`[demo] stopping Kafka failed: ${(e as Error).message}`))
  }
}

/** One status line from the newest complete window in ClickHouse. */
async function status(ch: Awaited<ReturnType<typeof startProcessorService>>['ch'], runId: string, started: number): Promise<string> {
  const rows = await queryRows<{ t: string; op: string; n: string; hist: Record<string, string>; hits: string; misses: string; total: string }>(ch, `
    WITH (SELECT max(window_start) FROM ${ch.database}.op_windows WHERE run_id = {runId:String}) AS newest
    SELECT op, sum(count) AS n, sumMap(hist) AS hist, sum(cache_hits) AS hits, sum(cache_misses) AS misses,
           (SELECT sum(count) FROM ${ch.database}.op_windows WHERE run_id = {runId:String}) AS total
    FROM ${ch.database}.op_windows
    WHERE run_id = {runId:String} AND window_start = newest - INTERVAL 2 SECOND
    GROUP BY op ORDER BY op`, { runId })
  const elapsed = Math.round((Date.now() - started) / 1000)
  if (rows.length === 0) return `[live] ${String(elapsed).padStart(3)}s  waiting for the first complete window...`
  const ops = rows.reduce((a, r) => a + Number(r.n), 0)
  const hits = rows.reduce((a, r) => a + Number(r.hits), 0)
  const misses = rows.reduce((a, r) => a + Number(r.misses), 0)
  const p99 = rows.map((r) => `${r.op} ${quantileFromEntries(entriesFromMap(r.hist), 0.99)}µs`).join(' ')
  return `[live] ${String(elapsed).padStart(3)}s  ${ops.toLocaleString('en-US').padStart(8)} ops/s  p99 ${p99}  cache hit ${hits + misses === 0 ? 'n/a' : ((100 * hits) / (hits + misses)).toFixed(1) + '%'}  stored ${Number(rows[0]!.total).toLocaleString('en-US')}`
}

async function waitForCount(ch: Awaited<ReturnType<typeof startProcessorService>>['ch'], runId: string, expected: number, timeoutMs: number): Promise<number> {
  const deadline = Date.now() + timeoutMs
  let n = 0
  for (;;) {
    const rows = await queryRows<{ n: string; ended: string }>(ch, `SELECT (SELECT sum(count) FROM ${ch.database}.op_windows WHERE run_id = {runId:String}) AS n, (SELECT count() FROM ${ch.database}.run_clients WHERE run_id = {runId:String} AND phase = 'end') AS ended`, { runId })
    n = Number(rows[0]?.n ?? 0)
    if ((n >= expected && Number(rows[0]?.ended ?? 0) > 0) || Date.now() > deadline) return n
    await new Promise((r) => setTimeout(r, 250))
  }
}

/** Percentiles from merged windows against exact ones over the raw events, same rank rule. */
async function accuracy(ch: Awaited<ReturnType<typeof startProcessorService>>['ch'], runId: string): Promise<void> {
  const db = ch.database
  const rows = await queryRows<{ op: string; q: number; windows: number; exact: number }>(ch, `
    SELECT w.op AS op, q, bs_quantile(q, w.h) AS windows, e.exact AS exact FROM
      (SELECT op, sumMap(hist) AS h FROM ${db}.op_windows WHERE run_id = {runId:String} GROUP BY op) AS w
    ARRAY JOIN [0.5, 0.95, 0.99, 0.999] AS q
    JOIN (SELECT op, arraySort(groupArray(latency_us)) AS s, q2 AS q, s[toUInt64(greatest(1, ceil(q2 * length(s) - 1e-7)))] AS exact
          FROM ${db}.ops ARRAY JOIN [0.5, 0.95, 0.99, 0.999] AS q2 WHERE run_id = {runId:String} GROUP BY op, q2) AS e
      ON e.op = w.op AND e.q = q
    ORDER BY op, q`, { runId })
  for (const r of rows) {
    const err = r.exact === 0 ? Math.abs(r.windows - r.exact) : Math.abs(r.windows - r.exact) / r.exact
    say(`  ${r.op.padEnd(18)} p${String(r.q * 100).padEnd(5)} windows ${String(r.windows).padStart(8)}µs  exact (raw events) ${String(r.exact).padStart(8)}µs  error ${(err * 100).toFixed(2)}%`)
  }
}
