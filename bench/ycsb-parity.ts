/**
 * bench/ycsb-parity: Benchstream's driver against real YCSB 0.17.0 on the
 * same private redis-server, side by side.
 *
 * YCSB runs through deploy/local/ycsb.sh (YCSB core from Maven Central) with
 * our Redis DB class (services/ycsb/redis), Benchstream through its own
 * command (`benchstream run -db redis`). Both store a record as a hash at its
 * key. For the comparison to hold, both must do the same work per operation:
 *
 * - workload C (the default) is 100% reads of all fields: HGETALL on both
 *   sides, one command per operation;
 * - workload A's updates differ: YCSB's binding sends HMSET, Benchstream's
 *   binding EVALSHA of a script that checks EXISTS before HSET (so an update
 *   of a missing key is NOT_FOUND instead of creating half a record), more
 *   work for the server per update. `--workloads a` runs it anyway and says so.
 *
 * YCSB loads the records once (its binding's layout: hashes plus `_indices`);
 * neither workload scans, so the index is never read. Then, for each round,
 * the two tools run alternately (the order flips every round) unthrottled and
 * at a fixed target both reach; the figures are medians over the rounds with
 * min and max, and the ratios are medians of the per-round ratios, so drift
 * and other load on the machine hit both sides alike. Each run also reports
 * the CPU time the client process used per operation (bash `times`) and what
 * redis-server used (/proc/<pid>/stat), which other load moves much less
 * than throughput, and the 1-minute load average when it started.
 *
 * Emission: Benchstream unthrottled with events sent to a private Kafka
 * broker vs --no-emit, alternating, on the same Redis (bench/driver-overhead
 * does the same on the memory binding).
 *
 * Targets: Benchstream throughput >= 1.0x YCSB's unthrottled; at the target
 * rate, Benchstream's p99 <= 1.1x YCSB's; emission costs <= 3% of throughput.
 */
import os from 'node:os'
import path from 'node:path'
import { repoRoot } from '../services/common/repo-root.js'
import { defaultWorkerCount } from '../services/driver/worker-pool.js'
import {
  createTopic,
  deleteTopics,
  fmt,
  fmtInt,
  median,
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
  type OpFigures,
  type RedisServer,
  type Spread,
} from './ycsb-common.js'

const BENCH = 'ycsb-parity'
const TARGET_THROUGHPUT_RATIO = 1.0
const TARGET_P99_RATIO = 1.1
const TARGET_EMISSION_COST = 0.03

const FLAGS = {
  records: { kind: 'int', default: 10_000, min: 100, max: 10_000_000, help: 'records YCSB loads into Redis' },
  ops: { kind: 'int', default: 200_000, min: 1000, max: 1_000_000_000, help: 'operations per unthrottled run' },
  threads: { kind: 'int', default: 8, min: 1, max: 1024, help: 'client threads of both tools (-threads)' },
  target: {
    kind: 'int',
    default: 5000,
    min: 0,
    max: 10_000_000,
    help: 'ops/s of the throttled runs (0 = none); must be below what both reach',
  },
  'target-seconds': {
    kind: 'int',
    default: 10,
    min: 2,
    max: 3600,
    help: 'seconds of each throttled run (operationcount = target x seconds)',
  },
  rounds: {
    kind: 'int',
    default: 3,
    min: 1,
    max: 100,
    help: 'rounds; each runs YCSB and Benchstream once per mode, in alternating order',
  },
  workloads: {
    kind: 'choices',
    default: ['c'],
    allowed: ['a', 'c'],
    help: 'YCSB workloads to compare (c: identical work on both sides; a: updates differ, see the header)',
  },
  emission: { kind: 'bool', default: true, help: 'also measure Benchstream with emission to Kafka on vs off' },
  ...KAFKA_FLAGS,
} as const

interface Run {
  tool: 'ycsb' | 'benchstream'
  throughput: number
  runtimeMs: number
  ops: Record<string, OpFigures>
  /** Client process CPU (user + system) per operation, µs; its JVM or Node start-up included. */
  clientCpuUs: number
  /** The same without start-up: the CPU of a run of `threads` operations (same mode) subtracted. */
  steadyCpuUs: number
  /** redis-server CPU per operation, µs. */
  serverCpuUs: number
  /** 1-minute load average when the run started. */
  load: number
}

// ---------------------------------------------------------------- the two tools

interface RunSpec {
  workload: string
  ops: number
  target: number
}

interface Setup {
  redis: RedisServer
  threads: number
  records: number
}

