/**
 * Generates Benchstream's Grafana dashboards into dashboards/generated/<uid>.json
 * (`npm run dashboards`). The output is deterministic: keys sorted, two-space
 * indent, no timestamps or versions, so the committed files can be checked
 * byte for byte (test/unit/dashboards.test.ts).
 */
import { mkdirSync, readdirSync, rmSync, writeFileSync } from 'node:fs'
import path from 'node:path'
import { pathToFileURL } from 'node:url'
import type { Dashboard } from '@grafana/grafana-foundation-sdk/dashboard'
import { repoRoot } from '../services/common/repo-root.js'
import { BenchstreamError } from '../services/core/errors.js'
import { dashboardConfig, type DashboardConfig } from './common.js'
import { compareRunsDashboard } from './compare-runs.js'
import { liveRunDashboard } from './live-run.js'
import { profilesDashboard } from './profiles.js'
import { sweepDashboard } from './sweep.js'

/** Every dashboard, in the order they are written. */
export const DASHBOARDS = [liveRunDashboard, compareRunsDashboard, sweepDashboard, profilesDashboard] as const

export interface GeneratedDashboard {
  uid: string
  /** File name under dashboards/generated/. */
  file: string
  dashboard: Dashboard
  /** The file's exact content. */
  json: string
}

export function generateDashboards(cfg: DashboardConfig = dashboardConfig()): GeneratedDashboard[] {
  const out = DASHBOARDS.map((build) => {
    const dashboard = build(cfg)
    const uid = dashboard.uid
    if (uid === undefined || !/^[a-z0-9-]{1,40}$/.test(uid))
      throw new BenchstreamError(
        'BS_ERR_CONFIG',
        `dashboard ${JSON.stringify(dashboard.title)} has uid ${JSON.stringify(uid)}: expected 1-40 ` +
          `characters from a-z 0-9 -`,
      )
    return { uid, file: `${uid}.json`, dashboard, json: renderJson(dashboard) }
  })
  const uids = out.map((d) => d.uid)
  const dup = uids.find((u, i) => uids.indexOf(u) !== i)
  if (dup !== undefined)
    throw new BenchstreamError('BS_ERR_CONFIG', `two dashboards share the uid ${dup}; every dashboard needs its own`)
  return out
}

/** JSON with object keys sorted at every level (arrays keep their order), two-space indent, final newline. */
export function renderJson(value: unknown): string {
  return JSON.stringify(sortKeys(value), null, 2) + '\n'
}

function sortKeys(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(sortKeys)
  if (value !== null && typeof value === 'object') {
    const obj = value as Record<string, unknown>
    return Object.fromEntries(
      Object.keys(obj)
        .sort()
        .filter((k) => obj[k] !== undefined && typeof obj[k] !== 'function')
        .map((k) => [k, sortKeys(obj[k])]),
    )
  }
  return value
}

export function generatedDir(): string {
  return path.join(repoRoot(), 'dashboards', 'generated')
}

/** Writes the files and removes JSON files of dashboards that no longer exist. */
export function writeDashboards(dir = generatedDir(), cfg: DashboardConfig = dashboardConfig()): GeneratedDashboard[] {
  const generated = generateDashboards(cfg)
  mkdirSync(dir, { recursive: true })
  const keep = new Set(generated.map((g) => g.file))
  for (const f of readdirSync(dir)) if (f.endsWith('.json') && !keep.has(f)) rmSync(path.join(dir, f))
  for (const g of generated) writeFileSync(path.join(dir, g.file), g.json)
  return generated
}

if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(process.argv[1]).href) {
  for (const g of writeDashboards())
    process.stdout.write(
      `${path.relative(process.cwd(), path.join(generatedDir(), g.file))}  ${g.dashboard.title ?? ''}\n`,
    )
}
