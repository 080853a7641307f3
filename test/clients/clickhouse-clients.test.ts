/**
 * The query tools people open, with their default settings, against
 * /clickhouse/ of a real server holding a real run (issue 24):
 *
 * - ClickHouse's JDBC driver (com.clickhouse:clickhouse-jdbc 0.10.0, what
 *   DBeaver, DataGrip and Metabase load): test/tools/clickhouse-jdbc-client,
 *   built with Maven from Maven Central. It connects, lists the tables through
 *   DatabaseMetaData, reads the run's run_summary and op_windows;
 * - clickhouse-connect with pandas and pyarrow (what Jupyter and Superset
 *   use), and DuckDB: test/tools/clickhouse-connect-client in a venv under
 *   ~/.cache/benchstream/clients-venv, from PyPI. query, query_df and
 *   query_arrow on the same run.
 *
 * Values are checked against the API's report of the run
 * (GET /api/v1/runs/:id/report). Issue 31, with the server's default limits:
 * a 50,000-event run comes back whole with each client's defaults (query_df,
 * query_arrow, query, JDBC's ResultSet); a query that passes the time limit
 * part-way, after its first MiB went out with status 200, raises in each
 * client, and so does one past the request's max_result_rows; the files
 * `benchstream export` writes (Parquet, Arrow, Feather, CSV, JSON lines) hold
 * the run as pandas and DuckDB read them. Every attack of the corpus
 * (test/helpers/sql-attacks.ts; the result-limit ones need a server with
 * limits and run in the integration tests) and the metadata attacks go
 * through each client's own path, with the side effects checked. A proxy
 * in front of the API records what each client sent (format, compression,
 * encodings), so the test also says which paths were exercised.
 *
 * A tier of its own (npm run test:clients, about a minute once the tools are
 * fetched): the default tiers run the same paths without the tools
 * (test/integration/clickhouse-formats.test.ts). A tool whose registry cannot
 * be reached is skipped, saying so.
 */
import assert from 'node:assert/strict'
import { execFile, spawnSync } from 'node:child_process'
import { cpSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import http from 'node:http'
import net from 'node:net'
import os from 'node:os'
import path from 'node:path'
import { test } from 'node:test'
import { promisify } from 'node:util'
import { queryRows } from '../../services/adapters/clickhouse/client.js'
import { createKafka } from '../../services/adapters/kafka/client.js'
import { readInfraConfig } from '../../services/common/infra-config.js'
import { repoRoot } from '../../services/common/repo-root.js'
import { startServer } from '../../services/server/main.js'
import { testEnv, waitFor } from '../helpers/env.js'
import { EventProducer } from '../helpers/produce.js'
import { metadataAttacks, SLOW_ATTACKS, sqlAttacks, type Attack } from '../helpers/sql-attacks.js'
import { sameAsTruth, stored } from '../helpers/stored.js'

const run = promisify(execFile)
const TOKEN = 'clients-token-0123456789'
const RUN = 'clients-run'
/** The reproduction: a run of 50,000 raw events, read whole. */
const WHOLE = 't4-pd'
const WHOLE_EVENTS = 50_000
/** The server's time limit here (API_QUERY_TIMEOUT_S): room for the whole runs on a loaded machine. */
const TIMEOUT_S = 15
/**
 * Passes the time limit part-way: a block of 1,000 rows (the guard's block size), 1.1 MB, every 2 s (under the 3 s
 * of sleep a block ClickHouse allows), so the first MiB goes out with status 200 long before the limit, and some
 * 8 MB before it.
 */
const SLOW = "SELECT number, repeat('x', 1100) AS pad FROM numbers(1000000) WHERE sleepEachRow(0.002) = 0"
const TOOLS = path.join(repoRoot(), 'test/tools')
const BIN = path.join(repoRoot(), 'bin', 'benchstream.js')
const VENV = path.join(os.homedir(), '.cache/benchstream/clients-venv')

interface Recorded {
  ua: string
  params: Record<string, string>
  format: string
  acceptEncoding: string
  contentEncoding: string
  status: number
  responseEncoding: string
}

/** A proxy in front of the API that records what each request asked for. */
async function recordingProxy(target: URL): Promise<{ port: number; seen: Recorded[]; close: () => void }> {
  const seen: Recorded[] = []
  const server = http.createServer((req, res) => {
    const url = new URL(req.url ?? '/', 'http://x')
    const chunks: Buffer[] = []
    req.on('data', (c: Buffer) => chunks.push(c))
    req.on('end', () => {
      const body = Buffer.concat(chunks)
      // The format: a parameter, a header, or the query's FORMAT clause (clickhouse-connect writes one).
      const clause = /\bFORMAT\s+(\w+)\s*$/i.exec(req.headers['content-encoding'] ? '' : body.toString('latin1'))
      const upstream = http.request(
        { host: target.hostname, port: target.port, method: req.method, path: req.url, headers: req.headers },
        (up) => {
          seen.push({
            ua: String(req.headers['user-agent'] ?? ''),
            params: Object.fromEntries(url.searchParams),
            format: String(
              url.searchParams.get('default_format') ?? req.headers['x-clickhouse-format'] ?? clause?.[1] ?? '',
            ),
            acceptEncoding: String(req.headers['accept-encoding'] ?? ''),
            contentEncoding: String(req.headers['content-encoding'] ?? ''),
            status: up.statusCode ?? 0,
            responseEncoding: String(up.headers['content-encoding'] ?? ''),
          })
          res.writeHead(up.statusCode ?? 502, up.headers)
          up.pipe(res)
          // An answer the server broke off (a failure part-way) is broken off to the client too: pipe() alone would
          // leave the client waiting for the rest.
          up.on('close', () => {
            if (!up.complete) res.destroy()
          })
        },
      )
      upstream.on('error', () => res.destroy())
      upstream.end(body)
    })
  })
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r))
  return { port: (server.address() as net.AddressInfo).port, seen, close: () => server.close() }
}

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

