/**
 * bench/driver-overhead (issue 3): what sending one event per operation to
 * Kafka costs the driver.
 *
 * The same workload (workloada on the memory binding, unthrottled) runs with
 * emission off (NullSink) and on as `benchstream run` sends events: the
 * client threads write fixed-size records into a shared-memory ring and a
 * delivery thread encodes them and sends them to a real broker
 * (RingEventSink, services/driver/delivery.ts), alternating off/on and on/off
 * over several rounds so that drift and noise hit both sides alike; the
 * figures are medians. Then the emission path alone: what the measuring
 * thread pays per event (a ring record), what encoding costs (an
 * OpsBatchWriter-backed sink; the delivery thread pays it) and the in-process
 * KafkaEventSink, and the CPU spent delivering those batches, so that the
 * added time per operation can be explained.
 * (bench/ycsb-parity measures emission on Redis, through worker threads.)
 *
 * Targets: throughput with emission >= 98% of without (<= 2% cost); <= 1 µs added per op.
 */
import os from 'node:os'
import path from 'node:path'
import { KafkaEventSink } from '../services/adapters/kafka/event-sink.js'
import { repoRoot } from '../services/common/repo-root.js'
import { CoreWorkload } from '../services/core/workload/core-workload.js'
import { OpsBatchWriter } from '../services/core/codec/ops-batch-writer.js'
import { Rng } from '../services/core/workload/random.js'
import type { Binding } from '../services/core/ports/binding.js'
import { BINDING_NAMES, createBinding } from '../services/adapters/datastores/index.js'
import { parseDriverArgs, type DriverConfig } from '../services/driver/config.js'
import { NullSink, type EventSink, type SinkStats } from '../services/core/ports/event-sink.js'
import { runPhase } from '../services/driver/runner.js'
import { RingEventSink } from '../services/driver/delivery.js'
import type { DriverDelivery } from '../services/driver/delivery-main.js'
import { createEventRing, RingConsumer, RingProducer } from '../services/driver/event-ring.js'
import {
  createTopic,
  deleteTopics,
  fmt,
  fmtInt,
  lognormalUs,
  median,
  progress,
  runMain,
  shortId,
  withBroker,
  type Broker,
} from './common.js'
import { KAFKA_FLAGS, parseFlags } from './flags.js'

const BENCH = 'driver-overhead'
const TARGET_RATIO = 0.98
const TARGET_ADDED_US = 1
/** The delivery thread's entry file, as driver/main.ts starts it. */
const DELIVERY_URL = new URL('../services/driver/delivery-main.js', import.meta.url)
/** KafkaEventSink's default batch size, mirrored by the encode-only sink. */
const BATCH_EVENTS = 4096

const FLAGS = {
  threads: { kind: 'int', default: 4, min: 1, max: 1024, help: 'driver threads (workers)' },
  ops: { kind: 'int', default: 500_000, min: 1000, max: 1_000_000_000, help: 'operations per measurement' },
  rounds: {
    kind: 'int',
    default: 5,
    min: 1,
    max: 100,
    help: 'rounds; each measures off and on once, in alternating order',
  },
  recordcount: {
    kind: 'int',
    default: 100_000,
    min: 1000,
    max: 100_000_000,
    help: 'records loaded into the memory binding',
  },
  'emit-events': {
    kind: 'int',
    default: 2_000_000,
    min: 10_000,
    max: 1_000_000_000,
    help: 'record() calls for the emission-only measurement',
  },
  partitions: { kind: 'int', default: 4, min: 1, max: 256, help: 'partitions of the events topic' },
  ...KAFKA_FLAGS,
} as const

/**
 * The in-memory half of KafkaEventSink.record(): the same OpsBatchWriter
 * appends, per-(op, status) counts and a sealed batch every 4,096 events,
 * with the sealed bytes dropped instead of queued for Kafka.
 */
