/**
 * The summary and description of each alert transition, per rule type: what
 * a person reads in the notification.
 */

import type { NoDataRule, VsBaselineRule } from '../../../schemas/alert-rules.v1.js'
import { RULE_DEFAULTS, type RunContext, type WindowRule } from './alert-window.js'
import type { BaselineJudgement } from './baseline-profile.js'

const rate = (v: number): string => (v >= 100 ? Math.round(v).toLocaleString('en-US') : v.toFixed(1))
const pct = (f: number): string => `${(f * 100).toFixed(f < 0.01 ? 2 : 1)}%`

export function windowText(
  rule: WindowRule,
  run: RunContext,
  op: string,
  value: number,
  threshold: number,
  windowMs: number,
  base: number | undefined,
): { summary: string; description: string } {
  const span = `${rule.windows} consecutive complete ${windowMs} ms window${rule.windows === 1 ? '' : 's'}`
  switch (rule.type) {
    case 'below_target':
      return {
        summary:
          `Run ${run.runId} throughput ${rate(value)} ops/s is below ${pct(rule.fraction)} of its target ` +
          `${rate(run.targetOpsPerSec)} ops/s`,
        description: `Total throughput over all operations stayed under ${rate(threshold)} ops/s for ${span}.`,
      }
    case 'drop_vs_baseline': {
      const b = base ?? 0
      return {
        summary:
          `${op} throughput of run ${run.runId} dropped to ${rate(value)} ` +
          `ops/s, ${Math.round((1 - value / b) * 100)}% ` +
          `below its baseline of ${rate(b)} ops/s`,
        description:
          `${op} stayed under ${rate(threshold)} ops/s (${rule.percent}% ` +
          `below the ${rule.baseline ?? RULE_DEFAULTS.baseline} ` +
          `of the previous ${rule.baselineWindows} good windows) for ${span}.`,
      }
    }
    case 'error_rate':
      return {
        summary: `${op} error rate of run ${run.runId} is ${pct(value)}, above ${pct(threshold)}`,
        description: `errors / operations of ${op} stayed above ${pct(threshold)} for ${span}.`,
      }
    case 'vs_baseline':
      return { summary: `${op} of run ${run.runId} is beyond its baseline`, description: `for ${span}.` }
  }
}

/** What a vs_baseline window says: the figure that decided, and the others judged beside it. */
export function baselineText(
  rule: VsBaselineRule,
  run: RunContext,
  op: string,
  j: BaselineJudgement,
  all: readonly BaselineJudgement[],
  ref: string,
  windowMs: number,
): { summary: string; description: string } {
  const fig = (x: BaselineJudgement): string =>
    x.figure === 'throughput'
      ? `throughput ${rate(x.value)} ops/s vs ${rate(x.expected)}`
      : `${x.figure} ${Math.round(x.value)} µs vs ${Math.round(x.expected)} µs`
  const what =
    j.figure === 'throughput'
      ? `${Math.round((1 - j.value / j.expected) * 100)}% below`
      : `${(j.value / j.expected).toFixed(1)}x`
  return {
    summary:
      `${op} of run ${run.runId} is slower than baseline ${ref} at the same second: ${j.figure} ${what} ` +
      `the baseline's (${fig(j)})`,
    description:
      `${all.map(fig).join('; ')} at the same offset from the start; beyond the baseline's window-to-window ` +
      `noise (sigma ${j.figure === 'throughput' ? `${rate(j.sigma)} ops/s` : `${Math.round(j.sigma)} µs`}, ` +
      `bar ${rule.sigmas ?? 4} sigma and ${rule.minPercent ?? 10}%) for ${rule.windows} consecutive ` +
      `complete ${windowMs} ms window${rule.windows === 1 ? '' : 's'}.`,
  }
}

export function recoveredText(rule: WindowRule, run: RunContext, op: string, value: number, threshold: number): string {
  switch (rule.type) {
    case 'below_target':
      return `Run ${run.runId} throughput is back to ${rate(value)} ops/s (alert threshold ${rate(threshold)} ops/s)`
    case 'drop_vs_baseline':
      return (
        `${op} throughput of run ${run.runId} recovered to ${rate(value)} ` +
        `ops/s (alert threshold ${rate(threshold)} ops/s)`
      )
    case 'error_rate':
      return `${op} error rate of run ${run.runId} is back to ${pct(value)} (threshold ${pct(threshold)})`
    case 'vs_baseline':
      return `${op} of run ${run.runId} is back within its baseline's noise (${rate(value)}, bar ${rate(threshold)})`
  }
}

export function noDataText(
  rule: NoDataRule,
  run: RunContext,
  lastDataMs: number,
): { summary: string; description: string } {
  return {
    summary: `Run ${run.runId} has produced no operations for ${rule.seconds} s`,
    description:
      `The run has started and not ended, but its newest operation ended ` +
      `at ${new Date(lastDataMs).toISOString()}.`,
  }
}
