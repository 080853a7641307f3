/**
 * Whole results (issue 31): a 50,000-event run through Kafka, the processor
 * and the embedded engine, read back through every way the project ships,
 * with no cap on results but a server limit far above the run
 * (API_MAX_QUERY_ROWS=100000, so that passing it is quick to test):
 *
 * - POST /api/v1/query and /clickhouse/ return every row, streamed;
 * - `benchstream sql "... FORMAT TSV"` into a pipe prints 20,000 of 20,000
 *   lines; --max-rows cuts where asked and says so on stderr;
 * - a limit that is hit part-way (API_MAX_QUERY_ROWS, after more than the
 *   first MiB was sent with status 200) fails every reader: @clickhouse/client
 *   raises the server's error (ClickHouse 25.11's exception block), fetch and
 *   curl see the body end without its terminating chunk, the CLI exits 1 with
 *   the error; a limit hit in the first MiB is an error status. (The time
 *   limit fails a result the same way; a test of it would depend on the
 *   machine's speed.)
 * - `benchstream export` writes CSV, Parquet and JSON lines files whose rows
 *   are the run's (read back with the engine's own readers; every format, and
 *   pandas and DuckDB reading them, in test/clients/).
 *
 * The query tools themselves (JDBC, clickhouse-connect) are
 * test/clients/clickhouse-clients.test.ts.
 */
import assert from 'node:assert/strict'
import { spawn, spawnSync } from 'node:child_process'
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import http from 'node:http'
import os from 'node:os'
import path from 'node:path'
import { test } from 'node:test'
import { createClient } from '@clickhouse/client'
import { QUIET, queryRows } from '../../services/adapters/clickhouse/client.js'
import { createKafka } from '../../services/adapters/kafka/client.js'
import { readInfraConfig } from '../../services/common/infra-config.js'
import { repoRoot } from '../../services/common/repo-root.js'
import { startServer } from '../../services/server/main.js'
import { testEnv, waitFor } from '../helpers/env.js'
import { EventProducer } from '../helpers/produce.js'
import { sameAsTruth, stored } from '../helpers/stored.js'

const BIN = path.join(repoRoot(), 'bin', 'benchstream.js')
const RUN = 'whole-run'
const EVENTS = 50_000
/** The server's row limit here: twice the run. */
const MAX_ROWS = 100_000
/** Passes MAX_ROWS after about 2.7 MB (more than the first MiB, which goes out with status 200). */
const BIG = "SELECT number, repeat('x', 20) AS pad FROM numbers(200000)"

interface Ran {
  code: number | null
  stdout: string
  stderr: string
}

/** The CLI with these arguments; or, given `command`, that program with them (a shell, curl). */
function cli(env: Record<string, string>, args: string[], command: string = process.execPath): Promise<Ran> {
  return new Promise((resolve) => {
    const child = spawn(command, command === process.execPath ? [BIN, ...args] : args, {
      env: { ...process.env, ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    })
    let stdout = ''
    let stderr = ''
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()))
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()))
    child.on('close', (code) => resolve({ code, stdout, stderr }))
  })
}

/** A raw HTTP GET: status, headers, the bytes that came, and whether the body ended properly. */
function rawGet(
  url: string,
): Promise<{ status: number; headers: http.IncomingHttpHeaders; body: Buffer; complete: boolean }> {
  return new Promise((resolve, reject) => {
    http
      .get(url, (res) => {
        const parts: Buffer[] = []
        let done = false
        const finish = (complete: boolean): void => {
          if (done) return
          done = true
          resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(parts), complete })
        }
        res.on('data', (c: Buffer) => parts.push(c))
        res.on('end', () => finish(true))
        res.on('aborted', () => finish(false))
        res.on('error', () => finish(false))
        res.on('close', () => finish(res.complete))
      })
      .on('error', reject)
  })
}

