/**
 * The ClickHouse HTTP dialect of the API (services/api/clickhouse-http.ts),
 * with a recording fake behind it: what reaches the guard from each form of
 * request the plugin and curl send, the credential forms, and every error in
 * ClickHouse's form with ClickHouse's status. The real guard, engine and
 * clickhouse-go are in test/integration/clickhouse-http.test.ts.
 */
import assert from 'node:assert/strict'
import { test } from 'node:test'
import { build } from '../../services/api/app.js'
import { readApiConfig } from '../../services/api/config.js'
import zlib from 'node:zlib'
import { compressBlocks, decompressBlocks } from '../../services/core/codec/compressed-blocks.js'
import { decodeBody, encodeBody } from '../../services/core/codec/http-encoding.js'
import { BenchstreamError } from '../../services/core/errors.js'
import type { AdHocOptions, AdHocQueries, AdHocStream } from '../../services/core/ports/ad-hoc-queries.js'
import type { ReadModel } from '../../services/core/ports/read-model.js'
import { fakeStream } from '../helpers/ad-hoc-fake.js'

const TOKEN = 'test-token-0123456789'
const calls: Array<{ sql: string; opts: AdHocOptions | undefined }> = []
/** The query echoed back (TabSeparated), or three bytes of "Native". */
const echo = async (sql: string, opts?: AdHocOptions): Promise<AdHocStream> =>
  fakeStream({
    format: opts?.format ?? 'TabSeparated',
    pieces: [opts?.format === 'Native' ? Uint8Array.from([1, 2, 3]) : `${sql}\n`],
    rows: 1,
  })
let answer: (sql: string, opts?: AdHocOptions) => Promise<AdHocStream> = echo
const adHoc: AdHocQueries = {
  stream: async (sql, opts) => {
    calls.push({ sql, opts })
    return answer(sql, opts)
  },
  close: async () => undefined,
}

function app(env: Record<string, string> = {}) {
  return build(readApiConfig({ API_PORT: '0', ...env }), { readModel: {} as ReadModel, adHoc, database: 'benchstream' })
}
const basic = (user: string, password: string): string =>
  `Basic ${Buffer.from(`${user}:${password}`).toString('base64')}`
const local = { host: '127.0.0.1:8080' }

/** A ClickHouse error answer: status, X-ClickHouse-Exception-Code and the one-line text agree. */
function chError(
  res: { statusCode: number; headers: Record<string, unknown>; body: string },
  status: number,
  code: number,
  name: string,
): string {
  assert.equal(res.statusCode, status, res.body)
  assert.equal(res.headers['x-clickhouse-exception-code'], String(code))
  assert.match(res.body, new RegExp(`^Code: ${code}\\. DB::Exception: .+\\. \\(${name}\\)\\n$`))
  return res.body
}

test('the query from the body, from ?query=, or both (param, newline, body); TabSeparated by default', async () => {
  const a = app()
  calls.length = 0
  const get = await a.inject({ method: 'GET', url: '/clickhouse/?query=SELECT%201', headers: local })
  assert.equal(get.statusCode, 200)
  assert.equal(get.body, 'SELECT 1\n')
  assert.match(String(get.headers['content-type']), /^text\/tab-separated-values/)
  assert.equal(get.headers['x-clickhouse-format'], 'TabSeparated')
  // curl --data-binary sends form-urlencoded; Go sends no content type: the body is the query either way.
  await a.inject({
    method: 'POST',
    url: '/clickhouse',
    headers: { ...local, 'content-type': 'application/x-www-form-urlencoded' },
    payload: 'SELECT 2',
  })
  await a.inject({ method: 'POST', url: '/clickhouse/', headers: local, payload: Buffer.from('SELECT 3') })
  await a.inject({ method: 'POST', url: '/clickhouse/?query=SELECT', headers: local, payload: '4' })
  assert.deepEqual(
    calls.map((c) => c.sql),
    ['SELECT 1', 'SELECT 2', 'SELECT 3', 'SELECT\n4'],
  )
  assert.deepEqual(
    calls.map((c) => c.opts?.format),
    ['TabSeparated', 'TabSeparated', 'TabSeparated', 'TabSeparated'],
  )
  assert.equal((await a.inject({ method: 'GET', url: '/clickhouse/ping', headers: local })).body, 'Ok.\n')
})

