/**
 * Driver configuration from a YCSB-style command line:
 *   benchstream run -P workloads/workloada -p recordcount=10000 -threads 8 -target 20000 -s -db memory
 * plus Benchstream's own flags (--run-id, --client-id, --label, --seconds, --export, --no-emit).
 * Parsed and validated once; unknown flags, properties and bindings are
 * rejected with the list of valid choices.
 */
import { readFileSync } from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { ID_PATTERN, ID_RULE, MAX_JSON_RECORD_BYTES, MAX_TEXT } from '../../schemas/events.v1.js'
import { freeze, type Env } from '../common/config.js'
import { readInfraConfig, type InfraConfig } from '../common/infra-config.js'
import { BenchstreamError, isBenchstreamError } from '../core/errors.js'
import { parseThreshold, type Threshold } from '../core/reports/thresholds.js'
import { didYouMean } from '../core/suggest.js'
import { assertKnownProperties, mergeProperties } from '../core/workload/properties.js'
import {
  barrierFlag,
  clockOffsetFlag,
  expectedClientsFlag,
  groupFlag,
  intInRange as checkInt,
  repetitionFlag,
} from './run-flags.js'
import { parseYcsbOutput, YCSB_BINDING_EQUIVALENTS, type YcsbOutputOptions } from './ycsb-properties.js'

export interface DriverConfig {
  phase: 'load' | 'run'
  /** Merged properties: workload files in order, then -p overrides. */
  properties: Record<string, string>
  workloadName: string
  threads: number
  /** ops/s for this client, 0 = unthrottled */
  target: number
  /** Seconds between status lines; 0 = no status. */
  statusIntervalS: number
  /** One of the binding names the entry file offered (DriverArgsOptions.bindings). */
  binding: string
  runId: string
  clientId: string
  labels: Record<string, string>
  export: 'text' | 'json'
  /** Write the final report to this file instead of stdout (YCSB's exportfile property). */
  exportFile: string | undefined
  /** Send events to Kafka (off only to measure the driver alone). */
  emit: boolean
  /** With a target: warn when an operation starts more than this many ms after its schedule. */
  maxScheduleLagMs: number
  /** Longest an event waits in the delivery thread before its batch goes to Kafka (--linger-ms). */
  lingerMs: number
  /** --threshold criteria, evaluated on the report at the end. */
  thresholds: Threshold[]
  /** Group of repetitions the run belongs to (--group; generated when --repeat is given without it). */
  group: string | undefined
  /** This run's number inside its group (--repetition; set by --repeat for each run). */
  repetition: number | undefined
  /** Runs back to back (--repeat), each a run of its own; 1 without --repeat. */
  repeat: number
  /** Run ids of the repetitions when repeat was given: <run-id>-k, or <group>-k without --run-id. */
  repeatRunIds: string[]
  /**
   * The run or group:NAME the alert evaluator compares this run with while it runs (--baseline; also label baseline).
   */
  baseline: string | undefined
  /** Things the user should know before the run starts (printed on stderr). */
  notes: string[]
  /**
   * --barrier stdin: get everything ready, say so on stderr (BARRIER_READY_LINE), then start at the instant read
   * from stdin (an experiment's agent holds every client of a run at one barrier).
   */
  barrier: 'stdin' | undefined
  /** --expected-clients: how many clients the run has, for its start record. */
  expectedClients: number | undefined
  /** --clock-offset-ms: this machine's clock offset from the broker's, as its agent measured it (start record). */
  clockOffsetMs: number | undefined
  /**
   * YCSB's output properties: measurement.interval, hdrhistogram.percentiles and .fileoutput, exporter
   * (ycsb-properties.ts).
   */
  ycsb: YcsbOutputOptions
  infra: InfraConfig
}

/**
 * Default of --linger-ms. 250 ms, not the sink's 50: at 5,000 ops/s a produce request every 50 ms (the driver's
 * delivery thread and the broker working on the client's cores) tripled the READ p99 it measured; one every 250 ms
 * kept it within 1.4x of emission off (docs/reports/telemetry-cost.md). Windows are 1 s and events may be 2 s late.
 */
