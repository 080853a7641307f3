/**
 * What the partition workers of one processor share: the counters they add
 * to, the ports they use and the context that binds them (config, the runs'
 * window lengths, whether the processor still runs).
 */

import type { Tracer } from '@opentelemetry/api'
import type { DeadLetterSink } from '../core/ports/dead-letter-sink.js'
import type { PartitionSource } from '../core/ports/partition-source.js'
import type { WindowStore } from '../core/ports/window-store.js'
import type { FlushBatch } from '../core/stats/partition-state.js'
import type { Logger } from '../common/logger.js'
import type { ProcessorConfig } from './config.js'
import type { ProcessorMetrics } from './metrics.js'
import type { RunWindows } from './run-windows.js'

/** Counters the processor exposes (metrics, tests, the demo); its workers add to one shared object. */
export interface ProcessorStats {
  messages: number
  events: number
  flushes: number
  insertRetries: number
  lateEvents: number
  deadLetters: number
  rejectedByReason: Record<string, number>
  lastFlushMs: number
  /** Sum of flush latencies, ms (with flushes: the mean). */
  flushMsTotal: number
  replays: number
  /** Rows a verified write found missing (ClickHouse took their replay for a duplicate) and wrote again. */
  rowsRewritten: number
  /** Rows a verified write found missing and could not write again safely (logged as errors). */
  rowsUnaccounted: number
}

export function newProcessorStats(): ProcessorStats {
  return {
    messages: 0,
    events: 0,
    flushes: 0,
    insertRetries: 0,
    lateEvents: 0,
    deadLetters: 0,
    rejectedByReason: {},
    lastFlushMs: 0,
    flushMsTotal: 0,
    replays: 0,
    rowsRewritten: 0,
    rowsUnaccounted: 0,
  }
}

/** The ports a worker uses: the processor's, less the run registry (its RunWindows are shared). */
export interface WorkerPorts {
  source: PartitionSource
  deadLetters: DeadLetterSink
  store: WindowStore
  /** Called after each batch is stored and committed (alerts and live views subscribe here). */
  onFlushed?: (batch: FlushBatch) => void
  /** OpenTelemetry instruments (services/processor/metrics.ts). */
  metrics?: ProcessorMetrics
  /** Each flush becomes a span. */
  tracer?: Tracer
  /** Diagnostics: retries and failures, rate-limited. */
  log?: Logger
}

/** What all workers of one processor share. */
export interface WorkerContext {
  config: ProcessorConfig
  ports: WorkerPorts
  stats: ProcessorStats
  runs: RunWindows
  /** False once the processor stops: a failing write is then abandoned instead of retried. */
  running: () => boolean
  /** Registers work started off the caller's path (the processor's stop() waits for it). */
  track: (work: Promise<unknown>) => void
}
