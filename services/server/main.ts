/**
 * `benchstream server` (alias `benchstream processor`): the backend in one
 * process, and its composition root. It reads the configuration once, opens
 * the infrastructure (ClickHouse, Kafka, OpenTelemetry), builds the adapters
 * and hands them to the three services as ports:
 *
 *   processor (services/processor/app.ts)  PartitionSource, DeadLetterSink, WindowStore, RunWindowRegistry
 *   alerts    (services/alerts/app.ts)     AlertWindowSource, AlertStore, AlertNotifier[], SilenceStore; run while
 *             this replica leads (services/alerts/leadership.ts, LeaderElection through Kafka)
 *   API       (services/api/app.ts)        ReadModel, SilenceStore
 *
 * Why one process: the embedded ClickHouse (chDB) binds its data directory
 * to one process, so the process that writes the windows also serves them.
 * With CLICKHOUSE_URL the same services could run apart; --no-api leaves the
 * API out (then /metrics gets a small server of its own on METRICS_PORT).
 */
import { SERVER_USAGE } from './usage.js'
import { randomUUID } from 'node:crypto'
import os from 'node:os'
import path from 'node:path'
import { parseFlags, type FlagSpecs } from '../common/args.js'
import type { SpanExporter } from '@opentelemetry/sdk-trace-base'
import type { FastifyInstance } from 'fastify'
import { ClickHouseAlertSource, ClickHouseAlertStore, ClickHouseSilenceStore } from '../adapters/clickhouse/alerts.js'
import { mergeRaceRetryCount, migrate, openClickHouse, type ClickHouse } from '../adapters/clickhouse/client.js'
import { ClickHouseExperimentStore } from '../adapters/clickhouse/experiment-store.js'
import { ClickHouseProfileStore } from '../adapters/clickhouse/profile-store.js'
import { ClickHouseReadModel } from '../adapters/clickhouse/read-model.js'
import { ClickHouseRunRegistry } from '../adapters/clickhouse/run-registry.js'
import { openSqlGuard } from '../adapters/clickhouse/sql-guard.js'
import { ClickHouseWindowStore } from '../adapters/clickhouse/window-store.js'
import { WebhookNotifier } from '../adapters/http/alert-webhook.js'
import { KafkaAlertPublisher } from '../adapters/kafka/alert-publisher.js'
import { closeLeftoverConnections, createKafka, ensureTopics } from '../adapters/kafka/client.js'
import { KafkaDeadLetterSink } from '../adapters/kafka/dead-letter-sink.js'
import { KafkaLeaderElection } from '../adapters/kafka/leader-election.js'
import { useLocalKafka, type LocalKafka } from '../adapters/kafka/local-broker.js'
import { KafkaPartitionSource } from '../adapters/kafka/partition-source.js'
import { initTelemetry, type Telemetry } from '../adapters/otel/telemetry.js'
import { build as buildAlerts, type AlertEngine } from '../alerts/app.js'
import { LeaderGatedAlerts } from '../alerts/leadership.js'
import { readAlertsConfig } from '../alerts/config.js'
import { build as buildApi } from '../api/app.js'
import { readApiConfig } from '../api/config.js'
import type { Env } from '../common/config.js'
import { readInfraConfig, type InfraConfig } from '../common/infra-config.js'
import { createLogger, type Logger } from '../common/logger.js'
import { markServerStarting, writeServerFile } from '../common/server-file.js'
import { BenchstreamError } from '../core/errors.js'
import { outageLogLine } from '../core/health/outage.js'
import type { AlertNotifier } from '../core/ports/alerts.js'
import type { ReadModel } from '../core/ports/read-model.js'
import type { FlushBatch } from '../core/stats/partition-state.js'
import { build as buildProcessor, type Processor } from '../processor/app.js'
import { readProcessorConfig } from '../processor/config.js'
import { ProcessorMetrics } from '../processor/metrics.js'
import { readServerConfig } from './config.js'

/** Longest wait of an ad hoc query for a free connection before it is answered 429. */
const AD_HOC_QUEUE_TIMEOUT_MS = 5000

