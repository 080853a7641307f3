/**
 * bench/many-runs (issue 9): per-run state must not outlive the runs.
 *
 * A processor (child process, embedded ClickHouse, --expose-gc) first takes
 * a warm-up of runs, then --runs runs of one event each, each in its own
 * message with its own run id (the shape that once left a processor at
 * 1.7 GB RSS for 50,000 runs). Memory is sampled before the runs (after the
 * warm-up) and after they were all stored: idle for settle-s, a forced GC,
 * release-ms, another GC. The pause matters: V8 frees dead array buffers,
 * unmaps emptied pages and shrinks its heap on background threads and
 * timers after a GC, and until it has, RSS holds memory nothing uses (RSS
 * right after the first GC is printed too: 150-250 MiB more after 50,000
 * runs). Target: RSS after within 1.2x of before; with --rounds, the median
 * of the rounds.
 *
 * So that a reader can tell a leak from an engine cache or an allocator
 * holding freed pages, each sample also prints RSS split into anonymous and
 * file pages (libchdb.so's code is most of the latter), V8's heap and
 * external memory, and the embedded ClickHouse's own accounting:
 * MemoryTracking, jemalloc's allocated/resident/retained, its caches (mark,
 * primary index, uncompressed, query, query condition, compiled
 * expressions) and its parts; and once more after SYSTEM JEMALLOC PURGE.
 *
 * The per-run state this bounds: the window rows of each run until they are
 * flushed (their histograms hold only the bucket range used: at the full
 * 3,328 buckets, two 26 KB arrays per one-event run were what took RSS to
 * 1.9 GB), the event-time watermark of each run (forgotten when idle), the
 * run window-length cache (an LRU of 10,000), the per-run metric series
 * (capped at 200 runs), the alert evaluator's runs (dropped when judged).
 */
import { rmSync } from 'node:fs'
import os from 'node:os'
import type { Producer } from 'kafkajs'
import { OpsBatchWriter } from '../services/core/codec/ops-batch-writer.js'
import { BenchstreamError } from '../services/core/errors.js'
import {
  type Broker,
  createTopic,
  DATABASE,
  deleteTopics,
  derivedTopics,
  fmt,
  fmtInt,
  nowMs,
  OP_READ,
  openProducer,
  processorEnv,
  progress,
  runMain,
  shortId,
  sleep,
  STATUS_OK,
  tempDir,
  withBroker,
} from './common.js'
import { KAFKA_FLAGS, parseFlags, type Flags as FlagValues } from './flags.js'
import { ProcessorProcess, type MemorySample } from './processor-process.js'

const BENCH = 'many-runs'
const MB = 1024 * 1024
const TARGET_RATIO = 1.2

const FLAGS = {
  runs: { kind: 'int', default: 50_000, min: 100, max: 10_000_000, help: 'runs of one event each' },
  'warmup-runs': {
    kind: 'int',
    default: 2000,
    min: 0,
    max: 1_000_000,
    help: 'runs of one event each before the first sample (JIT, pools and caches warmed up)',
  },
  partitions: { kind: 'int', default: 4, min: 1, max: 256, help: 'partitions of the topic' },
  'settle-s': {
    kind: 'int',
    default: 5,
    min: 0,
    max: 600,
    help: 'idle seconds before each sample (flushes and merges finish)',
  },
  'release-ms': {
    kind: 'int',
    default: 10_000,
    min: 0,
    max: 600_000,
    help:
      'between the forced GC and a second one that the sample follows: V8 frees dead array buffers, ' +
      'unmaps emptied pages and shrinks its heap on background threads and timers after a GC (measured ' +
      'after 50,000 runs: heap total 67 MiB 2 s after the GC, 34 MiB 10 s after)',
  },
  raw: { kind: 'bool', default: true, help: 'store raw events too (the processor default is on)' },
  rounds: {
    kind: 'int',
    default: 1,
    min: 1,
    max: 99,
    help: 'repetitions, each with a fresh processor and topic; the median ratio is judged',
  },
  ...KAFKA_FLAGS,
} as const
type Flags = FlagValues<typeof FLAGS>

