/**
 * bench/memory (issue 4): the processor's memory must not grow with the
 * number of events it has processed.
 *
 * One processor (child process, --expose-gc, embedded ClickHouse) reads one
 * run's events in equal steps of `checkpoint` events; each step is produced
 * and then processed completely (every event counted in op_windows) before
 * the next. After the first and the last step, with the processor idle, its
 * RSS and its heap after a forced GC are sampled; RSS after every step shows
 * the trend, and RSS sampled during the run gives the peak.
 *
 * Target: no growth: heap used after the last step within 10% of the first,
 * and the highest RSS of the later half of the steps within 10% of the
 * highest of the earlier half.
 */
import { rmSync } from 'node:fs'
import { BenchstreamError } from '../services/core/errors.js'
import {
  createTopic,
  DATABASE,
  deleteTopics,
  derivedTopics,
  fmt,
  fmtInt,
  nowMs,
  openProducer,
  processorEnv,
  produceEvents,
  progress,
  runMain,
  shortId,
  sleep,
  SyntheticStream,
  tempDir,
  withBroker,
} from './common.js'
import { KAFKA_FLAGS, parseFlags } from './flags.js'
import { ProcessorProcess, type MemorySample } from './processor-process.js'

const BENCH = 'memory'
/** RSS or heap growth beyond this ratio between the checkpoints counts as growing. */
const GROWTH_LIMIT = 1.1
const MB = 1024 * 1024

const FLAGS = {
  events: {
    kind: 'int',
    default: 5_000_000,
    min: 20_000,
    max: 2_000_000_000,
    help: 'events in total (20M for the full-size check)',
  },
  checkpoint: {
    kind: 'int',
    default: 1_000_000,
    min: 10_000,
    max: 2_000_000_000,
    help:
      'events per step: produced, then processed completely before the next step; the first sample ' +
      'follows the first step',
  },
  partitions: { kind: 'int', default: 4, min: 1, max: 256, help: 'partitions of the topic' },
  clients: { kind: 'int', default: 4, min: 1, max: 1000, help: 'simulated driver clients (one run)' },
  'event-rate': {
    kind: 'int',
    default: 200_000,
    min: 1000,
    max: 100_000_000,
    help: 'event-time rate of the simulated run, events/s over all clients',
  },
  raw: {
    kind: 'bool',
    default: true,
    help: 'store raw events too (BENCHSTREAM_STORE_RAW_EVENTS; the processor default is on)',
  },
  'settle-s': {
    kind: 'int',
    default: 3,
    min: 0,
    max: 600,
    help: 'idle seconds before each sample (lets background merges and flushes finish)',
  },
  ...KAFKA_FLAGS,
} as const

interface Checkpoint {
  events: number
  sample: MemorySample
}

/** Least-squares slope of ys over their indexes (per step). */
function leastSquaresSlope(ys: readonly number[]): number {
  const n = ys.length
  if (n < 2) return 0
  const mx = (n - 1) / 2
  const my = ys.reduce((a, b) => a + b, 0) / n
  let num = 0
  let den = 0
  ys.forEach((y, x) => {
    num += (x - mx) * (y - my)
    den += (x - mx) ** 2
  })
  return num / den
}

