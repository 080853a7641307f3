/**
 * How far an agent's clock is from the broker's, pure. Windows are cut on the
 * clients' event time, so a client whose clock is off shifts every window it
 * feeds: each agent measures its offset against the broker's append time of
 * its own control messages (the control topic has message.timestamp.type =
 * LogAppendTime) and keeps the sample with the shortest round trip, as NTP
 * does: the broker stamped the message somewhere between send and
 * acknowledgement, so its time minus the midpoint is the offset, known to
 * within half the round trip.
 */
import type { ClockEstimate } from '../../../schemas/experiment-control.v1.js'

export interface ClockSample {
  /** Agent's clock before the send and after the acknowledgement, ms. */
  sentMs: number
  ackedMs: number
  /** The broker's append time of the message, ms. */
  brokerMs: number
}

/** The estimate from the sample with the shortest round trip; null without a usable sample. */
export function estimateClock(samples: readonly ClockSample[], atMs: number): ClockEstimate | null {
  let best: ClockSample | undefined
  for (const s of samples) {
    if (!(s.ackedMs >= s.sentMs) || !Number.isFinite(s.brokerMs) || s.brokerMs <= 0) continue
    if (best === undefined || s.ackedMs - s.sentMs < best.ackedMs - best.sentMs) best = s
  }
  if (best === undefined) return null
  return {
    offsetMs: best.brokerMs - (best.sentMs + best.ackedMs) / 2,
    rttMs: best.ackedMs - best.sentMs,
    samples: samples.length,
    atMs,
  }
}

/**
 * Whether an estimate is within the bound, counting its uncertainty (half the
 * round trip) and the broker's millisecond stamps in the agent's favour:
 * refused only when the offset is beyond the bound whatever the uncertainty.
 */
export function clockWithin(c: ClockEstimate, boundMs: number): boolean {
  return Math.abs(c.offsetMs) - c.rttMs / 2 - 1 <= boundMs
}

/** The message a refused agent gets: what is off, by how much, and the fix. */
export function clockRefusal(agent: string, c: ClockEstimate, boundMs: number): string {
  const dir = c.offsetMs > 0 ? 'behind' : 'ahead of'
  return (
    `agent ${agent}'s clock is ${Math.abs(c.offsetMs).toFixed(1)} ms ${dir} the broker's ` +
    `(±${(c.rttMs / 2).toFixed(1)} ms), beyond the bound of ${boundMs} ms: its events would land in the ` +
    `wrong windows. Synchronise the machine's clock (chrony or systemd-timesyncd with NTP; check with ` +
    `chronyc tracking) and start the agent again, or raise clockBoundMs in the plan`
  )
}