/**
 * ClickHouse's own gauges (system.metrics) printed with each sample: its tracked memory and the caches that can hold
 * some of it.
 */
const ENGINE_METRICS = [
  'MemoryTracking',
  'MarkCacheBytes',
  'PrimaryIndexCacheBytes',
  'UncompressedCacheBytes',
  'QueryCacheBytes',
  'QueryConditionCacheBytes',
  'CompiledExpressionCacheBytes',
  'PartsActive',
  'PartsOutdated',
] as const

/** What the embedded engine holds at a sample, from its own accounting. */
interface EngineSample {
  metrics: Record<string, number>
  /** From system.jemalloc_stats (ClickHouse's allocator; Node's own allocations go through glibc). */
  jemalloc: { allocated: number; active: number; resident: number; mapped: number; retained: number; metadata: number }
  /**
   * Parts of the benchstream tables: active and outdated (kept until removed), primary keys and marks held in memory.
   */
  parts: { active: number; outdated: number; primaryKeyBytes: number; marksBytes: number }
}

interface Sample {
  /** Right after the first forced GC. */
  atGc: MemorySample
  /** After release-ms and a second GC: the figure compared. */
  mem: MemorySample
  engine: EngineSample
}

async function engineSample(p: ProcessorProcess): Promise<EngineSample> {
  const metrics: Record<string, number> = {}
  const rows = await p.query<{ metric: string; value: string | number }>(
    `SELECT metric, value FROM system.metrics WHERE metric IN (${ENGINE_METRICS.map((m) => `'${m}'`).join(', ')})`,
  )
  for (const r of rows) metrics[r.metric] = Number(r.value)
  const stats = (await p.query<{ stats: string }>('SELECT stats FROM system.jemalloc_stats'))[0]?.stats ?? ''
  // The summary line of malloc_stats_print: "Allocated: N, active: N, metadata: N (...), resident: N, mapped: N,
  // retained: N".
  const field = (name: string): number => Number(new RegExp(`${name}: (\\d+)`).exec(stats)?.[1] ?? Number.NaN)
  const jemalloc = {
    allocated: field('Allocated'),
    active: field('active'),
    resident: field('resident'),
    mapped: field('mapped'),
    retained: field('retained'),
    metadata: field('metadata'),
  }
  const parts = (
    await p.query<{ n_active: string; n_outdated: string; pk: string; marks: string }>(`
    SELECT countIf(active = 1) AS n_active, countIf(active = 0) AS n_outdated,
           sum(primary_key_bytes_in_memory_allocated) AS pk, sumIf(marks_bytes, active = 1) AS marks
    FROM system.parts WHERE database = '${DATABASE}'`)
  )[0]
  return {
    metrics,
    jemalloc,
    parts: {
      active: Number(parts?.n_active ?? 0),
      outdated: Number(parts?.n_outdated ?? 0),
      primaryKeyBytes: Number(parts?.pk ?? 0),
      marksBytes: Number(parts?.marks ?? 0),
    },
  }
}

/** Sends `n` runs of one event each, run ids `<prefix>-<i>`, 500 messages per request. */
async function produceRuns(
  producer: Producer,
  topic: string,
  prefix: string,
  from: number,
  n: number,
  partitions: number,
): Promise<void> {
  const atUs = (Date.now() - 60_000) * 1000
  let batch: Array<{ partition: number; value: Buffer }> = []
  for (let i = from; i < from + n; i++) {
    const w = new OpsBatchWriter(`${prefix}-${i}`, 'c1')
    w.add(0, OP_READ, 0, STATUS_OK, atUs + i, 100, 100, 10)
    batch.push({ partition: i % partitions, value: w.finish() })
    if (batch.length === 500) {
      await producer.send({ topic, acks: -1, messages: batch })
      batch = []
    }
  }
  if (batch.length > 0) await producer.send({ topic, acks: -1, messages: batch })
}

