/**
 * Starts and stops the local single-node broker through deploy/local/kafka.sh
 * (for the demo and the tests; production points KAFKA_BROKERS at a cluster).
 */
import { spawn } from 'node:child_process'
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

function script(action: 'start' | 'stop' | 'status', opts: LocalKafkaOptions): Promise<number> {
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
      else resolve(code ?? 1)
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
