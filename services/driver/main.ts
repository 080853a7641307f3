/**
 * `benchstream load|run`: reads the command line, opens Kafka and the
 * binding, runs one client, prints the report, handles Ctrl-C.
 *
 * Threads: client threads of a binding with a server (redis, postgres) run
 * in worker threads, each client thread with its own connection
 * (worker-main.ts, worker-pool.ts: one worker per core); the memory
 * binding's threads run here, where its store lives. Events go through shared-memory
 * rings to a delivery thread that encodes them and sends them to Kafka
 * (delivery-main.ts), so no measuring thread encodes or talks to Kafka.
 */
import { writeFileSync } from 'node:fs'
import { createKafka, ensureTopics } from '../adapters/kafka/client.js'
import { CoreWorkload } from '../core/workload/core-workload.js'
import { runDriver, formatOutcome } from './app.js'
import { MemoryBinding } from '../adapters/datastores/memory.js'
import { BINDING_NAMES, createBinding, IN_PROCESS_BINDINGS } from '../adapters/datastores/index.js'
import { createLogger } from '../common/logger.js'
import { parseDriverArgs } from './config.js'
import { NullSink, type EventSink } from '../core/ports/event-sink.js'
import { runPhase, type PhaseRunner } from './runner.js'
import { RingEventSink } from './delivery.js'
import type { KafkaDelivery } from './delivery-main.js'
import { defaultWorkerCount, runPhaseInWorkers } from './worker-pool.js'

export async function driverMain(phase: 'load' | 'run', argv: readonly string[]): Promise<number> {
  const cfg = parseDriverArgs(phase, argv, process.env, { bindings: BINDING_NAMES })
  const log = createLogger('benchstream-driver', process.env)
  const workload = CoreWorkload.fromProperties(cfg.properties)
  const inProcess = (IN_PROCESS_BINDINGS as readonly string[]).includes(cfg.binding)
  // In-process: the client threads' binding. Otherwise: server metrics only, on a connection of its own.
  const binding = createBinding(cfg.binding, cfg.properties, { threads: inProcess ? cfg.threads : 1 })
  await binding.init()
  const abort = new AbortController()
  const onSignal = (): void => abort.abort()
  process.once('SIGINT', onSignal)
  process.once('SIGTERM', onSignal)
  let sink: EventSink
  if (cfg.emit) {
    await ensureTopics(createKafka(cfg.infra.kafka, `driver-${cfg.clientId}`), cfg.infra.kafka, cfg.infra.topics)
    const delivery: KafkaDelivery = { kafka: cfg.infra.kafka, clientIdSuffix: `driver-${cfg.clientId}`, options: { topic: cfg.infra.topics.events, runId: cfg.runId, clientId: cfg.clientId } }
    sink = await RingEventSink.start(new URL('./delivery-main.js', import.meta.url), delivery)
  } else {
    sink = new NullSink()
  }
  const inWorkers: PhaseRunner | undefined = inProcess
    ? undefined
    : (o) =>
        runPhaseInWorkers({
          ...o,
          workerUrl: new URL('./worker-main.js', import.meta.url),
          binding: cfg.binding,
          properties: cfg.properties,
          ...(sink instanceof RingEventSink ? { newRing: () => sink.addRing() } : {}),
        })
  try {
    if (phase === 'run' && binding instanceof MemoryBinding && (await binding.sampleServerMetrics()).values.records === 0) {
      // The embedded store lives in this process only: load it first, unmeasured.
      log.info({ records: workload.loadCount }, 'memory binding: loading the records before the run (not measured)')
      await runPhase(workload, binding, new NullSink(), { phase: 'load', threads: cfg.threads, target: 0, operationCount: 0, maxExecutionTimeS: 0, statusIntervalS: 0 })
    }
    log.info({ run: cfg.runId, client: cfg.clientId, binding: cfg.binding, threads: cfg.threads, workers: inProcess ? 0 : defaultWorkerCount(cfg.threads), target: cfg.target || 'unthrottled' }, `${phase} phase starting`)
    const outcome = await runDriver(cfg, { workload, binding, sink, status: (l) => process.stderr.write(l + '\n'), signal: abort.signal, ...(inWorkers === undefined ? {} : { runPhase: inWorkers }) })
    const text = formatOutcome(cfg, outcome)
    if (cfg.exportFile === undefined) process.stdout.write(text)
    else {
      writeFileSync(cfg.exportFile, text)
      log.info({ file: cfg.exportFile }, 'report written')
    }
    return outcome.delivery.undelivered + outcome.delivery.queuedEvents > 0 ? 3 : 0
  } finally {
    process.off('SIGINT', onSignal)
    process.off('SIGTERM', onSignal)
    await sink.close()
    await binding.cleanup()
  }
}