export const DEFAULT_LINGER_MS = 250

/** The command-line help; `bindings` are the names the entry file's registry offers. */
export const driverUsage = (bindings: readonly string[]): string => `usage: benchstream load|run [options]
  -P <file>              workload property file (repeatable; later files win)
  -p <key>=<value>       workload property (repeatable; overrides files)
  -threads <n>           client threads, 1 to 100000 (default 1), each with its own connection as in
                         YCSB; they run in worker threads, one per core (the memory binding's on the
                         main thread, where its store lives)
  -target <ops/s>        throughput target for this client, 0 = unthrottled (default 0)
  -s                     print a status line every status.interval seconds (default 10)
  -t | -load             YCSB's phase flags: accepted when they agree with the command
  -db <binding>          datastore binding: ${bindings.join(', ')} (also --binding); YCSB's class
                         ${Object.keys(YCSB_BINDING_EQUIVALENTS).join(', ')} maps to its equivalent
  YCSB output properties (-p): measurement.interval=op|intended|both, hdrhistogram.percentiles=95,99,
                         hdrhistogram.fileoutput=true (+ hdrhistogram.output.path=PREFIX: PREFIXREAD.hdr
                         interval logs), exporter=site.ycsb.measurements.exporter.JSONArrayMeasurementsExporter
                         (or JSONMeasurementsExporter, TextMeasurementsExporter); properties YCSB has and this
                         driver does not are refused by name (docs/reference/cli.md: YCSB's properties)
  --run-id <id>          run id shared by all clients of one run (default: generated)
  --client-id <id>       this client's id (default: <host>-<pid>)
  --label <key>=<value>  run label, e.g. system=hbase version=0.98.4 (repeatable)
  --seconds <n>          stop after n seconds (same as -p maxexecutiontime=n); the run ends at
                         whichever comes first of n seconds and operationcount operations:
                         add -p operationcount=0 to run for the full n seconds
  --export text|json     final report format (default text); -p exportfile=<path> writes it to a file
  --kafka-brokers <list> Kafka brokers host:port,... (default: KAFKA_BROKERS or 127.0.0.1:9092)
  --topic <name>         event topic (default: BENCHSTREAM_TOPIC_EVENTS or benchstream.events.v1)
  --no-emit              measure without sending events (overhead baseline)
  --linger-ms <ms>       longest an event waits before its batch is sent to Kafka, 1 to 60000
                         (default ${DEFAULT_LINGER_MS}): fewer, fuller produce requests disturb the run less;
                         16 batches of 4,096 events (or 240 KiB) go at once
  --max-schedule-lag <ms>  with -target: warn (once per episode) when an operation starts more
                         than ms after its scheduled time, 1 to 3600000 (default 100); the
                         report's MaxScheduleLag and BehindScheduleEpisodes say how it went
  --threshold <expr>     pass/fail criterion on the run's report, k6 style (repeatable), e.g.
                         'READ.p99<2ms' 'OVERALL.throughput>9000' 'Intended-READ.p99<50ms';
                         the exit code is 99 when one fails (see benchstream help thresholds)
  --repeat <n>           run n times back to back, 1 to 1000, each a run of its own (run ids
                         <run-id>-1 ... or <group>-1 ...) in one group: the samples of
                         benchstream compare. Several clients: give each the same --group
  --group <name>         group of repetitions this run belongs to (default with --repeat: generated)
  --repetition <k>       this run's number in its group, 1 to 100000 (set by --repeat; give it
                         when you run repetitions by hand, e.g. alternating two releases)
  --barrier stdin        get ready, print "${BARRIER_READY_LINE}" on stderr, then start at the time
                         read from stdin ("start <ms since epoch>"; "abort" ends it): how an experiment's
                         agent starts every client of a run at one instant
  --expected-clients <n> how many clients the run has, 1 to 1024 (an experiment says; recorded with the run)
  --clock-offset-ms <ms> this machine's clock offset from the broker's, as measured (recorded with the run)
  --baseline <ref>       a run id or group:NAME: while this run goes, the alert evaluator compares
                         its per-operation throughput and p99 with the baseline's at the same
                         second and alerts on a sustained difference (label baseline=<ref>)
  -h, --help             this text
environment: KAFKA_BROKERS, BENCHSTREAM_TOPIC_EVENTS, ... (see docs/reference/configuration.md)`

