/**
 * `benchstream load|run`: reads the command line, opens Kafka and the
 * binding, runs one client, prints the report, handles Ctrl-C.
 *
 * Threads: client threads of a binding with a server (redis, postgres) run
 * in worker threads, each client thread with its own connection
 * (worker-main.ts, worker-pool.ts: one worker per core); the memory
 * binding's threads run here, where its store lives. Events go through shared-memory
 * rings to a delivery thread that encodes them and sends them to Kafka, and
 * writes YCSB's HDR interval logs when asked (delivery-main.ts), so no
 * measuring thread encodes, writes files or talks to Kafka.
 */
import { writeFileSync } from 'node:fs'
import { createKafka, ensureTopics } from '../adapters/kafka/client.js'
import { CoreWorkload } from '../core/workload/core-workload.js'
import { runDriver } from './app.js'
import { formatDriverReport } from './ycsb-output.js'
import { MemoryBinding } from '../adapters/datastores/memory.js'
import { BINDING_NAMES, createBinding, IN_PROCESS_BINDINGS } from '../adapters/datastores/index.js'
import { createLogger } from '../common/logger.js'
import { BARRIER_READY_LINE, parseDriverArgs, type DriverConfig } from './config.js'
import { BenchstreamError } from '../core/errors.js'
import { waitForMergedReport } from './merged-report.js'
import { findServer } from '../common/server-file.js'
import { waitBesideStartingServer } from '../adapters/process/server-wait.js'
import { evaluateThresholds, formatThresholdResults } from '../core/reports/thresholds.js'
import type { Report } from '../core/reports/ycsb-report.js'
import { readCliEnv, THRESHOLD_FAILED_EXIT } from '../common/cli-env.js'
import { NullSink, type EventSink } from '../core/ports/event-sink.js'
import { runPhase, type PhaseRunner } from './runner.js'
import { RingEventSink } from './delivery.js'
import type { DriverDelivery, HdrLogFiles } from './delivery-main.js'
import { defaultWorkerCount, runPhaseInWorkers } from './worker-pool.js'

export async function driverMain(phase: 'load' | 'run', argv: readonly string[]): Promise<number> {
  const cfg = parseDriverArgs(phase, argv, process.env, { bindings: BINDING_NAMES })
  // Started beside `benchstream server &`, which starts the local broker first: wait for it rather than fail.
  if (cfg.emit) await waitBesideStartingServer(process.env, true)
  const log = createLogger('benchstream-driver', process.env)
  const workload = CoreWorkload.fromProperties(cfg.properties)
  const inProcess = (IN_PROCESS_BINDINGS as readonly string[]).includes(cfg.binding)
  // In-process: the client threads' binding. Otherwise: server metrics only, on a connection of its own.
  const binding = createBinding(cfg.binding, cfg.properties, { threads: inProcess ? cfg.threads : 1 })
  await binding.init()
  const abort = new AbortController()
  const onSignal = (): void => abort.abort()
  process.once('SIGINT', onSignal)
  process.once('SIGTERM', onSignal)
  // YCSB's hdrhistogram.fileoutput: interval logs of every event, written by
  // the delivery thread (an EventSink decorator there), which every client
  // thread's events reach, wherever it runs.
  const y = cfg.ycsb
  const hdrLog: HdrLogFiles | undefined =
    y.hdrLog === undefined
      ? undefined
      : {
          pathPrefix: y.hdrLog.pathPrefix,
          intervalMs: y.hdrLog.intervalS * 1000,
          measured: y.measurementInterval !== 'intended',
          intended: y.measurementInterval === 'intended' || y.measurementInterval === 'both',
        }
  let sink: EventSink
  if (cfg.emit || hdrLog !== undefined) {
    const delivery: DriverDelivery = hdrLog === undefined ? {} : { hdrLog }
    if (cfg.emit) {
      await ensureTopics(createKafka(cfg.infra.kafka, `driver-${cfg.clientId}`), cfg.infra.kafka, cfg.infra.topics)
      delivery.kafka = {
        kafka: cfg.infra.kafka,
        clientIdSuffix: `driver-${cfg.clientId}`,
        options: { topic: cfg.infra.topics.events, runId: cfg.runId, clientId: cfg.clientId, lingerMs: cfg.lingerMs },
      }
    }
    sink = await RingEventSink.start(new URL('./delivery-main.js', import.meta.url), delivery)
  } else {
    sink = new NullSink()
  }
  const inWorkers: PhaseRunner | undefined = inProcess
    ? undefined
    : (o) =>
        runPhaseInWorkers({
          ...o,
          workerUrl: new URL('./worker-main.js', import.meta.url),
          binding: cfg.binding,
          properties: cfg.properties,
          ...(sink instanceof RingEventSink ? { newRing: () => sink.addRing() } : {}),
        })
  try {
    if (
      phase === 'run' &&
      binding instanceof MemoryBinding &&
      (await binding.sampleServerMetrics()).values.records === 0
    ) {
      // The embedded store lives in this process only: load it first, unmeasured.
      log.info({ records: workload.loadCount }, 'memory binding: loading the records before the run (not measured)')
      await runPhase(workload, binding, new NullSink(), {
        phase: 'load',
        threads: cfg.threads,
        target: 0,
        operationCount: 0,
        maxExecutionTimeS: 0,
        statusIntervalS: 0,
      })
    }
    for (const note of cfg.notes) process.stderr.write(`benchstream: note: ${note}\n`)
    log.info(
      {
        run: cfg.runId,
        client: cfg.clientId,
        binding: cfg.binding,
        threads: cfg.threads,
        workers: inProcess ? 0 : defaultWorkerCount(cfg.threads),
        target: cfg.target || 'unthrottled',
      },
      `${phase} phase starting`,
    )
    const outcome = await runDriver(cfg, {
      workload,
      binding,
      sink,
      status: (l) => process.stderr.write(l + '\n'),
      signal: abort.signal,
      ...(inWorkers === undefined ? {} : { runPhase: inWorkers }),
      ...(cfg.barrier === 'stdin' ? { barrier: () => stdinBarrier(abort.signal) } : {}),
    })
    const text = formatDriverReport(cfg, outcome)
    if (cfg.exportFile === undefined) process.stdout.write(text)
    else {
      writeFileSync(cfg.exportFile, text)
      log.info({ file: cfg.exportFile }, 'report written')
    }
    const undelivered = outcome.delivery.undelivered + outcome.delivery.queuedEvents > 0
    const thresholdsFailed = cfg.thresholds.length > 0 && !(await checkThresholds(cfg, outcome.report, abort.signal))
    return thresholdsFailed ? THRESHOLD_FAILED_EXIT : undelivered ? 3 : 0
  } finally {
    process.off('SIGINT', onSignal)
    process.off('SIGTERM', onSignal)
    await sink.close()
    await binding.cleanup()
  }
}

