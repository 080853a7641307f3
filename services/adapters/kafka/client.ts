/**
 * Kafka adapter: client construction and topic set-up over kafkajs. The rest
 * of the code sees producers and consumers only through the driver's sink and
 * the processor's source.
 */
import { Kafka, logLevel, Partitioners, type Admin } from 'kafkajs'
import type { KafkaConfig, TopicsConfig } from '../../common/infra-config.js'
import { BenchstreamError } from '../../core/errors.js'

export function createKafka(cfg: KafkaConfig, clientIdSuffix: string): Kafka {
  return new Kafka({
    clientId: `${cfg.clientId}-${clientIdSuffix}`,
    brokers: cfg.brokers,
    logLevel: process.env.KAFKAJS_LOG_LEVEL === 'debug' ? logLevel.DEBUG : logLevel.NOTHING,
    // A short connect timeout makes a missing broker visible quickly; retries cover real hiccups.
    connectionTimeout: 3000,
    retry: { initialRetryTime: 100, retries: 8, maxRetryTime: 5000 },
  })
}

/** kafkajs' current default partitioner, chosen explicitly (this also silences its start-up notice). */
export const partitioner = Partitioners.DefaultPartitioner

/** Creates Benchstream's topics if they are missing. Existing topics are left as they are. */
export async function ensureTopics(kafka: Kafka, cfg: KafkaConfig, topics: TopicsConfig): Promise<void> {
  const admin: Admin = kafka.admin()
  try {
    await admin.connect()
    const existing = new Set(await admin.listTopics())
    const wanted = [topics.events, topics.deadLetter, topics.alerts].filter((t) => !existing.has(t))
    if (wanted.length > 0) {
      await admin.createTopics({
        waitForLeaders: true,
        topics: wanted.map((topic) => ({
          topic,
          numPartitions: topic === topics.events ? topics.partitions : 1,
          replicationFactor: 1,
        })),
      })
    }
  } catch (err) {
    throw new BenchstreamError(
      'BS_ERR_KAFKA',
      `cannot set up topics on Kafka at ${cfg.brokers.join(',')}: ${(err as Error).message}. Is the ` +
        `broker running? Start one with deploy/local/kafka.sh start, or set KAFKA_BROKERS.`,
      { cause: err },
    )
  } finally {
    await admin.disconnect().catch(() => undefined)
  }
}
