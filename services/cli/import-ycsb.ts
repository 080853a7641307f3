/**
 * `benchstream import-ycsb`: what a real YCSB client wrote, into a run, as
 * one Benchstream client (--run-id, --client-id):
 *
 * - files (each format told from its content, services/core/ycsb/import.ts):
 *   HdrHistogram interval logs as INTERVAL_HISTOGRAM records (an `Intended-`
 *   log in the intended histogram of its operation), raw data as OPS
 *   events, text and JSON reports as SUMMARY_REPORT records (figures as
 *   reported). Every file is read and checked before anything is sent.
 * - `--follow PREFIX`: the interval logs a running YCSB writes
 *   (`-p hdrhistogram.fileoutput=true -p hdrhistogram.output.path=PREFIX`),
 *   each interval sent as it appears, until YCSB's process (--pid) exits or
 *   nothing new came for --idle-timeout seconds.
 *
 * A RUN_LIFECYCLE start before and an end (with the counts sent) after, all
 * on one key so they stay in order on one partition. The command line is
 * import-ycsb-args.ts, the workload's discovery import-ycsb-workload.ts,
 * --follow import-ycsb-follow.ts.
 */
import { IMPORT_YCSB_USAGE } from './usage.js'
import { openSync, readSync, closeSync, statSync } from 'node:fs'
import { RECORD_KIND } from '../../schemas/events.v1.js'
import { KafkaRecordSender } from '../adapters/kafka/record-sender.js'
import { waitBesideStartingServer } from '../adapters/process/server-wait.js'
import { readInfraConfig } from '../common/infra-config.js'
import type { Env } from '../common/config.js'
import { BenchstreamError } from '../core/errors.js'
import { encodeIntervalHistogram, encodeJsonRecord } from '../core/codec/record-encoders.js'
import { MAX_YCSB_FILE_BYTES, parseYcsbFile } from '../core/ycsb/import.js'
import { planImport, type ImportPlan } from '../core/ycsb/import-plan.js'
import type { YcsbFile } from '../core/ycsb/report-types.js'
import { parseImportYcsbArgs, type ImportYcsbArgs } from './import-ycsb-args.js'
import { follow } from './import-ycsb-follow.js'
import { lifecycle, rawMessages } from './import-ycsb-records.js'
import { findWorkload, type FoundWorkload } from './import-ycsb-workload.js'

/** The processor's default MAX_EVENT_AGE_S: older data is dead-lettered there, so say so here. */
const DEFAULT_MAX_EVENT_AGE_US = 30 * 86_400e6

/**
 * Reads and parses one file; BS_ERR_USAGE when it cannot be read, BS_ERR_TOO_LARGE above MAX_YCSB_FILE_BYTES,
 * BS_ERR_DECODE when it is not what YCSB writes.
 */
export function readYcsbFile(file: string, measurement: string | undefined): YcsbFile {
  let size: number
  try {
    size = statSync(file).size
  } catch (err) {
    throw new BenchstreamError('BS_ERR_USAGE', `cannot read ${JSON.stringify(file)}: ${(err as Error).message}`, {
      cause: err,
    })
  }
  if (size > MAX_YCSB_FILE_BYTES)
    throw new BenchstreamError(
      'BS_ERR_TOO_LARGE',
      `${file} is ${size} bytes; at most ${MAX_YCSB_FILE_BYTES} (MAX_YCSB_FILE_BYTES) are read. Import ` +
        `the run's HdrHistogram interval logs instead of raw data, or split the file`,
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
    return parseYcsbFile(file, buf.subarray(0, n), measurement === undefined ? {} : { measurement })
  } finally {
    closeSync(fd)
  }
}

