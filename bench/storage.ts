/**
 * bench/storage (issue 4): bytes on disk per raw event in `ops`, compressed,
 * after merges.
 *
 * A YCSB-like run goes through Kafka and one processor (child process, raw
 * storage on, embedded ClickHouse): a closed loop of --clients x --threads
 * workers, each issuing its next operation when the previous one completes
 * (start = previous start + latency + a few µs), log-normal latencies,
 * reads and updates half and half, 90% of reads cache hits, 1 in 1,000 an
 * error. Each client's events go out in OPS batches of 4,096, spread over the
 * partitions. This is what makes the columns cost what they cost: many
 * workers interleave in `start`, threads and clients alternate, Kafka
 * offsets interleave across partitions. (The synthetic stream of the other
 * benches advances each client's clock by a fixed step, which compresses far
 * better than any real run.)
 *
 * Once every event is counted, the processor stops, this process opens its
 * data directory, `OPTIMIZE TABLE ops FINAL` merges the parts, and
 * system.columns gives each column's compressed bytes: printed per
 * column and per event, with the total from system.parts. The same rows are
 * then copied into a table with version 1's codecs (schemas/clickhouse/0001)
 * and measured the same way: the baseline, in the same run.
 *
 * Target: <= 4 bytes per raw event.
 */
import { rmSync } from 'node:fs'
import os from 'node:os'
import { openClickHouse, queryRows, type ClickHouse } from '../services/adapters/clickhouse/client.js'
import { readInfraConfig } from '../services/common/infra-config.js'
import { OpsBatchWriter } from '../services/core/codec/ops-batch-writer.js'
import { Rng } from '../services/core/workload/random.js'
import {
  createTopic,
  DATABASE,
  deleteTopics,
  derivedTopics,
  fmt,
  fmtInt,
  lognormalUs,
  nowMs,
  openProducer,
  processorEnv,
  produceEvents,
  progress,
  runMain,
  shortId,
  tempDir,
  withBroker,
} from './common.js'
import { KAFKA_FLAGS, parseFlags } from './flags.js'
import { ProcessorProcess } from './processor-process.js'

const BENCH = 'storage'
const TARGET_BYTES_PER_EVENT = 4
const EVENTS_PER_MESSAGE = 4096

const FLAGS = {
  events: { kind: 'int', default: 5_000_000, min: 10_000, max: 2_000_000_000, help: 'events of the run' },
  clients: { kind: 'int', default: 4, min: 1, max: 1000, help: 'driver clients' },
  threads: { kind: 'int', default: 8, min: 1, max: 1000, help: 'worker threads per client' },
  'latency-us': {
    kind: 'int',
    default: 500,
    min: 1,
    max: 1_000_000,
    help: 'median latency, µs (log-normal, sigma 0.7)',
  },
  'wait-us': {
    kind: 'int',
    default: 0,
    min: 0,
    max: 1_000_000,
    help:
      'mean time an operation waits behind its schedule (intended - actual start, exponential), µs; ' +
      '0 = an unthrottled run',
  },
  partitions: { kind: 'int', default: 4, min: 1, max: 256, help: 'partitions of the topic' },
  'compare-v1': { kind: 'bool', default: true, help: "also measure the same rows with version 1's codecs" },
  'stall-s': {
    kind: 'int',
    default: 120,
    min: 5,
    max: 3600,
    help: 'give up on a processor whose count has not moved for this long',
  },
  ...KAFKA_FLAGS,
} as const

type Flags = ReturnType<typeof parseFlags<typeof FLAGS>>

/** `ops` as version 1 created it (schemas/clickhouse/0001-init.sql): the baseline. */
const V1_COLUMNS = `run_id LowCardinality(String), client_id LowCardinality(String), thread UInt16,
  op LowCardinality(String), start DateTime64(6, 'UTC') CODEC(DoubleDelta, ZSTD(1)),
  latency_us UInt32 CODEC(T64, ZSTD(1)), intended_us UInt32 CODEC(T64, ZSTD(1)), status LowCardinality(String),
  cache Enum8('UNKNOWN' = 0, 'HIT' = 1, 'MISS' = 2), bytes UInt32 CODEC(T64, ZSTD(1)),
  src_partition UInt16, src_offset UInt64`

/**
 * A closed-loop run: every worker's clock advances by the latency of its
 * operation (and a few µs of think time); events come out in start order,
 * as the clients would send them. next(n) returns the next full OPS batch of
 * one client, n events long.
 */
class ClosedLoopRun {
  private readonly writers: OpsBatchWriter[]
  private readonly clock: Float64Array
  private readonly rng = new Rng(7)

  constructor(
    runId: string,
    private readonly f: Flags,
    startUs: number,
  ) {
    this.writers = Array.from({ length: f.clients }, (_, c) => new OpsBatchWriter(runId, `ycsb-client-${c + 1}`))
    this.clock = Float64Array.from(
      { length: f.clients * f.threads },
      () => startUs + Math.floor(this.rng.next() * 1000),
    )
  }

