/**
 * The command line of `benchstream ycsb [our flags] -- <YCSB arguments>`:
 * our flags GNU style (parseArgs), YCSB's as YCSB's Client takes them
 * (`-P`, `-p`, `-threads`, `-target`, `-s`, `-load`/`-t`, `-db`), plus
 * bin/ycsb's `load|run [binding]` form. The binding named by `-db` is
 * wrapped by the bridge (io.benchstream.ycsb.BenchstreamDB); everything else
 * goes to YCSB unchanged, YCSB checks it.
 */
import os from 'node:os'
import { ID_PATTERN, ID_RULE } from '../../schemas/events.v1.js'
import { parseFlags, type FlagSpecs } from '../common/args.js'
import { BenchstreamError } from '../core/errors.js'
import { parseThreshold, type Threshold } from '../core/reports/thresholds.js'
import { barrierFlag, clockOffsetFlag, expectedClientsFlag, groupFlag, repetitionFlag } from '../driver/run-flags.js'
import { YCSB_USAGE } from './usage.js'

/** The bridge: a YCSB DB wrapping the DB named by benchstream.db (services/ycsb/bridge). */
export const BRIDGE_CLASS = 'io.benchstream.ycsb.BenchstreamDB'

/** What a binding name stands for, and where its classes come from. */
export interface BindingChoice {
  /** The YCSB DB class the bridge wraps. */
  className: string
  /**
   * `runtime`: in the class path deploy/local/ycsb.sh builds (YCSB core and our Redis binding);
   * `hbase`: our HBase binding's own class path (deploy/local/ycsb.sh binding-classpath hbase);
   * `user`: the user's YCSB installation (--ycsb-home) or --classpath.
   */
  classpath: 'runtime' | 'hbase' | 'user'
  /** Why a name was mapped, for the user (printed at start). */
  note: string | undefined
}

/**
 * Short names for our own DB classes and YCSB core's; and YCSB's class names
 * for the stores we have a binding of, which are not on Maven Central, so
 * they are mapped to ours when no YCSB installation is given.
 */
const OURS: Record<string, { className: string; classpath: BindingChoice['classpath'] }> = {
  redis: { className: 'io.benchstream.ycsb.redis.RedisClient', classpath: 'runtime' },
  hbase: { className: 'io.benchstream.ycsb.hbase.HBaseClient', classpath: 'hbase' },
  basic: { className: 'site.ycsb.BasicDB', classpath: 'runtime' },
  basicts: { className: 'site.ycsb.BasicTSDB', classpath: 'runtime' },
}
const YCSB_EQUIVALENTS: Record<string, keyof typeof OURS> = {
  'site.ycsb.db.RedisClient': 'redis',
  'com.yahoo.ycsb.db.RedisClient': 'redis',
  'site.ycsb.db.hbase2.HBaseClient2': 'hbase',
  'site.ycsb.db.hbase1.HBaseClient1': 'hbase',
  'site.ycsb.db.HBaseClient10': 'hbase',
}
/** YCSB's own flags and phases: given before `--` they are a user's slip, answered with where they go. */
const YCSB_SHAPES = new Set(['run', 'load', '-db', '-P', '-p', '-t', '-load', '-threads', '-target', '-s'])
/** Properties the command sets from its own flags (each with its flag); giving them with -p too would be ambiguous. */
const OWN_PROPERTIES = new Map([
  ['benchstream.db', '-db'],
  ['benchstream.runid', '--run-id'],
  ['benchstream.clientid', '--client-id'],
  ['benchstream.labels', '--label k=v'],
  ['benchstream.brokers', '--kafka-brokers'],
  ['benchstream.topic', '--topic'],
  ['benchstream.group', '--group'],
  ['benchstream.repetition', '--repetition'],
  ['benchstream.barrier', '--barrier stdin'],
  ['benchstream.expected.clients', '--expected-clients'],
  ['benchstream.clock.offset.ms', '--clock-offset-ms'],
])

