/**
 * bench/telemetry-cost (issue 21): what Benchstream's telemetry costs the
 * client it measures, against real YCSB 0.17.0 on one private redis-server.
 *
 * Three parts, each a baseline and a candidate measured alternately in the
 * same run (the order flips every round), so drift and other load hit both:
 *
 * - driver: `benchstream run -db redis` with emission off (--no-emit) vs on
 *   (every event through the ring and the delivery thread to Kafka);
 * - bridge: YCSB with our Redis DB class alone vs behind
 *   io.benchstream.ycsb.BenchstreamDB sending every event to Kafka;
 *   both unthrottled, pinned (`taskset`: the client on one core, redis-server
 *   and the broker on the other, so the client pays only for its own work)
 *   and unpinned;
 * - pacing: YCSB alone, Benchstream with emission off and on, at `--target`
 *   with measurement.interval=both: measured and intended READ p99, pinned
 *   and unpinned as --pinning says (pinned, the broker's work on the events
 *   leaves the client's core; the delivery thread's stays);
 * - parity: YCSB alone (our Redis DB class) vs the driver with emission on,
 *   both with the driver's --threads, unthrottled: client CPU per operation,
 *   as operations per client CPU-second of the driver over YCSB's.
 *
 * CPU per operation is the client process's (bash `times`: user + system,
 * every thread) minus its start and exit (the median CPU of two runs of
 * `threads` operations in the same mode), which other load on the machine
 * moves much less than throughput. The 1-minute load average at the start of
 * every run is printed beside its figures: on a shared machine it says which
 * figures to distrust.
 *
 * Targets (issues 21 and 33): emission adds <= 0.3 µs CPU per op in the
 * driver and <= 0.5 µs in the bridge; throughput with emission >= 0.98x
 * without (pinned, and reported unpinned); at the target, Benchstream's
 * intended READ p99 <= 1.0x YCSB's and its measured READ p99 with emission on
 * <= 1.1x YCSB's (unpinned, 8 driver threads); the driver with emission does
 * >= 1.0x YCSB's operations per client CPU-second (aim 1.2x). Each part says
 * how long it took, so a rerun can be sized.
 */
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
  withBroker,
  type Broker,
} from './common.js'
import { KAFKA_FLAGS, parseFlags } from './flags.js'
import {
  loadAverage,
  parseReport,
  processCpuS,
  runCommand,
  show,
  spread,
  startRedis,
  type RedisServer,
  type Report,
} from './ycsb-common.js'

const BENCH = 'telemetry-cost'
const TARGET_DRIVER_CPU_US = 0.3
const TARGET_BRIDGE_CPU_US = 0.5
const TARGET_THROUGHPUT_RATIO = 0.98
const TARGET_INTENDED_P99_RATIO = 1.0
const TARGET_MEASURED_P99_RATIO = 1.1
const TARGET_CPU_PARITY = 1.0
const AIM_CPU_PARITY = 1.2
const REDIS_CLASS = 'io.benchstream.ycsb.redis.RedisClient'
const BRIDGE_CLASS = 'io.benchstream.ycsb.BenchstreamDB'

