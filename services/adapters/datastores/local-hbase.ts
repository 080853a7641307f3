/**
 * A local single-JVM HBase through deploy/local/hbase.sh (for the demo and
 * the tests; a benchmark of a real cluster points YCSB at its quorum): start,
 * flush, stop, and what YCSB and the samplers need to reach it.
 */
import { spawn } from 'node:child_process'
import { readFileSync } from 'node:fs'
import path from 'node:path'
import { repoRoot } from '../../common/repo-root.js'
import { BenchstreamError } from '../../core/errors.js'

export interface LocalHBaseOptions {
  /** Loopback ports; the master's web UI stays off (the region server's info server serves /jmx). */
  ports: { zk: number; master: number; regionServer: number; regionServerInfo: number }
  /** conf, data, logs and pid file of this HBase; default is the script's own. */
  dataDir?: string
  /** org.apache.hbase:hbase-server version. @default the script's (2.5.10-hadoop3) */
  version?: string
  /** hfile.block.cache.size, a fraction of the heap. @default the script's (0.4) */
  blockCacheSize?: string
  /** hbase.regionserver.handler.count. @default the script's (30) */
  handlers?: number
  /** JVM heap flags. @default the script's (-Xms512m -Xmx1g) */
  heap?: string
  /** Where the script's output goes. */
  log?: (line: string) => void
}

export interface LocalHBase {
  /** YCSB's -p arguments that reach this HBase with our binding. */
  ycsbProperties: string[]
  /** The region server's info server (for HBaseJmxSampler and --server-metrics). */
  infoUrl: string
  /** The HBase JVM (master, region server and ZooKeeper in one), for a profiler. */
  pid: number
}

function env(opts: LocalHBaseOptions): NodeJS.ProcessEnv {
  const e: NodeJS.ProcessEnv = {
    ...process.env,
    HBASE_ZK_PORT: String(opts.ports.zk),
    HBASE_MASTER_PORT: String(opts.ports.master),
    HBASE_RS_PORT: String(opts.ports.regionServer),
    HBASE_MASTER_INFO_PORT: '-1',
    HBASE_RS_INFO_PORT: String(opts.ports.regionServerInfo),
  }
  // Set here or not at all: a caller's shell must not pick another release or cache size.
  for (const k of ['HBASE_DATA_DIR', 'HBASE_VERSION', 'HBASE_BLOCKCACHE_SIZE', 'HBASE_HANDLERS', 'HBASE_HEAP'])
    delete e[k]
  if (opts.dataDir !== undefined) e.HBASE_DATA_DIR = opts.dataDir
  if (opts.version !== undefined) e.HBASE_VERSION = opts.version
  if (opts.blockCacheSize !== undefined) e.HBASE_BLOCKCACHE_SIZE = opts.blockCacheSize
  if (opts.handlers !== undefined) e.HBASE_HANDLERS = String(opts.handlers)
  if (opts.heap !== undefined) e.HBASE_HEAP = opts.heap
  return e
}

function script(action: 'start' | 'stop' | 'flush', opts: LocalHBaseOptions): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = spawn('bash', [path.join(repoRoot(), 'deploy', 'local', 'hbase.sh'), action], {
      env: env(opts),
      stdio: ['ignore', 'pipe', 'pipe'],
    })
    let out = ''
    const take = (d: Buffer): void => {
      out += d.toString()
    }
    child.stdout.on('data', take)
    child.stderr.on('data', take)
    child.on('error', reject)
    child.on('close', (code) => {
      for (const l of out.split('\n')) if (l.trim() !== '') opts.log?.(l)
      if (code !== 0)
        reject(
          new BenchstreamError(
            'BS_ERR_BINDING',
            `deploy/local/hbase.sh ${action} failed (exit ${code}):\n${out.slice(-4000)}`,
          ),
        )
      else resolve(out)
    })
  })
}

/** Starts HBase (jars fetched with mvn on first use), waits until ready, creates usertable. */
export async function startLocalHBase(opts: LocalHBaseOptions): Promise<LocalHBase> {
  const out = await script('start', opts)
  // hbase.sh prints "(pid N, data: DIR)" once ready, also when it was running already.
  const m = /\(pid (\d+), data: ([^)]+)\)/.exec(out)
  const pid =
    m === null ? Number(readFileSync(path.join(opts.dataDir ?? '', 'hbase.pid'), 'utf8').trim()) : Number(m[1])
  return {
    ycsbProperties: [
      '-p',
      'hbase.zookeeper.quorum=127.0.0.1',
      '-p',
      `hbase.zookeeper.property.clientPort=${opts.ports.zk}`,
    ],
    infoUrl: `http://127.0.0.1:${opts.ports.regionServerInfo}`,
    pid,
  }
}

/** Writes the table's memstore to HFiles, so that reads go through the block cache. */
export async function flushLocalHBase(opts: LocalHBaseOptions): Promise<void> {
  await script('flush', opts)
}

/** SIGTERM, SIGKILL after the script's timeout; a stopped HBase is fine. */
export async function stopLocalHBase(opts: LocalHBaseOptions): Promise<void> {
  await script('stop', opts)
}
