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
import { ID_PATTERN, ID_RULE } from '../../schemas/events.v1.js'
import { freeze, type Env } from '../common/config.js'
import { readInfraConfig, type InfraConfig } from '../common/infra-config.js'
import { BenchstreamError, isBenchstreamError } from '../core/errors.js'
import { assertKnownProperties, mergeProperties } from '../core/workload/properties.js'

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
  infra: InfraConfig
}

/** The command-line help; `bindings` are the names the entry file's registry offers. */
export const driverUsage = (bindings: readonly string[]): string => `usage: benchstream load|run [options]
  -P <file>              workload property file (repeatable; later files win)
  -p <key>=<value>       workload property (repeatable; overrides files)
  -threads <n>           client threads, each with its own connection, as in YCSB (default 1)
  -target <ops/s>        throughput target for this client, 0 = unthrottled (default 0)
  -s                     print a status line every status.interval seconds (default 10)
  -db <binding>          datastore binding: ${bindings.join(', ')} (also --binding)
  --run-id <id>          run id shared by all clients of one run (default: generated)
  --client-id <id>       this client's id (default: <host>-<pid>)
  --label <key>=<value>  run label, e.g. system=hbase version=0.98.4 (repeatable)
  --seconds <n>          stop after n seconds (same as -p maxexecutiontime=n)
  --export text|json     final report format (default text); -p exportfile=<path> writes it to a file
  --kafka-brokers <list> Kafka brokers host:port,... (default: KAFKA_BROKERS or 127.0.0.1:9092)
  --topic <name>         event topic (default: BENCHSTREAM_TOPIC_EVENTS or benchstream.events.v1)
  --no-emit              measure without sending events (overhead baseline)
environment: KAFKA_BROKERS, BENCHSTREAM_TOPIC_EVENTS, ... (see README)`

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

function nonNegativeInt(name: string, raw: string | undefined, max = Number.MAX_SAFE_INTEGER): number {
  const v = Number(raw)
  if (raw === undefined || raw === '' || !Number.isInteger(v) || v < 0 || v > max) throw usage(`${name} ${JSON.stringify(raw ?? '')} is not allowed: expected an integer from 0 to ${max}`)
  return v
}

export function parseDriverArgs(phase: 'load' | 'run', argv: readonly string[], env: Env, opts: DriverArgsOptions): Readonly<DriverConfig> {
  const bindings = opts.bindings
  const readFile = opts.readFile ?? ((p: string) => readFileSync(p, 'utf8'))
  try {
    return parse(phase, argv, env, bindings, readFile)
  } catch (err) {
    // Every command-line mistake ends with the help text.
    if (isBenchstreamError(err, 'BS_ERR_USAGE')) throw new BenchstreamError('BS_ERR_USAGE', `${err.message}\n${driverUsage(bindings)}`)
    throw err
  }
}

function usage(message: string): BenchstreamError {
  return new BenchstreamError('BS_ERR_USAGE', message)
}

function parse(phase: 'load' | 'run', argv: readonly string[], env: Env, bindings: readonly string[], readFile: (path: string) => string): Readonly<DriverConfig> {
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
  const envOverrides: Record<string, string> = {}
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
        threads = nonNegativeInt('-threads', next(), 100_000)
        break
      case '-target':
        target = nonNegativeInt('-target', next())
        break
      case '-s':
        status = true
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
        overrides.push(['maxexecutiontime', String(nonNegativeInt('--seconds', next()))])
        break
      case '--export': {
        const f = next()
        if (f !== 'text' && f !== 'json') throw usage(`--export ${JSON.stringify(f ?? '')} is not allowed: expected text or json`)
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
      default:
        throw usage(`unknown option ${JSON.stringify(a)}`)
    }
  }
  const properties = mergeProperties(files.map((f) => f.text), overrides)
  assertKnownProperties(properties, bindings.map((b) => `${b}.`))
  threads ??= properties.threadcount === undefined ? 1 : nonNegativeInt('threadcount', properties.threadcount, 100_000)
  if (threads < 1) throw usage('-threads must be at least 1')
  target ??= properties.target === undefined ? 0 : nonNegativeInt('target', properties.target)
  binding ??= properties.db ?? 'memory'
  if (!bindings.includes(binding)) throw usage(`unknown binding ${JSON.stringify(binding)}; valid bindings are ${bindings.join(', ')}`)
  const workloadName = files.map((f) => f.name).join('+') || 'custom'
  runId ??= `${workloadName.replace(/[^A-Za-z0-9._-]/g, '_').slice(0, 24)}-${new Date().toISOString().replace(/[-:]/g, '').slice(0, 15)}-${Math.random().toString(36).slice(2, 6)}`
  clientId ??= `${os.hostname().replace(/[^A-Za-z0-9._-]/g, '_').slice(0, 40)}-${process.pid}`
  if (!ID_PATTERN.test(runId)) throw usage(`--run-id ${JSON.stringify(runId)} is not allowed: ${ID_RULE}`)
  if (!ID_PATTERN.test(clientId)) throw usage(`--client-id ${JSON.stringify(clientId)} is not allowed: ${ID_RULE}`)
  const statusIntervalS = status ? nonNegativeInt('status.interval', properties['status.interval'] ?? '10', 86_400) : 0
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
    infra: readInfraConfig({ ...env, ...envOverrides }),
  })
}
