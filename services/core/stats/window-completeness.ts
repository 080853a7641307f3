/**
 * Which windows of a run are complete, pure: the one definition that the
 * alert evaluator and the live view judge windows by, with one set of
 * settings (WindowCompleteness, read once from ALLOWED_LATENESS_MS,
 * WINDOW_END_GRACE_MS and WINDOW_PARTITION_IDLE_MS in
 * services/common/infra-config.ts). The processor writes partial window rows
 * per Kafka partition on every flush, so a window's merged count is final
 * only once every partition carrying the run has moved past it by the
 * allowed lateness (services/core/stats/windows.ts). Judging a still-filling
 * window would see a drop that is not there.
 */

/** Where a run's data stands in the store. */
export interface RunProgress {
  windowMs: number
  /** Start of the run's first window with data, ms. */
  firstWindowMs: number
  /** Start of its newest window with data, ms. */
  lastWindowMs: number
  /** Per Kafka partition carrying the run: the latest operation end written so far, µs. */
  partitionMaxEndUs: readonly number[]
  /** The latest operation end of the run, ms. */
  lastDataMs: number
}

/** When a window counts as complete: the same for every reader. */
export interface WindowCompleteness {
  /** The processor's ALLOWED_LATENESS_MS. */
  allowedLatenessMs: number
  /** After the end record, how long the last partitions' flushes may still take. */
  endGraceMs: number
  /** A partition this far behind the run's newest data no longer carries the run (it is left out of the watermark). */
  partitionIdleMs: number
}

export interface CompletenessOptions extends WindowCompleteness {
  nowMs: number
  /** The run's end (all clients' end records), ms; undefined while it runs. */
  endedAtMs: number | undefined
}

/**
 * Where a reader that has judged windows up to `cursorMs` reads progress from: only recent rows matter for the
 * watermark (a partition idle longer than partitionIdleMs is left out anyway); the whole run (0) the first time.
 */
export function progressSinceMs(cursorMs: number | undefined, windowMs: number, c: WindowCompleteness): number {
  return cursorMs === undefined ? 0 : Math.max(0, cursorMs - c.partitionIdleMs - c.allowedLatenessMs - 2 * windowMs)
}

/**
 * The run's watermark: the data's progress in the partition that is furthest
 * behind, among partitions still carrying the run. Min, not max: a window is
 * complete only when every partition has written it.
 */
export function runWatermarkUs(partitionMaxEndUs: readonly number[], partitionIdleUs: number): number | undefined {
  if (partitionMaxEndUs.length === 0) return undefined
  let newest = Number.NEGATIVE_INFINITY
  for (const m of partitionMaxEndUs) if (m > newest) newest = m
  let wm = newest
  for (const m of partitionMaxEndUs) if (m >= newest - partitionIdleUs && m < wm) wm = m
  return wm
}

/**
 * Exclusive bound on the start of complete windows, and whether that is all
 * the run will ever have. Window [s, s+W) is complete when s + W + lateness
 * <= watermark. Once the run has ended (plus a grace for the last flushes),
 * every window but the last is complete; the last one is cut short by the
 * end, so it is never judged (nor is the first, cut short by the start: see
 * firstJudgedWindowMs).
 */
export function completeBefore(p: RunProgress, o: CompletenessOptions): { beforeMs: number; final: boolean } {
  const W = p.windowMs
  if (o.endedAtMs !== undefined && o.nowMs >= o.endedAtMs + o.endGraceMs)
    return { beforeMs: p.lastWindowMs, final: true }
  const wmUs = runWatermarkUs(p.partitionMaxEndUs, o.partitionIdleMs * 1000)
  if (wmUs === undefined) return { beforeMs: p.firstWindowMs, final: false }
  const wmMs = Math.floor(wmUs / 1000)
  return { beforeMs: Math.min(p.lastWindowMs, Math.floor((wmMs - o.allowedLatenessMs) / W) * W), final: false }
}

/** The first window a rule may judge: the one after the run's first, which holds only part of a window's time. */
export function firstJudgedWindowMs(p: RunProgress): number {
  return p.firstWindowMs + p.windowMs
}

/** Window starts in [fromMs, toMs), step windowMs: every one, with data or not. */
export function windowStarts(fromMs: number, toMs: number, windowMs: number): number[] {
  const out: number[] = []
  for (let s = fromMs; s < toMs; s += windowMs) out.push(s)
  return out
}