export interface DriverArgsOptions {
  /** Binding names accepted by -db (the registry in services/adapters/datastores/index.ts). */
  bindings: readonly string[]
  /** Reads -P workload files. @default readFileSync */
  readFile?: (path: string) => string
}

function keyValue(flag: string, raw: string | undefined): [string, string] {
  if (raw === undefined) throw usage(`${flag} needs a key=value argument`)
  const eq = raw.indexOf('=')
  if (eq <= 0) throw usage(`${flag} ${JSON.stringify(raw)} is not key=value`)
  return [raw.slice(0, eq).trim(), raw.slice(eq + 1).trim()]
}

/** An integer in [min, max]; every flag states its own range the same way whatever was wrong. */
const intInRange = (name: string, raw: string | undefined, min: number, max = Number.MAX_SAFE_INTEGER): number =>
  checkInt(name, raw, min, max, usage)

/** Every flag the driver takes (parse() below has a case for each), for "did you mean" and the docs check. */
export const DRIVER_FLAGS = [
  '-P',
  '-p',
  '-threads',
  '-target',
  '-s',
  '-t',
  '-load',
  '-db',
  '--binding',
  '--run-id',
  '--client-id',
  '--label',
  '--seconds',
  '--export',
  '--no-emit',
  '--kafka-brokers',
  '--topic',
  '--threshold',
  '--max-schedule-lag',
  '--linger-ms',
  '--repeat',
  '--group',
  '--repetition',
  '--baseline',
  '--barrier',
  '--expected-clients',
  '--clock-offset-ms',
  '--help',
] as const
/** What a driver started with --barrier stdin prints on stderr once it is ready to start. */
export const BARRIER_READY_LINE = 'benchstream-barrier: ready'
/** Flags that take no value (every other flag takes one). */
const VALUELESS = new Set(['-s', '--no-emit', '--help', '-h'])
/** Largest --repeat. */
export const MAX_REPEAT = 1000

export function parseDriverArgs(
  phase: 'load' | 'run',
  argv: readonly string[],
  env: Env,
  opts: DriverArgsOptions,
): Readonly<DriverConfig> {
  const bindings = opts.bindings
  const readFile = opts.readFile ?? ((p: string) => readFileSync(p, 'utf8'))
  try {
    return parse(phase, argv, env, bindings, readFile)
  } catch (err) {
    // Every command-line mistake ends with the help text.
    if (isBenchstreamError(err, 'BS_ERR_USAGE'))
      throw new BenchstreamError('BS_ERR_USAGE', `${err.message}\n${driverUsage(bindings)}`)
    throw err
  }
}

function usage(message: string): BenchstreamError {
  return new BenchstreamError('BS_ERR_USAGE', message)
}

