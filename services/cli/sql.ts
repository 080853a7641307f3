/**
 * `benchstream sql [--json] [--max-rows N] "SELECT ..."`: one read-only
 * query, its result streamed to stdout as it comes (through a running
 * server's API, or the guard on ClickHouse itself when none runs). Every row
 * comes back; --max-rows cuts the result where the user asked, and says so
 * on stderr. A failure, part-way included, exits non-zero with the error.
 */
import { once } from 'node:events'
import { openSqlGuard } from '../adapters/clickhouse/sql-guard.js'
import { readApiConfig } from '../api/config.js'
import { parseFlags, type FlagSpecs } from '../common/args.js'
import { readInfraConfig } from '../common/infra-config.js'
import { BenchstreamError } from '../core/errors.js'
import { postStream } from './api-stream.js'
import { apiOf } from './reader.js'
import { READ_USAGE } from './usage.js'

export const SQL_FLAGS = {
  json: { type: 'boolean' },
  'max-rows': { type: 'string' },
} as const satisfies FlagSpecs

export async function sqlMain(argv: readonly string[]): Promise<number> {
  const usage = READ_USAGE.sql
  const parsed = parseFlags(argv, SQL_FLAGS, usage, true)
  const args = parsed.positionals
  if (args.length !== 1)
    throw new BenchstreamError(
      'BS_ERR_USAGE',
      `sql ${args.length === 0 ? 'needs one query' : `takes one query (quote it), got ${args.length} arguments`}` +
        `\n${usage}`,
    )
  const raw = parsed.values['max-rows']
  const maxRows = raw === undefined ? undefined : Number(raw)
  if (maxRows !== undefined && (!Number.isSafeInteger(maxRows) || maxRows < 1))
    throw new BenchstreamError(
      'BS_ERR_USAGE',
      `--max-rows ${JSON.stringify(raw)} is not allowed: a whole number of rows, at least 1\n${usage}`,
    )
  // What ClickHouse's own client prints: a table on a terminal, TSV into a pipe, JSON with --json, or the query's
  // FORMAT.
  const format = parsed.values.json === true ? 'JSON' : process.stdout.isTTY ? 'PrettyCompact' : 'TSV'
  const sql = args[0]!
  const { api, token } = apiOf(process.env)
  let truncated: boolean
  if (api !== undefined) {
    const answer = await postStream(`${api}/api/v1/query`, token, {
      sql,
      format,
      ...(maxRows === undefined ? {} : { maxRows }),
    })
    for await (const piece of answer.body) await write(piece)
    truncated = answer.trailers()['x-benchstream-truncated'] === 'true'
  } else {
    const infra = readInfraConfig(process.env)
    const guard = await openSqlGuard(infra.clickhouse, {
      database: infra.clickhouse.database,
      limits: readApiConfig(process.env).query,
      concurrency: 1,
      queue: 0,
      queueTimeoutMs: 0,
    }).catch((err: unknown) => {
      if (err instanceof BenchstreamError) throw err
      const msg = (err as Error).message.trim()
      // A data directory or server no Benchstream server has set up yet.
      if (/Database \S+ does(n't| not) exist|UNKNOWN_DATABASE/.test(msg))
        throw new BenchstreamError(
          'BS_ERR_NOT_FOUND',
          `no Benchstream data yet (database ${infra.clickhouse.database} does not exist): \`benchstream server\` ` +
            `or \`benchstream demo\` creates it`,
          { cause: err },
        )
      throw new BenchstreamError('BS_ERR_CLICKHOUSE', `ClickHouse: ${msg}`, { cause: err })
    })
    try {
      const result = await guard.stream(sql, { format, ...(maxRows === undefined ? {} : { cut: { rows: maxRows } }) })
      for await (const piece of result) await write(piece)
      truncated = result.truncated
    } finally {
      await guard.close()
    }
  }
  if (truncated) process.stderr.write(`benchstream: the result was cut at ${maxRows} rows, as --max-rows asked\n`)
  return 0
}

/** Writes to stdout, waiting while a slow reader (a pipe) catches up: the result is never held whole. */
async function write(piece: Uint8Array): Promise<void> {
  if (!process.stdout.write(piece)) await once(process.stdout, 'drain')
}
