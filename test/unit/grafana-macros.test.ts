/**
 * test/helpers/grafana-macros.ts held to grafana-clickhouse-datasource
 * v4.20.0 (commit 973c4a50): every vector the plugin's own code wrote
 * (test/fixtures/grafana-macros) is reproduced byte for byte, then one test
 * per macro states the plugin's expansion with the source line it comes
 * from, then the engine's rules (grafana/macropro v1.0.1 parser.go) one by
 * one. File references without a repository are the plugin's at v4.20.0.
 */
import assert from 'node:assert/strict'
import { readdirSync, readFileSync } from 'node:fs'
import path from 'node:path'
import { test } from 'node:test'
import { repoRoot } from '../../services/common/repo-root.js'
import { isBenchstreamError } from '../../services/core/errors.js'
import {
  expandQuery,
  expandVariables,
  interpolateMacros,
  PLUGIN_MACROS,
  type MacroContext,
} from '../helpers/grafana-macros.js'
import { joinRegExp } from '../helpers/regexp.js'

interface Vector {
  name: string
  source: string
  sql: string
  fromMs: number
  toMs: number
  intervalMs: number
  table?: string
  column?: string
  timeZone: string
  out?: string
  error?: string
}
const vectors = (
  JSON.parse(readFileSync(path.join(repoRoot(), 'test/fixtures/grafana-macros/plugin-v4.20.0.json'), 'utf8')) as {
    cases: Vector[]
  }
).cases

// 2023-11-14T22:13:20.123Z .. 2023-11-14T23:13:20.456Z, as in the vectors.
const ctx: MacroContext = { fromMs: 1_700_000_000_123, toMs: 1_700_003_600_456, intervalMs: 1500 }
const m = (sql: string, c: Partial<MacroContext> = {}): string => interpolateMacros(sql, { ...ctx, ...c })
const fails = (pattern: RegExp) => (e: unknown) =>
  isBenchstreamError(e, 'BS_ERR_BAD_REQUEST') && pattern.test(e.message)

test("every vector written by the plugin's own code is reproduced exactly (outputs and error texts)", () => {
  assert.ok(vectors.length >= 100, `${vectors.length} vectors`)
  const fromPluginTests = vectors.filter((v) => v.source.startsWith('pkg/macros/macros_test.go'))
  assert.ok(fromPluginTests.length >= 40, `${fromPluginTests.length} cases from the plugin's macros_test.go`)
  for (const v of vectors) {
    const c: MacroContext = {
      fromMs: v.fromMs,
      toMs: v.toMs,
      intervalMs: v.intervalMs,
      timeZone: v.timeZone,
      ...(v.table === undefined ? {} : { table: v.table }),
      ...(v.column === undefined ? {} : { column: v.column }),
    }
    if (v.error !== undefined)
      assert.throws(
        () => interpolateMacros(v.sql, c),
        (e: unknown) => isBenchstreamError(e) && e.message === v.error,
        `${v.name} (${v.source}): expected error ${v.error}`,
      )
    else assert.equal(interpolateMacros(v.sql, c), v.out, `${v.name} (${v.source})`)
  }
})

// -- one test per macro: the plugin's expansion for v4.20.0 --------------------

test('$__timeFilter(col): col >= toDateTime(from s) AND col <= toDateTime(to s) (macros.go:74-80)', () => {
  assert.equal(m('$__timeFilter(ts)'), 'ts >= toDateTime(1700000000) AND ts <= toDateTime(1700003600)')
})

test('$__timeFilter_ms(col): fromUnixTimestamp64Milli bounds, milliseconds kept (macros.go:84-90)', () => {
  assert.equal(
    m('$__timeFilter_ms(window_start)'),
    'window_start >= fromUnixTimestamp64Milli(1700000000123) AND window_start ' +
      '<= fromUnixTimestamp64Milli(1700003600456)',
  )
})

