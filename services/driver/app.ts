/**
 * One driver client: announces the run, runs the phase, samples server
 * metrics, announces the end with what it delivered, and returns its report.
 * No sockets are opened here; main.ts wires the real sink and binding.
 */
import { RECORD_KIND } from '../../schemas/events.v1.js'
import { decimal2, remainingText, statusTimestamp } from '../core/reports/ycsb-format.js'
import { formatYcsb, isIntended, type Report } from '../core/reports/ycsb-report.js'
import { quantileFromEntries } from '../core/stats/histogram.js'
import type { Workload } from '../core/workload/workload-types.js'
import type { Binding } from '../core/ports/binding.js'
import { startRecordFields, type DriverConfig } from './config.js'
import type { EventSink, SinkStats } from '../core/ports/event-sink.js'
import { runPhase, type PhaseRunner, type StatusSnapshot } from './runner.js'
import type { ScheduleEvent, ScheduleSummary } from './schedule-keeping.js'
import { startServerMetrics } from './server-metrics.js'

export interface DriverDeps {
  workload: Workload
  binding: Binding
  sink: EventSink
  /** Status lines (YCSB prints them to stderr). */
  status: (line: string) => void
  signal?: AbortSignal
  /**
   * Runs the phase somewhere else (worker threads, worker-pool.ts); default: runPhase with the workload, binding and
   * sink above.
   */
  runPhase?: PhaseRunner
  /** Resolves at the instant the run is to start (an experiment's start barrier); rejects to abort before it starts. */
  barrier?: () => Promise<void>
}

export interface DriverOutcome {
  report: Report
  delivery: SinkStats
  runtimeMs: number
  schedule: ScheduleSummary
}

export async function runDriver(cfg: DriverConfig, deps: DriverDeps): Promise<DriverOutcome> {
  const base = {
    runId: cfg.runId,
    clientId: cfg.clientId,
    labels: cfg.labels,
    workload: cfg.workloadName,
    binding: cfg.binding,
    threads: cfg.threads,
    target: cfg.target,
  }
  await deps.sink.sendRecord({
    kind: RECORD_KIND.RUN_LIFECYCLE,
    phase: 'start',
    atUs: nowUs(),
    ...base,
    ...startRecordFields(cfg),
  })
  // Everything is ready and announced (the start record's round trip to Kafka is not in the start's skew): the
  // run starts at the barrier. A run called off there has a start record and no end: visibly incomplete.
  await deps.barrier?.()
  const sample = deps.binding.sampleServerMetrics?.bind(deps.binding)
  const sampler =
    sample !== undefined && cfg.phase === 'run'
      ? startServerMetrics(sample, deps.sink, {
          runId: cfg.runId,
          clientId: cfg.clientId,
          onError: (err) => deps.status(`server metrics sample failed: ${err.message}`),
        })
      : undefined
  let result
  try {
    const phaseRunner: PhaseRunner = deps.runPhase ?? ((o) => runPhase(deps.workload, deps.binding, deps.sink, o))
    result = await phaseRunner({
      phase: cfg.phase,
      threads: cfg.threads,
      target: cfg.target,
      operationCount: 0,
      maxExecutionTimeS: deps.workload.maxExecutionTimeS,
      statusIntervalS: cfg.statusIntervalS,
      onStatus: (s) => deps.status(formatStatus(s)),
      maxScheduleLagMs: cfg.maxScheduleLagMs,
      onSchedule: (e) => deps.status(formatSchedule(e, cfg)),
      ...(deps.signal === undefined ? {} : { signal: deps.signal }),
    })
  } finally {
    // One last sample so the server-side ratio covers the whole run.
    await sampler?.stop()
  }
  await deps.sink.flush(60_000)
  const delivery = deps.sink.stats()
  await deps.sink.sendRecord({
    kind: RECORD_KIND.RUN_LIFECYCLE,
    phase: 'end',
    atUs: nowUs(),
    ...base,
    sent: delivery.sent,
    undelivered: delivery.undelivered + delivery.queuedEvents,
    runtimeMs: result.runtimeMs,
    scheduleLagMaxMs: Math.round(result.schedule.maxLagMs * 1000) / 1000,
    behindScheduleEpisodes: result.schedule.episodes,
    ...(result.firstOpAtMs === undefined ? {} : { firstOpUs: Math.round(result.firstOpAtMs * 1000) }),
  })
  return { report: result.report, delivery, runtimeMs: result.runtimeMs, schedule: result.schedule }
}

