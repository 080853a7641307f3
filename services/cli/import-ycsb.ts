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
 * on one key so they stay in order on one partition.
 */
import { IMPORT_YCSB_USAGE } from './usage.js'
import { existsSync, openSync, readdirSync, readFileSync, readSync, closeSync, statSync, fstatSync } from 'node:fs'
import path from 'node:path'
import { ID_PATTERN, ID_RULE, RECORD_KIND, type RunLifecycle } from '../../schemas/events.v1.js'
import { KafkaRecordSender } from '../adapters/kafka/record-sender.js'
import { waitBesideStartingServer } from '../adapters/process/server-wait.js'
import { parseFlags, type FlagSpecs } from '../common/args.js'
import { readInfraConfig, type InfraConfig } from '../common/infra-config.js'
import type { Env } from '../common/config.js'
import { BenchstreamError } from '../core/errors.js'
import { OpsBatchWriter } from '../core/codec/ops-batch-writer.js'
import { encodeIntervalHistogram, encodeJsonRecord, opCodes } from '../core/codec/record-encoders.js'
import { IntervalLogFollower } from '../core/ycsb/follow.js'
import { MAX_YCSB_FILE_BYTES, parseYcsbFile } from '../core/ycsb/import.js'
import { planImport, type ImportPlan, type PlannedInterval } from '../core/ycsb/import-plan.js'
import { measurementFromFileName, parseMeasurementName } from '../core/ycsb/measurement-name.js'
import type { YcsbFile } from '../core/ycsb/report-types.js'
import { parseProperties, type Properties } from '../core/workload/properties.js'
import {
  commandLineWorkloadFiles,
  isWorkloadFileName,
  normalizeWorkload,
  propertiesNamesFor,
  workloadNameOfFile,
  workloadNameOfFiles,
  workloadProperties,
} from '../core/ycsb/workload-source.js'

/** Raw events per OPS message (about 10 bytes each). */
const EVENTS_PER_BATCH = 4096
/** How often --follow looks at the logs. */
const FOLLOW_POLL_MS = 250
/** Without --pid, --follow ends after this long without a new interval. */
const DEFAULT_IDLE_TIMEOUT_S = 60
/** Largest workload file read (YCSB's are a few KB). */
const MAX_WORKLOAD_FILE_BYTES = 1024 * 1024
/** The processor's default MAX_EVENT_AGE_S: older data is dead-lettered there, so say so here. */
const DEFAULT_MAX_EVENT_AGE_US = 30 * 86_400e6

export interface ImportYcsbArgs {
  runId: string
  clientId: string
  labels: Record<string, string>
  brokers: string | undefined
  /** Files, with the measurement an `OP=FILE` argument names. */
  files: Array<{ path: string; measurement: string | undefined }>
  /** --workload NAME (`e` is `workloade`). */
  workload: string | undefined
  /** -P FILE (repeatable): the workload files the run used. */
  workloadFiles: string[]
  dryRun: boolean
  /** --follow PREFIX: the hdrhistogram.output.path YCSB writes its logs under. */
  follow: { prefix: string; pid: number | undefined; idleTimeoutS: number } | undefined
}

function usage(what: string): BenchstreamError {
  return new BenchstreamError('BS_ERR_USAGE', `${what}\n${IMPORT_YCSB_USAGE}`)
}

/** `READ`, `read`, `Intended-READ`, `intended-read`, `CLEANUP` as YCSB writes them; undefined when it is none. */
function measurementArg(s: string): string | undefined {
  const m = /^(intended-)?(.+)$/i.exec(s)!
  const name = `${m[1] === undefined ? '' : 'Intended-'}${m[2]!.toUpperCase()}`
  return parseMeasurementName(name).kind === 'other' ? undefined : name
}

/** The flags of import-ycsb (parseArgs options). */
export const IMPORT_YCSB_FLAGS = {
  'run-id': { type: 'string' },
  'client-id': { type: 'string' },
  'kafka-brokers': { type: 'string' },
  label: { type: 'string', multiple: true },
  follow: { type: 'boolean' },
  pid: { type: 'string' },
  'idle-timeout': { type: 'string' },
  'dry-run': { type: 'boolean' },
  workload: { type: 'string' },
  'workload-file': { type: 'string', multiple: true, short: 'P' },
} as const satisfies FlagSpecs