/**
 * Where a binding name leads: ours, YCSB core's, one of the user's installation (`bindings` from its
 * bin/bindings.properties), or a class name.
 */
export function chooseBinding(name: string, ycsbHome: { bindings: Record<string, string> } | undefined): BindingChoice {
  const ours = Object.hasOwn(OURS, name) ? OURS[name] : undefined
  if (ycsbHome !== undefined && Object.hasOwn(ycsbHome.bindings, name) && ours === undefined)
    return { className: ycsbHome.bindings[name]!, classpath: 'user', note: undefined }
  if (ours !== undefined) return { ...ours, note: undefined }
  if (ycsbHome === undefined && Object.hasOwn(YCSB_EQUIVALENTS, name)) {
    const short = YCSB_EQUIVALENTS[name]!
    const o = OURS[short]!
    return {
      ...o,
      note:
        `-db ${name}: YCSB's binding is not on Maven Central; using Benchstream's ${short} binding ${o.className} ` +
        `(same data layout and statuses; services/ycsb/README.md). Give --ycsb-home to use YCSB's own.`,
    }
  }
  if (!/^[A-Za-z_$][\w$]*(?:\.[A-Za-z_$][\w$]*)+$/.test(name)) {
    throw usage(
      `-db ${JSON.stringify(name)} is neither a ` +
        `short name (${Object.keys(OURS).join(', ')}` +
        (ycsbHome === undefined
          ? ''
          : `, or one of the installation's: ${Object.keys(ycsbHome.bindings).sort().join(', ')}`) +
        ') ' +
        `nor a Java class name`,
    )
  }
  return {
    className: name,
    classpath: ycsbHome === undefined && name.startsWith('site.ycsb.') ? 'runtime' : 'user',
    note: undefined,
  }
}

export interface YcsbCommand {
  ycsbHome: string | undefined
  /** Extra class path entries (a binding's jars outside an installation). */
  classpath: string | undefined
  runId: string
  clientId: string
  labels: Record<string, string>
  brokers: string | undefined
  topic: string | undefined
  thresholds: Threshold[]
  /** Seconds to wait for the server to count the whole run before its report is printed. */
  reportWaitS: number
  phase: 'load' | 'run'
  /** The binding name as given (-db, -p db=, or bin/ycsb's positional), `basic` when none. */
  binding: string
  /** YCSB's arguments without the phase and the binding: the bridge's are added by the caller. */
  passThrough: string[]
  /** -p exportfile=..., where YCSB writes its report instead of stdout. */
  exportFile: string | undefined
  /** --server-metrics: the datastore's own counters to sample beside YCSB during a run phase. */
  serverMetrics: ServerMetricsSource[]
  /** --group: the group of repetitions the run belongs to (start record). */
  group: string | undefined
  /** --repetition: the run's number in its group (start record). */
  repetition: number | undefined
  /**
   * --barrier stdin: YCSB gets ready (the bridge: Kafka, every client thread's DB), says so on stderr, and starts
   * at the instant read from stdin (services/ycsb/bridge StartBarrier); this process relays its stdin to YCSB's and
   * ends with it.
   */
  barrier: 'stdin' | undefined
  /** --expected-clients: how many clients the run has (start record). */
  expectedClients: number | undefined
  /** --clock-offset-ms: this machine's clock minus the broker's, ms (start record). */
  clockOffsetMs: number | undefined
}

/**
 * Datastores whose counters `benchstream ycsb` samples itself (YCSB runs in
 * Java, so no Node binding is there to do it): the name is the sampler
 * source the report keys its server cache ratio by.
 */
export const SERVER_METRICS_SOURCES = {
  hbase: "a region server's info server, e.g. http://127.0.0.1:16030 (its /jmx block cache counters)",
} as const

export interface ServerMetricsSource {
  source: keyof typeof SERVER_METRICS_SOURCES
  /** The server's base URL, without /jmx. */
  url: string
}

