/**
 * Publishes alert transitions on the alerts topic (TopicsConfig.alerts) as
 * JSON AlertNotice messages (schemas/alert-rules.v1.ts), keyed by the
 * incident's fingerprint so both states of one incident land in order on
 * one partition.
 */
import type { Kafka, Producer } from 'kafkajs'
import type { AlertNotifier, DeliveryResult } from '../../core/ports/alerts.js'
import { alertNotice } from '../../core/alerting/notices.js'
import type { AlertTransition } from '../../core/alerting/alert-window.js'
import { partitioner } from './client.js'

export class KafkaAlertPublisher implements AlertNotifier {
  readonly channel = 'kafka'
  /** The topic is the record of every transition: a silenced one goes there too, marked (silencedBy). */
  readonly mutedBySilences = false

  private constructor(
    private readonly producer: Producer,
    private readonly topic: string,
  ) {}

  static async open(kafka: Kafka, topic: string): Promise<KafkaAlertPublisher> {
    // Idempotent: kafkajs' own retries cannot publish one notice twice.
    const producer = kafka.producer({
      idempotent: true,
      maxInFlightRequests: 1,
      createPartitioner: partitioner,
      allowAutoTopicCreation: false,
    })
    await producer.connect()
    return new KafkaAlertPublisher(producer, topic)
  }

  async notify(t: AlertTransition): Promise<DeliveryResult> {
    try {
      await this.producer.send({
        topic: this.topic,
        acks: -1,
        messages: [
          {
            key: t.fingerprint,
            value: JSON.stringify(alertNotice(t)),
            headers: {
              state: t.state,
              rule: t.rule,
              'run-id': t.runId,
              ...(t.silencedBy === undefined ? {} : { 'silenced-by': t.silencedBy }),
            },
          },
        ],
      })
      return { ok: true }
    } catch (err) {
      // kafkajs has retried already (createKafka's retry settings).
      return { ok: false, error: `publishing on ${this.topic} failed: ${(err as Error).message}` }
    }
  }

  async close(): Promise<void> {
    await this.producer.disconnect().catch(() => undefined)
  }
}
