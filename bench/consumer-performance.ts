/**
 * Kafka's own consumer, org.apache.kafka.tools.ConsumerPerformance, over a whole topic: the ceiling the broker and the
 * network set, which bench/processor-throughput compares a processor with.
 */
import { spawn } from 'node:child_process'
import { readFileSync, rmSync, writeFileSync } from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { repoRoot } from '../services/common/repo-root.js'
import { BenchstreamError } from '../services/core/errors.js'
import { shortId, tempDir } from './common.js'

export interface ConsumerPerf {
  mbPerS: number
  msgsPerS: number
  fetchMbPerS: number
  fetchMsgsPerS: number
  seconds: number
}

function kafkaLibsDir(): string {
  if (process.env.KAFKA_LIBS_DIR !== undefined && process.env.KAFKA_LIBS_DIR !== '') return process.env.KAFKA_LIBS_DIR
  // The same version deploy/local/kafka.sh starts: KAFKA_VERSION when set, else the pom's default.
  let version =
    process.env.KAFKA_VERSION !== undefined && process.env.KAFKA_VERSION !== '' ? process.env.KAFKA_VERSION : undefined
  if (version === undefined) {
    const pom = readFileSync(path.join(repoRoot(), 'deploy', 'local', 'kafka-pom.xml'), 'utf8')
    version = /<kafka\.version>([^<]+)<\/kafka\.version>/.exec(pom)?.[1]
  }
  if (version === undefined)
    throw new BenchstreamError('BS_ERR_CONFIG', 'cannot read <kafka.version> from deploy/local/kafka-pom.xml')
  const cache =
    process.env.XDG_CACHE_HOME !== undefined && process.env.XDG_CACHE_HOME !== ''
      ? process.env.XDG_CACHE_HOME
      : path.join(os.homedir(), '.cache')
  return path.join(cache, 'benchstream', `kafka-${version}`, 'libs')
}

/** Runs Kafka's ConsumerPerformance over the whole topic and parses its summary line. */
export async function consumerPerformance(brokers: string, topic: string, messages: number): Promise<ConsumerPerf> {
  const dir = tempDir('consumer-perf')
  // Kafka 3.x logs through log4j 1 (reload4j), 4.x through log4j2: one config for each, each line ignores the other's
  // flag.
  const log4j = path.join(dir, 'log4j.properties')
  writeFileSync(
    log4j,
    [
      'log4j.rootLogger=ERROR, stderr',
      'log4j.appender.stderr=org.apache.log4j.ConsoleAppender',
      'log4j.appender.stderr.Target=System.err',
      'log4j.appender.stderr.layout=org.apache.log4j.PatternLayout',
      'log4j.appender.stderr.layout.ConversionPattern=%p %m%n',
      '',
    ].join('\n'),
  )
  const log4j2 = path.join(dir, 'log4j2.properties')
  writeFileSync(
    log4j2,
    'status = warn\nappender.stderr.type = Console\nappender.stderr.name = STDERR\nappender.stderr.target ' +
      '= SYSTEM_ERR\nappender.stderr.layout.type = PatternLayout\nappender.stderr.layout.pattern = ' +
      '%p %m%n\nrootLogger.level = ERROR\nrootLogger.appenderRef.stderr.ref = STDERR\n',
  )
  const args = [
    `-Dlog4j.configuration=file:${log4j}`,
    `-Dlog4j2.configurationFile=${log4j2}`,
    '-cp',
    `${kafkaLibsDir()}/*`,
    'org.apache.kafka.tools.ConsumerPerformance',
    '--bootstrap-server',
    brokers,
    '--topic',
    topic,
    '--messages',
    String(messages),
    '--group',
    `bench-consumer-perf-${shortId()}`,
    '--timeout',
    '30000',
  ]
  const out = await new Promise<string>((resolve, reject) => {
    const child = spawn('java', args, { stdio: ['ignore', 'pipe', 'pipe'] })
    let stdout = ''
    let stderr = ''
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()))
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()))
    child.on('error', reject)
    child.on('close', (code) =>
      code === 0
        ? resolve(stdout)
        : reject(new Error(`ConsumerPerformance exited with ${code}:\n${stdout}\n${stderr}`)),
    )
  }).finally(() => rmSync(dir, { recursive: true, force: true }))
  // A header line of names and one line of values, both comma-separated.
  const lines = out
    .split('\n')
    .map((l) => l.trim())
    .filter((l) => l !== '')
  const at = lines.findIndex((l) => l.startsWith('start.time'))
  if (at === -1 || lines[at + 1] === undefined)
    throw new Error(`cannot find ConsumerPerformance's summary in its output:\n${out}`)
  const names = lines[at]!.split(',').map((s) => s.trim())
  const values = lines[at + 1]!.split(',').map((s) => s.trim())
  const get = (name: string): number => {
    const i = names.indexOf(name)
    const v = Number(values[i])
    if (i === -1 || !Number.isFinite(v)) throw new Error(`ConsumerPerformance printed no number for ${name}:\n${out}`)
    return v
  }
  const consumed = get('data.consumed.in.nMsg')
  if (consumed !== messages)
    throw new Error(`ConsumerPerformance read ${consumed} messages; the topic holds ${messages}`)
  return {
    mbPerS: get('MB.sec'),
    msgsPerS: get('nMsg.sec'),
    fetchMbPerS: get('fetch.MB.sec'),
    fetchMsgsPerS: get('fetch.nMsg.sec'),
    seconds: get('fetch.time.ms') / 1000,
  }
}