export function parseImportYcsbArgs(argv: readonly string[]): ImportYcsbArgs {
  const parsed = parseFlags(argv, IMPORT_YCSB_FLAGS, IMPORT_YCSB_USAGE, true)
  const { values, positionals } = parsed
  const labels: Record<string, string> = {}
  for (const kv of values.label ?? []) {
    const eq = kv.indexOf('=')
    const k = eq === -1 ? kv : kv.slice(0, eq)
    if (eq === -1 || !ID_PATTERN.test(k))
      throw usage(`--label ${JSON.stringify(kv)} is not allowed: expected key=value with a key of ${ID_RULE}`)
    labels[k] = kv.slice(eq + 1)
  }
  const runId = values['run-id']
  const clientId = values['client-id']
  if (runId === undefined || !ID_PATTERN.test(runId))
    throw usage(
      `--run-id ${runId === undefined ? 'is required' : `${JSON.stringify(runId)} is not allowed`}: ${ID_RULE}`,
    )
  if (clientId === undefined || !ID_PATTERN.test(clientId))
    throw usage(
      `--client-id ${clientId === undefined ? 'is required' : `${JSON.stringify(clientId)} is not allowed`}: ` +
        `${ID_RULE}`,
    )
  const int = (flag: string, raw: string | undefined, min: number, max: number): number | undefined => {
    if (raw === undefined) return undefined
    const v = Number(raw)
    if (raw.trim() === '' || !Number.isInteger(v) || v < min || v > max)
      throw usage(`${flag} ${JSON.stringify(raw)} is not allowed: expected an integer from ${min} to ${max}`)
    return v
  }
  const workload = values.workload === undefined ? undefined : normalizeWorkload(values.workload)
  if (workload !== undefined && (workload === '' || workload.length > 1024 || /[\s,]/.test(workload)))
    throw usage(
      `--workload ${JSON.stringify(values.workload)} is not allowed: a workload name such as workloade or e, ` +
        `1 to 1024 characters without spaces or commas`,
    )
  const workloadFiles = values['workload-file'] ?? []
  const pid = int('--pid', values.pid, 1, 2 ** 31 - 1)
  const idle = int('--idle-timeout', values['idle-timeout'], 1, 86_400)
  if (values.follow !== true) {
    if (pid !== undefined || idle !== undefined)
      throw usage(`${pid !== undefined ? '--pid' : '--idle-timeout'} goes with --follow`)
    if (positionals.length === 0)
      throw usage(
        'at least one FILE is required (a YCSB report, raw data or HdrHistogram interval log; OP=FILE ' +
          'names the measurement of a log whose file name does not)',
      )
    const files = positionals.map((a) => {
      // A file name may hold '=': an existing file wins over OP=FILE.
      const eq = a.indexOf('=')
      if (eq <= 0 || existsSync(a)) return { path: a, measurement: undefined }
      const measurement = measurementArg(a.slice(0, eq))
      if (measurement === undefined)
        throw usage(
          `measurement ${JSON.stringify(a.slice(0, eq))} in ${JSON.stringify(a)} is not allowed: expected ` +
            (`[Intended-]OP or CLEANUP, OP one of READ, UPDATE, INSERT, SCAN, ` +
              `READ-MODIFY-WRITE, DELETE (case-insensitive)`),
        )
      if (eq === a.length - 1) throw usage(`${JSON.stringify(a)} names no file after "="`)
      return { path: a.slice(eq + 1), measurement }
    })
    return {
      runId,
      clientId,
      labels,
      brokers: values['kafka-brokers'],
      files,
      workload,
      workloadFiles,
      dryRun: values['dry-run'] === true,
      follow: undefined,
    }
  }
  if (positionals.length !== 1)
    throw usage(
      `--follow takes one PREFIX (YCSB's hdrhistogram.output.path: logs are PREFIXREAD.hdr, ...; a ` +
        `directory ends in /), ${positionals.length === 0 ? 'none was given' : `not ${positionals.length}`}`,
    )
  if (values['dry-run'] === true) throw usage('--dry-run does not go with --follow')
  return {
    runId,
    clientId,
    labels,
    brokers: values['kafka-brokers'],
    files: [],
    workload,
    workloadFiles,
    dryRun: false,
    follow: { prefix: positionals[0]!, pid, idleTimeoutS: idle ?? (pid === undefined ? DEFAULT_IDLE_TIMEOUT_S : 0) },
  }
}

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

