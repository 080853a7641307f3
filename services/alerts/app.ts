/**
 * The alert engine: every interval it asks the window source for the newly
 * complete windows of each active run (merged over clients and partitions,
 * gaps filled with zeros), feeds them to the pure evaluator
 * (services/core/alerting/alert-rules.ts), and delivers the transitions: each one to
 * every notifier (alerts topic, webhook), then recorded in the alert store.
 *
 * One notification per state change of an incident: the evaluator fires an
 * incident once, and the engine remembers the last state of every
 * fingerprint. After a restart it replays the active runs from their start
 * (same data, same fingerprints) and suppresses every state the store has
 * already recorded, so nothing is sent twice; incidents still open in the
 * store whose run is no longer evaluated are resolved.
 *
 * Delivery is at least once: notifiers first, then the record. A record that
 * fails stays in a bounded outbox and is retried on the next tick; a
 * notifier that fails (after its own bounded retries) is counted, not
 * retried forever.
 *
 * Silences (services/core/alerting/silences.ts) are read every tick. An
 * incident that fires while a matching silence is active is marked with the
 * silence's id, and so is its resolved transition: both are recorded and
 * published on the alerts topic, but channels muted by silences (the webhook)
 * do not get them.
 */
import type { AlertState } from '../../schemas/alert-rules.v1.js'
import { AlertEvaluator } from '../core/alerting/alert-rules.js'
import type { AlertTransition, RunContext } from '../core/alerting/alert-window.js'
import {
  completeBefore,
  firstJudgedWindowMs,
  progressSinceMs,
  windowStarts,
  type RunProgress,
} from '../core/stats/window-completeness.js'
import { buildBaselineProfile, VS_BASELINE_DEFAULTS, type BaselineProfile } from '../core/alerting/baseline-profile.js'
import { silencedBy, type SilenceSpec } from '../core/alerting/silences.js'
import type {
  AlertNotifier,
  AlertRunInfo,
  AlertStore,
  AlertWindowSource,
  DeliveryResult,
  SilenceStore,
  WindowCountRow,
} from '../core/ports/alerts.js'
import type { AlertsConfig } from './config.js'

export interface AlertEngineDeps {
  source: AlertWindowSource
  store: AlertStore
  notifiers: readonly AlertNotifier[]
  /** Where silences are read from; without it nothing is silenced. */
  silences?: Pick<SilenceStore, 'current'>
  /** Wall clock, ms (tests may pass their own). */
  now?: () => number
  /** Where tick errors and failed deliveries are reported. */
  log?: (line: string) => void
  /**
   * Whether this engine may still notify (its replica leads: services/alerts/leadership.ts). Checked before each
   * notification: an engine whose replica stopped leading sends nothing more, even mid-tick; what it had not sent,
   * and so not recorded, the next leader sends. @default always
   */
  mayNotify?: () => boolean
}

export type AlertEngineConfig = Pick<
  AlertsConfig,
  'rules' | 'intervalMs' | 'completeness' | 'lookbackS' | 'maxWindowsPerQuery'
>

export interface AlertEngineStats {
  ticks: number
  tickErrors: number
  lastError: string | undefined
  windowsEvaluated: number
  /** Transitions the evaluator produced. */
  transitions: number
  /** Transitions not delivered because the store already had that state (replay after a restart). */
  suppressed: number
  /** Per channel: notifications delivered, failed (after retries), and held back by a silence. */
  notifications: Record<string, { sent: number; failed: number; silenced: number }>
  /** Transitions of silenced incidents (firing and resolved). */
  silenced: number
  /** Reads of the silences that failed (the last ones read stay in force). */
  silenceReadFailures: number
  recorded: number
  recordFailures: number
  /** Transitions dropped because the outbox was full (the store was down too long). */
  outboxDropped: number
  openIncidents: number
}

/** Transitions waiting to be recorded; beyond this the oldest are dropped and counted. */
export const MAX_OUTBOX = 1000
/** Queries per run per tick, so one long replay cannot hold up the other runs for long. */
export const MAX_CHUNKS_PER_RUN_PER_TICK = 10

