/**
 * The -s status line, checked against YCSB 0.17.0's own rules applied here
 * to the raw latencies (not against our output): StatusThread.computeStats
 * (whole seconds truncated, DecimalFormat("#.##"), "est completion in") and
 * OneMeasurementHdrHistogram.getSummary (Count, Max, Min, Avg, and
 * getValueAtPercentile of HdrHistogram 2.1.4: rank = (long)(q*n + 0.5), at
 * least 1). Latencies stay below 256 µs, where our buckets are exact, so the
 * expected values are exactly what YCSB would print for the same data.
 */
import assert from 'node:assert/strict'
import { test } from 'node:test'
import { decimal2, remainingText } from '../../services/core/reports/ycsb-format.js'
import { Histogram } from '../../services/core/stats/histogram.js'
import { formatStatus } from '../../services/driver/app.js'

/** HdrHistogram 2.1.4 AbstractHistogram.getValueAtPercentile over exact values. */
function hdrPercentile(sorted: readonly number[], percentile: number): number {
  const count = Math.max(1, Math.trunc((percentile / 100) * sorted.length + 0.5))
  return sorted[count - 1]!
}

/** DecimalFormat("#.##") for the values of this test (no ties at the third decimal). */
function javaTwoDecimals(x: number): string {
  return String(Math.round(x * 100) / 100)
}

function interval(values: number[]): { count: number; sumUs: number; minUs: number; maxUs: number; hist: Histogram } {
  const hist = new Histogram()
  for (const v of values) hist.record(v)
  return {
    count: values.length,
    sumUs: values.reduce((a, b) => a + b, 0),
    minUs: Math.min(...values),
    maxUs: Math.max(...values),
    hist,
  }
}

test('status line: YCSB layout and YCSB figures for the same latencies', () => {
  // 1006 reads: p90's rank is 905.4, where rounding (YCSB: 905) and rounding
  // up (906) differ; the 905th smallest read is at most 100, the 906th at least 150.
  let seed = 7
  const rnd = (): number => (seed = (seed * 48271) % 2147483647) / 2147483647
  const reads = [
    ...Array.from({ length: 905 }, () => 1 + Math.floor(rnd() * 100)),
    ...Array.from({ length: 101 }, () => 150 + Math.floor(rnd() * 100)),
  ].sort(() => rnd() - 0.5)
  const updates = Array.from({ length: 333 }, (_, i) => 20 + (i % 200))
  const snapshot = {
    elapsedMs: 10_999.6,
    operations: 123_456,
    currentOpsPerSec: 12_345.678,
    todoOperations: 6_544,
    intervals: new Map([
      ['UPDATE', interval(updates)],
      ['READ', interval(reads)],
    ]),
  }
  const line = formatStatus(snapshot, new Date(2026, 11, 2, 10, 0, 10, 7))

  const summary = (name: string, values: number[]): string => {
    const s = [...values].sort((a, b) => a - b)
    const p = (q: number): number => hdrPercentile(s, q)
    return (
      `[${name}: Count=${s.length}, Max=${s[s.length - 1]}, Min=${s[0]}, ` +
      `Avg=${javaTwoDecimals(values.reduce((a, b) => a + b, 0) / s.length)}, ` +
      `90=${p(90)}, 99=${p(99)}, 99.9=${p(99.9)}, 99.99=${p(99.99)}] `
    )
  }
  // 10999.6 ms is "10 sec" (integer division); 123456 ops in 10.9996 s leave 6544 for ceil(0.583) = 1 s.
  const expected =
    `2026-12-02 10:00:10:007 10 sec: 123456 operations; 12345.68 current ops/sec; est completion ` +
    `in 1 seconds ${summary('READ', reads)}${summary('UPDATE', updates)}`
  assert.equal(line, expected)
  // The rank rule matters here: rounding up would pick another read for p90.
  const sorted = [...reads].sort((a, b) => a - b)
  assert.notEqual(
    sorted[Math.ceil(0.9 * sorted.length) - 1],
    hdrPercentile(sorted, 90),
    'the data tells the two rank rules apart',
  )
})

test('YCSB number and time formats', () => {
  assert.equal(decimal2(12345.678), '12345.68')
  assert.equal(decimal2(500.5), '500.5')
  assert.equal(decimal2(2000), '2000')
  assert.equal(decimal2(0.125), '0.12') // HALF_EVEN: a tie goes to the even digit
  assert.equal(decimal2(0.135), '0.14')
  assert.equal(remainingText(1), '1 seconds ')
  assert.equal(remainingText(59), '59 seconds ')
  assert.equal(remainingText(61), '1 minute ')
  assert.equal(remainingText(3 * 3600 + 120), '3 hours 2 minutes ')
  assert.equal(remainingText(2 * 86400 + 3600 + 60), '2 days 1 hour ')
})

test('DecimalFormat("#.##") rounds the exact binary value half-even', () => {
  // Exact binary values: 0.165 is 0.16500000000000000777 (above the tie), 0.145 is 0.14499999999999999 (below).
  assert.equal(decimal2(0.165), '0.17')
  assert.equal(decimal2(0.145), '0.14')
  assert.equal(decimal2(2.675), '2.67') // 2.67499999999999982236431605997495353221893310546875
  assert.equal(decimal2(-1.005), '-1') // -1.00499999999999989341858963598497211933135986328125
  assert.equal(decimal2(1e-9), '0')
  assert.equal(decimal2(-0.001), '-0')
})
