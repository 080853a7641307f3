/**
 * Files generated from a single source, rewritten by `npm run generate`
 * (which also writes the dashboards, dashboards/index.ts), each checked by
 * a unit test that fails when the committed file drifts:
 *  - README.md's configuration table, from the services' environment
 *    schemas (each default and range is written once, in its config.ts);
 *  - deploy/prometheus/benchstream-rules.yml, from deploy/alerts/rules.json,
 *    so Prometheus and the built-in evaluator judge the same rules.
 */
import { readFileSync, writeFileSync } from 'node:fs'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import { AlertsEnv } from '../alerts/config.js'
import { loadAlertRules } from '../alerts/rules-file.js'
import { ApiEnv } from '../api/config.js'
import { envTable } from '../common/config.js'
import { InfraEnv } from '../common/infra-config.js'
import { LogEnv } from '../common/logger.js'
import { repoRoot } from '../common/repo-root.js'
import { prometheusRules } from '../core/alerting/prometheus-rules.js'
import { ProcessorEnv } from '../processor/config.js'
import { ServerEnv } from '../server/config.js'
import { CliEnv } from '../common/cli-env.js'

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

/** Rewrites the generated parts of README.md; returns whether anything changed. */
export function writeDocs(readmePath = path.join(repoRoot(), 'README.md')): boolean {
  const readme = readFileSync(readmePath, 'utf8')
  const start = readme.indexOf('<!-- config-table:begin')
  const end = readme.indexOf(END)
  if (start < 0 || end < start) throw new Error(`${readmePath} has no ${BEGIN} ... ${END} markers`)
  const next = `${readme.slice(0, start)}${BEGIN}\n${configTableMarkdown()}${readme.slice(end)}`
  if (next === readme) return false
  writeFileSync(readmePath, next)
  return true
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
  process.stdout.write(
    writeDocs() ? 'README.md: configuration table updated\n' : 'README.md: configuration table up to date\n',
  )
  const target = path.join(repoRoot(), PROMETHEUS_RULES.target)
  const text = prometheusRulesText()
  let old = ''
  try {
    old = readFileSync(target, 'utf8')
  } catch {
    // not generated yet
  }
  if (old !== text) writeFileSync(target, text)
  process.stdout.write(`${PROMETHEUS_RULES.target}: ${old === text ? 'up to date' : 'updated'}\n`)
}
