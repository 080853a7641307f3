/**
 * The backend process's own settings (the services it runs have theirs:
 * processor, API and alerts config.ts).
 */
import { Type } from 'typebox'
import { EnvVar, freeze, readEnv, type Env } from '../common/config.js'

export const ServerEnv = Type.Object({
  METRICS_PORT: EnvVar.integer({ default: 9464, minimum: 0, maximum: 65535, description: 'Prometheus /metrics port when the API is off (`--no-api`); 0 = none' }),
  METRICS_HOST: EnvVar.string({ default: '127.0.0.1', minLength: 1, description: 'address of that /metrics endpoint' }),
})

export interface ServerConfig {
  metricsPort: number
  metricsHost: string
}

export function readServerConfig(env: Env): Readonly<ServerConfig> {
  const e = readEnv(ServerEnv, env)
  return freeze({ metricsPort: e.METRICS_PORT, metricsHost: e.METRICS_HOST })
}
