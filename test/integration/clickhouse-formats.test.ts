/**
 * The paths the query tools take through /clickhouse/ (issue 24), over HTTP
 * against the real server and embedded engine, without the tools themselves
 * (those are test/clients/clickhouse-clients.test.ts, npm run test:clients):
 *
 * - each client's way of asking: the JDBC driver's (RowBinaryWithNamesAndTypes,
 *   compress=1, and decompress=1 bodies), clickhouse-connect's (Native,
 *   enable_http_compression=1 with Accept-Encoding lz4, Arrow), curl's gzip,
 *   and @clickhouse/client in JSON formats (the real client, a dependency of
 *   the project);
 * - RowBinary as the engine writes it for every column type we serve, cut at
 *   exactly k rows;
 * - the metadata the tools read, limited to Benchstream's database;
 * - the attack corpus of sql-guard.test.ts and the metadata attacks through
 *   each of those paths, with the same side-effect checks (no row written, no
 *   file, no connection, no secret in any answer).
 */
import assert from 'node:assert/strict'
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import http from 'node:http'
import net from 'node:net'
import os from 'node:os'
import path from 'node:path'
import { test } from 'node:test'
import zlib from 'node:zlib'
import { createClient } from '@clickhouse/client'
import { Session } from 'chdb'
import { QUIET, queryRows } from '../../services/adapters/clickhouse/client.js'
import { RowBinaryShape } from '../../services/adapters/clickhouse/row-binary.js'
import { createKafka } from '../../services/adapters/kafka/client.js'
import { readInfraConfig } from '../../services/common/infra-config.js'
import { compressBlocks, decompressBlocks } from '../../services/core/codec/compressed-blocks.js'
import { lz4FrameDecompress } from '../../services/core/codec/lz4.js'
import { startServer } from '../../services/server/main.js'
import { testEnv, waitFor } from '../helpers/env.js'
import { EventProducer } from '../helpers/produce.js'
import { metadataAttacks, SLOW_ATTACKS, sqlAttacks } from '../helpers/sql-attacks.js'
import { sameAsTruth, stored } from '../helpers/stored.js'

const TOKEN = 'formats-token-0123456789'
const MAX_ROWS = 3000

/** Counts every connection and HTTP request made to it. */
async function listener(): Promise<{ http: number; tcp: number; hits: () => number; close: () => void }> {
  let hits = 0
  const h = http.createServer((_req, res) => {
    hits++
    res.end('a,b\n1,2\n')
  })
  const t = net.createServer((s) => {
    hits++
    s.destroy()
  })
  await new Promise<void>((r) => h.listen(0, '127.0.0.1', r))
  await new Promise<void>((r) => t.listen(0, '127.0.0.1', r))
  const port = (s: http.Server | net.Server): number => (s.address() as net.AddressInfo).port
  return { http: port(h), tcp: port(t), hits: () => hits, close: () => (h.close(), t.close()) }
}

/** A client's way of sending a query (with extra URL parameters) and reading the answer back to plain bytes. */
interface Path {
  name: string
  send: (sql: string, qs?: string) => Promise<{ status: number; body: Buffer; headers: Headers }>
}