export interface Server {
  processor: Processor
  /**
   * The alert evaluator running in this server now: when ALERTS_ENABLED (the default) and, with
   * ALERTS_LEADER_ELECTION (the default), while this replica leads.
   */
  readonly alerts: AlertEngine | undefined
  /** The election of the evaluating replica, with ALERTS_LEADER_ELECTION. */
  leadership: LeaderGatedAlerts | undefined
  api: FastifyInstance | undefined
  /** http://host:port of the API, when it runs. */
  apiUrl: string | undefined
  readModel: ReadModel
  /** The open ClickHouse the processor writes through (tests and the demo read it directly). */
  ch: ClickHouse
  /** The connection reads go through (reports, alerts): separate, so they never queue in front of inserts. */
  reader: ClickHouse
  telemetry: Telemetry
  metrics: ProcessorMetrics
  log: Logger
  stop(): Promise<void>
}

export interface ServerOptions {
  api: boolean
  /** Extra span exporter (tests). */
  spanExporter?: SpanExporter
  /**
   * Use this ClickHouse handle instead of opening one from the config (tests put a failing connection in front of the
   * engine).
   */
  clickhouse?: ClickHouse
  log?: Logger
  /** Called after each batch is stored and committed (benchmarks time flushes with it). */
  onFlushed?: (batch: FlushBatch) => void
}