const FLAGS = {
  records: { kind: 'int', default: 10_000, min: 100, max: 10_000_000, help: 'records YCSB loads into Redis' },
  workload: { kind: 'choices', default: ['c'], allowed: ['a', 'c'], help: 'YCSB workload of every run (one)' },
  ops: { kind: 'int', default: 200_000, min: 1000, max: 1_000_000_000, help: 'operations per unthrottled run' },
  threads: { kind: 'int', default: 8, min: 1, max: 1024, help: 'client threads of the driver runs' },
  'bridge-threads': { kind: 'int', default: 4, min: 1, max: 1024, help: 'client threads of the YCSB runs' },
  target: { kind: 'int', default: 5000, min: 100, max: 10_000_000, help: 'ops/s of the pacing runs' },
  'target-seconds': { kind: 'int', default: 10, min: 2, max: 3600, help: 'seconds of each pacing run' },
  rounds: { kind: 'int', default: 5, min: 1, max: 100, help: 'rounds; each measures every mode of a part once' },
  parts: {
    kind: 'choices',
    default: ['driver', 'bridge', 'pacing', 'parity'],
    allowed: ['driver', 'bridge', 'pacing', 'parity'],
    help:
      'driver: emission off vs on; bridge: YCSB alone vs with the bridge; pacing: p99 at --target; parity: client ' +
      'CPU per op, YCSB alone vs the driver with emission, same threads',
  },
  pinning: {
    kind: 'choices',
    default: ['pinned', 'unpinned'],
    allowed: ['pinned', 'unpinned'],
    help: 'pinned: the client on --client-core, redis-server and the broker on --server-core (taskset)',
  },
  'linger-ms': {
    kind: 'int',
    default: 0,
    min: 0,
    max: 60_000,
    help: "the driver's --linger-ms with emission on (0: the driver's default)",
  },
  'client-core': { kind: 'int', default: 0, min: 0, max: 1023, help: 'the client core when pinned' },
  'server-core': { kind: 'int', default: 1, min: 0, max: 1023, help: 'redis-server and the broker when pinned' },
  ...KAFKA_FLAGS,
} as const

/** ycsb-threads: YCSB alone with the driver's --threads (parity); ycsb, ycsb-bridge: with --bridge-threads. */
type Mode = 'driver-off' | 'driver-on' | 'ycsb' | 'ycsb-bridge' | 'ycsb-threads'

interface Run {
  mode: Mode
  pinned: boolean
  report: Report
  /** Client CPU per op, µs, start and exit of the process subtracted (not clamped: a short run can go below 0). */
  cpuUs: number
  /** The broker's and redis-server's CPU per op over the run, µs (NaN: unreadable). */
  brokerCpuUs: number
  redisCpuUs: number
  /** 1-minute load average at the start of the run. */
  load: number
  /** The bridge's summary line, when it ran. */
  bridge: string | undefined
}

interface Ctx {
  redis: RedisServer
  broker: Broker
  topic: string
  f: ReturnType<typeof parseFlags<typeof FLAGS>>
  /** CPU seconds of a process's start and exit, by mode. */
  startup: Map<Mode, number>
}

const allCores = `0-${os.availableParallelism() - 1}`

/** Puts redis-server and the broker (every thread) on the server core, or lets them run anywhere. */
async function placeServers(c: Ctx, pinned: boolean): Promise<void> {
  const cores = pinned ? String(c.f['server-core']) : allCores
  for (const pid of [c.redis.pid, c.broker.pid]) {
    if (pid !== undefined) await runCommand('taskset', ['-a', '-p', '-c', cores, String(pid)], process.env)
  }
}

function driverArgs(c: Ctx, mode: Mode, ops: number, target: number): { cmd: string[]; env: NodeJS.ProcessEnv } {
  const cmd = [
    process.execPath,
    path.join(repoRoot(), 'bin', 'benchstream.js'),
    'run',
    '-P',
    `workloads/workload${c.f.workload[0]}`,
    '-threads',
    String(c.f.threads),
    '-db',
    'redis',
    '-p',
    `redis.port=${c.redis.port}`,
    '-p',
    `recordcount=${c.f.records}`,
    '-p',
    `operationcount=${ops}`,
    '--run-id',
    `telemetry-cost-${shortId()}`,
    '--client-id',
    'telemetry-cost',
  ]
  const env = { ...process.env }
  if (mode === 'driver-off') cmd.push('--no-emit')
  else {
    cmd.push('--topic', c.topic)
    if (c.f['linger-ms'] > 0) cmd.push('--linger-ms', String(c.f['linger-ms']))
    env.KAFKA_BROKERS = c.broker.brokers
  }
  if (target > 0) cmd.push('-target', String(target), '-p', 'measurement.interval=both')
  return { cmd, env }
}

function ycsbThreads(c: Ctx, mode: Mode): number {
  return mode === 'ycsb-threads' ? c.f.threads : c.f['bridge-threads']
}

