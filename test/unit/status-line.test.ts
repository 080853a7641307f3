import assert from 'node:assert/strict'
import { test } from 'node:test'
import { Histogram } from '../../services/core/stats/histogram.js'
import { formatStatus } from '../../services/driver/app.js'

test('status line follows YCSB layout', () => {
  const h = new Histogram()
  for (let v = 1; v <= 1000; v++) h.record(v)
  const line = formatStatus(
    { elapsedMs: 9999.6, operations: 123456, currentOpsPerSec: 12345.64, intervals: new Map([['UPDATE', { count: 1000, sumUs: 500500, minUs: 1, maxUs: 1000, hist: h }], ['READ', { count: 1000, sumUs: 500500, minUs: 1, maxUs: 1000, hist: h }]]) },
    new Date(2026, 11, 2, 10, 0, 10, 7),
  )
  // Percentiles are bucket values (within 0.4% of 900, 990, 999, 1000).
  const q = `90=${h.quantile(0.9)}, 99=${h.quantile(0.99)}, 99.9=${h.quantile(0.999)}, 99.99=${h.quantile(0.9999)}`
  assert.equal(q, '90=901.5, 99=989.5, 99.9=997.5, 99.99=1001.5')
  assert.equal(line, `2026-12-02 10:00:10:007 10 sec: 123456 operations; 12345.6 current ops/sec; [READ: Count=1000, Max=1000, Min=1, Avg=500.50, ${q}] [UPDATE: Count=1000, Max=1000, Min=1, Avg=500.50, ${q}]`)
})
