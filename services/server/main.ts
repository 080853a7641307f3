/**
 * `benchstream processor`: the processor, and (unless --no-api) the API in
 * the same process. In the embedded ClickHouse mode that is required: chDB
 * binds its data directory to one process, so the process that writes the
 * windows also serves them.
 */
import type { FastifyInstance } from 'fastify'
import { ClickHouseWindowStore } from '../adapters/clickhouse/window-store.js'
import { migrate, openClickHouse, type ClickHouse } from '../adapters/clickhouse/client.js'
import { createKafka, ensureTopics } from '../adapters/kafka/client.js'
import { build } from '../api/app.js'
import { readApiConfig } from '../api/config.js'
import type { SpanExporter } from '@opentelemetry/sdk-trace-base'
import { int, str, type Env } from '../common/env.js'
import { initTelemetry, type Telemetry } from '../adapters/otel/telemetry.js'
import { readAlertsConfig } from '../alerts/config.js'
import { startAlerts, type AlertsService } from '../alerts/main.js'
import { BenchstreamError } from '../core/errors.js'
import { readProcessorConfig } from '../processor/config.js'
import { ProcessorMetrics } from '../processor/metrics.js'
import { Processor, type ProcessorHooks } from '../processor/app.js'

export interface ProcessorService {
  processor: Processor
  ch: ClickHouse
  telemetry: Telemetry
  metrics: ProcessorMetrics
  /** The alert evaluator, when ALERTS_ENABLED (the default). */
  alerts: AlertsService | undefined
  api: FastifyInstance | undefined
  /** http://host:port of the API, when it runs. */
  apiUrl: string | undefined
  stop(): Promise<void>
}

export interface ProcessorServiceOptions {
  api: boolean
  hooks?: ProcessorHooks
  /** Extra span exporter (tests). */
  spanExporter?: SpanExporter
  /** Use this ClickHouse handle instead of opening one from the config (tests put a failing connection in front of the engine). */
  clickhouse?: ClickHouse
}

export async function startProcessorService(env: Env, opts: ProcessorServiceOptions): Promise<ProcessorService> {
  const cfg = readProcessorConfig(env)
  const apiCfg = readApiConfig(env)
  const alertsCfg = readAlertsConfig(env)
  // Without the API in this process, /metrics gets a small server of its own (METRICS_PORT, 0 = off).
  const metricsPort = int(env, 'METRICS_PORT', 9464, 0, 65535)
  const telemetry = initTelemetry({
    serviceName: 'benchstream-processor',
    env,
    ...(opts.spanExporter === undefined ? {} : { spanExporter: opts.spanExporter }),
    ...(opts.api || metricsPort === 0 ? {} : { metricsServer: { port: metricsPort, host: str(env, 'METRICS_HOST', '127.0.0.1') } }),
  })
  const metrics = new ProcessorMetrics(telemetry.meter)
  const ch = opts.clickhouse ?? openClickHouse(cfg.infra.clickhouse)
  await migrate(ch, { opsTtlDays: cfg.infra.clickhouse.opsTtlDays })
  const kafka = createKafka(cfg.infra.kafka, 'processor')
  await ensureTopics(kafka, cfg.infra.kafka, cfg.infra.topics)
  const processor = new Processor(cfg, kafka, new ClickHouseWindowStore(ch), { metrics, tracer: telemetry.tracer, ...opts.hooks })
  await processor.start()
  const alerts = alertsCfg.enabled ? await startAlerts(alertsCfg, { ch, kafka }) : undefined
  let api: FastifyInstance | undefined
  let apiUrl: string | undefined
  if (opts.api) {
    api = build(apiCfg, { ch, status: () => ({ processor: processor.stats, ...(alerts === undefined ? {} : { alerts: alerts.engine.stats }) }), metricsHandler: telemetry.metricsHandler })
    try {
      await api.listen({ host: apiCfg.host, port: apiCfg.port })
    } catch (err) {
      await alerts?.stop()
      await processor.stop()
      await ch.close()
      await telemetry.shutdown()
      const inUse = (err as { code?: string }).code === 'EADDRINUSE'
      throw new BenchstreamError('BS_ERR_CONFIG', inUse ? `API_PORT ${apiCfg.port} on ${apiCfg.host} is already in use: stop what holds it or set API_PORT (0 picks a free port)` : `the API cannot listen on ${apiCfg.host}:${apiCfg.port}: ${(err as Error).message}`, { cause: err })
    }
    const addr = api.server.address()
    apiUrl = typeof addr === 'object' && addr !== null ? `http://${apiCfg.host}:${addr.port}` : undefined
  }
  let stopped = false
  return {
    processor,
    ch,
    alerts,
    telemetry,
    metrics,
    api,
    apiUrl,
    async stop() {
      if (stopped) return
      stopped = true
      await alerts?.stop()
      await processor.stop()
      await api?.close()
      await ch.close()
      await telemetry.shutdown()
    },
  }
}

export async function processorMain(argv: readonly string[]): Promise<number> {
  const unknown = argv.filter((a) => a !== '--no-api')
  if (unknown.length > 0) throw new Error(`unknown option ${unknown[0]}; benchstream processor accepts --no-api`)
  const svc = await startProcessorService(process.env, { api: !argv.includes('--no-api') })
  process.stderr.write(`processor running: ClickHouse ${svc.ch.mode} at ${svc.ch.location}${svc.apiUrl === undefined ? '' : `, API ${svc.apiUrl}`}\n`)
  await new Promise<void>((resolve) => {
    process.once('SIGINT', resolve)
    process.once('SIGTERM', resolve)
  })
  process.stderr.write('processor stopping: flushing and committing\n')
  await svc.stop()
  return 0
}
