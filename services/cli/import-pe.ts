/**
 * `benchstream import-pe`: what HBase's PerformanceEvaluation (`hbase pe`)
 * printed, into a summary run, as import-ycsb makes one of YCSB's final
 * reports. The file is read and checked whole first
 * (services/core/pe/pe-output.ts); then, per PE client, a RUN_LIFECYCLE
 * start, its SUMMARY_REPORT (format `pe`) and an end, all on one key so they
 * stay in order on one partition. `sendPeRun` is also what `benchstream pe`
 * (an experiment's `driver: pe`) sends when PE has run.
 */
import { closeSync, openSync, readSync, statSync } from 'node:fs'
import { ID_PATTERN, ID_RULE, RECORD_KIND, type RunLifecycle } from '../../schemas/events.v1.js'
import { KafkaRecordSender } from '../adapters/kafka/record-sender.js'
import { parseFlags, type FlagSpecs } from '../common/args.js'
import type { Env } from '../common/config.js'
import { readInfraConfig, type InfraConfig } from '../common/infra-config.js'
import { encodeJsonRecord } from '../core/codec/record-encoders.js'
import { BenchstreamError } from '../core/errors.js'
import { pickTest, planPeImport, type PeImportPlan } from '../core/pe/pe-import.js'
import { parsePeOutput } from '../core/pe/pe-output.js'
import { MAX_PE_FILE_BYTES, type PeOutput } from '../core/pe/pe-result.js'
import { IMPORT_PE_USAGE } from './usage.js'

export const IMPORT_PE_FLAGS = {
  'run-id': { type: 'string' },
  'client-id': { type: 'string' },
  'kafka-brokers': { type: 'string' },
  label: { type: 'string', multiple: true },
  workload: { type: 'string' },
  test: { type: 'string' },
  'dry-run': { type: 'boolean' },
} as const satisfies FlagSpecs

export interface ImportPeArgs {
  runId: string
  clientId: string
  labels: Record<string, string>
  brokers: string | undefined
  file: string
  workload: string | undefined
  test: string | undefined
  dryRun: boolean
}

function usage(what: string): BenchstreamError {
  return new BenchstreamError('BS_ERR_USAGE', `${what}\n${IMPORT_PE_USAGE}`)
}

/** `--label k=v` values, checked. */
export function parseLabels(values: readonly string[], usageText: string): Record<string, string> {
  const labels: Record<string, string> = {}
  for (const kv of values) {
    const eq = kv.indexOf('=')
    const k = eq === -1 ? kv : kv.slice(0, eq)
    if (eq === -1 || !ID_PATTERN.test(k) || kv.length - eq - 1 > 256)
      throw new BenchstreamError(
        'BS_ERR_USAGE',
        `--label ${JSON.stringify(kv.slice(0, 80))} is not allowed: expected key=value with a key of ${ID_RULE} ` +
          `and a value of at most 256 characters\n${usageText}`,
      )
    labels[k] = kv.slice(eq + 1)
  }
  return labels
}

export function parseImportPeArgs(argv: readonly string[]): ImportPeArgs {
  const { values, positionals } = parseFlags(argv, IMPORT_PE_FLAGS, IMPORT_PE_USAGE, true)
  const id = (flag: string, v: string | undefined): string => {
    if (v === undefined || !ID_PATTERN.test(v))
      throw usage(`${flag} ${v === undefined ? 'is required' : `${JSON.stringify(v)} is not allowed`}: ${ID_RULE}`)
    return v
  }
  const workload = values.workload
  if (workload !== undefined && !ID_PATTERN.test(workload))
    throw usage(`--workload ${JSON.stringify(workload)} is not allowed: a name of ${ID_RULE}`)
  if (positionals.length !== 1)
    throw usage(
      `one FILE is required (what hbase pe printed, saved with 2>&1), ` +
        `${positionals.length === 0 ? 'none' : positionals.length} given; ` +
        'several machines of one run: one import each, the same --run-id, each its own --client-id',
    )
  return {
    runId: id('--run-id', values['run-id']),
    clientId: id('--client-id', values['client-id']),
    labels: parseLabels(values.label ?? [], IMPORT_PE_USAGE),
    brokers: values['kafka-brokers'],
    file: positionals[0]!,
    workload,
    test: values.test,
    dryRun: values['dry-run'] === true,
  }
}

