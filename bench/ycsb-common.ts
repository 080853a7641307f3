/**
 * What the benches that run real YCSB 0.17.0 beside Benchstream's driver
 * share (ycsb-parity, telemetry-cost): a private redis-server, a command run
 * under bash with the CPU time it and its children used, the figures of a
 * YCSB-format report, medians with their spread.
 */
import { spawn, type ChildProcess } from 'node:child_process'
import { rmSync } from 'node:fs'
import net from 'node:net'
import os from 'node:os'
import { repoRoot } from '../services/common/repo-root.js'
import { fmt, fmtInt, median, sleep, statCpuSeconds, tempDir } from './common.js'

export interface OpFigures {
  count: number
  p50: number
  p95: number
  p99: number
  /** Operations whose status was not OK. */
  failed: number
}

/** What a YCSB-format report says. */
export interface Report {
  throughput: number
  runtimeMs: number
  /** Measured latency per operation (READ, UPDATE, ...). */
  ops: Record<string, OpFigures>
  /** Intended latency per operation (the Intended-READ lines of measurement.interval=intended or both), by op. */
  intended: Record<string, OpFigures>
}

/** Figures of a YCSB-format report (YCSB's and Benchstream's print the same lines). */
export function parseReport(text: string): Report {
  const num = (re: RegExp): number => Number(re.exec(text)?.[1] ?? Number.NaN)
  const ops: Record<string, OpFigures> = {}
  const intended: Record<string, OpFigures> = {}
  for (const m of text.matchAll(/^\[([A-Za-z-]+)\], Operations, (\d+)$/gm)) {
    const op = m[1]!
    if (op === 'CLEANUP') continue
    const esc = op.replace(/[-]/g, '\\-')
    let failed = 0
    for (const r of text.matchAll(new RegExp(`^\\[${esc}\\], Return=([A-Z_]+), (\\d+)$`, 'gm')))
      if (r[1] !== 'OK') failed += Number(r[2])
    const figures = {
      count: Number(m[2]),
      p50: num(new RegExp(`^\\[${esc}\\], 50thPercentileLatency\\(us\\), ([\\d.]+)$`, 'm')),
      p95: num(new RegExp(`^\\[${esc}\\], 95thPercentileLatency\\(us\\), ([\\d.]+)$`, 'm')),
      p99: num(new RegExp(`^\\[${esc}\\], 99thPercentileLatency\\(us\\), ([\\d.]+)$`, 'm')),
      failed,
    }
    if (op.startsWith('Intended-')) intended[op.slice('Intended-'.length)] = figures
    else ops[op] = figures
  }
  return {
    throughput: num(/^\[OVERALL\], Throughput\(ops\/sec\), ([\d.]+)$/m),
    runtimeMs: num(/^\[OVERALL\], RunTime\(ms\), ([\d.]+)$/m),
    ops,
    intended,
  }
}

export function loadAverage(): number {
  return os.loadavg()[0]!
}

/** CPU seconds (user + system) a process has used so far. */
export function processCpuS(pid: number): number {
  return statCpuSeconds(`/proc/${pid}/stat`)
}

/**
 * Runs a command under bash and reports its output and the CPU time it and
 * its children used (bash's `times`: the second line is the children's).
 */
export function runCommand(
  cmd: string,
  args: readonly string[],
  env: NodeJS.ProcessEnv,
): Promise<{ stdout: string; stderr: string; cpuS: number }> {
  return new Promise((resolve, reject) => {
    const child = spawn('bash', ['-c', '"$@"; rc=$?; times >&2; exit $rc', 'bash', cmd, ...args], {
      cwd: repoRoot(),
      env,
      stdio: ['ignore', 'pipe', 'pipe'],
    })
    let stdout = ''
    let stderr = ''
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()))
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()))
    child.on('error', reject)
    child.on('close', (code) => {
      const lines = stderr.trimEnd().split('\n')
      const m = /^(\d+)m([\d.]+)s (\d+)m([\d.]+)s$/.exec(lines.at(-1) ?? '')
      if (code !== 0 || m === null) {
        reject(
          new Error(`${cmd} ${args.join(' ')} failed (exit ${code}):\n${stderr.slice(-4000)}\n${stdout.slice(-2000)}`),
        )
        return
      }
      resolve({
        stdout,
        stderr: lines.slice(0, -2).join('\n'),
        cpuS: Number(m[1]) * 60 + Number(m[2]) + Number(m[3]) * 60 + Number(m[4]),
      })
    })
  })
}

// ---------------------------------------------------------------- a private redis-server

export interface RedisServer {
  port: number
  pid: number
  stop(): Promise<void>
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = net.createServer()
    s.once('error', reject)
    s.listen(0, '127.0.0.1', () => {
      const port = (s.address() as net.AddressInfo).port
      s.close(() => resolve(port))
    })
  })
}

function ping(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const sock = net.connect(port, '127.0.0.1')
    sock.setTimeout(500)
    sock.once('connect', () => sock.write('PING\r\n'))
    sock.once('data', (d) => {
      sock.destroy()
      resolve(d.toString().startsWith('+PONG'))
    })
    sock.once('error', () => resolve(false))
    sock.once('timeout', () => {
      sock.destroy()
      resolve(false)
    })
  })
}

export async function startRedis(): Promise<RedisServer> {
  const port = await freePort()
  const dir = tempDir('redis')
  const child: ChildProcess = spawn(
    'redis-server',
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
    { stdio: 'ignore' },
  )
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()))
  child.once('error', () => undefined)
  const stop = async (): Promise<void> => {
    child.kill('SIGTERM')
    await Promise.race([exited, sleep(10_000)])
    rmSync(dir, { recursive: true, force: true })
  }
  for (let i = 0; i < 100; i++) {
    if (child.exitCode !== null || child.pid === undefined) break
    if (await ping(port)) return { port, pid: child.pid, stop }
    await sleep(100)
  }
  await stop()
  throw new Error(
    'redis-server did not start: install the Debian package redis-server (apt-get install -y redis-server)',
  )
}

export interface Spread {
  median: number
  min: number
  max: number
}

export function spread(xs: readonly number[]): Spread {
  return { median: median(xs), min: Math.min(...xs), max: Math.max(...xs) }
}

export function show(s: Spread, digits = 0): string {
  const f = (x: number): string => (digits === 0 ? fmtInt(x) : fmt(x, digits))
  return `${f(s.median)} [${f(s.min)}..${f(s.max)}]`
}
