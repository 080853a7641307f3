/**
 * The demo's word on the schedule (services/core/reports/schedule-kept.ts):
 * kept when every operation's intended p99 is within 2x its measured p99,
 * else the figures and what to do; nothing for an unthrottled run.
 */
import assert from 'node:assert/strict'
import { test } from 'node:test'
import type { Measurement, RunReport } from '../../schemas/run-reports-api.v1.js'
import { scheduleVerdict } from '../../services/core/reports/schedule-kept.js'

const m = (name: string, p99: number): Measurement =>
  ({ name, operations: 100, p99LatencyUs: p99 }) as unknown as Measurement

const report = (measurements: Measurement[]): RunReport =>
  ({ measurements, run: { schedule_lag_max_ms: 117 } }) as unknown as RunReport

test('intended p99 within 2x measured: kept; beyond: not kept, with the worst operation and the lag', () => {
  const kept = scheduleVerdict(
    report([m('READ', 100), m('Intended-READ', 190), m('UPDATE', 200), m('Intended-UPDATE', 210)]),
  )
  assert.equal(kept?.kept, true)
  assert.equal(kept?.worst?.op, 'READ')
  assert.match(kept?.text ?? '', /^the schedule was kept: READ intended p99 190 µs is 1\.9x its measured p99 100 µs/)
  const late = scheduleVerdict(
    report([m('READ', 100), m('Intended-READ', 2300), m('UPDATE', 200), m('Intended-UPDATE', 210)]),
  )
  assert.equal(late?.kept, false)
  assert.equal(late?.worst?.factor, 23)
  assert.match(late?.text ?? '', /did not keep the schedule: READ intended p99 2300 µs is 23\.0x .*up to 117 ms late/)
  assert.match(late?.text ?? '', /lower the target/)
})

test('an unthrottled run has no intended latency: no verdict', () => {
  assert.equal(scheduleVerdict(report([m('READ', 100)])), undefined)
})
