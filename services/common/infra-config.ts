/**
 * Where the shared infrastructure is: Kafka, ClickHouse, topics and the data
 * directory. Every service reads this once at start-up through its own
 * config.ts; the same variables drive deploy/docker-compose.yml.
 */
import path from 'node:path'
import { Type } from 'typebox'
import type { WindowCompleteness } from '../core/stats/window-completeness.js'
import { BenchstreamError } from '../core/errors.js'
import { EnvVar, readEnv, type Env } from './config.js'

const BROKER = '[A-Za-z0-9.\\-[\\]:]+:\\d{1,5}'
const TOPIC = '^[A-Za-z0-9._-]{1,249}$'
const TOPIC_ALLOWED = 'a Kafka topic name: 1-249 characters from A-Z a-z 0-9 . _ -'

/** Read by the processor and the alert evaluator, which judges windows complete by the same grace. */
export const ALLOWED_LATENESS_MS = EnvVar.integer({
  default: 2000,
  minimum: 0,
  maximum: 3_600_000,
  description:
    "grace after a window's end before its events count as late (still counted); alerts and the " +
    'live view wait for it too',
})

/**
 * When a window is complete (services/core/stats/window-completeness.ts): read once, by every service that judges
 * windows (the alert evaluator and the live view), so that they never disagree.
 */
export const CompletenessEnv = {
  ALLOWED_LATENESS_MS,
  WINDOW_END_GRACE_MS: EnvVar.integer({
    default: 5000,
    minimum: 0,
    maximum: 3_600_000,
    description:
      "after a run's end record, how long its last flushes may take before its last windows count as complete " +
      '(alerts and the live view)',
  }),
  WINDOW_PARTITION_IDLE_MS: EnvVar.integer({
    default: 10_000,
    minimum: 100,
    maximum: 3_600_000,
    description:
      "a partition this far behind a run's newest data is treated as done with the run when windows are judged " +
      'complete (alerts and the live view)',
  }),
}

export function readCompleteness(e: {
  ALLOWED_LATENESS_MS: number
  WINDOW_END_GRACE_MS: number
  WINDOW_PARTITION_IDLE_MS: number
}): WindowCompleteness {
  return {
    allowedLatenessMs: e.ALLOWED_LATENESS_MS,
    endGraceMs: e.WINDOW_END_GRACE_MS,
    partitionIdleMs: e.WINDOW_PARTITION_IDLE_MS,
  }
}

/** The environment variables of the shared infrastructure (docs/reference/configuration.md). */
export const InfraEnv = Type.Object({
  KAFKA_BROKERS: EnvVar.string({
    default: '127.0.0.1:9092',
    pattern: `^ *${BROKER} *(, *${BROKER} *)*$`,
    allowed: 'host:port[,host:port...]',
    description: 'Kafka brokers; the demo and the tests start a local one when unset',
  }),
  KAFKA_CLIENT_ID: EnvVar.string({
    default: 'benchstream',
    pattern: '^[A-Za-z0-9._-]{1,100}$',
    allowed: '1-100 characters from A-Z a-z 0-9 . _ -',
    description: 'prefix of the Kafka client ids',
  }),
  BENCHSTREAM_TOPIC_EVENTS: EnvVar.string({
    default: 'benchstream.events.v1',
    pattern: TOPIC,
    allowed: TOPIC_ALLOWED,
    description: 'event topic: operation events, histograms, run lifecycle, server metrics',
  }),
  BENCHSTREAM_TOPIC_DLQ: EnvVar.string({
    default: 'benchstream.events.dlq',
    pattern: TOPIC,
    allowed: TOPIC_ALLOWED,
    description: 'dead-letter topic: rejected messages with their reason',
  }),
  BENCHSTREAM_TOPIC_ALERTS: EnvVar.string({
    default: 'benchstream.alerts',
    pattern: TOPIC,
    allowed: TOPIC_ALLOWED,
    description: 'alert notifications',
  }),
  BENCHSTREAM_TOPIC_CONTROL: EnvVar.string({
    default: 'benchstream.control.v1',
    pattern: TOPIC,
    allowed: TOPIC_ALLOWED,
    description: 'control topic of experiments: agents register and heartbeat, the coordinator assigns runs',
  }),
  BENCHSTREAM_TOPIC_PARTITIONS: EnvVar.integer({
    default: 4,
    minimum: 1,
    maximum: 1024,
    description: 'partitions of the event topic when Benchstream creates it',
  }),
  CLICKHOUSE_URL: EnvVar.optional({
    pattern: '^https?://\\S+$',
    allowed: 'http://host:port or https://host:port; unset for the embedded engine',
    description: 'ClickHouse server; unset = embedded chDB in the server process',
  }),
  CLICKHOUSE_CLUSTER: EnvVar.optional({
    pattern: '^[A-Za-z_][A-Za-z0-9_-]{0,63}$',
    allowed:
      "a cluster of the server's remote_servers: letters, digits, _ and - (not starting with a digit), at most 64",
    description:
      'ClickHouse cluster (needs CLICKHOUSE_URL): replicated tables, Distributed tables for reads, ON CLUSTER DDL; ' +
      'unset = one server',
  }),
  CLICKHOUSE_USER: EnvVar.string({ default: 'default', description: 'ClickHouse server user' }),
  CLICKHOUSE_PASSWORD: EnvVar.string({ default: '', description: 'ClickHouse server password' }),
  CLICKHOUSE_DATABASE: EnvVar.string({
    default: 'benchstream',
    pattern: '^[A-Za-z_][A-Za-z0-9_]{0,63}$',
    allowed: 'letters, digits and _ (not starting with a digit), at most 64',
    description: "database holding Benchstream's tables",
  }),
  BENCHSTREAM_DATA_DIR: EnvVar.string({
    default: '.benchstream',
    minLength: 1,
    description: 'embedded ClickHouse data (<dir>/clickhouse) and local Kafka data',
  }),
  BENCHSTREAM_OPS_TTL_DAYS: EnvVar.integer({
    default: 30,
    minimum: 0,
    maximum: 36500,
    description: 'days raw events are kept in `ops`; 0 keeps them',
  }),
})

