/**
 * `benchstream export RUN --to FILE [--what events|windows|summary]`: a run's
 * raw events, windows or summary as a Parquet, Arrow, CSV or JSON lines file,
 * chosen by the file's extension, streamed to the file.
 *
 * Where the rows come from follows the other read commands: a running
 * server's API when there is one (in the embedded mode the server holds the
 * data directory, so nothing else can read it), else ClickHouse itself.
 * Through the API (or a ClickHouse server) the rows come as Native from
 * /clickhouse/ (the ad hoc guard's read-only connection, with its limits)
 * and this process's own chDB writes the file: its url() reads them through
 * a relay (stream-relay.ts) and file() writes the format, both streaming, so
 * neither the server nor this process holds the run whole. With no server,
 * the CLI's chDB reads the data directory and writes the file itself.
 *
 * The file is written beside FILE and renamed when every row is in it: the
 * rows written are checked against a count taken first, so that a cut can
 * never pass for a whole run.
 */
import { existsSync, mkdirSync, renameSync, rmSync, statSync } from 'node:fs'
import path from 'node:path'
import { openClickHouse, queryRows } from '../adapters/clickhouse/client.js'
import { parseFlags, type FlagSpecs } from '../common/args.js'
import { readInfraConfig, type ClickHouseConfig } from '../common/infra-config.js'
import { BenchstreamError } from '../core/errors.js'
import { ID_PATTERN, ID_RULE } from '../../schemas/events.v1.js'
import { apiError, apiOf } from './reader.js'
import { startRelay } from './stream-relay.js'
import { READ_USAGE } from './usage.js'

export const EXPORT_FLAGS = {
  to: { type: 'string' },
  what: { type: 'string' },
  force: { type: 'boolean' },
} as const satisfies FlagSpecs

/** File extensions and the ClickHouse format each is written in. */
export const EXPORT_FORMATS: Readonly<Record<string, string>> = {
  '.parquet': 'Parquet',
  '.arrow': 'Arrow',
  '.feather': 'Arrow',
  '.csv': 'CSVWithNames',
  '.jsonl': 'JSONEachRow',
  '.ndjson': 'JSONEachRow',
}

/**
 * What can be exported: the view or table, its columns, its order. Raw events come in the order they are stored
 * in, part by part: reading a run in the table's order (op, start) merges all its parts at once, which held some
 * 120 MB more in the server for 5M events (bench/pull); a tool sorts them in a moment.
 */
const WHAT = {
  events: { from: 'ops', except: [] as string[], order: undefined, noun: 'raw events' },
  windows: { from: 'op_window_figures', except: [] as string[], order: 'op, window_start', noun: 'windows' },
  // The merged histogram is a map of buckets: the percentiles beside it say what it holds.
  summary: { from: 'run_summary', except: ['merged_hist'], order: 'op', noun: 'summary rows' },
} as const satisfies Record<string, { from: string; except: string[]; order: string | undefined; noun: string }>
type What = keyof typeof WHAT

/**
 * Settings of the writing query: one thread, no parallel formatting, Parquet row groups small enough that the writer
 * holds little at once; url() tries once (a retry would run the server's query again from the start).
 */
const WRITE_SETTINGS =
  'engine_file_truncate_on_insert = 1, output_format_parquet_row_group_size = 100000, ' +
  'output_format_parquet_row_group_size_bytes = 33554432, output_format_parallel_formatting = 0, ' +
  'http_max_tries = 1, max_threads = 1'
/** Settings of the count read back: one thread, no parallel parsing (it would hold several chunks of the file). */
const COUNT_SETTINGS = 'max_threads = 1, input_format_parallel_parsing = 0'

/** A SQL string literal. */
const lit = (s: string): string => `'${s.replace(/\\/g, '\\\\').replace(/'/g, "\\'")}'`