test('$__fromTime, $__toTime: toDateTime(seconds, truncated like Go time.Unix) (macros.go:53-60, 29-31)', () => {
  assert.equal(m('$__fromTime $__toTime'), 'toDateTime(1700000000) toDateTime(1700003600)')
})

test('$__fromTime_ms, $__toTime_ms: fromUnixTimestamp64Milli(ms) (macros.go:63-70, 34-36)', () => {
  assert.equal(
    m('$__fromTime_ms $__toTime_ms'),
    'fromUnixTimestamp64Milli(1700000000123) fromUnixTimestamp64Milli(1700003600456)',
  )
})

test("$__dateFilter(col): toDate('YYYY-MM-DD') in the plugin process's zone (macros.go:94-100, 24-26)", () => {
  assert.equal(m('$__dateFilter(d)'), "d >= toDate('2023-11-14') AND d <= toDate('2023-11-14')")
  // 2023-11-14T22:13Z is already the 15th in Tokyo.
  assert.equal(
    m('$__dateFilter(d)', { timeZone: 'Asia/Tokyo' }),
    "d >= toDate('2023-11-15') AND d <= toDate('2023-11-15')",
  )
})

test('$__dateTimeFilter(d, t) and its alias $__dt: both filters, each in parentheses (macros.go:104-112, 212)', () => {
  const expected =
    "(d >= toDate('2023-11-14') AND d <= toDate('2023-11-14')) AND (t >= toDateTime(1700000000) " +
    'AND t <= toDateTime(1700003600))'
  assert.equal(m('$__dateTimeFilter(d, t)'), expected)
  assert.equal(m('$__dt(d,t)'), expected)
})

test(
  '$__timeInterval(col): toStartOfInterval(toDateTime(col), INTERVAL ' + 'int(max(s, 1)) second) (macros.go:116-122)',
  () => {
    assert.equal(m('$__timeInterval(window_start)'), 'toStartOfInterval(toDateTime(window_start), INTERVAL 1 second)')
    assert.equal(
      m('$__timeInterval(window_start)', { intervalMs: 59_999 }),
      'toStartOfInterval(toDateTime(window_start), INTERVAL 59 second)',
      'truncated, not rounded',
    )
  },
)

test(
  '$__timeInterval_ms(col): toStartOfInterval(toDateTime64(col, 3), INTERVAL ms millisecond), ' +
    'at least 1 (macros.go:126-132)',
  () => {
    assert.equal(m('$__timeInterval_ms(at)'), 'toStartOfInterval(toDateTime64(at, 3), INTERVAL 1500 millisecond)')
    assert.equal(
      m('$__timeInterval_ms(at)', { intervalMs: 0 }),
      'toStartOfInterval(toDateTime64(at, 3), INTERVAL 1 millisecond)',
    )
  },
)

test('$__interval_s: whole seconds of the interval, truncated, at least 1 (macros.go:136-139)', () => {
  assert.deepEqual(
    [1500, 500, 60_000, 0].map((intervalMs) => m('$__interval_s', { intervalMs })),
    ['1', '1', '60', '1'],
  )
})

test('$__timeFrom(col), $__timeTo(col): ClickHouse overrides, exactly one column (macros.go:146-160)', () => {
  assert.equal(m('$__timeFrom(ts) AND $__timeTo(ts)'), 'ts >= toDateTime(1700000000) AND ts <= toDateTime(1700003600)')
  assert.throws(
    () => m('$__timeFrom'),
    fails(
      joinRegExp([
        /^Could not apply macros: macro \$__timeFrom\(\): unexpected number of arguments: /,
        /\$__timeFrom expected 1 argument\(s\), received 0$/,
      ]),
    ),
  )
})

test('$__timeGroup(col, period): Go duration rounded to seconds, positive (macros.go:166-182)', () => {
  assert.equal(m("$__timeGroup(ts, '5m')"), 'toStartOfInterval(toDateTime(ts), INTERVAL 300 second)')
  assert.throws(
    () => m('$__timeGroup(ts, 1d)'),
    fails(/\$__timeGroup: invalid interval "1d": time: unknown unit "d" in duration "1d"$/),
  )
  assert.throws(() => m('$__timeGroup(ts, 400ms)'), fails(/interval must be positive, got "400ms"$/))
})

