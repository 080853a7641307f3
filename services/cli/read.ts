/**
 * `benchstream report|sql|runs`: read commands. With BENCHSTREAM_API_URL they
 * ask a running API (the way in while a server holds the embedded data
 * directory); otherwise they open ClickHouse themselves.
 */
import { parseArgs } from 'node:util'
import { openClickHouse } from '../adapters/clickhouse/client.js'
import { ClickHouseReadModel } from '../adapters/clickhouse/read-model.js'
import { openSqlGuard } from '../adapters/clickhouse/sql-guard.js'
import { readInfraConfig } from '../common/infra-config.js'
import { findServer } from '../common/server-file.js'
import { readApiConfig } from '../api/config.js'
import { BenchstreamError, ERROR_CODES, type ErrorCode } from '../core/errors.js'
import { formatYcsb } from '../core/reports/ycsb-report.js'
import { readCliEnv } from './config.js'

const USAGE = {
  report: 'usage: benchstream report <run-id> [--json]',
  sql: 'usage: benchstream sql "SELECT ..."',
  runs: 'usage: benchstream runs [--json]',
} as const


export async function readMain(cmd: 'report' | 'sql' | 'runs', argv: readonly string[]): Promise<number> {
  let parsed
  try {
    parsed = parseArgs({ args: [...argv], options: { json: { type: 'boolean' } }, allowPositionals: true, strict: true })
  } catch (err) {
    throw new BenchstreamError('BS_ERR_USAGE', `${(err as Error).message}\n${USAGE[cmd]}`)
  }
  const json = parsed.values.json === true
  const args = parsed.positionals
  if ((cmd === 'report' || cmd === 'sql') !== (args.length === 1) || (cmd === 'runs' && args.length > 0)) throw new BenchstreamError('BS_ERR_USAGE', USAGE[cmd])
  // Ad hoc SQL prints what ClickHouse's own client would: a table on a
  // terminal, TSV into a pipe, JSON with --json, or the query's FORMAT.
  const sqlFormat = json ? 'JSON' : process.stdout.isTTY ? 'PrettyCompact' : 'TSV'
  const cliEnv = readCliEnv(process.env)
  const infra = readInfraConfig(process.env)
  // A server holding the embedded data directory is reached through its API.
  const api = cliEnv.apiUrl ?? (infra.clickhouse.url === undefined ? findServer(infra.dataDir)?.apiUrl : undefined)
  const apiToken = cliEnv.apiToken
  if (api !== undefined) {
    const auth: Record<string, string> = apiToken === undefined ? {} : { authorization: `Bearer ${apiToken}` }
    const url = cmd === 'report' ? `${api}/api/v1/runs/${encodeURIComponent(args[0]!)}/report${json ? '' : '?format=text'}` : cmd === 'runs' ? `${api}/api/v1/runs` : `${api}/api/v1/query`
    const res = await fetch(url, cmd === 'sql' ? { method: 'POST', headers: { 'content-type': 'application/json', ...auth }, body: JSON.stringify({ sql: args[0], format: sqlFormat }) } : { headers: auth })
    const body = await res.text()
    if (!res.ok) throw apiError(res.status, body)
    if (cmd === 'sql') {
      process.stdout.write(body)
      if (res.headers.get('x-benchstream-truncated') === 'true') process.stderr.write('benchstream: the result was cut at the row or byte cap (API_MAX_QUERY_ROWS, API_QUERY_MAX_BYTES)\n')
    } else process.stdout.write(cmd === 'runs' || json ? formatJson(body) : body)
    return 0
  }
  const ch = openClickHouse(infra.clickhouse)
  const rm = new ClickHouseReadModel(ch)
  try {
    if (cmd === 'report') {
      const r = await rm.runReport(args[0]!)
      process.stdout.write(json ? JSON.stringify(r, null, 2) + '\n' : formatYcsb(r))
    } else if (cmd === 'runs') {
      const runs = await rm.listRuns(100)
      if (json) process.stdout.write(JSON.stringify(runs, null, 2) + '\n')
      else for (const r of runs) process.stdout.write(`${r.run_id}\t${r.started_at ?? ''}\t${r.workload}\t${r.binding}\t${r.operations} ops\t${JSON.stringify(r.labels)}\n`)
    } else {
      const q = readApiConfig(process.env).query
      const guard = await openSqlGuard(infra.clickhouse, { database: infra.clickhouse.database, limits: q, concurrency: 1, queue: 0, queueTimeoutMs: 0 })
      try {
        const r = await guard.run(args[0]!, { format: sqlFormat })
        process.stdout.write(r.text ?? '')
        if (r.truncated) process.stderr.write(`benchstream: the result was cut at ${r.limits.maxRows} rows or ${r.limits.maxBytes} bytes (API_MAX_QUERY_ROWS, API_QUERY_MAX_BYTES)\n`)
      } finally {
        await guard.close()
      }
    }
  } finally {
    await ch.close()
  }
  return 0
}

/** An API error answer ({ code, message }) as the error it stands for. */
function apiError(status: number, body: string): BenchstreamError {
  try {
    const e = JSON.parse(body) as { code?: string; message?: string }
    if (typeof e.code === 'string' && e.code in ERROR_CODES) return new BenchstreamError(e.code as ErrorCode, e.message ?? `HTTP ${status}`)
  } catch {
    // not JSON: fall through
  }
  return new BenchstreamError('BS_ERR_BAD_REQUEST', `the API answered HTTP ${status}: ${body.slice(0, 500)}`)
}

function formatJson(body: string): string {
  try {
    return JSON.stringify(JSON.parse(body), null, 2) + '\n'
  } catch {
    return body
  }
}
