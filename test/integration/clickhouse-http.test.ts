/**
 * The API's ClickHouse HTTP endpoint (/clickhouse) against the real server:
 * a run goes driver -> Kafka -> processor -> embedded ClickHouse, then
 *
 * - the Grafana plugin's own client, clickhouse-go v2.47.0 over HTTP
 *   (test/tools/clickhouse-go-client, configured as the plugin configures
 *   it), runs the live dashboard's panel queries and typed queries over
 *   Benchstream's tables, and every value equals what POST /api/v1/query
 *   returns for the same SQL;
 * - curl-style requests get ClickHouse's text formats (TabSeparated by
 *   default), the same bytes as /api/v1/query's FORMAT output;
 * - the guard is the same one: refusals, the row limit (a result past it
 *   fails, in each client), 429 when busy.
 *
 * Needs Go >= 1.25 on PATH (the machine image has it; Debian's golang-go is
 * 1.19, too old for clickhouse-go, so system-deps.sh does not install it):
 * without it the clickhouse-go part is skipped, saying so.
 */
import assert from 'node:assert/strict'
import { execFile, spawnSync } from 'node:child_process'
import { mkdtempSync, rmSync } from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { test } from 'node:test'
import { promisify } from 'node:util'
import { generateDashboards } from '../../dashboards/index.js'
import { expandQuery } from '../helpers/grafana-macros.js'
import { queryRows } from '../../services/adapters/clickhouse/client.js'
import { createKafka } from '../../services/adapters/kafka/client.js'
import { readInfraConfig } from '../../services/common/infra-config.js'
import { repoRoot } from '../../services/common/repo-root.js'
import { startServer } from '../../services/server/main.js'
import { testEnv } from '../helpers/env.js'
import { driveClient, waitForRun } from '../helpers/driven-run.js'

const TOKEN = 'integration-token-0123456789'
/** The row limit of this server (API_MAX_QUERY_ROWS): a larger result fails. */
const MAX_ROWS = 3000
const GO_CLIENT = path.join(repoRoot(), 'test/tools/clickhouse-go-client')

interface GoResult {
  columns?: Array<{ name: string; type: string }>
  rows?: unknown[][]
  error?: string
}

/** Go >= 1.25 on PATH, or why not. */
function goMissing(): string | undefined {
  const v = spawnSync('go', ['env', 'GOVERSION'], { encoding: 'utf8' })
  if (v.error !== undefined || v.status !== 0) return 'go is not on PATH (the clickhouse-go client needs Go >= 1.25)'
  const m = /^go1\.(\d+)/.exec(v.stdout.trim())
  return m !== null && Number(m[1]) >= 25
    ? undefined
    : `${v.stdout.trim()} is older than the Go 1.25 clickhouse-go v2.47.0 needs`
}

const show = (v: unknown): string => (typeof v === 'string' ? v : JSON.stringify(v))

