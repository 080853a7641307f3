/**
 * Starts the alert evaluator on an open ClickHouse and Kafka. It must run in
 * exactly one place: startProcessorService starts it when ALERTS_ENABLED
 * (the default); with several processor instances, set ALERTS_ENABLED=false
 * on all but one. It only reads ClickHouse and owns no Kafka partitions, so
 * it can move to a process of its own without changes here.
 */
import type { Kafka } from 'kafkajs'
import type { ClickHouse } from '../adapters/clickhouse/client.js'
import { ClickHouseAlertSource, ClickHouseAlertStore } from '../adapters/clickhouse/alerts.js'
import { KafkaAlertPublisher } from '../adapters/kafka/alert-publisher.js'
import { WebhookNotifier } from '../adapters/http/alert-webhook.js'
import { build, type AlertEngine, type AlertNotifier } from './app.js'
import type { AlertsConfig } from './config.js'

export interface AlertsService {
  engine: AlertEngine
  stop(): Promise<void>
}

export async function startAlerts(cfg: AlertsConfig, deps: { ch: ClickHouse; kafka: Kafka; log?: (line: string) => void }): Promise<AlertsService> {
  const publisher = await KafkaAlertPublisher.open(deps.kafka, cfg.infra.topics.alerts)
  const notifiers: AlertNotifier[] = [publisher]
  if (cfg.webhookUrl !== undefined) {
    notifiers.push(new WebhookNotifier({ url: cfg.webhookUrl, timeoutMs: cfg.webhookTimeoutMs, attempts: cfg.webhookAttempts, backoffMs: cfg.webhookBackoffMs, receiver: cfg.receiver, externalUrl: cfg.externalUrl }))
  }
  const engine = build(cfg, {
    source: new ClickHouseAlertSource(deps.ch),
    store: new ClickHouseAlertStore(deps.ch),
    notifiers,
    log: deps.log ?? ((line) => process.stderr.write(line + '\n')),
  })
  engine.start()
  let stopped = false
  return {
    engine,
    async stop() {
      if (stopped) return
      stopped = true
      await engine.stop()
      await publisher.close()
    },
  }
}
