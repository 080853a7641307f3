import assert from 'node:assert/strict'
import { test } from 'node:test'
import { BUCKET_COUNT, bucketIndex, bucketLow, bucketValue, bucketWidth, Histogram, MAX_TRACKABLE_US, quantileFromEntries, quantileRank } from '../../services/core/stats/histogram.js'

test('bucket index is monotonic and every value lies inside its bucket', () => {
  let prev = -1
  const probe = (v: number): void => {
    const i = bucketIndex(v)
    assert.ok(i >= prev, `index must not decrease at ${v}`)
    prev = i
    assert.ok(v >= bucketLow(i) && v < bucketLow(i) + bucketWidth(i), `${v} outside bucket ${i}`)
    assert.ok(i < BUCKET_COUNT)
  }
  for (let v = 0; v < 100_000; v++) probe(v)
  for (let v = 100_000; v < MAX_TRACKABLE_US; v = Math.floor(v * 1.0007) + 1) probe(v)
  probe(MAX_TRACKABLE_US)
  assert.equal(bucketIndex(MAX_TRACKABLE_US), BUCKET_COUNT - 1)
})

test('relative error of the reported value is at most 0.4% from 1 µs to 1 hour', () => {
  let worst = 0
  for (let v = 1; v <= 3_600_000_000; v = Math.floor(v * 1.013) + 1) {
    const err = Math.abs(bucketValue(bucketIndex(v)) - v) / v
    worst = Math.max(worst, err)
  }
  assert.ok(worst <= 0.004, `worst relative error ${worst}`)
  assert.ok(worst > 0.003, 'the bound is tight, not trivially met')
})

test('values below 256 µs are exact', () => {
  for (let v = 0; v < 256; v++) assert.equal(bucketValue(bucketIndex(v)), v)
})

test('quantile rank is HdrHistogram 2.1.4\'s: (long)(q*n + 0.5), at least 1', () => {
  // AbstractHistogram.getValueAtPercentile in HdrHistogram 2.1.4, the version YCSB 0.17.0 ships.
  const hdr214 = (q: number, n: number): number => Math.max(1, Math.trunc((q * 100 / 100.0) * n + 0.5))
  assert.equal(quantileRank(0.99, 100), 99)
  assert.equal(quantileRank(0.999, 1000), 999)
  assert.equal(quantileRank(0.9, 1006), 905) // 905.4 rounds down; ceil would give 906
  assert.equal(quantileRank(0.9999, 1000), 1000) // 999.9 rounds up
  assert.equal(quantileRank(0.5, 3), 2) // 1.5: half up
  assert.equal(quantileRank(0.5, 1), 1)
  assert.equal(quantileRank(0, 10), 1)
  assert.equal(quantileRank(1, 10), 10)
  for (const q of [0.5, 0.9, 0.95, 0.99, 0.999, 0.9999]) for (let n = 1; n <= 5000; n += 7) assert.equal(quantileRank(q, n), hdr214(q, n), `q=${q} n=${n}`)
})

test('reported percentiles are whole microseconds within [min, max]', () => {
  const h = new Histogram()
  for (const v of [700, 710, 725]) h.record(v)
  // 725 lies in bucket [724, 727]: its midpoint 725.5 would be above the maximum.
  assert.equal(quantileFromEntries(h.entries(), 0.999), 726)
  assert.equal(quantileFromEntries(h.entries(), 0.999, 700, 725), 725)
  assert.equal(quantileFromEntries(h.entries(), 0.001, 700, 725), 702) // bucket [700, 703]: midpoint 701.5, half up
  assert.ok(Number.isInteger(quantileFromEntries(h.entries(), 0.5)))
})

test('quantiles match exact order statistics within bucket resolution, and merging is exact', () => {
  let seed = 42
  const rnd = (): number => ((seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31)
  const values: number[] = []
  const a = new Histogram()
  const b = new Histogram()
  for (let i = 0; i < 50_000; i++) {
    // lognormal-ish long tail
    const v = Math.round(Math.exp(4 + 1.5 * Math.sqrt(-2 * Math.log(rnd() + 1e-12)) * Math.cos(2 * Math.PI * rnd())))
    values.push(v)
    ;(i % 2 === 0 ? a : b).record(v)
  }
  const merged = new Histogram()
  merged.merge(a)
  merged.merge(b)
  const all = new Histogram()
  for (const v of values) all.record(v)
  assert.deepEqual(merged.entries(), all.entries())
  values.sort((x, y) => x - y)
  for (const q of [0.5, 0.9, 0.95, 0.99, 0.999, 0.9999]) {
    const exact = values[quantileRank(q, values.length) - 1]!
    const got = merged.quantile(q)
    assert.ok(Math.abs(got - exact) / Math.max(1, exact) <= 0.004, `q=${q} got ${got} exact ${exact}`)
  }
})
