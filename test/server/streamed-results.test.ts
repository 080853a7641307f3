/**
 * Whole results in server mode (CLICKHOUSE_URL), against the ClickHouse server stand-in (npm run test:server): the
 * guard streams the server's HTTP body through to /clickhouse/ and /api/v1/query, and a failure of the server's
 * query after its first MiB (ClickHouse ends such a body in its exception block, after X-ClickHouse-Exception-Tag)
 * comes out as our failure part-way, with the server's error: never its text among the rows, never a short result
 * that looks whole. The limits of a request apply to a server's results as to chDB's.
 */
import assert from 'node:assert/strict'
import http from 'node:http'
import { test } from 'node:test'
import { startServer } from '../../services/server/main.js'
import { serverTestEnv, tierServer } from '../helpers/clickhouse-server.js'

const server = tierServer()

/** 200,000 rows of about 110 bytes; the server's query fails at row 150,000 (16 MB in). */
const FAILS_PART_WAY =
  "SELECT number, repeat('x', 100) AS pad FROM numbers(200000) WHERE throwIf(number = 150000, 'boom at 150000') = 0"

function get(
  url: string,
): Promise<{ status: number; headers: http.IncomingHttpHeaders; body: Buffer; complete: boolean }> {
  return new Promise((resolve, reject) => {
    http
      .get(url, (res) => {
        const parts: Buffer[] = []
        res.on('data', (c: Buffer) => parts.push(c))
        res.on('error', () => undefined)
        res.on('close', () =>
          resolve({
            status: res.statusCode ?? 0,
            headers: res.headers,
            body: Buffer.concat(parts),
            complete: res.complete,
          }),
        )
      })
      .on('error', reject)
  })
}

test(
  "server mode: a server's result streams whole; its failure part-way is our failure part-way, with its error",
  { skip: typeof server === 'string' ? server : false, timeout: 600_000 },
  async (t) => {
    const s = server as Exclude<typeof server, string>
    const te = serverTestEnv(t, s, { API_QUERY_TIMEOUT_S: '60' })
    const svc = await startServer(te.env, { api: true })
    t.after(() => svc.stop())
    const base = svc.apiUrl ?? assert.fail('the API did not start')
    const q = (sql: string, qs = ''): string => `${base}/clickhouse/?${qs}query=${encodeURIComponent(sql)}`

    const whole = await get(q("SELECT number, repeat('x', 100) AS pad FROM numbers(300000) FORMAT TSV"))
    assert.equal(whole.status, 200)
    assert.equal(whole.complete, true)
    const lines = whole.body.toString().trimEnd().split('\n')
    assert.equal(lines.length, 300_000)
    assert.equal(lines.at(-1), `299999\t${'x'.repeat(100)}`)

    // The server's query fails at row 150,000: our answer had started, so it ends in our exception block with the
    // server's error (its code; the message of a throwIf is the user's data, so only its name), and breaks off.
    const failed = await get(q(`${FAILS_PART_WAY} FORMAT TSV`))
    assert.equal(failed.status, 200)
    assert.equal(failed.complete, false, 'no terminating chunk')
    const text = failed.body.toString()
    const at = text.indexOf('\r\n__exception__\r\n')
    assert.ok(at > 1 << 20, `rows came first: ${at} bytes`)
    const tag = String(failed.headers['x-clickhouse-exception-tag'])
    assert.match(text.slice(at), new RegExp(`^\\r\\n__exception__\\r\\n${tag}\\r\\nCode: 395\\. DB::Exception: `))
    assert.equal(text.indexOf('__exception__'), at + 2, "the server's own block is not among the rows")
    const rows = text.slice(0, at).split('\n').slice(0, -1)
    assert.ok(rows.length <= 150_000, `${rows.length} rows`)
    assert.ok(
      rows.every((r, i) => r === `${i}\t${'x'.repeat(100)}`),
      'every row before the failure is whole, in order',
    )
    // In a binary format (Native, as clickhouse-connect asks) the same.
    const native = await get(q(FAILS_PART_WAY, 'default_format=Native&'))
    assert.equal(native.complete, false)
    assert.match(native.body.toString('latin1'), /\r\n__exception__\r\n[a-z0-9]{16}\r\nCode: 395\. /)
    // The JSON API: the body breaks off.
    const api = await fetch(`${base}/api/v1/query`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ sql: FAILS_PART_WAY }),
    })
    await assert.rejects(() => api.text())

    // The request's limits on a server's result: a failure, and a cut where asked, in a text format and one for people.
    const over = await get(q('SELECT number FROM numbers(5000) FORMAT TSV', 'max_result_rows=1000&'))
    assert.equal(over.status, 500)
    assert.equal(over.headers['x-clickhouse-exception-code'], '396')
    const cut = await get(q('SELECT number FROM numbers(5000) FORMAT TSV', 'limit=10&'))
    assert.equal(cut.body.toString(), '0\n1\n2\n3\n4\n5\n6\n7\n8\n9\n')
    const pretty = await get(q('SELECT number FROM numbers(5000) FORMAT PrettyCompact', 'max_result_rows=1000&'))
    assert.notEqual(pretty.status, 200, 'the server counts the rows of a format for people')
    assert.match(pretty.body.toString(), /^Code: \d+\. DB::Exception: /)
  },
)
