/**
 * The test:server tier's ClickHouse server: the stand-in test/run.mjs started with deploy/local/clickhouse.sh
 * (TEST_CLICKHOUSE_*), and more of them for tests that need their own (a cluster's replicas). Each test works in a
 * database of its own on the shared server, dropped at the end.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process'
import { randomUUID } from 'node:crypto'
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import net from 'node:net'
import os from 'node:os'
import path from 'node:path'
import type { TestContext } from 'node:test'
import { createClient, type ClickHouseClient } from '@clickhouse/client'
import { QUIET } from '../../services/adapters/clickhouse/client.js'
import { repoRoot } from '../../services/common/repo-root.js'
import { testEnv, type TestEnv } from './env.js'

const CLICKHOUSE_SH = path.join(repoRoot(), 'deploy', 'local', 'clickhouse.sh')
const BIN = path.join(repoRoot(), 'bin', 'benchstream.js')

export interface StandIn {
  url: string
  httpPort: number
  tcpPort: number
  dataDir: string
}

/** The tier's server, or a reason to skip when the file runs outside the tier. */
export function tierServer(): StandIn | string {
  const { TEST_CLICKHOUSE_HTTP_PORT: http, TEST_CLICKHOUSE_TCP_PORT: tcp, TEST_CLICKHOUSE_DATA_DIR: dir } = process.env
  if (http === undefined || tcp === undefined || dir === undefined)
    return 'needs the ClickHouse server stand-in that test/run.mjs starts (npm run test:server)'
  return { url: `http://127.0.0.1:${http}`, httpPort: Number(http), tcpPort: Number(tcp), dataDir: dir }
}

/** deploy/local/clickhouse.sh COMMAND on a stand-in; its stdout, or an error with its output. */
export function clickhouseSh(s: StandIn, command: 'start' | 'stop' | 'kill' | 'status'): string {
  const r = spawnSync('bash', [CLICKHOUSE_SH, command], {
    env: {
      ...process.env,
      CLICKHOUSE_HTTP_PORT: String(s.httpPort),
      CLICKHOUSE_TCP_PORT: String(s.tcpPort),
      CLICKHOUSE_DATA_DIR: s.dataDir,
    },
    encoding: 'utf8',
  })
  if (r.status !== 0) throw new Error(`clickhouse.sh ${command} failed (${r.status}): ${r.stderr}${r.stdout}`)
  return r.stdout.trim()
}

/** A plain client of a stand-in (not Benchstream's adapter): what the tests check the server with. */
export function rawClient(t: TestContext, s: StandIn): ClickHouseClient {
  const c = createClient({ url: s.url, log: QUIET, request_timeout: 60_000 })
  t.after(() => c.close())
  return c
}

export async function rows<T>(c: ClickHouseClient, query: string, params: Record<string, unknown> = {}): Promise<T[]> {
  const rs = await c.query({ query, format: 'JSONEachRow', query_params: params })
  return rs.json<T>()
}

/**
 * testEnv() in server mode: CLICKHOUSE_URL of the stand-in and a database of the test's own (and its `_meta`
 * companion), dropped when the test ends.
 */
export function serverTestEnv(t: TestContext, s: StandIn, overrides: Record<string, string> = {}): TestEnv {
  const database = `bs_${randomUUID().slice(0, 8)}`
  const te = testEnv({ CLICKHOUSE_URL: s.url, CLICKHOUSE_DATABASE: database, ...overrides })
  t.after(async () => {
    const c = createClient({ url: s.url, log: QUIET })
    try {
      for (const db of [`${database}_meta`, database]) await c.command({ query: `DROP DATABASE IF EXISTS ${db}` })
    } finally {
      await c.close()
    }
  })
  t.after(te.cleanup)
  return te
}

/** A TCP port free on the loopback now. */
export async function freePort(): Promise<number> {
  const srv = net.createServer()
  await new Promise<void>((resolve, reject) => srv.once('error', reject).listen(0, '127.0.0.1', resolve))
  const addr = srv.address()
  await new Promise((r) => srv.close(r))
  if (addr === null || typeof addr === 'string') throw new Error('no free port')
  return addr.port
}

/**
 * Another stand-in of the test's own, on `ports` (free ones by default) and a fresh data dir, with `configD` files
 * (name -> XML) in its config.d/; stopped and removed when the test ends.
 */
export async function startStandIn(
  t: TestContext,
  opts: { httpPort?: number; tcpPort?: number; configD?: Record<string, string> } = {},
): Promise<StandIn> {
  const httpPort = opts.httpPort ?? (await freePort())
  const tcpPort = opts.tcpPort ?? (await freePort())
  const dataDir = mkdtempSync(path.join(os.tmpdir(), 'benchstream-test-standin-'))
  mkdirSync(path.join(dataDir, 'config.d'))
  for (const [name, xml] of Object.entries(opts.configD ?? {})) writeFileSync(path.join(dataDir, 'config.d', name), xml)
  const s: StandIn = { url: `http://127.0.0.1:${httpPort}`, httpPort, tcpPort, dataDir }
  t.after(() => {
    try {
      clickhouseSh(s, 'stop')
    } finally {
      rmSync(dataDir, { recursive: true, force: true })
    }
  })
  clickhouseSh(s, 'start')
  return s
}

/** A `benchstream` command running as its own process, its output kept. */
export interface Proc {
  child: ChildProcess
  output(): string
  exited(): Promise<void>
}

export function benchstream(args: readonly string[], env: Record<string, string>): Proc {
  const child = spawn(process.execPath, [BIN, ...args], {
    env: { ...process.env, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
    cwd: repoRoot(),
  })
  let out = ''
  child.stdout?.on('data', (d: Buffer) => (out += d.toString()))
  child.stderr?.on('data', (d: Buffer) => (out += d.toString()))
  const done = new Promise<void>((r) => child.once('exit', () => r()))
  return { child, output: () => out, exited: () => done }
}

/** `benchstream server` on a free API port, once it says it runs; SIGTERMed (then waited for) when the test ends. */
export async function startServerProcess(t: TestContext, env: Record<string, string>): Promise<Proc & { api: string }> {
  const port = await freePort()
  const p = benchstream(['server'], { ...env, API_PORT: String(port), METRICS_PORT: '0' })
  t.after(async () => {
    if (p.child.exitCode === null && p.child.signalCode === null) p.child.kill('SIGTERM')
    await p.exited()
  })
  const deadline = Date.now() + 120_000
  while (!/"msg":"server running"/.test(p.output())) {
    if (p.child.exitCode !== null || p.child.signalCode !== null)
      throw new Error(`benchstream server exited during start-up:\n${p.output().slice(-3000)}`)
    if (Date.now() > deadline) throw new Error(`benchstream server did not start in 120 s:\n${p.output().slice(-3000)}`)
    await new Promise((r) => setTimeout(r, 200))
  }
  return { ...p, api: `http://127.0.0.1:${port}` }
}
