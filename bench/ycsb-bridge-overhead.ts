/**
 * bench/ycsb-bridge-overhead (issue 10): what the YCSB bridge costs YCSB.
 *
 * Real YCSB 0.17.0 (deploy/local/ycsb.sh's class path) runs workload A
 * against one private redis-server, alone (`-db io.benchstream.ycsb.redis.RedisClient`)
 * and with the bridge in front of the same binding sending every event to a
 * Kafka broker (`-db io.benchstream.ycsb.BenchstreamDB -p benchstream.db=...`),
 * alternating alone/bridge and bridge/alone over rounds so drift and other
 * load hit both alike. YCSB's own [OVERALL] Throughput is the figure (its
 * clock leaves out the JVM start); medians, per-round ratios and their
 * spread, and the machine's load average around each run. Beside YCSB's JVM
 * CPU per operation, the CPU the broker and Redis used over the same run: on
 * one machine all three share the cores, so a broker that works for the
 * bridge's events takes CPU from YCSB and Redis; in a real deployment it runs
 * elsewhere. The bridge's own cost is the JVM's part.
 *
 * Target: throughput with the bridge >= 98% of YCSB alone.
 */
import { execFileSync, spawn, type ChildProcess } from 'node:child_process'
import { mkdtempSync, rmSync } from 'node:fs'
import net from 'node:net'
import os from 'node:os'
import path from 'node:path'
import { repoRoot } from '../services/common/repo-root.js'
import {
  createTopic,
  deleteTopics,
  fmt,
  fmtInt,
  median,
  processCpuMs,
  progress,
  runMain,
  shortId,
  sleep,
  withBroker,
  type Broker,
} from './common.js'
import { KAFKA_FLAGS, parseFlags } from './flags.js'

const BENCH = 'ycsb-bridge-overhead'
const TARGET_RATIO = 0.98
const REDIS_CLASS = 'io.benchstream.ycsb.redis.RedisClient'
const BRIDGE_CLASS = 'io.benchstream.ycsb.BenchstreamDB'
const MODES = ['alone', 'bridge', 'bridge-noemit'] as const
type Mode = (typeof MODES)[number]

const FLAGS = {
  threads: { kind: 'int', default: 4, min: 1, max: 1024, help: 'YCSB client threads' },
  ops: {
    kind: 'int',
    default: 100_000,
    min: 1000,
    max: 1_000_000_000,
    help: 'operations per measurement (operationcount)',
  },
  rounds: {
    kind: 'int',
    default: 5,
    min: 1,
    max: 100,
    help: 'rounds; each measures every mode once, the order alternating',
  },
  recordcount: { kind: 'int', default: 10_000, min: 100, max: 100_000_000, help: 'records loaded into Redis' },
  'redis-port': {
    kind: 'int',
    default: 16399,
    min: 1024,
    max: 65535,
    help: 'port of the private redis-server this bench starts',
  },
  modes: {
    kind: 'choices',
    default: ['alone', 'bridge'],
    allowed: MODES,
    help:
      'alone = YCSB with the Redis binding; bridge = the bridge in front of it, sending to Kafka; ' +
      'bridge-noemit = the bridge timing and encoding every operation, sending nothing (benchstream.enabled=false)',
  },
  ...KAFKA_FLAGS,
} as const

interface Run {
  mode: Mode
  opsPerS: number
  runtimeMs: number
  readP99Us: number
  /** The JVM's CPU time per operation, µs (start and exit included). */
  cpuUsPerOp: number
  /**
   * The broker's and Redis's CPU time over the run (JVM start to exit), per operation, µs; undefined when unreadable.
   */
  brokerCpuUsPerOp: number | undefined
  redisCpuUsPerOp: number | undefined
  /** Load average (1 min) just before and after the run. */
  loadBefore: number
  loadAfter: number
  /** The bridge's summary line, when it ran. */
  bridge: string | undefined
}

