/**
 * The command line of `benchstream import-ycsb` (services/cli/import-ycsb.ts): its flags, and the files and
 * measurements it names (`OP=FILE`), checked into ImportYcsbArgs.
 */
import { IMPORT_YCSB_USAGE } from './usage.js'
import { existsSync } from 'node:fs'
import { ID_PATTERN, ID_RULE } from '../../schemas/events.v1.js'
import { parseFlags, type FlagSpecs } from '../common/args.js'
import { BenchstreamError } from '../core/errors.js'
import { parseMeasurementName } from '../core/ycsb/measurement-name.js'
import { normalizeWorkload } from '../core/ycsb/workload-source.js'

/** Without --pid, --follow ends after this long without a new interval. */
const DEFAULT_IDLE_TIMEOUT_S = 60

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
