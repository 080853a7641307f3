/**
 * Alerts configuration: read from the environment once, the rules file
 * loaded and validated with it, then frozen.
 */
import path from 'node:path'
import { Type } from 'typebox'
import type { AlertRule } from '../../schemas/alert-rules.v1.js'
import { EnvVar, freeze, readEnv, type Env } from '../common/config.js'
import { CompletenessEnv, readCompleteness, readInfraConfig, type InfraConfig } from '../common/infra-config.js'
import type { WindowCompleteness } from '../core/stats/window-completeness.js'
import { repoRoot } from '../common/repo-root.js'
import { loadAlertRules } from './rules-file.js'

const URL_PATTERN = '^https?://\\S+$'

export const AlertsEnv = Type.Object({
  ALERTS_ENABLED: EnvVar.boolean({
    default: true,
    description: 'run the alert evaluator in this server (on the elected replica only: ALERTS_LEADER_ELECTION)',
  }),
  ALERTS_LEADER_ELECTION: EnvVar.boolean({
    default: true,
    description:
      'of the servers sharing PROCESSOR_GROUP_ID, only the one elected through Kafka evaluates alerts (the member ' +
      'of group <PROCESSOR_GROUP_ID>.leader given partition 0 of BENCHSTREAM_TOPIC_LEADER); false = this one does',
  }),
  ALERTS_LEADER_SESSION_TIMEOUT_MS: EnvVar.integer({
    default: 10_000,
    minimum: 6000,
    maximum: 300_000,
    description:
      "the election group's session timeout: a leader that died is replaced after about this long, one cut off " +
      'from Kafka steps down after half of it',
  }),
  ALERTS_RULES_FILE: EnvVar.string({
    default: 'deploy/alerts/rules.json',
    minLength: 1,
    description:
      "alert rules file; the default is the project's own, also the source of the generated Prometheus rules",
  }),
  ALERTS_INTERVAL_MS: EnvVar.integer({
    default: 1000,
    minimum: 100,
    maximum: 3_600_000,
    description: 'pause between evaluations',
  }),
  ALERTS_WEBHOOK_URL: EnvVar.optional({
    pattern: URL_PATTERN,
    allowed: 'an http:// or https:// URL',
    description: "POST alerts there in Alertmanager's webhook format; unset = no webhook",
  }),
  ALERTS_WEBHOOK_TIMEOUT_MS: EnvVar.integer({
    default: 5000,
    minimum: 100,
    maximum: 120_000,
    description: 'webhook timeout per attempt',
  }),
  ALERTS_WEBHOOK_ATTEMPTS: EnvVar.integer({
    default: 3,
    minimum: 1,
    maximum: 10,
    description: 'attempts per notification, the first included',
  }),
  ALERTS_WEBHOOK_BACKOFF_MS: EnvVar.integer({
    default: 500,
    minimum: 0,
    maximum: 60_000,
    description: 'wait before the second webhook attempt, doubled after each',
  }),
  ALERTS_RECEIVER: EnvVar.string({ default: 'benchstream', description: '`receiver` of the webhook payload' }),
  ALERTS_EXTERNAL_URL: EnvVar.string({
    default: 'http://127.0.0.1:8080',
    pattern: URL_PATTERN,
    allowed: 'an http:// or https:// URL',
    description: "base of externalURL and generatorURL in notifications (the API's live view)",
  }),
  ...CompletenessEnv,
  ALERTS_LOOKBACK_S: EnvVar.integer({
    default: 3600,
    minimum: 60,
    maximum: 30 * 86400,
    description: 'runs started (or ended) this long ago or less are evaluated',
  }),
  ALERTS_MAX_WINDOWS_PER_QUERY: EnvVar.integer({
    default: 600,
    minimum: 10,
    maximum: 100_000,
    description: 'windows fetched per query (bounds each query)',
  }),
})

export interface AlertsConfig {
  infra: InfraConfig
  enabled: boolean
  /** Elect one evaluating replica through Kafka (services/alerts/leadership.ts). */
  leaderElection: boolean
  leaderSessionTimeoutMs: number
  rulesFile: string
  rules: readonly AlertRule[]
  intervalMs: number
  webhookUrl: string | undefined
  webhookTimeoutMs: number
  webhookAttempts: number
  webhookBackoffMs: number
  receiver: string
  externalUrl: string
  /** When a window is complete: the live view's rule too. */
  completeness: WindowCompleteness
  lookbackS: number
  maxWindowsPerQuery: number
}

export function readAlertsConfig(env: Env): Readonly<AlertsConfig> {
  const e = readEnv(AlertsEnv, env)
  // The default is the project's file; a path the user gives is taken from the working directory.
  const rulesFile =
    env.ALERTS_RULES_FILE === undefined || env.ALERTS_RULES_FILE === ''
      ? path.join(repoRoot(), e.ALERTS_RULES_FILE)
      : path.resolve(e.ALERTS_RULES_FILE)
  return freeze({
    infra: readInfraConfig(env),
    enabled: e.ALERTS_ENABLED,
    leaderElection: e.ALERTS_LEADER_ELECTION,
    leaderSessionTimeoutMs: e.ALERTS_LEADER_SESSION_TIMEOUT_MS,
    rulesFile,
    // Rules are only read when the evaluator runs: a disabled one needs no file.
    rules: e.ALERTS_ENABLED ? loadAlertRules(rulesFile).rules : [],
    intervalMs: e.ALERTS_INTERVAL_MS,
    webhookUrl: e.ALERTS_WEBHOOK_URL,
    webhookTimeoutMs: e.ALERTS_WEBHOOK_TIMEOUT_MS,
    webhookAttempts: e.ALERTS_WEBHOOK_ATTEMPTS,
    webhookBackoffMs: e.ALERTS_WEBHOOK_BACKOFF_MS,
    receiver: e.ALERTS_RECEIVER,
    externalUrl: e.ALERTS_EXTERNAL_URL.replace(/\/+$/, ''),
    completeness: readCompleteness(e),
    lookbackS: e.ALERTS_LOOKBACK_S,
    maxWindowsPerQuery: e.ALERTS_MAX_WINDOWS_PER_QUERY,
  })
}