export async function startServer(env: Env, opts: ServerOptions): Promise<Server> {
  const cfg = readProcessorConfig(env)
  const apiCfg = readApiConfig(env)
  const alertsCfg = readAlertsConfig(env)
  const serverCfg = readServerConfig(env)
  const log = opts.log ?? createLogger('benchstream-server', env, { format: 'json' })
  // Without the API in this process, /metrics gets a small server of its own (METRICS_PORT, 0 = off).
  const metricsPort = serverCfg.metricsPort
  const telemetry = initTelemetry({
    serviceName: 'benchstream-server',
    env,
    ...(opts.spanExporter === undefined ? {} : { spanExporter: opts.spanExporter }),
    ...(opts.api || metricsPort === 0 ? {} : { metricsServer: { port: metricsPort, host: serverCfg.metricsHost } }),
  })
  const metrics = new ProcessorMetrics(telemetry.meter)
  telemetry.meter
    .createObservableCounter('benchstream_clickhouse_read_retries', {
      description:
        'Reads of the embedded ClickHouse run again because a part merged ' +
        'away under them (adapters/clickhouse/client.ts)',
    })
    .addCallback((r) => r.observe(mergeRaceRetryCount()))
  const ch = opts.clickhouse ?? openClickHouse(cfg.infra.clickhouse)
  // Set once stop() begins: what the services log from then on is said as part of the stop.
  let stopping = false
  // Everything opened so far is closed again if a later step fails.
  const closers: Array<() => Promise<unknown>> = [() => telemetry.shutdown(), () => ch.close()]
  // Each step of a stop is bounded: one that never settles (a request the API waits for, a
  // query the engine never answers) is logged and passed, so that stop() always returns and
  // the steps after it (closing ClickHouse, Kafka) still run.
  const closeAll = async (): Promise<void> => {
    stopping = true
    for (const c of closers.reverse()) {
      const r = await withTimeout(Promise.resolve().then(c), CLOSE_STEP_TIMEOUT_MS)
      if (r === 'timeout')
        log.warn(
          { step: c.toString().slice(0, 80), timeoutMs: CLOSE_STEP_TIMEOUT_MS },
          'a stop step did not finish in time; going on',
        )
      else if (r !== 'ok') log.warn({ err: r }, 'closing failed')
    }
  }
  try {
    await migrate(ch, { opsTtlDays: cfg.infra.clickhouse.opsTtlDays })
    const kafka = createKafka(cfg.infra.kafka, 'server')
    // Closed last (closers run in reverse): what kafkajs left open after every client of `kafka` disconnected.
    closers.push(async () => {
      const n = closeLeftoverConnections(kafka)
      if (n > 0)
        log.warn(
          { connections: n },
          'Kafka connections kafkajs left open after its clients disconnected (seen after a broker restart): closed',
        )
    })
    await ensureTopics(kafka, cfg.infra.kafka, cfg.infra.topics)
    const deadLetters = await KafkaDeadLetterSink.open(kafka, cfg.infra.topics.deadLetter)
    closers.push(() => deadLetters.close())
    const processor = buildProcessor(cfg, {
      source: new KafkaPartitionSource(kafka, {
        topic: cfg.infra.topics.events,
        groupId: cfg.groupId,
        // A broker down or a leader moving: said when it starts and when it ends, with how long it lasted.
        onOutage: (e) => {
          const { msg, fields } = outageLogLine(e)
          log.warn({ component: 'processor', ...fields }, msg)
        },
      }),
      deadLetters,
      store: new ClickHouseWindowStore(ch),
      runs: new ClickHouseRunRegistry(ch, `${os.hostname()}-${process.pid}-${randomUUID().slice(0, 8)}`),
      metrics,
      tracer: telemetry.tracer,
      log: log.child({ component: 'processor' }),
      ...(opts.onFlushed === undefined ? {} : { onFlushed: opts.onFlushed }),
    })
    await processor.start()
    closers.push(() => processor.stop())

    // Reads (reports, timelines, alerts) go through a connection of their own:
    // chDB runs one query at a time per connection, and the processor's inserts must not wait behind them.
    const reader = opts.clickhouse === undefined ? openClickHouse(cfg.infra.clickhouse) : opts.clickhouse
    if (reader !== ch) closers.push(() => reader.close())
    const readModel = new ClickHouseReadModel(reader)
    const silences = new ClickHouseSilenceStore(reader)

    let leadership: LeaderGatedAlerts | undefined
    let fixedEngine: AlertEngine | undefined
    const alertEngine = (): AlertEngine | undefined => leadership?.current ?? fixedEngine
    if (alertsCfg.enabled) {
      const publisher = await KafkaAlertPublisher.open(kafka, cfg.infra.topics.alerts)
      closers.push(() => publisher.close())
      const notifiers: AlertNotifier[] = [publisher]
      if (alertsCfg.webhookUrl !== undefined) {
        notifiers.push(
          new WebhookNotifier({
            url: alertsCfg.webhookUrl,
            timeoutMs: alertsCfg.webhookTimeoutMs,
            attempts: alertsCfg.webhookAttempts,
            backoffMs: alertsCfg.webhookBackoffMs,
            receiver: alertsCfg.receiver,
            externalUrl: alertsCfg.externalUrl,
          }),
        )
      }
      const engineDeps = {
        source: new ClickHouseAlertSource(reader),
        store: new ClickHouseAlertStore(reader),
        notifiers,
        silences,
        log: (line: string) => log.warn({ component: 'alerts' }, line),
      }
      if (alertsCfg.leaderElection) {
        // One evaluator among the replicas that share the processor's group: the one the election picks.
        const election = new KafkaLeaderElection(kafka, {
          topic: cfg.infra.topics.leader,
          groupId: `${cfg.groupId}.leader`,
          sessionTimeoutMs: alertsCfg.leaderSessionTimeoutMs,
        })
        const gate = new LeaderGatedAlerts(
          election,
          () => buildAlerts(alertsCfg, { ...engineDeps, mayNotify: () => election.isLeader() }),
          (c) =>
            log.info(
              { component: 'alerts', leader: c.leader, at: new Date(c.atMs).toISOString(), why: c.why },
              c.leader
                ? 'alert evaluation: this replica leads and evaluates alerts'
                : stopping
                  ? 'alert evaluation: this replica is stopping and leaves the election'
                  : 'alert evaluation: this replica does not lead, another one evaluates alerts',
            ),
        )
        closers.push(() => gate.stop())
        await gate.start()
        leadership = gate
      } else {
        const engine = buildAlerts(alertsCfg, engineDeps)
        engine.start()
        closers.push(() => engine.stop())
        fixedEngine = engine
      }
    }

    let api: FastifyInstance | undefined
    let apiUrl: string | undefined
    if (opts.api) {
      // Users' SQL runs on read-only connections of its own, so it never queues in front of the processor's inserts.
      const adHoc = await openSqlGuard(cfg.infra.clickhouse, {
        database: cfg.infra.clickhouse.database,
        limits: apiCfg.query,
        concurrency: apiCfg.query.concurrency,
        queue: apiCfg.query.queue,
        queueTimeoutMs: AD_HOC_QUEUE_TIMEOUT_MS,
      })
      closers.push(() => adHoc.close())
      const a = buildApi(apiCfg, {
        readModel,
        adHoc,
        database: cfg.infra.clickhouse.database,
        profiles: new ClickHouseProfileStore(reader),
        silences,
        // Written through the processor's connection: reads and writes of one process share the embedded engine.
        experiments: new ClickHouseExperimentStore(ch),
        status: () => ({
          clickhouse: ch.mode,
          location: ch.location,
          processor: processor.stats,
          heldBack: processor.heldBack(),
          partitions: processor.partitions(),
          kafkaOutage: processor.kafkaOutage() ?? null,
          ...(leadership === undefined ? {} : { alertsLeadership: leadership.leadership }),
          ...((leadership?.stats ?? fixedEngine?.stats) === undefined
            ? {}
            : { alerts: leadership?.stats ?? fixedEngine?.stats }),
        }),
        problems: async () => {
          const problems = processor.health(serverCfg.health)
          const ping = await withTimeout(readModel.ping(), serverCfg.health.pingTimeoutMs)
          if (ping !== 'ok')
            problems.push(
              `ClickHouse (${ch.location}) ` +
                (ping === 'timeout'
                  ? `did not answer within ${serverCfg.health.pingTimeoutMs} ms`
                  : `failed: ${ping.message}`),
            )
          return problems
        },
        metricsHandler: (req, res) => telemetry.metricsHandler(req, res),
      })
      api = a
      closers.push(() => a.close())
      try {
        await a.listen({ host: apiCfg.host, port: apiCfg.port })
      } catch (err) {
        const inUse = (err as { code?: string }).code === 'EADDRINUSE'
        throw new BenchstreamError(
          'BS_ERR_CONFIG',
          inUse
            ? `API_PORT ${apiCfg.port} on ${apiCfg.host} is already in use: stop what holds it or set API_PORT ` +
                `(0 picks a free port)`
            : `the API cannot listen on ${apiCfg.host}:${apiCfg.port}: ${(err as Error).message}`,
          { cause: err },
        )
      }
      const addr = a.server.address()
      apiUrl =
        typeof addr === 'object' && addr !== null
          ? `http://${apiCfg.host.includes(':') ? `[${apiCfg.host}]` : apiCfg.host}:${addr.port}`
          : undefined
      // Read commands find this server (and its API) by its data directory.
      if (apiUrl !== undefined) {
        const removeServerFile = writeServerFile(cfg.infra.dataDir, apiUrl)
        closers.push(async () => removeServerFile())
      }
    }
    let stopped = false
    return {
      processor,
      get alerts() {
        return alertEngine()
      },
      leadership,
      api,
      apiUrl,
      readModel,
      ch,
      reader,
      telemetry,
      metrics,
      log,
      async stop() {
        if (stopped) return
        stopped = true
        await closeAll()
      },
    }
  } catch (err) {
    await closeAll()
    throw err
  }
}