function ycsbArgs(c: Ctx, mode: Mode, ops: number, target: number, threads: number): string[] {
  const cmd = [
    'bash',
    'deploy/local/ycsb.sh',
    'run',
    '-t',
    '-P',
    `workloads/workload${c.f.workload[0]}`,
    '-threads',
    String(threads),
    '-p',
    `redis.port=${c.redis.port}`,
    '-p',
    `recordcount=${c.f.records}`,
    '-p',
    `operationcount=${ops}`,
    '-p',
    'hdrhistogram.percentiles=50,99',
  ]
  if (mode === 'ycsb' || mode === 'ycsb-threads') cmd.push('-db', REDIS_CLASS)
  else
    cmd.push(
      '-db',
      BRIDGE_CLASS,
      '-p',
      `benchstream.db=${REDIS_CLASS}`,
      '-p',
      `benchstream.brokers=${c.broker.brokers}`,
      '-p',
      `benchstream.topic=${c.topic}`,
      '-p',
      `benchstream.runid=telemetry-cost-${shortId()}`,
      '-p',
      'benchstream.clientid=telemetry-cost',
    )
  if (target > 0) cmd.push('-target', String(target), '-p', 'measurement.interval=both')
  return cmd
}

async function measure(c: Ctx, mode: Mode, pinned: boolean, ops: number, target = 0): Promise<Run> {
  const driver = mode.startsWith('driver')
  const { cmd, env } = driver
    ? driverArgs(c, mode, ops, target)
    : { cmd: ycsbArgs(c, mode, ops, target, ycsbThreads(c, mode)), env: process.env }
  const full = pinned ? ['taskset', '-c', String(c.f['client-core']), ...cmd] : cmd
  const load = loadAverage()
  const broker0 = processCpuMs(c.broker.pid) ?? Number.NaN
  const redis0 = processCpuS(c.redis.pid)
  const r = await runCommand(full[0]!, full.slice(1), env)
  const brokerMs = (processCpuMs(c.broker.pid) ?? Number.NaN) - broker0
  const redisS = processCpuS(c.redis.pid) - redis0
  const report = parseReport(r.stdout)
  const n = Object.values(report.ops).reduce((a, o) => a + o.count, 0)
  if (!Number.isFinite(report.throughput) || n === 0)
    throw new Error(`${mode}: no report in its output:\n${r.stdout.slice(-2000)}\n${r.stderr.slice(-2000)}`)
  return {
    mode,
    pinned,
    report,
    cpuUs: ((r.cpuS - (c.startup.get(mode) ?? 0)) * 1e6) / n,
    brokerCpuUs: (brokerMs * 1000) / n,
    redisCpuUs: (redisS * 1e6) / n,
    load,
    bridge: r.stderr.split('\n').find((l) => l.startsWith('[BENCHSTREAM] ')),
  }
}

/** CPU seconds a mode's process spends starting and stopping: the median of two runs of `threads` operations. */
async function measureStartup(c: Ctx, mode: Mode): Promise<void> {
  const threads = mode.startsWith('driver') ? c.f.threads : ycsbThreads(c, mode)
  const cpu: number[] = []
  for (let i = 0; i < 2; i++) {
    const r = await measure(c, mode, false, threads)
    cpu.push((r.cpuUs * threads) / 1e6)
  }
  c.startup.set(mode, median(cpu))
}

const verdict = (ok: boolean): string => (ok ? 'met' : 'NOT met')
const loads = (runs: readonly Run[]): string => runs.map((r) => fmt(r.load, 1)).join(' ')
const p99 = (r: Run, intended: boolean): number => (intended ? r.report.intended : r.report.ops).READ?.p99 ?? NaN