/** Values as comparable numbers, strings and nulls: JSON formats quote 64-bit integers, Go prints times as ms. */
function same(api: unknown, go: unknown, type: string, where: string): void {
  if (api === null || go === null) return assert.equal(api, go, where)
  if (/DateTime/.test(type) && !/Array|Map|Tuple/.test(type)) {
    const ms = Date.parse(show(api).replace(' ', 'T') + 'Z')
    return assert.equal(Number(go), ms, `${where}: ${show(api)}`)
  }
  if (Array.isArray(api)) {
    assert.ok(Array.isArray(go), where)
    assert.equal(go.length, api.length, where)
    return api.forEach((v, i) => same(v, (go as unknown[])[i], type.replace(/^(Array|Tuple)\(/, ''), `${where}[${i}]`))
  }
  if (typeof api === 'object') {
    const a = api as Record<string, unknown>
    const g = go as Record<string, unknown>
    assert.deepEqual(Object.keys(g).sort(), Object.keys(a).sort(), where)
    for (const k of Object.keys(a)) same(a[k], g[k], type.replace(/^Map\([^,]+, /, ''), `${where}.${k}`)
    return
  }
  const n = Number(api)
  if (typeof go === 'number' || (/Int|Float|Decimal/.test(type) && !Number.isNaN(n))) {
    const x = Number(go)
    return assert.ok(
      n === x || Math.abs(n - x) <= 1e-12 * Math.max(Math.abs(n), Math.abs(x)),
      `${where}: ${show(api)} vs ${show(go)}`,
    )
  }
  assert.equal(show(go), show(api), where)
}

test(
  "Grafana's ClickHouse client and curl read the embedded engine through /clickhouse, behind the " +
    'same guard as /api/v1/query',
  async (t) => {
    const te = testEnv({
      API_TOKEN: TOKEN,
      API_MAX_QUERY_ROWS: String(MAX_ROWS),
      API_QUERY_CONCURRENCY: '1',
      API_QUERY_QUEUE: '0',
    })
    t.after(te.cleanup)
    const svc = await startServer(te.env, { api: true })
    t.after(() => svc.stop())
    const base = svc.apiUrl ?? assert.fail('the API did not start')
    const auth = { authorization: `Basic ${Buffer.from(`grafana:${TOKEN}`).toString('base64')}` }
    const infra = readInfraConfig(te.env)

    // One real run.
    const runId = `ch-http-${Date.now()}`
    const outcome = await driveClient(createKafka(infra.kafka, 'it-ch-http'), te.env, [
      ...'-P workloads/workloada -p recordcount=500 -p operationcount=4000 -threads 4 -db memory'.split(' '),
      ...`--run-id ${runId} --client-id c1 --label suite=ch-http`.split(' '),
    ])
    await waitForRun(svc.ch, runId, { events: outcome.delivery.sentEvents, clients: 1 })

    const apiQuery = async (
      sql: string,
      format?: string,
    ): Promise<{ status: number; body: { rows?: Array<Record<string, unknown>> }; text: string }> => {
      const res = await fetch(`${base}/api/v1/query`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: `Bearer ${TOKEN}` },
        body: JSON.stringify({ sql, ...(format === undefined ? {} : { format }) }),
      })
      const text = await res.text()
      return { status: res.status, body: format === undefined && res.status === 200 ? JSON.parse(text) : {}, text }
    }
    const ch = (qs: string, init: RequestInit = {}): Promise<Response> =>
      fetch(`${base}/clickhouse/?${qs}`, {
        ...init,
        headers: { ...auth, ...(init.headers as Record<string, string> | undefined) },
      })

    await t.test(
      'curl: ?query= in TabSeparated by default, FORMAT clauses, the same text as /api/v1/query',
      async () => {
        const one = await ch('query=SELECT%201%20FORMAT%20TSV')
        assert.equal(one.status, 200)
        assert.equal(await one.text(), '1\n')
        const plainSql = `SELECT op, sum(count) AS n FROM op_windows WHERE run_id = '${runId}' GROUP BY op ORDER BY op`
        const plain = await ch(`query=${encodeURIComponent(plainSql)}`)
        assert.match(plain.headers.get('content-type') ?? '', /^text\/tab-separated-values/)
        const tsv = await plain.text()
        assert.equal(
          tsv,
          (
            await apiQuery(
              `SELECT op, sum(count) AS n FROM op_windows WHERE run_id = '${runId}' GROUP BY op ORDER BY op`,
              'TSV',
            )
          ).text,
        )
        assert.equal(
          tsv
            .trim()
            .split('\n')
            .reduce((a, l) => a + Number(l.split('\t')[1]), 0),
          outcome.delivery.sentEvents,
          'every operation counted once',
        )
        const json = await ch('default_format=JSONEachRow', {
          method: 'POST',
          body: `SELECT run_id, clients FROM benchstream.runs WHERE run_id = '${runId}'`,
        })
        assert.deepEqual(JSON.parse(await json.text()), { run_id: runId, clients: 1 })
      },
    )

    await t.test('the same guard: refusals in ClickHouse form, the row limit, 429 when busy', async () => {
      const outside = await ch('', { method: 'POST', body: 'SELECT query FROM system.processes' })
      assert.equal(outside.status, 403)
      assert.equal(outside.headers.get('x-clickhouse-exception-code'), '497')
      assert.match(
        await outside.text(),
        /^Code: 497\. DB::Exception: table system\.processes is outside the benchstream database.*\(ACCESS_DENIED\)\n$/,
      )
      const write = await ch('', { method: 'POST', body: `INSERT INTO runs (run_id) VALUES ('x')` })
      assert.ok(write.status >= 400, `${write.status}`)
      assert.match(await write.text(), /^Code: \d+\. DB::Exception: /)
      assert.equal(
        Number((await apiQuery(`SELECT count() AS n FROM runs WHERE run_id = 'x'`)).body.rows?.[0]?.n),
        0,
        'nothing was written',
      )
      // A result past the row limit fails on both endpoints, never cut.
      const over = await apiQuery('SELECT number FROM numbers(100000)')
      assert.equal(over.status, 400)
      assert.match(over.text, /"code":"BS_ERR_RESULT_LIMIT"/)
      const overCh = await ch('query=SELECT%20number%20FROM%20numbers(100000)')
      assert.equal(overCh.status, 500)
      assert.equal(overCh.headers.get('x-clickhouse-exception-code'), '396')
      assert.match(
        await overCh.text(),
        /^Code: 396\. DB::Exception: Limit for result exceeded, max rows: 3000: .*\(TOO_MANY_ROWS_OR_BYTES\)\n$/,
      )
      // One query at a time, none waiting: a second one while the first sleeps is 429, here and on the JSON API.
      const slow = ch('query=SELECT%20sleepEachRow(0.5)%20FROM%20numbers(4)%20FORMAT%20TSV')
      await new Promise((r) => setTimeout(r, 300))
      const busy = await ch('query=SELECT%201')
      assert.equal(busy.status, 429)
      assert.equal(busy.headers.get('x-clickhouse-exception-code'), '202')
      assert.match(await busy.text(), /\(TOO_MANY_SIMULTANEOUS_QUERIES\)\n$/)
      assert.equal((await apiQuery('SELECT 1')).status, 429)
      assert.equal((await slow).status, 200)
    })

    await t.test('hostile input gets ClickHouse errors and the server stays up', async () => {
      for (const [qs, body] of [
        ['client_protocol_version=-5', 'SELECT 1'],
        // A type the Native re-framing does not walk (revision 0 passes as the engine wrote it).
        ['default_format=Native&client_protocol_version=54460', 'SELECT CAST(\'{"a":1}\' AS JSON)'],
        ['query=%00%01%02', ''],
        ['default_format=Native&client_protocol_version=54460', 'SELECT 1; SELECT 2'],
        ['', 'x'.repeat(300 * 1024)],
      ] as const) {
        const res = await ch(qs, { method: 'POST', body })
        assert.ok(res.status >= 400 && res.status < 600, `${qs}: ${res.status}`)
        assert.match(await res.text(), /^Code: \d+\. DB::Exception: /, qs)
      }
      assert.equal((await fetch(`${base}/healthz`)).status, 200)
    })

    const missing = goMissing()
    await t.test(
      "clickhouse-go v2.47.0 (the plugin's client, Native over HTTP) reads the same values as /api/v1/query",
      { skip: missing },
      async () => {
        const dir = mkdtempSync(path.join(os.tmpdir(), 'benchstream-chgo-'))
        t.after(() => rmSync(dir, { recursive: true, force: true }))
        const bin = path.join(dir, 'clickhouse-go-client')
        // First build: downloads clickhouse-go from the Go module proxy (go.sum pins it).
        await promisify(execFile)('go', ['build', '-o', bin, '.'], { cwd: GO_CLIENT, timeout: 600_000 })

        // The live dashboard's panels, expanded as Grafana and the plugin would, over the whole run.
        const live = generateDashboards().find((g) => g.uid === 'benchstream-live')!.dashboard
        const [span] = await queryRows<{ from_ms: string; to_ms: string; ops: string[] }>(
          svc.ch,
          'SELECT toUnixTimestamp64Milli(min(window_start)) AS from_ms, toUnixTimestamp64Milli(max(window_start)) ' +
            '+ 1000 AS to_ms, groupUniqArray(op) AS ops FROM benchstream.op_windows WHERE run_id = {id:String}',
          { id: runId },
        )
        const ctx = {
          fromMs: Number(span!.from_ms),
          toMs: Number(span!.to_ms),
          intervalMs: 1000,
          variables: { run: runId, op: [...span!.ops].sort() },
        }
        const panelSql = [
          ...(live.panels ?? []).flatMap((p) => ('targets' in p ? (p.targets ?? []) : [])),
          // The alerts annotation (Grafana runs it through the same datasource).
          ...(live.annotations?.list ?? []).flatMap((a) => (a.target === undefined ? [] : [a.target])),
        ].map((tg) => expandQuery((tg as unknown as { rawSql: string }).rawSql, ctx))
        const typed = [
          `SELECT run_id, labels, clients, started_at, workload FROM runs WHERE run_id = '${runId}'`,
          `SELECT * FROM op_windows WHERE run_id = '${runId}' ORDER BY window_start, op, status, client_id LIMIT 50`,
          `SELECT number, toString(number) AS s, [number, 1] AS a, if(number % 2 = 0, NULL, number) AS ` +
            `n, (number, 'x') AS t, toDecimal64(number / 3, 3) AS d FROM numbers(${MAX_ROWS})`,
        ]
        const queries = [...panelSql, ...typed]
        const { stdout } = await promisify(execFile)(
          bin,
          [
            '-addr',
            new URL(base).host,
            '-path',
            '/clickhouse',
            '-user',
            'grafana',
            '-password',
            TOKEN,
            ...queries,
            'SELECT query FROM system.processes',
            `SELECT number FROM numbers(${MAX_ROWS + 500})`,
          ],
          { maxBuffer: 64 * 1024 * 1024, timeout: 120_000 },
        )
        const results = stdout
          .trim()
          .split('\n')
          .map((l) => JSON.parse(l) as GoResult)
        assert.equal(results.length, queries.length + 2, stdout.slice(0, 500))
        let values = 0
        for (const [i, sql] of queries.entries()) {
          const go = results[i]!
          assert.equal(go.error, undefined, `${sql}\n${go.error ?? ''}`)
          assert.ok(Array.isArray(go.rows), `${sql}: ${JSON.stringify(go).slice(0, 300)}`)
          const api = (await apiQuery(sql)).body.rows ?? assert.fail(`/api/v1/query failed for ${sql}`)
          assert.equal(go.rows.length, api.length, `rows of ${sql}`)
          if (api.length > 0)
            assert.deepEqual(
              go.columns!.map((c) => c.name),
              Object.keys(api[0]!),
              `columns of ${sql}`,
            )
          api.forEach((row, r) =>
            go.columns!.forEach((c, k) => {
              same(row[c.name], go.rows![r]![k], c.type, `${sql.slice(0, 60)} row ${r} ${c.name}`)
              values++
            }),
          )
        }
        assert.ok(values > 1000, `compared ${values} values`)
        // A result at the row limit is whole (the last typed query)...
        assert.equal(results[queries.length - 1]!.rows!.length, MAX_ROWS)
        // A refusal reaches the plugin as ClickHouse's error text, which it shows as a query error.
        assert.match(
          results[queries.length]!.error ?? '',
          /\[HTTP 403\] response body: "Code: 497\. DB::Exception: table system\.processes is outside/,
        )
        // ... and one past it is an error in this client too, not fewer rows.
        assert.equal(results[queries.length + 1]!.rows ?? undefined, undefined)
        assert.match(results[queries.length + 1]!.error ?? '', /Code: 396\. DB::Exception: Limit for result exceeded/)
      },
    )
    if (missing !== undefined) t.diagnostic(`clickhouse-go part skipped: ${missing}`)
  },
)
