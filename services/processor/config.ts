/**
 * Processor configuration: read from the environment once, validated, frozen.
 */
import { bool, freeze, int, str, type Env } from '../common/env.js'
import { readInfraConfig, type InfraConfig } from '../common/infra-config.js'

export interface ProcessorConfig {
  infra: InfraConfig
  /** Kafka consumer group; instances with the same group split the partitions. env PROCESSOR_GROUP_ID. @default benchstream-processor */
  groupId: string
  /** Window length. env WINDOW_MS. @default 1000 */
  windowMs: number
  /** Grace after a window's end before events for it count as late. env ALLOWED_LATENESS_MS. @default 2000 */
  allowedLatenessMs: number
  /** A partition's data is written at least this often. env FLUSH_INTERVAL_MS. @default 1000 */
  flushIntervalMs: number
  /** Events held per partition before a flush is forced (bounds memory). env MAX_PENDING_EVENTS. @default 500000 */
  maxPendingEvents: number
  /** Store every raw event in `ops`. env BENCHSTREAM_STORE_RAW_EVENTS. @default true */
  storeRawEvents: boolean
  /** Events older than this (by event time) are rejected. env MAX_EVENT_AGE_S. @default 2592000 (30 days) */
  maxEventAgeS: number
  /** Events further in the future than this are rejected. env MAX_EVENT_FUTURE_S. @default 600 */
  maxEventFutureS: number
  /** First and largest wait between ClickHouse insert retries. env INSERT_RETRY_MIN_MS / INSERT_RETRY_MAX_MS. @default 200 / 10000 */
  insertRetryMinMs: number
  insertRetryMaxMs: number
}

export function readProcessorConfig(env: Env): Readonly<ProcessorConfig> {
  const windowMs = int(env, 'WINDOW_MS', 1000, 10, 3_600_000)
  return freeze({
    infra: readInfraConfig(env),
    groupId: str(env, 'PROCESSOR_GROUP_ID', 'benchstream-processor'),
    windowMs,
    allowedLatenessMs: int(env, 'ALLOWED_LATENESS_MS', 2000, 0, 3_600_000),
    flushIntervalMs: int(env, 'FLUSH_INTERVAL_MS', 1000, 50, 600_000),
    maxPendingEvents: int(env, 'MAX_PENDING_EVENTS', 500_000, 1000, 50_000_000),
    storeRawEvents: bool(env, 'BENCHSTREAM_STORE_RAW_EVENTS', true),
    maxEventAgeS: int(env, 'MAX_EVENT_AGE_S', 30 * 86400, 1, 10 * 365 * 86400),
    maxEventFutureS: int(env, 'MAX_EVENT_FUTURE_S', 600, 0, 86400),
    insertRetryMinMs: int(env, 'INSERT_RETRY_MIN_MS', 200, 1, 60_000),
    insertRetryMaxMs: int(env, 'INSERT_RETRY_MAX_MS', 10_000, 1, 600_000),
  })
}
