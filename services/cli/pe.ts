/**
 * `benchstream pe [flags] --command PATH -- <PE arguments>`: one client of
 * an experiment's `driver: pe` run (the agent starts it; a user can too).
 * Runs HBase's PerformanceEvaluation as `PATH pe <PE arguments>` (PATH is
 * HBase's bin/hbase, or deploy/local/hbase-pe.sh), held at the run's start
 * barrier until the agent's `go`; samples the region server's /jmx into the
 * run while PE runs (--server-metrics, as `benchstream ycsb` does); then
 * reads what PE printed (services/core/pe) and sends it as the run's
 * clients, through the same records as `benchstream import-pe`. PE's output
 * passes through to stderr; stdout gets `[OP], Operations, N` lines, as the
 * agent reads every client's.
 */
import { spawn } from 'node:child_process'
import { ID_PATTERN, ID_RULE } from '../../schemas/events.v1.js'
import { createKafka } from '../adapters/kafka/client.js'
import { parseFlags, type FlagSpecs } from '../common/args.js'
import type { Env } from '../common/config.js'
import { readInfraConfig } from '../common/infra-config.js'
import { BenchstreamError } from '../core/errors.js'
import { pickTest, planPeImport } from '../core/pe/pe-import.js'
import { parsePeOutput } from '../core/pe/pe-output.js'
import { MAX_PE_FILE_BYTES } from '../core/pe/pe-result.js'
import { PE_COMMANDS } from '../core/pe/pe-tests.js'
import { stdinBarrier } from '../driver/main.js'
import { parseLabels, sendPeRun } from './import-pe.js'
import { PE_USAGE } from './usage.js'
import { parseServerMetrics, type ServerMetricsSource } from './ycsb-args.js'
import { startSampling } from './ycsb.js'

export const PE_FLAGS = {
  command: { type: 'string' },
  'run-id': { type: 'string' },
  'client-id': { type: 'string' },
  label: { type: 'string', multiple: true },
  group: { type: 'string' },
  repetition: { type: 'string' },
  barrier: { type: 'string' },
  'expected-clients': { type: 'string' },
  'clock-offset-ms': { type: 'string' },
  'server-metrics': { type: 'string', multiple: true },
  'kafka-brokers': { type: 'string' },
} as const satisfies FlagSpecs

export interface PeCommand {
  command: string
  runId: string
  clientId: string
  labels: Record<string, string>
  group: string | undefined
  repetition: number | undefined
  barrier: 'stdin' | undefined
  expectedClients: number | undefined
  clockOffsetMs: number | undefined
  serverMetrics: ServerMetricsSource[]
  brokers: string | undefined
  /** What follows `pe` on PE's command line: [-Dk=v]... --nomapred [--opt=v]... <test> <nclients>. */
  peArgs: string[]
  test: string
  nclients: number
}

function usage(what: string): BenchstreamError {
  return new BenchstreamError('BS_ERR_USAGE', `${what}\n${PE_USAGE}`)
}

export function parsePeCommand(argv: readonly string[]): PeCommand {
  const dash = argv.indexOf('--')
  if (dash === -1) throw usage("PE's arguments go after --: benchstream pe [flags] -- --nomapred randomRead 4")
  // The agent passes a negative offset as its own argument (--clock-offset-ms -37.000), which parseArgs would take
  // for a flag: joined to its flag first.
  const own = argv
    .slice(0, dash)
    .flatMap((a, i, all) =>
      a === '--clock-offset-ms' && i + 1 < all.length
        ? []
        : i > 0 && all[i - 1] === '--clock-offset-ms'
          ? [`--clock-offset-ms=${a}`]
          : [a],
    )
  const { values } = parseFlags(own, PE_FLAGS, PE_USAGE)
  const peArgs = argv.slice(dash + 1)
  const id = (flag: string, v: string | undefined): string => {
    if (v === undefined || !ID_PATTERN.test(v))
      throw usage(`${flag} ${v === undefined ? 'is required' : `${JSON.stringify(v)} is not allowed`}: ${ID_RULE}`)
    return v
  }
  const int = (flag: string, raw: string | undefined, min: number, max: number): number | undefined => {
    if (raw === undefined) return undefined
    const v = Number(raw)
    if (!/^\d+$/.test(raw) || v < min || v > max)
      throw usage(`${flag} ${JSON.stringify(raw)} is not allowed: expected a whole number from ${min} to ${max}`)
    return v
  }
  if (values.command === undefined || values.command === '')
    throw usage('--command is required: the path of HBase bin/hbase (or deploy/local/hbase-pe.sh), run as PATH pe ...')
  if (values.barrier !== undefined && values.barrier !== 'stdin')
    throw usage(`--barrier ${JSON.stringify(values.barrier)} is not allowed: stdin`)
  if (!peArgs.includes('--nomapred'))
    throw usage("PE runs here with --nomapred (its clients as threads of one process): add it to PE's arguments")
  if (peArgs.length < 3) throw usage("PE's arguments end with <test> <nclients>, e.g. --nomapred randomRead 4")
  const test = peArgs.at(-2)!
  const nclients = int('<nclients>', peArgs.at(-1), 1, 4096)!
  if (!PE_COMMANDS.includes(test))
    throw usage(`${JSON.stringify(test)} is not one of PE's tests; they are ${PE_COMMANDS.join(', ')}`)
  const offset = values['clock-offset-ms']
  if (offset !== undefined && !Number.isFinite(Number(offset)))
    throw usage(`--clock-offset-ms ${JSON.stringify(offset)} is not a number of ms`)
  return {
    command: values.command,
    runId: id('--run-id', values['run-id']),
    clientId: id('--client-id', values['client-id']),
    labels: parseLabels(values.label ?? [], PE_USAGE),
    group: values.group === undefined ? undefined : id('--group', values.group),
    repetition: int('--repetition', values.repetition, 1, 100_000),
    barrier: values.barrier === undefined ? undefined : 'stdin',
    expectedClients: int('--expected-clients', values['expected-clients'], 1, 1024),
    clockOffsetMs: offset === undefined ? undefined : Number(offset),
    serverMetrics: (values['server-metrics'] ?? []).map(parseServerMetrics),
    brokers: values['kafka-brokers'],
    peArgs,
    test,
    nclients,
  }
}