test(
  'what clickhouse-go sends: default_format=Native, client_protocol_version, ' + 'database, max_execution_time, limit',
  async () => {
    const a = app()
    calls.length = 0
    const res = await a.inject({
      method: 'POST',
      url:
        '/clickhouse?database=benchstream&default_format=Native&client_protocol_version=54460' +
        '&max_execution_time=64&limit=500',
      headers: local,
      payload: 'SELECT 1',
    })
    assert.equal(res.statusCode, 200)
    assert.equal(res.headers['content-type'], 'application/octet-stream')
    assert.deepEqual([...res.rawPayload], [1, 2, 3])
    // limit: a LIMIT on the result, as ClickHouse's `limit` setting is: a cut the client asked for.
    assert.deepEqual(calls[0]!.opts, { format: 'Native', nativeRevision: 54460, cut: { rows: 500 }, fail: {} })
    // Without client_protocol_version, revision 0 (ClickHouse's HTTP default).
    await a.inject({ method: 'POST', url: '/clickhouse/?default_format=Native', headers: local, payload: 'SELECT 1' })
    assert.equal(calls[1]!.opts?.nativeRevision, 0)
  },
)

test('result limits as ClickHouse reads them: limit and break cut, max_result_* fail; HEAD runs nothing', async () => {
  const a = app()
  const opts = async (qs: string): Promise<AdHocOptions | undefined> => {
    calls.length = 0
    const res = await a.inject({ method: 'POST', url: `/clickhouse/?${qs}`, headers: local, payload: 'SELECT 1' })
    assert.equal(res.statusCode, 200, res.body)
    return calls[0]!.opts
  }
  const limits = (o: AdHocOptions | undefined) => ({ cut: o?.cut, fail: o?.fail })
  assert.deepEqual(limits(await opts('')), { cut: {}, fail: {} })
  assert.deepEqual(limits(await opts('limit=10')), { cut: { rows: 10 }, fail: {} })
  assert.deepEqual(limits(await opts('max_result_rows=7')), { cut: {}, fail: { rows: 7 } })
  assert.deepEqual(limits(await opts('max_result_rows=7&max_result_bytes=900&result_overflow_mode=throw')), {
    cut: {},
    fail: { rows: 7, bytes: 900 },
  })
  assert.deepEqual(limits(await opts('max_result_rows=7&max_result_bytes=900&result_overflow_mode=break&limit=5')), {
    cut: { rows: 5, bytes: 900 },
    fail: {},
  })
  // 0 is ClickHouse's "no limit".
  assert.deepEqual(limits(await opts('max_result_rows=0&limit=0')), { cut: {}, fail: {} })
  chError(
    await a.inject({
      method: 'POST',
      url: '/clickhouse/?result_overflow_mode=any',
      headers: local,
      payload: 'SELECT 1',
    }),
    400,
    36,
    'BAD_ARGUMENTS',
  )
  // The answer says what it is streamed in, and carries the tag a failure part-way would be marked with.
  const res = await a.inject({ method: 'GET', url: '/clickhouse/?query=SELECT%201', headers: local })
  assert.match(String(res.headers['x-clickhouse-exception-tag']), /^[a-z0-9]{16}$/)
  calls.length = 0
  const head = await a.inject({ method: 'HEAD', url: '/clickhouse/?query=SELECT%201', headers: local })
  assert.equal(head.statusCode, 200)
  assert.equal(calls.length, 0, 'a HEAD runs no query')
})

test(
  'the token as basic-auth password, X-ClickHouse-Key or bearer; missing 401/194, wrong 403/516; ' +
    'the JSON API keeps bearer only',
  async () => {
    const a = app({ API_TOKEN: TOKEN })
    const url = '/clickhouse/?query=SELECT%201'
    chError(await a.inject({ method: 'GET', url, headers: local }), 401, 194, 'REQUIRED_PASSWORD')
    chError(
      await a.inject({
        method: 'GET',
        url,
        headers: { ...local, authorization: basic('default', 'nope-nope-nope-nope') },
      }),
      403,
      516,
      'AUTHENTICATION_FAILED',
    )
    for (const headers of [
      { authorization: basic('benchstream', TOKEN) },
      { authorization: basic('', TOKEN) },
      { 'x-clickhouse-user': 'grafana', 'x-clickhouse-key': TOKEN },
      { authorization: `Bearer ${TOKEN}` },
    ]) {
      assert.equal(
        (await a.inject({ method: 'GET', url, headers: { ...local, ...headers } })).statusCode,
        200,
        JSON.stringify(headers),
      )
    }
    const json = await a.inject({
      method: 'GET',
      url: '/api/v1/runs',
      headers: { ...local, authorization: basic('x', TOKEN) },
    })
    assert.equal(json.statusCode, 401)
    assert.equal(JSON.parse(json.body).code, 'BS_ERR_UNAUTHORIZED')
    // The Host check (DNS rebinding) applies here too.
    chError(
      await a.inject({ method: 'GET', url, headers: { host: 'evil.example:8080', authorization: basic('x', TOKEN) } }),
      403,
      497,
      'ACCESS_DENIED',
    )
    // A token in the URL is refused before anything else (it would end up in logs).
    chError(
      await a.inject({
        method: 'GET',
        url: `${url}&password=${TOKEN}`,
        headers: { ...local, authorization: basic('x', TOKEN) },
      }),
      400,
      36,
      'BAD_ARGUMENTS',
    )
  },
)

