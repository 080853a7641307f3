/**
 * Alert rule evaluation, pure: complete windows in (merged over clients and
 * partitions), `firing`/`resolved` transitions per (rule, run, op) out. No
 * clock, database or socket, so a restarted service replays a run without
 * notifying twice. Why and how: docs/design/alerting.md.
 */
import { createHash } from 'node:crypto'
import {
  ALL_OPS,
  type AlertRule,
  type BaselineMethod,
  type DropVsBaselineRule,
} from '../../../schemas/alert-rules.v1.js'
import { baselineText, noDataText, recoveredText, windowText } from './alert-texts.js'
import {
  RULE_DEFAULTS,
  type AlertTransition,
  type CompleteWindow,
  type RunContext,
  type WindowOpCount,
  type WindowRule,
} from './alert-window.js'
import { judgeWindow, worstJudgement } from './baseline-profile.js'

interface Streak {
  bad: number
  good: number
  badSinceMs: number
  goodSinceMs: number
  /** The firing transition while an incident is open. */
  open: AlertTransition | undefined
}

interface Series {
  streak: Streak
  /** Windows seen by this series (for warm-up). */
  seen: number
  /** drop_vs_baseline: rates of the last good windows, oldest first. */
  baseline: number[]
}

interface NoDataState {
  open: AlertTransition | undefined
  /** lastDataMs the open incident was computed from. */
  lastDataMs: number
}

interface RunState {
  /** Operations this run has produced, in order of appearance; they count as 0 in windows without them. */
  ops: Set<string>
  series: Map<string, Series>
  noData: Map<string, NoDataState>
  lastWindowMs: number
}

export class AlertEvaluator {
  private readonly runs = new Map<string, RunState>()

  constructor(readonly rules: readonly AlertRule[]) {}

  /**
   * Feeds the next complete window of a run. Windows of one run must come in
   * increasing order without gaps (a window with no operations is passed with
   * `ops: []`, and counts as zero throughput).
   */
  observeWindow(run: RunContext, w: CompleteWindow): AlertTransition[] {
    const st = this.state(run.runId)
    if (w.startMs <= st.lastWindowMs)
      throw new Error(
        `window ${w.startMs} of run ${run.runId} is not after the previous one (${st.lastWindowMs}): ` +
          `windows must be fed in order, once`,
      )
    st.lastWindowMs = w.startMs
    const counts = new Map<string, WindowOpCount>()
    for (const op of st.ops) counts.set(op, { op, count: 0, errors: 0 })
    for (const c of w.ops) {
      st.ops.add(c.op)
      const prev = counts.get(c.op)
      counts.set(c.op, {
        op: c.op,
        count: (prev?.count ?? 0) + c.count,
        errors: (prev?.errors ?? 0) + c.errors,
        p50Us: c.p50Us ?? prev?.p50Us ?? null,
        p99Us: c.p99Us ?? prev?.p99Us ?? null,
      })
    }
    const seconds = w.windowMs / 1000
    const out: AlertTransition[] = []
    for (const rule of this.rules) {
      switch (rule.type) {
        case 'below_target': {
          if (!(run.targetOpsPerSec > 0)) break
          let total = 0
          for (const c of counts.values()) total += c.count
          const s = this.series(st, rule.name, ALL_OPS)
          s.seen++
          if (s.seen <= (rule.warmupWindows ?? RULE_DEFAULTS.warmupWindows)) break
          const value = total / seconds
          const threshold = rule.fraction * run.targetOpsPerSec
          this.push(out, this.step(rule, run, ALL_OPS, s, value < threshold, w, value, threshold))
          break
        }
        case 'drop_vs_baseline':
          for (const c of counts.values()) {
            if (rule.ops !== undefined && !(rule.ops as readonly string[]).includes(c.op)) continue
            this.push(out, this.dropStep(rule, run, st, c, w, seconds))
          }
          break
        case 'error_rate':
          for (const c of counts.values()) {
            if (rule.ops !== undefined && !(rule.ops as readonly string[]).includes(c.op)) continue
            const s = this.series(st, rule.name, c.op)
            s.seen++
            if (s.seen <= (rule.warmupWindows ?? RULE_DEFAULTS.warmupWindows)) continue
            // Too few operations to call it a rate: neither good nor bad.
            if (c.count < (rule.minOps ?? RULE_DEFAULTS.minOps)) continue
            const value = c.errors / c.count
            this.push(out, this.step(rule, run, c.op, s, value > rule.threshold, w, value, rule.threshold))
          }
          break
        case 'vs_baseline': {
          const b = run.baseline
          if (b === undefined) break
          const offset = Math.round((w.startMs - b.firstWindowMs) / w.windowMs)
          for (const c of counts.values()) {
            if (rule.ops !== undefined && !(rule.ops as readonly string[]).includes(c.op)) continue
            const s = this.series(st, rule.name, c.op)
            s.seen++
            if (s.seen <= (rule.warmupWindows ?? RULE_DEFAULTS.warmupWindows)) continue
            const judged = judgeWindow(b.profile, rule, c.op, offset, {
              count: c.count,
              windowMs: w.windowMs,
              p50Us: c.p50Us ?? null,
              p99Us: c.p99Us ?? null,
            })
            // Nothing to compare with at this offset (the baseline was shorter, or too quiet): neither good nor bad.
            if (judged.length === 0) continue
            // The worst figure speaks for the window: of the bad ones, the furthest beyond its bar
            // (slow scans also lower SCAN's throughput a little, but a p99 50x the baseline's is the
            // news); when none is bad, the first judged.
            const j = worstJudgement(judged)
            this.push(
              out,
              this.step(
                rule,
                run,
                c.op,
                s,
                j.bad,
                w,
                j.value,
                j.threshold,
                j.expected,
                baselineText(rule, run, c.op, j, judged, b.profile.ref, w.windowMs),
              ),
            )
          }
          break
        }
        case 'no_data':
          break
      }
    }
    return out
  }

