/**
 * A real single-JVM HBase for tests (deploy/local/hbase.sh): free loopback
 * ports, its own temporary data directory, removed on stop(). An HBase still
 * running when the test process exits (a crash, a missed after hook) is
 * killed by its pid rather than left behind holding 600 MB.
 */
import { mkdtempSync, rmSync } from 'node:fs'
import net from 'node:net'
import os from 'node:os'
import path from 'node:path'
import {
  flushLocalHBase,
  startLocalHBase,
  stopLocalHBase,
  type LocalHBase,
  type LocalHBaseOptions,
} from '../../services/adapters/datastores/local-hbase.js'

/** The release the tests run unless TEST_HBASE_VERSION says otherwise (its jars come with info servers). */
export const TEST_HBASE_VERSION = process.env.TEST_HBASE_VERSION ?? '2.5.10-hadoop3'

export interface TestHBase extends LocalHBase {
  version: string
  dataDir: string
  flush(): Promise<void>
  stop(): Promise<void>
}

const running = new Map<number, string>()
process.once('exit', () => {
  for (const [pid, dir] of running) {
    try {
      process.kill(pid, 'SIGKILL')
    } catch {
      // already gone
    }
    rmSync(dir, { recursive: true, force: true })
  }
})

/** Distinct free loopback ports: taken all at once, so none is handed out twice. */
export async function freePorts(n: number): Promise<number[]> {
  const servers = await Promise.all(
    Array.from(
      { length: n },
      () =>
        new Promise<net.Server>((resolve, reject) => {
          const s = net.createServer()
          s.once('error', reject)
          s.listen(0, '127.0.0.1', () => resolve(s))
        }),
    ),
  )
  const ports = servers.map((s) => (s.address() as net.AddressInfo).port)
  await Promise.all(servers.map((s) => new Promise((r) => s.close(r))))
  return ports
}

export async function startHBase(
  opts: Partial<Pick<LocalHBaseOptions, 'version' | 'blockCacheSize' | 'handlers' | 'heap' | 'log'>> = {},
): Promise<TestHBase> {
  const [zk, master, regionServer, regionServerInfo] = (await freePorts(4)) as [number, number, number, number]
  const dataDir = mkdtempSync(path.join(os.tmpdir(), 'benchstream-hbase-'))
  const version = opts.version ?? TEST_HBASE_VERSION
  const o: LocalHBaseOptions = { ...opts, version, dataDir, ports: { zk, master, regionServer, regionServerInfo } }
  let hb: LocalHBase
  try {
    hb = await startLocalHBase(o)
  } catch (err) {
    // hbase.sh stops what it started when readiness fails; this only makes sure.
    await stopLocalHBase(o).catch(() => undefined)
    rmSync(dataDir, { recursive: true, force: true })
    throw err
  }
  running.set(hb.pid, dataDir)
  let stopped: Promise<void> | undefined
  return {
    ...hb,
    version,
    dataDir,
    flush: () => flushLocalHBase(o),
    stop: () =>
      (stopped ??= stopLocalHBase(o).finally(() => {
        running.delete(hb.pid)
        rmSync(dataDir, { recursive: true, force: true })
      })),
  }
}
