/**
 * `benchstream import-ycsb`: sends the HdrHistogram interval logs of a real
 * YCSB client (`-p measurementtype=hdrhistogram -p hdrhistogram.fileoutput=true`)
 * to the events topic as one Benchstream client of a run: a RUN_LIFECYCLE
 * start, one INTERVAL_HISTOGRAM per interval per operation, a RUN_LIFECYCLE
 * end carrying the counts sent. Several YCSB machines become one run by
 * importing each with the same --run-id and its own --client-id.
 */
import { IMPORT_YCSB_USAGE } from './usage.js'
import { readFileSync } from 'node:fs'
import { ID_PATTERN, ID_RULE, OPERATIONS, RECORD_KIND, type Operation, type RunLifecycle } from '../../schemas/events.v1.js'
import { createKafka, ensureTopics, partitioner } from '../adapters/kafka/client.js'
import { parseFlags } from '../common/args.js'
import { readInfraConfig } from '../common/infra-config.js'
import type { Env } from '../common/config.js'
import { BenchstreamError } from '../core/errors.js'
import { encodeIntervalHistogram, encodeJsonRecord } from '../core/codec/event-codec.js'
import { parseHdrLog, type HdrInterval } from '../core/ycsb/hdr-log.js'


/** Histogram records per produce request. */
const RECORDS_PER_SEND = 100
/** Bytes per produce request: well under the broker's default message.max.bytes (1 MiB) for the record batch. */
const BYTES_PER_SEND = 256 * 1024

export interface ImportYcsbArgs {
  runId: string
  clientId: string
  labels: Record<string, string>
  brokers: string | undefined
  files: Array<{ op: Operation; path: string }>
}

function usage(what: string): BenchstreamError {
  return new BenchstreamError('BS_ERR_USAGE', `${what}\n${IMPORT_YCSB_USAGE}`)
}

export function parseImportYcsbArgs(argv: readonly string[]): ImportYcsbArgs {
  const parsed = parseFlags(argv, { 'run-id': { type: 'string' }, 'client-id': { type: 'string' }, 'kafka-brokers': { type: 'string' }, label: { type: 'string', multiple: true } }, IMPORT_YCSB_USAGE, true)
  const { values, positionals } = parsed
  const labels: Record<string, string> = {}
  for (const kv of values.label ?? []) {
    const eq = kv.indexOf('=')
    const k = eq === -1 ? kv : kv.slice(0, eq)
    if (eq === -1 || !ID_PATTERN.test(k)) throw usage(`--label ${JSON.stringify(kv)} is not allowed: expected key=value with a key of ${ID_RULE}`)
    labels[k] = kv.slice(eq + 1)
  }
  const files: ImportYcsbArgs['files'] = []
  for (const a of positionals) {
    const eq = a.indexOf('=')
    if (eq <= 0 || eq === a.length - 1) throw usage(`unknown argument ${JSON.stringify(a)}: expected a flag above or OP=FILE`)
    const name = a.slice(0, eq).toUpperCase()
    const op = OPERATIONS.find((o) => o === name)
    if (op === undefined) throw usage(`operation ${JSON.stringify(a.slice(0, eq))} in ${JSON.stringify(a)} is not allowed: valid are ${OPERATIONS.join(', ')}`)
    if (files.some((f) => f.op === op)) throw usage(`operation ${op} is given twice; give one log per operation`)
    files.push({ op, path: a.slice(eq + 1) })
  }
  const runId = values['run-id']
  const clientId = values['client-id']
  if (runId === undefined || !ID_PATTERN.test(runId)) throw usage(`--run-id ${runId === undefined ? 'is required' : `${JSON.stringify(runId)} is not allowed`}: ${ID_RULE}`)
  if (clientId === undefined || !ID_PATTERN.test(clientId)) throw usage(`--client-id ${clientId === undefined ? 'is required' : `${JSON.stringify(clientId)} is not allowed`}: ${ID_RULE}`)
  if (files.length === 0) throw usage('at least one OP=FILE is required')
  return { runId, clientId, labels, brokers: values['kafka-brokers'], files }
}

export interface ImportSummary {
  /** Per operation: intervals and operations sent. */
  perOp: Record<string, { intervals: number; operations: number }>
  runtimeMs: number
}

