/**
 * Processor configuration: read from the environment once, validated, frozen.
 */
import { Type } from 'typebox'
import { EnvVar, freeze, readEnv, type Env } from '../common/config.js'
import { ALLOWED_LATENESS_MS, readInfraConfig, type InfraConfig } from '../common/infra-config.js'

export const ProcessorEnv = Type.Object({
  PROCESSOR_GROUP_ID: EnvVar.string({
    default: 'benchstream-processor',
    pattern: '^[A-Za-z0-9._-]{1,200}$',
    allowed: '1-200 characters from A-Z a-z 0-9 . _ -',
    description: 'Kafka consumer group; processors in one group split the partitions',
  }),
  WINDOW_MS: EnvVar.integer({
    default: 1000,
    minimum: 10,
    maximum: 3_600_000,
    description: 'window length for runs this processor sees first (a run keeps the length it was registered with)',
  }),
  ALLOWED_LATENESS_MS,
  FLUSH_INTERVAL_MS: EnvVar.integer({
    default: 1000,
    minimum: 50,
    maximum: 600_000,
    description: "a partition's data is written at least this often",
  }),
  MAX_PENDING_EVENTS: EnvVar.integer({
    default: 500_000,
    minimum: 1000,
    maximum: 50_000_000,
    description: 'events held per partition before a flush is forced (bounds memory)',
  }),
  BENCHSTREAM_STORE_RAW_EVENTS: EnvVar.boolean({
    default: true,
    description: 'store every raw event in `ops` (exact checks, ad hoc digging)',
  }),
  MAX_EVENT_AGE_S: EnvVar.integer({
    default: 30 * 86400,
    minimum: 1,
    maximum: 10 * 365 * 86400,
    description: 'events older than this (by event time) are dead-lettered',
  }),
  MAX_EVENT_FUTURE_S: EnvVar.integer({
    default: 600,
    minimum: 0,
    maximum: 86400,
    description: 'events further in the future than this are dead-lettered',
  }),
  INSERT_RETRY_MIN_MS: EnvVar.integer({
    default: 200,
    minimum: 1,
    maximum: 60_000,
    description: 'first wait before a failed ClickHouse write is retried (doubles each time)',
  }),
  INSERT_RETRY_MAX_MS: EnvVar.integer({
    default: 10_000,
    minimum: 1,
    maximum: 600_000,
    description: 'longest wait between ClickHouse write retries',
  }),
})

export interface ProcessorConfig {
  infra: InfraConfig
  groupId: string
  windowMs: number
  allowedLatenessMs: number
  flushIntervalMs: number
  maxPendingEvents: number
  storeRawEvents: boolean
  maxEventAgeS: number
  maxEventFutureS: number
  insertRetryMinMs: number
  insertRetryMaxMs: number
}

export function readProcessorConfig(env: Env): Readonly<ProcessorConfig> {
  const e = readEnv(ProcessorEnv, env)
  return freeze({
    infra: readInfraConfig(env),
    groupId: e.PROCESSOR_GROUP_ID,
    windowMs: e.WINDOW_MS,
    allowedLatenessMs: e.ALLOWED_LATENESS_MS,
    flushIntervalMs: e.FLUSH_INTERVAL_MS,
    maxPendingEvents: e.MAX_PENDING_EVENTS,
    storeRawEvents: e.BENCHSTREAM_STORE_RAW_EVENTS,
    maxEventAgeS: e.MAX_EVENT_AGE_S,
    maxEventFutureS: e.MAX_EVENT_FUTURE_S,
    insertRetryMinMs: e.INSERT_RETRY_MIN_MS,
    insertRetryMaxMs: e.INSERT_RETRY_MAX_MS,
  })
}
