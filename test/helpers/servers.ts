/**
 * Real datastore servers for tests: Redis and PostgreSQL from their Debian
 * packages, each on a free loopback port with a temporary data directory,
 * removed on stop(). Nothing depends on the packages' own system services
 * (the postinst may or may not have started them; these never touch them).
 */
import { spawn, type ChildProcess } from 'node:child_process'
import { chownSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs'
import net from 'node:net'
import os from 'node:os'
import path from 'node:path'
import pg from 'pg'

export interface TestServer {
  host: string
  port: number
  /** redis://127.0.0.1:port or postgres://postgres@127.0.0.1:port/postgres */
  url: string
  stop(): Promise<void>
}

/** How long a server may take to accept connections. */
const START_TIMEOUT_MS = 30_000
/** How long a server may take to shut down before it is killed. */
const STOP_TIMEOUT_MS = 10_000
/** Attempts with a fresh port when another process takes ours between probe and bind. */
const PORT_ATTEMPTS = 3

// Servers still running when the test process exits (a crash, a missed
// after hook) are killed rather than left behind.
const running = new Set<ChildProcess>()
const tempDirs = new Set<string>()
const killAll = (): void => {
  for (const p of running) p.kill('SIGKILL')
  for (const d of tempDirs) rmSync(d, { recursive: true, force: true })
}
process.once('exit', killAll)
// A signal skips 'exit': kill the servers, then die of the same signal.
for (const sig of ['SIGINT', 'SIGTERM'] as const) {
  process.once(sig, () => {
    killAll()
    process.kill(process.pid, sig)
  })
}

export async function startRedis(): Promise<TestServer> {
  const bin = findOnPath('redis-server')
  if (bin === undefined)
    throw new Error(
      'redis-server not found on PATH: install the Debian package redis-server (apt-get install -y redis-server)',
    )
  return withFreePort(async (port) => {
    const dir = tempDir('benchstream-redis-')
    const proc = launch(
      bin,
      [
        '--port',
        String(port),
        '--bind',
        '127.0.0.1',
        '--save',
        '',
        '--appendonly',
        'no',
        '--dir',
        dir,
        '--daemonize',
        'no',
        '--logfile',
        '',
      ],
      {},
    )
    try {
      await waitUntil(`redis-server on port ${port}`, proc, () => redisPing(port))
    } catch (err) {
      await terminate(proc.child, 'SIGKILL')
      removeDir(dir)
      throw err
    }
    return {
      host: '127.0.0.1',
      port,
      url: `redis://127.0.0.1:${port}`,
      stop: once(async () => {
        await terminate(proc.child, 'SIGTERM')
        removeDir(dir)
      }),
    }
  })
}

export async function startPostgres(): Promise<TestServer> {
  const bin = postgresBinDir()
  // PostgreSQL refuses to run as root; tests usually do. Run it as the
  // postgres user the Debian package creates, in a directory it owns.
  const asUser = process.getuid?.() === 0 ? systemUser('postgres') : undefined
  const base = tempDir('benchstream-pg-')
  const data = path.join(base, 'data')
  const sockets = path.join(base, 'sock')
  mkdirSync(sockets)
  if (asUser !== undefined) {
    chownSync(base, asUser.uid, asUser.gid)
    chownSync(sockets, asUser.uid, asUser.gid)
  }
  const env = { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: base, LC_ALL: 'C', LANG: 'C' }
  const opts = { cwd: base, env, ...asUser }
  try {
    // Trust auth on loopback only; C locale so key order is byte order;
    // --no-sync because the data is thrown away.
    const init = launch(
      path.join(bin, 'initdb'),
      ['-D', data, '-A', 'trust', '-U', 'postgres', '-E', 'UTF8', '--locale=C', '--no-sync'],
      opts,
    )
    const code = await new Promise<number | null>((resolve) => init.child.once('exit', resolve))
    if (code !== 0) throw new Error(`initdb failed (exit ${code}): ${init.output()}`)
  } catch (err) {
    removeDir(base)
    throw err
  }
  try {
    return await withFreePort(async (port) => {
      const proc = launch(
        path.join(bin, 'postgres'),
        [
          '-D',
          data,
          '-p',
          String(port),
          '-k',
          sockets,
          '-c',
          'listen_addresses=127.0.0.1',
          // Durability is not under test; speed on two shared cores is.
          '-c',
          'fsync=off',
          '-c',
          'synchronous_commit=off',
          '-c',
          'full_page_writes=off',
          '-c',
          'max_connections=100',
        ],
        opts,
      )
      const url = `postgres://postgres@127.0.0.1:${port}/postgres`
      try {
        await waitUntil(`postgres on port ${port}`, proc, () => postgresReady(url))
      } catch (err) {
        await terminate(proc.child, 'SIGKILL')
        throw err
      }
      return {
        host: '127.0.0.1',
        port,
        url,
        stop: once(async () => {
          // SIGINT is PostgreSQL's fast shutdown: roll back, disconnect, exit.
          await terminate(proc.child, 'SIGINT')
          removeDir(base)
        }),
      }
    })
  } catch (err) {
    removeDir(base)
    throw err
  }
}

/** The newest /usr/lib/postgresql/<version>/bin with initdb and postgres, else initdb on PATH. */
function postgresBinDir(): string {
  const root = '/usr/lib/postgresql'
  const versions = existsSync(root)
    ? readdirSync(root).filter(
        (v) => existsSync(path.join(root, v, 'bin', 'initdb')) && existsSync(path.join(root, v, 'bin', 'postgres')),
      )
    : []
  versions.sort((a, b) => Number(b) - Number(a))
  if (versions[0] !== undefined) return path.join(root, versions[0], 'bin')
  const initdb = findOnPath('initdb')
  if (initdb !== undefined && existsSync(path.join(path.dirname(initdb), 'postgres'))) return path.dirname(initdb)
  throw new Error(
    'PostgreSQL server binaries (initdb, postgres) not found under /usr/lib/postgresql/<version>/bin ' +
      'or on PATH: install the Debian package postgresql (apt-get install -y postgresql)',
  )
}

function systemUser(name: string): { uid: number; gid: number } {
  const line = readFileSync('/etc/passwd', 'utf8')
    .split('\n')
    .find((l) => l.startsWith(`${name}:`))
  const [, , uid, gid] = line?.split(':') ?? []
  if (uid === undefined || gid === undefined)
    throw new Error(
      `tests run as root and PostgreSQL refuses root, but there is no '${name}' user to run it as: ` +
        `install the Debian package postgresql, which creates it`,
    )
  return { uid: Number(uid), gid: Number(gid) }
}

function tempDir(prefix: string): string {
  const d = mkdtempSync(path.join(os.tmpdir(), prefix))
  tempDirs.add(d)
  return d
}

function removeDir(d: string): void {
  rmSync(d, { recursive: true, force: true })
  tempDirs.delete(d)
}

function findOnPath(name: string): string | undefined {
  const dirs = [...(process.env.PATH ?? '').split(':'), '/usr/bin', '/usr/sbin', '/usr/local/bin']
  return dirs
    .filter((d) => path.isAbsolute(d))
    .map((d) => path.join(d, name))
    .find((p) => existsSync(p))
}

interface Launched {
  child: ChildProcess
  /** Last output of the process, for error messages. */
  output(): string
}

function launch(
  bin: string,
  args: string[],
  opts: { cwd?: string; env?: NodeJS.ProcessEnv; uid?: number; gid?: number },
): Launched {
  const child = spawn(bin, args, { ...opts, stdio: ['ignore', 'pipe', 'pipe'] })
  running.add(child)
  child.once('exit', () => running.delete(child))
  let out = ''
  const keep = (b: Buffer): void => {
    out = (out + b.toString('utf8')).slice(-4000)
  }
  child.stdout?.on('data', keep)
  child.stderr?.on('data', keep)
  child.once('error', (err) => keep(Buffer.from(`spawn failed: ${err.message}\n`)))
  return { child, output: () => out.trim() }
}

async function waitUntil(what: string, proc: Launched, ready: () => Promise<boolean>): Promise<void> {
  const deadline = Date.now() + START_TIMEOUT_MS
  for (;;) {
    if (proc.child.exitCode !== null || proc.child.signalCode !== null)
      throw new Error(
        `${what} exited during start-up (${proc.child.exitCode ?? proc.child.signalCode}): ${proc.output()}`,
      )
    if (await ready()) return
    if (Date.now() > deadline)
      throw new Error(`${what} did not accept connections within ${START_TIMEOUT_MS} ms: ${proc.output()}`)
    await new Promise((r) => setTimeout(r, 100))
  }
}

/** Sends PING in the inline protocol and expects +PONG. */
function redisPing(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const sock = net.connect({ host: '127.0.0.1', port })
    let got = ''
    const done = (ok: boolean): void => {
      sock.destroy()
      resolve(ok)
    }
    sock.setTimeout(1000, () => done(false))
    sock.once('error', () => done(false))
    sock.once('connect', () => sock.write('PING\r\n'))
    sock.on('data', (b) => {
      got += b.toString('utf8')
      if (got.includes('\r\n')) done(got.startsWith('+PONG'))
    })
  })
}

