/**
 * Every query of the generated dashboards expands completely through
 * Grafana's and the ClickHouse plugin's passes (test/helpers/grafana-macros.ts,
 * held to plugin v4.20.0 by test/unit/grafana-macros.test.ts), uses only
 * macros the plugin has, and refuses to expand without its variables.
 */
import assert from 'node:assert/strict'
import { test } from 'node:test'
import { generateDashboards } from '../../dashboards/index.js'
import { isBenchstreamError } from '../../services/core/errors.js'
import { expandQuery, PLUGIN_MACROS, type ExpandContext } from '../helpers/grafana-macros.js'

const ctx: ExpandContext = {
  fromMs: Date.UTC(2026, 2, 1, 10, 0, 0, 250),
  toMs: Date.UTC(2026, 2, 1, 11, 0, 0, 999),
  intervalMs: 2500,
  variables: {},
}
const refused = (pattern: RegExp) => (e: unknown) =>
  isBenchstreamError(e, 'BS_ERR_BAD_REQUEST') && pattern.test(e.message)

function queries(): Array<{ where: string; sql: string }> {
  return generateDashboards().flatMap((g) => [
    ...g.dashboard.templating
      .list!.filter((v) => v.type === 'query')
      .map((v) => ({
        where: `${g.uid}/$${v.name}`,
        sql: typeof v.query === 'string' ? v.query : JSON.stringify(v.query),
      })),
    ...(g.dashboard.panels ?? []).flatMap((p) =>
      ('targets' in p ? (p.targets ?? []) : []).map((t) => ({
        where: `${g.uid}/${'title' in p ? String(p.title) : ''}`,
        sql: (t as unknown as { rawSql: string }).rawSql,
      })),
    ),
  ])
}

test('the dashboards use only macros grafana-clickhouse-datasource 4.20.0 has', () => {
  const used = new Set(queries().flatMap((q) => [...q.sql.matchAll(/\$__(\w+)/g)].map((m) => m[1]!)))
  assert.ok(used.size >= 4, [...used].join(', '))
  for (const name of used)
    assert.ok((PLUGIN_MACROS as readonly string[]).includes(name), `$__${name} is not a macro of the plugin`)
})

test('every dashboard query expands completely with its variables set, and not without them', () => {
  const variables = {
    run: 'r',
    op: ['READ'],
    baseline: 'a',
    candidate: 'b',
    step: '5',
    label: 'threads',
    workload: '*',
  }
  let n = 0
  let withVariables = 0
  for (const q of queries()) {
    const out = expandQuery(q.sql, { ...ctx, variables })
    assert.doesNotMatch(out, /\$\w|\$\{|\[\[/, `${q.where}: left in ${out}`)
    n++
    // A query that uses a dashboard variable must refuse to expand without it.
    if (/\$\{?\w*[a-z]/.test(q.sql.replaceAll(/\$__\w+/g, ''))) {
      withVariables++
      assert.throws(() => expandQuery(q.sql, ctx), refused(/is not set/), q.where)
    }
  }
  assert.ok(n >= 20, `expected at least 20 queries, expanded ${n}`)
  assert.ok(withVariables >= 15, `the unset-variable check ran on ${withVariables} queries`)
})
