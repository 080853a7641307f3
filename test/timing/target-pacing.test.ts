/**
 * Wall-clock figures of the driver's pacing (npm run test:timing, on a machine
 * that is not otherwise busy): a target that the binding and the machine can
 * keep is kept within 5%, by worker threads against a real Redis and by the
 * memory binding on the main thread. The default tiers only check what holds
 * however busy the machine is (never faster than the target).
 */
import assert from 'node:assert/strict'
import { after, before, test } from 'node:test'
import { BINDING_NAMES, createBinding } from '../../services/adapters/datastores/index.js'
import { NullSink } from '../../services/core/ports/event-sink.js'
import { CoreWorkload } from '../../services/core/workload/core-workload.js'
import { parseDriverArgs } from '../../services/driver/config.js'
import { runPhase } from '../../services/driver/runner.js'
import { runPhaseInWorkers } from '../../services/driver/worker-pool.js'
import { testEnv, type TestEnv } from '../helpers/env.js'
import { startRedis, type TestServer } from '../helpers/servers.js'

const WORKER_URL = new URL('../../services/driver/worker-main.js', import.meta.url)

let te: TestEnv
let redis: TestServer
before(async () => {
  te = testEnv({ KAFKA_BROKERS: '127.0.0.1:9' })
  redis = await startRedis()
})
after(async () => {
  await redis?.stop()
  te?.cleanup()
})

test('redis in worker threads at 1000 ops/s: the rate is within 5% of the target', async () => {
  const cfg = parseDriverArgs(
    'run',
    ['-P', 'workloads/workloadc', '-p', 'recordcount=2000', '-p', `redis.port=${redis.port}`, '-db', 'redis'],
    te.env,
    { bindings: BINDING_NAMES },
  )
  const r = await runPhaseInWorkers({
    workerUrl: WORKER_URL,
    binding: 'redis',
    properties: cfg.properties,
    phase: 'run',
    threads: 4,
    target: 1000,
    operationCount: 5000,
    maxExecutionTimeS: 0,
    statusIntervalS: 0,
  })
  const rate = (r.operations * 1000) / r.runtimeMs
  assert.ok(rate > 950 && rate < 1050, `achieved ${rate} ops/s of 1000`)
})

test('memory binding on the main thread at 2000 ops/s: the rate is within 5% of the target', async () => {
  const cfg = parseDriverArgs('run', ['-P', 'workloads/workloada', '-p', 'recordcount=1000', '-db', 'memory'], te.env, {
    bindings: BINDING_NAMES,
  })
  const workload = CoreWorkload.fromProperties(cfg.properties)
  const binding = createBinding('memory', cfg.properties)
  const load = { threads: 2, target: 0, operationCount: 0, maxExecutionTimeS: 0, statusIntervalS: 0 }
  await runPhase(workload, binding, new NullSink(), { phase: 'load', ...load })
  const r = await runPhase(workload, binding, new NullSink(), {
    phase: 'run',
    ...load,
    threads: 8,
    target: 2000,
    operationCount: 10_000,
  })
  const rate = (r.operations * 1000) / r.runtimeMs
  assert.ok(rate > 1900 && rate < 2100, `achieved ${rate} ops/s of 2000`)
})