  /**
   * no_data rules for a run that has not ended: `lastDataMs` is when its
   * newest operation ended (or when the run started, before any).
   */
  observeActivity(run: RunContext, nowMs: number, lastDataMs: number): AlertTransition[] {
    const st = this.state(run.runId)
    const out: AlertTransition[] = []
    for (const rule of this.rules) {
      if (rule.type !== 'no_data') continue
      let nd = st.noData.get(rule.name)
      if (nd === undefined) {
        nd = { open: undefined, lastDataMs }
        st.noData.set(rule.name, nd)
      }
      const silentS = Math.max(0, (nowMs - lastDataMs) / 1000)
      if (nd.open !== undefined) {
        if (lastDataMs > nd.lastDataMs) {
          out.push(this.resolve(nd.open, lastDataMs, nowMs, silentS, `Run ${run.runId} is sending operations again`))
          nd.open = undefined
        }
      } else if (silentS >= rule.seconds) {
        const t = this.fire(
          rule,
          run,
          ALL_OPS,
          lastDataMs + rule.seconds * 1000,
          nowMs,
          silentS,
          rule.seconds,
          noDataText(rule, run, lastDataMs),
        )
        nd.open = t
        nd.lastDataMs = lastDataMs
        out.push(t)
      }
    }
    return out
  }

  /** The run has ended and all its windows were fed: resolves what is still open and forgets the run. */
  endRun(runId: string, endedAtMs: number): AlertTransition[] {
    const st = this.runs.get(runId)
    if (st === undefined) return []
    const out: AlertTransition[] = []
    const open = [...[...st.series.values()].map((s) => s.streak.open), ...[...st.noData.values()].map((n) => n.open)]
    for (const t of open) {
      if (t === undefined) continue
      out.push(
        this.resolve(
          t,
          Math.max(endedAtMs, t.startsAtMs),
          Math.max(endedAtMs, t.atWindowMs),
          t.value,
          `${t.summary} (resolved: the run ended)`,
        ),
      )
    }
    this.runs.delete(runId)
    return out
  }

  /** Incidents firing now. */
  openIncidents(): AlertTransition[] {
    const out: AlertTransition[] = []
    for (const st of this.runs.values()) {
      for (const s of st.series.values()) if (s.streak.open !== undefined) out.push(s.streak.open)
      for (const n of st.noData.values()) if (n.open !== undefined) out.push(n.open)
    }
    return out
  }

