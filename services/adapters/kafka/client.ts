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

/** How long topic set-up keeps trying after errors the broker calls retriable (a new topic not yet in its metadata). */
const TOPIC_SETUP_DEADLINE_MS = 60_000
const TOPIC_SETUP_MAX_WAIT_MS = 2000

/**
 * Creates Benchstream's topics if they are missing. Existing topics are left as they are. A broker that has just
 * created a topic can answer "does not host this topic-partition" while the topic reaches its metadata (seen on a
 * loaded machine): such retriable answers are retried until TOPIC_SETUP_DEADLINE_MS, anything else fails at once.
 */
export async function ensureTopics(kafka: Kafka, cfg: KafkaConfig, topics: TopicsConfig): Promise<void> {
  await retryingTopicSetup(cfg, () => createMissingTopics(kafka, topics))
}

/** Runs a topic set-up, again after retriable answers until TOPIC_SETUP_DEADLINE_MS; BS_ERR_KAFKA otherwise. */
export async function retryingTopicSetup(cfg: KafkaConfig, setup: () => Promise<void>): Promise<void> {
  const deadline = Date.now() + TOPIC_SETUP_DEADLINE_MS
  for (let wait = 100; ; wait = Math.min(TOPIC_SETUP_MAX_WAIT_MS, wait * 2)) {
    try {
      await setup()
      return
    } catch (err) {
      if (!isRetriable(err) || Date.now() + wait > deadline)
        throw new BenchstreamError(
          'BS_ERR_KAFKA',
          `cannot set up topics on Kafka at ${cfg.brokers.join(',')}: ${(err as Error).message}. Is the ` +
            `broker running? Start one with deploy/local/kafka.sh start, or set KAFKA_BROKERS.`,
          { cause: err },
        )
      await new Promise((r) => setTimeout(r, wait))
    }
  }
}

async function createMissingTopics(kafka: Kafka, topics: TopicsConfig): Promise<void> {
  const admin: Admin = kafka.admin()
  try {
    await admin.connect()
    const all = [topics.events, topics.deadLetter, topics.alerts]
    const existing = new Set(await admin.listTopics())
    const wanted = all.filter((t) => !existing.has(t))
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
    // Every partition has a leader before anyone produces or consumes (throws a retriable error until then).
    await admin.fetchTopicMetadata({ topics: all })
  } finally {
    await admin.disconnect().catch(() => undefined)
  }
}

/** kafkajs marks errors a retry can help with; a connection refused is not one of them here (no broker). */
function isRetriable(err: unknown): boolean {
  for (let e: unknown = err, depth = 0; e !== undefined && e !== null && depth < 5; depth++) {
    const x = e as { retriable?: unknown; type?: unknown; name?: unknown; cause?: unknown; errors?: unknown }
    if (x.name === 'KafkaJSConnectionError' || x.name === 'KafkaJSNumberOfRetriesExceeded') return false
    if (x.retriable === true) return true
    const transient = [
      'UNKNOWN_TOPIC_OR_PARTITION',
      'LEADER_NOT_AVAILABLE',
      'NOT_LEADER_FOR_PARTITION',
      'TOPIC_ALREADY_EXISTS',
    ]
    if (typeof x.type === 'string' && transient.includes(x.type)) return true
    if (Array.isArray(x.errors) && x.errors.length > 0) return x.errors.every((y) => isRetriable(y))
    e = x.cause
  }
  return false
}
