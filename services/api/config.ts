import { bool, freeze, int, str, type Env } from '../common/env.js'

export interface ApiConfig {
  /** env API_HOST. @default 127.0.0.1 */
  host: string
  /** env API_PORT; 0 picks a free port. @default 8080 */
  port: number
  /** env API_LOG. @default false */
  logRequests: boolean
  /** Row cap of /api/v1/query. env API_MAX_QUERY_ROWS. @default 10000 */
  maxQueryRows: number
}

export function readApiConfig(env: Env): Readonly<ApiConfig> {
  return freeze({
    host: str(env, 'API_HOST', '127.0.0.1'),
    port: int(env, 'API_PORT', 8080, 0, 65535),
    logRequests: bool(env, 'API_LOG', false),
    maxQueryRows: int(env, 'API_MAX_QUERY_ROWS', 10_000, 1, 10_000_000),
  })
}
