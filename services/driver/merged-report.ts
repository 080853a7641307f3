/**
 * The run's report merged over all its clients, from a Benchstream API, once
 * the processor has counted every event the clients say they sent. Used to
 * check --threshold on the whole run rather than on one client.
 */
import type { RunReport } from '../../schemas/run-reports-api.v1.js'

export interface MergedReport {
  report: RunReport
  /** True when every client had ended and every event it sent was counted. */
  complete: boolean
}

export async function waitForMergedReport(
  api: string,
  token: string | undefined,
  runId: string,
  timeoutMs: number,
  signal?: AbortSignal,
): Promise<MergedReport | undefined> {
  const headers: Record<string, string> = token === undefined ? {} : { authorization: `Bearer ${token}` }
  const deadline = Date.now() + timeoutMs
  let last: RunReport | undefined
  for (;;) {
    try {
      const res = await fetch(`${api}/api/v1/runs/${encodeURIComponent(runId)}/report`, {
        headers,
        signal: AbortSignal.timeout(5000),
      })
      if (res.ok) {
        last = (await res.json()) as RunReport
        const run = last.run
        const sent = last.completeness.sent
        if (run !== undefined && run.clients_ended >= run.clients && sent !== null && last.completeness.counted >= sent)
          return { report: last, complete: true }
      }
    } catch {
      // not reachable yet, or gone: keep trying until the deadline
    }
    if (Date.now() >= deadline || signal?.aborted === true)
      return last === undefined ? undefined : { report: last, complete: false }
    await new Promise((r) => setTimeout(r, 500))
  }
}
