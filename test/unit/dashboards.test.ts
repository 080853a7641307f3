/**
 * The committed dashboards (dashboards/generated/*.json) are exactly what the
 * TypeScript modules generate, every panel queries the Benchstream ClickHouse
 * datasource with SQL, and uids are unique and stable.
 */
import assert from 'node:assert/strict'
import { existsSync, readdirSync, readFileSync } from 'node:fs'
import path from 'node:path'
import { test } from 'node:test'
import YAML from 'yaml'
import { DATASOURCE_TYPE, GRAFANA_VERSION, PLUGIN_VERSION, dashboardConfig } from '../../dashboards/common.js'
import { repoRoot } from '../../services/common/repo-root.js'
import { generateDashboards, generatedDir, renderJson } from '../../dashboards/index.js'
import { isBenchstreamError } from '../../services/core/errors.js'

interface JsonTarget {
  refId?: string
  pluginVersion?: string
  datasource?: { type?: string; uid?: string }
  editorType?: string
  format?: number
  queryType?: string
  rawSql?: string
}
interface JsonPanel {
  id?: number
  type: string
  title?: string
  pluginVersion?: string
  fieldConfig?: {
    defaults?: { unit?: string; thresholds?: { mode?: string; steps?: Array<{ color: string; value: number | null }> } }
  }
  datasource?: { type?: string; uid?: string }
  targets?: JsonTarget[]
  panels?: JsonPanel[]
}
interface JsonDashboard {
  uid: string
  title: string
  panels: JsonPanel[]
  templating: {
    list: Array<{ name: string; type: string; query?: unknown; refresh?: number; datasource?: { uid?: string } }>
  }
  time: { from: string; to: string }
  annotations?: {
    list: Array<{
      name: string
      enable: boolean
      datasource?: { type?: string; uid?: string }
      target?: JsonTarget
      mappings?: Record<string, { source?: string; value?: string }>
    }>
  }
}

const DS = { type: DATASOURCE_TYPE, uid: '${datasource}' }
const dashboards = (): JsonDashboard[] => generateDashboards().map((g) => JSON.parse(g.json) as JsonDashboard)
const dataPanels = (d: JsonDashboard): JsonPanel[] => allPanels(d.panels).filter((p) => p.type !== 'row')

const REGENERATE = 'run `npm run dashboards` and commit dashboards/generated/'

function allPanels(panels: JsonPanel[]): JsonPanel[] {
  return panels.flatMap((p) => [p, ...allPanels(p.panels ?? [])])
}

test('committed dashboards equal the generated ones byte for byte', () => {
  const dir = generatedDir()
  const generated = generateDashboards()
  for (const g of generated) {
    const file = path.join(dir, g.file)
    assert.ok(existsSync(file), `${path.relative(process.cwd(), file)} is missing: ${REGENERATE}`)
    const committed = readFileSync(file, 'utf8')
    if (committed !== g.json) {
      const at = Array.from({ length: committed.length }, (_, i) => i).find((i) => committed[i] !== g.json[i]) ?? -1
      const line = committed.slice(0, at === -1 ? committed.length : at).split('\n').length
      assert.fail(
        `${g.file} differs from what dashboards/*.ts generate (first difference at line ${line}): ${REGENERATE}`,
      )
    }
  }
  const extra = readdirSync(dir).filter((f) => f.endsWith('.json') && !generated.some((g) => g.file === f))
  assert.deepEqual(extra, [], `dashboards/generated has files no module generates: ${REGENERATE}`)
})

test('generation is deterministic and writes keys sorted', () => {
  const a = generateDashboards().map((g) => g.json)
  const b = generateDashboards().map((g) => g.json)
  assert.deepEqual(a, b)
  assert.equal(
    renderJson({ b: 1, a: { d: [3, { z: 1, y: 2 }], c: undefined } }),
    '{\n  "a": {\n    "d": [\n      3,\n      {\n        "y": 2,\n        "z": 1\n      }\n    ]\n  },\n  "b": 1\n}\n',
  )
})

test('uids are the stable, unique ones the provisioning and links rely on', () => {
  const uids = generateDashboards().map((g) => g.uid)
  assert.deepEqual(uids, ['benchstream-live', 'benchstream-compare', 'benchstream-sweep', 'benchstream-profiles'])
  assert.equal(new Set(uids).size, uids.length)
  for (const g of generateDashboards()) assert.equal(JSON.parse(g.json).uid, g.uid)
})

