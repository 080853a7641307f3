/**
 * `benchstream load|run`: reads the command line, opens Kafka and the
 * binding, runs one client, prints the report, handles Ctrl-C.
 */
import { appendFileSync, mkdirSync, writeFileSync } from 'node:fs'
import path from 'node:path'
import { createKafka, ensureTopics } from '../adapters/kafka/client.js'
import { KafkaEventSink } from '../adapters/kafka/event-sink.js'
import { CoreWorkload } from '../core/workload/core-workload.js'
import { runDriver } from './app.js'
import { HdrLogSink } from './hdr-log-sink.js'
import { formatDriverReport } from './ycsb-output.js'
import { MemoryBinding } from '../adapters/datastores/memory.js'
import { BINDING_NAMES, createBinding } from '../adapters/datastores/index.js'
import { createLogger } from '../common/logger.js'
import { parseDriverArgs, type DriverConfig } from './config.js'
import { waitForMergedReport } from './merged-report.js'
import { findServer } from '../common/server-file.js'
import { evaluateThresholds, formatThresholdResults } from '../core/reports/thresholds.js'
import type { Report } from '../core/reports/ycsb-report.js'
import { readCliEnv, THRESHOLD_FAILED_EXIT } from '../common/cli-env.js'
import { NullSink, type EventSink } from '../core/ports/event-sink.js'
import { runPhase } from './runner.js'

export async function driverMain(phase: 'load' | 'run', argv: readonly string[]): Promise<number> {
  const cfg = parseDriverArgs(phase, argv, process.env, { bindings: BINDING_NAMES })
  const log = createLogger('benchstream-driver', process.env)
  const workload = CoreWorkload.fromProperties(cfg.properties)
  const binding = createBinding(cfg.binding, cfg.properties, { threads: cfg.threads })
  await binding.init()
  const abort = new AbortController()
  const onSignal = (): void => abort.abort()
  process.once('SIGINT', onSignal)
  process.once('SIGTERM', onSignal)
  let sink: EventSink
  if (cfg.emit) {
    const kafka = createKafka(cfg.infra.kafka, `driver-${cfg.clientId}`)
    await ensureTopics(kafka, cfg.infra.kafka, cfg.infra.topics)
    sink = await KafkaEventSink.open(kafka, { topic: cfg.infra.topics.events, runId: cfg.runId, clientId: cfg.clientId })
  } else {
    sink = new NullSink()
  }
  // YCSB's hdrhistogram.fileoutput: interval logs beside the events (a decorator, whatever runs the workers).
  const hdrLog = cfg.ycsb.hdrLog
  if (hdrLog !== undefined) sink = new HdrLogSink(sink, { pathPrefix: hdrLog.pathPrefix, intervalMs: hdrLog.intervalS * 1000, measured: cfg.ycsb.measurementInterval !== 'intended', intended: cfg.ycsb.measurementInterval === 'intended' || cfg.ycsb.measurementInterval === 'both', write: writeLog })
  try {
    if (phase === 'run' && binding instanceof MemoryBinding && (await binding.sampleServerMetrics()).values.records === 0) {
      // The embedded store lives in this process only: load it first, unmeasured.
      log.info({ records: workload.loadCount }, 'memory binding: loading the records before the run (not measured)')
      await runPhase(workload, binding, new NullSink(), { phase: 'load', threads: cfg.threads, target: 0, operationCount: 0, maxExecutionTimeS: 0, statusIntervalS: 0 })
    }
    for (const note of cfg.notes) process.stderr.write(`benchstream: note: ${note}\n`)
    log.info({ run: cfg.runId, client: cfg.clientId, binding: cfg.binding, threads: cfg.threads, target: cfg.target || 'unthrottled' }, `${phase} phase starting`)
    const outcome = await runDriver(cfg, { workload, binding, sink, status: (l) => process.stderr.write(l + '\n'), signal: abort.signal })
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

/** How long `run --threshold` waits for the processor to count the whole run. */
const MERGED_REPORT_WAIT_MS = 60_000

/**
 * --threshold on the merged run when a Benchstream API is reachable (all
 * clients, as the processor counted them), else on this client's own report,
 * saying which. Verdicts go to stderr; stdout stays YCSB's report.
 */
async function checkThresholds(cfg: DriverConfig, own: Report, signal: AbortSignal): Promise<boolean> {
  const cli = readCliEnv(process.env)
  const api = cli.apiUrl ?? (cfg.emit && cfg.infra.clickhouse.url === undefined ? findServer(cfg.infra.dataDir)?.apiUrl : undefined)
  let report: Report = own
  let scope = `this client only (${cfg.clientId}): no Benchstream API found; set BENCHSTREAM_API_URL to check the merged run`
  if (api !== undefined && cfg.emit) {
    process.stderr.write(`benchstream: waiting for ${api} to count run ${cfg.runId} before checking thresholds\n`)
    const merged = await waitForMergedReport(api, cli.apiToken, cfg.runId, MERGED_REPORT_WAIT_MS, signal)
    if (merged !== undefined) {
      report = merged.report
      const run = merged.report.run
      scope = merged.complete
        ? `run ${cfg.runId}, all ${run?.clients ?? ''} clients merged`
        : `run ${cfg.runId} as counted after ${MERGED_REPORT_WAIT_MS / 1000} s: ${merged.report.completeness.counted} of ${merged.report.completeness.sent ?? '?'} events, ${run?.clients_ended ?? 0} of ${run?.clients ?? '?'} clients ended`
    } else scope = `this client only (${cfg.clientId}): ${api} did not answer with the run's report`
  }
  const results = evaluateThresholds(report, cfg.thresholds)
  process.stderr.write(formatThresholdResults(results, scope))
  return results.every((r) => r.passed)
}

/** The HDR log sink's file access: a new file replaces an old one (as YCSB's FileOutputStream), its folder made if missing. */
function writeLog(file: string, text: string, create: boolean): void {
  if (create) {
    mkdirSync(path.dirname(file), { recursive: true })
    writeFileSync(file, text)
  } else appendFileSync(file, text)
}