/** Baseline vs candidate, unthrottled, over rounds: lines and verdicts. */
function unthrottledBlock(
  title: string,
  pairs: ReadonlyArray<{ base: Run; cand: Run }>,
  cpuTarget: number,
  verdicts: string[],
): string[] {
  const b = pairs.map((p) => p.base)
  const k = pairs.map((p) => p.cand)
  const ratio = spread(pairs.map((p) => p.cand.report.throughput / p.base.report.throughput))
  const added = spread(pairs.map((p) => p.cand.cpuUs - p.base.cpuUs))
  const label = (r: Run): string => r.mode.padEnd(12)
  const row = (rs: readonly Run[]): string =>
    `    ${label(rs[0]!)} ${show(spread(rs.map((r) => r.report.throughput)))} ops/s; client CPU ` +
    `${show(spread(rs.map((r) => r.cpuUs)), 2)} µs/op; broker ${show(spread(rs.map((r) => r.brokerCpuUs)), 2)}, ` +
    `redis ${show(spread(rs.map((r) => r.redisCpuUs)), 2)} µs/op; READ p99 ` +
    `${show(spread(rs.map((r) => p99(r, false))))} µs; load ${loads(rs)}`
  verdicts.push(
    `  ${title}: throughput ${k[0]!.mode}/${b[0]!.mode} ${show(ratio, 3)} (target >= ${TARGET_THROUGHPUT_RATIO}) -> ` +
      verdict(ratio.median >= TARGET_THROUGHPUT_RATIO),
    `  ${title}: client CPU added ${show(added, 2)} µs/op (target <= ${cpuTarget}) -> ` +
      verdict(added.median <= cpuTarget),
  )
  return [
    `  ${title}: medians [min..max] over ${pairs.length} rounds`,
    row(b),
    row(k),
    `    per round: throughput ratio ` +
      pairs.map((p) => fmt(p.cand.report.throughput / p.base.report.throughput, 3)).join(' ') +
      `; CPU added µs/op ${pairs.map((p) => fmt(p.cand.cpuUs - p.base.cpuUs, 2, true)).join(' ')}`,
  ]
}

/** YCSB alone vs the driver with emission on, same threads: ops per client CPU-second of the driver over YCSB's. */
function parityBlock(title: string, pairs: ReadonlyArray<{ base: Run; cand: Run }>, verdicts: string[]): string[] {
  const perRound = pairs.map((p) => p.base.cpuUs / p.cand.cpuUs)
  const ratio = spread(perRound)
  const row = (rs: readonly Run[]): string =>
    `    ${rs[0]!.mode.padEnd(12)} ${show(spread(rs.map((r) => r.report.throughput)))} ops/s; client CPU ` +
    `${show(spread(rs.map((r) => r.cpuUs)), 2)} µs/op; READ p99 ${show(spread(rs.map((r) => p99(r, false))))} µs; ` +
    `load ${loads(rs)}`
  verdicts.push(
    `  ${title}: ops per client CPU-second, driver (emission on)/YCSB ${show(ratio, 3)} (target >= ` +
      `${TARGET_CPU_PARITY}, aim ${AIM_CPU_PARITY}) -> ${verdict(ratio.median >= TARGET_CPU_PARITY)}` +
      (ratio.median >= AIM_CPU_PARITY ? ', aim met' : ''),
  )
  return [
    `  ${title}: medians [min..max] over ${pairs.length} rounds`,
    row(pairs.map((p) => p.base)),
    row(pairs.map((p) => p.cand)),
    `    per round: ops per client CPU-second driver/YCSB ${perRound.map((x) => fmt(x, 3)).join(' ')}`,
  ]
}