interface TrackedRun {
  /** Next window start to judge; undefined until the run's first window is known. */
  cursorMs: number | undefined
  windowMs: number | undefined
  lastDataMs: number | undefined
  /** The last progress read: still true when a bounded read finds no new rows. */
  progress: RunProgress | undefined
  finalized: boolean
  /** Start of the run's first window (offsets for vs_baseline count from it). */
  firstWindowMs: number | undefined
  /** The baseline the run names, read once when it is first evaluated. */
  baseline: BaselineProfile | undefined
}

interface Pending {
  t: AlertTransition
  notified: boolean
  notifiedAtMs: number | undefined
}

export class AlertEngine {
  readonly stats: AlertEngineStats
  private readonly evaluator: AlertEvaluator
  private readonly runs = new Map<string, TrackedRun>()
  /** Latest state per fingerprint: what was delivered, or recorded before a restart. */
  private readonly known = new Map<string, AlertTransition>()
  private readonly outbox: Pending[] = []
  private openLoaded = false
  /** The silences read last: pending and active ones. */
  private silences: SilenceSpec[] = []
  private timer: NodeJS.Timeout | undefined
  private current: Promise<void> | undefined
  private running = false
  private readonly now: () => number

  constructor(
    private readonly config: AlertEngineConfig,
    private readonly deps: AlertEngineDeps,
  ) {
    this.evaluator = new AlertEvaluator(config.rules)
    this.now = deps.now ?? Date.now
    this.stats = {
      ticks: 0,
      tickErrors: 0,
      lastError: undefined,
      windowsEvaluated: 0,
      transitions: 0,
      suppressed: 0,
      notifications: Object.fromEntries(deps.notifiers.map((n) => [n.channel, { sent: 0, failed: 0, silenced: 0 }])),
      silenced: 0,
      silenceReadFailures: 0,
      recorded: 0,
      recordFailures: 0,
      outboxDropped: 0,
      openIncidents: 0,
    }
  }

  /** Evaluates every intervalMs until stop(); ticks never overlap. */
  start(): void {
    if (this.running) return
    this.running = true
    const loop = (): void => {
      if (!this.running) return
      this.current = this.tick().finally(() => {
        this.current = undefined
        if (this.running) this.timer = setTimeout(loop, this.config.intervalMs)
      })
    }
    loop()
  }

  async stop(): Promise<void> {
    this.running = false
    if (this.timer !== undefined) clearTimeout(this.timer)
    await this.current
  }

  /** Where the engine stands with one run (tests and the status page). */
  runStatus(runId: string): { cursorMs: number | undefined; finalized: boolean } | undefined {
    const r = this.runs.get(runId)
    return r === undefined ? undefined : { cursorMs: r.cursorMs, finalized: r.finalized }
  }

  /** One evaluation round. Errors are counted and reported, never thrown (the next tick retries). */
  async tick(): Promise<void> {
    this.stats.ticks++
    if (this.deps.silences !== undefined) {
      try {
        this.silences = await this.deps.silences.current(this.now())
      } catch (err) {
        this.stats.silenceReadFailures++
        this.deps.log?.(`alerts: reading silences failed, the last ones read stay in force: ${(err as Error).message}`)
      }
    }
    try {
      await this.evaluate()
    } catch (err) {
      this.stats.tickErrors++
      this.stats.lastError = (err as Error).message
      this.deps.log?.(`alerts: evaluation failed: ${(err as Error).message}`)
    }
    try {
      await this.drainOutbox()
    } catch (err) {
      this.stats.tickErrors++
      this.stats.lastError = (err as Error).message
    }
    let open = 0
    for (const t of this.known.values()) if (t.state === 'firing') open++
    this.stats.openIncidents = open
  }