/** Runs the command; returns the exit code. `env` and `out` are parameters so tests drive it in-process. */
export async function importYcsbMain(argv: readonly string[], env: Env = process.env, out: (s: string) => void = (s) => process.stdout.write(s)): Promise<number> {
  if (argv.includes('--help') || argv.includes('-h')) {
    out(IMPORT_YCSB_USAGE + '\n')
    return 0
  }
  const args = parseImportYcsbArgs(argv)
  const infra = readInfraConfig(args.brokers === undefined ? env : { ...env, KAFKA_BROKERS: args.brokers })
  // Decode every file before sending anything: a bad line must not leave half a run behind.
  const logs = args.files.map((f) => {
    let text: string
    try {
      text = readFileSync(f.path, 'utf8')
    } catch (err) {
      throw new BenchstreamError('BS_ERR_USAGE', `cannot read ${f.op} log ${JSON.stringify(f.path)}: ${(err as Error).message}`, { cause: err })
    }
    return { op: f.op, intervals: parseHdrLog(text, f.path).intervals.filter((iv) => iv.total > 0) }
  })
  const all: HdrInterval[] = logs.flatMap((l) => l.intervals)
  if (all.length === 0) throw new BenchstreamError('BS_ERR_DECODE', `no interval with operations in ${args.files.map((f) => f.path).join(', ')}`)
  const firstUs = Math.min(...all.map((iv) => iv.startUs))
  const lastUs = Math.max(...all.map((iv) => iv.startUs + iv.lengthUs))
  const runtimeMs = Math.round((lastUs - firstUs) / 1000)

  const summary: ImportSummary = { perOp: {}, runtimeMs }
  const sent: Record<string, number> = {}
  for (const l of logs) {
    let ops = 0
    for (const iv of l.intervals) ops += iv.total
    summary.perOp[l.op] = { intervals: l.intervals.length, operations: ops }
    if (ops > 0) sent[`${l.op}/OK`] = ops
  }

  const kafka = createKafka(infra.kafka, `import-ycsb-${args.clientId}`)
  await ensureTopics(kafka, infra.kafka, infra.topics)
  // Idempotent: a retried send cannot write an interval twice.
  const producer = kafka.producer({ idempotent: true, maxInFlightRequests: 1, createPartitioner: partitioner, allowAutoTopicCreation: false })
  // One key for the whole client: its records stay in order on one partition, the end record last.
  const key = `${args.runId}:${args.clientId}`
  const lifecycle = (phase: 'start' | 'end', atUs: number): RunLifecycle => ({
    kind: RECORD_KIND.RUN_LIFECYCLE,
    phase,
    runId: args.runId,
    clientId: args.clientId,
    atUs,
    labels: { source: 'ycsb-hdr', ...args.labels },
    workload: '',
    binding: 'ycsb',
    threads: 0,
    target: 0,
    ...(phase === 'end' ? { sent, undelivered: 0, runtimeMs } : {}),
  })
  try {
    await producer.connect()
    const send = async (values: Buffer[]): Promise<void> => {
      await producer.send({ topic: infra.topics.events, acks: -1, messages: values.map((value) => ({ key, value })) })
    }
    await send([encodeJsonRecord(lifecycle('start', firstUs))])
    let pending: Buffer[] = []
    let pendingBytes = 0
    for (const l of logs) {
      for (const iv of l.intervals) {
        const value = encodeIntervalHistogram({ runId: args.runId, clientId: args.clientId, op: l.op, status: 'OK', intervalStartUs: iv.startUs, intervalLengthUs: iv.lengthUs, buckets: iv.buckets })
        if (pending.length > 0 && (pending.length >= RECORDS_PER_SEND || pendingBytes + value.length > BYTES_PER_SEND)) {
          await send(pending)
          pending = []
          pendingBytes = 0
        }
        pending.push(value)
        pendingBytes += value.length
      }
    }
    if (pending.length > 0) await send(pending)
    await send([encodeJsonRecord(lifecycle('end', lastUs))])
  } catch (err) {
    throw new BenchstreamError('BS_ERR_KAFKA', `cannot send to Kafka at ${infra.kafka.brokers.join(',')}: ${(err as Error).message}`, { cause: err })
  } finally {
    await producer.disconnect().catch(() => undefined)
  }
  out(formatImportSummary(args, summary))
  return 0
}

export function formatImportSummary(args: Pick<ImportYcsbArgs, 'runId' | 'clientId'>, s: ImportSummary): string {
  const lines = [`imported run ${args.runId}, client ${args.clientId}, ${(s.runtimeMs / 1000).toFixed(3)} s`]
  for (const [op, v] of Object.entries(s.perOp)) lines.push(`  ${op}: ${v.intervals} intervals, ${v.operations} operations`)
  return lines.join('\n') + '\n'
}