export interface KafkaConfig {
  brokers: string[]
  clientId: string
}

export interface TopicsConfig {
  events: string
  deadLetter: string
  alerts: string
  /** Experiments: agents and the coordinator (schemas/experiments.v1.ts ControlMessage). */
  control: string
  partitions: number
}

export interface ClickHouseConfig {
  /** Server URL; undefined means the embedded chDB engine. */
  url: string | undefined
  /**
   * Cluster the tables are replicated over (schemas/clickhouse in cluster form: docs/guides/deploy.md); undefined
   * means one server (or the embedded engine).
   */
  cluster: string | undefined
  user: string
  password: string
  database: string
  /** Embedded engine's data directory: BENCHSTREAM_DATA_DIR/clickhouse. */
  embeddedPath: string
  /** Days raw events are kept; 0 keeps them forever. */
  opsTtlDays: number
}

export interface InfraConfig {
  dataDir: string
  kafka: KafkaConfig
  topics: TopicsConfig
  clickhouse: ClickHouseConfig
}

export function readInfraConfig(env: Env): InfraConfig {
  const e = readEnv(InfraEnv, env)
  if (e.CLICKHOUSE_CLUSTER !== undefined && e.CLICKHOUSE_URL === undefined)
    throw new BenchstreamError(
      'BS_ERR_CONFIG',
      `CLICKHOUSE_CLUSTER=${JSON.stringify(e.CLICKHOUSE_CLUSTER)} needs CLICKHOUSE_URL: the embedded engine is one ` +
        'process, not a cluster; set CLICKHOUSE_URL to a server of the cluster or unset CLICKHOUSE_CLUSTER',
    )
  const dataDir = path.resolve(e.BENCHSTREAM_DATA_DIR)
  return {
    dataDir,
    kafka: { brokers: e.KAFKA_BROKERS.split(',').map((b) => b.trim()), clientId: e.KAFKA_CLIENT_ID },
    topics: {
      events: e.BENCHSTREAM_TOPIC_EVENTS,
      deadLetter: e.BENCHSTREAM_TOPIC_DLQ,
      alerts: e.BENCHSTREAM_TOPIC_ALERTS,
      control: e.BENCHSTREAM_TOPIC_CONTROL,
      partitions: e.BENCHSTREAM_TOPIC_PARTITIONS,
    },
    clickhouse: {
      url: e.CLICKHOUSE_URL,
      cluster: e.CLICKHOUSE_CLUSTER,
      user: e.CLICKHOUSE_USER,
      password: e.CLICKHOUSE_PASSWORD,
      database: e.CLICKHOUSE_DATABASE,
      embeddedPath: path.join(dataDir, 'clickhouse'),
      opsTtlDays: e.BENCHSTREAM_OPS_TTL_DAYS,
    },
  }
}
