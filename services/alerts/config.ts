/**
 * Alerts configuration: read from the environment once, the rules file
 * loaded and validated with it, then frozen.
 */
import path from 'node:path'
import type { AlertRule } from '../../schemas/alert-rules.v1.js'
import { BenchstreamError } from '../core/errors.js'
import { bool, freeze, int, str, type Env } from '../common/env.js'
import { readInfraConfig, type InfraConfig } from '../common/infra-config.js'
import { repoRoot } from '../common/repo-root.js'
import { loadAlertRules } from './rules-file.js'

export interface AlertsConfig {
  infra: InfraConfig
  /** Run the evaluator in this process. env ALERTS_ENABLED. @default true */
  enabled: boolean
  /** env ALERTS_RULES_FILE. @default deploy/alerts/rules.json */
  rulesFile: string
  rules: readonly AlertRule[]
  /** Pause between evaluations. env ALERTS_INTERVAL_MS. @default 1000 */
  intervalMs: number
  /** Alertmanager-format webhook; unset = no webhook. env ALERTS_WEBHOOK_URL. */
  webhookUrl: string | undefined
  /** Per attempt. env ALERTS_WEBHOOK_TIMEOUT_MS. @default 5000 */
  webhookTimeoutMs: number
  /** Attempts per notification, the first included. env ALERTS_WEBHOOK_ATTEMPTS. @default 3 */
  webhookAttempts: number
  /** Wait before the second attempt, doubled after each. env ALERTS_WEBHOOK_BACKOFF_MS. @default 500 */
  webhookBackoffMs: number
  /** `receiver` of the webhook payload. env ALERTS_RECEIVER. @default benchstream */
  receiver: string
  /** Base of externalURL and generatorURL (the API's live view). env ALERTS_EXTERNAL_URL. @default http://127.0.0.1:8080 */
  externalUrl: string
  /** Must match the processor's. env ALLOWED_LATENESS_MS. @default 2000 */
  allowedLatenessMs: number
  /** After a run's end record, wait this long for the last partition flushes before judging its tail. env ALERTS_END_GRACE_MS. @default 5000 */
  endGraceMs: number
  /** A partition this far behind a run's newest data is treated as done with the run. env ALERTS_PARTITION_IDLE_MS. @default 10000 */
  partitionIdleMs: number
  /** Runs started (or ended) this long ago or less are evaluated. env ALERTS_LOOKBACK_S. @default 3600 */
  lookbackS: number
  /** Windows fetched per query (bounds each query). env ALERTS_MAX_WINDOWS_PER_QUERY. @default 600 */
  maxWindowsPerQuery: number
}

export function readAlertsConfig(env: Env): Readonly<AlertsConfig> {
  const enabled = bool(env, 'ALERTS_ENABLED', true)
  const rulesFile = path.resolve(str(env, 'ALERTS_RULES_FILE', path.join(repoRoot(), 'deploy', 'alerts', 'rules.json')))
  const webhookUrl = env.ALERTS_WEBHOOK_URL === undefined || env.ALERTS_WEBHOOK_URL === '' ? undefined : env.ALERTS_WEBHOOK_URL
  for (const [name, url] of [['ALERTS_WEBHOOK_URL', webhookUrl], ['ALERTS_EXTERNAL_URL', env.ALERTS_EXTERNAL_URL]] as const) {
    if (url !== undefined && url !== '' && !/^https?:\/\/[^\s]+$/.test(url)) {
      throw new BenchstreamError('BS_ERR_CONFIG', `${name}=${JSON.stringify(url)} is not allowed: expected an http:// or https:// URL`)
    }
  }
  return freeze({
    infra: readInfraConfig(env),
    enabled,
    rulesFile,
    // Rules are only read when the evaluator runs: a disabled one needs no file.
    rules: enabled ? loadAlertRules(rulesFile).rules : [],
    intervalMs: int(env, 'ALERTS_INTERVAL_MS', 1000, 100, 3_600_000),
    webhookUrl,
    webhookTimeoutMs: int(env, 'ALERTS_WEBHOOK_TIMEOUT_MS', 5000, 100, 120_000),
    webhookAttempts: int(env, 'ALERTS_WEBHOOK_ATTEMPTS', 3, 1, 10),
    webhookBackoffMs: int(env, 'ALERTS_WEBHOOK_BACKOFF_MS', 500, 0, 60_000),
    receiver: str(env, 'ALERTS_RECEIVER', 'benchstream'),
    externalUrl: str(env, 'ALERTS_EXTERNAL_URL', 'http://127.0.0.1:8080').replace(/\/+$/, ''),
    allowedLatenessMs: int(env, 'ALLOWED_LATENESS_MS', 2000, 0, 3_600_000),
    endGraceMs: int(env, 'ALERTS_END_GRACE_MS', 5000, 0, 3_600_000),
    partitionIdleMs: int(env, 'ALERTS_PARTITION_IDLE_MS', 10_000, 100, 3_600_000),
    lookbackS: int(env, 'ALERTS_LOOKBACK_S', 3600, 60, 30 * 86400),
    maxWindowsPerQuery: int(env, 'ALERTS_MAX_WINDOWS_PER_QUERY', 600, 10, 100_000),
  })
}