/** Builds the JDBC client (Maven, ~/.m2 as cache); its classpath, or why it cannot be had. */
async function jdbcClient(dir: string): Promise<{ classpath: string } | { skip: string }> {
  if (spawnSync('mvn', ['-v']).status !== 0) return { skip: 'mvn is not on PATH (it fetches clickhouse-jdbc)' }
  const src = path.join(dir, 'jdbc')
  cpSync(path.join(TOOLS, 'clickhouse-jdbc-client'), src, {
    recursive: true,
    filter: (f) => !f.includes(`${path.sep}target`),
  })
  try {
    await run('mvn', ['-q', '-B', 'package', 'dependency:build-classpath', '-Dmdep.outputFile=target/classpath.txt'], {
      cwd: src,
      timeout: 600_000,
    })
  } catch (err) {
    const out = `${(err as { stdout?: string }).stdout ?? ''}${(err as { stderr?: string }).stderr ?? ''}`
    if (/Could not (resolve|transfer)|Unknown host|Connection refused|Network is unreachable/.test(out))
      return { skip: `Maven Central could not be reached: ${out.split('\n').find((l) => l.includes('ERROR')) ?? ''}` }
    throw err
  }
  const deps = readFileSync(path.join(src, 'target/classpath.txt'), 'utf8').trim()
  return { classpath: `${path.join(src, 'target/clickhouse-jdbc-client-1.jar')}${path.delimiter}${deps}` }
}

/** The venv with clickhouse-connect, pandas and pyarrow (created on first use); its python, or why not. */
async function pythonClient(): Promise<{ python: string } | { skip: string }> {
  const python = path.join(VENV, 'bin/python')
  const requirements = path.join(TOOLS, 'clickhouse-connect-client/requirements.txt')
  const stamp = path.join(VENV, '.requirements')
  const wanted = readFileSync(requirements, 'utf8')
  if (existsSync(python) && existsSync(stamp) && readFileSync(stamp, 'utf8') === wanted) return { python }
  if (spawnSync('python3', ['--version']).status !== 0) return { skip: 'python3 is not on PATH' }
  mkdirSync(path.dirname(VENV), { recursive: true })
  if (!existsSync(python)) await run('python3', ['-m', 'venv', VENV], { timeout: 120_000 })
  try {
    await run(python, ['-m', 'pip', 'install', '-q', '-r', requirements], { timeout: 600_000 })
  } catch (err) {
    const out = String((err as { stderr?: string }).stderr ?? err)
    if (/Could not find a version|connection|resolve|Network/i.test(out))
      return { skip: `PyPI could not be reached: ${out.split('\n').find((l) => l.trim() !== '') ?? ''}` }
    throw err
  }
  writeFileSync(stamp, wanted)
  return { python }
}