test('$__interval, $__interval_ms: macropro defaults (FormatDuration, ms) when the frontend left them', () => {
  assert.equal(m('$__interval $__interval_ms', { intervalMs: 90_000 }), '90s 90000')
  assert.equal(m('$__interval', { intervalMs: 250 }), '250ms')
})

test("$__table, $__column: the query's table and column fields, an error without them (macropro defaults.go)", () => {
  assert.equal(m('SELECT $__column FROM $__table', { table: 't1', column: 'c1' }), 'SELECT c1 FROM t1')
  assert.throws(() => m('SELECT * FROM $__table'), fails(/\$__table: no table name in query context$/))
})

test(
  '$__conditionalAll(cond, $var): frontend, 1=1 when the variable ' +
    'is empty or All, else cond (CHDatasource.ts:558-585)',
  () => {
    const q = 'WHERE $__conditionalAll(op IN (${op:singlequote}), $op)'
    assert.equal(expandQuery(q, { ...ctx, variables: { op: ['READ'] } }), "WHERE op IN ('READ')")
    assert.equal(expandQuery(q, { ...ctx, variables: { op: '$__all' } }), 'WHERE 1=1')
    assert.equal(expandQuery(q, { ...ctx, variables: { op: '' } }), 'WHERE 1=1')
  },
)

test("the macro set is the plugin's: DefaultMacros merged with ClickHouseMacros (macros.go:195-217)", () => {
  assert.deepEqual([...PLUGIN_MACROS].sort(), [
    'column',
    'dateFilter',
    'dateTimeFilter',
    'dt',
    'fromTime',
    'fromTime_ms',
    'interval',
    'interval_ms',
    'interval_s',
    'table',
    'timeFilter',
    'timeFilter_ms',
    'timeFrom',
    'timeGroup',
    'timeInterval',
    'timeInterval_ms',
    'timeTo',
    'toTime',
    'toTime_ms',
  ])
})

// -- the engine's rules (macropro v1.0.1 parser.go) -----------------------------

test('an unknown macro: the plugin copies it through; our expansion fails the test', () => {
  assert.equal(m('SELECT $__nope(x), $__fromTime_msX'), 'SELECT $__nope(x), $__fromTime_msX')
  assert.throws(
    () => expandQuery('SELECT $__nope(x)', { ...ctx, variables: {} }),
    fails(/unknown macro \$__nope: grafana-clickhouse-datasource 4\.20\.0 leaves it in the SQL/),
  )
  assert.throws(
    () => expandQuery('SELECT $__fromTime_msX', { ...ctx, variables: {} }),
    fails(/unknown macro \$__fromTime_msX/),
  )
})

test('the longest name is read: $__interval_s is not $__interval followed by _s', () => {
  assert.equal(m('$__interval_s|$__interval_ms|$__interval', { intervalMs: 2000 }), '2|2000|2s')
})

test('arguments: balanced parentheses, top-level commas, quotes, trimmed; nested macros innermost first', () => {
  assert.equal(
    m('$__timeFilter(toDateTime(x))'),
    'toDateTime(x) >= toDateTime(1700000000) AND toDateTime(x) <= toDateTime(1700003600)',
  )
  assert.equal(
    m('$__timeFilter( coalesce(a, b) )'),
    'coalesce(a, b) >= toDateTime(1700000000) AND coalesce(a, b) <= toDateTime(1700003600)',
  )
  assert.equal(
    m("$__timeFilter(concat(')', x))"),
    "concat(')', x) >= toDateTime(1700000000) AND concat(')', x) <= toDateTime(1700003600)",
  )
  assert.equal(
    m('$__timeInterval($__fromTime)', { intervalMs: 60_000 }),
    'toStartOfInterval(toDateTime(toDateTime(1700000000)), INTERVAL 60 second)',
  )
  // A zero-argument macro consumes and ignores an argument list.
  assert.equal(m('$__fromTime(anything, at all)'), 'toDateTime(1700000000)')
})

