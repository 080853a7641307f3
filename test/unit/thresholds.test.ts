/**
 * --threshold: the grammar (what is accepted, what is refused and why) and
 * verdicts on a report built from known latencies.
 */
import assert from 'node:assert/strict'
import { test } from 'node:test'
import { isBenchstreamError } from '../../services/core/errors.js'
import { evaluateThresholds, formatThresholdResults, parseThreshold } from '../../services/core/reports/thresholds.js'
import { buildReport } from '../../services/core/reports/ycsb-report.js'
import { Histogram } from '../../services/core/stats/histogram.js'

test('thresholds parse into base units: µs for latency, a fraction for error_rate', () => {
  assert.deepEqual(parseThreshold('READ.p99<2ms'), {
    source: 'READ.p99<2ms',
    measurement: 'READ',
    metric: 'p99',
    operator: '<',
    value: 2000,
  })
  assert.equal(parseThreshold('READ.p(99.9) <= 1.5s').value, 1_500_000)
  assert.equal(parseThreshold('READ.p(99.9) <= 1.5s').metric, 'p99.9')
  assert.equal(parseThreshold('Intended-UPDATE.max<250us').value, 250)
  assert.equal(parseThreshold('UPDATE.error_rate<1%').value, 0.01)
  assert.equal(parseThreshold('UPDATE.error_rate<0.01').value, 0.01)
  assert.equal(parseThreshold('OVERALL.throughput>=9000').value, 9000)
  assert.equal(parseThreshold('READ-MODIFY-WRITE.avg!=0us').measurement, 'READ-MODIFY-WRITE')
  const refused: Array<[string, RegExp]> = [
    ['READ.p99<2', /latency needs a unit/],
    ['READ.p99<2h', /latency needs a unit: us, ms or s \(got "h"\)/],
    ['OVERALL.avg<2ms', /OVERALL has no latency/],
    ['READ.throughput>10kb', /throughput is in ops\/s/],
    ['READ.errors<1%', /errors is a count and takes no unit/],
    ['READ.p42<1ms', /unknown metric p42/],
    ['SCANN.p99<1ms', /unknown measurement SCANN \(did you mean SCAN\?\)/],
    ['READ.p99 2ms', /expected <measurement>/],
    ['', /expected <measurement>/],
  ]
  for (const [text, why] of refused) {
    assert.throws(
      () => parseThreshold(text),
      (e: unknown) => isBenchstreamError(e, 'BS_ERR_USAGE') && why.test(e.message),
      text,
    )
  }
})

test("verdicts compare the report's own figures; a missing measurement fails", () => {
  const h = new Histogram()
  for (let v = 1; v <= 1000; v++) h.record(v) // p99 = 990 µs, max 1000 µs
  const failed = new Histogram()
  for (let i = 0; i < 10; i++) failed.record(5000)
  const report = buildReport(
    [
      { op: 'READ', status: 'OK', count: 1000, sumUs: 500_500, minUs: 1, maxUs: 1000, hist: h.entries() },
      { op: 'UPDATE', status: 'OK', count: 990, sumUs: 990, minUs: 1, maxUs: 1, hist: [[1, 990]] },
      { op: 'UPDATE', status: 'ERROR', count: 10, sumUs: 50_000, minUs: 5000, maxUs: 5000, hist: failed.entries() },
    ],
    2000,
  )
  const results = evaluateThresholds(
    report,
    [
      'READ.p99<1ms',
      'READ.p99<990us',
      'READ.max<=1ms',
      'OVERALL.throughput>999',
      'OVERALL.throughput>1000',
      'UPDATE.error_rate<=1%',
      'UPDATE.errors==10',
      'OVERALL.error_rate<=0.5%',
      'SCAN.p99<1s',
      'READ.throughput==500',
    ].map(parseThreshold),
  )
  assert.deepEqual(
    results.map((r) => [r.threshold.source, r.passed, r.actual]),
    [
      ['READ.p99<1ms', true, h.quantile(0.99)],
      ['READ.p99<990us', false, h.quantile(0.99)],
      ['READ.max<=1ms', true, 1000],
      ['OVERALL.throughput>999', true, 1000],
      ['OVERALL.throughput>1000', false, 1000],
      ['UPDATE.error_rate<=1%', true, 0.01],
      ['UPDATE.errors==10', true, 10],
      ['OVERALL.error_rate<=0.5%', true, 10 / 2000],
      ['SCAN.p99<1s', false, null],
      ['READ.throughput==500', true, 500],
    ],
  )
  assert.equal(h.quantile(0.99), 990)
  const text = formatThresholdResults(results, 'run r1')
  assert.match(text, /^thresholds \(run r1\): 3 of 10 failed\n/)
  assert.match(text, /✗ READ\.p99<990us +990 µs/)
  assert.match(text, /✗ SCAN\.p99<1s +no SCAN operations in the run/)
  assert.match(text, /✓ OVERALL\.throughput>999 +1000 ops\/s/)
})