export async function exportMain(argv: readonly string[]): Promise<number> {
  const usage = READ_USAGE.export
  const parsed = parseFlags(argv, EXPORT_FLAGS, usage, true)
  const v = parsed.values
  const args = parsed.positionals
  if (args.length !== 1)
    throw new BenchstreamError(
      'BS_ERR_USAGE',
      `export ${args.length === 0 ? 'needs a run id' : `takes one run id, got ${args.length} arguments`}\n${usage}`,
    )
  const runId = args[0]!
  if (!ID_PATTERN.test(runId))
    throw new BenchstreamError('BS_ERR_USAGE', `run id ${JSON.stringify(runId)} is not allowed: ${ID_RULE}\n${usage}`)
  if (v.to === undefined || v.to === '')
    throw new BenchstreamError('BS_ERR_USAGE', `export needs --to FILE (its extension picks the format)\n${usage}`)
  const ext = path.extname(v.to).toLowerCase()
  const format = EXPORT_FORMATS[ext]
  if (format === undefined)
    throw new BenchstreamError(
      'BS_ERR_USAGE',
      `--to ${JSON.stringify(v.to)}: ${ext === '' ? 'no extension' : `extension ${ext} is not known`}; the ` +
        `extension picks the format: ${Object.keys(EXPORT_FORMATS).join(', ')}\n${usage}`,
    )
  const whatName = v.what ?? 'events'
  if (!Object.hasOwn(WHAT, whatName))
    throw new BenchstreamError(
      'BS_ERR_USAGE',
      `--what ${JSON.stringify(whatName)} is not allowed: ${Object.keys(WHAT).join(', ')}\n${usage}`,
    )
  const what = WHAT[whatName as What]
  const target = path.resolve(v.to)
  if (existsSync(target) && v.force !== true)
    throw new BenchstreamError('BS_ERR_USAGE', `${target} exists; --force replaces it\n${usage}`)
  mkdirSync(path.dirname(target), { recursive: true })
  const part = `${target}.part-${process.pid}`

  const source = openSource()
  try {
    const where = `run_id = ${lit(runId)}`
    const from = source.database === undefined ? what.from : `${source.database}.${what.from}`
    const [count] = await source.rows<{ n: string }>(`SELECT count() AS n FROM ${from} WHERE ${where}`)
    const expected = Number(count?.n ?? 0)
    if (expected === 0)
      throw new BenchstreamError(
        'BS_ERR_NOT_FOUND',
        `run ${JSON.stringify(runId)} has no ${what.noun} (in ${source.where})` +
          (whatName === 'events' ? '; a summary run (YCSB reports only) has none: --what summary' : '') +
          '; list the runs with `benchstream runs`',
      )
    const columns = (
      await source.rows<{ name: string; type: string }>(
        `SELECT name, type FROM system.columns WHERE database = ` +
          `${source.database === undefined ? 'currentDatabase()' : lit(source.database)} ` +
          `AND table = ${lit(what.from)} ORDER BY position`,
      )
    ).filter((c) => !(what.except as readonly string[]).includes(c.name))
    const structure = columns.map((c) => `\`${c.name.replace(/`/g, '\\`')}\` ${c.type}`).join(', ')
    const list = columns.map((c) => `\`${c.name.replace(/`/g, '\\`')}\``).join(', ')
    const sql = `SELECT ${list} FROM ${from} WHERE ${where}${what.order === undefined ? '' : ` ORDER BY ${what.order}`}`
    const written = await source.write(sql, structure, part, format)
    if (written < expected)
      throw new BenchstreamError(
        'BS_ERR_QUERY_FAILED',
        `the export of run ${runId} wrote ${written} of its ${expected} ${what.noun}; the file was not kept`,
      )
    renameSync(part, target)
    process.stdout.write(
      `benchstream: wrote ${written} ${what.noun} of run ${runId} to ${target} (${format}, ` +
        `${statSync(target).size} bytes)` +
        (written > expected ? `; the run grew while it was written (${expected} when it started)` : '') +
        '\n',
    )
    return 0
  } catch (err) {
    rmSync(part, { force: true })
    throw err
  } finally {
    await source.close()
  }
}

/** Where the rows come from, and how a file is written from them. */
interface Source {
  readonly where: string
  /** The database to name tables in; undefined where unqualified names resolve in it (the API). */
  readonly database: string | undefined
  rows<T>(sql: string): Promise<T[]>
  /** Writes the query's result into `file` in `format`; the rows written. */
  write(sql: string, structure: string, file: string, format: string): Promise<number>
  close(): Promise<void>
}

function openSource(): Source {
  const { api, token } = apiOf(process.env)
  if (api !== undefined) return apiSource(api, token)
  const infra = readInfraConfig(process.env)
  return infra.clickhouse.url === undefined ? embeddedSource(infra.clickhouse) : serverSource(infra.clickhouse)
}

/** A running server's API: small reads from POST /api/v1/query, the rows as Native from /clickhouse/. */
function apiSource(api: string, token: string | undefined): Source {
  const auth: Record<string, string> = token === undefined ? {} : { authorization: `Bearer ${token}` }
  return {
    where: api,
    database: undefined,
    async rows<T>(sql: string): Promise<T[]> {
      let res: Response
      try {
        res = await fetch(`${api}/api/v1/query`, {
          method: 'POST',
          headers: { 'content-type': 'application/json', ...auth },
          body: JSON.stringify({ sql }),
        })
      } catch (err) {
        throw new BenchstreamError(
          'BS_ERR_TIMEOUT',
          `the Benchstream API at ${api} did not answer: ${(err as Error).message}`,
          {
            cause: err,
          },
        )
      }
      const body = await res.text()
      if (!res.ok) throw apiError(res.status, body)
      return (JSON.parse(body) as { rows: T[] }).rows
    },
    write: (sql, structure, file, format) =>
      writeThroughRelay(
        {
          url: `${api}/clickhouse/?default_format=Native&query=${encodeURIComponent(sql)}`,
          headers: auth,
        },
        api,
        structure,
        file,
        format,
      ),
    close: async () => undefined,
  }
}

