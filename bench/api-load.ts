/**
 * bench/api-load (issue 9): the API under 50 concurrent clients.
 *
 * A server (child process: processor, API, embedded ClickHouse) holds
 * --runs finished runs of --run-events events each. autocannon drives 50
 * connections for --seconds against GET /api/v1/runs and the report and
 * timeline of those runs, twice per round: once with the server idle (the
 * same-run baseline) and once while a producer streams --rate events/s of
 * another run into it. Prints per condition the median over rounds of p50
 * and p99 latency and of requests/s, with the spread, and the errors.
 * Target: p99 < 100 ms and no errors while ingesting.
 */
import { rmSync } from 'node:fs'
import autocannon from 'autocannon'
import type { Producer } from 'kafkajs'
import { RECORD_KIND } from '../schemas/events.v1.js'
import { OpsBatchWriter } from '../services/core/codec/ops-batch-writer.js'
import { encodeJsonRecord } from '../services/core/codec/record-encoders.js'
import { BenchstreamError } from '../services/core/errors.js'
import {
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
  quantile,
  runMain,
  shortId,
  sleep,
  STATUS_OK,
  tempDir,
  withBroker,
} from './common.js'
import { KAFKA_FLAGS, parseFlags } from './flags.js'
import { ProcessorProcess } from './processor-process.js'

const BENCH = 'api-load'
const TARGET_P99_MS = 100

const FLAGS = {
  connections: { kind: 'int', default: 50, min: 1, max: 1000, help: 'concurrent HTTP clients' },
  seconds: { kind: 'int', default: 15, min: 3, max: 600, help: 'seconds of load per measurement' },
  rounds: { kind: 'int', default: 3, min: 1, max: 20, help: 'rounds; each measures idle and ingesting once' },
  runs: { kind: 'int', default: 10, min: 1, max: 1000, help: 'finished runs the requests read' },
  'run-events': { kind: 'int', default: 20_000, min: 100, max: 10_000_000, help: 'events per finished run' },
  rate: {
    kind: 'int',
    default: 100_000,
    min: 0,
    max: 10_000_000,
    help: 'events per second ingested during the loaded measurement',
  },
  partitions: { kind: 'int', default: 4, min: 1, max: 256, help: 'partitions of the topic' },
  ...KAFKA_FLAGS,
} as const

/** A finished run: start and end records around events spread over a minute two minutes ago. */
async function finishedRun(producer: Producer, topic: string, runId: string, events: number): Promise<void> {
  const startUs = (Date.now() - 180_000) * 1000
  const base = {
    runId,
    clientId: 'c1',
    labels: { bench: BENCH },
    workload: 'workloada',
    binding: 'memory',
    threads: 4,
    target: 0,
  }
  await producer.send({
    topic,
    acks: -1,
    messages: [
      { value: encodeJsonRecord({ kind: RECORD_KIND.RUN_LIFECYCLE, phase: 'start', atUs: startUs, ...base }) },
    ],
  })
  const messages: Array<{ value: Buffer }> = []
  for (let i = 0; i < events; i += 2000) {
    const w = new OpsBatchWriter(runId, 'c1')
    for (let j = i; j < Math.min(events, i + 2000); j++)
      w.add(
        j % 4,
        OP_READ,
        0,
        STATUS_OK,
        startUs + Math.floor((60e6 * j) / events),
        100 + (j % 900),
        100 + (j % 900),
        100,
      )
    messages.push({ value: w.finish() })
  }
  await producer.send({ topic, acks: -1, messages })
  await producer.send({
    topic,
    acks: -1,
    messages: [
      {
        value: encodeJsonRecord({
          kind: RECORD_KIND.RUN_LIFECYCLE,
          phase: 'end',
          atUs: startUs + 60e6,
          ...base,
          sent: { 'READ/OK': events },
          undelivered: 0,
          runtimeMs: 60_000,
        }),
      },
    ],
  })
}

/** Streams `rate` events/s of one run until stopped, one message every 10 ms. */
function ingest(
  producer: Producer,
  topic: string,
  runId: string,
  rate: number,
  partitions: number,
): { stop(): Promise<number> } {
  let running = true
  let sent = 0
  const loop = (async () => {
    const t0 = nowMs()
    for (let tick = 1; running; tick++) {
      const due = t0 + tick * 10
      const wait = due - nowMs()
      if (wait > 0) await sleep(wait)
      const n = Math.floor((rate * (nowMs() - t0)) / 1000) - sent
      if (n <= 0) continue
      const w = new OpsBatchWriter(runId, 'c1')
      const us = Date.now() * 1000
      for (let i = 0; i < n; i++) w.add(i % 8, OP_READ, 0, STATUS_OK, us - i, 200 + (i % 500), 200 + (i % 500), 100)
      sent += n
      await producer.send({ topic, acks: -1, messages: [{ partition: tick % partitions, value: w.finish() }] })
    }
  })()
  return {
    async stop() {
      running = false
      await loop
      return sent
    },
  }
}

interface Measurement {
  p50: number
  p99: number
  rps: number
  errors: number
  non2xx: number
  requests: number
}

