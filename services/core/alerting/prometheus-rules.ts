/**
 * The alert rules file (deploy/alerts/rules.json) as Prometheus alerting rules
 * over the server's /metrics (benchstream_operations_total,
 * benchstream_run_target_ops_per_second, benchstream_run_clients_active). One
 * "window" is one evaluation interval (15 s by default); every count of a rule
 * is kept. How they map: docs/design/alerting.md#prometheus-rules-prometheus-rulests.
 */
import type {
  AlertRule,
  DropVsBaselineRule,
  ErrorRateRule,
  BelowTargetRule,
  NoDataRule,
} from '../../../schemas/alert-rules.v1.js'
import { RULE_DEFAULTS } from './alert-window.js'

export interface PrometheusRulesOptions {
  /** Prometheus' evaluation (and scrape) interval in seconds: the length of one window. @default 15 */
  intervalS: number
  /** Where the rules came from, named in the file's header. */
  source: string
}

const RATE = 'run_op:benchstream_operations:rate'
const ERRORS = 'run_op:benchstream_errors:rate'
const RUN_RATE = 'run:benchstream_operations:rate'

/** The rules as a Prometheus rule file (YAML), deterministic for the same input. */
export function prometheusRules(rules: readonly AlertRule[], opts: PrometheusRulesOptions): string {
  const S = opts.intervalS
  const d = (windows: number): string => duration(windows * S)
  const lines: string[] = [
    `# GENERATED from ${opts.source} by \`npm run generate\`: do not edit; edit the rules file.`,
    "# Prometheus alerting rules equal to Benchstream's built-in alert evaluator",
    `# (services/core/alerting/prometheus-rules.ts says how they map): one window`,
    `# here is one evaluation interval of ${S} s. Test: promtool test ` +
      `rules deploy/prometheus/benchstream-rules.test.yml`,
    'groups:',
    '  - name: benchstream-recording',
    `    interval: ${duration(S)}`,
    '    rules:',
    '      # Throughput per run and operation, all statuses and server instances together.',
    `      - record: ${RATE}`,
    `        expr: sum by (run_id, op) (rate(benchstream_operations_total[${d(2)}]))`,
    '      # Failed operations per run and operation.',
    `      - record: ${ERRORS}`,
    `        expr: sum by (run_id, op) (rate(benchstream_operations_total{status!="OK"}[${d(2)}]))`,
    '      # Throughput per run, all operations together.',
    `      - record: ${RUN_RATE}`,
    `        expr: sum by (run_id) (${RATE})`,
    '  - name: benchstream-alerts',
    `    interval: ${duration(S)}`,
    '    rules:',
  ]
  for (const rule of rules) {
    const alert = ruleLines(rule, S)
    if (alert === undefined) {
      lines.push(
        `      # ${rule.name} (${rule.type}): compares a run with its baseline run, which Prometheus ` +
          `does not have; the built-in evaluator only.`,
      )
      continue
    }
    lines.push(`      - alert: ${rule.name}`, '        expr: |', ...alert.expr.map((l) => `          ${l}`))
    if (alert.for > 0) lines.push(`        for: ${duration(alert.for)}`)
    if (alert.keepFiringFor > 0) lines.push(`        keep_firing_for: ${duration(alert.keepFiringFor)}`)
    lines.push(
      '        labels:',
      `          severity: ${rule.severity}`,
      `          rule_type: ${rule.type}`,
      '        annotations:',
      `          summary: ${quote(alert.summary)}`,
      `          description: ${quote(rule.description ?? alert.description)}`,
    )
  }
  return lines.join('\n') + '\n'
}

interface AlertLines {
  expr: string[]
  /** Seconds the condition must hold before firing: the rule's windows, the first included. */
  for: number
  /** Seconds a firing alert stays after the condition clears: the rule's resolveWindows. */
  keepFiringFor: number
  summary: string
  description: string
}

/** The rule in PromQL; undefined for a rule Prometheus cannot evaluate (vs_baseline). */
function ruleLines(rule: AlertRule, S: number): AlertLines | undefined {
  switch (rule.type) {
    case 'drop_vs_baseline':
      return drop(rule, S)
    case 'error_rate':
      return errorRate(rule, S)
    case 'below_target':
      return belowTarget(rule, S)
    case 'no_data':
      return noData(rule, S)
    case 'vs_baseline':
      return undefined
  }
}

/** `for` and `keep_firing_for` of a rule fired after `windows` and resolved after `resolveWindows` windows. */
function timing(
  windows: number,
  resolveWindows: number | undefined,
  S: number,
): { for: number; keepFiringFor: number } {
  // The first breaching evaluation counts as one window, so `for` covers the others.
  return { for: (windows - 1) * S, keepFiringFor: ((resolveWindows ?? windows) - 1) * S }
}

/** The series has existed for the warm-up and the windows the rule needs before it may be judged. */
function warmedUp(series: string, windows: number, S: number): string {
  return `count_over_time(${series}[${duration(windows * S)}]) >= ${windows}`
}