/** The server's flags (parseArgs options). */
export const SERVER_FLAGS = {
  'no-api': { type: 'boolean' },
  help: { type: 'boolean', short: 'h' },
} as const satisfies FlagSpecs

export async function serverMain(argv: readonly string[]): Promise<number> {
  const { values } = parseFlags(argv, SERVER_FLAGS, SERVER_USAGE)
  if (values.help === true) {
    process.stdout.write(SERVER_USAGE + '\n')
    return 0
  }
  const api = values['no-api'] !== true
  const log = createLogger('benchstream-server', process.env, { format: 'json' })
  const infra = readInfraConfig(process.env)
  // Commands started beside this one (`benchstream server & benchstream experiment run ...`) wait for it.
  const unmark = markServerStarting(infra.dataDir)
  // One Ctrl-C or `kill %1` often arrives twice: to the process group, and forwarded by `npx` (npm exec) to its
  // child. The second must not cut the stop short (the broker this server started would be left running); a third
  // does, at once.
  let broker: LocalKafka | undefined
  let svc: Server | undefined
  let signals = 0
  const stopSignal = new Promise<void>((resolve) => {
    const onSignal = (signal: NodeJS.Signals): void => {
      signals++
      if (signals >= 3) {
        log.warn({ signal }, 'stop cut short: stopping at once (a local Kafka broker it started may still run)')
        process.exit(130)
      }
      if (signals === 1 && svc === undefined)
        log.info({ signal }, 'stop asked while starting: the server stops as soon as its start has finished')
      resolve()
    }
    process.on('SIGINT', onSignal)
    process.on('SIGTERM', onSignal)
  })
  try {
    broker = await localBroker(infra, api, log)
    const env = broker === undefined ? process.env : { ...process.env, KAFKA_BROKERS: broker.brokers }
    svc = await startServer(env, { api, log })
    if (!api) unmark()
    log.info({ clickhouse: svc.ch.mode, location: svc.ch.location, api: svc.apiUrl }, 'server running')
    await stopSignal
    log.info('server stopping: flushing and committing')
    return 0
  } finally {
    await svc?.stop()
    unmark()
    if (broker?.startedHere === true) {
      await broker.stop().then(
        () => log.info({ kafka: broker?.brokers }, 'the local Kafka broker this server started is stopped'),
        (err: unknown) => log.warn({ err }, 'stopping the local Kafka broker this server started failed'),
      )
    }
  }
}

