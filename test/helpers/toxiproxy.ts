/**
 * Latency and jitter on the distributed tier's links: this kernel has no
 * netem, so a Toxiproxy server (deploy/local/distributed-deps.sh builds it)
 * relays each link's TCP connections and delays them, half the round trip
 * each way with jitter. One server for every link, its API on the loopback.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process'
import { existsSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { repoRoot } from '../../services/common/repo-root.js'
import { waitFor } from './env.js'

const DEPS_SH = path.join(repoRoot(), 'deploy', 'local', 'distributed-deps.sh')

export interface Link {
  /** Round trip added, ms (half each way), and the jitter of each way, ms. */
  rttMs: number
  jitterMs: number
}

export class Toxiproxy {
  private constructor(
    private readonly proc: ChildProcess,
    private readonly api: string,
  ) {}

  /**
   * The server, its API on 127.0.0.1:apiPort; stopped when the process exits. One that a test killed outright left
   * behind (its pid file says so, and its command line is Toxiproxy's) is killed first.
   */
  static async start(apiPort: number): Promise<Toxiproxy> {
    const bin = spawnSync('bash', [DEPS_SH, 'toxiproxy'], { encoding: 'utf8' }).stdout.trim()
    const pidFile = path.join(os.tmpdir(), `benchstream-toxiproxy-${apiPort}.pid`)
    if (existsSync(pidFile)) {
      const pid = Number(readFileSync(pidFile, 'utf8'))
      const cmd =
        Number.isInteger(pid) && existsSync(`/proc/${pid}/cmdline`) ? readFileSync(`/proc/${pid}/cmdline`) : ''
      if (cmd.toString().includes('toxiproxy-server')) process.kill(pid, 'SIGKILL')
      rmSync(pidFile, { force: true })
    }
    const proc = spawn(bin, ['-host', '127.0.0.1', '-port', String(apiPort)], { stdio: ['ignore', 'ignore', 'pipe'] })
    writeFileSync(pidFile, String(proc.pid))
    let err = ''
    proc.stderr.on('data', (d: Buffer) => (err = (err + d.toString()).slice(-4000)))
    process.once('exit', () => proc.kill('SIGKILL'))
    const t = new Toxiproxy(proc, `http://127.0.0.1:${apiPort}`)
    await waitFor(
      `toxiproxy on 127.0.0.1:${apiPort}`,
      async () => {
        if (proc.exitCode !== null) throw new Error(`toxiproxy exited: ${err}`)
        return (await fetch(`${t.api}/version`)).ok ? true : undefined
      },
      20_000,
      100,
    )
    return t
  }

  private async call(method: string, url: string, body: unknown): Promise<void> {
    const r = await fetch(`${this.api}${url}`, { method, body: JSON.stringify(body) })
    if (!r.ok) throw new Error(`toxiproxy ${method} ${url}: ${r.status} ${await r.text()}`)
  }

  /** A relay from listen (host:port) to upstream (host:port) with the link's latency, named name. */
  async proxy(name: string, listen: string, upstream: string, link: Link): Promise<void> {
    await this.call('POST', '/proxies', { name, listen, upstream, enabled: true })
    const up = Math.ceil(link.rttMs / 2)
    for (const [stream, latency] of [
      ['upstream', up],
      ['downstream', link.rttMs - up],
    ] as const)
      await this.call('POST', `/proxies/${name}/toxics`, {
        name: `latency-${stream}`,
        type: 'latency',
        stream,
        toxicity: 1,
        attributes: { latency, jitter: link.jitterMs },
      })
  }

  stop(): void {
    this.proc.kill('SIGTERM')
    rmSync(path.join(os.tmpdir(), `benchstream-toxiproxy-${new URL(this.api).port}.pid`), { force: true })
  }
}
