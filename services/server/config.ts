/**
 * The backend process's own settings (the services it runs have theirs:
 * processor, API and alerts config.ts).
 */
import { Type } from 'typebox'
import { EnvVar, freeze, readEnv, type Env } from '../common/config.js'

export const ServerEnv = Type.Object({
  METRICS_PORT: EnvVar.integer({
    default: 9464,
    minimum: 0,
    maximum: 65535,
    description: 'Prometheus /metrics port when the API is off (`--no-api`); 0 = none',
  }),
  METRICS_HOST: EnvVar.string({ default: '127.0.0.1', minLength: 1, description: 'address of that /metrics endpoint' }),
  HEALTH_FAILING_MS: EnvVar.integer({
    default: 30_000,
    minimum: 1000,
    maximum: 3_600_000,
    description: "/healthz is 503 when a partition's writes have failed for longer than this",
  }),
  HEALTH_STALL_MS: EnvVar.integer({
    default: 60_000,
    minimum: 1000,
    maximum: 3_600_000,
    description: '/healthz is 503 when a partition with lag has not advanced for longer than this',
  }),
  HEALTH_KAFKA_MS: EnvVar.integer({
    default: 5000,
    minimum: 0,
    maximum: 3_600_000,
    description:
      "/healthz is 503 when Kafka has not answered the processor's commits or offset reads for longer than this " +
      '(a broker down, a partition leader or the group coordinator moving)',
  }),
  HEALTH_PING_TIMEOUT_MS: EnvVar.integer({
    default: 2000,
    minimum: 100,
    maximum: 60_000,
    description: '/healthz is 503 when ClickHouse does not answer a trivial query within this',
  }),
})

export interface ServerConfig {
  metricsPort: number
  metricsHost: string
  health: { failingMs: number; stallMs: number; kafkaMs: number; pingTimeoutMs: number }
}

export function readServerConfig(env: Env): Readonly<ServerConfig> {
  const e = readEnv(ServerEnv, env)
  return freeze({
    metricsPort: e.METRICS_PORT,
    metricsHost: e.METRICS_HOST,
    health: {
      failingMs: e.HEALTH_FAILING_MS,
      stallMs: e.HEALTH_STALL_MS,
      kafkaMs: e.HEALTH_KAFKA_MS,
      pingTimeoutMs: e.HEALTH_PING_TIMEOUT_MS,
    },
  })
}
