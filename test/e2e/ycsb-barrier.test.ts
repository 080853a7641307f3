/**
 * `benchstream ycsb --barrier stdin` as an experiment's agent runs it: a
 * child process with a pipe on its stdin, real YCSB 0.17.0 through the bridge
 * against a private redis-server, into a running server through real Kafka.
 *
 * - Two clients of one run, each started when ready (its ready line on
 *   stderr), both given one `start <now + 1.5 s>`: no operation before the
 *   instant, the first within 200 ms after it, the run's start skew under
 *   200 ms, both clients ended as expected (2 of 2), the group, repetition
 *   and clock offset recorded; YCSB's clock starts at the instant too (the
 *   operations span the whole maxexecutiontime).
 * - A client whose stdin closes mid-run: it and its JVM end at once (exit 75),
 *   and the run has its start record but no end record.
 *
 * Needs Java 17+, Maven (first build) and redis-server. About 30 s.
 */
import assert from 'node:assert/strict'
import { execFileSync, spawn, type ChildProcessWithoutNullStreams } from 'node:child_process'
import path from 'node:path'
import { test } from 'node:test'
import type { RunReport } from '../../schemas/run-reports-api.v1.js'
import { queryRows } from '../../services/adapters/clickhouse/client.js'
import { repoRoot } from '../../services/common/repo-root.js'
import { startServer } from '../../services/server/main.js'
import { testEnv, waitFor } from '../helpers/env.js'
import { startRedis } from '../helpers/servers.js'

const READY = 'benchstream-barrier: ready'
const SECONDS = 3
/** The bound the test holds the clients' first operations and the run's start skew to, ms. */
const SKEW_BOUND_MS = 200

interface Client {
  proc: ChildProcessWithoutNullStreams
  stderr: string[]
  ready: Promise<void>
  exited: Promise<number | null>
}

function startClient(env: Record<string, string>, args: string[]): Client {
  const proc = spawn(process.execPath, [path.join(repoRoot(), 'bin/benchstream.js'), 'ycsb', ...args], {
    env: { ...process.env, ...env },
    stdio: ['pipe', 'pipe', 'pipe'],
  })
  const stderr: string[] = []
  let buffered = ''
  let onReady: () => void = () => undefined
  const ready = new Promise<void>((r) => (onReady = r))
  proc.stderr.setEncoding('utf8').on('data', (d: string) => {
    buffered += d
    for (let nl = buffered.indexOf('\n'); nl >= 0; nl = buffered.indexOf('\n')) {
      const line = buffered.slice(0, nl)
      buffered = buffered.slice(nl + 1)
      stderr.push(line)
      if (line === READY) onReady()
    }
  })
  proc.stdout.resume()
  proc.stdin.on('error', () => undefined)
  const exited = new Promise<number | null>((r) => proc.on('close', (code) => r(code)))
  return { proc, stderr, ready, exited }
}

async function withTimeout<T>(what: string, p: Promise<T>, ms: number, c: Client[]): Promise<T> {
  let timer: NodeJS.Timeout | undefined
  try {
    return await Promise.race([
      p,
      new Promise<never>((_, reject) => {
        timer = setTimeout(
          () =>
            reject(
              new Error(
                `${what} within ${ms / 1000} s; stderr:\n${c.map((x) => x.stderr.join('\n')).join('\n----\n')}`,
              ),
            ),
          ms,
        )
      }),
    ])
  } finally {
    clearTimeout(timer)
  }
}

/** Java processes whose command line names this run: none may outlive their client. */
function javaOf(runId: string): string[] {
  return execFileSync('ps', ['-eo', 'pid,args'], { encoding: 'utf8' })
    .split('\n')
    .filter((l) => l.includes('site.ycsb.Client') && l.includes(`benchstream.runid=${runId}`))
}