function nowUs(): number {
  return Math.round((performance.timeOrigin + performance.now()) * 1000)
}

/**
 * YCSB's status line (StatusThread.computeStats + OneMeasurementHdrHistogram.getSummary):
 * `2026-12-02 10:00:10:000 10 sec: 123456 operations; 12345.6 current ops/sec; est completion in 5 seconds [READ:
 * Count=..., Max=..., Min=..., Avg=..., 90=..., 99=..., 99.9=..., 99.99=...] `.
 * Whole seconds are truncated, figures use DecimalFormat("#.##"), percentiles
 * follow HdrHistogram's rank rule and are whole µs within [Min, Max]. The
 * measurements come in name order (YCSB's come in hash-map order).
 */
export function formatStatus(s: StatusSnapshot, now = new Date()): string {
  let line = `${statusTimestamp(now)} ${Math.floor(s.elapsedMs / 1000)} sec: ${s.operations} operations; `
  if (s.operations !== 0) line += `${decimal2(s.currentOpsPerSec)} current ops/sec; `
  if (s.todoOperations > 0 && s.operations > 0)
    line += `est completion in ${remainingText(Math.ceil(s.todoOperations / ((1000 * s.operations) / s.elapsedMs)))}`
  // Measured first, then intended, each by name (YCSB: its two maps in turn, each in hash order).
  const order = ([a]: [string, unknown], [b]: [string, unknown]): number =>
    Number(isIntended(a)) - Number(isIntended(b)) || a.localeCompare(b)
  for (const [name, c] of [...s.intervals].sort(order)) {
    const q = (x: number): string => decimal2(quantileFromEntries(c.hist.entries(), x, c.minUs, c.maxUs))
    line +=
      `[${name}: Count=${c.count}, Max=${c.maxUs}, Min=${c.minUs}, Avg=${decimal2(c.sumUs / c.count)}, ` +
      `90=${q(0.9)}, 99=${q(0.99)}, 99.9=${q(0.999)}, 99.99=${q(0.9999)}] `
  }
  return line
}

/** The stderr line when the client falls behind its schedule or catches up. */
function formatSchedule(e: ScheduleEvent, cfg: DriverConfig): string {
  const at = `${(e.elapsedMs / 1000).toFixed(1)} s into the run`
  if (e.kind === 'behind') {
    return (
      `benchstream: warning: ${at}, this client is behind its schedule (an operation started ${Math.round(e.lagMs)} ` +
      `ms late; bound ${cfg.maxScheduleLagMs} ms): ` +
      (`${cfg.target} ops/s with ${cfg.threads} thread${cfg.threads === 1 ? '' : 's'} is more than ` +
        `the binding or this machine delivers. Intended latency counts the wait; measured latency does not. `) +
      'Use more threads or clients, or a lower -target.'
    )
  }
  return (
    `benchstream: ${at}, this client is back on schedule after ${(e.durationMs / 1000).toFixed(1)} ` +
    `s behind (at most ${Math.round(e.maxLagMs)} ms late)`
  )
}

export function formatOutcome(cfg: DriverConfig, o: DriverOutcome): string {
  const schedule = {
    maxScheduleLagMs: Math.round(o.schedule.maxLagMs * 1000) / 1000,
    behindScheduleEpisodes: o.schedule.episodes,
  }
  if (cfg.export === 'json')
    return (
      JSON.stringify(
        {
          runId: cfg.runId,
          clientId: cfg.clientId,
          ...o.report,
          delivery: o.delivery,
          ...(cfg.target > 0 ? { schedule } : {}),
        },
        null,
        2,
      ) + '\n'
    )
  const lines = [
    `[BENCHSTREAM], RunId, ${cfg.runId}`,
    `[BENCHSTREAM], ClientId, ${cfg.clientId}`,
    `[BENCHSTREAM], EventsDelivered, ${o.delivery.sentEvents}`,
    `[BENCHSTREAM], EventsUndelivered, ${o.delivery.undelivered + o.delivery.queuedEvents}`,
    `[BENCHSTREAM], ControlRecordsUndelivered, ${o.delivery.undeliveredRecords}`,
  ]
  if (cfg.target > 0)
    lines.push(
      `[BENCHSTREAM], MaxScheduleLag(ms), ${schedule.maxScheduleLagMs}`,
      `[BENCHSTREAM], BehindScheduleEpisodes, ${schedule.behindScheduleEpisodes}`,
    )
  return formatYcsb(o.report) + lines.join('\n') + '\n'
}