  private dropStep(
    rule: DropVsBaselineRule,
    run: RunContext,
    st: RunState,
    c: WindowOpCount,
    w: CompleteWindow,
    seconds: number,
  ): AlertTransition | undefined {
    const s = this.series(st, rule.name, c.op)
    s.seen++
    if (s.seen <= (rule.warmupWindows ?? RULE_DEFAULTS.warmupWindows)) return undefined
    const value = c.count / seconds
    if (s.baseline.length < rule.baselineWindows) {
      s.baseline.push(value)
      return undefined
    }
    const base = baselineOf(s.baseline, rule.baseline ?? RULE_DEFAULTS.baseline)
    const threshold = base * (1 - rule.percent / 100)
    // A sparse operation's rate is mostly noise: judge it only above the floor.
    const bad = base >= (rule.minBaselineOpsPerSec ?? RULE_DEFAULTS.minBaselineOpsPerSec) && value < threshold
    // Only ordinary windows enter the baseline: not a drop (a long one would become the norm), nothing while an
    // incident is open, and no burst above base / (1 - percent): a throttled run catching up after a stall runs
    // faster for a while, and a baseline that took that in would call the run's normal rate a drop afterwards.
    if (!bad && s.streak.open === undefined && value * (1 - rule.percent / 100) <= base) {
      s.baseline.push(value)
      if (s.baseline.length > rule.baselineWindows) s.baseline.shift()
    }
    return this.step(rule, run, c.op, s, bad, w, value, threshold, base)
  }

  private step(
    rule: WindowRule,
    run: RunContext,
    op: string,
    s: Series,
    bad: boolean,
    w: CompleteWindow,
    value: number,
    threshold: number,
    base?: number,
    text?: { summary: string; description: string },
  ): AlertTransition | undefined {
    const k = s.streak
    if (bad) {
      if (k.bad === 0) k.badSinceMs = w.startMs
      k.bad++
      k.good = 0
      if (k.open === undefined && k.bad >= rule.windows) {
        k.open = this.fire(
          rule,
          run,
          op,
          k.badSinceMs,
          w.startMs,
          value,
          threshold,
          text ?? windowText(rule, run, op, value, threshold, w.windowMs, base),
        )
        return k.open
      }
      return undefined
    }
    if (k.good === 0) k.goodSinceMs = w.startMs
    k.good++
    k.bad = 0
    if (k.open !== undefined && k.good >= (rule.resolveWindows ?? rule.windows)) {
      const t = this.resolve(k.open, k.goodSinceMs, w.startMs, value, recoveredText(rule, run, op, value, threshold))
      k.open = undefined
      return t
    }
    return undefined
  }

  private fire(
    rule: AlertRule,
    run: RunContext,
    op: string,
    startsAtMs: number,
    atWindowMs: number,
    value: number,
    threshold: number,
    text: { summary: string; description: string },
  ): AlertTransition {
    return {
      state: 'firing',
      rule: rule.name,
      ruleType: rule.type,
      severity: rule.severity,
      runId: run.runId,
      op,
      fingerprint: alertFingerprint(rule.name, run.runId, op, startsAtMs),
      startsAtMs,
      endsAtMs: undefined,
      atWindowMs,
      value,
      threshold,
      summary: text.summary,
      description: rule.description === undefined ? text.description : `${text.description} ${rule.description}`,
    }
  }

  private resolve(
    open: AlertTransition,
    endsAtMs: number,
    atWindowMs: number,
    value: number,
    summary: string,
  ): AlertTransition {
    return { ...open, state: 'resolved', endsAtMs, atWindowMs, value, summary }
  }

  private push(out: AlertTransition[], t: AlertTransition | undefined): void {
    if (t !== undefined) out.push(t)
  }

  private state(runId: string): RunState {
    let st = this.runs.get(runId)
    if (st === undefined) {
      st = { ops: new Set(), series: new Map(), noData: new Map(), lastWindowMs: Number.NEGATIVE_INFINITY }
      this.runs.set(runId, st)
    }
    return st
  }

  private series(st: RunState, rule: string, op: string): Series {
    const key = `${rule}\u0000${op}`
    let s = st.series.get(key)
    if (s === undefined) {
      s = { streak: { bad: 0, good: 0, badSinceMs: 0, goodSinceMs: 0, open: undefined }, seen: 0, baseline: [] }
      st.series.set(key, s)
    }
    return s
  }
}

/** One incident's identity: the rule, the run, the operation and when it began. 16 hex digits, like Alertmanager's. */
export function alertFingerprint(rule: string, runId: string, op: string, startsAtMs: number): string {
  return createHash('sha256').update(`${rule}\u0000${runId}\u0000${op}\u0000${startsAtMs}`).digest('hex').slice(0, 16)
}

export function baselineOf(values: readonly number[], method: BaselineMethod): number {
  if (values.length === 0) return 0
  if (method === 'mean') return values.reduce((a, b) => a + b, 0) / values.length
  const s = [...values].sort((a, b) => a - b)
  const mid = s.length >> 1
  return s.length % 2 === 1 ? s[mid]! : (s[mid - 1]! + s[mid]!) / 2
}