async function load(
  apiUrl: string,
  runIds: readonly string[],
  f: { connections: number; seconds: number },
): Promise<Measurement> {
  const requests = [
    { method: 'GET' as const, path: '/api/v1/runs' },
    ...runIds.flatMap((r) => [
      { method: 'GET' as const, path: `/api/v1/runs/${r}/report` },
      { method: 'GET' as const, path: `/api/v1/runs/${r}/timeline` },
    ]),
  ]
  const r = await autocannon({ url: apiUrl, connections: f.connections, duration: f.seconds, requests })
  return {
    p50: r.latency.p50,
    p99: r.latency.p99,
    rps: r.requests.average,
    errors: r.errors + r.timeouts,
    non2xx: r.non2xx,
    requests: r.requests.total,
  }
}

async function main(): Promise<void> {
  const f = parseFlags(
    BENCH,
    'API latency under 50 concurrent clients on finished runs, idle and while ingesting.',
    process.argv.slice(2),
    process.env,
    FLAGS,
  )
  const id = shortId()
  const topic = `bench-api-load-${id}`
  await withBroker(BENCH, f['kafka-port'], async (b) => {
    await createTopic(b.kafka, topic, f.partitions)
    const dataDir = tempDir('api-load')
    try {
      const p = await ProcessorProcess.start({
        ...processorEnv({
          brokers: b.brokers,
          topic,
          partitions: f.partitions,
          dataDir,
          group: `bench-api-load-${id}`,
          storeRaw: true,
        }),
        BENCH_API: '1',
        API_PORT: '0',
        ALERTS_ENABLED: 'false',
      })
      const producer = await openProducer(b.kafka)
      const runIds = Array.from({ length: f.runs }, (_, i) => `api-load-${id}-${i}`)
      progress(BENCH, `${f.runs} finished runs of ${fmtInt(f['run-events'])} events`)
      for (const r of runIds) await finishedRun(producer, topic, r, f['run-events'])
      await p.watch(`SELECT 'all' AS k, sum(count) AS v FROM ${DATABASE}.op_windows`, 500)
      const done = await p.waitForValue('all', f.runs * f['run-events'], { stallMs: 120_000 })
      if (!done.reached)
        throw new BenchstreamError('BS_ERR_TIMEOUT', `only ${done.v} events of the finished runs were stored`)
      const results: Array<{ ingesting: boolean; m: Measurement; ingested: number }> = []
      for (let round = 0; round < f.rounds; round++) {
        for (const ingesting of round % 2 === 0 ? [false, true] : [true, false]) {
          progress(
            BENCH,
            `round ${round + 1}: ${f.connections} connections for ${f.seconds} ` +
              `s, ${ingesting ? `ingesting ${fmtInt(f.rate)} events/s` : 'idle'}`,
          )
          const stream =
            ingesting && f.rate > 0
              ? ingest(producer, topic, `api-load-live-${id}-${round}`, f.rate, f.partitions)
              : undefined
          if (stream !== undefined) await sleep(3000) // the processor at full speed before the load starts
          const m = await load(p.apiUrl, runIds, f)
          const ingested = (await stream?.stop()) ?? 0
          results.push({ ingesting, m, ingested })
        }
      }
      await producer.disconnect()
      await p.stop()
      await deleteTopics(b, derivedTopics(topic))

      const lines = [
        `${BENCH}: ${f.connections} connections, ${f.seconds} s per measurement, ${f.rounds} rounds ` +
          `alternating idle/ingesting ${fmtInt(f.rate)} events/s; requests cycle over GET /api/v1/runs ` +
          `and the report and timeline of ${f.runs} finished runs (${fmtInt(f['run-events'])} events each)`,
      ]
      for (const r of results)
        lines.push(
          `  ${r.ingesting ? 'ingesting' : 'idle     '}  p50 ${fmt(r.m.p50, 1)} ms  p99 ${fmt(r.m.p99, 1)} ` +
            `ms  ${fmtInt(r.m.rps)} req/s  ${fmtInt(r.m.requests)} requests, ${r.m.errors} errors, ${r.m.non2xx} ` +
            'non-2xx' +
            (r.ingesting
              ? `  (ingested ${fmtInt(r.ingested)} events, ${fmtInt(r.ingested / (f.seconds + 3))} events/s)`
              : ''),
        )
      let ok = true
      for (const ingesting of [false, true]) {
        const rs = results.filter((r) => r.ingesting === ingesting).map((r) => r.m)
        const med = (xs: number[]): string =>
          `${fmt(quantile(xs, 0.5), 1)} (min ${fmt(Math.min(...xs), 1)}, max ${fmt(Math.max(...xs), 1)})`
        const errors = rs.reduce((a, m) => a + m.errors + m.non2xx, 0)
        const p99 = quantile(
          rs.map((m) => m.p99),
          0.5,
        )
        if (ingesting) ok = p99 < TARGET_P99_MS && errors === 0
        lines.push(
          `  ${ingesting ? 'ingesting' : 'idle'}: median p50 ${med(rs.map((m) => m.p50))} ` +
            `ms, p99 ${med(rs.map((m) => m.p99))} ` +
            `ms, ${med(rs.map((m) => m.rps))} req/s, ${errors} errors or non-2xx`,
        )
      }
      lines.push(`  target while ingesting: p99 < ${TARGET_P99_MS} ms and no errors -> ${ok ? 'met' : 'NOT met'}`)
      process.stdout.write(lines.join('\n') + '\n')
    } finally {
      rmSync(dataDir, { recursive: true, force: true })
    }
  })
}

runMain(main)
