/**
 * Did a throttled run keep its schedule? Intended latency (coordinated
 * omission corrected) counts each operation from when it was due; when the
 * client starts operations late (the machine or the binding cannot keep
 * -target), intended p99 runs far ahead of measured p99, and the run's
 * latency figures describe the client's lateness, not the datastore. The demo
 * says which it was, with the schedule lag the driver measured.
 */
import type { RunReport } from '../../../schemas/run-reports-api.v1.js'

/** Intended p99 within this factor of measured p99 counts as a kept schedule (issue 21's bar). */
export const KEPT_FACTOR = 2

export interface ScheduleVerdict {
  kept: boolean
  /** The operation whose intended p99 is furthest above its measured one, and by how much. */
  worst: { op: string; measuredP99Us: number; intendedP99Us: number; factor: number } | undefined
  text: string
}

/** undefined for an unthrottled run (no intended latency) or one without operations. */
export function scheduleVerdict(r: RunReport): ScheduleVerdict | undefined {
  let worst: ScheduleVerdict['worst']
  for (const m of r.measurements) {
    if (!m.name.startsWith('Intended-') || m.operations === 0) continue
    const op = m.name.slice('Intended-'.length)
    const measured = r.measurements.find((x) => x.name === op)
    if (measured === undefined || measured.p99LatencyUs <= 0) continue
    const factor = m.p99LatencyUs / measured.p99LatencyUs
    if (worst === undefined || factor > worst.factor)
      worst = { op, measuredP99Us: measured.p99LatencyUs, intendedP99Us: m.p99LatencyUs, factor }
  }
  if (worst === undefined) return undefined
  const lag = r.run === undefined ? '' : `; the client started operations up to ${r.run.schedule_lag_max_ms} ms late`
  const kept = worst.factor <= KEPT_FACTOR
  const figures =
    `${worst.op} intended p99 ${worst.intendedP99Us} µs is ${worst.factor.toFixed(1)}x its measured p99 ` +
    `${worst.measuredP99Us} µs`
  return {
    kept,
    worst,
    text: kept
      ? `the schedule was kept: ${figures} (within ${KEPT_FACTOR}x)${lag}`
      : `this machine did not keep the schedule: ${figures}${lag}. Intended latency here measures the client's ` +
        'own lateness, not the datastore: lower the target, or give the client more threads or cores',
  }
}