/** Reads and parses a PE output file: BS_ERR_USAGE unreadable, BS_ERR_TOO_LARGE too large, BS_ERR_DECODE not PE's. */
export function readPeFile(file: string): PeOutput {
  let size: number
  try {
    size = statSync(file).size
  } catch (err) {
    throw new BenchstreamError('BS_ERR_USAGE', `cannot read ${JSON.stringify(file)}: ${(err as Error).message}`, {
      cause: err,
    })
  }
  if (size > MAX_PE_FILE_BYTES)
    throw new BenchstreamError(
      'BS_ERR_TOO_LARGE',
      `${file} is ${size} bytes; at most ${MAX_PE_FILE_BYTES} (MAX_PE_FILE_BYTES) are read: keep PE's output ` +
        'of one test per file',
    )
  const fd = openSync(file, 'r')
  try {
    const buf = Buffer.alloc(size)
    let n = 0
    while (n < size) {
      const r = readSync(fd, buf, n, size - n, n)
      if (r === 0) break
      n += r
    }
    return parsePeOutput(buf.subarray(0, n), file)
  } finally {
    closeSync(fd)
  }
}

export async function importPeMain(
  argv: readonly string[],
  env: Env = process.env,
  out: (s: string) => void = (s) => process.stdout.write(s),
): Promise<number> {
  if (argv.includes('--help') || argv.includes('-h')) {
    out(IMPORT_PE_USAGE + '\n')
    return 0
  }
  const args = parseImportPeArgs(argv)
  const parsed = readPeFile(args.file)
  const plan = planPeImport(parsed, pickTest(parsed, args.test), args.clientId, args.workload)
  if (!args.dryRun) {
    const infra = readInfraConfig(args.brokers === undefined ? env : { ...env, KAFKA_BROKERS: args.brokers })
    const endUs = Date.now() * 1000
    await sendPeRun(infra, plan, {
      runId: args.runId,
      labels: { source: 'pe-import', ...args.labels },
      startUs: endUs,
      endUs,
      keyClient: args.clientId,
    })
  }
  out(formatPeImport(args, plan))
  return 0
}

export interface PeRunIds {
  runId: string
  labels: Record<string, string>
  /** When the run started and ended, µs since the epoch (an import: both now, PE's log holding no dates to trust). */
  startUs: number
  endUs: number
  /** The id all records are keyed by (one partition, in order): the machine's client id. */
  keyClient: string
  group?: string
  repetition?: number
  expectedClients?: number
  clockOffsetMs?: number
}

/** Sends the run: per PE client a lifecycle start, its SUMMARY_REPORT, a lifecycle end. */
export async function sendPeRun(infra: InfraConfig, plan: PeImportPlan, ids: PeRunIds): Promise<void> {
  const sender = await KafkaRecordSender.open(infra, `import-pe-${ids.keyClient}`, `${ids.runId}:${ids.keyClient}`)
  try {
    for (const c of plan.clients) {
      const common = {
        kind: RECORD_KIND.RUN_LIFECYCLE,
        runId: ids.runId,
        clientId: c.clientId,
        labels: ids.labels,
        workload: plan.workload,
        properties: plan.properties,
        binding: 'hbase',
        threads: 1,
        target: 0,
        ...(ids.group === undefined ? {} : { group: ids.group }),
        ...(ids.repetition === undefined ? {} : { repeat: ids.repetition }),
      } as const
      const start: RunLifecycle = {
        ...common,
        phase: 'start',
        atUs: ids.startUs,
        ...(ids.expectedClients === undefined ? {} : { expectedClients: ids.expectedClients }),
        ...(ids.clockOffsetMs === undefined ? {} : { clockOffsetMs: ids.clockOffsetMs }),
      }
      await sender.add(encodeJsonRecord(start))
      await sender.add(
        encodeJsonRecord({
          kind: RECORD_KIND.SUMMARY_REPORT,
          runId: ids.runId,
          clientId: c.clientId,
          atUs: ids.endUs,
          ...c.body,
        }),
      )
      const end: RunLifecycle = {
        ...common,
        phase: 'end',
        atUs: ids.endUs,
        sent: {},
        undelivered: 0,
        runtimeMs: c.client.durationMs,
      }
      await sender.add(encodeJsonRecord(end))
    }
    await sender.flush()
  } finally {
    await sender.close()
  }
}

export function formatPeImport(args: Pick<ImportPeArgs, 'runId' | 'clientId' | 'dryRun'>, plan: PeImportPlan): string {
  const lines = [
    `${args.dryRun ? 'checked (--dry-run: nothing sent)' : 'imported'} run ${args.runId}: PE ${plan.test.test} as ` +
      `workload ${plan.workload}, ${plan.clients.length} client${plan.clients.length === 1 ? '' : 's'} ` +
      `(${plan.clients.map((c) => c.clientId).join(', ')}), ${(plan.runtimeMs / 1000).toFixed(3)} s`,
    ...plan.described.map((d) => `  ${d}`),
    `  stored as reported (reported_measurements), a summary run: benchstream report ${args.runId}, compare, history`,
  ]
  return lines.join('\n') + '\n'
}
