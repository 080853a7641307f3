/**
 * API configuration: read from the environment once, validated, frozen.
 */
import { Type } from 'typebox'
import { EnvVar, freeze, readEnv, type Env } from '../common/config.js'

export const ApiEnv = Type.Object({
  API_HOST: EnvVar.string({ default: '127.0.0.1', minLength: 1, description: 'address the API listens on' }),
  API_PORT: EnvVar.integer({ default: 8080, minimum: 0, maximum: 65535, description: 'API port; 0 picks a free one' }),
  API_LOG: EnvVar.boolean({ default: false, description: 'log every request' }),
  API_MAX_QUERY_ROWS: EnvVar.integer({ default: 10_000, minimum: 1, maximum: 10_000_000, description: 'row cap of ad hoc SQL (POST /api/v1/query)' }),
})

export interface ApiConfig {
  host: string
  port: number
  logRequests: boolean
  maxQueryRows: number
}

export function readApiConfig(env: Env): Readonly<ApiConfig> {
  const e = readEnv(ApiEnv, env)
  return freeze({ host: e.API_HOST, port: e.API_PORT, logRequests: e.API_LOG, maxQueryRows: e.API_MAX_QUERY_ROWS })
}
