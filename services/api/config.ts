/**
 * API configuration: read from the environment once, validated, frozen.
 */
import { Type } from 'typebox'
import { EnvVar, freeze, readEnv, type Env } from '../common/config.js'
import { CompletenessEnv, readCompleteness } from '../common/infra-config.js'
import type { WindowCompleteness } from '../core/stats/window-completeness.js'
import { BenchstreamError } from '../core/errors.js'

/** Addresses that only this machine can reach. */
const LOOPBACK = new Set(['127.0.0.1', 'localhost', '::1', '[::1]'])

export const ApiEnv = Type.Object({
  API_HOST: EnvVar.string({
    default: '127.0.0.1',
    minLength: 1,
    description: 'address the API listens on; anything but loopback needs API_TOKEN',
  }),
  API_TOKEN: EnvVar.optional({
    pattern: '^[\\x21-\\x7e]{16,256}$',
    allowed: '16-256 printable characters without spaces',
    description:
      'token every endpoint but /healthz requires (Authorization: Bearer ...; on /clickhouse also ' +
      'as the basic-auth password or X-ClickHouse-Key); required when API_HOST is not loopback',
  }),
  API_ALLOWED_HOSTS: EnvVar.string({
    default: '',
    pattern: '^[A-Za-z0-9.:,\\[\\]-]*$',
    allowed: 'comma-separated host names',
    description:
      'on loopback, Host names accepted besides localhost, 127.0.0.1 and ::1 (requests naming another ' +
      'host are refused: DNS rebinding)',
  }),
  API_PORT: EnvVar.integer({ default: 8080, minimum: 0, maximum: 65535, description: 'API port; 0 picks a free one' }),
  API_LOG: EnvVar.boolean({ default: false, description: 'log every request' }),
  API_MAX_QUERY_ROWS: EnvVar.integer({
    default: 0,
    minimum: 0,
    maximum: Number.MAX_SAFE_INTEGER,
    description:
      'rows an ad hoc result (POST /api/v1/query, /clickhouse, benchstream sql and export) may hold; a larger ' +
      "result fails with BS_ERR_RESULT_LIMIT (ClickHouse's result_overflow_mode = 'throw'), it is never cut; " +
      '0: no limit (results are streamed, so their size costs the server no memory)',
  }),
  API_QUERY_MAX_BYTES: EnvVar.integer({
    default: 0,
    minimum: 0,
    maximum: Number.MAX_SAFE_INTEGER,
    description: 'bytes an ad hoc result may hold as sent; a larger result fails like the rows; 0: no limit',
  }),
  API_QUERY_TIMEOUT_S: EnvVar.integer({
    default: 60,
    minimum: 1,
    maximum: 3600,
    description:
      'seconds an ad hoc query may run (ClickHouse max_execution_time), the time its result takes to reach the ' +
      'client included: 60 s pull some 25M raw events into pandas on 2 cores (bench:pull)',
  }),
  API_QUERY_MAX_MEMORY: EnvVar.integer({
    default: 512 * 1024 * 1024,
    minimum: 16 * 1024 * 1024,
    maximum: 64 * 1024 * 1024 * 1024,
    description: 'bytes of memory an ad hoc query may use (ClickHouse max_memory_usage)',
  }),
  API_QUERY_MAX_ROWS_TO_READ: EnvVar.integer({
    default: 2_000_000_000,
    minimum: 1000,
    maximum: Number.MAX_SAFE_INTEGER,
    description: 'rows an ad hoc query may read (ClickHouse max_rows_to_read)',
  }),
  API_QUERY_MAX_BYTES_TO_READ: EnvVar.integer({
    default: 256 * 1024 * 1024 * 1024,
    minimum: 1024 * 1024,
    maximum: Number.MAX_SAFE_INTEGER,
    description: 'bytes an ad hoc query may read, uncompressed (ClickHouse max_bytes_to_read)',
  }),
  API_QUERY_CONCURRENCY: EnvVar.integer({
    default: 1,
    minimum: 1,
    maximum: 16,
    description: 'ad hoc queries that run at once, each on a read-only connection of its own, one core each',
  }),
  API_QUERY_QUEUE: EnvVar.integer({
    default: 4,
    minimum: 0,
    maximum: 1000,
    description: 'ad hoc queries that may wait for a free connection; more are answered 429 at once',
  }),
  API_LIVE_MAX_STREAMS: EnvVar.integer({
    default: 32,
    minimum: 1,
    maximum: 10_000,
    description:
      'live views (Server-Sent Events streams) open at once; more are answered 503 BS_ERR_LIVE_LIMIT until one closes',
  }),
  API_LIVE_INTERVAL_MS: EnvVar.integer({
    default: 1000,
    minimum: 100,
    maximum: 60_000,
    description: 'how often a watched run is read for newly complete windows (once per run, however many watch it)',
  }),
  ...CompletenessEnv,
})

export interface ApiConfig {
  host: string
  port: number
  token: string | undefined
  /** Host names the Host header may carry; undefined when not bound to loopback (the token protects it then). */
  allowedHosts: ReadonlySet<string> | undefined
  logRequests: boolean
  /** Ad hoc SQL: result limits (0: none), engine limits, concurrency. */
  query: {
    maxRows: number
    maxBytes: number
    timeoutS: number
    maxMemory: number
    maxRowsToRead: number
    maxBytesToRead: number
    concurrency: number
    queue: number
  }
  /** The live view: streams open at once, read interval, and when a window is complete (the alerts' rule too). */
  live: { maxStreams: number; intervalMs: number; completeness: WindowCompleteness }
}

export function readApiConfig(env: Env): Readonly<ApiConfig> {
  const e = readEnv(ApiEnv, env)
  const loopback = LOOPBACK.has(e.API_HOST.toLowerCase())
  if (!loopback && e.API_TOKEN === undefined) {
    throw new BenchstreamError(
      'BS_ERR_CONFIG',
      `API_HOST=${JSON.stringify(e.API_HOST)} opens the API beyond this machine: set API_TOKEN (16-256 ` +
        `characters) so that every request must carry it, or listen on 127.0.0.1`,
    )
  }
  const extra = e.API_ALLOWED_HOSTS.split(',')
    .map((h) =>
      h
        .trim()
        .toLowerCase()
        .replace(/^\[|\]$/g, ''),
    )
    .filter((h) => h !== '')
  return freeze({
    host: e.API_HOST,
    port: e.API_PORT,
    token: e.API_TOKEN,
    allowedHosts: loopback ? new Set(['localhost', '127.0.0.1', '::1', ...extra]) : undefined,
    logRequests: e.API_LOG,
    query: {
      maxRows: e.API_MAX_QUERY_ROWS,
      maxBytes: e.API_QUERY_MAX_BYTES,
      timeoutS: e.API_QUERY_TIMEOUT_S,
      maxMemory: e.API_QUERY_MAX_MEMORY,
      maxRowsToRead: e.API_QUERY_MAX_ROWS_TO_READ,
      maxBytesToRead: e.API_QUERY_MAX_BYTES_TO_READ,
      concurrency: e.API_QUERY_CONCURRENCY,
      queue: e.API_QUERY_QUEUE,
    },
    live: {
      maxStreams: e.API_LIVE_MAX_STREAMS,
      intervalMs: e.API_LIVE_INTERVAL_MS,
      completeness: readCompleteness(e),
    },
  })
}