  private async evaluate(): Promise<void> {
    const now = this.now()
    if (!this.openLoaded) {
      for (const t of await this.deps.store.loadOpen()) this.remember(t)
      this.openLoaded = true
    }
    const infos = await this.deps.source.runs(now - this.config.lookbackS * 1000)
    const fresh = infos.filter((r) => !this.runs.has(r.runId)).map((r) => r.runId)
    if (fresh.length > 0) {
      // What a previous instance already recorded for these runs: the replay must not send it again.
      for (const t of await this.deps.store.loadRuns(fresh)) this.remember(t)
      for (const id of fresh)
        this.runs.set(id, {
          cursorMs: undefined,
          windowMs: undefined,
          lastDataMs: undefined,
          progress: undefined,
          finalized: false,
          firstWindowMs: undefined,
          baseline: undefined,
        })
    }
    const active = new Set(infos.map((r) => r.runId))
    for (const info of infos) {
      const r = this.runs.get(info.runId)!
      if (!r.finalized) await this.evaluateRun(info, r, now)
    }
    // Open incidents of runs that left the lookback (or were never seen by this instance): close them.
    // A snapshot: enqueue() updates the map.
    for (const t of Array.from(this.known.values())) {
      if (t.state !== 'firing' || active.has(t.runId)) continue
      this.enqueue({
        ...t,
        state: 'resolved',
        endsAtMs: now,
        atWindowMs: now,
        summary: `${t.summary} (resolved: the run is no longer evaluated, it is outside ALERTS_LOOKBACK_S)`,
      })
    }
    for (const [id, r] of this.runs) {
      if (r.finalized && !active.has(id)) {
        this.runs.delete(id)
        for (const [fp, t] of this.known) if (t.runId === id && t.state === 'resolved') this.known.delete(fp)
      }
    }
  }

  private async evaluateRun(info: AlertRunInfo, r: TrackedRun, now: number): Promise<void> {
    const ctx: RunContext = { runId: info.runId, targetOpsPerSec: info.targetOpsPerSec }
    const W = r.windowMs ?? 0
    const since = progressSinceMs(r.cursorMs, W, this.config.completeness)
    const p = (await this.deps.source.progress(info.runId, since)) ?? r.progress
    if (p !== undefined) {
      r.progress = p
      r.windowMs = p.windowMs
      r.firstWindowMs ??= p.firstWindowMs
      if (info.baseline !== undefined && this.hasBaselineRules) {
        r.baseline ??= await this.loadBaseline(info.runId, info.baseline)
        ctx.baseline = { profile: r.baseline, firstWindowMs: r.firstWindowMs }
      }
      r.lastDataMs = Math.max(r.lastDataMs ?? 0, p.lastDataMs)
      r.cursorMs ??= firstJudgedWindowMs(p)
      const bound = completeBefore(p, { ...this.config.completeness, nowMs: now, endedAtMs: info.endedAtMs })
      for (let chunk = 0; chunk < MAX_CHUNKS_PER_RUN_PER_TICK && r.cursorMs < bound.beforeMs; chunk++) {
        const from = r.cursorMs
        const to = Math.min(bound.beforeMs, from + this.config.maxWindowsPerQuery * p.windowMs)
        const rows = await this.deps.source.windows(info.runId, from, to)
        const byStart = new Map<number, WindowCountRow[]>()
        for (const row of rows) {
          const list = byStart.get(row.startMs)
          if (list === undefined) byStart.set(row.startMs, [row])
          else list.push(row)
        }
        // Every window start, so a stall inside the run counts as zero throughput.
        for (const s of windowStarts(from, to, p.windowMs)) {
          for (const t of this.evaluator.observeWindow(ctx, {
            startMs: s,
            windowMs: p.windowMs,
            ops: byStart.get(s) ?? [],
          }))
            this.enqueue(t)
          this.stats.windowsEvaluated++
        }
        r.cursorMs = to
      }
      if (bound.final && r.cursorMs >= bound.beforeMs) return this.finalize(info, r)
    } else if (
      info.endedAtMs !== undefined &&
      now >= info.endedAtMs + this.config.completeness.endGraceMs &&
      r.cursorMs === undefined
    ) {
      return this.finalize(info, r)
    }
    if (info.endedAtMs === undefined) {
      for (const t of this.evaluator.observeActivity(ctx, now, r.lastDataMs ?? info.startedAtMs)) this.enqueue(t)
    }
  }

  private get hasBaselineRules(): boolean {
    return this.config.rules.some((x) => x.type === 'vs_baseline')
  }

