/**
 * Records (already encoded, schema v1) to the events topic in order, for
 * commands that send what they read rather than what they measure
 * (import-ycsb): acknowledged by every in-sync replica, idempotent, in
 * bounded produce requests.
 */
import type { Producer } from 'kafkajs'
import type { InfraConfig } from '../../common/infra-config.js'
import { BenchstreamError } from '../../core/errors.js'
import { createKafka, ensureTopics, partitioner } from './client.js'

/** Records per produce request. */
const RECORDS_PER_SEND = 100
/** Bytes per produce request: well under the broker's default message.max.bytes (1 MiB) for the record batch. */
const BYTES_PER_SEND = 256 * 1024

/** Sends records to the events topic in order, acknowledged (acks=all, idempotent), in bounded produce requests. */
export class KafkaRecordSender {
  private pending: Buffer[] = []
  private pendingBytes = 0

  private constructor(
    private readonly producer: Producer,
    private readonly topic: string,
    private readonly key: string,
    private readonly brokers: string,
  ) {}

  /** `key`: every record under one key stays in order on one partition (a client's records, its end record last). */
  static async open(infra: InfraConfig, clientIdSuffix: string, key: string): Promise<KafkaRecordSender> {
    const kafka = createKafka(infra.kafka, clientIdSuffix)
    await ensureTopics(kafka, infra.kafka, infra.topics)
    // Idempotent: a retried send cannot write an interval twice.
    const producer = kafka.producer({
      idempotent: true,
      maxInFlightRequests: 1,
      createPartitioner: partitioner,
      allowAutoTopicCreation: false,
    })
    try {
      await producer.connect()
    } catch (err) {
      throw new BenchstreamError(
        'BS_ERR_KAFKA',
        `cannot connect to Kafka at ${infra.kafka.brokers.join(',')}: ${(err as Error).message}`,
        { cause: err },
      )
    }
    return new KafkaRecordSender(producer, infra.topics.events, key, infra.kafka.brokers.join(','))
  }

  async add(value: Buffer): Promise<void> {
    if (
      this.pending.length > 0 &&
      (this.pending.length >= RECORDS_PER_SEND || this.pendingBytes + value.length > BYTES_PER_SEND)
    )
      await this.flush()
    this.pending.push(value)
    this.pendingBytes += value.length
  }

  async flush(): Promise<void> {
    if (this.pending.length === 0) return
    const values = this.pending
    this.pending = []
    this.pendingBytes = 0
    await this.send(values)
  }

  async send(values: Buffer[]): Promise<void> {
    try {
      await this.producer.send({
        topic: this.topic,
        acks: -1,
        messages: values.map((value) => ({ key: this.key, value })),
      })
    } catch (err) {
      throw new BenchstreamError('BS_ERR_KAFKA', `cannot send to Kafka at ${this.brokers}: ${(err as Error).message}`, {
        cause: err,
      })
    }
  }

  async close(): Promise<void> {
    await this.producer.disconnect().catch(() => undefined)
  }
}