function parse(
  phase: 'load' | 'run',
  argv: readonly string[],
  env: Env,
  bindings: readonly string[],
  readFile: (path: string) => string,
): Readonly<DriverConfig> {
  const files: Array<{ name: string; text: string }> = []
  const overrides: Array<[string, string]> = []
  const labels: Record<string, string> = {}
  let threads: number | undefined
  let target: number | undefined
  let status = false
  let binding: string | undefined
  let runId: string | undefined
  let clientId: string | undefined
  let exportFormat: 'text' | 'json' = 'text'
  let emit = true
  let seconds: number | undefined
  let maxScheduleLagMs = 100
  let lingerMs = DEFAULT_LINGER_MS
  const thresholds: Threshold[] = []
  const envOverrides: Record<string, string> = {}
  // YCSB's -t/-load and its dotransactions property must agree with the command (load or run).
  const phaseFlag = (flag: string, wants: 'load' | 'run'): void => {
    if (wants !== phase)
      throw usage(`${flag} is YCSB's ${wants} phase, but this is benchstream ${phase}: use benchstream ${wants}`)
  }
  let group: string | undefined
  let repetition: number | undefined
  let repeat: number | undefined
  let baseline: string | undefined
  let barrier: 'stdin' | undefined
  let expectedClients: number | undefined
  let clockOffsetMs: number | undefined
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i]!
    const next = (): string | undefined => argv[++i]
    switch (a) {
      case '-P': {
        const f = next()
        if (f === undefined) throw usage('-P needs a workload file')
        let text: string
        try {
          text = readFile(f)
        } catch (err) {
          throw usage(`cannot read workload file ${f}: ${(err as Error).message}`)
        }
        files.push({ name: path.basename(f), text })
        break
      }
      case '-p':
        overrides.push(keyValue('-p', next()))
        break
      case '-threads':
        threads = intInRange('-threads', next(), 1, 100_000)
        break
      case '-target':
        target = intInRange('-target', next(), 0)
        break
      case '-s':
        status = true
        break
      case '-t':
        phaseFlag('-t', 'run')
        break
      case '-load':
        phaseFlag('-load', 'load')
        break
      case '-db':
      case '--binding':
        binding = next()
        break
      case '--run-id':
        runId = next()
        break
      case '--client-id':
        clientId = next()
        break
      case '--label': {
        const [k, v] = keyValue('--label', next())
        if (!ID_PATTERN.test(k)) throw usage(`label key ${JSON.stringify(k)} is not allowed: ${ID_RULE}`)
        labels[k] = v
        break
      }
      case '--seconds':
        seconds = intInRange('--seconds', next(), 1)
        overrides.push(['maxexecutiontime', String(seconds)])
        break
      case '--export': {
        const f = next()
        if (f !== 'text' && f !== 'json')
          throw usage(`--export ${JSON.stringify(f ?? '')} is not allowed: expected text or json`)
        exportFormat = f
        break
      }
      case '--no-emit':
        emit = false
        break
      case '--kafka-brokers':
      case '--topic': {
        const v = next()
        if (v === undefined || v === '') throw usage(`${a} needs a value`)
        envOverrides[a === '--topic' ? 'BENCHSTREAM_TOPIC_EVENTS' : 'KAFKA_BROKERS'] = v
        break
      }
      case '--max-schedule-lag':
        maxScheduleLagMs = intInRange('--max-schedule-lag', next(), 1, 3_600_000)
        break
      case '--linger-ms':
        lingerMs = intInRange('--linger-ms', next(), 1, 60_000)
        break
      case '--threshold': {
        const t = next()
        if (t === undefined) throw usage('--threshold needs an expression such as READ.p99<2ms')
        thresholds.push(parseThreshold(t))
        break
      }
      case '--group':
        group = groupFlag(next(), usage)
        break
      case '--repeat':
        repeat = intInRange('--repeat', next(), 1, MAX_REPEAT)
        break
      case '--repetition':
        repetition = repetitionFlag(next(), usage)
        break
      case '--barrier':
        barrier = barrierFlag(next(), usage)
        break
      case '--expected-clients':
        expectedClients = expectedClientsFlag(next(), usage)
        break
      case '--clock-offset-ms':
        clockOffsetMs = clockOffsetFlag(next(), usage)
        break
      case '--baseline': {
        const b = next()
        const name = b?.startsWith('group:') === true ? b.slice('group:'.length) : b
        if (b === undefined || name === undefined || !ID_PATTERN.test(name))
          throw usage(
            `--baseline ${JSON.stringify(b ?? '')} is not allowed: a run id ` +
              `or group:NAME, the id or name of ${ID_RULE}`,
          )
        baseline = b
        break
      }
      default:
        throw usage(
          `unknown option ${JSON.stringify(a)}${didYouMean(a, DRIVER_FLAGS)}` +
            (a.startsWith('-') ? '' : ' (workload files go after -P, properties after -p)'),
        )
    }
  }
  const properties = mergeProperties(
    files.map((f) => f.text),
    overrides,
  )
  assertKnownProperties(
    properties,
    bindings.map((b) => `${b}.`),
  )
  threads ??= properties.threadcount === undefined ? 1 : intInRange('threadcount', properties.threadcount, 1, 100_000)
  target ??= properties.target === undefined ? 0 : intInRange('target', properties.target, 0)
  binding ??= properties.db ?? 'memory'
  const notes: string[] = []
  if (!bindings.includes(binding) && Object.hasOwn(YCSB_BINDING_EQUIVALENTS, binding)) {
    const eq = YCSB_BINDING_EQUIVALENTS[binding]!
    notes.push(
      `-db ${binding}: YCSB's class is not part of this driver; using its equivalent, binding ${eq.binding} ` +
        `(${eq.differences})`,
    )
    binding = eq.binding
  }
  if (properties.dotransactions !== undefined)
    phaseFlag(`-p dotransactions=${properties.dotransactions}`, properties.dotransactions === 'false' ? 'load' : 'run')
  if (!bindings.includes(binding))
    throw usage(
      `unknown binding ${JSON.stringify(binding)}${didYouMean(binding, bindings)}; valid bindings ` +
        `are ${bindings.join(', ')}`,
    )
  const workloadName = files.map((f) => f.name).join('+') || 'custom'
  // <workload>-<UTC time to the second>-<4 random characters>; each call draws a new one.
  const generatedId = (): string =>
    `${workloadName.replace(/[^A-Za-z0-9._-]/g, '_').slice(0, 24)}-` +
    `${new Date().toISOString().replace(/[-:]/g, '').slice(0, 15)}-${Math.random().toString(36).slice(2, 6)}`
  runId ??= generatedId()
  clientId ??= `${os
    .hostname()
    .replace(/[^A-Za-z0-9._-]/g, '_')
    .slice(0, 40)}-${process.pid}`
  if (repeat !== undefined && repetition !== undefined)
    throw usage('--repeat and --repetition do not go together: --repeat numbers its runs itself')
  if (repeat !== undefined && phase === 'load') throw usage('--repeat applies to run, not load')
  const runIdGiven = argv.includes('--run-id')
  if (repeat !== undefined) group ??= generatedId()
  // Room for the -k suffix inside the 64 characters of an id.
  const repeatRunIds =
    repeat === undefined
      ? []
      : Array.from({ length: repeat }, (_, k) => `${(runIdGiven ? runId : group!).slice(0, 58)}-${k + 1}`)
  if (baseline !== undefined) {
    if (labels.baseline !== undefined && labels.baseline !== baseline)
      throw usage(`--baseline ${baseline} and --label baseline=${labels.baseline} disagree: give one`)
    // The evaluator finds the baseline of a run by this label (a label, so the run's record and the runs view need
    // nothing new).
    labels.baseline = baseline
  }
  if (!ID_PATTERN.test(runId)) throw usage(`--run-id ${JSON.stringify(runId)} is not allowed: ${ID_RULE}`)
  if (!ID_PATTERN.test(clientId)) throw usage(`--client-id ${JSON.stringify(clientId)} is not allowed: ${ID_RULE}`)
  const statusIntervalS = status ? intInRange('status.interval', properties['status.interval'] ?? '10', 1, 86_400) : 0
  const ycsb = parseYcsbOutput(properties)
  const opCount = Number(properties.operationcount ?? '0')
  if (seconds !== undefined && phase === 'run' && Number.isInteger(opCount) && opCount > 0) {
    // YCSB ends a run at whichever limit comes first; a k6 user reading
    // --seconds expects a duration, so say which one will end it.
    notes.push(
      `--seconds ${seconds} and operationcount=${opCount}: the run ends at whichever comes first; ` +
        `add -p operationcount=0 to run for the full ${seconds} s`,
    )
  }
  return freeze({
    phase,
    properties,
    workloadName,
    threads,
    target,
    statusIntervalS,
    binding,
    runId,
    clientId,
    labels,
    export: exportFormat,
    exportFile: properties.exportfile === undefined || properties.exportfile === '' ? undefined : properties.exportfile,
    emit,
    thresholds,
    notes,
    maxScheduleLagMs,
    lingerMs,
    ycsb,
    group,
    repetition,
    repeat: repeat ?? 1,
    repeatRunIds,
    baseline,
    barrier,
    expectedClients,
    clockOffsetMs,
    infra: readInfraConfig({ ...env, ...envOverrides }),
  })
}

