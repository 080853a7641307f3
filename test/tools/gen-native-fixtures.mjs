#!/usr/bin/env node
// Writes test/fixtures/native/chdb.json: Native output of chDB (the engine
// the embedded mode runs) for queries covering the column types the
// re-framer walks (services/adapters/clickhouse/native-format.ts). Each case
// has the whole result and, where the types allow, the same query with
// LIMIT k, so a test can check that cutting the first k rows out of the
// whole result gives exactly what the engine writes for k rows.
//   node test/tools/gen-native-fixtures.mjs
import { writeFileSync } from 'node:fs'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import { createRequire } from 'node:module'
import { Session } from 'chdb'

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..')
const chdbVersion = createRequire(import.meta.url)('chdb/package.json').version
const cases = [
  ['select 1', 'SELECT 1', 0],
  ['hello (clickhouse-go HTTP handshake)', 'SELECT displayName(), version(), revision(), timezone()', 0],
  [
    'numbers and strings',
    'SELECT number, toInt32(number) - 5 AS i32, toFloat64(number) / 3 AS f, toString(number * 1000) ' +
      'AS s, toFixedString(toString(number % 10), 2) AS fs, toDate(number) AS d, toDateTime(number, ' +
      "'UTC') AS dt FROM numbers(250)",
    107,
  ],
  [
    'nullable, arrays, maps, tuples',
    'SELECT if(number % 3 = 0, NULL, number) AS n, range(number % 4) AS a, map(toString(number), ' +
      "number, 'k', 1) AS m, (number, toString(number)) AS t, [if(number % 2 = 0, NULL, toString(number))] " +
      'AS an, [[number], [1, 2]] AS aa FROM numbers(250)',
    150,
  ],
  [
    'decimals, dates, uuids, ips, enums',
    'SELECT toDecimal64(number / 7, 4) AS d64, toDecimal128(number, 10) AS d128, toDateTime64(number, ' +
      "3, 'UTC') AS dt64, toUUID('00000000-0000-0000-0000-000000000001') AS u, toIPv4('10.0.0.1') " +
      "AS ip4, toIPv6('::1') AS ip6, CAST(number % 2 + 1, 'Enum8(\\'a\\' = 1, \\'b\\' = 2)') AS e, " +
      'toBool(number % 2) AS b, toInt128(number) AS i128, toUInt256(number) AS u256 FROM numbers(10)',
    4,
  ],
  [
    'named tuple and geo',
    "SELECT CAST((number, 'x'), 'Tuple(id UInt64, `the name` String)') AS nt, (1.5, 2.5)::Point " +
      'AS p, [(0., 0.), (1., 1.)]::Ring AS r FROM numbers(5)',
    2,
  ],
  [
    'low cardinality',
    'SELECT toLowCardinality(toString(number % 7)) AS lc, toLowCardinality(if(number % 5 = 0, NULL, ' +
      'toString(number % 3))) AS lcn, map(toLowCardinality(toString(number % 2)), number) AS mlc, ' +
      "[toLowCardinality('a')] AS alc FROM numbers(250)",
    0,
  ],
  ['null and empty', "SELECT NULL AS n, [] AS e, '' AS s FROM numbers(3)", 1],
  ['no rows', 'SELECT number, toString(number) AS s FROM numbers(10) WHERE number > 100', 0],
]
const dir = `/tmp/benchstream-native-fixtures-${process.pid}`
// Small blocks, so that results span several (the guard reads in blocks of 1,000).
const s = new Session(dir, { connectionArgs: ['--max_block_size=100'] })
const native = async (sql) => {
  const parts = []
  for await (const chunk of s.queryStream(sql, { format: 'Native' })) parts.push(Buffer.from(chunk.raw()))
  return { chunks: parts.map((p) => p.toString('hex')) }
}
const out = {
  producer:
    `chdb ${chdbVersion} (${(await s.queryAsync('SELECT version()', { format: 'TSVRaw' })).text().trim()}), ` +
    `Native format, queryStream chunks`,
  cases: [],
}
for (const [name, sql, k] of cases) {
  const whole = await native(sql)
  const entry = { name, sql, chunks: whole.chunks }
  if (k > 0) Object.assign(entry, { limit: k, limitChunks: (await native(`${sql} LIMIT ${k}`)).chunks })
  out.cases.push(entry)
}
s.cleanup?.()
s.close()
writeFileSync(path.join(root, 'test/fixtures/native/chdb.json'), JSON.stringify(out, null, 1) + '\n')
console.log(`wrote ${out.cases.length} cases`)
