/**
 * What `benchstream import-pe` (and `driver: pe` in an experiment) sends for
 * one PE test: a summary run, as YCSB's final reports become one. Each PE
 * client (a `TestClient-N` thread, a map task, an old line) is a client of
 * the run with one SUMMARY_REPORT record (format `pe`): its operations,
 * time and latency summary as PE printed them. Nothing is merged here:
 * the reported-run code merges clients where that is exact (operations and
 * throughput add up, averages weigh by operations, least minimum, largest
 * maximum) and keeps percentiles per client, since the p99 of several
 * clients cannot be had from their p99s. Pure: a parsed test in, records out.
 */
import { ID_PATTERN, ID_RULE, type SummaryReportBody } from '../../../schemas/events.v1.js'
import { BenchstreamError } from '../errors.js'
import { PE_RESERVOIR, type PeClient, type PeOutput, type PeTest } from './pe-result.js'

/** One client of the run: its id and its SUMMARY_REPORT body (run, client and time are the sender's). */
export interface PePlannedClient {
  clientId: string
  client: PeClient
  body: Omit<SummaryReportBody, 'runId' | 'clientId' | 'atUs'>
}

export interface PeImportPlan {
  test: PeTest
  /** The workload the run records: PE's command (`randomRead`), or a name made of an old line's words. */
  workload: string
  clients: PePlannedClient[]
  /** PE's options as the run's properties (`pe.valueSize`, ...): compare tells runs of other options apart. */
  properties: Record<string, string>
  /** The longest client's time: the run's length, its clients having started together. */
  runtimeMs: number
  operations: number
  /** Lines for the import's summary: what was read, and what holds only as PE printed it. */
  described: string[]
}

/** The test a run is made of: the only one of the file, or the one `--test` names (command, class or words). */
export function pickTest(out: PeOutput, wanted: string | undefined): PeTest {
  const names = (t: PeTest): string[] => [t.test, ...(t.command === undefined ? [] : [t.command])]
  const list = out.tests.map((t) => `${t.command ?? t.test} (line ${t.line})`).join(', ')
  if (wanted === undefined) {
    if (out.tests.length === 1) return out.tests[0]!
    throw new BenchstreamError(
      'BS_ERR_USAGE',
      `${out.source} holds ${out.tests.length} PE tests (${list}); a run is one test: name it with --test`,
    )
  }
  const hits = out.tests.filter((t) => names(t).some((n) => n.toLowerCase() === wanted.toLowerCase()))
  if (hits.length === 1) return hits[0]!
  throw new BenchstreamError(
    'BS_ERR_USAGE',
    hits.length === 0
      ? `${out.source} holds no PE test ${JSON.stringify(wanted)}; it holds ${list}`
      : `${out.source} holds ${hits.length} runs of ${wanted} (lines ${hits.map((t) => t.line).join(', ')}); ` +
          'a run is one of them: give each its own file',
  )
}

/** The workload name of a test: PE's command, or the old line's words as a name (`reading-random-records`). */
export function peWorkload(t: PeTest): string {
  if (t.command !== undefined) return t.command
  const slug = t.test
    .replace(/([a-z])([A-Z])/g, '$1-$2')
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, '-')
    .replace(/^-+|-+$/g, '')
  return slug === '' ? 'pe' : slug.slice(0, 64)
}

/**
 * Plans the run of one test as client `clientId` (one machine's PE process): with one PE client, that id; with
 * several, `<clientId>.<PE client>` (`node1.TestClient-3`). Throws BS_ERR_USAGE when such an id breaks the id rule.
 */
export function planPeImport(out: PeOutput, test: PeTest, clientId: string, workload?: string): PeImportPlan {
  const several = test.clients.length > 1
  const clients = test.clients.map((c): PePlannedClient => {
    const id = several ? `${clientId}.${c.name}` : clientId
    if (!ID_PATTERN.test(id))
      throw new BenchstreamError(
        'BS_ERR_USAGE',
        `client id ${JSON.stringify(id)} (--client-id and PE's client ${c.name}) breaks the id rule: ${ID_RULE}; ` +
          'give a shorter --client-id',
      )
    return { clientId: id, client: c, body: body(out.source, test, c) }
  })
  const runtimeMs = Math.max(...test.clients.map((c) => c.durationMs))
  const operations = test.clients.reduce((a, c) => a + c.operations, 0)
  const properties: Record<string, string> = {}
  for (const [k, v] of Object.entries(test.options)) properties[`pe.${k}`] = v
  const described = [
    `${out.source}: PE ${test.test}${test.command === undefined ? '' : ` (${test.command})`}, ` +
      (test.form === 'current'
        ? "today's form (latency summaries per client), "
        : 'the old form (time and rows per client), ') +
      `${test.clients.length} client${several ? 's' : ''}, ${operations} operations as ` +
      `${test.op ?? 'a test PE does not ship (kept as "other")'}, ` +
      `${out.ignoredLines} other lines not read`,
  ]
  for (const c of test.clients) {
    const l = c.latency
    described.push(
      `  ${c.name}: ${c.operations} operations in ${c.durationMs} ms` +
        (l === undefined
          ? ' (no latencies: the old form)'
          : `, latency mean ${l.meanUs} µs over ${l.measures ?? '?'} measures` +
            (l.sampled ? ` (PE kept a uniform sample of ${PE_RESERVOIR} of them: figures of the sample)` : '')),
    )
  }
  if (several)
    described.push(
      '  percentiles stay per client: not mergeable from summaries (the p99 of all operations is not a function ' +
        "of each client's p99); operations, throughput, averages (weighted), min and max merge exactly",
    )
  return { test, workload: workload ?? peWorkload(test), clients, properties, runtimeMs, operations, described }
}

/** A PE client as a SUMMARY_REPORT body: its figures as printed, one measurement named after its operation. */
function body(source: string, t: PeTest, c: PeClient): PePlannedClient['body'] {
  const m: SummaryReportBody['measurements'][number] = {
    name: t.op ?? t.test.slice(0, 128),
    kind: t.op === undefined ? 'other' : 'operation',
    op: t.op ?? '',
    latency: 'measured',
    status: 'OK',
    operations: c.operations,
    percentiles: (c.latency?.percentiles ?? []).map((p) => ({
      percentile: p.percentile,
      valueUs: p.valueUs,
      unit: 'us' as const,
    })),
    // PE counts no failed operations: a failure ends its client, and the run fails.
    returns: {},
  }
  if (c.latency !== undefined) {
    m.averageUs = c.latency.meanUs
    m.minUs = c.latency.minUs
    m.maxUs = c.latency.maxUs
  }
  const b: PePlannedClient['body'] = {
    source: `${source} (${c.name})`.slice(0, 1024),
    format: 'pe',
    runtimeMs: c.durationMs,
    measurements: [m],
  }
  // PE's own throughput of a client: its rows over its time.
  if (c.durationMs > 0) b.throughputOpsPerSec = (c.operations * 1000) / c.durationMs
  return b
}