test("arity errors carry the plugin's message, nested ones say which argument", () => {
  assert.throws(
    () => m('WHERE $__timeFilter(a, b)'),
    fails(
      joinRegExp([
        /^Could not apply macros: macro \$__timeFilter\(a, b\): unexpected number of arguments: /,
        /\$__timeFilter expected 1 argument\(s\), received 2$/,
      ]),
    ),
  )
  assert.throws(() => m('$__timeFilter(ts'), fails(/received 0$/), 'unbalanced: a call without arguments')
  assert.throws(
    () => m('$__timeInterval($__timeFilter())'),
    fails(/^Could not apply macros: macro \$__timeInterval argument 1: macro \$__timeFilter\(\): /),
  )
})

test('comments are blanked (byte for byte) whenever the SQL has a $__, and macros in them are not expanded', () => {
  assert.equal(m('SELECT 1 -- note'), 'SELECT 1 -- note', 'no $__: untouched')
  assert.equal(m('-- $__timeFilter(x)\nSELECT 1'), '                   \nSELECT 1')
  assert.equal(
    m('SELECT 1 -- µs\nWHERE $__timeFilter(t) /* c */'),
    'SELECT 1       \nWHERE t >= toDateTime(1700000000) AND t <= toDateTime(1700003600)        ',
  )
  assert.equal(
    m("SELECT 'it\\'s -- x' AND $__fromTime"),
    "SELECT 'it\\'s -- x' AND toDateTime(1700000000)",
    'a backslash-escaped quote does not end the literal',
  )
})

test('macros inside string literals are expanded', () => {
  assert.equal(m("SELECT '$__fromTime' AS s"), "SELECT 'toDateTime(1700000000)' AS s")
})

test('variables: Grafana formats, the datasource formatter for unformatted multi-values', () => {
  const variables = { run: 'run-1', op: ['READ', 'UPDATE'], step: '5', odd: 'it\'s "x"' }
  assert.equal(
    expandVariables('run_id = ${run:singlequote} AND op IN (${op:singlequote})', { variables }),
    "run_id = 'run-1' AND op IN ('READ','UPDATE')",
  )
  assert.equal(
    expandVariables('$run [[run]] ${run} ${op} ${op:csv} ${op:raw}', { variables }),
    "run-1 run-1 run-1 'READ','UPDATE' READ,UPDATE READ,UPDATE",
  )
  assert.equal(
    expandVariables('${odd:singlequote} ${odd:sqlstring}', { variables }),
    "'it\\'s \"x\"' 'it''s \\\"x\\\"'",
  )
  assert.equal(
    expandVariables('$__timeFilter_ms(t) / $__interval_s', { variables }),
    '$__timeFilter_ms(t) / $__interval_s',
    'plugin macros are left for the backend',
  )
  assert.throws(() => expandQuery('SELECT $nope', { ...ctx, variables }), fails(/\$nope is not set/))
  assert.throws(
    () => expandQuery('SELECT ${run:percentencode}', { ...ctx, variables }),
    fails(/format "percentencode" is not emulated/),
  )
  assert.throws(() => expandQuery('SELECT $__from', { ...ctx, variables }), fails(/Grafana global/))
})

test('test support only: nothing in services/ or dashboards/ imports the macro helper', () => {
  const files = (dir: string): string[] =>
    readdirSync(dir, { withFileTypes: true }).flatMap((e) =>
      e.isDirectory() ? files(path.join(dir, e.name)) : e.name.endsWith('.ts') ? [path.join(dir, e.name)] : [],
    )
  const importers = ['services', 'dashboards']
    .flatMap((d) => files(path.join(repoRoot(), d)))
    .filter((f) => /grafana-macros|dashboards\/macros/.test(readFileSync(f, 'utf8')))
  assert.deepEqual(importers, [])
})
