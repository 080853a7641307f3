/**
 * A real run driven in the test's process, as `benchstream run` drives one: the driver's own arguments parsed, the
 * records loaded into the binding (two threads, their events sent nowhere), the run phase's events sent to the
 * test's Kafka topic by the real sink; then the wait until ClickHouse holds every event and every client's end
 * record. The e2e and integration tests that need a run set it up with these instead of each with a copy of its own.
 */
import type { Kafka } from 'kafkajs'
import { queryRows, type ClickHouse } from '../../services/adapters/clickhouse/client.js'
import { BINDING_NAMES, createBinding } from '../../services/adapters/datastores/index.js'
import { KafkaEventSink, type KafkaSinkOptions } from '../../services/adapters/kafka/event-sink.js'
import { readInfraConfig } from '../../services/common/infra-config.js'
import type { Binding } from '../../services/core/ports/binding.js'
import { NullSink } from '../../services/core/ports/event-sink.js'
import { CoreWorkload } from '../../services/core/workload/core-workload.js'
import { runDriver, type DriverOutcome } from '../../services/driver/app.js'
import { parseDriverArgs, type DriverConfig } from '../../services/driver/config.js'
import { runPhase } from '../../services/driver/runner.js'
import { waitFor } from './env.js'

/** READ 50 %, UPDATE 30 %, SCAN 20 % of short scans over workload A's records: three operations to tell apart. */
export const SCAN_MIX = [
  ...'-P workloads/workloada -p recordcount=1000 -p operationcount=0'.split(' '),
  ...'-p readproportion=0.5 -p updateproportion=0.3 -p scanproportion=0.2 -p maxscanlength=20'.split(' '),
]

/** A client whose records are loaded: ready for its run phase. */
export interface LoadedClient<B extends Binding = Binding> {
  cfg: DriverConfig
  workload: CoreWorkload
  binding: B
}

/**
 * Parses `benchstream run` arguments (`-P workloads/workloada -db memory --run-id … --client-id …`) against the
 * test's environment and runs the load phase on two threads. `wrap` puts a binding of the test's around the one the
 * arguments name (a StalledBinding, for one).
 */
export async function loadClient<B extends Binding = Binding>(
  env: Record<string, string>,
  args: readonly string[],
  wrap?: (binding: Binding) => B,
): Promise<LoadedClient<B>> {
  const cfg = parseDriverArgs('run', [...args], env, { bindings: BINDING_NAMES })
  const workload = CoreWorkload.fromProperties(cfg.properties)
  const created = createBinding(cfg.binding, cfg.properties)
  const binding = wrap === undefined ? (created as B) : wrap(created)
  await runPhase(workload, binding, new NullSink(), {
    phase: 'load',
    threads: 2,
    target: 0,
    operationCount: 0,
    maxExecutionTimeS: 0,
    statusIntervalS: 0,
  })
  return { cfg, workload, binding }
}

/** The real Kafka sink for a client's run and client id, on the environment's events topic unless `extra` names one. */
export function openClientSink(
  kafka: Kafka,
  env: Record<string, string>,
  cfg: DriverConfig,
  extra: Partial<KafkaSinkOptions> = {},
): Promise<KafkaEventSink> {
  return KafkaEventSink.open(kafka, {
    topic: extra.topic ?? readInfraConfig(env).topics.events,
    runId: cfg.runId,
    clientId: cfg.clientId,
    ...extra,
  })
}

/** Runs a loaded client's run phase into Kafka and closes its sink: the driver's outcome. */
export async function runClient(
  kafka: Kafka,
  env: Record<string, string>,
  client: LoadedClient,
  signal?: AbortSignal,
): Promise<DriverOutcome> {
  const sink = await openClientSink(kafka, env, client.cfg)
  try {
    return await runDriver(client.cfg, {
      workload: client.workload,
      binding: client.binding,
      sink,
      status: () => undefined,
      ...(signal === undefined ? {} : { signal }),
    })
  } finally {
    await sink.close()
  }
}

/** One client's whole run, load phase included, into the environment's events topic: the driver's outcome. */
export async function driveClient(
  kafka: Kafka,
  env: Record<string, string>,
  args: readonly string[],
): Promise<DriverOutcome> {
  return runClient(kafka, env, await loadClient(env, args))
}

/**
 * Waits until ClickHouse holds a run: `events` operations counted in its windows and `clients` end records.
 * `timeoutMs` is waitFor's (60 s unless a test needs longer).
 */
export async function waitForRun(
  ch: ClickHouse,
  runId: string,
  expected: { events: number; clients: number },
  timeoutMs?: number,
): Promise<void> {
  await waitFor(
    `run ${runId} in ClickHouse: ${expected.events} events, ${expected.clients} clients ended`,
    async () => {
      const [r] = await queryRows<{ n: string; ended: string }>(
        ch,
        `SELECT (SELECT sum(count) FROM ${ch.database}.op_windows WHERE run_id = {runId:String}) AS n, ` +
          `(SELECT count() FROM ${ch.database}.run_clients WHERE run_id = {runId:String} AND phase = 'end') AS ended`,
        { runId },
      )
      return Number(r?.n) === expected.events && Number(r?.ended) === expected.clients ? true : undefined
    },
    timeoutMs,
  )
}