/** One round's figures: the ratio judged, and the lines that explain it. */
interface Round {
  ratio: number
  heapRatio: number
  lines: string[]
}

/** A fresh topic, data directory and processor: warm-up, sample, the runs, sample. */
async function round(b: Broker, f: Flags): Promise<Round> {
  const id = shortId()
  const topic = `bench-many-runs-${id}`
  const prefix = `mr-${id}`
  await createTopic(b.kafka, topic, f.partitions)
  const dataDir = tempDir('many-runs')
  try {
    const p = await ProcessorProcess.start(
      processorEnv({
        brokers: b.brokers,
        topic,
        partitions: f.partitions,
        dataDir,
        group: `bench-many-runs-${id}`,
        storeRaw: f.raw,
      }),
      ['--expose-gc'],
    )
    await p.watch(`SELECT 'all' AS k, sum(count) AS v FROM ${DATABASE}.op_windows`, 500)
    const started = await p.memory(true)
    const producer = await openProducer(b.kafka)
    const sample = async (total: number): Promise<Sample> => {
      const done = await p.waitForValue('all', total, { stallMs: 180_000 })
      if (!done.reached)
        throw new BenchstreamError(
          'BS_ERR_TIMEOUT',
          `the processor counted ${done.v} of ${total} events and then stopped moving`,
        )
      await sleep(f['settle-s'] * 1000)
      const atGc = await p.memory(true)
      await sleep(f['release-ms'])
      const mem = await p.memory(true)
      return { atGc, mem, engine: await engineSample(p) }
    }
    progress(BENCH, `warm-up: ${fmtInt(f['warmup-runs'])} runs`)
    await produceRuns(producer, topic, `${prefix}-warm`, 0, f['warmup-runs'], f.partitions)
    const before = await sample(f['warmup-runs'])
    progress(BENCH, `${fmtInt(f.runs)} runs of one event each`)
    const t0 = nowMs()
    await produceRuns(producer, topic, prefix, 0, f.runs, f.partitions)
    const after = await sample(f['warmup-runs'] + f.runs)
    const seconds = (nowMs() - t0) / 1000
    // Diagnosis only, after the measurement: what of the RSS is pages jemalloc holds freed and has not returned yet.
    await p.command('SYSTEM JEMALLOC PURGE')
    await sleep(f['release-ms'])
    const purged = { mem: await p.memory(true), engine: await engineSample(p) }
    const runs = await p.query<{ n: string }>(`SELECT count() AS n FROM ${DATABASE}.runs`)
    const stats = await p.stats()
    await producer.disconnect()
    await p.stop()
    await deleteTopics(b, derivedTopics(topic))

    const ratio = after.mem.rss / before.mem.rss
    const heapRatio = after.mem.heapUsed / before.mem.heapUsed
    const row = (label: string, s: MemorySample, atGc?: MemorySample): string =>
      `  ${label.padEnd(34)} RSS ${mib(s.rss)} MiB (anon ${mib(s.rssAnon)}, ` +
      `file ${mib(s.rssFile, 6)}${atGc === undefined ? '' : `; right after the first GC ${mib(atGc.rss, 0)}`}) ` +
      `  heap used ${mib(s.heapUsed, 6)} of ${mib(s.heapTotal, 0)} MiB   external ${mib(s.external, 6)} ` +
      `MiB (array buffers ${mib(s.arrayBuffers, 0)})`
    const engineRow = (e: EngineSample): string => {
      const m = (k: (typeof ENGINE_METRICS)[number]): string => mib(e.metrics[k] ?? Number.NaN, 6)
      const indent = ''.padEnd(36)
      return [
        `${indent} ClickHouse MemoryTracking ${m('MemoryTracking')} MiB; ` +
          `jemalloc allocated ${mib(e.jemalloc.allocated, 6)}, ` +
          (`resident ${mib(e.jemalloc.resident, 6)}, retained (address space, ` +
            `not RSS) ${mib(e.jemalloc.retained, 6)} MiB`),
        `${indent} caches (MiB): mark ${m('MarkCacheBytes')}, primary index ${m('PrimaryIndexCacheBytes')}, ` +
          `uncompressed ${m('UncompressedCacheBytes')}, query ${m('QueryCacheBytes')}, query condition ` +
          `${m('QueryConditionCacheBytes')}, compiled expressions ${m('CompiledExpressionCacheBytes')}`,
        `${indent} parts: ${fmtInt(e.parts.active)} active, ${fmtInt(e.parts.outdated)} outdated; primary ` +
          `keys ${mib(e.parts.primaryKeyBytes, 6)} MiB, marks ${mib(e.parts.marksBytes, 6)} MiB`,
      ].join('\n')
    }
    return {
      ratio,
      heapRatio,
      lines: [
        row('after start-up', started),
        row(`before (after ${fmtInt(f['warmup-runs'])} warm-up runs)`, before.mem, before.atGc),
        engineRow(before.engine),
        row(`after ${fmtInt(f.runs)} more runs`, after.mem, after.atGc),
        engineRow(after.engine),
        row('then SYSTEM JEMALLOC PURGE', purged.mem),
        engineRow(purged.engine),
        `  ${fmtInt(Number(runs[0]?.n ?? 0))} runs listed; ${fmtInt(stats.processor.events)} events ` +
          `in ${fmtInt(stats.processor.flushes)} flushes, ${fmt(seconds, 0)} s (${fmtInt(f.runs / seconds)} ` +
          `runs/s)${after.mem.gc ? '' : '; gc unavailable!'}`,
        `  RSS after / before: ${fmt(ratio, 3)}; heap used after / before: ${fmt(heapRatio, 3)}`,
      ],
    }
  } finally {
    rmSync(dataDir, { recursive: true, force: true })
  }
}

