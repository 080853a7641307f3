/**
 * A stored run's report as text ends with its alerts, one `[ALERT]` line
 * each, oldest first, shaped like every YCSB record, and a YCSB report
 * reader (Benchstream's own, which reads real YCSB 0.17.0 output) reads the
 * same figures with and without them: one more section it does not know.
 */
import assert from 'node:assert/strict'
import { test } from 'node:test'
import type { Alert } from '../../schemas/alerts-api.v1.js'
import type { RunReport } from '../../schemas/run-reports-api.v1.js'
import { formatRunReport } from '../../services/core/reports/run-report-text.js'
import { buildReport } from '../../services/core/reports/ycsb-report.js'
import { Histogram } from '../../services/core/stats/histogram.js'
import { parseTextReport } from '../../services/core/ycsb/text-report.js'

const h = new Histogram()
for (let v = 1; v <= 100; v++) h.record(v * 10)
const base = buildReport(
  [{ op: 'READ', status: 'OK', count: 100, sumUs: 50_500, minUs: 10, maxUs: 1000, hist: h.entries() }],
  2000,
)

function alert(over: Partial<Alert>): Alert {
  return {
    fingerprint: '0123456789abcdef',
    rule: 'BenchstreamThroughputDrop',
    ruleType: 'drop_vs_baseline',
    severity: 'warning',
    runId: 'r1',
    op: 'READ',
    state: 'resolved',
    startsAt: '2026-01-10T12:00:08.000Z',
    endsAt: '2026-01-10T12:00:12.000Z',
    value: 49,
    threshold: 700,
    summary: 'READ throughput of run r1 dropped to 49.0 ops/s, 95% below its baseline of 1,000 ops/s',
    description: '',
    resolvedSummary: 'READ throughput of run r1 recovered to 1,000 ops/s (alert threshold 700 ops/s)',
    silencedBy: null,
    ...over,
  }
}

test('the report ends with one [ALERT] line per alert, oldest first, and a YCSB reader skips them', () => {
  const report: RunReport = {
    ...base,
    runId: 'r1',
    cacheHitRatio: {},
    serverCache: [],
    completeness: { sent: 100, counted: 100, undelivered: 0 },
    lateEvents: 0,
    alerts: [
      alert({
        fingerprint: 'fedcba9876543210',
        rule: 'BenchstreamBelowTarget',
        ruleType: 'below_target',
        op: 'ALL',
        state: 'firing',
        startsAt: '2026-01-10T12:00:09.000Z',
        endsAt: null,
        summary: 'Run r1 throughput 49.0 ops/s is below 50.0% of its target 1,000 ops/s',
        resolvedSummary: null,
        silencedBy: '3b241101-e2bb-4255-8caf-4136c566a962',
      }),
      alert({}),
    ],
  }
  const text = formatRunReport(report)
  const lines = text.trimEnd().split('\n')
  assert.deepEqual(lines.slice(-2), [
    '[ALERT], BenchstreamThroughputDrop(READ) warning resolved 2026-01-10T12:00:08.000Z..2026-01-10T12:00:12.000Z ' +
      '(4.0 s): READ throughput of run r1 dropped to 49.0 ops/s; 95% below its baseline of 1000 ops/s, 49',
    '[ALERT], BenchstreamBelowTarget(ALL) warning firing since 2026-01-10T12:00:09.000Z silenced by ' +
      '3b241101-e2bb-4255-8caf-4136c566a962: Run r1 throughput 49.0 ops/s is below 50.0% of its target 1000 ops/s, 49',
  ])
  const withAlerts = parseTextReport(text, 'with alerts')
  const without = parseTextReport(formatRunReport({ ...report, alerts: [] }), 'without alerts')
  // Every line is a record: one more section the reader does not know, beside [BENCHSTREAM].
  assert.deepEqual(
    withAlerts.measurements.filter((m) => m.name.name !== 'ALERT'),
    without.measurements,
  )
  assert.deepEqual(withAlerts.ignoredLines, without.ignoredLines)
  assert.deepEqual(
    [withAlerts.runtimeMs, withAlerts.throughputOpsPerSec, withAlerts.operations],
    [without.runtimeMs, without.throughputOpsPerSec, without.operations],
  )
  assert.deepEqual(withAlerts.other, without.other)
  assert.ok(!formatRunReport({ ...report, alerts: [] }).includes('[ALERT]'))
})
