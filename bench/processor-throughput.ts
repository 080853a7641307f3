/**
 * bench/processor-throughput (issue 4): how many events per second one
 * processor takes from Kafka into ClickHouse, against what Kafka's own
 * consumer reads from the same topic on the same machine.
 *
 * N synthetic events go into a fresh topic as OPS batches of 4,096 events.
 * Then, in each of --rounds rounds: (a) org.apache.kafka.tools.ConsumerPerformance
 * reads the topic: the ceiling set by the broker and the network; (b) a
 * processor (child process, its own group and embedded ClickHouse) reads it
 * from the beginning until ClickHouse's op_windows count all N events, once
 * with raw-event storage on (every event also into `ops`) and once off, in
 * alternating order. Each figure is printed with the load average around it
 * (the machine is shared); the summary gives median, min and max per
 * condition and the ratio of the medians to ConsumerPerformance's.
 *
 * --profile adds runs under the V8 profiler (JS hot spots); --perf records
 * every processor run with Linux perf (cpu-clock, all threads: the embedded
 * ClickHouse works on its own threads, invisible to a JS profile) and prints
 * the busiest libraries and functions, JS ones named through
 * --perf-basic-prof.
 *
 * Targets: >= 2,000,000 events/s with raw storage on, >= 5,000,000 with it off (issue 21 raised issue 4's 1M / 3M).
 * ConsumerPerformance is run by consumer-performance.ts; profiles, perf and CPU by processor-time-spent.ts.
 */
import { rmSync } from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import {
  createTopic,
  DATABASE,
  deleteTopics,
  derivedTopics,
  fmt,
  fmtInt,
  median,
  nowMs,
  openProducer,
  processorEnv,
  produceEvents,
  progress,
  runMain,
  shortId,
  SyntheticStream,
  tempDir,
  withBroker,
} from './common.js'
import { KAFKA_FLAGS, parseFlags } from './flags.js'
import { consumerPerformance, type ConsumerPerf } from './consumer-performance.js'
import { ProcessorProcess } from './processor-process.js'
import { clickhouseEvents, cpuSeconds, engineLines, hotSpots, perfRecord, perfReport } from './processor-time-spent.js'

const BENCH = 'processor-throughput'
const TARGET_RAW_ON_EVENTS_PER_S = 2_000_000
const TARGET_RAW_OFF_EVENTS_PER_S = 5_000_000
/** Issue 33: the processor's events/s over ConsumerPerformance's on the same topic in the same round. */
const TARGET_CP_RATIO: Record<string, number> = { 'raw-on': 0.1, 'raw-off': 0.25 }
const EVENTS_PER_MESSAGE = 4096
/** The processor's default FLUSH_INTERVAL_MS: the last rows land up to one interval after the last message. */
const FLUSH_MS = 1000

const FLAGS = {
  events: {
    kind: 'int',
    // 20M, not 5M: a run counts up to the last visible row, and the last flush interval weighs on a run of a second.
    default: 20_000_000,
    min: 10_000,
    max: 2_000_000_000,
    help: 'events to produce and process',
  },
  partitions: { kind: 'int', default: 4, min: 1, max: 256, help: 'partitions of the topic' },
  clients: { kind: 'int', default: 4, min: 1, max: 1000, help: 'simulated driver clients (one run)' },
  'event-rate': {
    kind: 'int',
    default: 200_000,
    min: 1000,
    max: 100_000_000,
    help: 'event-time rate of the simulated run, events/s over all clients (sets how many windows the events span)',
  },
  'raw-run': { kind: 'bool', default: true, help: 'also measure a processor with raw-event storage on' },
  rounds: {
    kind: 'int',
    default: 1,
    min: 1,
    max: 20,
    help: 'rounds of ConsumerPerformance + each processor condition (alternating order)',
  },
  profile: {
    kind: 'bool',
    default: false,
    help:
      'add profiled runs (V8 CPU profiler in the processor, raw storage off, and on with --raw-run) ' +
      'and print their hot spots',
  },
  perf: {
    kind: 'bool',
    default: false,
    help:
      'record every processor run with Linux perf (needs perf and perf_event_paranoid allowing it) ' +
      'and print the busiest libraries and functions',
  },
  'stall-s': {
    kind: 'int',
    default: 60,
    min: 5,
    max: 3600,
    help: 'give up on a processor whose count has not moved for this long',
  },
  ...KAFKA_FLAGS,
} as const

