/**
 * What the driver offers a run whose operations another client makes (real
 * YCSB behind the bridge, `benchstream ycsb`; HBase's PerformanceEvaluation,
 * `benchstream pe`): the datastore's own counters sampled into the run while
 * that client goes, and the run's report merged over its clients once every
 * event sent is counted. The one entry the command line takes these from; it
 * brings the adapters (the /jmx sampler, the Kafka sink) and this file what
 * happens between them.
 */
import { BenchstreamError } from '../core/errors.js'
import type { EventSink } from '../core/ports/event-sink.js'
import { startServerMetrics, type SampleServer, type ServerMetricsLoop } from './server-metrics.js'

export { waitForMergedReport } from './merged-report.js'
export type { SampleServer } from './server-metrics.js'

/** A server whose counters are sampled into the run: its source name, where it is, and one reading. */
export interface ServerCounters {
  source: string
  url: string
  sample: SampleServer
}

export interface Sampling {
  /** Starts sampling every second (the run's start); a second call does nothing. */
  begin(): void
  /** Takes the last samples, delivers them and closes the sink; says what failed or was not delivered. */
  stop(): Promise<void>
}

/** Warnings of failed samples said, the first ones only: a server busy with the benchmark may miss one now and then. */
const WARNED_SAMPLES = 3

/**
 * Samples the servers every second into the run's SERVER_METRICS records, as
 * the client `ids` names, from begin() on. One sample first, before the
 * client starts: a wrong URL stops the command at once (BS_ERR_BINDING)
 * rather than leaving a run without the ratio asked for; only then is the
 * sink opened.
 */
export async function sampleServers(
  servers: readonly ServerCounters[],
  openSink: () => Promise<EventSink>,
  ids: { runId: string; clientId: string },
  err: (s: string) => void,
): Promise<Sampling> {
  for (const s of servers) {
    try {
      await s.sample()
    } catch (e) {
      throw new BenchstreamError('BS_ERR_BINDING', `--server-metrics ${s.source}=${s.url}: ${(e as Error).message}`, {
        cause: e,
      })
    }
  }
  const sink = await openSink()
  let warned = 0
  let loops: ServerMetricsLoop[] = []
  return {
    begin() {
      if (loops.length > 0) return
      loops = servers.map((s) =>
        startServerMetrics(s.sample, sink, {
          runId: ids.runId,
          clientId: ids.clientId,
          onError: (e) => {
            if (warned++ < WARNED_SAMPLES)
              err(`benchstream: warning: ${s.source} server metrics sample failed: ${e.message}\n`)
          },
        }),
      )
      const where = servers.map((s) => `${s.source} at ${s.url}`).join(', ')
      err(`benchstream: sampling ${where} every second into server_metrics\n`)
    },
    async stop() {
      await Promise.all(loops.map((l) => l.stop()))
      await sink.flush(10_000)
      const st = sink.stats()
      await sink.close()
      const c = loops.reduce((a, l) => ({ sent: a.sent + l.counts().sent, failed: a.failed + l.counts().failed }), {
        sent: 0,
        failed: 0,
      })
      if (c.failed > 0 || st.undeliveredRecords > 0)
        err(
          `benchstream: server metrics: ${c.sent} samples sent, ${c.failed} ` +
            `failed, ${st.undeliveredRecords} undelivered\n`,
        )
    },
  }
}
