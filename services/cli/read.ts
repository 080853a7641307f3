/**
 * `benchstream report|sql|runs`: read commands. With BENCHSTREAM_API_URL they
 * ask a running API (the way in while a processor holds the embedded data
 * directory); otherwise they open ClickHouse themselves.
 */
import { openClickHouse, queryRows } from '../adapters/clickhouse/client.js'
import { listRuns, runReport } from '../adapters/clickhouse/read-model.js'
import { readInfraConfig } from '../common/infra-config.js'
import { BenchstreamError } from '../core/errors.js'
import { formatYcsb, type Report } from '../core/reports/ycsb-report.js'

export async function readMain(cmd: 'report' | 'sql' | 'runs', argv: readonly string[]): Promise<number> {
  const json = argv.includes('--json')
  const args = argv.filter((a) => a !== '--json')
  if ((cmd === 'report' || cmd === 'sql') && args.length !== 1) {
    throw new BenchstreamError('BS_ERR_USAGE', cmd === 'report' ? 'usage: benchstream report <run-id> [--json]' : 'usage: benchstream sql "SELECT ..."')
  }
  const api = process.env.BENCHSTREAM_API_URL
  if (api !== undefined && api !== '') {
    const url = cmd === 'report' ? `${api}/api/v1/runs/${encodeURIComponent(args[0]!)}/report${json ? '' : '?format=text'}` : cmd === 'runs' ? `${api}/api/v1/runs` : `${api}/api/v1/query`
    const res = await fetch(url, cmd === 'sql' ? { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ sql: args[0] }) } : {})
    const body = await res.text()
    process.stdout.write(cmd === 'sql' || cmd === 'runs' || json ? formatJson(body) : body)
    return res.ok ? 0 : 1
  }
  const infra = readInfraConfig(process.env)
  const ch = openClickHouse(infra.clickhouse)
  try {
    if (cmd === 'report') {
      const r = await runReport(ch, args[0]!)
      process.stdout.write(json ? JSON.stringify(r, null, 2) + '\n' : formatYcsb(r as Report))
    } else if (cmd === 'runs') {
      for (const r of await listRuns(ch)) process.stdout.write(`${r.run_id}\t${r.started_at ?? ''}\t${r.workload}\t${r.binding}\t${r.operations} ops\t${JSON.stringify(r.labels)}\n`)
    } else {
      const rows = await queryRows<Record<string, unknown>>(ch, args[0]!)
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
