/**
 * Follows the alerts topic (`benchstream alerts --follow`): every notice
 * published after open() was called, in order per incident (notices are
 * keyed by fingerprint, so both states of one incident share a partition).
 *
 * open() records the topic's end offsets first, and consuming starts exactly
 * there: a caller that lists the stored alerts after open() and then runs
 * misses no transition in between (it may see one twice, and tells them
 * apart by fingerprint and state). The consumer group is the follower's own
 * (a random id), deleted again on close; nothing is committed.
 */
import { randomUUID } from 'node:crypto'
import type { Admin, Consumer, Kafka } from 'kafkajs'
import { Value } from 'typebox/value'
import { AlertNotice } from '../../../schemas/alert-rules.v1.js'
import { BenchstreamError } from '../../core/errors.js'

export class KafkaAlertFollower {
  /** Messages that were not an AlertNotice (skipped). */
  malformed = 0

  private constructor(
    private readonly admin: Admin,
    private readonly consumer: Consumer,
    readonly topic: string,
    private readonly groupId: string,
    private readonly from: ReadonlyArray<{ partition: number; offset: string }>,
  ) {}

  static async open(kafka: Kafka, topic: string): Promise<KafkaAlertFollower> {
    const admin = kafka.admin()
    let from: Array<{ partition: number; offset: string }>
    try {
      await admin.connect()
      const topics = await admin.listTopics()
      if (!topics.includes(topic))
        throw new BenchstreamError(
          'BS_ERR_NOT_FOUND',
          `the alerts topic ${topic} does not exist (yet): \`benchstream server\` creates it; ` +
            `BENCHSTREAM_TOPIC_ALERTS names another`,
        )
      from = (await admin.fetchTopicOffsets(topic)).map((o) => ({ partition: o.partition, offset: o.offset }))
    } catch (err) {
      await admin.disconnect().catch(() => undefined)
      if (err instanceof BenchstreamError) throw err
      throw new BenchstreamError(
        'BS_ERR_KAFKA',
        `following the alerts topic ${topic}: Kafka did not answer: ${(err as Error).message}`,
        { cause: err },
      )
    }
    const groupId = `benchstream-alerts-follow-${randomUUID()}`
    const consumer = kafka.consumer({ groupId, allowAutoTopicCreation: false })
    return new KafkaAlertFollower(admin, consumer, topic, groupId, from)
  }

  /** Starts delivering notices (from the offsets open() recorded); returns once consuming has started. */
  async run(onNotice: (n: AlertNotice) => void): Promise<void> {
    await this.consumer.connect()
    await this.consumer.subscribe({ topic: this.topic, fromBeginning: false })
    await this.consumer.run({
      autoCommit: false,
      eachMessage: async ({ message }) => {
        let n: unknown
        try {
          n = JSON.parse(String(message.value))
        } catch {
          n = undefined
        }
        if (Value.Check(AlertNotice, n)) onNotice(n)
        else this.malformed++
      },
    })
    // kafkajs applies a seek once the partition is assigned to this consumer.
    for (const o of this.from) this.consumer.seek({ topic: this.topic, partition: o.partition, offset: o.offset })
  }

  async close(): Promise<void> {
    await this.consumer.disconnect().catch(() => undefined)
    await this.admin.deleteGroups([this.groupId]).catch(() => undefined)
    await this.admin.disconnect().catch(() => undefined)
  }
}
