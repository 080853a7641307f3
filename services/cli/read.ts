/**
 * `benchstream report|runs`: read commands (`sql` is sql.ts). With BENCHSTREAM_API_URL they
 * ask a running API (the way in while a server holds the embedded data
 * directory); otherwise they open ClickHouse themselves.
 */
import { READ_USAGE } from './usage.js'
import { openClickHouse, type ClickHouse } from '../adapters/clickhouse/client.js'
import { ClickHouseReadModel } from '../adapters/clickhouse/read-model.js'
import { parseFlags, type FlagSpecs } from '../common/args.js'
import { readInfraConfig } from '../common/infra-config.js'
import { ID_PATTERN, ID_RULE } from '../../schemas/events.v1.js'
import type { RunInfo } from '../../schemas/runs-api.v1.js'
import { BenchstreamError, isBenchstreamError } from '../core/errors.js'
import type { RunFilter } from '../core/ports/read-model.js'
import {
  evaluateThresholds,
  formatThresholdResults,
  parseThreshold,
  type Threshold,
} from '../core/reports/thresholds.js'
import { formatAnyRunReport, isReportedReport, readRunReport, type AnyRunReport } from '../core/reports/read-report.js'
import { THRESHOLD_FAILED_EXIT } from '../common/cli-env.js'
import { apiError, apiOf, openReader } from './reader.js'

/** The flags of each read command (parseArgs options). */
export const READ_FLAGS = {
  report: { json: { type: 'boolean' }, threshold: { type: 'string', multiple: true } },
  runs: {
    json: { type: 'boolean' },
    group: { type: 'string' },
    label: { type: 'string', multiple: true },
    limit: { type: 'string' },
  },
} as const satisfies Record<'report' | 'runs', FlagSpecs>