test("guard errors in ClickHouse form with ClickHouse's status; busy is 429", async () => {
  const a = app()
  const post = (payload = 'SELECT 1') => a.inject({ method: 'POST', url: '/clickhouse/', headers: local, payload })
  const cases: Array<[Error, number, number, string]> = [
    [
      new BenchstreamError(
        'BS_ERR_QUERY_REFUSED',
        'table system.tables is outside the benchstream database (rule: database)',
      ),
      403,
      497,
      'ACCESS_DENIED',
    ],
    [
      new BenchstreamError(
        'BS_ERR_QUERY_REFUSED',
        'only one SELECT is allowed; this is a InsertQuery (rule: select-only)',
      ),
      500,
      164,
      'READONLY',
    ],
    [
      new BenchstreamError('BS_ERR_QUERY_REFUSED', 'the query is 300000 bytes (rule: size)'),
      413,
      229,
      'QUERY_IS_TOO_LARGE',
    ],
    [
      new BenchstreamError('BS_ERR_QUERY_REFUSED', 'FORMAT Parquet is not allowed (rule: format)'),
      404,
      73,
      'UNKNOWN_FORMAT',
    ],
    [
      new BenchstreamError('BS_ERR_QUERY_FAILED', 'query failed: Syntax error: failed at position 7', {
        cause: Object.assign(new Error('Code: 62. DB::Exception: Syntax error. (SYNTAX_ERROR)'), {
          clickhouseCode: 62,
        }),
      }),
      400,
      62,
      'SYNTAX_ERROR',
    ],
    [
      new BenchstreamError('BS_ERR_QUERY_FAILED', 'query failed: Unknown table expression identifier', {
        cause: Object.assign(new Error('x'), { code: '60', type: 'UNKNOWN_TABLE' }),
      }),
      404,
      60,
      'UNKNOWN_TABLE',
    ],
    [
      new BenchstreamError('BS_ERR_QUERY_FAILED', 'the query ran longer than 10 s and was cancelled'),
      408,
      159,
      'TIMEOUT_EXCEEDED',
    ],
    [
      new BenchstreamError('BS_ERR_QUERY_FAILED', 'query failed: columns of type JSON cannot be sent', {
        cause: Object.assign(new Error('x'), { name: 'NativeFormatError' }),
      }),
      501,
      48,
      'NOT_IMPLEMENTED',
    ],
    [
      new BenchstreamError('BS_ERR_BUSY', '1 ad hoc query runs and 4 wait already; try again in a moment'),
      429,
      202,
      'TOO_MANY_SIMULTANEOUS_QUERIES',
    ],
    [new Error('something internal'), 500, 1002, 'UNKNOWN_EXCEPTION'],
  ]
  for (const [err, status, code, name] of cases) {
    answer = async () => {
      throw err
    }
    const body = chError(await post(), status, code, name)
    if (err instanceof BenchstreamError) assert.ok(body.includes(err.message.replace(/\.$/, '')), body)
    else assert.doesNotMatch(body, /something internal/, 'internal details stay in the log')
  }
})

test('parameters: settings it cannot honour are READONLY, query parameters 501, other databases 404', async () => {
  const a = app()
  const req = (qs: string, payload = 'SELECT 1') =>
    a.inject({ method: 'POST', url: `/clickhouse/?${qs}`, headers: local, payload })
  assert.match(
    chError(await req('max_memory_usage=1'), 500, 164, 'READONLY'),
    /Cannot modify 'max_memory_usage' setting in readonly mode/,
  )
  chError(await req('param_x=1'), 501, 48, 'NOT_IMPLEMENTED')
  chError(await req('database=system'), 404, 81, 'UNKNOWN_DATABASE')
  chError(await req('client_protocol_version=abc'), 400, 36, 'BAD_ARGUMENTS')
  chError(await req('limit=-1'), 400, 36, 'BAD_ARGUMENTS')
  chError(await req('', '   '), 400, 62, 'SYNTAX_ERROR')
  chError(
    await a.inject({ method: 'POST', url: '/clickhouse/', headers: local, payload: 'x'.repeat(2 * 1024 * 1024) }),
    413,
    229,
    'QUERY_IS_TOO_LARGE',
  )
  assert.equal((await a.inject({ method: 'GET', url: '/clickhouse/nothing', headers: local })).statusCode, 404)
})

