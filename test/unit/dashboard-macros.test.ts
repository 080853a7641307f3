/**
 * dashboards/macros.ts writes what grafana-clickhouse-datasource (v4,
 * pkg/macros/macros.go) and Grafana's template service would, and refuses
 * anything it does not know.
 */
import assert from 'node:assert/strict'
import { test } from 'node:test'
import { generateDashboards } from '../../dashboards/index.js'
import { expandMacros, expandQuery, expandVariables, type ExpandContext } from '../../dashboards/macros.js'
import { isBenchstreamError } from '../../services/core/errors.js'

// 2026-03-01T10:00:00.250Z .. 2026-03-01T11:00:00.999Z
const FROM = Date.UTC(2026, 2, 1, 10, 0, 0, 250)
const TO = Date.UTC(2026, 2, 1, 11, 0, 0, 999)
const ctx: ExpandContext = { fromMs: FROM, toMs: TO, intervalMs: 2500, variables: { run: 'run-1', op: ['READ', 'UPDATE'], step: '5', odd: "it's" } }
const refused = (pattern: RegExp) => (e: unknown) => isBenchstreamError(e, 'BS_ERR_BAD_REQUEST') && pattern.test(e.message)

test('time macros: seconds truncate like Go time.Unix, _ms variants keep milliseconds', () => {
  const s = Math.trunc(FROM / 1000)
  const t = Math.trunc(TO / 1000)
  assert.equal(expandMacros('$__timeFilter(at)', ctx), `at >= toDateTime(${s}) AND at <= toDateTime(${t})`)
  assert.equal(expandMacros('$__timeFilter_ms( window_start )', ctx), `window_start >= fromUnixTimestamp64Milli(${FROM}) AND window_start <= fromUnixTimestamp64Milli(${TO})`)
  assert.equal(expandMacros('$__fromTime $__toTime $__fromTime_ms $__toTime_ms', ctx), `toDateTime(${s}) toDateTime(${t}) fromUnixTimestamp64Milli(${FROM}) fromUnixTimestamp64Milli(${TO})`)
  assert.equal(expandMacros('$__fromTime()', ctx), `toDateTime(${s})`)
})

test('interval macros: whole seconds, at least 1', () => {
  assert.equal(expandMacros('$__interval_s', ctx), '2')
  assert.equal(expandMacros('$__interval_s', { ...ctx, intervalMs: 20 }), '1')
  assert.equal(expandMacros('$__timeInterval(window_start)', ctx), 'toStartOfInterval(toDateTime(window_start), INTERVAL 2 second)')
  assert.equal(expandMacros('$__timeInterval_ms(at)', ctx), 'toStartOfInterval(toDateTime64(at, 3), INTERVAL 2500 millisecond)')
})

test('variables: Grafana formats, the datasource formatter for unformatted multi-values', () => {
  assert.equal(expandVariables("run_id = ${run:singlequote} AND op IN (${op:singlequote})", ctx), "run_id = 'run-1' AND op IN ('READ','UPDATE')")
  assert.equal(expandVariables('$run [[run]] ${run} ${op} ${op:csv} ${op:raw}', ctx), "run-1 run-1 run-1 'READ','UPDATE' READ,UPDATE READ,UPDATE")
  assert.equal(expandVariables('${odd:singlequote} ${odd:sqlstring}', ctx), "'it\\'s' 'it''s'")
  // Plugin macros are left for the backend pass.
  assert.equal(expandVariables('$__timeFilter_ms(t) / $__interval_s', ctx), '$__timeFilter_ms(t) / $__interval_s')
  assert.equal(expandQuery('SELECT ${step} * $__interval_s', ctx), 'SELECT 5 * 2')
})

test('anything unknown fails loudly', () => {
  assert.throws(() => expandQuery('SELECT $nope', ctx), refused(/\$nope is not set/))
  assert.throws(() => expandQuery('SELECT ${run:percentencode}', ctx), refused(/format "percentencode" is not emulated/))
  assert.throws(() => expandQuery('SELECT ${run.field}', ctx), refused(/field paths/))
  assert.throws(() => expandQuery('SELECT $__from', ctx), refused(/Grafana global variable/))
  assert.throws(() => expandQuery('SELECT ${__to:date}', ctx), refused(/Grafana global variable/))
  assert.throws(() => expandMacros('SELECT $__timeGroup(t, 1m)', ctx), refused(/unknown macro \$__timeGroup/))
  assert.throws(() => expandMacros('WHERE $__timeFilter', ctx), refused(/takes exactly one column/))
  assert.throws(() => expandMacros('WHERE $__dateFilter(d)', ctx), refused(/not emulated/))
  assert.throws(() => expandQuery('WHERE $__conditionalAll(x IN ($op), $op)', ctx), refused(/conditionalAll/))
  assert.throws(() => expandQuery('x', { ...ctx, toMs: FROM - 1 }), refused(/time range/))
  assert.throws(() => expandQuery('x', { ...ctx, intervalMs: 0 }), refused(/intervalMs/))
})

test('every dashboard query expands completely with its variables set, and not without them', () => {
  const variables = { run: 'r', op: ['READ'], baseline: 'a', candidate: 'b', step: '5', label: 'threads', workload: '*' }
  let n = 0
  let withVariables = 0
  for (const g of generateDashboards()) {
    const queries = [
      ...g.dashboard.templating.list!.filter((v) => v.type === 'query').map((v) => (typeof v.query === 'string' ? v.query : JSON.stringify(v.query))),
      ...(g.dashboard.panels ?? []).flatMap((p) => ('targets' in p ? (p.targets ?? []) : []).map((t) => (t as unknown as { rawSql: string }).rawSql)),
    ]
    for (const q of queries) {
      const out = expandQuery(q, { ...ctx, variables })
      assert.doesNotMatch(out, /\$\w|\$\{|\[\[/, `${g.uid}: left in ${out}`)
      n++
      // A query that uses a dashboard variable must refuse to expand without it.
      if (/\$\{?\w*[a-z]/.test(q.replaceAll(/\$__\w+/g, ''))) {
        withVariables++
        assert.throws(() => expandQuery(q, { ...ctx, variables: {} }), refused(/is not set/))
      }
    }
  }
  assert.ok(n >= 20, `expected at least 20 queries, expanded ${n}`)
  assert.ok(withVariables >= 15, `the unset-variable check ran on ${withVariables} queries`)
})