/** Column types we serve, one query each (values include NULLs, empty arrays, multi-byte text). */
const TYPES: Array<[string, string]> = [
  [
    'numbers',
    'SELECT toUInt8(number) AS a, toInt16(-number) AS b, toUInt64(number * 1e12) AS c, toFloat64(number / 3) AS d, ' +
      'toInt128(number) AS e, toUInt256(number) AS f FROM numbers(50)',
  ],
  [
    'strings',
    "SELECT toString(number) AS s, repeat('é', number % 5) AS u, toFixedString('ab', 2) AS f FROM numbers(50)",
  ],
  [
    'dates',
    "SELECT toDate('2024-01-01') + number AS d, toDate32('1960-01-01') + number AS d32, " +
      "toDateTime('2024-01-01 00:00:00', 'UTC') + number AS t, " +
      "toDateTime64('2024-01-01 00:00:00.123', 3, 'UTC') + number AS t64 FROM numbers(50)",
  ],
  [
    'nullable',
    'SELECT if(number % 3 = 0, NULL, number) AS n, if(number % 2 = 0, NULL, toString(number)) AS s, ' +
      'NULL AS z FROM numbers(50)',
  ],
  [
    'arrays and maps',
    "SELECT range(number % 4) AS a, [toString(number), ''] AS s, map('k', number, 'l', 1) AS m, " +
      '[[number], []] AS aa, [if(number % 2 = 0, NULL, number)] AS an FROM numbers(50)',
  ],
  [
    'tuples',
    "SELECT (number, toString(number)) AS t, tuple(number, [number, 1], 'x') AS t2, " +
      "CAST((number, 'y') AS Tuple(a UInt64, b String)) AS named FROM numbers(50)",
  ],
  [
    'low cardinality',
    'SELECT toLowCardinality(toString(number % 7)) AS l, ' +
      'toLowCardinality(if(number % 2 = 0, NULL, toString(number))) AS ln FROM numbers(50)',
  ],
  [
    'others',
    "SELECT toUUID('61f0c404-5cb3-11e7-907b-a6006ad3dba0') AS u, toIPv4('1.2.3.4') AS ip4, toIPv6('::1') AS ip6, " +
      'toDecimal32(number / 7, 3) AS d32, toDecimal128(number, 10) AS d128, ' +
      "CAST(number % 2 AS Enum8('a' = 0, 'b' = 1)) AS e, number % 2 = 0 AS b FROM numbers(50)",
  ],
  ['geo', 'SELECT (1.5, 2.5)::Point AS p, [(1., 2.), (3., 4.)]::Ring AS r FROM numbers(50)'],
]

test('RowBinary: what the engine writes for each type we serve, cut at exactly k rows', async () => {
  const s = new Session()
  try {
    for (const [name, sql] of TYPES) {
      const whole = Buffer.from((await s.queryAsync(sql, { format: 'RowBinaryWithNamesAndTypes' })).bytes())
      for (const k of [0, 1, 17, 50]) {
        const cut = new RowBinaryShape('RowBinaryWithNamesAndTypes', { maxRows: k, maxBytes: 1 << 30 })
        const got = Buffer.concat(cut.push({ data: whole, rows: undefined }))
        cut.end()
        const limited = Buffer.from(
          (await s.queryAsync(`SELECT * FROM (${sql}) LIMIT ${k}`, { format: 'RowBinaryWithNamesAndTypes' })).bytes(),
        )
        assert.deepEqual(got, limited, `${name}, ${k} rows`)
        assert.equal(cut.stoppedBy, k < 50 ? 'rows' : undefined, `${name}, ${k} rows`)
        // Without types: the same rows after the names; RowBinary: the rows alone.
        const bare = new RowBinaryShape('RowBinary', { maxRows: k, maxBytes: 1 << 30 })
        const rows = Buffer.concat(bare.push({ data: whole, rows: undefined }))
        const plain = Buffer.from(
          (await s.queryAsync(`SELECT * FROM (${sql}) LIMIT ${k}`, { format: 'RowBinary' })).bytes(),
        )
        assert.deepEqual(rows, plain, `${name} as RowBinary, ${k} rows`)
      }
      // Fed a byte at a time, the same.
      const slow = new RowBinaryShape('RowBinaryWithNamesAndTypes', { maxRows: 1e9, maxBytes: 1 << 30 })
      const parts: Buffer[] = []
      for (let i = 0; i < whole.length; i++)
        parts.push(...slow.push({ data: whole.subarray(i, i + 1), rows: undefined }))
      slow.end()
      assert.deepEqual(Buffer.concat(parts), whole, `${name}, byte by byte`)
    }
  } finally {
    s.close()
  }
})

