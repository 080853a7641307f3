/**
 * A stored run's report as text (services/core/reports/run-report-text.ts):
 * an experiment's run prints its start skew and worst clock offset in the
 * [BENCHSTREAM] block; a run that does not know them prints neither line.
 */
import assert from 'node:assert/strict'
import { test } from 'node:test'
import type { RunReport } from '../../schemas/run-reports-api.v1.js'
import type { RunInfo } from '../../schemas/runs-api.v1.js'
import { formatRunReport } from '../../services/core/reports/run-report-text.js'

const run: RunInfo = {
  run_id: 'exp-a-workloada-1',
  started_at: '2026-12-03 10:00:00.000000',
  ended_at: '2026-12-03 10:00:30.000000',
  clients: 3,
  clients_ended: 3,
  threads: 6,
  target: 0,
  labels: {},
  workload: 'workloada',
  binding: 'memory',
  sent: { READ: 10 },
  undelivered: 0,
  runtime_ms: 30_000,
  window_ms: 1000,
  group_id: 'exp-a-workloada',
  repeat: 1,
  properties: {},
  schedule_lag_max_ms: 0,
  behind_schedule_episodes: 0,
  expected_clients: 3,
  start_skew_ms: null,
  clock_offset_max_ms: null,
}

function report(over: Partial<RunInfo>): RunReport {
  return {
    runId: run.run_id,
    run: { ...run, ...over },
    runtimeMs: 30_000,
    operations: 10,
    throughputOpsPerSec: 0.33,
    measurements: [],
    cacheHitRatio: {},
    serverCache: [],
    completeness: { sent: 10, counted: 10, undelivered: 0 },
    lateEvents: 0,
    alerts: [],
  }
}

const benchstreamLines = (text: string): string[] => text.split('\n').filter((l) => l.startsWith('[BENCHSTREAM]'))

test('the report prints StartSkew(ms) and ClockOffsetMax(ms) when the run knows them', () => {
  const lines = benchstreamLines(formatRunReport(report({ start_skew_ms: 3.217, clock_offset_max_ms: 12.5 })))
  assert.deepEqual(lines, [
    '[BENCHSTREAM], RunId, exp-a-workloada-1',
    '[BENCHSTREAM], Clients, 3',
    '[BENCHSTREAM], StartSkew(ms), 3.217',
    '[BENCHSTREAM], ClockOffsetMax(ms), 12.5',
    '[BENCHSTREAM], EventsCounted, 10',
    '[BENCHSTREAM], EventsSent, 10',
  ])
  // A zero is known, not absent; values are rounded to 4 decimals as the other ratios.
  const zero = formatRunReport(report({ start_skew_ms: 0, clock_offset_max_ms: 0.123456 }))
  assert.match(zero, /^\[BENCHSTREAM\], StartSkew\(ms\), 0$/m)
  assert.match(zero, /^\[BENCHSTREAM\], ClockOffsetMax\(ms\), 0\.1235$/m)
})

test('a run without them (one client, no agent) prints neither line', () => {
  const text = formatRunReport(report({}))
  assert.doesNotMatch(text, /StartSkew|ClockOffsetMax/)
  const onlyOffset = formatRunReport(report({ clock_offset_max_ms: 7 }))
  assert.doesNotMatch(onlyOffset, /StartSkew/)
  assert.match(onlyOffset, /^\[BENCHSTREAM\], ClockOffsetMax\(ms\), 7$/m)
})
