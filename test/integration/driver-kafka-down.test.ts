/**
 * Kafka unreachable: the benchmark still runs and reports what it measured;
 * events beyond the buffer bound are counted as undelivered, never hidden.
 */
import assert from 'node:assert/strict'
import { test } from 'node:test'
import { Kafka, logLevel } from 'kafkajs'
import { KafkaEventSink } from '../../services/adapters/kafka/event-sink.js'
import { CoreWorkload } from '../../services/core/workload/core-workload.js'
import { formatOutcome, runDriver } from '../../services/driver/app.js'
import { BINDING_NAMES, createBinding } from '../../services/adapters/datastores/index.js'
import { parseDriverArgs } from '../../services/driver/config.js'
import { NullSink } from '../../services/core/ports/event-sink.js'
import { runPhase } from '../../services/driver/runner.js'

test(
  'with no broker the driver finishes, reports every operation it ' + 'measured, and counts undelivered events',
  async () => {
    const env = { KAFKA_BROKERS: '127.0.0.1:1' }
    const cfg = parseDriverArgs(
      'run',
      [
        '-P',
        'workloads/workloadb',
        '-p',
        'recordcount=1000',
        '-p',
        'operationcount=6000',
        '-threads',
        '2',
        '--run-id',
        'down-run',
        '--client-id',
        'c1',
      ],
      env,
      { bindings: BINDING_NAMES },
    )
    const workload = CoreWorkload.fromProperties(cfg.properties)
    const binding = createBinding(cfg.binding, cfg.properties)
    await runPhase(workload, binding, new NullSink(), {
      phase: 'load',
      threads: 2,
      target: 0,
      operationCount: 0,
      maxExecutionTimeS: 0,
      statusIntervalS: 0,
    })
    // One quick retry inside kafkajs (an idempotent producer needs retries), so the test does not wait on backoff.
    const kafka = new Kafka({
      clientId: 'down',
      brokers: ['127.0.0.1:1'],
      logLevel: logLevel.NOTHING,
      connectionTimeout: 200,
      retry: { retries: 1, initialRetryTime: 50, maxRetryTime: 100 },
    })
    const sink = await KafkaEventSink.open(kafka, {
      topic: 'nowhere',
      runId: cfg.runId,
      clientId: cfg.clientId,
      maxBatchEvents: 500,
      maxQueuedBatches: 4,
    })
    const outcome = await runDriver(cfg, { workload, binding, sink, status: () => undefined })
    await sink.close()
    const stats = sink.stats()
    assert.equal(outcome.report.operations, 6000, 'every operation is measured and reported')
    assert.equal(stats.sentEvents, 0)
    assert.equal(stats.undelivered, 6000, 'all 6000 events counted as undelivered (buffer bound, then close)')
    assert.ok(stats.undeliveredRecords >= 2, 'run start and end records counted too')
    assert.match(formatOutcome(cfg, { ...outcome, delivery: stats }), /^\[BENCHSTREAM\], EventsUndelivered, 6000$/m)
  },
)
