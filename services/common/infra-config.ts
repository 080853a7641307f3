/**
 * Where the shared infrastructure is: Kafka, ClickHouse, topics and the data
 * directory. Every service reads this once at start-up through its own
 * config.ts; the same variables drive deploy/docker-compose.yml.
 */
import { readFileSync } from 'node:fs'
import path from 'node:path'
import { Type } from 'typebox'
import { BenchstreamError } from '../core/errors.js'
import type { WindowCompleteness } from '../core/stats/window-completeness.js'
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
  KAFKA_BROKERS: EnvVar.optional({
    pattern: `^ *${BROKER} *(, *${BROKER} *)*$`,
    allowed: 'host:port[,host:port...]',
    description:
      'Kafka brokers; unset = the local broker on 127.0.0.1:KAFKA_PORT, which `benchstream server` (on loopback) ' +
      'and the demo start when nothing answers there',
  }),
  KAFKA_PORT: EnvVar.integer({
    default: 9092,
    minimum: 1,
    maximum: 65534,
    description:
      'port of the local broker (deploy/local/kafka.sh; its controller takes the next port) when KAFKA_BROKERS is ' +
      'unset: every command then uses 127.0.0.1:KAFKA_PORT',
  }),
  KAFKA_SECURITY_PROTOCOL: EnvVar.oneOf(['PLAINTEXT', 'SSL', 'SASL_SSL', 'SASL_PLAINTEXT'] as const, {
    default: 'PLAINTEXT',
    description:
      "how clients reach Kafka, as Kafka's security.protocol: SSL and SASL_SSL encrypt (TLS), the SASL ones " +
      'authenticate (KAFKA_SASL_*)',
  }),
  KAFKA_SASL_MECHANISM: EnvVar.oneOf(['SCRAM-SHA-512', 'SCRAM-SHA-256', 'PLAIN'] as const, {
    default: 'SCRAM-SHA-512',
    description: 'SASL mechanism with a SASL_* protocol (PLAIN sends the password itself: use it over SASL_SSL only)',
  }),
  KAFKA_SASL_USERNAME: EnvVar.optional({ description: 'SASL user; required with a SASL_* protocol' }),
  KAFKA_SASL_PASSWORD: EnvVar.optional({
    description: 'SASL password; required with a SASL_* protocol; never logged, never stored with a run',
  }),
  KAFKA_SSL_CA_FILE: EnvVar.optional({
    allowed: 'a path to a PEM file of one or more CA certificates',
    description: "CA that signed the brokers' certificates (SSL, SASL_SSL); unset = the system's trusted CAs",
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
  BENCHSTREAM_TOPIC_LEADER: EnvVar.string({
    default: 'benchstream.leader.v1',
    pattern: TOPIC,
    allowed: TOPIC_ALLOWED,
    description:
      'one-partition topic whose consumer group elects the server that evaluates alerts (nothing is written to it)',
  }),
  BENCHSTREAM_TOPIC_PARTITIONS: EnvVar.integer({
    default: 4,
    minimum: 1,
    maximum: 1024,
    description: 'partitions of the event topic when Benchstream creates it',
  }),
  BENCHSTREAM_TOPIC_REPLICATION: EnvVar.integer({
    default: 0,
    minimum: 0,
    maximum: 32,
    description:
      "replicas of each topic Benchstream creates; 0 = min(3, brokers in the cluster's metadata) (existing " +
      'topics are left as they are)',
  }),
  BENCHSTREAM_TOPIC_MIN_ISR: EnvVar.integer({
    default: 0,
    minimum: 0,
    maximum: 32,
    description:
      'min.insync.replicas of the topics Benchstream creates (acks=all writes fail below it rather than ' +
      'risk loss); 0 = 2 when replicated, else 1',
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
  CLICKHOUSE_PASSWORD: EnvVar.string({
    default: '',
    description: 'ClickHouse server password (sent as HTTP basic auth: use an https:// URL); never logged',
  }),
  CLICKHOUSE_CA_FILE: EnvVar.optional({
    allowed: 'a path to a PEM file of one or more CA certificates',
    description: "CA that signed the ClickHouse server's certificate (https://); unset = the system's trusted CAs",
  }),
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
  /**
   * KAFKA_BROKERS unset: brokers is the local broker's address, 127.0.0.1:port (deploy/local/kafka.sh's KAFKA_PORT),
   * which the server and the demo may start. Plain data: it crosses to worker threads.
   */
  local?: { port: number }
  clientId: string
  /** TLS and SASL; absent = PLAINTEXT. Plain data (it crosses to worker threads), the CA read already. */
  security?: KafkaSecurity
}

export interface KafkaSecurity {
  /** Kafka's security.protocol. */
  protocol: 'PLAINTEXT' | 'SSL' | 'SASL_SSL' | 'SASL_PLAINTEXT'
  /** With SSL / SASL_SSL: the CA certificates (PEM text), undefined = the system's. */
  caPem?: string
  /** Where caPem was read from (messages, the bridge's truststore). */
  caFile?: string
  /** With SASL_*. */
  sasl?: { mechanism: 'SCRAM-SHA-512' | 'SCRAM-SHA-256' | 'PLAIN'; username: string; password: string }
}

export interface TopicsConfig {
  events: string
  deadLetter: string
  alerts: string
  /** Experiments: agents and the coordinator (schemas/experiment-control.v1.ts ControlMessage). */
  control: string
  /** One partition; the member of its group given partition 0 evaluates alerts (services/alerts/leadership.ts). */
  leader: string
  partitions: number
  /** Replicas of a created topic; 0 = min(3, brokers). */
  replication: number
  /** min.insync.replicas of a created topic; 0 = 2 when replicated, else 1. */
  minInsyncReplicas: number
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
  /** CA certificates (PEM text) for an https:// server; undefined = the system's. */
  caPem?: string
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
  const security = kafkaSecurity(e)
  if (e.BENCHSTREAM_TOPIC_MIN_ISR > 0 && e.BENCHSTREAM_TOPIC_REPLICATION > 0)
    if (e.BENCHSTREAM_TOPIC_MIN_ISR > e.BENCHSTREAM_TOPIC_REPLICATION)
      throw new BenchstreamError(
        'BS_ERR_CONFIG',
        `BENCHSTREAM_TOPIC_MIN_ISR=${e.BENCHSTREAM_TOPIC_MIN_ISR} is more than ` +
          `BENCHSTREAM_TOPIC_REPLICATION=${e.BENCHSTREAM_TOPIC_REPLICATION}: no write could ever be acknowledged`,
      )
  const chCa = e.CLICKHOUSE_CA_FILE === undefined ? undefined : readPem('CLICKHOUSE_CA_FILE', e.CLICKHOUSE_CA_FILE)
  if (chCa !== undefined && !(e.CLICKHOUSE_URL ?? '').startsWith('https://'))
    throw new BenchstreamError(
      'BS_ERR_CONFIG',
      'CLICKHOUSE_CA_FILE is set but CLICKHOUSE_URL is not an https:// URL: the CA would not be used',
    )
  return {
    dataDir,
    kafka: {
      brokers:
        e.KAFKA_BROKERS === undefined ? [`127.0.0.1:${e.KAFKA_PORT}`] : e.KAFKA_BROKERS.split(',').map((b) => b.trim()),
      ...(e.KAFKA_BROKERS === undefined ? { local: { port: e.KAFKA_PORT } } : {}),
      clientId: e.KAFKA_CLIENT_ID,
      ...(security === undefined ? {} : { security }),
    },
    topics: {
      events: e.BENCHSTREAM_TOPIC_EVENTS,
      deadLetter: e.BENCHSTREAM_TOPIC_DLQ,
      alerts: e.BENCHSTREAM_TOPIC_ALERTS,
      control: e.BENCHSTREAM_TOPIC_CONTROL,
      leader: e.BENCHSTREAM_TOPIC_LEADER,
      partitions: e.BENCHSTREAM_TOPIC_PARTITIONS,
      replication: e.BENCHSTREAM_TOPIC_REPLICATION,
      minInsyncReplicas: e.BENCHSTREAM_TOPIC_MIN_ISR,
    },
    clickhouse: {
      url: e.CLICKHOUSE_URL,
      cluster: e.CLICKHOUSE_CLUSTER,
      user: e.CLICKHOUSE_USER,
      password: e.CLICKHOUSE_PASSWORD,
      ...(chCa === undefined ? {} : { caPem: chCa }),
      database: e.CLICKHOUSE_DATABASE,
      embeddedPath: path.join(dataDir, 'clickhouse'),
      opsTtlDays: e.BENCHSTREAM_OPS_TTL_DAYS,
    },
  }
}

type InfraValues = ReturnType<typeof readEnv<(typeof InfraEnv)['properties']>>

/** TLS and SASL from KAFKA_SECURITY_PROTOCOL and its companions, checked together; undefined for PLAINTEXT. */
function kafkaSecurity(e: InfraValues): KafkaSecurity | undefined {
  const protocol = e.KAFKA_SECURITY_PROTOCOL
  const tls = protocol === 'SSL' || protocol === 'SASL_SSL'
  const sasl = protocol === 'SASL_SSL' || protocol === 'SASL_PLAINTEXT'
  // A setting the protocol would ignore is a mistake to point out (a password meant to be used, and not).
  const unused = [
    ...(sasl ? [] : (['KAFKA_SASL_USERNAME', 'KAFKA_SASL_PASSWORD'] as const).filter((k) => e[k] !== undefined)),
    ...(tls || e.KAFKA_SSL_CA_FILE === undefined ? [] : ['KAFKA_SSL_CA_FILE']),
  ]
  if (unused.length > 0)
    throw new BenchstreamError(
      'BS_ERR_CONFIG',
      `${unused.join(' and ')} ${unused.length > 1 ? 'are' : 'is'} set but KAFKA_SECURITY_PROTOCOL=${protocol} ` +
        `does not use ${unused.length > 1 ? 'them' : 'it'}: set KAFKA_SECURITY_PROTOCOL to ` +
        `${unused.some((k) => k.startsWith('KAFKA_SASL')) ? 'SASL_SSL' : 'SSL or SASL_SSL'}`,
    )
  if (protocol === 'PLAINTEXT') return undefined
  if (sasl && (e.KAFKA_SASL_USERNAME === undefined || e.KAFKA_SASL_PASSWORD === undefined))
    throw new BenchstreamError(
      'BS_ERR_CONFIG',
      `KAFKA_SECURITY_PROTOCOL=${protocol} needs KAFKA_SASL_USERNAME and KAFKA_SASL_PASSWORD`,
    )
  return {
    protocol,
    ...(e.KAFKA_SSL_CA_FILE === undefined
      ? {}
      : { caPem: readPem('KAFKA_SSL_CA_FILE', e.KAFKA_SSL_CA_FILE), caFile: path.resolve(e.KAFKA_SSL_CA_FILE) }),
    ...(sasl
      ? {
          sasl: {
            mechanism: e.KAFKA_SASL_MECHANISM,
            username: e.KAFKA_SASL_USERNAME ?? '',
            password: e.KAFKA_SASL_PASSWORD ?? '',
          },
        }
      : {}),
  }
}

/** A PEM file's text, read once at start-up; BS_ERR_CONFIG naming the variable when it cannot be or is not PEM. */
function readPem(name: string, file: string): string {
  let text: string
  try {
    text = readFileSync(file, 'utf8')
  } catch (err) {
    throw new BenchstreamError('BS_ERR_CONFIG', `${name}=${file} cannot be read: ${(err as Error).message}`, {
      cause: err,
    })
  }
  if (!text.includes('-----BEGIN CERTIFICATE-----'))
    throw new BenchstreamError(
      'BS_ERR_CONFIG',
      `${name}=${file} holds no PEM certificate (-----BEGIN CERTIFICATE-----)`,
    )
  return text
}