/** `--server-metrics hbase=http://127.0.0.1:16030[/jmx]`. */
export function parseServerMetrics(arg: string): ServerMetricsSource {
  const eq = arg.indexOf('=')
  const source = eq === -1 ? arg : arg.slice(0, eq)
  const known = Object.keys(SERVER_METRICS_SOURCES)
    .map((k) => `${k}=URL (${SERVER_METRICS_SOURCES[k as keyof typeof SERVER_METRICS_SOURCES]})`)
    .join('; ')
  if (eq === -1 || !Object.hasOwn(SERVER_METRICS_SOURCES, source))
    throw usage(`--server-metrics ${JSON.stringify(arg)} is not allowed: expected ${known}`)
  let url: URL
  try {
    url = new URL(arg.slice(eq + 1))
  } catch {
    throw usage(
      `--server-metrics ${JSON.stringify(arg)}: ${JSON.stringify(arg.slice(eq + 1))} is not a URL; expected ${known}`,
    )
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:')
    throw usage(`--server-metrics ${JSON.stringify(arg)}: only http and https URLs are allowed`)
  // The info server's root or its /jmx servlet: the sampler adds /jmx and its own query.
  const base = `${url.origin}${url.pathname.replace(/\/+$/, '').replace(/\/jmx$/, '')}`
  return { source: source as keyof typeof SERVER_METRICS_SOURCES, url: base }
}

function usage(message: string): BenchstreamError {
  return new BenchstreamError('BS_ERR_USAGE', `${message}\n${YCSB_USAGE}`)
}

/** The flags of `benchstream ycsb` before its `--` (parseArgs options); YCSB's own follow the `--`. */
export const YCSB_FLAGS = {
  'ycsb-home': { type: 'string' },
  classpath: { type: 'string' },
  'run-id': { type: 'string' },
  'client-id': { type: 'string' },
  label: { type: 'string', multiple: true },
  'kafka-brokers': { type: 'string' },
  topic: { type: 'string' },
  threshold: { type: 'string', multiple: true },
  'report-wait': { type: 'string' },
  'server-metrics': { type: 'string', multiple: true },
  group: { type: 'string' },
  repetition: { type: 'string' },
  barrier: { type: 'string' },
  'expected-clients': { type: 'string' },
  'clock-offset-ms': { type: 'string' },
} as const satisfies FlagSpecs

/**
 * `--clock-offset-ms -1.5` as `--clock-offset-ms=-1.5`: parseArgs takes a value that starts with a dash for a flag
 * of its own, and an agent whose clock is behind the broker's passes a negative offset so.
 */
function joinNegativeValues(argv: readonly string[]): string[] {
  const out: string[] = []
  for (let i = 0; i < argv.length; i++) {
    const next = argv[i + 1]
    if (argv[i] === '--clock-offset-ms' && next !== undefined && /^-\d/.test(next)) {
      out.push(`--clock-offset-ms=${next}`)
      i++
    } else out.push(argv[i]!)
  }
  return out
}

export function parseYcsbCommand(argv: readonly string[]): YcsbCommand {
  const dd = argv.indexOf('--')
  const own = dd === -1 ? argv : argv.slice(0, dd)
  const ycsb = dd === -1 ? [] : argv.slice(dd + 1)
  const stray = own.find((a) => YCSB_SHAPES.has(a))
  if (stray !== undefined)
    throw usage(
      `${JSON.stringify(stray)}: YCSB's arguments go after "--", e.g. benchstream ycsb -- run -db ` +
        `redis -P workloads/workloada`,
    )
  const { values, positionals } = parseFlags(joinNegativeValues(own), YCSB_FLAGS, YCSB_USAGE, true)
  if (positionals.length > 0)
    throw usage(
      `${JSON.stringify(positionals[0])}: YCSB's arguments go after "--", e.g. benchstream ycsb -- ` +
        `run -db redis -P workloads/workloada`,
    )
  if (ycsb.length === 0)
    throw usage(
      'no YCSB arguments: give them after "--", e.g. benchstream ycsb -- run -db redis -P workloads/workloada -s',
    )
  const labels: Record<string, string> = {}
  for (const kv of values.label ?? []) {
    const eq = kv.indexOf('=')
    const k = eq === -1 ? kv : kv.slice(0, eq)
    if (eq === -1 || !ID_PATTERN.test(k))
      throw usage(`--label ${JSON.stringify(kv)} is not allowed: expected key=value with a key of ${ID_RULE}`)
    // The bridge reads labels as k=v,k=v.
    if (kv.slice(eq + 1).includes(','))
      throw usage(`--label ${JSON.stringify(kv)}: a value must not hold "," (the bridge reads labels as k=v,k=v)`)
    labels[k] = kv.slice(eq + 1)
  }
  const runId =
    values['run-id'] ??
    `ycsb-${new Date().toISOString().replace(/[-:]/g, '').slice(0, 15)}-${Math.random().toString(36).slice(2, 6)}`
  const clientId =
    values['client-id'] ??
    `${os
      .hostname()
      .replace(/[^A-Za-z0-9._-]/g, '_')
      .slice(0, 40)}-${process.pid}`
  if (!ID_PATTERN.test(runId)) throw usage(`--run-id ${JSON.stringify(runId)} is not allowed: ${ID_RULE}`)
  if (!ID_PATTERN.test(clientId)) throw usage(`--client-id ${JSON.stringify(clientId)} is not allowed: ${ID_RULE}`)
  const wait = values['report-wait'] === undefined ? 60 : Number(values['report-wait'])
  if (!Number.isInteger(wait) || wait < 0 || wait > 3600)
    throw usage(
      `--report-wait ${JSON.stringify(values['report-wait'])} is not allowed: expected an integer from 0 to 3600`,
    )

  let phase: 'load' | 'run' | undefined
  let binding: string | undefined
  let exportFile: string | undefined
  const pass: string[] = []
  let i = 0
  // bin/ycsb's form: load|run [binding] ...
  if (ycsb[0] === 'load' || ycsb[0] === 'run') {
    phase = ycsb[0]
    i = 1
    if (ycsb[1] !== undefined && !ycsb[1].startsWith('-')) {
      binding = ycsb[1]
      i = 2
    }
  }
  const setPhase = (p: 'load' | 'run', flag: string): void => {
    if (phase !== undefined && phase !== p) throw usage(`${flag} contradicts the ${phase} phase given before`)
    phase = p
  }
  for (; i < ycsb.length; i++) {
    const a = ycsb[i]!
    if (a === '-load') setPhase('load', a)
    else if (a === '-t') setPhase('run', a)
    else if (a === '-db') {
      const v = ycsb[++i]
      if (v === undefined) throw usage('-db needs a binding: a short name (redis, hbase, basic) or a class name')
      binding = v
    } else if (a === '-p') {
      const kv = ycsb[++i]
      if (kv === undefined) throw usage('-p needs key=value')
      const key = kv.slice(0, Math.max(0, kv.indexOf('='))).trim()
      const ownFlag = OWN_PROPERTIES.get(key)
      if (ownFlag !== undefined) throw usage(`-p ${key} is set by benchstream ycsb: use ${ownFlag} instead`)
      if (key === 'db') binding = kv.slice(kv.indexOf('=') + 1).trim()
      else {
        if (key === 'exportfile') exportFile = kv.slice(kv.indexOf('=') + 1).trim() || undefined
        pass.push(a, kv)
      }
    } else pass.push(a)
  }
  return {
    ycsbHome: values['ycsb-home'],
    classpath: values.classpath,
    runId,
    clientId,
    labels,
    brokers: values['kafka-brokers'],
    topic: values.topic,
    thresholds: (values.threshold ?? []).map((t) => parseThreshold(t)),
    reportWaitS: wait,
    phase: phase ?? 'run',
    binding: binding ?? 'basic',
    passThrough: pass,
    exportFile,
    serverMetrics: (values['server-metrics'] ?? []).map(parseServerMetrics),
    group: values.group === undefined ? undefined : groupFlag(values.group, usage),
    repetition: values.repetition === undefined ? undefined : repetitionFlag(values.repetition, usage),
    barrier: values.barrier === undefined ? undefined : barrierFlag(values.barrier, usage),
    expectedClients:
      values['expected-clients'] === undefined ? undefined : expectedClientsFlag(values['expected-clients'], usage),
    clockOffsetMs:
      values['clock-offset-ms'] === undefined ? undefined : clockOffsetFlag(values['clock-offset-ms'], usage),
  }
}

/**
 * The workload name the bridge announces, unless -p benchstream.workload= gives one: the
 * -P files' names joined by "+" (workloada, workloade), as the Node driver names its runs.
 * The bridge's own default, the `workload` property, is the class
 * (site.ycsb.workloads.CoreWorkload) for workloads A to F alike, and compare pairs runs
 * by this name.
 */
export function workloadName(passThrough: readonly string[]): string | undefined {
  const files: string[] = []
  for (let i = 0; i < passThrough.length; i++) {
    const a = passThrough[i]!
    const next = passThrough[i + 1]
    if (a === '-P' && next !== undefined) files.push(next.split(/[\\/]/).pop()!)
    if (a === '-p' && next?.trim().startsWith('benchstream.workload=') === true) return undefined
  }
  return files.length === 0 ? undefined : files.join('+')
}

/** YCSB's arguments with the bridge in front of `className`. */
export function bridgeArguments(cmd: YcsbCommand, className: string, brokers: string, topic: string): string[] {
  const labels = Object.entries(cmd.labels)
    .map(([k, v]) => `${k}=${v}`)
    .join(',')
  const workload = workloadName(cmd.passThrough)
  return [
    cmd.phase === 'load' ? '-load' : '-t',
    ...cmd.passThrough,
    ...(workload === undefined ? [] : ['-p', `benchstream.workload=${workload}`]),
    '-db',
    BRIDGE_CLASS,
    '-p',
    `benchstream.db=${className}`,
    '-p',
    `benchstream.runid=${cmd.runId}`,
    '-p',
    `benchstream.clientid=${cmd.clientId}`,
    '-p',
    `benchstream.brokers=${brokers}`,
    '-p',
    `benchstream.topic=${topic}`,
    ...(labels === '' ? [] : ['-p', `benchstream.labels=${labels}`]),
    ...(cmd.group === undefined ? [] : ['-p', `benchstream.group=${cmd.group}`]),
    ...(cmd.repetition === undefined ? [] : ['-p', `benchstream.repetition=${cmd.repetition}`]),
    ...(cmd.barrier === undefined ? [] : ['-p', `benchstream.barrier=${cmd.barrier}`]),
    ...(cmd.expectedClients === undefined ? [] : ['-p', `benchstream.expected.clients=${cmd.expectedClients}`]),
    ...(cmd.clockOffsetMs === undefined
      ? []
      : ['-p', `benchstream.clock.offset.ms=${clockOffsetText(cmd.clockOffsetMs)}`]),
  ]
}

/**
 * The clock offset as the bridge reads it (digits, an optional fraction): to the µs, which keeps JavaScript's
 * exponent form (1e-7) out and is finer than any offset measured over a network.
 */
function clockOffsetText(ms: number): string {
  const us = Math.round(ms * 1000)
  return String(us === 0 ? 0 : us / 1000)
}

/** `name:class` lines of a YCSB installation's bin/bindings.properties (what bin/ycsb maps short names with). */
export function parseBindingsProperties(text: string): Record<string, string> {
  const out: Record<string, string> = {}
  for (const line of text.split(/\r?\n/)) {
    const t = line.trim()
    if (t === '' || t.startsWith('#')) continue
    const sep = t.indexOf(':')
    if (sep <= 0) continue
    out[t.slice(0, sep).trim()] = t.slice(sep + 1).trim()
  }
  return out
}