interface Report {
  measurements: Array<{ name: string; operations: number; p99LatencyUs: number; maxLatencyUs: number }>
}

test('clickhouse-jdbc 0.10.0, clickhouse-connect, pandas, pyarrow, DuckDB read runs through /clickhouse', async (t) => {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'benchstream-clients-'))
  t.after(() => rmSync(dir, { recursive: true, force: true }))
  // Fetch the tools first: minutes on a first run, before the server is started.
  const [jdbc, py] = await Promise.all([jdbcClient(dir), pythonClient()])

  // No result limit (the default); a time limit to pass.
  const te = testEnv({
    API_TOKEN: TOKEN,
    API_QUERY_TIMEOUT_S: String(TIMEOUT_S),
    API_QUERY_MAX_MEMORY: String(300 * 1024 * 1024),
  })
  t.after(te.cleanup)
  const svc = await startServer(te.env, { api: true })
  t.after(() => svc.stop())
  const base = svc.apiUrl ?? assert.fail('the API did not start')
  const proxy = await recordingProxy(new URL(base))
  t.after(proxy.close)
  const side = await listener()
  t.after(side.close)
  const secret = path.join(dir, 'secret.txt')
  writeFileSync(secret, 'top-secret-line\n')
  const infra = readInfraConfig(te.env)
  const p = await EventProducer.open(createKafka(infra.kafka, 'clients'), infra.topics.events, RUN)
  t.after(() => p.close())
  await p.send(10_000)
  await waitFor('events stored', async () => (sameAsTruth(await stored(svc.ch, RUN), p.truth) ? true : undefined))
  const w = await EventProducer.open(createKafka(infra.kafka, 'clients-whole'), infra.topics.events, WHOLE, 7)
  t.after(() => w.close())
  await w.send(WHOLE_EVENTS)
  await waitFor('the whole run stored', async () =>
    sameAsTruth(await stored(svc.ch, WHOLE), w.truth) ? true : undefined,
  )
  const [wholeTruth] = await queryRows<{ lat: string }>(
    svc.ch,
    `SELECT sum(latency_us) AS lat FROM benchstream.ops WHERE run_id = '${WHOLE}'`,
  )
  const wholeLatency = Number(wholeTruth!.lat)
  await svc.ch.client.command({ query: 'CREATE DATABASE IF NOT EXISTS other' })
  await svc.ch.client.command({
    query: 'CREATE TABLE IF NOT EXISTS other.secret (s String) ENGINE = MergeTree ORDER BY s',
  })
  await svc.ch.client.insert({ table: 'other.secret', values: [{ s: 'top-secret' }], format: 'JSONEachRow' })
  const written = async (): Promise<number> =>
    Number(
      (
        await queryRows<{ n: string }>(
          svc.ch,
          'SELECT (SELECT count() FROM benchstream.dead_letters) + (SELECT count() FROM benchstream.run_clients) AS n',
        )
      )[0]!.n,
    )
  const before = await written()
  const report = (await (
    await fetch(`${base}/api/v1/runs/${RUN}/report`, { headers: { authorization: `Bearer ${TOKEN}` } })
  ).json()) as Report
  const expected = report.measurements
    .map((m) => ({ op: m.name, operations: m.operations, p99: m.p99LatencyUs, max: m.maxLatencyUs }))
    .sort((a, b) => a.op.localeCompare(b.op))
  assert.equal(
    expected.reduce((a, m) => a + m.operations, 0),
    10_000,
  )
  const attacks: Attack[] = [
    ...sqlAttacks({ dir, secret, H: `http://127.0.0.1:${side.http}`, T: `127.0.0.1:${side.tcp}` }),
    ...metadataAttacks('benchstream_meta'),
    // A FORMAT clause of another binary format is not an attack: the client cannot read the answer. The result
    // limits are not set here (the default): their attacks would stream every row.
  ].filter(
    ([name, , want]) => !SLOW_ATTACKS.has(name) && name !== 'FORMAT not allowed' && want !== 'BS_ERR_RESULT_LIMIT',
  )
  const outcome = (expected: string): string => (expected.startsWith('BS_ERR_') ? 'refused' : expected)

  await t.test(
    'JDBC: connect with defaults, DatabaseMetaData, the run, a whole run, a limit passed part-way, every attack',
    { skip: 'skip' in jdbc ? jdbc.skip : false },
    async () => {
      if (!('classpath' in jdbc)) return
      const url = `jdbc:clickhouse:http://127.0.0.1:${proxy.port}/clickhouse/benchstream`
      const steps = [
        'meta',
        `typed:SELECT op, operations, p99_us, max_us FROM run_summary WHERE run_id = '${RUN}' ORDER BY op`,
        `query:SELECT op, sum(count) AS n FROM op_windows WHERE run_id = '${RUN}' GROUP BY op ORDER BY op`,
        `typed:SELECT * FROM op_windows WHERE run_id = '${RUN}' ORDER BY window_start, op, status, client_id`,
        `sum:latency_us:SELECT * FROM ops WHERE run_id = '${WHOLE}'`,
        `sum:number:${SLOW}`,
        ...attacks.map(([, sql]) => `query:${sql}`),
      ]
      const seenBefore = proxy.seen.length
      const { stdout } = await run(
        'java',
        ['-cp', jdbc.classpath, 'benchstream.Main', url, 'dbeaver', TOKEN, ...steps],
        {
          maxBuffer: 256 * 1024 * 1024,
          // A JVM start and some 70 queries, each checked by the guard first: minutes on a loaded machine.
          timeout: 900_000,
        },
      )
      const out = stdout
        .trim()
        .split('\n')
        .map((l) => JSON.parse(l) as Record<string, unknown>)
      assert.equal(out.length, steps.length, stdout.slice(0, 500))
      const [meta, summary, windows, all, whole, slow] = out
      assert.equal(meta!.error, undefined, String(meta!.error))
      assert.equal(meta!.product, 'ClickHouse')
      assert.deepEqual(meta!.schemas, ['benchstream'])
      const tables = (meta!.tables as string[][]).map((r) => r[1])
      for (const n of ['op_windows', 'runs', 'run_summary', 'ops'])
        assert.ok(tables.includes(n), `${n} in ${tables.join()}`)
      assert.ok((meta!.tables as string[][]).every((r) => r[0] === 'benchstream'))
      assert.ok((meta!.columns as string[][]).some((c) => c[0] === 'window_start' && c[1]!.startsWith('DateTime64')))
      assert.ok((meta!.types as string[]).includes('UInt64'))
      // The run, as the report has it.
      assert.deepEqual(
        (summary!.rows as string[][]).map(([op, n, p99, max]) => ({
          op,
          operations: Number(n),
          p99: Number(p99),
          max: Number(max),
        })),
        expected,
      )
      assert.deepEqual(
        (windows!.rows as string[][]).map(([op, n]) => ({ op, operations: Number(n) })),
        expected.map(({ op, operations }) => ({ op, operations })),
      )
      const rows = all!.rows as string[][]
      const cols = (all!.columns as Array<{ name: string }>).map((c) => c.name)
      assert.equal(
        rows.reduce((a, r) => a + Number(r[cols.indexOf('count')]), 0),
        10_000,
      )
      // The whole run, every row, with the driver's defaults.
      assert.deepEqual({ rows: whole!.rows, sum: whole!.sum }, { rows: WHOLE_EVENTS, sum: wholeLatency })
      // Past the time limit part-way: the driver raises (rows came first: the answer had started).
      assert.match(String(slow!.error), /SQLException|Exception/, JSON.stringify(slow))
      assert.ok(Number(slow!.rowsBefore) > 0, `rows before the failure: ${String(slow!.rowsBefore)}`)
      t.diagnostic(
        `JDBC past the time limit after ${String(slow!.rowsBefore)} rows: ${String(slow!.error).slice(0, 300)}`,
      )
      const failures: string[] = []
      attacks.forEach(([name, , want], i) => {
        const r = out[6 + i]!
        const got = r.error !== undefined ? 'refused' : (r.rows as unknown[]).length === 0 ? 'empty' : 'ok'
        const w = outcome(want)
        if (got !== w) failures.push(`${name}: expected ${w}, got ${got}: ${JSON.stringify(r).slice(0, 200)}`)
        if (JSON.stringify(r).includes('top-secret')) failures.push(`${name}: the secret came back`)
      })
      assert.deepEqual(failures, [])
      const sent = proxy.seen.slice(seenBefore).filter((s) => s.ua.startsWith('jdbc-v2/'))
      assert.ok(sent.length >= steps.length, `${sent.length} requests`)
      assert.ok(sent.every((s) => s.params.compress === '1' && s.format === 'RowBinaryWithNamesAndTypes'))
      t.diagnostic(`JDBC sent: ${sent[0]!.ua}; compress=1, RowBinaryWithNamesAndTypes, ${sent.length} requests`)
    },
  )

  await t.test(
    'clickhouse-connect: set-up, query, query_df, query_arrow, a whole run, limits passed, every attack',
    { skip: 'skip' in py ? py.skip : false },
    async () => {
      if (!('python' in py)) return
      const seenBefore = proxy.seen.length
      const child = execFile(
        py.python,
        [path.join(TOOLS, 'clickhouse-connect-client/client.py'), '127.0.0.1', String(proxy.port), TOKEN, RUN],
        { maxBuffer: 64 * 1024 * 1024, timeout: 900_000 },
      )
      child.stdin!.end(
        JSON.stringify({ attacks: attacks.map(([name, sql]) => [name, sql]), whole_run: WHOLE, slow: SLOW }),
      )
      const stdout = await new Promise<string>((resolve, reject) => {
        let text = ''
        let err = ''
        child.stdout!.on('data', (d: Buffer) => (text += d.toString()))
        child.stderr!.on('data', (d: Buffer) => (err += d.toString()))
        child.on('close', (code) =>
          code === 0 ? resolve(text) : reject(new Error(`client.py exited ${code}: ${err}`)),
        )
      })
      const out = JSON.parse(stdout) as {
        versions: Record<string, string>
        server_version: string
        compression: string
        readonly: string
        query: Array<[string, number, number, number]>
        query_df: { rows: number; count_by_op: Record<string, number>; dtypes: Record<string, string> }
        query_arrow: { rows: number; count: number; schema: string[] }
        whole: Record<string, number>
        limits: Record<string, { raised: boolean; type?: string; text?: string; rows?: number }>
        attacks: Array<[string, Record<string, { outcome: string; text: string }>]>
      }
      assert.match(out.server_version, /^\d+\.\d+/)
      assert.equal(out.readonly, '1')
      assert.deepEqual(
        out.query.map(([op, operations, p99, max]) => ({ op, operations, p99, max })),
        expected,
      )
      assert.deepEqual(out.query_df.count_by_op, Object.fromEntries(expected.map((m) => [m.op, m.operations])))
      assert.equal(out.query_df.dtypes.window_start, 'datetime64[ms]')
      assert.equal(out.query_arrow.count, 10_000)
      assert.equal(out.query_arrow.rows, out.query_df.rows)
      // The reproduction: every row of the run, with the client's defaults.
      assert.deepEqual(out.whole, {
        df_rows: WHOLE_EVENTS,
        df_latency: wholeLatency,
        arrow_rows: WHOLE_EVENTS,
        arrow_latency: wholeLatency,
        query_rows: WHOLE_EVENTS,
        query_latency: wholeLatency,
      })
      // Limits passed raise in every reader: the time limit part-way (the server's error, from ClickHouse's exception
      // block or the broken response), max_result_rows before the first byte.
      for (const [what, r] of Object.entries(out.limits)) {
        assert.equal(r.raised, true, `${what}: ${JSON.stringify(r)}`)
        if (what.startsWith('max_result_rows'))
          assert.match(r.text ?? '', /Limit for result exceeded, max rows: 1000|TOO_MANY_ROWS_OR_BYTES|396/, what)
        t.diagnostic(`clickhouse-connect ${what}: ${r.type}: ${(r.text ?? '').replace(/\s+/g, ' ').slice(0, 200)}`)
      }
      const failures: string[] = []
      for (const [i, [name, got]] of out.attacks.entries()) {
        const want = outcome(attacks[i]![2])
        for (const [how, g] of Object.entries(got)) {
          if (g.outcome !== want) failures.push(`${name} (${how}): expected ${want}, got ${g.outcome}: ${g.text}`)
          if (g.text.includes('top-secret')) failures.push(`${name} (${how}): the secret came back`)
        }
      }
      assert.deepEqual(failures, [])
      const sent = proxy.seen.slice(seenBefore).filter((s) => s.ua.startsWith('clickhouse-connect/'))
      const native = sent.filter((s) => s.format === 'Native')
      // system.settings says enable_http_compression is 1 (ClickHouse 26's default): the client sends only its
      // Accept-Encoding (lz4 first) and the answer comes in lz4, after the set-up's first queries.
      const compressed = native.filter((s) => s.acceptEncoding.startsWith('lz4'))
      assert.ok(compressed.length >= native.length - 2, `${compressed.length} of ${native.length} compressed`)
      assert.ok(
        compressed.every((s) => s.status !== 200 || s.responseEncoding === 'lz4'),
        'lz4 when the client lists it first',
      )
      assert.ok(sent.some((s) => s.format === 'Arrow'))
      t.diagnostic(
        `clickhouse-connect ${out.versions.clickhouse_connect}, pandas ${out.versions.pandas}, pyarrow ` +
          `${out.versions.pyarrow}: Accept-Encoding "${compressed[0]!.acceptEncoding}", answered ` +
          `${compressed[0]!.responseEncoding}; ${native.length - compressed.length} Native requests without it`,
      )
    },
  )

  await t.test(
    'export: Parquet, Arrow, Feather, CSV and JSON lines files of the whole run, read by pandas and DuckDB',
    { skip: 'skip' in py ? py.skip : false },
    async () => {
      if (!('python' in py)) return
      const env = { ...process.env, ...te.env, BENCHSTREAM_API_URL: base, BENCHSTREAM_API_TOKEN: TOKEN }
      const files: string[] = []
      for (const ext of ['parquet', 'arrow', 'feather', 'csv', 'jsonl']) {
        const file = path.join(dir, `whole.${ext}`)
        const { stdout } = await run(process.execPath, [BIN, 'export', WHOLE, '--to', file], { env, timeout: 300_000 })
        assert.match(stdout, new RegExp(`^benchstream: wrote ${WHOLE_EVENTS} raw events of run ${WHOLE} to `))
        files.push(file)
      }
      const { stdout } = await run(
        py.python,
        [path.join(TOOLS, 'clickhouse-connect-client/read_exports.py'), ...files],
        {
          maxBuffer: 16 * 1024 * 1024,
          timeout: 300_000,
        },
      )
      const read = JSON.parse(stdout) as {
        versions: Record<string, string>
        files: Record<string, { pandas: number[]; duckdb: number[]; dtypes: Record<string, string> }>
      }
      for (const file of files) {
        const f = read.files[file] ?? assert.fail(`${file} was not read`)
        assert.deepEqual(f.pandas, [WHOLE_EVENTS, wholeLatency], `pandas: ${file}`)
        assert.deepEqual(f.duckdb, [WHOLE_EVENTS, wholeLatency], `DuckDB: ${file}`)
      }
      // Typed formats keep the types: a time stamp, not text.
      assert.match(read.files[files[0]!]!.dtypes.start!, /^datetime64/)
      t.diagnostic(
        `pandas ${read.versions.pandas}, DuckDB ${read.versions.duckdb}; start as pandas reads it: ` +
          files.map((f) => `${path.extname(f)} ${read.files[f]!.dtypes.start}`).join(', '),
      )
    },
  )

  assert.equal(await written(), before, 'no row was written')
  assert.ok(!existsSync(path.join(dir, 'outfile.txt')) && !existsSync(path.join(dir, 'written.csv')))
  assert.equal(side.hits(), 0, 'no connection was made')
})
