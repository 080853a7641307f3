/**
 * Where the shared infrastructure is: Kafka, ClickHouse, topics and the data
 * directory. Every service reads this once at start-up through its own
 * config.ts; the same variables drive deploy/docker-compose.yml.
 */
import path from 'node:path'
import { BenchstreamError } from '../core/errors.js'
import { int, str, type Env } from './env.js'

export interface KafkaConfig {
  /** Broker list `host:port,...`. env KAFKA_BROKERS. @default 127.0.0.1:9092 */
  brokers: string[]
  /** env KAFKA_CLIENT_ID. @default benchstream */
  clientId: string
}

export interface TopicsConfig {
  /** Operation events, histograms, run lifecycle and server metrics. env BENCHSTREAM_TOPIC_EVENTS. @default benchstream.events.v1 */
  events: string
  /** Rejected messages with their reason. env BENCHSTREAM_TOPIC_DLQ. @default benchstream.events.dlq */
  deadLetter: string
  /** Alert notifications. env BENCHSTREAM_TOPIC_ALERTS. @default benchstream.alerts */
  alerts: string
  /** Partitions for topics Benchstream creates. env BENCHSTREAM_TOPIC_PARTITIONS. @default 4 */
  partitions: number
}

export interface ClickHouseConfig {
  /** Server URL; unset means the embedded chDB engine. env CLICKHOUSE_URL. */
  url: string | undefined
  /** env CLICKHOUSE_USER. @default default */
  user: string
  /** env CLICKHOUSE_PASSWORD. @default '' */
  password: string
  /** Database holding Benchstream's tables. env CLICKHOUSE_DATABASE. @default benchstream */
  database: string
  /** Embedded engine's data directory. env BENCHSTREAM_DATA_DIR (+ /clickhouse). @default ./.benchstream/clickhouse */
  embeddedPath: string
  /** Days raw events are kept; 0 keeps them forever. env BENCHSTREAM_OPS_TTL_DAYS. @default 30 */
  opsTtlDays: number
}

export interface InfraConfig {
  dataDir: string
  kafka: KafkaConfig
  topics: TopicsConfig
  clickhouse: ClickHouseConfig
}

const BROKER = /^[A-Za-z0-9.\-\[\]:]+:\d{1,5}$/
const TOPIC = /^[A-Za-z0-9._-]{1,249}$/

export function readInfraConfig(env: Env): InfraConfig {
  const dataDir = path.resolve(str(env, 'BENCHSTREAM_DATA_DIR', '.benchstream'))
  const brokers = str(env, 'KAFKA_BROKERS', '127.0.0.1:9092').split(',').map((b) => b.trim()).filter((b) => b !== '')
  for (const b of brokers) {
    if (!BROKER.test(b)) throw new BenchstreamError('BS_ERR_CONFIG', `KAFKA_BROKERS entry ${JSON.stringify(b)} is not allowed: expected host:port[,host:port...]`)
  }
  const topic = (name: string, fallback: string): string => {
    const t = str(env, name, fallback)
    if (!TOPIC.test(t)) throw new BenchstreamError('BS_ERR_CONFIG', `${name}=${JSON.stringify(t)} is not a valid Kafka topic name: 1-249 characters from A-Z a-z 0-9 . _ -`)
    return t
  }
  const url = env.CLICKHOUSE_URL === undefined || env.CLICKHOUSE_URL === '' ? undefined : env.CLICKHOUSE_URL
  if (url !== undefined && !/^https?:\/\//.test(url)) {
    throw new BenchstreamError('BS_ERR_CONFIG', `CLICKHOUSE_URL=${JSON.stringify(url)} is not allowed: expected http://host:port or https://host:port, or leave it unset for the embedded engine`)
  }
  const database = str(env, 'CLICKHOUSE_DATABASE', 'benchstream')
  if (!/^[A-Za-z_][A-Za-z0-9_]{0,63}$/.test(database)) throw new BenchstreamError('BS_ERR_CONFIG', `CLICKHOUSE_DATABASE=${JSON.stringify(database)} is not allowed: letters, digits and _ only`)
  return {
    dataDir,
    kafka: { brokers, clientId: str(env, 'KAFKA_CLIENT_ID', 'benchstream') },
    topics: {
      events: topic('BENCHSTREAM_TOPIC_EVENTS', 'benchstream.events.v1'),
      deadLetter: topic('BENCHSTREAM_TOPIC_DLQ', 'benchstream.events.dlq'),
      alerts: topic('BENCHSTREAM_TOPIC_ALERTS', 'benchstream.alerts'),
      partitions: int(env, 'BENCHSTREAM_TOPIC_PARTITIONS', 4, 1, 1024),
    },
    clickhouse: {
      url,
      user: str(env, 'CLICKHOUSE_USER', 'default'),
      password: str(env, 'CLICKHOUSE_PASSWORD', ''),
      database,
      embeddedPath: path.join(dataDir, 'clickhouse'),
      opsTtlDays: int(env, 'BENCHSTREAM_OPS_TTL_DAYS', 30, 0, 36500),
    },
  }
}