export async function peMain(
  argv: readonly string[],
  env: Env = process.env,
  out: (s: string) => void = (s) => process.stdout.write(s),
  err: (s: string) => void = (s) => process.stderr.write(s),
): Promise<number> {
  if (argv.includes('--help') || argv.includes('-h')) {
    out(PE_USAGE + '\n')
    return 0
  }
  const cmd = parsePeCommand(argv)
  const infra = readInfraConfig(cmd.brokers === undefined ? env : { ...env, KAFKA_BROKERS: cmd.brokers })
  const kafka = createKafka(infra.kafka, `pe-${cmd.clientId}`)
  // One sample first: a wrong /jmx URL stops the client before the run, not after it.
  const metrics = cmd.serverMetrics.length > 0 ? await startSampling(cmd, kafka, infra.topics.events, err) : undefined
  if (cmd.barrier === 'stdin') {
    const abort = new AbortController()
    try {
      await stdinBarrier(abort.signal)
    } catch (e) {
      await metrics?.stop()
      throw e
    }
  }
  const startUs = Date.now() * 1000
  metrics?.begin()
  err(`benchstream: run ${cmd.runId}, client ${cmd.clientId}: ${cmd.command} pe ${cmd.peArgs.join(' ')}\n`)
  let ran: { code: number | null; signal: NodeJS.Signals | null; output: string }
  try {
    ran = await runPe(cmd, env, err)
  } finally {
    await metrics?.stop()
  }
  const endUs = Date.now() * 1000
  if (ran.code !== 0) {
    err(`benchstream: PE exited with ${ran.code === null ? `signal ${ran.signal}` : `code ${ran.code}`}\n`)
    return ran.code === null || ran.code === 0 ? 1 : ran.code
  }
  const parsed = parsePeOutput(ran.output, `${cmd.command} pe (run ${cmd.runId}, client ${cmd.clientId})`)
  const test = pickTest(parsed, cmd.test)
  if (test.clients.length !== cmd.nclients)
    throw new BenchstreamError(
      'BS_ERR_DECODE',
      `PE ran ${cmd.nclients} clients but printed the results of ${test.clients.length}: nothing was sent`,
    )
  const plan = planPeImport(parsed, test, cmd.clientId)
  await sendPeRun(infra, plan, {
    runId: cmd.runId,
    labels: { source: 'pe', ...cmd.labels },
    startUs,
    endUs,
    keyClient: cmd.clientId,
    ...(cmd.group === undefined ? {} : { group: cmd.group }),
    ...(cmd.repetition === undefined ? {} : { repetition: cmd.repetition }),
    // Each PE client is a client of the run: this process's nclients for each of the experiment's clients.
    ...(cmd.expectedClients === undefined ? {} : { expectedClients: cmd.expectedClients * cmd.nclients }),
    ...(cmd.clockOffsetMs === undefined ? {} : { clockOffsetMs: cmd.clockOffsetMs }),
  })
  for (const d of plan.described) err(`benchstream: ${d}\n`)
  // What the agent reads of every client (the YCSB report's lines), and the run's length as PE measured it.
  out(`[OVERALL], RunTime(ms), ${plan.runtimeMs}\n`)
  out(`[${test.op ?? test.test}], Operations, ${plan.operations}\n`)
  return 0
}

/** Runs `PATH pe ARGS`; its stdout and stderr pass through to stderr as they come, and are kept (bounded). */
function runPe(
  cmd: PeCommand,
  env: Env,
  err: (s: string) => void,
): Promise<{ code: number | null; signal: NodeJS.Signals | null; output: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(cmd.command, ['pe', ...cmd.peArgs], {
      env: { ...process.env, ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    })
    let output = ''
    let dropped = false
    const keep = (d: string): void => {
      err(d)
      if (output.length + d.length <= MAX_PE_FILE_BYTES) output += d
      else dropped = true
    }
    child.stdout.setEncoding('utf8').on('data', keep)
    child.stderr.setEncoding('utf8').on('data', keep)
    const onTerm = (): void => {
      child.kill('SIGTERM')
    }
    process.once('SIGTERM', onTerm)
    // This process may end first (stdin closed: the agent is gone, stdinBarrier exits at once): PE goes with it.
    const onExit = (): void => {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL')
    }
    process.once('exit', onExit)
    child.on('error', (e) => {
      process.off('SIGTERM', onTerm)
      reject(
        new BenchstreamError('BS_ERR_CONFIG', `cannot start ${cmd.command}: ${e.message} (HBase's bin/hbase?)`, {
          cause: e,
        }),
      )
    })
    child.on('close', (code, signal) => {
      process.off('SIGTERM', onTerm)
      process.off('exit', onExit)
      if (dropped)
        reject(
          new BenchstreamError(
            'BS_ERR_TOO_LARGE',
            `PE printed more than ${MAX_PE_FILE_BYTES} bytes (MAX_PE_FILE_BYTES): not read, nothing sent`,
          ),
        )
      else resolve({ code, signal, output })
    })
  })
}