async function main(): Promise<void> {
  const f = parseFlags(
    BENCH,
    'Processor RSS and heap after a checkpoint and after all events: they must not grow with the event count.',
    process.argv.slice(2),
    process.env,
    FLAGS,
  )
  if (f.checkpoint >= f.events)
    throw new BenchstreamError(
      'BS_ERR_USAGE',
      `--checkpoint ${f.checkpoint} is not allowed: it must be below --events (${f.events})`,
    )
  const id = shortId()
  const topic = `bench-memory-${id}`
  await withBroker(BENCH, f['kafka-port'], async (b) => {
    await createTopic(b.kafka, topic, f.partitions)
    const dataDir = tempDir('memory')
    try {
      const p = await ProcessorProcess.start(
        processorEnv({
          brokers: b.brokers,
          topic,
          partitions: f.partitions,
          dataDir,
          group: `bench-memory-${id}`,
          storeRaw: f.raw,
        }),
        ['--expose-gc'],
      )
      await p.watch(`SELECT 'all' AS k, sum(count) AS v FROM ${DATABASE}.op_windows`, 200)
      const start = await p.memory(true)
      let peakRss = start.rss
      let sampling = true
      const sampler = (async () => {
        while (sampling) {
          peakRss = Math.max(peakRss, (await p.memory(false)).rss)
          await sleep(500)
        }
      })()
      const stream = new SyntheticStream({
        runId: `memory-${id}`,
        clients: f.clients,
        eventsPerSecond: f['event-rate'],
        startUs: (Date.now() - 120_000) * 1000 - (f.events / f['event-rate']) * 1e6,
      })
      const producer = await openProducer(b.kafka)
      const checkpoints: Checkpoint[] = []
      const trend: number[] = []
      const t0 = nowMs()
      let total = 0
      // Equal steps: each step leaves the same backlog for the consumer, so a
      // difference between the first and the last sample comes from the number
      // of events processed, not from larger fetches after a larger backlog.
      const steps = Math.ceil(f.events / f.checkpoint)
      for (let step = 1; step <= steps; step++) {
        const upTo = Math.min(f.events, step * f.checkpoint)
        await produceEvents(producer, topic, f.partitions, upTo - total, (n) => stream.next(n))
        total = upTo
        const done = await p.waitForValue('all', total, { stallMs: 120_000 })
        if (!done.reached)
          throw new BenchstreamError(
            'BS_ERR_TIMEOUT',
            `the processor counted ${done.v} events of ${total} and then stopped moving`,
          )
        if (step === 1 || step === steps) {
          await sleep(f['settle-s'] * 1000)
          checkpoints.push({ events: total, sample: await p.memory(true) })
        }
        const rss = step === 1 || step === steps ? checkpoints.at(-1)!.sample.rss : (await p.memory(true)).rss
        trend.push(rss)
        progress(BENCH, `${fmtInt(total)} events counted; RSS ${fmt(rss / MB, 0)} MiB`)
      }
      const seconds = (nowMs() - t0) / 1000
      sampling = false
      await sampler
      const stats = await p.stats()
      await producer.disconnect()
      await p.stop()
      await deleteTopics(b, derivedTopics(topic))

      const [a, z] = [checkpoints[0]!, checkpoints[1]!]
      const rssRatio = z.sample.rss / a.sample.rss
      const heapRatio = z.sample.heapUsed / a.sample.heapUsed
      // RSS after one step is noisy (allocator and ClickHouse caches rise and
      // fall by hundreds of MiB with raw storage on). A leak makes new highs:
      // with enough steps the high-water mark of the later half against the
      // earlier half judges growth; the two-point ratio is shown beside it.
      const half = Math.floor(trend.length / 2)
      const trendRatio =
        trend.length >= 4 ? Math.max(...trend.slice(half)) / Math.max(...trend.slice(0, half)) : rssRatio
      const slope = leastSquaresSlope(trend)
      const grows = heapRatio > GROWTH_LIMIT || trendRatio > GROWTH_LIMIT
      const row = (label: string, s: MemorySample): string =>
        `  ${label.padEnd(26)} RSS ${fmt(s.rss / MB, 1).padStart(7)} MiB ` +
        `  heap used ${fmt(s.heapUsed / MB, 1).padStart(6)} ` +
        (`MiB   heap total ${fmt(s.heapTotal / MB, 1).padStart(6)} MiB ` +
          `  external ${fmt(s.external / MB, 1).padStart(6)} `) +
        `MiB (array buffers ${fmt(s.arrayBuffers / MB, 1)})`
      const out = [
        `${BENCH}: one processor, ${fmtInt(f.events)} events (${f.partitions} partitions, ${f.clients} ` +
          `clients, ${fmt(f.events / f['event-rate'], 0)} s of event time), raw storage ${f.raw ? 'on' : 'off'}, ` +
          (`embedded ClickHouse in the same process; samples after a forced ` +
            `GC${a.sample.gc ? '' : ' (gc unavailable!)'}, `) +
          `${f['settle-s']} s idle`,
        row('after start-up', start),
        row(`after ${fmtInt(a.events)} events`, a.sample),
        row(`after ${fmtInt(z.events)} events`, z.sample),
        `  RSS after each step of ${fmtInt(f.checkpoint)} events, MiB: ${trend.map((x) => fmt(x / MB, 0)).join(' ')}`,
        `  peak RSS while processing: ${fmt(peakRss / MB, 1)} MiB (sampled ` +
          `every 500 ms); ${fmtInt(stats.processor.events)} ` +
          `events in ${stats.processor.flushes} flushes, ${fmt(seconds, 0)} s`,
        `  ratio ${fmtInt(z.events)}/${fmtInt(a.events)} events: RSS ${fmt(rssRatio, 3)}, heap used ` +
          `${fmt(heapRatio, 3)}; RSS over the steps: highest of the later half / earlier half ${fmt(trendRatio, 3)}, ` +
          `slope ${fmt(slope / MB, 1, true)} MiB per step`,
        `  target: no growth with events (heap ratio and RSS high-water ` +
          `ratio <= ${GROWTH_LIMIT}` +
          (trend.length >= 4 ? '' : '; with under 4 steps the two-point RSS ratio stands for the trend') +
          ') ' +
          `-> ${grows ? 'NOT met' : 'met'}`,
      ]
      process.stdout.write(out.join('\n') + '\n')
    } finally {
      rmSync(dataDir, { recursive: true, force: true })
    }
  })
}

runMain(main)