/** The workload of an import, and where it was found (workload-source.ts). */
export interface FoundWorkload {
  /** undefined: not recorded. */
  name: string | undefined
  properties: Properties | undefined
  /** Where it came from, or why nothing was found: for the import's summary. */
  from: string
}

function readSmall(file: string, what: string): string {
  let size: number
  try {
    size = statSync(file).size
  } catch (err) {
    throw new BenchstreamError(
      'BS_ERR_USAGE',
      `cannot read ${what} ${JSON.stringify(file)}: ${(err as Error).message}`,
      {
        cause: err,
      },
    )
  }
  if (size > MAX_WORKLOAD_FILE_BYTES)
    throw new BenchstreamError(
      'BS_ERR_TOO_LARGE',
      `${what} ${file} is ${size} bytes; a workload file has at most ${MAX_WORKLOAD_FILE_BYTES}`,
    )
  return readFileSync(file, 'utf8')
}

/**
 * The workload the imported run ran (services/core/ycsb/workload-source.ts): --workload, -P FILE, a workload file
 * next to a report, or the `Command line:` YCSB wrote into a report saved with its stderr.
 */
export function findWorkload(
  args: Pick<ImportYcsbArgs, 'workload' | 'workloadFiles' | 'files'>,
  files: readonly YcsbFile[],
): FoundWorkload {
  if (args.workloadFiles.length > 0) {
    const properties: Properties = {}
    for (const f of args.workloadFiles) Object.assign(properties, parseProperties(readSmall(f, '-P'), f))
    return {
      name: args.workload ?? workloadNameOfFiles(args.workloadFiles),
      properties,
      from: `-P ${args.workloadFiles.join(' -P ')}${args.workload === undefined ? '' : ', named by --workload'}`,
    }
  }
  if (args.workload !== undefined) return { name: args.workload, properties: undefined, from: '--workload' }
  const notes: string[] = []
  for (const dir of new Set(args.files.map((f) => path.dirname(f.path)))) {
    const near = args.files.filter((f) => path.dirname(f.path) === dir)
    for (const candidate of near.flatMap((f) => propertiesNamesFor(f.path)).map((n) => path.join(dir, n))) {
      if (!existsSync(candidate)) continue
      const text = readSmall(candidate, 'workload file')
      const props = workloadProperties(text, candidate)
      if (props === undefined) continue
      const name = workloadNameOfFile(text, candidate, props)
      if (name !== undefined) return { name, properties: props, from: candidate }
      notes.push(`${candidate} names no workload (no benchstream.workload property, no "# Workload X:" line)`)
    }
    let names: string[] = []
    try {
      names = readdirSync(dir).filter(isWorkloadFileName).sort()
    } catch {
      // an unreadable folder holds no workload file
    }
    const found = names.flatMap((n) => {
      const file = path.join(dir, n)
      try {
        if (!statSync(file).isFile() || statSync(file).size > MAX_WORKLOAD_FILE_BYTES) return []
      } catch {
        return []
      }
      const text = readFileSync(file, 'utf8')
      const props = workloadProperties(text, file)
      return props === undefined ? [] : [{ file, text, props }]
    })
    if (found.length === 1) {
      const f = found[0]!
      const name = workloadNameOfFile(f.text, f.file, f.props)
      if (name !== undefined) return { name, properties: f.props, from: f.file }
    } else if (found.length > 1)
      notes.push(
        `several workload files in ${dir} (${found.map((f) => path.basename(f.file)).join(', ')}): ` +
          'say which with -P FILE',
      )
  }
  // YCSB's stderr starts with its command line; a report saved with 2>&1 holds it.
  for (const f of files) {
    if (f.kind !== 'summary' || f.format !== 'text') continue
    const named = commandLineWorkloadFiles(readSmallReport(f.source))
    if (named !== undefined && named.length > 0)
      return {
        name: workloadNameOfFiles(named),
        properties: undefined,
        from: `${f.source}'s Command line: -P ${named.join(' -P ')}`,
      }
  }
  return {
    name: undefined,
    properties: undefined,
    from:
      `not recorded${notes.length === 0 ? '' : ` (${notes.join('; ')})`}: give --workload NAME or -P FILE, ` +
      `since compare pairs runs by workload and never pools runs whose workload is unknown`,
  }
}