test('every panel queries the ${datasource} variable with non-empty SQL; ids are unique', () => {
  for (const g of generateDashboards()) {
    const d = JSON.parse(g.json) as JsonDashboard
    const panels = allPanels(d.panels)
    const ids = panels.map((p) => p.id)
    assert.equal(new Set(ids).size, ids.length, `${g.uid}: panel ids repeat`)
    assert.ok(
      ids.every((id) => typeof id === 'number' && id > 0),
      `${g.uid}: every panel needs a positive id`,
    )
    const dataPanels = panels.filter((p) => p.type !== 'row')
    assert.ok(dataPanels.length >= 3, `${g.uid}: expected panels, found ${dataPanels.length}`)
    for (const p of dataPanels) {
      const where = `${g.uid} / ${p.title ?? '(untitled)'}`
      assert.deepEqual(p.datasource, DS, `${where}: panel datasource`)
      assert.ok((p.targets ?? []).length > 0, `${where}: no targets`)
      const refIds = (p.targets ?? []).map((t) => t.refId)
      assert.equal(new Set(refIds).size, refIds.length, `${where}: refIds repeat`)
      for (const t of p.targets ?? []) {
        assert.deepEqual(t.datasource, DS, `${where} ${t.refId}: target datasource`)
        assert.equal(t.editorType, 'sql', `${where} ${t.refId}`)
        assert.ok(t.format === 0 || t.format === 1, `${where} ${t.refId}: format ${t.format}`)
        assert.equal(t.queryType, t.format === 0 ? 'timeseries' : 'table', `${where} ${t.refId}`)
        assert.ok(
          typeof t.rawSql === 'string' && /^\s*(WITH|SELECT)\b/i.test(t.rawSql),
          `${where} ${t.refId}: rawSql must be a SELECT`,
        )
        assert.ok(t.rawSql.includes('benchstream.'), `${where} ${t.refId}: rawSql reads no benchstream table`)
      }
    }
    for (const v of d.templating.list.filter((x) => x.type === 'query')) {
      assert.equal(v.datasource?.uid, '${datasource}', `${g.uid}: variable ${v.name}`)
      assert.ok(typeof v.query === 'string' && v.query.trim() !== '', `${g.uid}: variable ${v.name} has no query`)
    }
  }
})

test('the configuration is validated and reaches every query', () => {
  const other = generateDashboards(dashboardConfig({ database: 'bench_2', datasourceUid: 'my-ch' }))
  for (const g of other) {
    assert.ok(!g.json.includes('benchstream.'), `${g.uid} still names the default database`)
    assert.ok(!g.json.includes('benchstream-clickhouse'), `${g.uid} still names the default datasource`)
    const ds = (
      JSON.parse(g.json) as { templating: { list: Array<{ name: string; current?: { value?: string } }> } }
    ).templating.list.find((v) => v.name === 'datasource')
    assert.equal(ds?.current?.value, 'my-ch', `${g.uid}: the configured datasource is selected at first`)
  }
  assert.throws(
    () => dashboardConfig({ database: 'bench; DROP' }),
    (e: unknown) => isBenchstreamError(e, 'BS_ERR_CONFIG') && /database/.test(e.message),
  )
  assert.throws(
    () => dashboardConfig({ datasourceUid: '' }),
    (e: unknown) => isBenchstreamError(e, 'BS_ERR_CONFIG') && /uid/.test(e.message),
  )
})

test("a datasource variable, first, of the plugin's type, is the only datasource the dashboards name", () => {
  for (const d of dashboards()) {
    const v = d.templating.list[0] as { name: string; type: string; query?: unknown; regex?: string }
    assert.deepEqual([v.name, v.type, v.query, v.regex], ['datasource', 'datasource', DATASOURCE_TYPE, ''], d.uid)
    // No fixed uid anywhere: only ${datasource} (the variable's default selection aside).
    const uids = [
      ...JSON.stringify({ ...d, templating: { list: d.templating.list.slice(1) } }).matchAll(/"uid":"([^"]*)"/g),
    ]
      .map((m) => m[1])
      .filter((u) => u !== d.uid)
    assert.ok(uids.length >= 5, d.uid)
    assert.deepEqual([...new Set(uids)], ['${datasource}'], `${d.uid}: datasource uids`)
  }
})

test('every variable refreshes on dashboard load (refresh: 1), so a new run appears in the picker', () => {
  for (const d of dashboards()) {
    for (const v of d.templating.list.filter((x) => x.type === 'query' || x.type === 'datasource'))
      assert.equal(v.refresh, 1, `${d.uid}: $${v.name}`)
  }
})

