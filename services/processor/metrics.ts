/**
 * The processor's self-observability: OpenTelemetry instruments fed from
 * flushes, plus the per-run series that the generated Prometheus alert rules
 * use (deploy/prometheus/benchstream-rules.yml): the operation counter
 * (rate(benchstream_operations_total) is the live throughput per run and op),
 * each running run's target, and its clients still running.
 */
import type { Meter, ObservableResult } from '@opentelemetry/api'
import type { FlushBatch } from '../core/stats/partition-state.js'

/** Runs whose per-run series are exported; older ones stop updating (bounded label cardinality). */
const MAX_TRACKED_RUNS = 200

export class ProcessorMetrics {
  private readonly events
  private readonly messages
  private readonly flushDuration
  private readonly insertRetries
  private readonly lateEvents
  private readonly deadLetters
  private readonly operations
  private readonly rowsRewritten
  private readonly rowsUnaccounted
  private readonly runs = new Set<string>()
  /** run -> client -> target (ops/s) of the clients that started and have not ended, from lifecycle records. */
  private readonly running = new Map<string, Map<string, number>>()
  /** partition -> lag in messages, refreshed by the processor. */
  readonly lag = new Map<number, number>()
  untrackedRunEvents = 0

  constructor(meter: Meter) {
    this.events = meter.createCounter('benchstream_processor_events', {
      description: 'Operation events counted into windows',
    })
    this.messages = meter.createCounter('benchstream_processor_messages', { description: 'Kafka messages consumed' })
    this.flushDuration = meter.createHistogram('benchstream_processor_flush_duration', {
      description: 'Time from flush start to offsets committed',
      unit: 'ms',
      advice: { explicitBucketBoundaries: [5, 10, 25, 50, 100, 250, 500, 1000, 2500, 5000, 10000] },
    })
    this.insertRetries = meter.createCounter('benchstream_processor_insert_retries', {
      description: 'ClickHouse writes retried',
    })
    this.lateEvents = meter.createCounter('benchstream_processor_late_events', {
      description: 'Events that arrived after their window closed (still counted)',
    })
    this.deadLetters = meter.createCounter('benchstream_processor_dead_letters', {
      description: 'Messages sent to the dead-letter topic, by reason',
    })
    this.rowsRewritten = meter.createCounter('benchstream_processor_rows_rewritten', {
      description:
        'Rows of a replayed batch that ClickHouse had dropped as duplicates of an insert that never ' +
        'landed, written again, by table',
    })
    this.rowsUnaccounted = meter.createCounter('benchstream_processor_rows_unaccounted', {
      description:
        'Rows of a replayed batch missing in ClickHouse that could not be written again safely, by table ' +
        '(should stay 0)',
    })
    this.operations = meter.createCounter('benchstream_operations', {
      description: 'Benchmark operations by run, operation and status, as written to ClickHouse',
    })
    meter
      .createObservableGauge('benchstream_run_target_ops_per_second', {
        description: "Sum of the -target of a run's running clients (0 = unthrottled)",
        unit: '{operation}/s',
      })
      .addCallback((r: ObservableResult) => {
        for (const [run, clients] of this.running)
          r.observe(
            [...clients.values()].reduce((a, b) => a + b, 0),
            { run_id: run },
          )
      })
    meter
      .createObservableGauge('benchstream_run_clients_active', {
        description: 'Clients of a run that announced their start and not yet their end',
      })
      .addCallback((r: ObservableResult) => {
        for (const [run, clients] of this.running) r.observe(clients.size, { run_id: run })
      })
    meter
      .createObservableGauge('benchstream_processor_consumer_lag', {
        description: 'Messages not yet consumed, by partition',
      })
      .addCallback((r: ObservableResult) => {
        for (const [partition, lag] of this.lag) r.observe(lag, { partition })
      })
  }

  consumed(messages: number): void {
    this.messages.add(messages)
  }

  replayMissing(table: string, rewritten: number, unaccounted: number): void {
    if (rewritten > 0) this.rowsRewritten.add(rewritten, { table })
    if (unaccounted > 0) this.rowsUnaccounted.add(unaccounted, { table })
  }

  retried(): void {
    this.insertRetries.add(1)
  }

  flushed(batch: FlushBatch, ms: number, late: number, refused = 0): void {
    this.flushDuration.record(ms)
    this.events.add(batch.events)
    if (late > 0) this.lateEvents.add(late)
    for (const d of batch.deadLetters) this.deadLetters.add(1, { reason: d.reason })
    if (refused > 0) this.deadLetters.add(refused, { reason: 'store_rejected' })
    for (const { record: r } of batch.lifecycle) {
      let clients = this.running.get(r.runId)
      if (r.phase === 'start') {
        if (clients === undefined) {
          if (this.running.size >= MAX_TRACKED_RUNS) continue
          clients = new Map()
          this.running.set(r.runId, clients)
        }
        clients.set(r.clientId, r.target)
      } else if (clients !== undefined) {
        clients.delete(r.clientId)
        if (clients.size === 0) this.running.delete(r.runId)
      }
    }
    for (const w of batch.windows) {
      if (!this.runs.has(w.runId)) {
        if (this.runs.size >= MAX_TRACKED_RUNS) {
          this.untrackedRunEvents += w.count
          continue
        }
        this.runs.add(w.runId)
      }
      this.operations.add(w.count, { run_id: w.runId, op: w.op, status: w.status })
    }
  }
}