test('hostile requests get a ClickHouse error or an answer, never a crash', async () => {
  answer = async (sql) => {
    throw new BenchstreamError('BS_ERR_QUERY_FAILED', `query failed: Syntax error in ${sql.slice(0, 20)}`, {
      cause: Object.assign(new Error('Code: 62. DB::Exception: x (SYNTAX_ERROR)'), { clickhouseCode: 62 }),
    })
  }
  const a = app({ API_TOKEN: TOKEN })
  let seed = 12345
  const rand = (n: number): number => {
    seed = (seed * 1103515245 + 12345) % 2 ** 31
    return seed % n
  }
  const junk = (n: number): Buffer => Buffer.from(Array.from({ length: n }, () => rand(256)))
  for (let i = 0; i < 200; i++) {
    const qs = encodeURIComponent(junk(rand(40)).toString('latin1'))
    const headers: Record<string, string> = {
      ...local,
      authorization: rand(4) === 0 ? `Basic ${junk(12).toString('base64')}` : basic('u', TOKEN),
    }
    if (rand(3) === 0)
      headers['content-type'] = [
        'application/json',
        'text/plain',
        'multipart/form-data; boundary=x',
        'application/octet-stream',
      ][rand(4)]!
    const res = await a.inject({
      method: rand(2) === 0 ? 'GET' : 'POST',
      url: `/clickhouse/?${rand(2) === 0 ? 'query' : qs.slice(0, 10) || 'q'}=${qs}`,
      headers,
      payload: junk(rand(300)),
    })
    assert.ok(res.statusCode === 200 || (res.statusCode >= 400 && res.statusCode < 600), `${res.statusCode}`)
    if (res.statusCode !== 200) assert.match(res.body, /^Code: \d+\. DB::Exception: /, res.body)
    assert.notEqual(res.headers['x-clickhouse-exception-code'], '1002', res.body)
  }
  assert.equal(
    (
      await a.inject({
        method: 'GET',
        url: '/clickhouse/ping',
        headers: { ...local, authorization: basic('u', TOKEN) },
      })
    ).body,
    'Ok.\n',
  )
})

test("compression: compress=1, decompress=1 (ClickHouse's blocks), Content-Encoding both ways, bad input", async () => {
  answer = echo
  const a = app()
  const sql = 'SELECT 1'
  const blocks = await a.inject({ method: 'POST', url: '/clickhouse/?compress=1', headers: local, payload: sql })
  assert.equal(blocks.statusCode, 200)
  assert.equal(decompressBlocks(blocks.rawPayload, 1000).toString(), `${sql}\n`)
  const inBlocks = await a.inject({
    method: 'POST',
    url: '/clickhouse/?decompress=1',
    headers: local,
    payload: compressBlocks(Buffer.from(sql)),
  })
  assert.equal(inBlocks.body, `${sql}\n`)
  for (const enc of ['lz4', 'gzip', 'deflate', 'br'] as const) {
    const r = await a.inject({
      method: 'POST',
      url: '/clickhouse/',
      headers: { ...local, 'accept-encoding': enc, 'content-encoding': enc },
      payload: encodeBody(enc, Buffer.from(sql)),
    })
    assert.equal(r.headers['content-encoding'], enc)
    assert.equal(decodeBody(enc, r.rawPayload, 1000).toString(), `${sql}\n`, enc)
  }
  const off = await a.inject({
    method: 'POST',
    url: '/clickhouse/?enable_http_compression=0',
    headers: { ...local, 'accept-encoding': 'gzip' },
    payload: sql,
  })
  assert.equal(off.headers['content-encoding'], undefined)
  chError(
    await a.inject({
      method: 'POST',
      url: '/clickhouse/?decompress=1',
      headers: local,
      payload: 'not blocks at all, no',
    }),
    500,
    271,
    'CANNOT_DECOMPRESS',
  )
  chError(
    await a.inject({
      method: 'POST',
      url: '/clickhouse/',
      headers: { ...local, 'content-encoding': 'compress' },
      payload: 'x',
    }),
    500,
    432,
    'UNKNOWN_COMPRESSION_METHOD',
  )
  // A gzip bomb stops at the decoded-size limit.
  chError(
    await a.inject({
      method: 'POST',
      url: '/clickhouse/',
      headers: { ...local, 'content-encoding': 'gzip' },
      payload: zlib.gzipSync(Buffer.alloc(4 << 20)),
    }),
    500,
    271,
    'CANNOT_DECOMPRESS',
  )
})