test(
  'every query says pluginVersion 4.20.0, so the plugin does not ' +
    'migrate it (src/data/migration.ts:176-181 isV3CHQuery)',
  () => {
    // The plugin's test for a query to migrate: no pluginVersion or one below 4.0.0, or a v3 queryType.
    const atLeast = (v: string, min: string): boolean => {
      const a = v.split('.').map(Number)
      const b = min.split('.').map(Number)
      for (let i = 0; i < 3; i++) if ((a[i] ?? 0) !== (b[i] ?? 0)) return (a[i] ?? 0) > (b[i] ?? 0)
      return true
    }
    const isV3 = (t: JsonTarget): boolean =>
      t.pluginVersion === undefined ||
      t.pluginVersion === '' ||
      !atLeast(t.pluginVersion, '4.0.0') ||
      t.queryType === 'sql' ||
      t.queryType === 'builder'
    assert.equal(isV3({ queryType: 'table' }), true, 'a query without pluginVersion is migrated')
    assert.equal(PLUGIN_VERSION, '4.20.0')
    for (const d of dashboards()) {
      for (const p of dataPanels(d)) {
        for (const t of p.targets ?? []) {
          assert.equal(t.pluginVersion, '4.20.0', `${d.uid} / ${p.title ?? ''} ${t.refId ?? ''}`)
          assert.equal(isV3(t), false)
        }
        assert.equal(p.pluginVersion, GRAFANA_VERSION, `${d.uid} / ${p.title ?? ''}: panel pluginVersion`)
      }
    }
    // The versions are the ones deploy/docker-compose.yml runs.
    const compose = YAML.parse(readFileSync(path.join(repoRoot(), 'deploy/docker-compose.yml'), 'utf8'), {
      merge: true,
    }) as { services: { grafana: { image: string; environment: Record<string, string> } } }
    assert.equal(compose.services.grafana.image, `grafana/grafana:${GRAFANA_VERSION}`)
    assert.equal(
      compose.services.grafana.environment.GF_PLUGINS_PREINSTALL_SYNC,
      `${DATASOURCE_TYPE}@${PLUGIN_VERSION}`,
    )
  },
)

test("every panel has an explicit unit and thresholds; none keeps Grafana's default (red above 80)", () => {
  let n = 0
  for (const d of dashboards()) {
    for (const p of dataPanels(d)) {
      const where = `${d.uid} / ${p.title ?? ''}`
      const defaults = p.fieldConfig?.defaults
      assert.ok(typeof defaults?.unit === 'string' && defaults.unit !== '', `${where}: no unit`)
      const steps = defaults.thresholds?.steps ?? []
      assert.equal(defaults.thresholds?.mode, 'absolute', where)
      assert.ok(steps.length >= 1 && steps[0]!.value === null, `${where}: thresholds need a base step`)
      assert.ok(!steps.some((s) => s.value === 80), `${where}: Grafana's default threshold at 80`)
      n++
    }
  }
  assert.ok(n >= 15, `${n} panels`)
})

test('error panels are not in ops/s; the error count turns red from the first error', () => {
  const live = dashboards().find((d) => d.uid === 'benchstream-live')!
  const errorPanels = dataPanels(live).filter((p) => /error/i.test(p.title ?? ''))
  assert.equal(errorPanels.length, 2)
  for (const p of errorPanels) assert.notEqual(p.fieldConfig?.defaults?.unit, 'ops', p.title)
  assert.equal(
    errorPanels.find((p) => p.title === 'Errors per second by status')?.fieldConfig?.defaults?.unit,
    'suffix: err/s',
  )
  assert.deepEqual(errorPanels.find((p) => p.title === 'Errors')?.fieldConfig?.defaults?.thresholds?.steps, [
    { color: 'green', value: null },
    { color: 'red', value: 1 },
  ])
})

test('time ranges: the live run the last 15 minutes, compare, sweep and profiles the last day', () => {
  assert.deepEqual(Object.fromEntries(dashboards().map((d) => [d.uid, d.time])), {
    'benchstream-live': { from: 'now-15m', to: 'now' },
    'benchstream-compare': { from: 'now-24h', to: 'now' },
    'benchstream-sweep': { from: 'now-24h', to: 'now' },
    'benchstream-profiles': { from: 'now-24h', to: 'now' },
  })
})

test("every dashboard annotates its runs' alerts: start to end, summary, rule, op and severity as tags", () => {
  const runVariables: Record<string, string[]> = {
    'benchstream-live': ['run'],
    'benchstream-compare': ['baseline', 'candidate'],
    'benchstream-profiles': ['run', 'baseline', 'candidate'],
    'benchstream-sweep': ['label', 'workload'],
  }
  for (const d of dashboards()) {
    const list = d.annotations?.list ?? []
    assert.equal(list.length, 1, `${d.uid}: one annotation query`)
    const a = list[0]!
    assert.equal(a.name, 'Alerts')
    assert.equal(a.enable, true)
    assert.deepEqual(a.datasource, DS)
    const t = a.target!
    assert.deepEqual([t.editorType, t.format, t.pluginVersion, t.datasource], ['sql', 1, PLUGIN_VERSION, DS])
    const q = t.rawSql ?? ''
    assert.match(q, /FROM benchstream\.alert_incidents/)
    assert.match(q, /starts_at AS time/)
    assert.match(q, /ends_at.* AS timeEnd/)
    assert.match(q, /summary AS text/)
    assert.match(q, /concat\(rule, ',', op, ',', severity.*\) AS tags/)
    for (const v of runVariables[d.uid] ?? assert.fail(`no run variables listed for ${d.uid}`))
      assert.ok(q.includes(`\${${v}:singlequote}`), `${d.uid}: filtered by $${v}`)
    for (const f of ['time', 'timeEnd', 'title', 'text', 'tags'])
      assert.deepEqual(a.mappings?.[f], { source: 'field', value: f }, `${d.uid}: ${f} mapping`)
  }
})