function readSmallReport(file: string): string {
  // Already read once and bounded by MAX_YCSB_FILE_BYTES; only its first lines can hold the command line.
  const fd = openSync(file, 'r')
  try {
    const buf = Buffer.alloc(64 * 1024)
    const n = readSync(fd, buf, 0, buf.length, 0)
    return buf.toString('utf8', 0, n)
  } finally {
    closeSync(fd)
  }
}

function lifecycle(
  args: ImportYcsbArgs,
  phase: 'start' | 'end',
  atUs: number,
  source: string,
  workload: FoundWorkload | undefined,
  sent?: Record<string, number>,
  runtimeMs?: number,
): RunLifecycle {
  return {
    kind: RECORD_KIND.RUN_LIFECYCLE,
    phase,
    runId: args.runId,
    clientId: args.clientId,
    atUs,
    labels: { source, ...args.labels },
    workload: workload?.name ?? '',
    ...(workload?.properties === undefined ? {} : { properties: workload.properties }),
    binding: 'ycsb',
    threads: 0,
    target: 0,
    ...(phase === 'end' ? { sent: sent ?? {}, undelivered: 0, ...(runtimeMs === undefined ? {} : { runtimeMs }) } : {}),
  }
}

/** OPS messages of the raw series, EVENTS_PER_BATCH events each. */
function* rawMessages(args: ImportYcsbArgs, plan: ImportPlan): Generator<Buffer> {
  const w = new OpsBatchWriter(args.runId, args.clientId)
  for (const s of plan.raw) {
    const [opCode, statusIndex, cacheIndex] = opCodes(s.op, s.status, 'UNKNOWN')
    for (let i = 0; i < s.startUs.length; i++) {
      w.add(0, opCode, cacheIndex, statusIndex, s.startUs[i]!, s.latencyUs[i]!, s.intendedUs[i]!, 0)
      if (w.count >= EVENTS_PER_BATCH) yield w.finish()
    }
  }
  if (w.count > 0) yield w.finish()
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

/**
 * --follow: polls the directory of PREFIX for `PREFIX<NAME>.hdr` logs and
 * each log for new lines; sends each interval as it becomes complete.
 */
async function follow(
  args: ImportYcsbArgs,
  f: NonNullable<ImportYcsbArgs['follow']>,
  infra: InfraConfig,
  out: (s: string) => void,
  signal: AbortSignal | undefined,
): Promise<number> {
  const dir = f.prefix.endsWith('/') ? f.prefix : path.dirname(f.prefix)
  const base = f.prefix.endsWith('/') ? '' : path.basename(f.prefix)
  const follower = new IntervalLogFollower()
  // --follow has no report to look next to: the workload is what --workload and -P say.
  const followWorkload =
    args.workloadFiles.length > 0 || args.workload !== undefined ? findWorkload(args, []) : undefined
  const offsets = new Map<string, number>()
  const sent: Record<string, number> = {}
  let firstUs: number | undefined
  let lastUs: number | undefined
  let records = 0
  const stop = new AbortController()
  const onSignal = (): void => stop.abort()
  process.once('SIGINT', onSignal)
  process.once('SIGTERM', onSignal)
  signal?.addEventListener('abort', onSignal, { once: true })
  const sender = await KafkaRecordSender.open(infra, `import-ycsb-${args.clientId}`, `${args.runId}:${args.clientId}`)
  process.stderr.write(
    `benchstream: following ${path.join(dir, `${base}*.hdr`)} into run ${args.runId}, client ${args.clientId}, ` +
      'until ' +
      (f.pid === undefined ? '' : `process ${f.pid} exits${f.idleTimeoutS > 0 ? ' or ' : ''}`) +
      (f.idleTimeoutS > 0 ? `${f.idleTimeoutS} s pass without a new interval` : '') +
      '\n',
  )
  let started = false
  const sendIntervals = async (intervals: PlannedInterval[]): Promise<void> => {
    if (intervals.length === 0) return
    if (!started) {
      started = true
      await sender.send([
        encodeJsonRecord(
          lifecycle(
            args,
            'start',
            Math.min(...intervals.map((iv) => iv.intervalStartUs)),
            'ycsb-follow',
            followWorkload,
          ),
        ),
      ])
    }
    for (const iv of intervals) {
      await sender.add(encodeIntervalHistogram({ runId: args.runId, clientId: args.clientId, ...iv }))
      let n = 0
      for (const [, c] of iv.buckets) n += c
      if (n > 0) sent[`${iv.op}/${iv.status}`] = (sent[`${iv.op}/${iv.status}`] ?? 0) + n
      firstUs = Math.min(firstUs ?? iv.intervalStartUs, iv.intervalStartUs)
      lastUs = Math.max(lastUs ?? 0, iv.intervalStartUs + iv.intervalLengthUs)
      records++
    }
    await sender.flush()
  }
  /** Reads what every log grew by; true when something new came. */
  const poll = (): boolean => {
    let grew = false
    let names: string[] = []
    try {
      names = readdirSync(dir)
    } catch {
      // the directory does not exist yet: YCSB has not started
    }
    for (const n of names) {
      if (!n.endsWith('.hdr') || !n.startsWith(base)) continue
      const file = path.join(dir, n)
      if (!follower.has(file)) {
        const m = measurementFromFileName(n)
        if (m === undefined || m.prefix !== base) continue
        follower.add(file, m.name)
        offsets.set(file, 0)
      }
      const fd = openSync(file, 'r')
      try {
        const size = fstatSync(fd).size
        const at = offsets.get(file)!
        // YCSB opens its logs anew (truncating) at start: a file that shrank belongs to another run.
        if (size < at)
          throw new BenchstreamError(
            'BS_ERR_DECODE',
            `${file} shrank from ${at} to ${size} bytes: a new YCSB run is writing it; give each run its ` +
              `own hdrhistogram.output.path and follow that`,
          )
        if (size === at) continue
        const buf = Buffer.alloc(size - at)
        const r = readSync(fd, buf, 0, buf.length, at)
        // Only whole UTF-8 text matters here: the log is ASCII.
        follower.feed(file, buf.toString('latin1', 0, r))
        offsets.set(file, at + r)
        grew = true
      } finally {
        closeSync(fd)
      }
    }
    return grew
  }
  const alive = (pid: number): boolean => {
    try {
      process.kill(pid, 0)
      return true
    } catch (err) {
      return (err as NodeJS.ErrnoException).code === 'EPERM'
    }
  }
  let lastNewAt = Date.now()
  let ended: string
  try {
    for (;;) {
      // Liveness first, then a read: what YCSB wrote before exiting is read once more below.
      const exited = f.pid !== undefined && !alive(f.pid)
      if (poll()) lastNewAt = Date.now()
      await sendIntervals(follower.ready(false))
      if (exited) {
        ended = `process ${f.pid} exited`
        break
      }
      if (f.idleTimeoutS > 0 && Date.now() - lastNewAt > f.idleTimeoutS * 1000) {
        ended = `${f.idleTimeoutS} s without a new interval`
        break
      }
      if (stop.signal.aborted) {
        ended = 'interrupted'
        break
      }
      await new Promise((r) => setTimeout(r, FOLLOW_POLL_MS))
    }
    poll()
    await sendIntervals(follower.ready(true))
    if (started)
      await sender.send([
        encodeJsonRecord(
          lifecycle(
            args,
            'end',
            lastUs ?? Date.now() * 1000,
            'ycsb-follow',
            followWorkload,
            sent,
            firstUs === undefined || lastUs === undefined ? undefined : Math.round((lastUs - firstUs) / 1000),
          ),
        ),
      ])
  } finally {
    process.off('SIGINT', onSignal)
    process.off('SIGTERM', onSignal)
    signal?.removeEventListener('abort', onSignal)
    await sender.close()
  }
  const lines = [
    `followed run ${args.runId}, client ${args.clientId}: ` +
      `${ended}${started ? '' : '; no interval appeared, nothing was sent'}`,
  ]
  for (const s of follower.summary())
    lines.push(
      `  ${s.file}: ${s.name}, ${s.intervals} intervals, ${s.operations} ` +
        'operations' +
        (s.kind === 'cleanup' ? ' (CLEANUP: reported, not counted)' : s.kind === 'other' ? ' (skipped)' : ''),
    )
  const total = Object.values(sent).reduce((a, b) => a + b, 0)
  lines.push(
    `  operations: ${total}${
      total === 0
        ? ''
        : ` (${Object.entries(sent)
            .map(([k, v]) => `${k} ${v}`)
            .join(', ')})`
    }, as ${records} interval records`,
  )
  out(lines.join('\n') + '\n')
  return 0
}