/** Runs the command; returns the exit code. `env` and `out` are parameters so tests drive it in-process. */
export async function importYcsbMain(
  argv: readonly string[],
  env: Env = process.env,
  out: (s: string) => void = (s) => process.stdout.write(s),
  signal?: AbortSignal,
): Promise<number> {
  if (argv.includes('--help') || argv.includes('-h')) {
    out(IMPORT_YCSB_USAGE + '\n')
    return 0
  }
  const args = parseImportYcsbArgs(argv)
  const infra = readInfraConfig(args.brokers === undefined ? env : { ...env, KAFKA_BROKERS: args.brokers })
  // Started beside `benchstream server &`, which starts the local broker first: wait for it rather than fail.
  if (args.brokers === undefined && !args.dryRun) await waitBesideStartingServer(env, true)
  if (args.follow !== undefined) return follow(args, args.follow, infra, out, signal)

  // Every file is read and checked before anything is sent: a bad line must not leave half a run behind.
  const files = args.files.map((f) => readYcsbFile(f.path, f.measurement))
  const plan = planImport(files)
  const workload = findWorkload(args, files)
  const operations = Object.values(plan.sent).reduce((a, b) => a + b, 0)
  if (operations === 0 && plan.summaries.length === 0)
    throw new BenchstreamError(
      'BS_ERR_DECODE',
      `nothing to import in ${args.files.map((f) => f.path).join(', ')}: no operation in any interval ` +
        `or raw line, and no final report`,
    )
  if (plan.firstUs !== undefined && plan.firstUs < Date.now() * 1000 - DEFAULT_MAX_EVENT_AGE_US) {
    process.stderr.write(
      `benchstream: warning: the data starts ${new Date(plan.firstUs / 1000).toISOString()}, more ` +
        `than 30 days ago: a processor with the default MAX_EVENT_AGE_S dead-letters it\n`,
    )
  }
  if (!args.dryRun) {
    const nowUs = Date.now() * 1000
    const sender = await KafkaRecordSender.open(infra, `import-ycsb-${args.clientId}`, `${args.runId}:${args.clientId}`)
    try {
      await sender.send([encodeJsonRecord(lifecycle(args, 'start', plan.firstUs ?? nowUs, 'ycsb-import', workload))])
      for (const iv of plan.intervals)
        await sender.add(encodeIntervalHistogram({ runId: args.runId, clientId: args.clientId, ...iv }))
      for (const buf of rawMessages(args, plan)) await sender.add(buf)
      for (const s of plan.summaries)
        await sender.add(
          encodeJsonRecord({
            kind: RECORD_KIND.SUMMARY_REPORT,
            runId: args.runId,
            clientId: args.clientId,
            atUs: nowUs,
            ...s,
          }),
        )
      await sender.flush()
      await sender.send([
        encodeJsonRecord(
          lifecycle(args, 'end', plan.lastUs ?? nowUs, 'ycsb-import', workload, plan.sent, plan.runtimeMs),
        ),
      ])
    } finally {
      await sender.close()
    }
  }
  out(formatImportSummary(args, plan, workload))
  return 0
}

export function formatImportSummary(
  args: Pick<ImportYcsbArgs, 'runId' | 'clientId' | 'dryRun'>,
  plan: ImportPlan,
  workload?: FoundWorkload,
): string {
  const operations = Object.values(plan.sent).reduce((a, b) => a + b, 0)
  const events = plan.raw.reduce((a, s) => a + s.startUs.length, 0)
  const lines = [
    `${args.dryRun ? 'checked (--dry-run: nothing sent)' : 'imported'} run ${args.runId}, client ` +
      `${args.clientId}${plan.runtimeMs === undefined ? '' : `, ${(plan.runtimeMs / 1000).toFixed(3)} s`}`,
  ]
  for (const d of plan.described) lines.push(`  ${d}`)
  if (workload !== undefined)
    lines.push(
      `  workload: ${workload.name === undefined ? workload.from : `${workload.name} (from ${workload.from})`}`,
    )
  const byOp = Object.entries(plan.sent)
    .map(([k, v]) => `${k} ${v}`)
    .join(', ')
  lines.push(
    `  operations: ${operations}${byOp === '' ? '' : ` (${byOp})`}, as ${plan.intervals.length} ` +
      `interval records and ${events} events`,
  )
  if (plan.summaries.length > 0)
    lines.push(`  final reports: ${plan.summaries.length}, stored as reported (reported_measurements)`)
  for (const c of plan.cleanup)
    lines.push(`  CLEANUP: ${c.operations} in ${c.source} (reported, not counted as operations)`)
  if (plan.intendedClamped > 0)
    lines.push(`  intended latency: ${plan.intendedClamped} raw pairs below the measured latency kept the measured one`)
  return lines.join('\n') + '\n'
}