async function main(): Promise<void> {
  const f = parseFlags(
    BENCH,
    'Processor RSS before and after many runs of one event each: per-run state must be released.',
    process.argv.slice(2),
    process.env,
    FLAGS,
  )
  await withBroker(BENCH, f['kafka-port'], async (b) => {
    const rounds: Round[] = []
    for (let i = 1; i <= f.rounds; i++) {
      if (f.rounds > 1) progress(BENCH, `round ${i} of ${f.rounds}`)
      rounds.push(await round(b, f))
    }
    const ratios = rounds.map((r) => r.ratio)
    const median = medianOf(ratios)
    process.stdout.write(
      [
        `${BENCH}: one processor (embedded ClickHouse in the same process), ${fmtInt(f.runs)} runs of one event ` +
          `each after ${fmtInt(f['warmup-runs'])} warm-up runs, ${f.partitions} partitions, raw storage ` +
          `${f.raw ? 'on' : 'off'}; each sample ${f['settle-s']} s idle, then a forced GC, ` +
          `${fmtInt(f['release-ms'])} ms and another GC; ${fmtInt(f.rounds)} round(s), each with a fresh ` +
          `processor; load average ${os
            .loadavg()
            .map((l) => fmt(l, 1))
            .join(' ')}`,
        ...rounds.flatMap((r, i) => [...(f.rounds > 1 ? [`round ${i + 1}`] : []), ...r.lines]),
        `RSS after / before${f.rounds > 1 ? `: ${ratios.map((r) => fmt(r, 3)).join(', ')}; median` : ''} ` +
          `${fmt(median, 3)}, heap used ${fmt(medianOf(rounds.map((r) => r.heapRatio)), 3)} (target RSS ` +
          `<= ${TARGET_RATIO}x) -> ${median <= TARGET_RATIO ? 'met' : 'NOT met'}`,
      ].join('\n') + '\n',
    )
  })
}

function medianOf(xs: readonly number[]): number {
  const s = [...xs].sort((a, b) => a - b)
  const mid = s.length >> 1
  return s.length % 2 === 1 ? s[mid]! : (s[mid - 1]! + s[mid]!) / 2
}

function mib(n: number, width = 7): string {
  return (Number.isFinite(n) ? fmt(n / MB, 1) : '?').padStart(width)
}

runMain(main)
