/**
 * The committed dashboards (dashboards/generated/*.json) are exactly what the
 * TypeScript modules generate, every panel queries the Benchstream ClickHouse
 * datasource with SQL, and uids are unique and stable.
 */
import assert from 'node:assert/strict'
import { existsSync, readdirSync, readFileSync } from 'node:fs'
import path from 'node:path'
import { test } from 'node:test'
import { DATASOURCE_TYPE, dashboardConfig } from '../../dashboards/common.js'
import { generateDashboards, generatedDir, renderJson } from '../../dashboards/index.js'
import { isBenchstreamError } from '../../services/core/errors.js'

interface JsonTarget {
  refId?: string
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
  datasource?: { type?: string; uid?: string }
  targets?: JsonTarget[]
  panels?: JsonPanel[]
}
interface JsonDashboard {
  uid: string
  title: string
  panels: JsonPanel[]
  templating: { list: Array<{ name: string; type: string; query?: unknown; datasource?: { uid?: string } }> }
}

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
      assert.fail(`${g.file} differs from what dashboards/*.ts generate (first difference at line ${line}): ${REGENERATE}`)
    }
  }
  const extra = readdirSync(dir).filter((f) => f.endsWith('.json') && !generated.some((g) => g.file === f))
  assert.deepEqual(extra, [], `dashboards/generated has files no module generates: ${REGENERATE}`)
})

test('generation is deterministic and writes keys sorted', () => {
  const a = generateDashboards().map((g) => g.json)
  const b = generateDashboards().map((g) => g.json)
  assert.deepEqual(a, b)
  assert.equal(renderJson({ b: 1, a: { d: [3, { z: 1, y: 2 }], c: undefined } }), '{\n  "a": {\n    "d": [\n      3,\n      {\n        "y": 2,\n        "z": 1\n      }\n    ]\n  },\n  "b": 1\n}\n')
})

test('uids are the stable, unique ones the provisioning and links rely on', () => {
  const uids = generateDashboards().map((g) => g.uid)
  assert.deepEqual(uids, ['benchstream-live', 'benchstream-compare', 'benchstream-sweep', 'benchstream-profiles'])
  assert.equal(new Set(uids).size, uids.length)
  for (const g of generateDashboards()) assert.equal(JSON.parse(g.json).uid, g.uid)
})

test('every panel queries benchstream-clickhouse with non-empty SQL; ids are unique', () => {
  for (const g of generateDashboards()) {
    const d = JSON.parse(g.json) as JsonDashboard
    const panels = allPanels(d.panels)
    const ids = panels.map((p) => p.id)
    assert.equal(new Set(ids).size, ids.length, `${g.uid}: panel ids repeat`)
    assert.ok(ids.every((id) => typeof id === 'number' && id > 0), `${g.uid}: every panel needs a positive id`)
    const dataPanels = panels.filter((p) => p.type !== 'row')
    assert.ok(dataPanels.length >= 3, `${g.uid}: expected panels, found ${dataPanels.length}`)
    for (const p of dataPanels) {
      const where = `${g.uid} / ${p.title ?? '(untitled)'}`
      assert.deepEqual(p.datasource, { type: DATASOURCE_TYPE, uid: 'benchstream-clickhouse' }, `${where}: panel datasource`)
      assert.ok((p.targets ?? []).length > 0, `${where}: no targets`)
      const refIds = (p.targets ?? []).map((t) => t.refId)
      assert.equal(new Set(refIds).size, refIds.length, `${where}: refIds repeat`)
      for (const t of p.targets ?? []) {
        assert.deepEqual(t.datasource, { type: DATASOURCE_TYPE, uid: 'benchstream-clickhouse' }, `${where} ${t.refId}: target datasource`)
        assert.equal(t.editorType, 'sql', `${where} ${t.refId}`)
        assert.ok(t.format === 0 || t.format === 1, `${where} ${t.refId}: format ${t.format}`)
        assert.equal(t.queryType, t.format === 0 ? 'timeseries' : 'table', `${where} ${t.refId}`)
        assert.ok(typeof t.rawSql === 'string' && /^\s*(WITH|SELECT)\b/i.test(t.rawSql), `${where} ${t.refId}: rawSql must be a SELECT`)
        assert.ok(t.rawSql.includes('benchstream.'), `${where} ${t.refId}: rawSql reads no benchstream table`)
      }
    }
    for (const v of d.templating.list.filter((x) => x.type === 'query')) {
      assert.equal(v.datasource?.uid, 'benchstream-clickhouse', `${g.uid}: variable ${v.name}`)
      assert.ok(typeof v.query === 'string' && v.query.trim() !== '', `${g.uid}: variable ${v.name} has no query`)
    }
  }
})

test('the configuration is validated and reaches every query', () => {
  const other = generateDashboards(dashboardConfig({ database: 'bench_2', datasourceUid: 'my-ch' }))
  for (const g of other) {
    assert.ok(!g.json.includes('benchstream.'), `${g.uid} still names the default database`)
    assert.ok(!g.json.includes('benchstream-clickhouse'), `${g.uid} still names the default datasource`)
  }
  assert.throws(() => dashboardConfig({ database: 'bench; DROP' }), (e: unknown) => isBenchstreamError(e, 'BS_ERR_CONFIG') && /database/.test(e.message))
  assert.throws(() => dashboardConfig({ datasourceUid: '' }), (e: unknown) => isBenchstreamError(e, 'BS_ERR_CONFIG') && /uid/.test(e.message))
})