function opsMatcher(ops: readonly string[] | undefined): string {
  return ops === undefined ? '' : `{op=~"${ops.map((o) => o.replace(/[^A-Z-]/g, '')).join('|')}"}`
}

function drop(rule: DropVsBaselineRule, S: number): AlertLines {
  const series = `${RATE}${opsMatcher(rule.ops)}`
  const method = rule.baseline ?? 'median'
  // The baseline ends where the breach may begin, so a drop in progress does not pull it down.
  const range = `${series}[${duration(rule.baselineWindows * S)}] offset ${duration(rule.windows * S)}`
  const baseline = method === 'median' ? `quantile_over_time(0.5, ${range})` : `avg_over_time(${range})`
  const factor = round(1 - rule.percent / 100)
  const warm = (rule.warmupWindows ?? RULE_DEFAULTS.warmupWindows) + rule.baselineWindows + rule.windows
  return {
    expr: [
      `${series} < ${factor} * ${baseline}`,
      `and ${series} > 0`,
      `and ${baseline} >= ${rule.minBaselineOpsPerSec ?? RULE_DEFAULTS.minBaselineOpsPerSec}`,
      `and ${warmedUp(series, warm, S)}`,
    ],
    ...timing(rule.windows, rule.resolveWindows, S),
    summary: `{{ $labels.op }} throughput of run {{ $labels.run_id }} dropped to {{ $value | printf "%.0f" }} ops/s`,
    description:
      `{{ $labels.op }} of run {{ $labels.run_id }} has run more than ${rule.percent}% below the ${method} ` +
      `of its ${rule.baselineWindows} previous windows for ${rule.windows} windows of ${S} s.`,
  }
}

function errorRate(rule: ErrorRateRule, S: number): AlertLines {
  const m = opsMatcher(rule.ops)
  const warm = (rule.warmupWindows ?? RULE_DEFAULTS.warmupWindows) + rule.windows
  return {
    expr: [
      `${ERRORS}${m} / ${RATE}${m} > ${rule.threshold}`,
      // Too few operations in a window to call it a rate (minOps per window).
      `and ${RATE}${m} * ${S} >= ${rule.minOps ?? RULE_DEFAULTS.minOps}`,
      `and ${warmedUp(`${RATE}${m}`, warm, S)}`,
    ],
    ...timing(rule.windows, rule.resolveWindows, S),
    summary: `{{ $labels.op }} of run {{ $labels.run_id }} fails {{ $value | humanizePercentage }} of its operations`,
    description:
      `More than ${round(rule.threshold * 100)}% of the {{ $labels.op }} operations of run {{ $labels.run_id ` +
      `}} failed for ${rule.windows} windows of ${S} s.`,
  }
}

function belowTarget(rule: BelowTargetRule, S: number): AlertLines {
  const target = 'sum by (run_id) (benchstream_run_target_ops_per_second)'
  const warm = (rule.warmupWindows ?? RULE_DEFAULTS.warmupWindows) + rule.windows
  return {
    expr: [`${RUN_RATE} < ${rule.fraction} * ${target}`, `and ${target} > 0`, `and ${warmedUp(RUN_RATE, warm, S)}`],
    ...timing(rule.windows, rule.resolveWindows, S),
    summary: 'run {{ $labels.run_id }} runs below its target: {{ $value | printf "%.0f" }} ops/s',
    description:
      `Run {{ $labels.run_id }} has stayed under ${round(rule.fraction * 100)}% of its target throughput ` +
      `for ${rule.windows} windows of ${S} s.`,
  }
}

function noData(rule: NoDataRule, S: number): AlertLines {
  // A counter needs two samples to show an increase: the silence is seen 2S
  // after the last operation, and `for` waits out the rest of the seconds.
  return {
    // A started, unfinished run whose operation counters have not risen.
    expr: [
      'sum by (run_id) (benchstream_run_clients_active) > 0',
      `unless on (run_id) sum by (run_id) (increase(benchstream_operations_total[${duration(2 * S)}])) > 0`,
    ],
    for: Math.max(0, rule.seconds - 2 * S),
    keepFiringFor: 0,
    summary: 'run {{ $labels.run_id }} has sent no operations',
    description: `Run {{ $labels.run_id }} started, has not ended, and produced no operation for ${rule.seconds} s.`,
  }
}

/** Seconds as a Prometheus duration (`90s`, `2m`, `1h`). */
function duration(s: number): string {
  if (s % 3600 === 0 && s > 0) return `${s / 3600}h`
  if (s % 60 === 0 && s > 0) return `${s / 60}m`
  return `${s}s`
}

function round(x: number): number {
  return Math.round(x * 1e9) / 1e9
}

/** A YAML single-quoted scalar. */
function quote(s: string): string {
  return `'${s.replaceAll("'", "''")}'`
}
