/**
 * `benchstream report|sql|runs`: read commands. With BENCHSTREAM_API_URL they
 * ask a running API (the way in while a server holds the embedded data
 * directory); otherwise they open ClickHouse themselves.
 */
import { parseArgs } from 'node:util'
import { openClickHouse } from '../adapters/clickhouse/client.js'
import { ClickHouseReadModel } from '../adapters/clickhouse/read-model.js'
import { readInfraConfig } from '../common/infra-config.js'
import { BenchstreamError } from '../core/errors.js'
import { formatYcsb } from '../core/reports/ycsb-report.js'
import { readCliEnv } from './config.js'

const USAGE = {
  report: 'usage: benchstream report <run-id> [--json]',
  sql: 'usage: benchstream sql "SELECT ..."',
  runs: 'usage: benchstream runs [--json]',
} as const

/** Row cap of `benchstream sql` when it opens ClickHouse itself (the API has API_MAX_QUERY_ROWS). */
const LOCAL_QUERY_ROWS = 10_000

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
  const api = readCliEnv(process.env).apiUrl
  if (api !== undefined) {
    const url = cmd === 'report' ? `${api}/api/v1/runs/${encodeURIComponent(args[0]!)}/report${json ? '' : '?format=text'}` : cmd === 'runs' ? `${api}/api/v1/runs` : `${api}/api/v1/query`
    const res = await fetch(url, cmd === 'sql' ? { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ sql: args[0] }) } : {})
    const body = await res.text()
    process.stdout.write(cmd === 'sql' || cmd === 'runs' || json ? formatJson(body) : body)
    return res.ok ? 0 : 1
  }
  const infra = readInfraConfig(process.env)
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
      const { rows } = await rm.query(args[0]!, LOCAL_QUERY_ROWS)
      for (const row of rows) process.stdout.write(JSON.stringify(row) + '\n')
    }
  } finally {
    await ch.close()
  }
  return 0
}

function formatJson(body: string): string {
  try {
    return JSON.stringify(JSON.parse(body), null, 2) + '\n'
  } catch {
    return body
  }
}