class EncodeOnlySink implements EventSink {
  private readonly writer = new OpsBatchWriter('bench-run', 'bench-client')
  private counts = new Uint32Array(256)
  sealed = 0
  bytes = 0
  record(
    thread: number,
    opCode: number,
    cacheIndex: number,
    statusIndex: number,
    startUs: number,
    latencyUs: number,
    intendedUs: number,
    bytes: number,
  ): void {
    this.writer.add(thread, opCode, cacheIndex, statusIndex, startUs, latencyUs, intendedUs, bytes)
    this.counts[opCode * 16 + statusIndex]! += 1
    if (this.writer.count >= BATCH_EVENTS) this.seal()
  }
  private seal(): void {
    this.bytes += this.writer.finish().length
    let events = 0
    for (let i = 0; i < 256; i++) events += this.counts[i]!
    this.counts = new Uint32Array(256)
    this.sealed += events
  }
  async sendRecord(): Promise<void> {}
  async flush(): Promise<void> {
    if (this.writer.count > 0) this.seal()
  }
  stats(): SinkStats {
    return {
      sent: {},
      sentEvents: this.sealed,
      undelivered: 0,
      undeliveredRecords: 0,
      queuedBatches: 0,
      queuedEvents: 0,
      deliveredBatches: 0,
    }
  }
  async close(): Promise<void> {}
}

interface Measurement {
  mode: 'off' | 'on'
  opsPerS: number
  /** Operations over phase time plus the time close() needed to deliver what was left. */
  opsPerSWithTail: number
  /** Turns of a 10 ms timer during the phase, and how many a free event loop would have run. */
  timerTurns: number
  timerTurnsExpected: number
  /** Events Kafka acknowledged before the phase ended. */
  sentDuringPhase: number
  /** This process's CPU time (user + system) per operation over the phase and close(), µs. */
  cpuUsPerOp: number
  /** How long close() took after the phase (delivering the tail), ms. */
  closeMs: number
  delivery: SinkStats
  /** 1-minute load average when the measurement started. */
  load: number
}

interface EmissionCost {
  events: number
  /** Loop overhead with NullSink.record(), ns per call. */
  nullNs: number
  /** RingProducer.record() (what a measuring thread pays), ns per call. */
  ringNs: number
  encodeNs: number
  kafkaRecordNs: number
  /** CPU this process spent while the sink delivered the batches, µs per event. */
  deliveryCpuUs: number
  deliveryWallMs: number
  sent: number
}

/** Calls sink.record() n times with realistic, varying arguments; returns ns per call. */
function recordLoop(sink: Pick<EventSink, 'record'>, n: number, latencies: Uint32Array): number {
  const mask = latencies.length - 1
  const base = Date.now() * 1000
  const t0 = process.hrtime.bigint()
  for (let i = 0; i < n; i++) {
    const lat = latencies[i & mask]!
    sink.record(i & 3, (i & 1) + 1, (i >> 1) & 1 ? 1 : 2, 0, base + i * 14, lat, lat, 1000)
  }
  return Number(process.hrtime.bigint() - t0) / n
}

/** RingProducer.record() n times, the ring drained between rounds (not timed); ns per call. */
function ringLoop(n: number, latencies: Uint32Array): number {
  const ring = createEventRing()
  const producer = new RingProducer(ring, 64)
  const consumer = new RingConsumer(ring)
  const drop = { record: (): void => undefined }
  const round = 1 << 15
  let ns = 0
  for (let done = 0; done < n; done += round) {
    ns += recordLoop(producer, Math.min(round, n - done), latencies) * Math.min(round, n - done)
    producer.publish()
    consumer.drain(drop)
  }
  return ns / n
}

async function emissionCost(b: Broker, topic: string, n: number): Promise<EmissionCost> {
  const rng = new Rng(7)
  const latencies = new Uint32Array(1 << 16).map(() => lognormalUs(rng, 40, 0.8))
  // Warm the JIT on each path before timing it.
  recordLoop(new NullSink(), 200_000, latencies)
  recordLoop(new EncodeOnlySink(), 200_000, latencies)
  ringLoop(200_000, latencies)
  const nullNs = recordLoop(new NullSink(), n, latencies)
  const ringNs = ringLoop(n, latencies)
  const encoder = new EncodeOnlySink()
  const encodeNs = recordLoop(encoder, n, latencies)
  await encoder.flush()
  if (encoder.sealed !== n) throw new Error(`encode-only sink sealed ${encoder.sealed} events of ${n}`)
  const sink = await KafkaEventSink.open(b.kafka, {
    topic,
    runId: `overhead-emit-${shortId()}`,
    clientId: 'bench-emit',
  })
  // record() never yields, so nothing is delivered during the loop: that is timed next, with flush().
  const kafkaRecordNs = recordLoop(sink, n, latencies)
  const cpu0 = process.cpuUsage()
  const t0 = performance.now()
  await sink.flush(120_000)
  const deliveryWallMs = performance.now() - t0
  const cpu = process.cpuUsage(cpu0)
  await sink.close()
  const st = sink.stats()
  return {
    events: n,
    nullNs,
    ringNs,
    encodeNs,
    kafkaRecordNs,
    deliveryCpuUs: (cpu.user + cpu.system) / n,
    deliveryWallMs,
    sent: st.sentEvents,
  }
}