  next(n: number): Buffer {
    for (;;) {
      let k = 0
      for (let j = 1; j < this.clock.length; j++) if (this.clock[j]! < this.clock[k]!) k = j
      const client = Math.floor(k / this.f.threads)
      const w = this.writers[client]!
      const r = this.rng.nextUint32()
      const latency = lognormalUs(this.rng, this.f['latency-us'], 0.7)
      const wait = this.f['wait-us'] === 0 ? 0 : Math.round(-this.f['wait-us'] * Math.log(1 - this.rng.next()))
      const read = (r & 1) === 0
      const startUs = this.clock[k]!
      w.add(
        k % this.f.threads,
        read ? 1 : 2,
        read ? ((r >>> 1) % 10 === 0 ? 2 : 1) : 0,
        (r >>> 8) % 1000 === 0 ? 1 : 0,
        startUs,
        latency,
        latency + wait,
        read ? 1000 : 100,
      )
      this.clock[k] = startUs + latency + ((r >>> 20) % 20)
      if (w.count >= n) return w.finish()
    }
  }

  /** Event time the run spans so far, seconds. */
  spanS(startUs: number): number {
    return (Math.max(...this.clock) - startUs) / 1e6
  }
}

interface ColumnSize {
  name: string
  type: string
  codec: string
  compressed: number
  uncompressed: number
}

interface TableSize {
  rows: number
  parts: number
  compressed: number
  columns: ColumnSize[]
}

async function tableSize(ch: ClickHouse, table: string): Promise<TableSize> {
  const [parts] = await queryRows<{ rows: string; parts: string; compressed: string }>(
    ch,
    `SELECT sum(rows) AS rows, count() AS parts, sum(data_compressed_bytes) AS compressed FROM system.parts ` +
      `WHERE database = '${DATABASE}' AND table = '${table}' AND active`,
  )
  const columns = await queryRows<{
    name: string
    type: string
    codec: string
    compressed: string
    uncompressed: string
  }>(
    ch,
    `SELECT name, type, compression_codec AS codec, data_compressed_bytes AS compressed, data_uncompressed_bytes ` +
      `AS uncompressed FROM system.columns WHERE database = '${DATABASE}' AND table = '${table}' AND ` +
      `default_kind != 'ALIAS' ORDER BY position`,
  )
  return {
    rows: Number(parts!.rows),
    parts: Number(parts!.parts),
    compressed: Number(parts!.compressed),
    columns: columns.map((c) => ({
      name: c.name,
      type: c.type,
      codec: c.codec,
      compressed: Number(c.compressed),
      uncompressed: Number(c.uncompressed),
    })),
  }
}

function sizeLines(s: TableSize): string[] {
  const per = (bytes: number): string => fmt(bytes / s.rows, 3).padStart(7)
  return [
    `    ${'column'.padEnd(14)} ${'type'.padEnd(46)} ${'codec'.padEnd(30)} ${'compressed'.padStart(12)} ` +
      `${'B/event'.padStart(7)} ${'raw B/event'.padStart(11)}`,
    ...s.columns.map(
      (c) =>
        `    ${c.name.padEnd(14)} ${c.type.slice(0, 46).padEnd(46)} ` +
        `${(c.codec === '' ? '(default: LZ4)' : c.codec).padEnd(30)} ` +
        `${fmtInt(c.compressed).padStart(12)} ${per(c.compressed)} ${per(c.uncompressed).padStart(11)}`,
    ),
    `    ${'all columns'.padEnd(14)} ${''.padEnd(46)} ${''.padEnd(30)} ` +
      `${fmtInt(s.columns.reduce((a, c) => a + c.compressed, 0)).padStart(12)} ` +
      `${per(s.columns.reduce((a, c) => a + c.compressed, 0))}`,
  ]
}