async function runYcsb(s: Setup, spec: RunSpec): Promise<Run> {
  const args = [
    'deploy/local/ycsb.sh',
    'run',
    '-t',
    '-P',
    `workloads/workload${spec.workload}`,
    '-threads',
    String(s.threads),
    '-db',
    'io.benchstream.ycsb.redis.RedisClient',
    '-p',
    `redis.port=${s.redis.port}`,
    '-p',
    `recordcount=${s.records}`,
    '-p',
    `operationcount=${spec.ops}`,
    '-p',
    'hdrhistogram.percentiles=50,95,99',
  ]
  if (spec.target > 0) args.push('-target', String(spec.target))
  return measure('ycsb', s, () => runCommand('bash', args, process.env), spec.target > 0)
}

async function runBenchstream(s: Setup, spec: RunSpec, kafka?: { brokers: string; topic: string }): Promise<Run> {
  const args = [
    path.join(repoRoot(), 'bin', 'benchstream.js'),
    'run',
    '-P',
    `workloads/workload${spec.workload}`,
    '-threads',
    String(s.threads),
    '-db',
    'redis',
    '-p',
    `redis.port=${s.redis.port}`,
    '-p',
    `recordcount=${s.records}`,
    '-p',
    `operationcount=${spec.ops}`,
    '--run-id',
    `parity-${shortId()}`,
    '--client-id',
    'parity',
  ]
  if (spec.target > 0) args.push('-target', String(spec.target))
  const env = { ...process.env }
  if (kafka === undefined) args.push('--no-emit')
  else {
    args.push('--topic', kafka.topic)
    env.KAFKA_BROKERS = kafka.brokers
  }
  return measure('benchstream', s, () => runCommand(process.execPath, args, env), spec.target > 0)
}

/** CPU seconds each tool spends starting and stopping, per mode (median of two runs of `threads` operations). */
const startupCpuS = new Map<string, number>()

async function measureStartup(s: Setup, spec: RunSpec): Promise<void> {
  const tiny = { ...spec, ops: s.threads }
  for (const tool of ['ycsb', 'benchstream'] as const) {
    const cpu: number[] = []
    for (let i = 0; i < 2; i++) {
      const r = tool === 'ycsb' ? await runYcsb(s, tiny) : await runBenchstream(s, tiny)
      cpu.push((r.clientCpuUs * s.threads) / 1e6)
    }
    startupCpuS.set(`${tool}/${spec.target > 0}`, median(cpu))
  }
}

async function measure(
  tool: Run['tool'],
  s: Setup,
  run: () => Promise<{ stdout: string; cpuS: number }>,
  throttled: boolean,
): Promise<Run> {
  const load = loadAverage()
  const server0 = processCpuS(s.redis.pid)
  const r = await run()
  const serverS = processCpuS(s.redis.pid) - server0
  const report = parseReport(r.stdout)
  const n = Object.values(report.ops).reduce((a, o) => a + o.count, 0)
  if (!Number.isFinite(report.throughput) || n === 0)
    throw new Error(`${tool}: no report in its output:\n${r.stdout.slice(-2000)}`)
  const startup = startupCpuS.get(`${tool}/${throttled}`) ?? 0
  return {
    tool,
    ...report,
    clientCpuUs: (r.cpuS * 1e6) / n,
    steadyCpuUs: (Math.max(0, r.cpuS - startup) * 1e6) / n,
    serverCpuUs: (serverS * 1e6) / n,
    load,
  }
}

// ---------------------------------------------------------------- figures

interface Pair {
  ycsb: Run
  bs: Run
}