async function measure(
  cfg: Readonly<DriverConfig>,
  binding: Binding,
  b: Broker,
  topic: string,
  mode: 'off' | 'on',
  ops: number,
  seed: number,
): Promise<Measurement> {
  const workload = CoreWorkload.fromProperties(cfg.properties, { seed })
  // Starting the delivery thread and its producer is set-up, not part of the measured phase.
  const delivery: DriverDelivery = {
    kafka: {
      kafka: { brokers: b.brokers.split(','), clientId: 'bench' },
      clientIdSuffix: `overhead-${seed}`,
      options: { topic, runId: cfg.runId, clientId: `bench-${seed}` },
    },
  }
  const sink: EventSink = mode === 'off' ? new NullSink() : await RingEventSink.start(DELIVERY_URL, delivery)
  // A 10 ms timer shows whether the event loop got to run timers and I/O
  // (the sink's linger timer, Kafka's sockets) while the workers ran.
  let timerTurns = 0
  const load = os.loadavg()[0]!
  const ticker = setInterval(() => timerTurns++, 10)
  const cpu0 = process.cpuUsage()
  const r = await runPhase(workload, binding, sink, {
    phase: 'run',
    threads: cfg.threads,
    target: 0,
    operationCount: ops,
    maxExecutionTimeS: 0,
    statusIntervalS: 0,
  })
  clearInterval(ticker)
  // A flush that waits for nothing asks the delivery thread what Kafka has acknowledged so far.
  await sink.flush(0)
  const sentDuringPhase = sink.stats().sentEvents
  const t0 = performance.now()
  await sink.close()
  const closeMs = performance.now() - t0
  // CPU includes close(): delivery that could not happen during the phase is still the driver's work.
  const cpu = process.cpuUsage(cpu0)
  return {
    mode,
    opsPerS: (r.operations * 1000) / r.runtimeMs,
    opsPerSWithTail: (r.operations * 1000) / (r.runtimeMs + closeMs),
    timerTurns,
    timerTurnsExpected: Math.floor(r.runtimeMs / 10),
    sentDuringPhase,
    cpuUsPerOp: (cpu.user + cpu.system) / r.operations,
    closeMs,
    delivery: sink.stats(),
    load,
  }
}