/**
 * The command line of repetition k (1-based) of a --repeat run: the same
 * flags without --repeat, with that repetition's run id, the group and
 * --repetition k, so every repetition goes through the same parser.
 */
export function repetitionArgv(argv: readonly string[], cfg: DriverConfig, k: number): string[] {
  const drop = new Set(['--repeat', '--run-id', '--group', '--repetition'])
  const out: string[] = []
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i]!
    const takesValue = !VALUELESS.has(a)
    if (drop.has(a)) {
      i++
      continue
    }
    out.push(a)
    if (takesValue && i + 1 < argv.length) out.push(argv[++i]!)
  }
  const runId = cfg.repeatRunIds[k - 1]
  if (runId === undefined || cfg.group === undefined)
    throw new BenchstreamError(
      'BS_ERR_USAGE',
      `repetition ${k} of ${cfg.repeat}: no run id (the run was not started with --repeat)`,
    )
  return [...out, '--run-id', runId, '--group', cfg.group, '--repetition', String(k)]
}

/**
 * Largest number of properties, longest key and value a lifecycle record carries (schemas/events.v1.ts
 * RunLifecycleBody).
 */
const MAX_RECORD_PROPERTIES = 512
const MAX_PROPERTY_KEY = 256

/**
 * What the start record says beyond version 1's fields: the group, the
 * repetition and the merged workload properties (so compare can tell
 * comparable runs apart). Passwords never leave the machine: a property
 * whose name ends in "password" is sent as ***, and so is the password in a
 * URL (postgres://user:secret@host). Values longer than the record allows
 * are cut, and beyond 512 properties the rest are left out (never the whole
 * record: a rejected start record would lose the run's metadata).
 */