/** Lines comparing the two tools over rounds: medians [min..max] and the median of per-round ratios. */
function comparison(
  title: string,
  pairs: readonly Pair[],
): { lines: string[]; throughputRatio: number; p99Ratios: Record<string, number> } {
  const col = (s: string): string => s.padEnd(34)
  const ratio = (f: (r: Run) => number): Spread => spread(pairs.map((p) => f(p.bs) / f(p.ycsb)))
  const lines = [`  ${title}`, `    ${col('')}${col('YCSB 0.17.0')}${col('Benchstream')}Benchstream/YCSB per round`]
  const row = (label: string, f: (r: Run) => number, digits = 0): void => {
    lines.push(
      [
        `    ${label.padEnd(34)}`,
        col(show(spread(pairs.map((p) => f(p.ycsb))), digits)),
        col(show(spread(pairs.map((p) => f(p.bs))), digits)),
        show(ratio(f), 3),
      ].join(''),
    )
  }
  row('throughput, ops/s', (r) => r.throughput)
  const p99Ratios: Record<string, number> = {}
  for (const op of Object.keys(pairs[0]!.ycsb.ops)) {
    if (pairs.some((p) => p.bs.ops[op] === undefined)) continue
    for (const q of ['p50', 'p95', 'p99'] as const) row(`${op} ${q}, µs`, (r) => r.ops[op]![q])
    p99Ratios[op] = ratio((r) => r.ops[op]!.p99).median
  }
  row('client CPU per op, µs', (r) => r.clientCpuUs, 1)
  row('  without start-up, µs', (r) => r.steadyCpuUs, 1)
  row('redis-server CPU per op, µs', (r) => r.serverCpuUs, 1)
  const failed = pairs
    .flatMap((p) => [p.ycsb, p.bs])
    .flatMap((r) =>
      Object.entries(r.ops)
        .filter(([, o]) => o.failed > 0)
        .map(([op, o]) => `${r.tool} ${op}: ${o.failed}`),
    )
  if (failed.length > 0) lines.push(`    WARNING: operations that did not return OK: ${failed.join(', ')}`)
  lines.push(
    `    load average (1 min) at each run, YCSB/Benchstream: ` +
      `${pairs.map((p) => `${fmt(p.ycsb.load, 1)}/${fmt(p.bs.load, 1)}`).join('  ')}`,
  )
  return { lines, throughputRatio: ratio((r) => r.throughput).median, p99Ratios }
}