/**
 * KAFKA_BROKERS unset, on loopback: the local broker on 127.0.0.1:KAFKA_PORT, as the demo has it (one already
 * answering there is used and left running; else deploy/local/kafka.sh starts one in <BENCHSTREAM_DATA_DIR>/kafka-PORT,
 * which stops with this server). Said in one line: which broker, its data, how it stops. A server listening beyond
 * loopback is a deployment: it starts no broker and says to set KAFKA_BROKERS.
 */
async function localBroker(infra: InfraConfig, api: boolean, log: Logger): Promise<LocalKafka | undefined> {
  const local = infra.kafka.local
  if (local === undefined) return undefined
  // readApiConfig keeps a Host allow-list only for a loopback address (beyond loopback the token protects the API).
  if (api && readApiConfig(process.env).allowedHosts === undefined) {
    log.warn(
      { kafka: infra.kafka.brokers.join(',') },
      'KAFKA_BROKERS is not set and the API listens beyond loopback: no local broker is started for a deployed ' +
        'server; set KAFKA_BROKERS to the cluster',
    )
    return undefined
  }
  if (infra.kafka.security !== undefined)
    throw new BenchstreamError(
      'BS_ERR_CONFIG',
      `KAFKA_SECURITY_PROTOCOL=${infra.kafka.security.protocol} needs KAFKA_BROKERS: the local broker the server ` +
        'starts without it speaks PLAINTEXT',
    )
  const dataDir = path.join(infra.dataDir, `kafka-${local.port}`)
  log.info(
    { kafka: infra.kafka.brokers[0] },
    `KAFKA_BROKERS is not set: using the local broker on ${infra.kafka.brokers[0]}, started if nothing answers ` +
      'there (deploy/local/kafka.sh; its first start fetches the jars with Maven)',
  )
  const broker = await useLocalKafka({
    port: local.port,
    dataDir,
    log: (line) => log.debug({ component: 'kafka.sh' }, line),
  })
  const stop = `KAFKA_PORT=${local.port} KAFKA_DATA_DIR=${dataDir} bash deploy/local/kafka.sh stop`
  log.info(
    { kafka: broker.brokers, dataDir, startedHere: broker.startedHere },
    broker.startedHere
      ? `started the local Kafka broker: ${broker.said}; it stops when this server stops (one started ` +
          'beforehand, with npm run kafka:start, is used and left running instead)'
      : `using the Kafka broker already answering on ${broker.brokers} (${broker.said}); it is left running ` +
          `when this server stops${/ running on /.test(broker.said) ? ` (to stop it: ${stop})` : ''}`,
  )
  return broker
}

/** Longest wait for one step of the server's stop (see closeAll). */
const CLOSE_STEP_TIMEOUT_MS = 20_000

/** 'ok', 'timeout', or the error, without leaving the promise unhandled. */
async function withTimeout(p: Promise<unknown>, ms: number): Promise<'ok' | 'timeout' | Error> {
  let timer: NodeJS.Timeout | undefined
  const timeout = new Promise<'timeout'>((resolve) => (timer = setTimeout(() => resolve('timeout'), ms)))
  try {
    return await Promise.race([
      p.then(
        () => 'ok' as const,
        (err: unknown) => (err instanceof Error ? err : new Error(String(err))),
      ),
      timeout,
    ])
  } finally {
    clearTimeout(timer)
  }
}