  /** The baseline a run names, as a profile; a baseline without data is said once and judges nothing. */
  private async loadBaseline(runId: string, ref: string): Promise<BaselineProfile> {
    const minOps = Math.min(
      ...this.config.rules.map((x) =>
        x.type === 'vs_baseline' ? (x.minOps ?? VS_BASELINE_DEFAULTS.minOps) : Number.POSITIVE_INFINITY,
      ),
    )
    const profile = buildBaselineProfile(ref, await this.deps.source.baselineWindows(ref), minOps)
    if (profile.ops.size === 0)
      this.deps.log?.(`alerts: run ${runId} names baseline ${ref}, which has no windows: it is not compared with it`)
    return profile
  }

  private finalize(info: AlertRunInfo, r: TrackedRun): void {
    const endedAt = info.endedAtMs ?? this.now()
    for (const t of this.evaluator.endRun(info.runId, endedAt)) this.enqueue(t)
    // Incidents recorded before a restart that the replay did not reproduce end with the run too.
    // A snapshot: enqueue() updates the map.
    for (const t of Array.from(this.known.values())) {
      if (t.runId === info.runId && t.state === 'firing')
        this.enqueue({
          ...t,
          state: 'resolved',
          endsAtMs: Math.max(endedAt, t.startsAtMs),
          atWindowMs: endedAt,
          summary: `${t.summary} (resolved: the run ended)`,
        })
    }
    r.finalized = true
  }

  private remember(t: AlertTransition): void {
    const prev = this.known.get(t.fingerprint)
    // resolved is final for a fingerprint: a later incident gets a new one.
    if (prev === undefined || rank(t.state) >= rank(prev.state)) this.known.set(t.fingerprint, t)
  }

  private enqueue(transition: AlertTransition): void {
    this.stats.transitions++
    const prev = this.known.get(transition.fingerprint)
    if (prev !== undefined && rank(prev.state) >= rank(transition.state)) {
      this.stats.suppressed++
      return
    }
    // Silenced as a whole, decided when it fires: a resolved transition follows its firing one.
    const silence =
      transition.state === 'resolved' && prev !== undefined
        ? prev.silencedBy
        : silencedBy(transition, this.silences, this.now())
    const t: AlertTransition = { ...transition, silencedBy: silence }
    if (silence !== undefined) this.stats.silenced++
    this.known.set(t.fingerprint, t)
    if (this.outbox.length >= MAX_OUTBOX) {
      this.outbox.shift()
      this.stats.outboxDropped++
    }
    this.outbox.push({ t, notified: false, notifiedAtMs: undefined })
  }

  private async drainOutbox(): Promise<void> {
    while (this.outbox.length > 0) {
      const p = this.outbox[0]!
      if (!p.notified) {
        if (this.deps.mayNotify?.() === false) return
        for (const n of this.deps.notifiers) {
          const c =
            this.stats.notifications[n.channel] ??
            (this.stats.notifications[n.channel] = { sent: 0, failed: 0, silenced: 0 })
          if (p.t.silencedBy !== undefined && n.mutedBySilences) {
            c.silenced++
            continue
          }
          let r: DeliveryResult
          try {
            r = await n.notify(p.t)
          } catch (err) {
            r = { ok: false, error: (err as Error).message }
          }
          if (r.ok) {
            c.sent++
            p.notifiedAtMs ??= this.now()
          } else {
            c.failed++
            this.deps.log?.(
              `alerts: ${n.channel} notification of ${p.t.state} ${p.t.rule} (run ${p.t.runId}, ${p.t.op}) ` +
                `failed: ${r.error}`,
            )
          }
        }
        p.notified = true
      }
      try {
        await this.deps.store.record(p.t, p.notifiedAtMs)
        this.stats.recorded++
      } catch (err) {
        // Keep order: later transitions wait behind this one until the store is back.
        this.stats.recordFailures++
        this.stats.lastError = (err as Error).message
        this.deps.log?.(
          `alerts: recording ${p.t.state} ${p.t.rule} (run ${p.t.runId}) ` +
            `failed, retrying next tick: ${(err as Error).message}`,
        )
        return
      }
      this.outbox.shift()
    }
  }
}

function rank(s: AlertState): number {
  return s === 'firing' ? 1 : 2
}

export function build(config: AlertEngineConfig, deps: AlertEngineDeps): AlertEngine {
  return new AlertEngine(config, deps)
}
