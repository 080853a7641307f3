/**
 * Hosts on a private network for the distributed tier: network namespaces on
 * a bridge, made and changed by deploy/local/netns.sh (one place for the
 * commands, usable by hand too). Every name starts with the prefix, so a
 * test removes whatever a test before it left behind before it starts, and
 * again when it ends, even when it dies (process exit hook).
 */
import { spawnSync } from 'node:child_process'
import path from 'node:path'
import { repoRoot } from '../../services/common/repo-root.js'

const NETNS_SH = path.join(repoRoot(), 'deploy', 'local', 'netns.sh')

export class Network {
  readonly gateway: string
  private readonly hosts = new Map<string, number>()

  constructor(
    /** NETNS_PREFIX: 2-6 lower-case letters or digits. */
    readonly prefix: string,
    /** First three octets of a private /24. */
    readonly subnet: string,
  ) {
    this.gateway = `${subnet}.1`
  }

  private sh(...args: string[]): string {
    const r = spawnSync('bash', [NETNS_SH, ...args], {
      env: { ...process.env, NETNS_PREFIX: this.prefix, NETNS_SUBNET: this.subnet },
      encoding: 'utf8',
      timeout: 60_000,
    })
    if (r.status !== 0) throw new Error(`netns.sh ${args.join(' ')} failed (${r.status}): ${r.stderr}${r.stdout}`)
    return r.stdout.trim()
  }

  /** The bridge and these hosts (name -> last octet), after removing whatever had the prefix. */
  up(hosts: Record<string, number>): void {
    this.sh('up', ...Object.entries(hosts).map(([n, h]) => `${n}=${h}`))
    for (const [n, h] of Object.entries(hosts)) this.hosts.set(n, h)
    process.once('exit', () => this.down())
  }

  down(): void {
    try {
      this.sh('down')
    } catch (err) {
      process.stderr.write(`# could not remove the test network ${this.prefix}: ${(err as Error).message}\n`)
    }
  }

  addr(host: string): string {
    const h = this.hosts.get(host)
    if (h === undefined) throw new Error(`no host ${host} on the test network`)
    return `${this.subnet}.${h}`
  }

  ns(host: string): string {
    this.addr(host)
    return `${this.prefix}-${host}`
  }

  /** The host's link drops everything, both ways (a partition: its processes live on). */
  cut(host: string): void {
    this.sh('cut', host)
  }

  heal(host: string): void {
    this.sh('heal', host)
  }

  /** The host's traffic with these addresses is dropped, both ways; the rest goes on. */
  block(host: string, addrs: readonly string[]): void {
    this.sh('block', host, ...addrs)
  }

  unblock(host: string, addrs: readonly string[]): void {
    this.sh('unblock', host, ...addrs)
  }

  /** The host's TCP connections to addr:port go to to:port instead (through a latency proxy). */
  steer(host: string, from: string, to: string): void {
    this.sh('steer', host, from, to)
  }

  /** argv that runs a command in the host's namespace (ip netns exec keeps the pid: it execs). */
  exec(host: string, argv: readonly string[]): string[] {
    return ['ip', 'netns', 'exec', this.ns(host), ...argv]
  }
}
