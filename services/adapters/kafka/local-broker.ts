/**
 * Starts and stops the local single-node broker through deploy/local/kafka.sh
 * (for the demo, `benchstream server` without KAFKA_BROKERS, the benchmarks and
 * the tests; production points KAFKA_BROKERS at a cluster).
 */
import { spawn } from 'node:child_process'
import net from 'node:net'
import path from 'node:path'
import { repoRoot } from '../../common/repo-root.js'
import { BenchstreamError } from '../../core/errors.js'

export interface LocalKafkaOptions {
  port: number
  /** Data directory for this broker; default is the script's own. */
  dataDir?: string
  /** Where the script's output goes. */
  log?: (line: string) => void
}

function script(action: 'start' | 'stop' | 'status', opts: LocalKafkaOptions): Promise<{ code: number; out: string }> {
  // One node, whatever the caller's shell says (KAFKA_BROKERS_COUNT would start a cluster behind one address).
  const env: NodeJS.ProcessEnv = { ...process.env, KAFKA_PORT: String(opts.port), KAFKA_BROKERS_COUNT: '1' }
  if (opts.dataDir !== undefined) env.KAFKA_DATA_DIR = opts.dataDir
  return new Promise((resolve, reject) => {
    const child = spawn('bash', [path.join(repoRoot(), 'deploy', 'local', 'kafka.sh'), action], {
      env,
      stdio: ['ignore', 'pipe', 'pipe'],
    })
    let out = ''
    child.stdout.on('data', (d: Buffer) => (out += d.toString()))
    child.stderr.on('data', (d: Buffer) => (out += d.toString()))
    child.on('error', reject)
    child.on('close', (code) => {
      for (const l of out.split('\n')) if (l.trim() !== '') opts.log?.(l)
      if (code !== 0 && action !== 'status')
        reject(new BenchstreamError('BS_ERR_KAFKA', `deploy/local/kafka.sh ${action} failed (exit ${code}):\n${out}`))
      else resolve({ code: code ?? 1, out })
    })
  })
}

export async function startLocalKafka(opts: LocalKafkaOptions): Promise<string> {
  await script('start', opts)
  return `127.0.0.1:${opts.port}`
}

export async function stopLocalKafka(opts: LocalKafkaOptions): Promise<void> {
  await script('stop', opts)
}

/** The local broker a command uses: one it started (and stops), or one that was there already (left running). */
export interface LocalKafka {
  /** 127.0.0.1:port */
  brokers: string
  /** True when this process started it: stop() stops it. */
  startedHere: boolean
  /**
   * What kafka.sh said: `kafka 4.4.0 ready on 127.0.0.1:9092 (data: DIR)`, `node 1 4.4.0 running on ... (pid N,
   * data: DIR)` for its broker already running, or that what answers the port is none of its brokers.
   */
  said: string
  /** Stops the broker if this process started it; a broker that was there already is left running. */
  stop(): Promise<void>
}

/** Whether something accepts connections on 127.0.0.1:port within timeoutMs. */
export function portAnswers(port: number, timeoutMs = 1000): Promise<boolean> {
  return new Promise((resolve) => {
    const s = net.connect({ host: '127.0.0.1', port })
    const done = (ok: boolean): void => {
      s.destroy()
      resolve(ok)
    }
    s.setTimeout(timeoutMs, () => done(false))
    s.once('connect', () => done(true))
    s.once('error', () => done(false))
  })
}

/**
 * The local broker on 127.0.0.1:port: whatever already answers there is used as it is (a broker of `npm run
 * kafka:start`, another server's, one in Docker) and never stopped by us; otherwise kafka.sh starts one (fetching the
 * jars with Maven on first use) and this process owns it, unless kafka.sh found one of its own brokers already
 * starting there (another command was quicker).
 */
export async function useLocalKafka(opts: LocalKafkaOptions): Promise<LocalKafka> {
  const brokers = `127.0.0.1:${opts.port}`
  if (await portAnswers(opts.port)) {
    // kafka.sh's own broker of this data directory says so (version, pid, data); anything else is named by its port.
    const status = await script('status', { ...opts, log: () => undefined })
    const running = status.code === 0 ? status.out.split('\n').find((l) => / running on /.test(l)) : undefined
    return {
      brokers,
      startedHere: false,
      said: running ?? `not a broker of deploy/local/kafka.sh in ${opts.dataDir ?? 'its default data directory'}`,
      stop: async () => undefined,
    }
  }
  const { out } = await script('start', opts)
  // kafka.sh start is idempotent: a broker of the same data directory already running (or starting) is waited for
  // and reported "already running" / "not answering yet", not started again.
  const startedHere = !/already running|is not answering yet/.test(out)
  const said =
    out
      .split('\n')
      .filter((l) => /ready on/.test(l))
      .at(-1) ?? out.trim().split('\n').at(-1)!
  let stopping: Promise<void> | undefined
  return {
    brokers,
    startedHere,
    said,
    stop: () => (startedHere ? (stopping ??= stopLocalKafka(opts)) : Promise.resolve()),
  }
}
