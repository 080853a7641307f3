/**
 * DeadLetterSink on a Kafka topic: each rejected message (or description of
 * rejected events) with its reason in headers, keyed by its source position
 * so that a replay's duplicate can be recognised.
 */
import type { Kafka, Producer } from 'kafkajs'
import type { DeadLetterRecord, DeadLetterSink } from '../../core/ports/dead-letter-sink.js'

/** Dead letters per produce request (each carries at most one source message, ≤ ~1 MB together). */
const DEAD_LETTERS_PER_REQUEST = 200
/** Longest detail header kept. */
const MAX_DETAIL_CHARS = 1000

export class KafkaDeadLetterSink implements DeadLetterSink {
  private constructor(
    private readonly producer: Producer,
    private readonly topic: string,
  ) {}

  static async open(kafka: Kafka, topic: string): Promise<KafkaDeadLetterSink> {
    const producer = kafka.producer({ idempotent: true, maxInFlightRequests: 1, allowAutoTopicCreation: false })
    await producer.connect()
    return new KafkaDeadLetterSink(producer, topic)
  }

  async send(records: readonly DeadLetterRecord[]): Promise<void> {
    // Chunked: one produce request must stay under the broker's message.max.bytes.
    for (let i = 0; i < records.length; i += DEAD_LETTERS_PER_REQUEST) {
      await this.producer.send({
        topic: this.topic,
        acks: -1,
        messages: records.slice(i, i + DEAD_LETTERS_PER_REQUEST).map((d) => ({
          key: `${d.sourceTopic}/${d.sourcePartition}/${d.sourceOffset}`,
          value: d.payload,
          headers: {
            reason: d.reason,
            detail: d.detail.slice(0, MAX_DETAIL_CHARS),
            'source-topic': d.sourceTopic,
            'source-partition': String(d.sourcePartition),
            'source-offset': String(d.sourceOffset),
          },
        })),
      })
    }
  }

  async close(): Promise<void> {
    await this.producer.disconnect().catch(() => undefined)
  }
}