test(
  'benchstream ycsb --barrier stdin: two clients start at one instant; a client whose stdin closes dies with ' +
    'its JVM and sends no end record',
  async (t) => {
    // The class path first (a first build takes a minute): the clients' start is what is timed below.
    execFileSync('bash', [path.join(repoRoot(), 'deploy/local/ycsb.sh'), 'classpath'], { stdio: 'ignore' })
    const te = testEnv({ ALERTS_ENABLED: 'false' })
    t.after(te.cleanup)
    const redis = await startRedis()
    t.after(() => redis.stop())
    const svc = await startServer(te.env, { api: true })
    t.after(() => svc.stop())
    const env = { ...te.env, BENCHSTREAM_API_URL: svc.apiUrl! }
    const runId = `ycsb-barrier-${Date.now()}`
    const ycsb = [
      '--',
      'run',
      '-db',
      'redis',
      '-p',
      'redis.host=127.0.0.1',
      '-p',
      `redis.port=${redis.port}`,
      '-P',
      'workloads/workloada',
      '-p',
      'recordcount=1000',
      '-threads',
      '2',
      '-target',
      '500',
    ]
    const own = (id: string, client: string): string[] => [
      '--run-id',
      id,
      '--client-id',
      client,
      '--barrier',
      'stdin',
      '--report-wait',
      '60',
    ]
    const clients = ['c1', 'c2'].map((c, i) =>
      startClient(env, [
        ...own(runId, c),
        '--group',
        `${runId}-g`,
        '--repetition',
        '1',
        '--expected-clients',
        '2',
        '--clock-offset-ms',
        i === 0 ? '-0.5' : '1.25',
        ...ycsb,
        '-p',
        'operationcount=2000000000',
        '-p',
        `maxexecutiontime=${SECONDS}`,
      ]),
    )
    t.after(() => clients.forEach((c) => c.proc.kill('SIGKILL')))
    await withTimeout('both clients ready', Promise.all(clients.map((c) => c.ready)), 120_000, clients)
    const atMs = Date.now() + 1500
    for (const c of clients) c.proc.stdin.write(`start ${atMs}\n`)
    const codes = await withTimeout('both clients ended', Promise.all(clients.map((c) => c.exited)), 120_000, clients)
    assert.deepEqual(codes, [0, 0], clients.map((c) => c.stderr.slice(-20).join('\n')).join('\n----\n'))

    const res = await fetch(`${svc.apiUrl}/api/v1/runs/${runId}/report`)
    assert.equal(res.status, 200)
    const report = (await res.json()) as RunReport
    const run = report.run!
    t.diagnostic(
      `start skew ${run.start_skew_ms} ms, clients ended ${run.clients_ended} of ${run.expected_clients}, ` +
        `clock offset max ${run.clock_offset_max_ms} ms, runtime ${run.runtime_ms} ms`,
    )
    assert.equal(run.clients_ended, 2)
    assert.equal(run.expected_clients, 2)
    assert.ok(run.start_skew_ms !== null && run.start_skew_ms < SKEW_BOUND_MS, `start skew ${run.start_skew_ms} ms`)
    assert.equal(run.group_id, `${runId}-g`)
    assert.equal(run.repeat, 1)
    assert.equal(run.clock_offset_max_ms, 1.25)
    assert.equal(report.completeness.counted, report.completeness.sent)
    // The first operation in ClickHouse: none before the instant, the first of each client soon after it; and the
    // operations span the run's length, so YCSB's clock (maxexecutiontime) started at the instant, not at the barrier.
    const perClient = await queryRows<{ client_id: string; first_us: number; last_us: number; first_op_us: number }>(
      svc.ch,
      `SELECT o.client_id AS client_id, toUnixTimestamp64Micro(min(o.start)) AS first_us, ` +
        `toUnixTimestamp64Micro(max(o.start)) AS last_us, any(c.first_op_us) AS first_op_us ` +
        `FROM benchstream.ops AS o INNER JOIN (SELECT client_id, toUnixTimestamp64Micro(assumeNotNull(first_op_at)) ` +
        `AS first_op_us FROM benchstream.run_clients WHERE run_id = {r:String} AND phase = 'end') AS c ` +
        `ON o.client_id = c.client_id WHERE o.run_id = {r:String} GROUP BY o.client_id ORDER BY client_id`,
      { r: runId },
    )
    assert.equal(perClient.length, 2)
    for (const c of perClient) {
      const firstMs = (Number(c.first_us) - atMs * 1000) / 1000
      const spanS = (Number(c.last_us) - Number(c.first_us)) / 1e6
      t.diagnostic(`${c.client_id}: first operation ${firstMs.toFixed(1)} ms after the instant, ${spanS.toFixed(2)} s`)
      assert.ok(firstMs >= 0 && firstMs < SKEW_BOUND_MS, `${c.client_id}: first operation at ${firstMs} ms`)
      assert.equal(Number(c.first_op_us), Number(c.first_us), "the end record's firstOpUs is its first operation")
      assert.ok(spanS > SECONDS - 0.5, `${c.client_id}: operations over ${spanS} s of a ${SECONDS} s run`)
    }

    // Stdin closed mid-run: the client and its JVM end at once, with no end record.
    const lostId = `${runId}-lost`
    const lost = startClient(env, [...own(lostId, 'c3'), ...ycsb, '-p', 'operationcount=2000000000'])
    t.after(() => lost.proc.kill('SIGKILL'))
    await withTimeout('the third client ready', lost.ready, 120_000, [lost])
    lost.proc.stdin.write(`start ${Date.now() + 200}\n`)
    await waitFor(
      'its operations stored',
      async () => ((await svc.readModel.runCounts(lostId)).total > 0 ? true : undefined),
      60_000,
    )
    assert.equal(javaOf(lostId).length, 1, 'its JVM runs')
    const closedAt = Date.now()
    lost.proc.stdin.end()
    const code = await withTimeout('the client ended', lost.exited, 10_000, [lost])
    t.diagnostic(`stdin closed: the client exited with ${code} after ${Date.now() - closedAt} ms`)
    assert.equal(code, 75, lost.stderr.slice(-10).join('\n'))
    assert.ok(lost.stderr.some((l) => l.includes('stdin closed')))
    await waitFor('its JVM gone', async () => (javaOf(lostId).length === 0 ? true : undefined), 5_000)
    // Whatever was in flight is counted; no end record ever comes.
    await new Promise((r) => setTimeout(r, 2000))
    const [rec] = await queryRows<{ starts: number; ends: number }>(
      svc.ch,
      `SELECT countIf(phase = 'start') AS starts, countIf(phase = 'end') AS ends FROM benchstream.run_clients ` +
        `WHERE run_id = {r:String}`,
      { r: lostId },
    )
    assert.deepEqual([Number(rec!.starts), Number(rec!.ends)], [1, 0])
  },
)