async function main(): Promise<void> {
  const f = parseFlags(
    BENCH,
    "Bytes on disk per raw event in ops after merges, per column, against version 1's codecs.",
    process.argv.slice(2),
    process.env,
    FLAGS,
  )
  const id = shortId()
  const topic = `bench-storage-${id}`
  const runId = `storage-${id}`
  await withBroker(BENCH, f['kafka-port'], async (b) => {
    await createTopic(b.kafka, topic, f.partitions)
    // The run ends two minutes ago at the latest: every event is within the processor's accepted range.
    const expectedSpanS = ((f.events / (f.clients * f.threads)) * f['latency-us'] * 1.3) / 1e6
    const startUs = Math.round((Date.now() - 120_000) * 1000 - expectedSpanS * 1e6)
    const run = new ClosedLoopRun(runId, f, startUs)
    progress(BENCH, `producing ${fmtInt(f.events)} events into ${topic} (${f.partitions} partitions)`)
    const producer = await openProducer(b.kafka)
    const produced = await produceEvents(producer, topic, f.partitions, f.events, (n) => run.next(n), {
      eventsPerMessage: EVENTS_PER_MESSAGE,
    })
    await producer.disconnect()
    const dataDir = tempDir('storage')
    const out: string[] = []
    try {
      progress(
        BENCH,
        `produced in ${fmt(produced.ms / 1000, 1)} s (${fmt(run.spanS(startUs), 0)} s of event time); ` +
          `processing with raw storage on`,
      )
      const env = processorEnv({
        brokers: b.brokers,
        topic,
        partitions: f.partitions,
        dataDir,
        group: `bench-storage-${id}`,
        storeRaw: true,
      })
      const p = await ProcessorProcess.start(env)
      await p.watch(`SELECT 'all' AS k, sum(count) AS v FROM ${DATABASE}.op_windows`, 500)
      const done = await p.waitForValue('all', f.events, { stallMs: f['stall-s'] * 1000 })
      await p.stop()
      // The processor is gone: this process may open its data directory (chDB binds a directory to one process).
      const ch = openClickHouse(readInfraConfig(env).clickhouse)
      const [raw] = await queryRows<{ n: string }>(ch, `SELECT count() AS n FROM ${DATABASE}.ops`)
      const before = await tableSize(ch, 'ops')
      progress(BENCH, `all ${fmtInt(done.v)} events counted (${before.parts} parts of ops); OPTIMIZE TABLE ops FINAL`)
      const t0 = nowMs()
      await ch.client.command({ query: `OPTIMIZE TABLE ${DATABASE}.ops FINAL` })
      const optimizeS = (nowMs() - t0) / 1000
      const after = await tableSize(ch, 'ops')
      out.push(
        `${BENCH}: ${fmtInt(produced.events)} events of one run (closed loop: ${f.clients} clients x ` +
          `${f.threads} threads, log-normal latencies median ${f['latency-us']} µs, wait behind schedule ` +
          (f['wait-us'] === 0 ? 'none (unthrottled)' : `exponential, mean ${f['wait-us']} µs`) +
          `; ${fmt(run.spanS(startUs), 0)} s of event time), ${f.partitions} partitions, ` +
          `${fmtInt(produced.messages)} messages, one processor, embedded ClickHouse; load average ` +
          os
            .loadavg()
            .map((x) => fmt(x, 2))
            .join(' '),
        `  ops rows ${fmtInt(Number(raw!.n))}` +
          (Number(raw!.n) === f.events && done.reached ? '' : ` (INCOMPLETE: expected ${fmtInt(f.events)})`) +
          '; ' +
          `${before.parts} parts as inserted (${fmt(before.compressed / before.rows, 3)} bytes/event), ` +
          `${after.parts} after OPTIMIZE FINAL (${fmt(optimizeS, 1)} s)`,
        `  ops now (schemas/clickhouse/ up to the latest migration), after merges:`,
        ...sizeLines(after),
        `  bytes per raw event (system.parts, data_compressed_bytes): ${fmt(after.compressed / after.rows, 3)} ` +
          `(target <= ${TARGET_BYTES_PER_EVENT}) -> ` +
          (after.rows === f.events && after.compressed / after.rows <= TARGET_BYTES_PER_EVENT ? 'met' : 'NOT met'),
      )
      if (f['compare-v1']) {
        progress(BENCH, "the same rows with version 1's codecs")
        await ch.client.command({
          query: `CREATE TABLE ${DATABASE}.ops_v1 (${V1_COLUMNS}) ENGINE = MergeTree ORDER BY (run_id, op, start)`,
        })
        await ch.client.command({
          query:
            `INSERT INTO ${DATABASE}.ops_v1 SELECT run_id, client_id, thread, op, start, latency_us, intended_us, ` +
            `status, cache, bytes, src_partition, src_offset FROM ${DATABASE}.ops`,
        })
        await ch.client.command({ query: `OPTIMIZE TABLE ${DATABASE}.ops_v1 FINAL` })
        const v1 = await tableSize(ch, 'ops_v1')
        out.push(
          `  the same rows with version 1's codecs (0001-init.sql), after OPTIMIZE FINAL:`,
          ...sizeLines(v1),
          `  bytes per raw event with version 1's codecs: ${fmt(v1.compressed / v1.rows, 3)}; ` +
            `now ${fmt(after.compressed / after.rows, 3)} ` +
            `(${fmt(v1.compressed / after.compressed, 2)}x smaller)`,
        )
      }
      await ch.close()
    } finally {
      rmSync(dataDir, { recursive: true, force: true })
      await deleteTopics(b, derivedTopics(topic))
    }
    process.stdout.write(out.join('\n') + '\n')
  })
}

runMain(main)
