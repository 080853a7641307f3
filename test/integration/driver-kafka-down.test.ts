/**
 * Kafka unreachable: the benchmark still runs and reports what it measured;
 * events beyond the buffer bound are counted as undelivered, never hidden.
 */
import assert from 'node:assert/strict'
import { test } from 'node:test'
import { Kafka, logLevel } from 'kafkajs'
import { formatOutcome, runDriver } from '../../services/driver/app.js'
import { loadClient, openClientSink } from '../helpers/driven-run.js'

test(
  'with no broker the driver finishes, reports every operation it ' + 'measured, and counts undelivered events',
  async () => {
    const env = { KAFKA_BROKERS: '127.0.0.1:1' }
    const { cfg, workload, binding } = await loadClient(env, [
      ...'-P workloads/workloadb -p recordcount=1000 -p operationcount=6000 -threads 2'.split(' '),
      ...'--run-id down-run --client-id c1'.split(' '),
    ])
    // One quick retry inside kafkajs (an idempotent producer needs retries), so the test does not wait on backoff.
    const kafka = new Kafka({
      clientId: 'down',
      brokers: ['127.0.0.1:1'],
      logLevel: logLevel.NOTHING,
      connectionTimeout: 200,
      retry: { retries: 1, initialRetryTime: 50, maxRetryTime: 100 },
    })
    const sink = await openClientSink(kafka, env, cfg, { topic: 'nowhere', maxBatchEvents: 500, maxQueuedBatches: 4 })
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