async function postgresReady(url: string): Promise<boolean> {
  const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: 1000 })
  client.on('error', () => undefined)
  try {
    await client.connect()
    await client.query('SELECT 1')
    return true
  } catch {
    return false
  } finally {
    await client.end().catch(() => undefined)
  }
}

async function freePort(): Promise<number> {
  const srv = net.createServer()
  await new Promise<void>((resolve, reject) => {
    srv.once('error', reject)
    srv.listen(0, '127.0.0.1', resolve)
  })
  const addr = srv.address()
  await new Promise((r) => srv.close(r))
  if (addr === null || typeof addr === 'string') throw new Error('could not find a free port')
  return addr.port
}

async function withFreePort<T>(start: (port: number) => Promise<T>): Promise<T> {
  let last: unknown
  for (let i = 0; i < PORT_ATTEMPTS; i++) {
    try {
      return await start(await freePort())
    } catch (err) {
      last = err
    }
  }
  throw last
}

async function terminate(child: ChildProcess, signal: NodeJS.Signals): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()))
  child.kill(signal)
  const timer = setTimeout(() => child.kill('SIGKILL'), STOP_TIMEOUT_MS)
  await exited
  clearTimeout(timer)
}

function once(fn: () => Promise<void>): () => Promise<void> {
  let p: Promise<void> | undefined
  return () => (p ??= fn())
}
