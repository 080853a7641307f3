/**
 * `benchstream load|run`: reads the command line, opens Kafka and the
 * binding, runs one client, prints the report, handles Ctrl-C.
 */
import { writeFileSync } from 'node:fs'
import { createKafka, ensureTopics } from '../adapters/kafka/client.js'
import { KafkaEventSink } from '../adapters/kafka/event-sink.js'
import { CoreWorkload } from '../core/workload/core-workload.js'
import { runDriver, formatOutcome } from './app.js'
import { MemoryBinding } from '../adapters/datastores/memory.js'
import { BINDING_NAMES, createBinding } from '../adapters/datastores/index.js'
import { createLogger } from '../common/logger.js'
import { parseDriverArgs } from './config.js'
import { NullSink, type EventSink } from '../core/ports/event-sink.js'
import { runPhase } from './runner.js'

export async function driverMain(phase: 'load' | 'run', argv: readonly string[]): Promise<number> {
  const cfg = parseDriverArgs(phase, argv, process.env, { bindings: BINDING_NAMES })
  const log = createLogger('benchstream-driver', process.env)
  const workload = CoreWorkload.fromProperties(cfg.properties)
  const binding = createBinding(cfg.binding, cfg.properties, { threads: cfg.threads })
  await binding.init()
  const abort = new AbortController()
  const onSignal = (): void => abort.abort()
  process.once('SIGINT', onSignal)
  process.once('SIGTERM', onSignal)
  let sink: EventSink
  if (cfg.emit) {
    const kafka = createKafka(cfg.infra.kafka, `driver-${cfg.clientId}`)
    await ensureTopics(kafka, cfg.infra.kafka, cfg.infra.topics)
    sink = await KafkaEventSink.open(kafka, { topic: cfg.infra.topics.events, runId: cfg.runId, clientId: cfg.clientId })
  } else {
    sink = new NullSink()
  }
  try {
    if (phase === 'run' && binding instanceof MemoryBinding && (await binding.sampleServerMetrics()).values.records === 0) {
      // The embedded store lives in this process only: load it first, unmeasured.
      log.info({ records: workload.loadCount }, 'memory binding: loading the records before the run (not measured)')
      await runPhase(workload, binding, new NullSink(), { phase: 'load', threads: cfg.threads, target: 0, operationCount: 0, maxExecutionTimeS: 0, statusIntervalS: 0 })
    }
    log.info({ run: cfg.runId, client: cfg.clientId, binding: cfg.binding, threads: cfg.threads, target: cfg.target || 'unthrottled' }, `${phase} phase starting`)
    const outcome = await runDriver(cfg, { workload, binding, sink, status: (l) => process.stderr.write(l + '\n'), signal: abort.signal })
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