export async function readMain(cmd: 'report' | 'runs', argv: readonly string[]): Promise<number> {
  if (cmd === 'runs') return runsMain(argv)
  const parsed = parseFlags(argv, READ_FLAGS[cmd], READ_USAGE[cmd], true)
  const json = parsed.values.json === true
  const args = parsed.positionals
  if (args.length !== 1) {
    const what = args.length === 0 ? 'needs a run id' : `takes one run id, got ${args.length} arguments`
    throw new BenchstreamError('BS_ERR_USAGE', `${cmd} ${what}\n${READ_USAGE[cmd]}`)
  }
  const thresholds = (parsed.values.threshold ?? []).map(parseThreshold)
  const { api, token } = apiOf(process.env)
  if (api !== undefined) {
    const auth: Record<string, string> = token === undefined ? {} : { authorization: `Bearer ${token}` }
    const res = await fetch(`${api}/api/v1/runs/${encodeURIComponent(args[0]!)}/report`, { headers: auth })
    const body = await res.text()
    if (res.status === 404) throw notFound(args[0]!, api)
    if (!res.ok) throw apiError(res.status, body)
    return printReport(JSON.parse(body) as AnyRunReport, json, thresholds)
  }
  const infra = readInfraConfig(process.env)
  const ch = openClickHouse(infra.clickhouse)
  try {
    return await readDirect(args[0]!, ch, { json, thresholds })
  } catch (err) {
    if (isBenchstreamError(err)) throw err
    const msg = (err as Error).message.trim()
    // A data directory or server no Benchstream server has set up yet.
    if (/Database \S+ does(n't| not) exist|UNKNOWN_DATABASE/.test(msg))
      throw new BenchstreamError(
        'BS_ERR_NOT_FOUND',
        `no Benchstream data in ${ch.location} yet (database ${infra.clickhouse.database} does not exist): ` +
          `\`benchstream server\` or \`benchstream demo\` creates it`,
        { cause: err },
      )
    throw new BenchstreamError('BS_ERR_CLICKHOUSE', `ClickHouse at ${ch.location}: ${msg}`, { cause: err })
  } finally {
    await ch.close()
  }
}

interface ReadOptions {
  json: boolean
  thresholds: readonly Threshold[]
}

/** A report read from ClickHouse itself (no server holds the data). */
async function readDirect(arg: string, ch: ClickHouse, o: ReadOptions): Promise<number> {
  let r
  try {
    r = await readRunReport(new ClickHouseReadModel(ch), arg)
  } catch (err) {
    if (isBenchstreamError(err, 'BS_ERR_NOT_FOUND')) throw notFound(arg, ch.location)
    throw err
  }
  return printReport(r, o.json, o.thresholds)
}

function printReport(r: AnyRunReport, json: boolean, thresholds: readonly Threshold[]): number {
  if (isReportedReport(r)) {
    if (thresholds.length > 0)
      throw new BenchstreamError(
        'BS_ERR_USAGE',
        `run ${r.runId} is a summary run (YCSB's reports as printed): --threshold checks a run's merged figures, ` +
          `which only a run with events has (import raw data or interval logs to check thresholds); its figures ` +
          `are printed by benchstream report ${r.runId}`,
      )
    process.stdout.write(json ? JSON.stringify(r, null, 2) + '\n' : formatAnyRunReport(r))
    return 0
  }
  const results = evaluateThresholds(r, thresholds)
  if (json)
    process.stdout.write(
      JSON.stringify(
        thresholds.length === 0
          ? r
          : {
              ...r,
              thresholds: results.map((x) => ({ threshold: x.threshold.source, actual: x.actual, passed: x.passed })),
            },
        null,
        2,
      ) + '\n',
    )
  else {
    // Verdicts on stderr: stdout stays a YCSB report that parsers can read.
    process.stdout.write(formatAnyRunReport(r))
    process.stderr.write(formatThresholdResults(results, `run ${r.runId}, all clients`))
  }
  return results.some((x) => !x.passed) ? THRESHOLD_FAILED_EXIT : 0
}

/** `benchstream runs [--group G] [--label k=v]... [--limit N] [--json]`, through the API or ClickHouse. */
async function runsMain(argv: readonly string[]): Promise<number> {
  const usage = READ_USAGE.runs
  const parsed = parseFlags(argv, READ_FLAGS.runs, usage)
  const v = parsed.values
  const filter: RunFilter = {}
  if (v.group !== undefined) {
    if (!ID_PATTERN.test(v.group))
      throw new BenchstreamError(
        'BS_ERR_USAGE',
        `--group ${JSON.stringify(v.group)} is not allowed: ${ID_RULE}\n${usage}`,
      )
    filter.group = v.group
  }
  const labels: Record<string, string> = {}
  for (const t of v.label ?? []) {
    const eq = t.indexOf('=')
    const k = t.slice(0, eq)
    if (eq <= 0 || !ID_PATTERN.test(k))
      throw new BenchstreamError(
        'BS_ERR_USAGE',
        `--label ${JSON.stringify(t)} is not key=value with a key of ${ID_RULE}\n${usage}`,
      )
    if (Object.hasOwn(labels, k))
      throw new BenchstreamError('BS_ERR_USAGE', `--label ${k} is given twice; a run has one value per label\n${usage}`)
    labels[k] = t.slice(eq + 1)
  }
  if (Object.keys(labels).length > 0) filter.labels = labels
  const limit = v.limit === undefined ? 100 : Number(v.limit)
  if (!Number.isInteger(limit) || limit < 1 || limit > 1000)
    throw new BenchstreamError(
      'BS_ERR_USAGE',
      `--limit ${JSON.stringify(v.limit)} is not allowed: expected an integer from 1 to 1000\n${usage}`,
    )
  const reader = openReader(process.env)
  try {
    printRuns(await reader.runs(limit, filter), v.json === true)
  } finally {
    await reader.close()
  }
  return 0
}

function printRuns(runs: RunInfo[], json: boolean): void {
  if (json) {
    process.stdout.write(JSON.stringify(runs, null, 2) + '\n')
    return
  }
  for (const r of runs) {
    const group = r.group_id === '' ? '' : `\tgroup ${r.group_id}${r.repeat > 0 ? ` #${r.repeat}` : ''}`
    // A summary run: YCSB's final reports only, figures as printed (its target and threads are not known).
    const how =
      r.origin === 'reported'
        ? 'reported (YCSB report as printed)'
        : r.target > 0
          ? `target ${r.target} ops/s`
          : 'unthrottled'
    process.stdout.write(
      `${r.run_id}\t${r.started_at ?? ''}\t${r.workload === '' ? '(workload not recorded)' : r.workload}\t` +
        `${r.binding}\t${r.clients} client${r.clients === 1 ? '' : 's'}\t${how}${group}\t${JSON.stringify(r.labels)}\n`,
    )
  }
}

function notFound(runId: string, where: string): BenchstreamError {
  return new BenchstreamError(
    'BS_ERR_NOT_FOUND',
    `run ${JSON.stringify(runId)} has no data (in ${where}); list the runs with \`benchstream runs\``,
  )
}