async function startRedis(port: number): Promise<{ proc: ChildProcess; dir: string }> {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'benchstream-bench-redis-'))
  const proc = spawn(
    'redis-server',
    ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', '--dir', dir],
    { stdio: 'ignore' },
  )
  for (let i = 0; i < 100; i++) {
    const ok = await new Promise<boolean>((resolve) => {
      const s = net.connect(port, '127.0.0.1', () => s.end(() => resolve(true)))
      s.on('error', () => resolve(false))
    })
    if (ok) return { proc, dir }
    await sleep(100)
  }
  proc.kill('SIGKILL')
  throw new Error(`redis-server did not start on port ${port}`)
}

/**
 * Runs YCSB to the end; its output, and the CPU time (user + system) the JVM
 * used, from bash's `times` (children's totals), which other load on the
 * machine does not move the way it moves throughput. It includes the JVM's
 * start and exit, the same for every mode but for the bridge's extra classes.
 */
function ycsb(cp: string, args: string[]): Promise<{ stdout: string; stderr: string; cpuS: number }> {
  return new Promise((resolve, reject) => {
    const c = spawn(
      'bash',
      ['-c', 'java "$@"; rc=$?; times >&2; exit $rc', 'bash', '-Xmx1g', '-cp', cp, 'site.ycsb.Client', ...args],
      { cwd: repoRoot(), stdio: ['ignore', 'pipe', 'pipe'] },
    )
    let stdout = ''
    let stderr = ''
    c.stdout.on('data', (d: Buffer) => (stdout += d.toString()))
    c.stderr.on('data', (d: Buffer) => (stderr = (stderr + d.toString()).slice(-20_000)))
    c.on('close', (code) => {
      if (code !== 0) return reject(new Error(`YCSB exited ${code}: ${stderr.slice(-2000)}`))
      // The last line of `times` is the children's: "XmY.YYYs XmY.YYYs" (user, system).
      const t = /(\d+)m([\d.]+)s (\d+)m([\d.]+)s\s*$/.exec(stderr)
      if (t === null) return reject(new Error('no CPU times from bash'))
      resolve({ stdout, stderr, cpuS: Number(t[1]) * 60 + Number(t[2]) + Number(t[3]) * 60 + Number(t[4]) })
    })
  })
}

/** µs per operation for a line, or "n/a" when the process's CPU could not be read. */
function us(x: number | undefined): string {
  return x === undefined ? 'n/a' : `${fmt(x, 2)} µs`
}

function medianOf(xs: ReadonlyArray<number | undefined>): number | undefined {
  return xs.some((x) => x === undefined) ? undefined : median(xs as number[])
}

/** a + b, NaN when either is unknown. */
function sum(a: number | undefined, b: number | undefined): number {
  return a === undefined || b === undefined ? Number.NaN : a + b
}

function figure(stdout: string, metric: string, measurement: string): number {
  const m = new RegExp(`^\\[${metric}\\], ${measurement.replace(/[()/]/g, '\\$&')}, ([\\d.]+)$`, 'm').exec(stdout)
  if (m === null) throw new Error(`YCSB's report has no [${metric}], ${measurement}`)
  return Number(m[1])
}