test("/clickhouse: the query tools' formats, compressions and metadata, and every attack through each", async (t) => {
  const te = testEnv({
    API_TOKEN: TOKEN,
    API_MAX_QUERY_ROWS: String(MAX_ROWS),
    API_QUERY_MAX_BYTES: String(2 * 1024 * 1024),
    API_QUERY_TIMEOUT_S: '2',
    API_QUERY_MAX_MEMORY: String(300 * 1024 * 1024),
  })
  t.after(te.cleanup)
  const svc = await startServer(te.env, { api: true })
  t.after(() => svc.stop())
  const base = svc.apiUrl ?? assert.fail('the API did not start')
  const side = await listener()
  t.after(side.close)
  const dir = mkdtempSync(path.join(os.tmpdir(), 'benchstream-formats-'))
  t.after(() => rmSync(dir, { recursive: true, force: true }))
  const secret = path.join(dir, 'secret.txt')
  writeFileSync(secret, 'top-secret-line\n')
  const infra = readInfraConfig(te.env)
  const p = await EventProducer.open(createKafka(infra.kafka, 'formats'), infra.topics.events, 'formats-run')
  t.after(() => p.close())
  await p.send(5000)
  await waitFor('events stored', async () =>
    sameAsTruth(await stored(svc.ch, 'formats-run'), p.truth) ? true : undefined,
  )
  await svc.ch.client.command({ query: 'CREATE DATABASE IF NOT EXISTS other' })
  await svc.ch.client.command({
    query: 'CREATE TABLE IF NOT EXISTS other.secret (s String) ENGINE = MergeTree ORDER BY s',
  })
  await svc.ch.client.insert({ table: 'other.secret', values: [{ s: 'top-secret' }], format: 'JSONEachRow' })
  const rowsIn = async (): Promise<number> =>
    Number(
      (
        await queryRows<{ n: string }>(
          svc.ch,
          'SELECT (SELECT count() FROM benchstream.dead_letters) + (SELECT count() FROM benchstream.run_clients) AS n',
        )
      )[0]!.n,
    )
  const before = await rowsIn()
  const auth = `Basic ${Buffer.from(`tool:${TOKEN}`).toString('base64')}`
  const post = async (qs: string, body: Buffer | string, headers: Record<string, string> = {}) => {
    const res = await fetch(`${base}/clickhouse?${qs}`, {
      method: 'POST',
      headers: { authorization: auth, ...headers },
      body,
    })
    return { status: res.status, headers: res.headers, raw: Buffer.from(await res.arrayBuffer()) }
  }

  // Each client's way of asking, its answer read back to plain bytes.
  const paths: Path[] = [
    {
      name: 'JDBC: RowBinaryWithNamesAndTypes, compress=1, decompress=1',
      send: async (sql, qs = '') => {
        const r = await post(`compress=1&decompress=1${qs}`, compressBlocks(Buffer.from(sql)), {
          'x-clickhouse-format': 'RowBinaryWithNamesAndTypes',
          'x-clickhouse-database': 'benchstream',
        })
        return { ...r, body: r.status === 200 ? decompressBlocks(r.raw, 1 << 30) : r.raw }
      },
    },
    {
      name: 'clickhouse-connect: Native, enable_http_compression=1, lz4',
      send: async (sql, qs = '') => {
        const r = await post(
          `database=benchstream&default_format=Native&client_protocol_version=54405&enable_http_compression=1${qs}`,
          sql,
          {
            'accept-encoding': 'lz4,zstd,br,gzip,deflate',
          },
        )
        if (r.status === 200) assert.equal(r.headers.get('content-encoding'), 'lz4')
        return { ...r, body: r.headers.get('content-encoding') === 'lz4' ? lz4FrameDecompress(r.raw, 1 << 30) : r.raw }
      },
    },
    {
      name: 'clickhouse-connect query_arrow: Arrow, gzip',
      send: async (sql, qs = '') => {
        const r = await post(`database=benchstream&default_format=Arrow&enable_http_compression=1${qs}`, sql, {
          'accept-encoding': 'gzip',
        })
        // fetch has taken the gzip off already (the codec itself: test/unit/compression-codecs.test.ts).
        if (r.status === 200) assert.equal(r.headers.get('content-encoding'), 'gzip')
        return { ...r, body: r.raw }
      },
    },
    {
      name: '@clickhouse/client: JSON, gzip request body',
      send: async (sql, qs = '') => {
        const r = await post(`database=benchstream&default_format=JSON${qs}`, zlib.gzipSync(sql), {
          'content-encoding': 'gzip',
        })
        return { ...r, body: r.raw }
      },
    },
  ]

  await t.test('every attack is refused through every path, with no side effect', async () => {
    const failures: string[] = []
    const attacks = [
      ...sqlAttacks({ dir, secret, H: `http://127.0.0.1:${side.http}`, T: `127.0.0.1:${side.tcp}` }),
      ...metadataAttacks('benchstream_meta'),
    ]
    for (const [i, path_] of paths.entries()) {
      for (const [name, sql, expected] of attacks) {
        // The slow ones (stopped by the engine's time limit) once, not on every path.
        if (i > 0 && SLOW_ATTACKS.has(name)) continue
        const hitsBefore = side.hits()
        const r = await path_.send(sql)
        const text = r.body.toString('latin1')
        const where = `${path_.name}: ${name}`
        if (r.status !== 200 && !/^Code: \d+\. DB::Exception: /.test(text))
          failures.push(`${where}: an error not in ClickHouse's form: ${text.slice(0, 200)}`)
        // Native is one of the formats here: the corpus's "FORMAT not allowed" (Native) is allowed.
        const want = name === 'FORMAT not allowed' ? 'ok' : expected
        // A small result comes whole before the answer starts: the summary has its rows.
        const got =
          r.status !== 200
            ? 'refused'
            : want === 'empty' && r.headers.get('x-clickhouse-summary')?.includes('"result_rows":"0"')
              ? 'empty'
              : 'ok'
        const wanted = want.startsWith('BS_ERR_') ? 'refused' : want
        if (got !== wanted)
          failures.push(`${where}: expected ${wanted}, got HTTP ${r.status} ${got} ${text.slice(0, 160)}`)
        if (text.includes('top-secret')) failures.push(`${where}: the answer holds the secret`)
        if (side.hits() !== hitsBefore) failures.push(`${where}: made ${side.hits() - hitsBefore} connection(s)`)
      }
    }
    assert.deepEqual(failures, [])
    assert.equal(await rowsIn(), before, 'no row was written')
    assert.ok(!existsSync(path.join(dir, 'outfile.txt')) && !existsSync(path.join(dir, 'written.csv')))
    assert.equal((await fetch(`${base}/healthz`)).status, 200)
  })

  await t.test(
    'the row limit fails every path; a cut where asked is whole rows, exactly k where rows are walked',
    async () => {
      const sql = `SELECT number, toString(number) AS s FROM numbers(${MAX_ROWS * 3})`
      for (const path_ of paths) {
        const r = await path_.send(sql)
        assert.equal(r.status, 500, path_.name)
        assert.equal(r.headers.get('x-clickhouse-exception-code'), '396', path_.name)
        assert.match(r.body.toString(), /Limit for result exceeded, max rows: 3000: .*\(TOO_MANY_ROWS_OR_BYTES\)/)
      }
      for (const qs of ['&limit=1234', '&max_result_rows=1234&result_overflow_mode=break']) {
        for (const path_ of paths) {
          const r = await path_.send(sql, qs)
          assert.equal(r.status, 200, `${path_.name} ${qs}`)
          const summary = JSON.parse(r.headers.get('x-clickhouse-summary') ?? '{}') as Record<string, string>
          assert.equal(summary.benchstream_truncated, 'true', `${path_.name} ${qs}`)
          // Arrow keeps whole record batches of 1,000 rows.
          assert.equal(summary.result_rows, path_.name.includes('Arrow') ? '1000' : '1234', `${path_.name} ${qs}`)
        }
        const json = JSON.parse((await paths[3]!.send(sql, qs)).body.toString()) as { rows: number; data: unknown[] }
        assert.equal(json.rows, 1234)
        assert.deepEqual(json.data.at(-1), { number: 1233, s: '1233' })
      }
    },
  )

  await t.test(
    "metadata: system.* the tools read, Benchstream's database only, and a curated system.settings",
    async () => {
      const q = async (sql: string): Promise<Array<Record<string, unknown>>> => {
        const r = await post('database=benchstream&default_format=JSONEachRow', sql)
        assert.equal(r.status, 200, `${sql}: ${r.raw.toString()}`)
        return r.raw
          .toString()
          .split('\n')
          .filter((l) => l !== '')
          .map((l) => JSON.parse(l) as Record<string, unknown>)
      }
      const tables = await q('SELECT DISTINCT database FROM system.tables')
      assert.deepEqual(tables, [{ database: 'benchstream' }])
      assert.ok((await q("SELECT name FROM system.tables WHERE name = 'op_windows'")).length === 1)
      assert.deepEqual(await q('SELECT name FROM system.databases'), [{ name: 'benchstream' }])
      assert.deepEqual(await q('SELECT DISTINCT database FROM system.columns'), [{ database: 'benchstream' }])
      const settings = await q('SELECT name, value, readonly FROM system.settings LIMIT 10000')
      const byName = new Map(settings.map((s) => [s.name, s]))
      assert.deepEqual(byName.get('readonly'), { name: 'readonly', value: '1', readonly: 1 })
      assert.equal(byName.get('max_execution_time')?.value, '2')
      assert.equal(byName.get('enable_http_compression')?.readonly, 0, 'clients may ask for compression')
      assert.ok(settings.length < 40, `a curated list: ${settings.length} settings`)
      assert.ok((await q("SELECT name FROM system.functions WHERE name = 'version'")).length === 1)
      assert.ok((await q("SELECT name FROM system.data_type_families WHERE name = 'UInt64'")).length === 1)
      // The same answers on /api/v1/query: one guard.
      const api = await fetch(`${base}/api/v1/query`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: `Bearer ${TOKEN}` },
        body: JSON.stringify({ sql: 'SELECT name FROM system.databases' }),
      })
      assert.deepEqual(((await api.json()) as { rows: unknown }).rows, [{ name: 'benchstream' }])
    },
  )

  await t.test('@clickhouse/client in JSON formats, with compression both ways', async () => {
    const client = createClient({
      url: base,
      pathname: '/clickhouse',
      username: 'tool',
      password: TOKEN,
      database: 'benchstream',
      compression: { request: true, response: true },
      log: QUIET,
    })
    t.after(() => client.close())
    const expected = Object.entries(p.truth.byOp)
      .map(([op, n]) => ({ op, n: String(n) }))
      .sort((a, b) => a.op.localeCompare(b.op))
    const sql =
      "SELECT op, toString(sum(count)) AS n FROM op_windows WHERE run_id = 'formats-run' GROUP BY op ORDER BY op"
    const json = await (await client.query({ query: sql, format: 'JSON' })).json<{ op: string; n: string }>()
    assert.deepEqual(json.data, expected)
    assert.equal(json.rows, expected.length)
    assert.deepEqual(await (await client.query({ query: sql, format: 'JSONEachRow' })).json(), expected)
    const compact = await (await client.query({ query: sql, format: 'JSONCompactEachRowWithNamesAndTypes' })).json()
    assert.deepEqual(compact, [['op', 'n'], ['LowCardinality(String)', 'String'], ...expected.map((e) => [e.op, e.n])])
    const strings = await (await client.query({ query: sql, format: 'JSONStrings' })).json<{ op: string }>()
    assert.equal(strings.data.length, expected.length)
    // Past the row limit: an error, not the rows that fit; at the limit, every row.
    await assert.rejects(
      async () => (await client.query({ query: 'SELECT number FROM numbers(10000)', format: 'JSONEachRow' })).json(),
      (err: { type?: string }) => err.type === 'TOO_MANY_ROWS_OR_BYTES',
    )
    const at = await client.query({ query: `SELECT number FROM numbers(${MAX_ROWS})`, format: 'JSONEachRow' })
    assert.equal((await at.json()).length, MAX_ROWS)
    // Refusals reach it as ClickHouse errors.
    await assert.rejects(client.query({ query: 'SELECT * FROM other.secret', format: 'JSON' }), /ACCESS_DENIED|outside/)
    await assert.rejects(client.command({ query: 'DROP TABLE op_windows' }), /READONLY|not allowed|only one SELECT/)
  })
})
