/**
 * The datastore's own counters during a run, sampled once a period and sent
 * as SERVER_METRICS records: by the Node driver (a binding that samples its
 * server) and by `benchstream ycsb --server-metrics` beside a Java YCSB
 * client (HBase's region server /jmx). No sockets here: the sample function
 * and the sink are given.
 */
import { RECORD_KIND } from '../../schemas/events.v1.js'
import type { EventSink } from '../core/ports/event-sink.js'

/** One reading of a datastore's cumulative counters. */
export type SampleServer = () => Promise<{ source: string; values: Record<string, number> }>

export interface ServerMetricsOptions {
  runId: string
  clientId: string
  /** ms between samples. @default 1000 */
  intervalMs?: number
  /** A failed sample (server slow or gone): said, never fatal to the benchmark. */
  onError: (err: Error) => void
}

export interface ServerMetricsLoop {
  /** Takes one last sample (so the figures cover the whole run) and waits for every send. */
  stop(): Promise<void>
  /** Samples sent and samples that failed so far. */
  counts(): { sent: number; failed: number }
}

/** Samples at once, then every intervalMs, until stop(). */
export function startServerMetrics(
  sample: SampleServer,
  sink: EventSink,
  opts: ServerMetricsOptions,
): ServerMetricsLoop {
  const pending = new Set<Promise<void>>()
  let sent = 0
  let failed = 0
  const once = (): void => {
    const p = sample()
      .then((m) =>
        sink.sendRecord({
          kind: RECORD_KIND.SERVER_METRICS,
          runId: opts.runId,
          clientId: opts.clientId,
          atUs: nowUs(),
          source: m.source,
          values: m.values,
        }),
      )
      .then(
        () => {
          sent++
        },
        (err: unknown) => {
          failed++
          opts.onError(err as Error)
        },
      )
      .finally(() => pending.delete(p))
    pending.add(p)
  }
  once()
  const timer = setInterval(once, opts.intervalMs ?? 1000)
  let stopped: Promise<void> | undefined
  return {
    stop() {
      stopped ??= (async () => {
        clearInterval(timer)
        once()
        while (pending.size > 0) await Promise.all(pending)
      })()
      return stopped
    },
    counts: () => ({ sent, failed }),
  }
}

function nowUs(): number {
  return Math.round((performance.timeOrigin + performance.now()) * 1000)
}
