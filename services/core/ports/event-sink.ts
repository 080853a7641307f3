/**
 * Where the driver's measurements go. The runner calls record() once per
 * operation on its hot path, so implementations must only append to memory
 * there; delivery happens in the background, bounded, and what cannot be
 * delivered is counted, never hidden.
 */
import type { RunLifecycle, ServerMetrics } from '../../../schemas/events.v1.js'

export interface SinkStats {
  /** Events acknowledged by the transport, by `OP/STATUS`. */
  sent: Record<string, number>
  sentEvents: number
  /** Events measured but not delivered (buffer full, transport down at close). */
  undelivered: number
  /** Control records (run start/end, server metrics) that could not be sent. */
  undeliveredRecords: number
  /** Batches and events waiting for delivery now. */
  queuedBatches: number
  queuedEvents: number
  deliveredBatches: number
}

export interface EventSink {
  /** Appends one measured operation. Never blocks, never throws. Codes as in schemas/events.v1.ts. */
  record(
    thread: number,
    opCode: number,
    cacheIndex: number,
    statusIndex: number,
    startUs: number,
    latencyUs: number,
    intendedUs: number,
    bytes: number,
  ): void
  /** Sends a control record (run lifecycle, server metrics) after everything recorded before it. */
  sendRecord(record: RunLifecycle | ServerMetrics): Promise<void>
  /** Delivers what is buffered, waiting at most timeoutMs. */
  flush(timeoutMs: number): Promise<void>
  stats(): SinkStats
  close(): Promise<void>
}

/** A sink that drops everything: for measuring the driver without emission (bench/driver-overhead). */
export class NullSink implements EventSink {
  private events = 0
  record(): void {
    this.events++
  }
  async sendRecord(): Promise<void> {}
  async flush(): Promise<void> {}
  stats(): SinkStats {
    return {
      sent: {},
      sentEvents: 0,
      undelivered: 0,
      undeliveredRecords: 0,
      queuedBatches: 0,
      queuedEvents: 0,
      deliveredBatches: 0,
    }
  }
  async close(): Promise<void> {}
}