/** The last stretch before a start instant is spun rather than slept: a timer wakes a few ms late. */
const BARRIER_SPIN_MS = 3

/**
 * --barrier stdin: says it is ready on stderr, reads "start <ms since epoch>" (or "abort") from stdin, and resolves at
 * that instant of the wall clock. Rejects on abort, a closed stdin or a signal: the run has not started then.
 */
export function stdinBarrier(signal: AbortSignal): Promise<void> {
  return new Promise<void>((resolve, reject) => {
    let buffered = ''
    const fail = (why: string): void => {
      cleanup()
      reject(new BenchstreamError('BS_ERR_AGENT', `the run was called off at its start barrier: ${why}`))
    }
    const onData = (chunk: Buffer): void => {
      buffered += chunk.toString('utf8')
      const nl = buffered.indexOf('\n')
      if (nl < 0) {
        if (buffered.length > 256) fail('a line of more than 256 characters on stdin')
        return
      }
      const line = buffered.slice(0, nl).trim()
      const m = /^start (\d{12,15})$/.exec(line)
      if (line === 'abort') return fail('abort')
      if (m === null) return fail(`${JSON.stringify(line.slice(0, 80))} on stdin, expected "start <ms since epoch>"`)
      cleanup()
      dieWithStdin()
      const at = Number(m[1])
      const until = performance.now() + (at - Date.now())
      const spin = (): void => {
        while (performance.now() < until) {
          // the last few ms: a timer would wake late
        }
        resolve()
      }
      const sleepMs = until - performance.now() - BARRIER_SPIN_MS
      if (sleepMs > 0) setTimeout(spin, sleepMs)
      else spin()
    }
    const onEnd = (): void => fail('stdin closed')
    const onAbort = (): void => fail('interrupted')
    const cleanup = (): void => {
      process.stdin.off('data', onData)
      process.stdin.off('end', onEnd)
      signal.removeEventListener('abort', onAbort)
      process.stdin.pause()
    }
    process.stdin.on('data', onData)
    process.stdin.on('end', onEnd)
    signal.addEventListener('abort', onAbort, { once: true })
    process.stderr.write(`${BARRIER_READY_LINE}\n`)
  })
}

/**
 * From the start on, a closed stdin means the agent that started this client is gone (its machine, or the agent
 * killed): the client ends at once, like a client machine that died, and sends no end record. The run is then
 * visibly incomplete (a client never ended) instead of looking whole.
 */
function dieWithStdin(): void {
  process.stdin.on('data', () => undefined)
  process.stdin.once('end', () => {
    process.stderr.write('benchstream: stdin closed (the agent that started this client is gone): ending now\n')
    process.exit(75)
  })
  process.stdin.resume()
}

/** How long `run --threshold` waits for the processor to count the whole run. */
const MERGED_REPORT_WAIT_MS = 60_000

/**
 * --threshold on the merged run when a Benchstream API is reachable (all
 * clients, as the processor counted them), else on this client's own report,
 * saying which. Verdicts go to stderr; stdout stays YCSB's report.
 */
async function checkThresholds(cfg: DriverConfig, own: Report, signal: AbortSignal): Promise<boolean> {
  const cli = readCliEnv(process.env)
  const api =
    cli.apiUrl ??
    (cfg.emit && cfg.infra.clickhouse.url === undefined ? findServer(cfg.infra.dataDir)?.apiUrl : undefined)
  let report: Report = own
  let scope =
    `this client only (${cfg.clientId}): no Benchstream API found; ` + `set BENCHSTREAM_API_URL to check the merged run`
  if (api !== undefined && cfg.emit) {
    process.stderr.write(`benchstream: waiting for ${api} to count run ${cfg.runId} before checking thresholds\n`)
    const merged = await waitForMergedReport(api, cli.apiToken, cfg.runId, MERGED_REPORT_WAIT_MS, signal)
    if (merged !== undefined) {
      report = merged.report
      const run = merged.report.run
      scope = merged.complete
        ? `run ${cfg.runId}, all ${run?.clients ?? ''} clients merged`
        : `run ${cfg.runId} as counted after ${MERGED_REPORT_WAIT_MS / 1000} ` +
          `s: ${merged.report.completeness.counted} ` +
          (`of ${merged.report.completeness.sent ?? '?'} events, ${run?.clients_ended ?? 0} ` +
            `of ${run?.clients ?? '?'} clients ended`)
    } else scope = `this client only (${cfg.clientId}): ${api} did not answer with the run's report`
  }
  const results = evaluateThresholds(report, cfg.thresholds)
  process.stderr.write(formatThresholdResults(results, scope))
  return results.every((r) => r.passed)
}