export function startRecordFields(cfg: DriverConfig): {
  group?: string
  repeat?: number
  properties: Record<string, string>
  expectedClients?: number
  clockOffsetMs?: number
} {
  const properties: Record<string, string> = {}
  let bytes = 0
  for (const [k, v] of Object.entries(cfg.properties)
    .sort(([a], [b]) => a.localeCompare(b))
    .slice(0, MAX_RECORD_PROPERTIES)) {
    if (k.length > MAX_PROPERTY_KEY) continue
    const masked = (
      k.toLowerCase().endsWith('password') ? '***' : v.replace(/^([a-z][a-z0-9+.-]*:\/\/[^:/@]*):[^@/]*@/i, '$1:***@')
    ).slice(0, MAX_TEXT)
    bytes += Buffer.byteLength(k) + Buffer.byteLength(masked) + 8
    // Half of what a JSON record may be, so the rest of the start record always fits.
    if (bytes > MAX_JSON_RECORD_BYTES / 2) break
    properties[k] = masked
  }
  return {
    ...(cfg.group === undefined ? {} : { group: cfg.group }),
    ...(cfg.repetition === undefined ? {} : { repeat: cfg.repetition }),
    properties,
    ...(cfg.expectedClients === undefined ? {} : { expectedClients: cfg.expectedClients }),
    ...(cfg.clockOffsetMs === undefined ? {} : { clockOffsetMs: cfg.clockOffsetMs }),
  }
}