test('a 50,000-event run whole through the API, /clickhouse, the CLI, export; limits fail every reader', async (t) => {
  const te = testEnv({ API_MAX_QUERY_ROWS: String(MAX_ROWS) })
  t.after(te.cleanup)
  const svc = await startServer(te.env, { api: true })
  t.after(() => svc.stop())
  const base = svc.apiUrl ?? assert.fail('the API did not start')
  const env = { ...te.env, BENCHSTREAM_API_URL: base }
  const infra = readInfraConfig(te.env)
  const p = await EventProducer.open(createKafka(infra.kafka, 'whole'), infra.topics.events, RUN)
  t.after(() => p.close())
  await p.send(EVENTS)
  await waitFor('events stored', async () => (sameAsTruth(await stored(svc.ch, RUN), p.truth) ? true : undefined))
  const [truth] = await queryRows<{ n: string; lat: string }>(
    svc.ch,
    `SELECT count() AS n, sum(latency_us) AS lat FROM benchstream.ops WHERE run_id = '${RUN}'`,
  )
  assert.equal(Number(truth!.n), EVENTS)
  const all = `SELECT * FROM ops WHERE run_id = '${RUN}'`

  await t.test('POST /api/v1/query: every row as JSON, the counts after them', async () => {
    const res = await fetch(`${base}/api/v1/query`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ sql: all }),
    })
    assert.equal(res.status, 200)
    const body = (await res.json()) as { rows: Array<{ latency_us: number }>; rowCount: number; truncated: boolean }
    assert.equal(body.rows.length, EVENTS)
    assert.equal(body.rowCount, EVENTS)
    assert.equal(body.truncated, false)
    assert.equal(
      body.rows.reduce((a, r) => a + r.latency_us, 0),
      Number(truth!.lat),
    )
    // maxRows: the cut asked for, said in the body.
    const cut = (await (
      await fetch(`${base}/api/v1/query`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ sql: all, maxRows: 1234 }),
      })
    ).json()) as { rows: unknown[]; truncated: boolean; limits: { cut: { rows: number } } }
    assert.equal(cut.rows.length, 1234)
    assert.equal(cut.truncated, true)
    assert.deepEqual(cut.limits.cut, { rows: 1234 })
  })

  await t.test('/clickhouse/: every row in TSV (curl) and in JSONEachRow (@clickhouse/client)', async () => {
    const tsv = await rawGet(`${base}/clickhouse/?query=${encodeURIComponent(`${all} FORMAT TSV`)}`)
    assert.equal(tsv.status, 200)
    assert.ok(tsv.complete)
    assert.match(String(tsv.headers['x-clickhouse-exception-tag']), /^[a-z0-9]{16}$/)
    assert.equal(tsv.body.toString().trimEnd().split('\n').length, EVENTS)
    const client = createClient({ url: base, pathname: '/clickhouse', log: QUIET })
    t.after(() => client.close())
    const rows = await (await client.query({ query: all, format: 'JSONEachRow' })).json<{ latency_us: number }>()
    assert.equal(rows.length, EVENTS)
  })

  await t.test('benchstream sql into a pipe: 20,000 of 20,000 lines; --max-rows cuts and says so', async () => {
    const sql = `SELECT op, start, latency_us FROM ops WHERE run_id = '${RUN}' ORDER BY start LIMIT 20000 FORMAT TSV`
    const piped = await cli(env, ['-o', 'pipefail', '-c', `node ${BIN} sql "${sql}" | wc -l`], 'bash')
    assert.equal(piped.code, 0, piped.stderr)
    assert.equal(piped.stdout.trim(), '20000')
    const cut = await cli(env, ['sql', '--max-rows', '500', all])
    assert.equal(cut.code, 0, cut.stderr)
    assert.equal(cut.stdout.trimEnd().split('\n').length, 500)
    assert.equal(cut.stderr, 'benchstream: the result was cut at 500 rows, as --max-rows asked\n')
    // A cut that was not needed is not reported.
    const whole = await cli(env, ['sql', '--max-rows', '60000', all])
    assert.equal(whole.code, 0, whole.stderr)
    assert.equal(whole.stderr, '')
    assert.equal(whole.stdout.trimEnd().split('\n').length, EVENTS)
  })

  await t.test('a limit hit part-way fails every reader: @clickhouse/client, fetch, curl, the CLI', async () => {
    const client = createClient({ url: base, pathname: '/clickhouse', log: QUIET, request_timeout: 30_000 })
    t.after(() => client.close())
    // JSONEachRow: the client reads ClickHouse's exception block and raises the server's error.
    await assert.rejects(
      async () => (await client.query({ query: BIG, format: 'JSONEachRow' })).json(),
      (err: { code?: string; type?: string; message: string }) =>
        err.code === '396' &&
        err.type === 'TOO_MANY_ROWS_OR_BYTES' &&
        err.message.startsWith('Limit for result exceeded, max rows: 100000: '),
    )
    // TabSeparated text: the body ends without its terminating chunk.
    await assert.rejects(async () => (await client.query({ query: BIG, format: 'TabSeparated' })).text())
    const raw = await rawGet(`${base}/clickhouse/?query=${encodeURIComponent(BIG)}`)
    assert.equal(raw.status, 200, 'the status went out before the limit was hit')
    assert.equal(raw.complete, false, 'the body never ends')
    assert.ok(raw.body.length > 1 << 20, `${raw.body.length} bytes came first`)
    const tag = String(raw.headers['x-clickhouse-exception-tag'])
    const text = raw.body.toString('latin1')
    const block = new RegExp(
      `\\r\\n__exception__\\r\\n${tag}\\r\\n(Code: 396\\. DB::Exception: Limit for result exceeded, max rows: ` +
        `${MAX_ROWS}[^\\n]*API_MAX_QUERY_ROWS[^\\n]*\\(TOO_MANY_ROWS_OR_BYTES\\))\\n(\\d+) ${tag}` +
        `\\r\\n__exception__\\r\\n$`,
    )
    const m = block.exec(text) ?? assert.fail(`no exception block at the end: ${JSON.stringify(text.slice(-400))}`)
    assert.equal(
      Number(m[2]),
      Buffer.byteLength(m[1]!) + 1,
      'the length ClickHouse writes: the message and its newline',
    )
    // Exactly the rows up to the limit came before it: whole lines, none after.
    assert.equal(text.slice(0, text.indexOf('\r\n__exception__')).split('\n').length - 1, MAX_ROWS)
    if (spawnSync('curl', ['--version']).status === 0) {
      // 18: "transfer closed with outstanding read data remaining".
      const curl = await cli(
        {},
        ['-sS', '--fail', '-o', '/dev/null', `${base}/clickhouse/?query=${encodeURIComponent(BIG)}`],
        'curl',
      )
      assert.equal(curl.code, 18, `curl: ${curl.stderr}`)
    } else t.diagnostic('curl is not on PATH: its exit status was not checked')
    // The JSON API: the body ends in the exception block with the error answer, and breaks off.
    const api = await fetch(`${base}/api/v1/query`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ sql: BIG }),
    })
    assert.equal(api.status, 200)
    await assert.rejects(() => api.text())
    // The CLI: exit 1 with the server's error, no exception text in its output, the rows before it whole.
    const sql = await cli(env, ['sql', BIG])
    assert.equal(sql.code, 1, sql.stderr)
    assert.match(sql.stderr, /^benchstream: BS_ERR_RESULT_LIMIT: Limit for result exceeded, max rows: 100000: /)
    assert.doesNotMatch(sql.stdout, /__exception__/)
    assert.equal(sql.stdout.split('\n').length - 1, MAX_ROWS)
    // Limits hit in the first MiB: an error status, before any row.
    for (const [q, code] of [
      ['SELECT number FROM numbers(150000)', 'BS_ERR_RESULT_LIMIT'],
      ['SELECT number FROM numbers(1e10)', 'BS_ERR_QUERY_FAILED'],
    ]) {
      const early = await cli(env, ['sql', q!])
      assert.equal(early.code, 1, q)
      assert.match(early.stderr, new RegExp(`^benchstream: ${code}: `), q)
      assert.equal(early.stdout, '', q)
    }
    // The request's own limit (ClickHouse's max_result_rows, result_overflow_mode=throw by default).
    const over = await rawGet(
      `${base}/clickhouse/?max_result_rows=100&query=${encodeURIComponent(`${all} FORMAT TSV`)}`,
    )
    assert.equal(over.status, 500)
    assert.equal(over.headers['x-clickhouse-exception-code'], '396')
    assert.match(over.body.toString(), /Limit for result exceeded, max rows: 100.*\(TOO_MANY_ROWS_OR_BYTES\)/)
    // ... or a cut there, when asked (result_overflow_mode=break).
    const broke = await rawGet(
      `${base}/clickhouse/?max_result_rows=100&result_overflow_mode=break` +
        `&query=${encodeURIComponent(`${all} FORMAT TSV`)}`,
    )
    assert.equal(broke.status, 200)
    assert.equal(broke.body.toString().trimEnd().split('\n').length, 100)
    // The server answers the next query: the connection of the failed ones was given back.
    assert.equal((await cli(env, ['sql', 'SELECT 1'])).stdout, '1\n')
  })

  await t.test('export: CSV and Parquet files hold every event of the run, the summary every operation', async () => {
    const dir = mkdtempSync(path.join(os.tmpdir(), 'benchstream-export-'))
    t.after(() => rmSync(dir, { recursive: true, force: true }))
    // CSV and Parquet here; JSON lines, Arrow and what pandas and DuckDB read: test/clients/.
    for (const ext of ['csv', 'parquet']) {
      const file = path.join(dir, `events.${ext}`)
      const r = await cli(env, ['export', RUN, '--to', file])
      assert.equal(r.code, 0, r.stderr)
      assert.match(r.stdout, new RegExp(`^benchstream: wrote ${EVENTS} raw events of run ${RUN} to ${file}`))
      const format = ext === 'csv' ? 'CSVWithNames' : 'Parquet'
      const [back] = await queryRows<{ n: string; lat: string; runs: string }>(
        svc.ch,
        `SELECT count() AS n, sum(latency_us) AS lat, uniqExact(run_id) AS runs FROM file('${file}', '${format}')`,
      )
      assert.deepEqual(
        { n: Number(back!.n), lat: Number(back!.lat), runs: Number(back!.runs) },
        { n: EVENTS, lat: Number(truth!.lat), runs: 1 },
        ext,
      )
    }
    const csv = readFileSync(path.join(dir, 'events.csv'), 'utf8')
    assert.match(csv, /^"run_id","client_id","thread","op","start","latency_us",/)
    const summary = await cli(env, ['export', RUN, '--to', path.join(dir, 'summary.jsonl'), '--what', 'summary'])
    assert.equal(summary.code, 0, summary.stderr)
    const ops = readFileSync(path.join(dir, 'summary.jsonl'), 'utf8')
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as { op: string; operations: string | number })
    assert.deepEqual(Object.fromEntries(ops.map((o) => [o.op, Number(o.operations)])), p.truth.byOp)
    // Refusals: an unknown extension, a file that exists, a run with no events.
    const ext = await cli(env, ['export', RUN, '--to', path.join(dir, 'events.xlsx')])
    assert.equal(ext.code, 2)
    assert.match(
      ext.stderr,
      new RegExp(
        'extension \\.xlsx is not known; the extension picks the format: ' +
          '\\.parquet, \\.arrow, \\.feather, \\.csv, \\.jsonl, \\.ndjson',
      ),
    )
    writeFileSync(path.join(dir, 'taken.csv'), 'x')
    const taken = await cli(env, ['export', RUN, '--to', path.join(dir, 'taken.csv')])
    assert.equal(taken.code, 2)
    assert.match(taken.stderr, /exists; --force replaces it/)
    const none = await cli(env, ['export', 'no-such-run', '--to', path.join(dir, 'none.csv')])
    assert.equal(none.code, 1)
    assert.match(none.stderr, /BS_ERR_NOT_FOUND: run "no-such-run" has no raw events/)
  })
})