async function main(): Promise<void> {
  const f = parseFlags(
    BENCH,
    'YCSB 0.17.0 vs Benchstream on one private redis-server: throughput, latency, CPU; emission on vs off.',
    process.argv.slice(2),
    process.env,
    FLAGS,
  )
  progress(BENCH, 'fetching YCSB 0.17.0 and building services/ycsb if needed (deploy/local/ycsb.sh classpath)')
  await runCommand('bash', ['deploy/local/ycsb.sh', 'classpath'], process.env)
  const redis = await startRedis()
  const out: string[] = []
  const verdicts: string[] = []
  const verdict = (ok: boolean): string => (ok ? 'met' : 'NOT met')
  try {
    const s: Setup = { redis, threads: f.threads, records: f.records }
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
        String(f.threads),
        '-db',
        'io.benchstream.ycsb.redis.RedisClient',
        '-p',
        `redis.port=${redis.port}`,
        '-p',
        `recordcount=${f.records}`,
      ],
      process.env,
    )
    const compareAll = async (b: Broker | undefined): Promise<void> => {
      for (const w of f.workloads) {
        const unthrottled: RunSpec = { workload: w, ops: f.ops, target: 0 }
        const throttled: RunSpec = { workload: w, ops: f.target * f['target-seconds'], target: f.target }
        progress(BENCH, `workload${w}: warm-up and start-up cost (not counted)`)
        await runYcsb(s, { ...unthrottled, ops: Math.max(1000, Math.floor(f.ops / 4)) })
        await runBenchstream(s, { ...unthrottled, ops: Math.max(1000, Math.floor(f.ops / 4)) })
        await measureStartup(s, unthrottled)
        if (f.target > 0) await measureStartup(s, throttled)
        const free: Pair[] = []
        const paced: Pair[] = []
        const emit: Array<{ off: Run; on: Run }> = []
        const topic = `bench-parity-${shortId()}`
        if (b !== undefined) await createTopic(b.kafka, topic, 4)
        for (let r = 0; r < f.rounds; r++) {
          const ycsbFirst = r % 2 === 0
          const pair = async (spec: RunSpec): Promise<Pair> => {
            if (ycsbFirst) {
              const ycsb = await runYcsb(s, spec)
              return { ycsb, bs: await runBenchstream(s, spec) }
            }
            const bs = await runBenchstream(s, spec)
            return { ycsb: await runYcsb(s, spec), bs }
          }
          const p = await pair(unthrottled)
          free.push(p)
          progress(
            BENCH,
            `workload${w} round ${r + 1}/${f.rounds} unthrottled: YCSB ${fmtInt(p.ycsb.throughput)} ops/s, ` +
              `Benchstream ${fmtInt(p.bs.throughput)} ops/s (load ${fmt(p.ycsb.load, 1)})`,
          )
          if (f.target > 0) {
            const q = await pair(throttled)
            paced.push(q)
            const p99 = (x: Run): string =>
              Object.entries(x.ops)
                .map(([op, o]) => `${op} ${fmtInt(o.p99)}`)
                .join(' ')
            progress(
              BENCH,
              `workload${w} round ${r + 1}/${f.rounds} at ${fmtInt(f.target)} ops/s: p99 µs YCSB ${p99(q.ycsb)}, ` +
                `Benchstream ${p99(q.bs)}`,
            )
          }
          if (b !== undefined) {
            const kafka = { brokers: b.brokers, topic }
            const order = ycsbFirst ? (['off', 'on'] as const) : (['on', 'off'] as const)
            const e: Partial<Record<'off' | 'on', Run>> = {}
            for (const mode of order) e[mode] = await runBenchstream(s, unthrottled, mode === 'on' ? kafka : undefined)
            emit.push({ off: e.off!, on: e.on! })
            progress(
              BENCH,
              `workload${w} round ${r + 1}/${f.rounds} emission ` +
                `off/on: ${fmtInt(e.off!.throughput)}/${fmtInt(e.on!.throughput)} ops/s`,
            )
          }
        }
        if (b !== undefined) await deleteTopics(b, [topic])

        const note =
          w === 'c'
            ? 'HGETALL on both sides'
            : 'reads are HGETALL on both sides; updates are HMSET (YCSB) vs EVALSHA EXISTS+HSET (Benchstream): ' +
              'more server work per Benchstream update'
        out.push(
          `${BENCH}: workload${w} (${note}), private redis-server, ${fmtInt(f.records)} records, ${f.threads} ` +
            `threads each, ${f.rounds} rounds in alternating order; medians [min..max]`,
        )
        out.push(
          `  Benchstream runs its ${f.threads} client threads (one connection ` +
            `each) on ${defaultWorkerCount(f.threads)} ` +
            `worker threads (${os.availableParallelism()} cores); YCSB on ${f.threads} Java threads`,
        )
        const a = comparison(`unthrottled, ${fmtInt(f.ops)} operations per run`, free)
        out.push(...a.lines)
        verdicts.push(
          `  workload${w}: throughput Benchstream/YCSB ${fmt(a.throughputRatio, 3)} ` +
            `(target >= ${TARGET_THROUGHPUT_RATIO}) ` +
            `-> ${verdict(a.throughputRatio >= TARGET_THROUGHPUT_RATIO)}`,
        )
        if (paced.length > 0) {
          const t = comparison(
            `at -target ${fmtInt(f.target)} ops/s, ${fmtInt(throttled.ops)} operations per run`,
            paced,
          )
          out.push(...t.lines)
          const behind = paced.flatMap((p) => [p.ycsb, p.bs]).filter((x) => x.throughput < f.target * 0.97)
          if (behind.length > 0)
            out.push(
              `    WARNING: ${behind.length} throttled runs fell more than 3% ` +
                `short of the target (${behind.map((x) => `${x.tool} ${fmtInt(x.throughput)}`).join(', ')}): ` +
                `the latencies then include queueing`,
            )
          for (const [op, r] of Object.entries(t.p99Ratios))
            verdicts.push(
              `  workload${w}: ${op} p99 at ${fmtInt(f.target)} ops/s, Benchstream/YCSB ${fmt(r, 3)} (target ` +
                `<= ${TARGET_P99_RATIO}) -> ${verdict(r <= TARGET_P99_RATIO)}`,
            )
        }
        if (emit.length > 0) {
          const ratio = spread(emit.map((e) => e.on.throughput / e.off.throughput))
          const cpu = spread(emit.map((e) => e.on.clientCpuUs - e.off.clientCpuUs))
          out.push(
            `  Benchstream emission (unthrottled, Kafka ${b?.brokers}): off ` +
              `${show(spread(emit.map((e) => e.off.throughput)))} ` +
              `ops/s, on ${show(spread(emit.map((e) => e.on.throughput)))} ops/s`,
          )
          out.push(
            `    throughput on/off per round ${show(ratio, 3)}; client CPU added per op ${show(cpu, 2)} ` +
              `µs; load ${emit.map((e) => `${fmt(e.off.load, 1)}/${fmt(e.on.load, 1)}`).join('  ')}`,
          )
          const cost = 1 - ratio.median
          verdicts.push(
            `  workload${w}: emission cost ${fmt(100 * cost, 1)}% of throughput ` +
              `(target <= ${TARGET_EMISSION_COST * 100}%) ` +
              `-> ${verdict(cost <= TARGET_EMISSION_COST)}`,
          )
        }
      }
    }
    if (f.emission) await withBroker(BENCH, f['kafka-port'], compareAll)
    else await compareAll(undefined)
  } finally {
    await redis.stop()
  }
  process.stdout.write([...out, 'targets:', ...verdicts].join('\n') + '\n')
}

runMain(main)