async function main(): Promise<void> {
  const f = parseFlags(
    BENCH,
    'YCSB 0.17.0 throughput against a private Redis alone vs with the Benchstream bridge (events to Kafka).',
    process.argv.slice(2),
    process.env,
    FLAGS,
  )
  const modes = f.modes as Mode[]
  progress(BENCH, 'class path: deploy/local/ycsb.sh classpath (builds services/ycsb on first use)')
  const cp = execFileSync('bash', [path.join(repoRoot(), 'deploy', 'local', 'ycsb.sh'), 'classpath'], {
    encoding: 'utf8',
    stdio: ['ignore', 'pipe', 'inherit'],
  }).trim()
  const redis = await startRedis(f['redis-port'])
  const redisVersion = execFileSync('redis-server', ['--version'], { encoding: 'utf8' }).trim()
  try {
    await withBroker(BENCH, f['kafka-port'], async (b: Broker) => {
      const id = shortId()
      const topic = `bench-ycsb-bridge-${id}`
      await createTopic(b.kafka, topic, 4)
      const common = [
        '-P',
        'workloads/workloada',
        '-p',
        `recordcount=${f.recordcount}`,
        '-p',
        'redis.host=127.0.0.1',
        '-p',
        `redis.port=${f['redis-port']}`,
        '-threads',
        String(f.threads),
      ]
      const db = (mode: Mode, run: string): string[] =>
        mode === 'alone'
          ? ['-db', REDIS_CLASS]
          : [
              '-db',
              BRIDGE_CLASS,
              '-p',
              `benchstream.db=${REDIS_CLASS}`,
              '-p',
              `benchstream.brokers=${b.brokers}`,
              '-p',
              `benchstream.topic=${topic}`,
              '-p',
              `benchstream.runid=${run}`,
              '-p',
              'benchstream.clientid=bench',
              '-p',
              `benchstream.enabled=${mode === 'bridge'}`,
            ]
      progress(BENCH, `loading ${fmtInt(f.recordcount)} records (YCSB alone)`)
      await ycsb(cp, ['-load', ...common, ...db('alone', '')])
      const measure = async (mode: Mode, round: number): Promise<Run> => {
        const loadBefore = os.loadavg()[0]!
        const cpuBefore = { broker: processCpuMs(b.pid), redis: processCpuMs(redis.proc.pid) }
        const r = await ycsb(cp, [
          '-t',
          ...common,
          '-p',
          `operationcount=${f.ops}`,
          ...db(mode, `bridge-overhead-${id}-${round}`),
        ])
        const perOp = (before: number | undefined, after: number | undefined): number | undefined =>
          before === undefined || after === undefined ? undefined : ((after - before) * 1000) / f.ops
        return {
          mode,
          opsPerS: figure(r.stdout, 'OVERALL', 'Throughput(ops/sec)'),
          runtimeMs: figure(r.stdout, 'OVERALL', 'RunTime(ms)'),
          readP99Us: figure(r.stdout, 'READ', '99thPercentileLatency(us)'),
          cpuUsPerOp: (r.cpuS * 1e6) / f.ops,
          brokerCpuUsPerOp: perOp(cpuBefore.broker, processCpuMs(b.pid)),
          redisCpuUsPerOp: perOp(cpuBefore.redis, processCpuMs(redis.proc.pid)),
          loadBefore,
          loadAfter: os.loadavg()[0]!,
          bridge: r.stderr.split('\n').find((l) => l.startsWith('[BENCHSTREAM] ')),
        }
      }
      progress(BENCH, 'warm-up round (not counted): the page cache, Redis, the broker')
      for (const m of modes) await measure(m, -1)
      const rounds: Array<Partial<Record<Mode, Run>>> = []
      for (let r = 0; r < f.rounds; r++) {
        const order = r % 2 === 0 ? modes : [...modes].reverse()
        const round: Partial<Record<Mode, Run>> = {}
        for (const m of order) {
          const x = await measure(m, r)
          round[m] = x
          progress(
            BENCH,
            `round ${r + 1}/${f.rounds} ${m.padEnd(13)}: ${fmtInt(x.opsPerS)} ops/s, ${fmt(x.cpuUsPerOp, 1)} ` +
              (`µs CPU/op (broker ${us(x.brokerCpuUsPerOp)}, Redis ${us(x.redisCpuUsPerOp)}), ` +
                `READ p99 ${fmtInt(x.readP99Us)} `) +
              `µs, load ${fmt(x.loadBefore, 2)} -> ${fmt(x.loadAfter, 2)}`,
          )
        }
        rounds.push(round)
      }
      await deleteTopics(b, [topic])

      const base = modes[0]!
      const lines = [
        `${BENCH}: YCSB 0.17.0 workload A, ${f.threads} threads, ${fmtInt(f.ops)} ops per run, recordcount ` +
          (`${fmtInt(f.recordcount)}, ${f.rounds} alternating ` +
            `rounds; ${redisVersion.split(' ').slice(0, 3).join(' ')} `) +
          `on 127.0.0.1:${f['redis-port']}; Kafka ${b.brokers}`,
        `  machine: ${os.cpus().length} cores, load average (1/5/15 min) at the end ${os
          .loadavg()
          .map((x) => fmt(x, 2))
          .join(' / ')}`,
      ]
      for (const m of modes) {
        const xs = rounds.map((r) => r[m]!)
        lines.push(
          `  ${m.padEnd(13)}: ${fmtInt(median(xs.map((x) => x.opsPerS)))} ` +
            `ops/s median (${xs.map((x) => fmtInt(x.opsPerS)).join(', ')}); ` +
            (`JVM CPU ${fmt(median(xs.map((x) => x.cpuUsPerOp)), 2)} µs/op ` +
              `median (${xs.map((x) => fmt(x.cpuUsPerOp, 2)).join(', ')}); `) +
            `READ p99 median ${fmtInt(median(xs.map((x) => x.readP99Us)))} µs`,
        )
        lines.push(
          `  ${''.padEnd(13)}  beside it, CPU per op over the same runs: ` +
            `broker ${us(medianOf(xs.map((x) => x.brokerCpuUsPerOp)))} ` +
            (`(${xs.map((x) => us(x.brokerCpuUsPerOp)).join(', ')}), Redis ` +
              `${us(medianOf(xs.map((x) => x.redisCpuUsPerOp)))} `) +
            `(${xs.map((x) => us(x.redisCpuUsPerOp)).join(', ')})`,
        )
      }
      for (const m of modes.filter((x) => x !== base)) {
        const ratios = rounds.map((r) => r[m]!.opsPerS / r[base]!.opsPerS)
        const med = median(ratios)
        const cpu = rounds.map((r) => r[m]!.cpuUsPerOp - r[base]!.cpuUsPerOp)
        lines.push(
          `  ${m} - ${base}, JVM CPU: ${fmt(median(cpu), 2, true)} µs/op median of the per-round differences ` +
            (`(spread ${fmt(Math.min(...cpu), 2, true)} .. ${fmt(Math.max(...cpu), 2, true)}), ` +
              `${fmt((median(cpu) / median(rounds.map((r) => r[base]!.cpuUsPerOp))) * 100, 1, true)}% ` +
              `of ${base}'s`),
        )
        const others = rounds.map(
          (r) =>
            sum(r[m]!.brokerCpuUsPerOp, r[m]!.redisCpuUsPerOp) -
            sum(r[base]!.brokerCpuUsPerOp, r[base]!.redisCpuUsPerOp),
        )
        if (others.every((x) => !Number.isNaN(x)))
          lines.push(
            `  ${m} - ${base}, broker + Redis CPU: ${fmt(median(others), 2, true)} µs/op median of the per-round ` +
              `differences (spread ${fmt(Math.min(...others), 2, true)} .. ${fmt(Math.max(...others), 2, true)}): ` +
              `what the broker on these same cores took`,
          )
        lines.push(
          `  ${m} / ${base}: ${fmt(med, 3)} median of the per-round ratios (spread ${fmt(Math.min(...ratios), 3)} ` +
            (`.. ${fmt(Math.max(...ratios), 3)}; ${ratios.map((x) => fmt(x, 3)).join(' ')}); ` +
              `cost ${fmt((1 - med) * 100, 1)}% `) +
            `(target <= ${fmt((1 - TARGET_RATIO) * 100, 0)}%) -> ${med >= TARGET_RATIO ? 'met' : 'NOT met'}`,
        )
      }
      lines.push(
        `  load average (1 min) before -> after each run: ` +
          rounds
            .map((r) => modes.map((m) => `${m} ${fmt(r[m]!.loadBefore, 1)}->${fmt(r[m]!.loadAfter, 1)}`).join(', '))
            .join(' | '),
      )
      const last = rounds.at(-1)?.bridge?.bridge
      if (last !== undefined) lines.push(`  the bridge's last summary: ${last}`)
      process.stdout.write(lines.join('\n') + '\n')
    })
  } finally {
    redis.proc.kill('SIGTERM')
    rmSync(redis.dir, { recursive: true, force: true })
  }
}

runMain(main)
