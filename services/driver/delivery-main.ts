/**
 * Entry file of the driver's delivery thread (a worker_threads worker
 * started by RingEventSink): opens the Kafka sink and drains the client
 * threads' event rings into it (delivery.ts).
 */
import { parentPort, workerData } from 'node:worker_threads'
import { createKafka } from '../adapters/kafka/client.js'
import { KafkaEventSink, type KafkaSinkOptions } from '../adapters/kafka/event-sink.js'
import type { KafkaConfig } from '../common/infra-config.js'
import { serveDelivery, type DeliveryWorkerData } from './delivery.js'

/** What driver/main.ts passes for the Kafka sink. */
export interface KafkaDelivery {
  kafka: KafkaConfig
  /** Suffix of the Kafka client id (createKafka). */
  clientIdSuffix: string
  options: KafkaSinkOptions
}

if (parentPort !== null) {
  const data = workerData as DeliveryWorkerData<KafkaDelivery>
  await serveDelivery(parentPort, data.rings, () => KafkaEventSink.open(createKafka(data.sink.kafka, data.sink.clientIdSuffix), data.sink.options))
}
