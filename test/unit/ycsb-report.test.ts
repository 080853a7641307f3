import assert from 'node:assert/strict'
import { test } from 'node:test'
import { Histogram } from '../../services/core/stats/histogram.js'
import { buildReport, formatYcsb } from '../../services/core/reports/ycsb-report.js'

test('report follows YCSB layout, failed operations under OP-FAILED, Return= counts on the operation', () => {
  const ok = new Histogram()
  for (let v = 1; v <= 100; v++) ok.record(v)
  const failed = new Histogram()
  failed.record(500)
  const r = buildReport(
    [
      { op: 'READ', status: 'OK', count: 100, sumUs: 5050, minUs: 1, maxUs: 100, hist: ok.entries() },
      { op: 'READ', status: 'NOT_FOUND', count: 1, sumUs: 500, minUs: 500, maxUs: 500, hist: failed.entries() },
    ],
    2000,
  )
  assert.equal(r.operations, 101)
  assert.equal(r.throughputOpsPerSec, 50.5)
  const text = formatYcsb(r)
  assert.match(text, /^\[OVERALL\], RunTime\(ms\), 2000$/m)
  assert.match(text, /^\[OVERALL\], Throughput\(ops\/sec\), 50\.5$/m)
  assert.match(text, /^\[READ\], Operations, 100$/m)
  assert.match(text, /^\[READ\], AverageLatency\(us\), 50\.5$/m)
  assert.match(text, /^\[READ\], 95thPercentileLatency\(us\), 95$/m)
  assert.match(text, /^\[READ\], 99thPercentileLatency\(us\), 99$/m)
  assert.match(text, /^\[READ\], Return=OK, 100$/m)
  assert.match(text, /^\[READ\], Return=NOT_FOUND, 1$/m)
  assert.match(text, /^\[READ-FAILED\], Operations, 1$/m)
  assert.ok(text.indexOf('[READ], Operations') < text.indexOf('[READ-FAILED]'))
})