/** A ClickHouse server (CLICKHOUSE_URL) and no API: read with its client, the rows as Native from its HTTP. */
function serverSource(cfg: ClickHouseConfig): Source {
  const ch = openClickHouse(cfg)
  return {
    where: ch.location,
    database: cfg.database,
    rows: (sql) => queryRows(ch, sql),
    write: (sql, structure, file, format) =>
      writeThroughRelay(
        {
          url:
            `${cfg.url!.replace(/\/+$/, '')}/?default_format=Native&database=${encodeURIComponent(cfg.database)}` +
            `&query=${encodeURIComponent(sql)}`,
          headers: { authorization: `Basic ${Buffer.from(`${cfg.user}:${cfg.password}`).toString('base64')}` },
          ...(cfg.caPem === undefined ? {} : { caPem: cfg.caPem }),
        },
        ch.location,
        structure,
        file,
        format,
      ),
    close: () => ch.close(),
  }
}

/** No server holds the embedded data directory: this process opens it and writes the file from it. */
function embeddedSource(cfg: ClickHouseConfig): Source {
  const ch = openClickHouse(cfg)
  return {
    where: ch.location,
    database: cfg.database,
    async rows<T>(sql: string): Promise<T[]> {
      try {
        return await queryRows<T>(ch, sql)
      } catch (err) {
        if (/Database \S+ does(n't| not) exist|UNKNOWN_DATABASE/.test((err as Error).message))
          throw new BenchstreamError(
            'BS_ERR_NOT_FOUND',
            `no Benchstream data in ${ch.location} yet: \`benchstream server\` or \`benchstream demo\` creates it`,
            { cause: err },
          )
        throw err
      }
    },
    async write(sql, structure, file, format) {
      await ch.client.command({
        query:
          `INSERT INTO FUNCTION file(${lit(file)}, ${lit(format)}, ${lit(structure)}) ` +
          `${sql} SETTINGS ${WRITE_SETTINGS}`,
      })
      const [r] = await queryRows<{ n: string }>(
        ch,
        `SELECT count() AS n FROM file(${lit(file)}, ${lit(format)}, ${lit(structure)}) SETTINGS ${COUNT_SETTINGS}`,
      )
      return Number(r?.n ?? 0)
    },
    close: () => ch.close(),
  }
}

/** This process's chDB reads the rows (Native) through a relay and writes the file. */
async function writeThroughRelay(
  target: { url: string; headers: Record<string, string>; caPem?: string },
  where: string,
  structure: string,
  file: string,
  format: string,
): Promise<number> {
  const relay = await startRelay(target)
  // Loaded here: the engine takes a moment to load, which a refused command line need not wait for.
  const { Session } = await import('chdb')
  const session = new Session()
  try {
    await session.queryAsync(
      `INSERT INTO FUNCTION file(${lit(file)}, ${lit(format)}, ${lit(structure)}) ` +
        `SELECT * FROM url(${lit(relay.url)}, 'Native', ${lit(structure)}) SETTINGS ${WRITE_SETTINGS}`,
      { format: 'TSV' },
    )
    const failure = relay.failure()
    if (failure !== undefined) throw exportFailed(where, failure)
    // The rows the file holds, read back by the engine that wrote it (Parquet and Arrow: from their metadata).
    const n = await session.queryAsync(
      `SELECT count() FROM file(${lit(file)}, ${lit(format)}, ${lit(structure)}) SETTINGS ${COUNT_SETTINGS}`,
      { format: 'TSV' },
    )
    return Number(n.text().trim())
  } catch (err) {
    const failure = relay.failure()
    if (failure !== undefined) throw exportFailed(where, failure, err)
    throw new BenchstreamError('BS_ERR_QUERY_FAILED', `writing the file failed: ${(err as Error).message}`, {
      cause: err,
    })
  } finally {
    session.close()
    await relay.close()
  }
}

function exportFailed(where: string, failure: string, cause?: unknown): BenchstreamError {
  // The API's error answers are JSON ({ code, message }); ClickHouse's are its one line.
  const api = /^HTTP (\d+): (\{[\s\S]*\})$/.exec(failure)
  if (api !== null) return apiError(Number(api[1]), api[2]!)
  return new BenchstreamError(
    'BS_ERR_QUERY_FAILED',
    `reading the rows from ${where} failed: ${failure}`,
    cause === undefined ? undefined : { cause },
  )
}
