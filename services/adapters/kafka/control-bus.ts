/**
 * The control topic over kafkajs (the ControlBus port): one partition, so
 * every reader sees every message in one order; message.timestamp.type =
 * LogAppendTime, so the broker stamps each message with its own clock (the
 * agents' clock offsets are measured against it); kept a day. Each reader is
 * its own consumer group, positioned at the end of the log when it starts:
 * control messages are for who is listening now. A message that is too large,
 * not JSON or not of the schema is refused and counted, never handed on.
 */
import { randomUUID } from 'node:crypto'
import type { Consumer, Kafka, Producer } from 'kafkajs'
import { Value } from 'typebox/value'
import { ControlMessage, MAX_CONTROL_MESSAGE_BYTES } from '../../../schemas/experiment-control.v1.js'
import type { KafkaConfig, TopicsConfig } from '../../common/infra-config.js'
import { BenchstreamError } from '../../core/errors.js'
import type { ControlBus, ControlBusHandlers, Published } from '../../core/ports/control-bus.js'
import { createKafka, partitioner, retryingTopicSetup, topicDurability, withDurability } from './client.js'

/** How long the control topic keeps messages: long enough to debug an experiment of a day. */
const RETENTION_MS = 24 * 3600 * 1000
/** How long start() waits for the consumer to join its group. */
const JOIN_TIMEOUT_MS = 30_000

export class KafkaControlBus implements ControlBus {
  private consumer: Consumer | undefined
  private producer: Producer | undefined
  private count = 0

  constructor(
    private readonly kafka: Kafka,
    private readonly topic: string,
    /** Names the consumer group (with a random suffix): agent-<name>, coordinator, ... */
    private readonly role: string,
    private readonly cfg: KafkaConfig = { brokers: [], clientId: 'benchstream' },
    /** Replicas and min.insync.replicas when the topic is created (TopicsConfig); 0 = chosen from the cluster. */
    private readonly durability: Pick<TopicsConfig, 'replication' | 'minInsyncReplicas'> = {
      replication: 0,
      minInsyncReplicas: 0,
    },
  ) {}

  static create(
    cfg: KafkaConfig,
    topic: string,
    role: string,
    durability?: Pick<TopicsConfig, 'replication' | 'minInsyncReplicas'>,
  ): KafkaControlBus {
    return new KafkaControlBus(createKafka(cfg, `control-${role}`), topic, role, cfg, durability)
  }

  get rejected(): number {
    return this.count
  }

  async start(handlers: ControlBusHandlers): Promise<void> {
    await this.ensureTopic()
    this.producer = this.kafka.producer({ createPartitioner: partitioner, allowAutoTopicCreation: false })
    await this.producer.connect()
    // The end of the log now: every message published from here on is delivered, none before.
    const admin = this.kafka.admin()
    await admin.connect()
    let end: Array<{ partition: number; offset: string }>
    try {
      end = await admin.fetchTopicOffsets(this.topic)
    } finally {
      await admin.disconnect()
    }
    const consumer = this.kafka.consumer({ groupId: `benchstream-control-${this.role}-${randomUUID().slice(0, 8)}` })
    this.consumer = consumer
    await consumer.connect()
    const seekToEnd = (): void => {
      for (const p of end) consumer.seek({ topic: this.topic, partition: p.partition, offset: p.offset })
    }
    // Positioned at that end once the consumer's group exists: at run()'s return, or, when joining crashed (a
    // coordinator not ready on a busy broker) and kafkajs starts the consumer again, at its next join; else it would
    // start at the end of the log as of that join and miss what was published in between (a live agent's answer to
    // a claim).
    let sought = false
    let started = false
    const joined = new Promise<void>((resolve, reject) => {
      const timer = setTimeout(
        () => reject(new BenchstreamError('BS_ERR_KAFKA', `joining the control topic ${this.topic} took over 30 s`)),
        JOIN_TIMEOUT_MS,
      )
      consumer.on(consumer.events.GROUP_JOIN, () => {
        if (!sought && started) {
          sought = true
          seekToEnd()
        }
        clearTimeout(timer)
        resolve()
      })
    })
    await consumer.subscribe({ topic: this.topic, fromBeginning: false })
    await consumer.run({
      eachMessage: async ({ message }) => {
        const decoded = decode(message.value)
        if (typeof decoded === 'string') {
          this.count++
          handlers.onRejected?.(decoded)
          return
        }
        handlers.onMessage(decoded, Number(message.timestamp))
      },
    })
    started = true
    try {
      seekToEnd()
      sought = true
    } catch (err) {
      // kafkajs: "Consumer group was not initialized": the join crashed and is retried; positioned at the next join.
      if (!/not initialized/.test((err as Error).message)) throw err
    }
    await joined
  }

  async publish(message: ControlMessage): Promise<Published> {
    if (this.producer === undefined) throw new BenchstreamError('BS_ERR_INTERNAL', 'the control bus is not started')
    const value = JSON.stringify(message)
    try {
      const [meta] = await this.producer.send({ topic: this.topic, acks: -1, messages: [{ value }] })
      const t = Number(meta?.logAppendTime ?? -1)
      return { brokerTimeMs: t > 0 ? t : undefined }
    } catch (err) {
      throw new BenchstreamError(
        'BS_ERR_KAFKA',
        `cannot send to the control topic ${this.topic}: ${(err as Error).message}`,
        {
          cause: err,
        },
      )
    }
  }

  async close(): Promise<void> {
    await this.consumer?.disconnect().catch(() => undefined)
    await this.producer?.disconnect().catch(() => undefined)
  }

  /** The topic, created if missing (several agents may start at once: a topic someone else created is fine). */
  private async ensureTopic(): Promise<void> {
    await retryingTopicSetup(this.cfg, () => this.createTopic())
  }

  private async createTopic(): Promise<void> {
    const admin = this.kafka.admin()
    try {
      await admin.connect()
      if (!(await admin.listTopics()).includes(this.topic))
        await admin.createTopics({
          waitForLeaders: true,
          topics: [
            withDurability(
              {
                topic: this.topic,
                numPartitions: 1,
                configEntries: [
                  { name: 'message.timestamp.type', value: 'LogAppendTime' },
                  { name: 'retention.ms', value: String(RETENTION_MS) },
                ],
              },
              await topicDurability(admin, this.durability),
            ),
          ],
        })
      // Its partition has a leader before anyone produces (a retriable error until then).
      await admin.fetchTopicMetadata({ topics: [this.topic] })
    } finally {
      await admin.disconnect().catch(() => undefined)
    }
  }
}

/** A control message, or why the bytes are not one. */
export function decode(value: Buffer | null): ControlMessage | string {
  if (value === null) return 'an empty message'
  if (value.length > MAX_CONTROL_MESSAGE_BYTES)
    return `a message of ${value.length} bytes, over the limit of ${MAX_CONTROL_MESSAGE_BYTES}`
  let json: unknown
  try {
    json = JSON.parse(value.toString('utf8'))
  } catch {
    return 'a message that is not JSON'
  }
  if (!Value.Check(ControlMessage, json)) {
    const type = typeof json === 'object' && json !== null ? (json as { type?: unknown }).type : undefined
    return `a message that is not a control message of schema v1 (type ${JSON.stringify(type)})`
  }
  return json
}