async function main(): Promise<void> {
  const f = parseFlags(
    BENCH,
    'What telemetry costs the client: driver emission off vs on, YCSB alone vs with the bridge, p99 at a target.',
    process.argv.slice(2),
    process.env,
    FLAGS,
  )
  const started = performance.now()
  progress(BENCH, 'fetching YCSB 0.17.0 and building services/ycsb if needed (deploy/local/ycsb.sh classpath)')
  await runCommand('bash', ['deploy/local/ycsb.sh', 'classpath'], process.env)
  const redis = await startRedis()
  const out: string[] = []
  const verdicts: string[] = []
  try {
    await withBroker(BENCH, f['kafka-port'], async (broker) => {
      const topic = `bench-telemetry-cost-${shortId()}`
      await createTopic(broker.kafka, topic, 4)
      const c: Ctx = { redis, broker, topic, f, startup: new Map() }
      progress(BENCH, `redis-server on port ${redis.port}; YCSB loads ${fmtInt(f.records)} records`)
      await runCommand(
        'bash',
        [
          'deploy/local/ycsb.sh',
          'run',
          '-load',
          '-P',
          'workloads/workloada',
          '-threads',
          '4',
          '-db',
          REDIS_CLASS,
          '-p',
          `redis.port=${redis.port}`,
          '-p',
          `recordcount=${f.records}`,
        ],
        process.env,
      )
      const parts = f.parts
      const modes: Mode[] = [
        ...(parts.includes('driver') || parts.includes('pacing') ? (['driver-off'] as const) : []),
        ...(parts.some((p) => p !== 'bridge') ? (['driver-on'] as const) : []),
        ...(parts.includes('bridge') || parts.includes('pacing') ? (['ycsb'] as const) : []),
        ...(parts.includes('bridge') ? (['ycsb-bridge'] as const) : []),
        ...(parts.includes('parity') ? (['ycsb-threads'] as const) : []),
      ]
      progress(BENCH, `warm-up (not counted) and start-up CPU of ${modes.join(', ')}`)
      for (const m of modes) await measure(c, m, false, Math.max(1000, Math.floor(f.ops / 4)))
      for (const m of modes) await measureStartup(c, m)
      out.push(
        `${BENCH}: workload${f.workload[0]}, private redis-server, ${fmtInt(f.records)} records, Kafka ` +
          `${broker.brokers}; ${os.availableParallelism()} cores; start-up CPU subtracted per mode ` +
          `(${modes.map((m) => `${m} ${fmt(c.startup.get(m)!, 2)} s`).join(', ')})`,
      )

      const pairsFor = async (base: Mode, cand: Mode, pinned: boolean, label: string) => {
        await placeServers(c, pinned)
        const pairs: Array<{ base: Run; cand: Run }> = []
        for (let r = 0; r < f.rounds; r++) {
          const order = r % 2 === 0 ? [base, cand] : [cand, base]
          const got: Partial<Record<Mode, Run>> = {}
          for (const m of order) got[m] = await measure(c, m, pinned, f.ops)
          pairs.push({ base: got[base]!, cand: got[cand]! })
          progress(
            BENCH,
            `${label} round ${r + 1}/${f.rounds}: ${base} ${fmtInt(got[base]!.report.throughput)}, ${cand} ` +
              `${fmtInt(got[cand]!.report.throughput)} ops/s; CPU ${fmt(got[base]!.cpuUs, 2)} / ` +
              `${fmt(got[cand]!.cpuUs, 2)} µs/op (load ${fmt(got[base]!.load, 1)})`,
          )
        }
        return pairs
      }
      const timed = async (what: string, fn: () => Promise<void>): Promise<void> => {
        const t0 = performance.now()
        await fn()
        out.push(`    (${what}: ${fmt((performance.now() - t0) / 1000, 0)} s)`)
      }
      for (const pinning of f.pinning) {
        const pinned = pinning === 'pinned'
        const where = pinned
          ? `pinned: client on core ${f['client-core']}, redis-server and broker on core ${f['server-core']}`
          : 'unpinned'
        if (parts.includes('driver'))
          await timed(`driver part, ${pinning}`, async () => {
            const label = `driver emission, ${pinning}`
            const pairs = await pairsFor('driver-off', 'driver-on', pinned, label)
            out.push(`driver emission off vs on, ${fmtInt(f.ops)} ops, ${f.threads} threads, ${where}`)
            out.push(...unthrottledBlock(label, pairs, TARGET_DRIVER_CPU_US, verdicts))
          })
        if (parts.includes('bridge'))
          await timed(`bridge part, ${pinning}`, async () => {
            const label = `YCSB bridge, ${pinning}`
            const pairs = await pairsFor('ycsb', 'ycsb-bridge', pinned, label)
            out.push(`YCSB alone vs with the bridge, ${fmtInt(f.ops)} ops, ${f['bridge-threads']} threads, ${where}`)
            out.push(...unthrottledBlock(label, pairs, TARGET_BRIDGE_CPU_US, verdicts))
            const last = pairs.at(-1)?.cand.bridge
            if (last !== undefined) out.push(`    the bridge's last summary: ${last}`)
          })
        if (parts.includes('parity'))
          await timed(`parity part, ${pinning}`, async () => {
            const label = `CPU parity, ${pinning}`
            const pairs = await pairsFor('ycsb-threads', 'driver-on', pinned, label)
            out.push(
              `client CPU per op: YCSB alone vs the driver with emission on, ${fmtInt(f.ops)} ops, ${f.threads} ` +
                `threads each, ${where}`,
            )
            out.push(...parityBlock(label, pairs, verdicts))
          })
      }
      for (const pinning of parts.includes('pacing') ? f.pinning : []) {
        const pacingStart = performance.now()
        const pinned = pinning === 'pinned'
        await placeServers(c, pinned)
        const ops = f.target * f['target-seconds']
        const order: Mode[] = ['ycsb', 'driver-off', 'driver-on']
        const runs: Run[][] = []
        for (let r = 0; r < f.rounds; r++) {
          const round: Run[] = []
          for (const m of r % 2 === 0 ? order : [...order].reverse())
            round.push(await measure(c, m, pinned, ops, f.target))
          round.sort((a, b) => order.indexOf(a.mode) - order.indexOf(b.mode))
          runs.push(round)
          progress(
            BENCH,
            `pacing ${pinning} round ${r + 1}/${f.rounds} at ${fmtInt(f.target)} ops/s: ` +
              'READ p99 measured/intended µs ' +
              round.map((x) => `${x.mode} ${fmtInt(p99(x, false))}/${fmtInt(p99(x, true))}`).join(', '),
          )
        }
        out.push(
          `pacing: -target ${fmtInt(f.target)} for ${f['target-seconds']} s, measurement.interval=both, ` +
            `${f.threads} driver threads, ${f['bridge-threads']} YCSB threads, ${pinning}; medians [min..max]`,
        )
        for (const [i, m] of order.entries()) {
          const rs = runs.map((r) => r[i]!)
          out.push(
            `    ${m.padEnd(12)} ${show(spread(rs.map((r) => r.report.throughput)))} ops/s; READ p50 ` +
              `${show(spread(rs.map((r) => r.report.ops.READ?.p50 ?? NaN)))}, p99 ` +
              `${show(spread(rs.map((r) => p99(r, false))))} µs; intended READ p99 ` +
              `${show(spread(rs.map((r) => p99(r, true))))} µs; client CPU ` +
              `${show(spread(rs.map((r) => r.cpuUs)), 2)} ` +
              `µs/op; load ${loads(rs)}`,
          )
        }
        const ratio = (m: Mode, intended: boolean): ReturnType<typeof spread> =>
          spread(runs.map((r) => p99(r[order.indexOf(m)]!, intended) / p99(r[0]!, intended)))
        const intendedOn = ratio('driver-on', true)
        const measuredOn = ratio('driver-on', false)
        out.push(
          `    per round, Benchstream/YCSB READ p99: emission off measured ${show(ratio('driver-off', false), 3)}, ` +
            `intended ${show(ratio('driver-off', true), 3)}; emission on measured ${show(measuredOn, 3)}, ` +
            `intended ${show(intendedOn, 3)}`,
        )
        verdicts.push(
          `  pacing (${pinning}): intended READ p99 Benchstream (emission on)/YCSB ${show(intendedOn, 3)} (target <= ` +
            `${TARGET_INTENDED_P99_RATIO}) -> ${verdict(intendedOn.median <= TARGET_INTENDED_P99_RATIO)}`,
          `  pacing (${pinning}): measured READ p99 Benchstream (emission on)/YCSB ${show(measuredOn, 3)} (target <= ` +
            `${TARGET_MEASURED_P99_RATIO}) -> ${verdict(measuredOn.median <= TARGET_MEASURED_P99_RATIO)}`,
        )
        out.push(`    (pacing part, ${pinning}: ${fmt((performance.now() - pacingStart) / 1000, 0)} s)`)
      }
      await placeServers(c, false)
      await deleteTopics(broker, [topic])
    })
  } finally {
    await redis.stop()
  }
  out.push(`took ${fmt((performance.now() - started) / 60_000, 1)} min in all`)
  out.push(
    `load average (1/5/15 min) at the end: ${os
      .loadavg()
      .map((x) => fmt(x, 2))
      .join(' / ')}`,
  )
  process.stdout.write([...out, 'targets:', ...verdicts].join('\n') + '\n')
}

runMain(main)
