/**
 * Files generated from a single source, rewritten by `npm run generate`
 * (which also writes the dashboards, dashboards/index.ts), each checked by
 * a unit test that fails when the committed file drifts:
 *  - the configuration table of docs/reference/configuration.md, from the
 *    services' environment schemas (each default and range is written once,
 *    in its config.ts);
 *  - docs/reference/openapi.json, the OpenAPI document the API serves,
 *    built from the routes' own schemas;
 *  - deploy/prometheus/benchstream-rules.yml, from deploy/alerts/rules.json,
 *    so Prometheus and the built-in evaluator judge the same rules.
 */
import { readFileSync, writeFileSync } from 'node:fs'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import { AlertsEnv } from '../alerts/config.js'
import { loadAlertRules } from '../alerts/rules-file.js'
import { build as buildApi, OPENAPI_PATH } from '../api/app.js'
import { ApiEnv, readApiConfig } from '../api/config.js'
import { envTable } from '../common/config.js'
import { InfraEnv } from '../common/infra-config.js'
import { LogEnv } from '../common/logger.js'
import { repoRoot } from '../common/repo-root.js'
import { prometheusRules } from '../core/alerting/prometheus-rules.js'
import { ProcessorEnv } from '../processor/config.js'
import { ServerEnv } from '../server/config.js'
import { CliEnv } from '../common/cli-env.js'
import type { AdHocQueries } from '../core/ports/ad-hoc-queries.js'
import type { ProfileStore } from '../core/ports/profile-store.js'
import type { SilenceStore } from '../core/ports/alerts.js'
import type { ReadModel } from '../core/ports/read-model.js'

/** Generated files, relative to the project root. */
export const GENERATED = {
  configuration: 'docs/reference/configuration.md',
  openapi: 'docs/reference/openapi.json',
} as const

const BEGIN = "<!-- config-table:begin (generated from the services' config.ts by `npm run generate`; do not edit) -->"
const END = '<!-- config-table:end -->'

export function configTableMarkdown(): string {
  const cell = (s: string): string => s.replaceAll('|', '\\|')
  const rows = envTable([InfraEnv, ProcessorEnv, ApiEnv, AlertsEnv, ServerEnv, LogEnv, CliEnv])
  return (
    [
      '| variable | default | allowed | meaning |',
      '|---|---|---|---|',
      ...rows.map(
        (r) =>
          `| \`${r.name}\` ` +
          `| ${r.default === undefined ? 'unset' : r.default === '' ? '(empty)' : `\`${cell(r.default)}\``} ` +
          `| ${cell(r.allowed)} | ${cell(r.meaning)} |`,
      ),
    ].join('\n') + '\n'
  )
}

/** Rewrites the configuration table between its markers; returns whether anything changed. */
export function writeDocs(docPath = path.join(repoRoot(), GENERATED.configuration)): boolean {
  const doc = readFileSync(docPath, 'utf8')
  const start = doc.indexOf('<!-- config-table:begin')
  const end = doc.indexOf(END)
  if (start < 0 || end < start) throw new Error(`${docPath} has no ${BEGIN} ... ${END} markers`)
  const next = `${doc.slice(0, start)}${BEGIN}\n${configTableMarkdown()}${doc.slice(end)}`
  if (next === doc) return false
  writeFileSync(docPath, next)
  return true
}

/**
 * The API's OpenAPI document as it serves it, fetched with inject (no port). Every optional route is on (profiles,
 * silences, /metrics); the ports are never called while the document is built, and fail if they were.
 */
export async function openApiDocument(): Promise<string> {
  const unused = new Proxy(
    {},
    {
      get: (_t, key) =>
        key === 'then'
          ? undefined
          : () => {
              throw new Error(`the OpenAPI document is built without calling ports (${String(key)})`)
            },
    },
  )
  const app = buildApi(readApiConfig({}), {
    readModel: unused as ReadModel,
    adHoc: unused as AdHocQueries,
    database: 'benchstream',
    profiles: unused as ProfileStore,
    silences: unused as SilenceStore,
    metricsHandler: () => undefined,
  })
  try {
    const res = await app.inject({ method: 'GET', url: OPENAPI_PATH, headers: { host: '127.0.0.1' } })
    if (res.statusCode !== 200) throw new Error(`GET ${OPENAPI_PATH} answered ${res.statusCode}: ${res.body}`)
    return JSON.stringify(res.json(), null, 2) + '\n'
  } finally {
    await app.close()
  }
}

/** Writes `text` to `file` (relative to the project root) unless it is there already; says which. */
function writeIfChanged(file: string, text: string): string {
  const target = path.join(repoRoot(), file)
  let old = ''
  try {
    old = readFileSync(target, 'utf8')
  } catch {
    // not generated yet
  }
  if (old !== text) writeFileSync(target, text)
  return `${file}: ${old === text ? 'up to date' : 'updated'}\n`
}

/** Where the Prometheus rules are generated from and to, relative to the project root. */
export const PROMETHEUS_RULES = {
  source: 'deploy/alerts/rules.json',
  target: 'deploy/prometheus/benchstream-rules.yml',
  intervalS: 15,
} as const

export function prometheusRulesText(): string {
  const rules = loadAlertRules(path.join(repoRoot(), PROMETHEUS_RULES.source)).rules
  return prometheusRules(rules, { intervalS: PROMETHEUS_RULES.intervalS, source: PROMETHEUS_RULES.source })
}

if (process.argv[1] !== undefined && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  process.stdout.write(`${GENERATED.configuration}: configuration table ${writeDocs() ? 'updated' : 'up to date'}\n`)
  process.stdout.write(writeIfChanged(GENERATED.openapi, await openApiDocument()))
  process.stdout.write(writeIfChanged(PROMETHEUS_RULES.target, prometheusRulesText()))
}