async function main(): Promise<void> {
  const f = parseFlags(
    BENCH,
    'Driver throughput with event emission to Kafka on vs off, and the cost of emission alone.',
    process.argv.slice(2),
    process.env,
    FLAGS,
  )
  const id = shortId()
  const topic = `bench-overhead-${id}`
  const cfg = parseDriverArgs(
    'run',
    [
      '-P',
      path.join(repoRoot(), 'workloads', 'workloada'),
      '-p',
      `recordcount=${f.recordcount}`,
      '-threads',
      String(f.threads),
      '-db',
      'memory',
      '--run-id',
      `overhead-${id}`,
    ],
    {},
    { bindings: BINDING_NAMES },
  )
  await withBroker(BENCH, f['kafka-port'], async (b) => {
    await createTopic(b.kafka, topic, f.partitions)
    const binding = createBinding(cfg.binding, cfg.properties)
    await binding.init()
    progress(BENCH, `loading ${fmtInt(f.recordcount)} records into the memory binding`)
    await runPhase(CoreWorkload.fromProperties(cfg.properties, { seed: 1 }), binding, new NullSink(), {
      phase: 'load',
      threads: f.threads,
      target: 0,
      operationCount: 0,
      maxExecutionTimeS: 0,
      statusIntervalS: 0,
    })
    progress(BENCH, 'warm-up (not counted)')
    const warm = Math.max(1000, Math.floor(f.ops / 5))
    await measure(cfg, binding, b, topic, 'off', warm, 2)
    await measure(cfg, binding, b, topic, 'on', warm, 3)

    const results: Measurement[] = []
    // Each round's off and on ran back to back under the same conditions:
    // per-round comparisons cancel drift and other load on the machine.
    const pairs: Array<{ off: Measurement; on: Measurement }> = []
    for (let r = 0; r < f.rounds; r++) {
      const order: Array<'off' | 'on'> = r % 2 === 0 ? ['off', 'on'] : ['on', 'off']
      const round: Partial<Record<'off' | 'on', Measurement>> = {}
      for (const mode of order) {
        const m = await measure(cfg, binding, b, topic, mode, f.ops, 100 + r)
        round[mode] = m
        results.push(m)
        progress(
          BENCH,
          `round ${r + 1}/${f.rounds} emission ${mode.padEnd(3)}: ${fmtInt(m.opsPerS)} ` +
            `ops/s, ${fmt(m.cpuUsPerOp, 2)} µs CPU/op`,
        )
      }
      pairs.push({ off: round.off!, on: round.on! })
    }
    progress(BENCH, `emission alone: ${fmtInt(f['emit-events'])} record() calls`)
    const cost = await emissionCost(b, topic, f['emit-events'])
    await deleteTopics(b, [topic])

    const off = results.filter((m) => m.mode === 'off')
    const on = results.filter((m) => m.mode === 'on')
    const offOps = median(off.map((m) => m.opsPerS))
    const onOps = median(on.map((m) => m.opsPerS))
    const ratio = median(pairs.map((x) => x.on.opsPerS / x.off.opsPerS))
    const addedUs = median(pairs.map((x) => 1e6 / x.on.opsPerS - 1e6 / x.off.opsPerS))
    const tailRatio = median(pairs.map((x) => x.on.opsPerSWithTail / x.off.opsPerSWithTail))
    const tailAddedUs = median(pairs.map((x) => 1e6 / x.on.opsPerSWithTail - 1e6 / x.off.opsPerSWithTail))
    const starved = on.filter((m) => m.timerTurns < m.timerTurnsExpected / 10).length
    const offCpu = median(off.map((m) => m.cpuUsPerOp))
    const onCpu = median(on.map((m) => m.cpuUsPerOp))
    const cpuRatio = median(pairs.map((x) => x.off.cpuUsPerOp / x.on.cpuUsPerOp))
    const cpuAddedUs = median(pairs.map((x) => x.on.cpuUsPerOp - x.off.cpuUsPerOp))
    // CPU used per second of wall time: well under 1 means other processes held the cores.
    const busy = (m: Measurement): number => (m.cpuUsPerOp * m.opsPerS) / 1e6
    const sent = on.reduce((n, m) => n + m.delivery.sentEvents, 0)
    const undelivered = on.reduce((n, m) => n + m.delivery.undelivered + m.delivery.queuedEvents, 0)
    // On the measuring thread only the ring record; encoding and delivery run on the delivery thread (another core when
    // one is free).
    const explainedUs = (cost.ringNs - cost.nullNs) / 1000
    const explainedCpuUs = (cost.ringNs - cost.nullNs + cost.encodeNs) / 1000 + cost.deliveryCpuUs
    const verdict = (ok: boolean): string => (ok ? 'met' : 'NOT met')
    const out = [
      `${BENCH}: workloada, memory binding, recordcount ${fmtInt(f.recordcount)}, ${f.threads} threads, ` +
        (`${fmtInt(f.ops)} ops per measurement, ${f.rounds} alternating ` +
          `rounds, Kafka ${b.brokers} (${f.partitions} partitions)`),
      `  emission off : ${fmtInt(offOps)} ops/s (median of ${off.length})   emission on: ${fmtInt(onOps)} ` +
        `ops/s (median of ${on.length})`,
      `  ratio on/off : ${fmt(ratio, 3)} (median of the per-round ratios; ` +
        `of the medians above ${fmt(onOps / offOps, 3)}) ` +
        `  (target >= ${TARGET_RATIO}) -> ${verdict(ratio >= TARGET_RATIO)}`,
      `  added time per op: ${fmt(addedUs, 2)} µs (median of the per-round 1/on - 1/off)   (target ` +
        `<= ${TARGET_ADDED_US} µs) -> ${verdict(addedUs <= TARGET_ADDED_US)}`,
      `  with the delivery tail (phase + close()): ratio ${fmt(tailRatio, 3)} ` +
        `(${verdict(tailRatio >= TARGET_RATIO)}), ` +
        `added ${fmt(tailAddedUs, 2)} µs per op (${verdict(tailAddedUs <= TARGET_ADDED_US)})`,
      `  event loop during emission-on phases: ${on.map((m) => `${m.timerTurns}/${m.timerTurnsExpected}`).join(' ')} ` +
        `turns of a 10 ms timer (done/expected); events acknowledged by Kafka before the phase ended: ` +
        `${on.map((m) => fmtInt(m.sentDuringPhase)).join(' ')} of ${fmtInt(f.ops)} each`,
      ...(starved > 0
        ? [
            `  WARNING: in ${starved} of ${on.length} emission-on phases the event loop was starved (the ` +
              `memory binding resolves at once and the workers never yield to timers or I/O), so Kafka delivery ` +
              `happened only after the phase; the "with the delivery tail" line is the honest figure`,
          ]
        : []),
      `  driver CPU per op, phase + close() (process.cpuUsage): off ${fmt(offCpu, 2)} µs, on ${fmt(onCpu, 2)} ` +
        `µs (medians); per round: CPU ratio off/on ${fmt(cpuRatio, 3)} (${verdict(cpuRatio >= TARGET_RATIO)}), ` +
        `added ${fmt(cpuAddedUs, 2)} µs CPU per op (${verdict(cpuAddedUs <= TARGET_ADDED_US)})`,
      `  CPU seconds per wall second: off ${off.map((m) => fmt(busy(m), 2)).join(' ')} ` +
        `| on ${on.map((m) => fmt(busy(m), 2)).join(' ')} ` +
        `(values well below the others mean other processes held the cores: trust the CPU line over ` +
        `the wall-clock ratios then)`,
      `  rounds, ops/s (off/on): ${pairs.map((x) => `${fmtInt(x.off.opsPerS)}/${fmtInt(x.on.opsPerS)}`).join('  ')}; ` +
        `ratio on/off per round min ${fmt(Math.min(...pairs.map((x) => x.on.opsPerS / x.off.opsPerS)), 3)} ` +
        `max ${fmt(Math.max(...pairs.map((x) => x.on.opsPerS / x.off.opsPerS)), 3)}`,
      `  load average (1 min) at each measurement, ` +
        `off/on: ${pairs.map((x) => `${fmt(x.off.load, 1)}/${fmt(x.on.load, 1)}`).join('  ')}`,
      `  delivery with emission on: ${fmtInt(sent)} events acknowledged by Kafka of ${fmtInt(on.length * f.ops)} ` +
        (`measured, ${fmtInt(undelivered)} undelivered; close() after the ` +
          `phase took ${fmt(median(on.map((m) => m.closeMs)), 0)} ms (median)`),
      `  emission alone, ${fmtInt(cost.events)} record() calls (loop ` +
        `overhead with NullSink ${fmt(cost.nullNs, 1)} ns/call):`,
      `    ring record() (what a measuring thread pays with the delivery thread): ${fmt(cost.ringNs, 1)} ns/event`,
      `    OpsBatchWriter-backed record() (encode, count, seal every ${fmtInt(BATCH_EVENTS)}; the ` +
        `delivery thread pays it): ${fmt(cost.encodeNs, 1)} ns/event`,
      `    KafkaEventSink.record(): ${fmt(cost.kafkaRecordNs, 1)} ns/event; then delivering the batches: ` +
        `${fmt(cost.deliveryCpuUs, 3)} µs CPU/event in this process, ${fmt(cost.deliveryWallMs, 0)} ` +
        `ms wall (${fmtInt(cost.sent)} events acknowledged)`,
      `    => expected added time per op on the measuring thread ~ ${fmt(explainedUs, 3)} µs (ring ` +
        `record() minus loop overhead), added CPU in all threads ~ ${fmt(explainedCpuUs, 2)} µs (+ encoding ` +
        `+ delivery); measured: ${fmt(addedUs, 2)} µs in the phase, ${fmt(tailAddedUs, 2)} µs with the ` +
        `delivery tail, ${fmt(cpuAddedUs, 2)} µs of CPU`,
    ]
    process.stdout.write(out.join('\n') + '\n')
  })
}

runMain(main)