interface ProcessorRun {
  label: string
  round: number
  /** 1-minute load average when the run started and when it ended. */
  load: [number, number]
  eventsPerS: number
  seconds: number
  /** From group join to the last message taken from Kafka. */
  consumeSeconds: number
  counted: number
  reached: boolean
  startupMs: number
  flushes: number
  meanFlushMs: number
  rawRows: number | undefined
  profile: string | undefined
  perf: string | undefined
  /** ClickHouse's own counters (system.events) at the end of the run: the engine's time by phase. */
  events: Map<string, number>
  /**
   * CPU seconds of the processor from group join until all events were counted: all threads, and the main (JS) thread.
   */
  cpu: { all: number; main: number }
}

async function main(): Promise<void> {
  const f = parseFlags(
    BENCH,
    "One processor from Kafka into ClickHouse vs Kafka's own ConsumerPerformance on the same topic.",
    process.argv.slice(2),
    process.env,
    FLAGS,
  )
  const id = shortId()
  const topic = `bench-throughput-${id}`
  const runs: ProcessorRun[] = []
  await withBroker(BENCH, f['kafka-port'], async (b) => {
    await createTopic(b.kafka, topic, f.partitions)
    const stream = new SyntheticStream({
      runId: `throughput-${id}`,
      clients: f.clients,
      eventsPerSecond: f['event-rate'],
      startUs: (Date.now() - 120_000) * 1000 - (f.events / f['event-rate']) * 1e6,
      eventsPerMessage: EVENTS_PER_MESSAGE,
    })
    progress(BENCH, `producing ${fmtInt(f.events)} events into ${topic} (${f.partitions} partitions)`)
    const producer = await openProducer(b.kafka)
    let bytes = 0
    const produced = await produceEvents(producer, topic, f.partitions, f.events, (n) => {
      const m = stream.next(n)
      bytes += m.length
      return m
    })
    await producer.disconnect()
    const eventsPerMessage = produced.events / produced.messages
    progress(BENCH, `produced in ${fmt(produced.ms / 1000, 1)} s; running ConsumerPerformance`)
    const perf = await consumerPerformance(b.brokers, topic, produced.messages)

    const measure = async (
      label: string,
      round: number,
      storeRaw: boolean,
      profileDir?: string,
    ): Promise<ProcessorRun> => {
      const dataDir = tempDir(`processor-${label}`)
      const perfFile = f.perf ? path.join(dataDir, 'perf.data') : undefined
      let p: ProcessorProcess | undefined
      try {
        progress(BENCH, `processor (${label}, round ${round}): starting`)
        const loadBefore = os.loadavg()[0]!
        // --perf-basic-prof: perf names JIT-compiled JS functions (from /tmp/perf-<pid>.map).
        p = await ProcessorProcess.start(
          processorEnv({
            brokers: b.brokers,
            topic,
            partitions: f.partitions,
            dataDir,
            group: `bench-throughput-${id}-${label}-${round}`,
            storeRaw,
            flushMs: FLUSH_MS,
          }),
          perfFile === undefined ? [] : ['--perf-basic-prof'],
        )
        const recording = perfFile === undefined ? undefined : perfRecord(p.pid, perfFile)
        const pid = p.pid
        const cpuAtStart = cpuSeconds(pid)
        if (profileDir !== undefined) await p.profileStart()
        await p.watch(`SELECT 'all' AS k, sum(count) AS v FROM ${DATABASE}.op_windows`, 200)
        let lastReport = 0
        const done = await p.waitForValue('all', f.events, {
          stallMs: f['stall-s'] * 1000,
          onProgress: (v) => {
            if (nowMs() - lastReport > 5000) {
              lastReport = nowMs()
              progress(BENCH, `processor (${label}): ${fmtInt(v)} events counted`)
            }
          },
        })
        const cpuAtEnd = cpuSeconds(pid)
        await recording?.stop()
        const profFile = profileDir === undefined ? undefined : path.join(profileDir, `${label}.cpuprofile`)
        if (profFile !== undefined) await p.profileStop(profFile)
        const stats = await p.stats()
        const rawRows = storeRaw
          ? Number((await p.query<{ n: string }>(`SELECT count() AS n FROM ${DATABASE}.ops`))[0]?.n ?? 0)
          : undefined
        const events = await clickhouseEvents(p)
        await p.stop()
        // After the process exits (its JIT map is complete) and before the map goes.
        const perfText = perfFile === undefined ? undefined : perfReport(perfFile, 30)
        rmSync(`/tmp/perf-${pid}.map`, { force: true })
        const seconds = (done.changedAtMs - p.readyAtMs) / 1000
        return {
          label,
          round,
          load: [loadBefore, os.loadavg()[0]!],
          eventsPerS: done.v / seconds,
          seconds,
          consumeSeconds: (stats.lastMessageAtMs - p.readyAtMs) / 1000,
          counted: done.v,
          reached: done.reached,
          startupMs: p.startupMs,
          flushes: stats.processor.flushes,
          meanFlushMs: stats.processor.flushes > 0 ? stats.processor.flushMsTotal / stats.processor.flushes : 0,
          rawRows,
          profile: profFile === undefined ? undefined : hotSpots(profFile, 15),
          perf: perfText,
          events,
          cpu: { all: cpuAtEnd.all - cpuAtStart.all, main: cpuAtEnd.main - cpuAtStart.main },
        }
      } finally {
        // A failed measurement still stops its processor before its data directory goes.
        await p?.stop()
        rmSync(dataDir, { recursive: true, force: true })
      }
    }

    const perfs: ConsumerPerf[] = [perf]
    const conditions: Array<[string, boolean]> = f['raw-run']
      ? [
          ['raw-on', true],
          ['raw-off', false],
        ]
      : [['raw-off', false]]
    for (let round = 1; round <= f.rounds; round++) {
      if (round > 1) perfs.push(await consumerPerformance(b.brokers, topic, produced.messages))
      for (const [label, raw] of round % 2 === 1 ? conditions : [...conditions].reverse())
        runs.push(await measure(label, round, raw))
    }
    if (f.profile) {
      const dir = tempDir('cpu-prof')
      try {
        runs.push(await measure('raw-off-profiled', 0, false, dir))
        if (f['raw-run']) runs.push(await measure('raw-on-profiled', 0, true, dir))
      } finally {
        rmSync(dir, { recursive: true, force: true })
      }
    }
    await deleteTopics(b, derivedTopics(topic))

    const kafkaEventsPerS = median(perfs.map((x) => x.fetchMsgsPerS)) * eventsPerMessage
    const out = [
      `${BENCH}: ${fmtInt(produced.events)} events in ${fmtInt(produced.messages)} ` +
        `messages (~${fmtInt(eventsPerMessage)} ` +
        `events, ${fmt(bytes / produced.messages / 1024, 1)} KiB each), ${f.partitions} partitions, ` +
        `${f.clients} clients, ${fmt(f.events / f['event-rate'], 0)} s of event time, embedded ClickHouse`,
      `  produced          : ${fmt(produced.ms / 1000, 1)} s, ${fmtInt(produced.events / (produced.ms / 1000))} ` +
        `events/s (kafkajs producer), ${fmt(bytes / 1e6, 1)} MB`,
      ...perfs.map(
        (x, i) =>
          `  kafka consumer ${String(i + 1).padStart(2)} : ${fmtInt(x.fetchMsgsPerS * eventsPerMessage)} ` +
          `events/s = ${fmtInt(x.fetchMsgsPerS)} msgs/s x ${fmtInt(eventsPerMessage)}, ${fmt(x.fetchMbPerS, 1)} ` +
          (`MB/s (ConsumerPerformance, fetch time ${fmt(x.seconds, 2)} s; ` +
            `with group join ${fmtInt(x.msgsPerS * eventsPerMessage)} events/s)`),
      ),
    ]
    for (const r of runs) {
      out.push(
        `  processor ${r.label.padEnd(8)}${r.round > 0 ? ` #${r.round}` : ''}: ${fmtInt(r.eventsPerS)} ` +
          (`events/s (${fmt(r.seconds, 2)} s from group join to ${fmtInt(r.counted)} ` +
            `events in op_windows${r.reached ? '' : `, INCOMPLETE: expected ${fmtInt(produced.events)}`}; `) +
          `last message taken from Kafka at ${fmt(r.consumeSeconds, 2)} s = ${fmtInt(r.counted / r.consumeSeconds)} ` +
          `events/s; ${r.flushes} flushes, mean ${fmt(r.meanFlushMs, 0)} ms; flush interval ${FLUSH_MS} ` +
          (`ms${r.rawRows === undefined ? '' : `; ops rows ${fmtInt(r.rawRows)}`}; ` +
            `CPU ${fmt((r.cpu.all * 1e6) / r.counted, 2)} `) +
          `µs/event, main thread ${fmt((r.cpu.main * 1e6) / r.counted, 2)}; load average ${fmt(r.load[0], 2)} ` +
          `-> ${fmt(r.load[1], 2)})`,
      )
    }
    const targets: Record<string, number> = {
      'raw-on': TARGET_RAW_ON_EVENTS_PER_S,
      'raw-off': TARGET_RAW_OFF_EVENTS_PER_S,
    }
    out.push(`  kafka consumer, median of ${perfs.length}: ${fmtInt(kafkaEventsPerS)} events/s`)
    for (const [label] of conditions) {
      const mine = runs.filter((r) => r.label === label)
      const rates = mine.map((r) => r.eventsPerS)
      const m = median(rates)
      const complete = mine.every((r) => r.reached)
      const cpu = median(mine.map((r) => (r.cpu.all * 1e6) / r.counted))
      const mainCpu = median(mine.map((r) => (r.cpu.main * 1e6) / r.counted))
      out.push(
        `  ${label.padEnd(7)}: median ${fmtInt(m)} events/s (min ${fmtInt(Math.min(...rates))}, max ` +
          `${fmtInt(Math.max(...rates))}, ${rates.length} runs); CPU median ${fmt(cpu, 2)} µs/event (main ` +
          `thread ${fmt(mainCpu, 2)}); ratio to ConsumerPerformance ${fmt(m / kafkaEventsPerS, 3)}; target ` +
          (`>= ${fmtInt(targets[label]!)} events/s -> ` +
            `${!complete ? 'NOT judged: a run was incomplete' : m >= targets[label]! ? 'met' : 'NOT met'} `) +
          `(${fmt((100 * m) / targets[label]!, 0)}% of target)`,
      )
      // Each round's processor run against that round's ConsumerPerformance: load that moves both cancels out.
      const perRound = mine.map((r) => r.eventsPerS / (perfs[r.round - 1]!.fetchMsgsPerS * eventsPerMessage))
      const cpTarget = TARGET_CP_RATIO[label]!
      out.push(
        `  ${label.padEnd(7)}: per round over that round's ConsumerPerformance ${fmt(median(perRound), 3)} ` +
          `[${fmt(Math.min(...perRound), 3)}..${fmt(Math.max(...perRound), 3)}] ` +
          `(${perRound.map((x) => fmt(x, 3)).join(' ')}); target >= ${cpTarget} -> ` +
          `${!complete ? 'NOT judged: a run was incomplete' : median(perRound) >= cpTarget ? 'met' : 'NOT met'}`,
      )
    }
    for (const r of runs)
      if (r.profile !== undefined)
        out.push(
          `  hot spots of the profiled run (${r.label}, ${fmtInt(r.eventsPerS)} ` +
            `events/s under the profiler):\n${r.profile}`,
        )
    for (const r of runs)
      out.push(`  engine of ${r.label}${r.round > 0 ? ` #${r.round}` : ''}:\n${engineLines(r.events, r.counted)}`)
    for (const r of runs)
      if (r.perf !== undefined)
        out.push(
          `  native profile of ${r.label}${r.round > 0 ? ` #${r.round}` : ''} (${fmtInt(r.eventsPerS)} ` +
            `events/s under perf):\n${r.perf}`,
        )
    process.stdout.write(out.join('\n') + '\n')
  })
}

runMain(main)
