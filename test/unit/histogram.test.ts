import assert from 'node:assert/strict'
import { test } from 'node:test'
import {
  BUCKET_COUNT,
  bucketIndex,
  bucketLow,
  bucketValue,
  bucketWidth,
  Histogram,
  MAX_TRACKABLE_US,
  quantileFromEntries,
  quantileRank,
} from '../../services/core/stats/histogram.js'

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

test("quantile rank is HdrHistogram 2.1.4's: (long)(q*n + 0.5), at least 1", () => {
  // AbstractHistogram.getValueAtPercentile in HdrHistogram 2.1.4, the version YCSB 0.17.0 ships.
  const hdr214 = (q: number, n: number): number => Math.max(1, Math.trunc(((q * 100) / 100.0) * n + 0.5))
  assert.equal(quantileRank(0.99, 100), 99)
  assert.equal(quantileRank(0.999, 1000), 999)
  assert.equal(quantileRank(0.9, 1006), 905) // 905.4 rounds down; ceil would give 906
  assert.equal(quantileRank(0.9999, 1000), 1000) // 999.9 rounds up
  assert.equal(quantileRank(0.5, 3), 2) // 1.5: half up
  assert.equal(quantileRank(0.5, 1), 1)
  assert.equal(quantileRank(0, 10), 1)
  assert.equal(quantileRank(1, 10), 10)
  for (const q of [0.5, 0.9, 0.95, 0.99, 0.999, 0.9999])
    for (let n = 1; n <= 5000; n += 7) assert.equal(quantileRank(q, n), hdr214(q, n), `q=${q} n=${n}`)
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
  const rnd = (): number => (seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31
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

test('a histogram holds only the bucket range it has used, and counts as a dense one would', () => {
  const one = new Histogram()
  one.record(1234)
  // A one-event window row must not cost the whole layout (issue 9: 50,000 one-event runs).
  assert.ok(one.heldBuckets <= 8, `one value holds ${one.heldBuckets} buckets`)
  assert.equal(one.countAt(bucketIndex(1234)), 1)
  assert.equal(one.countAt(0), 0)
  assert.equal(one.countAt(BUCKET_COUNT - 1), 0)

  let seed = 7
  const rnd = (): number => (seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31
  const orders: Array<(vs: number[]) => number[]> = [
    (vs) => vs,
    (vs) => [...vs].sort((a, b) => a - b),
    (vs) => [...vs].sort((a, b) => b - a),
  ]
  for (const order of orders) {
    const values = Array.from({ length: 5000 }, () => Math.floor(Math.exp(rnd() * Math.log(MAX_TRACKABLE_US))))
    values.push(0, MAX_TRACKABLE_US)
    const dense = new Float64Array(BUCKET_COUNT)
    const h = new Histogram()
    for (const v of order(values)) {
      h.record(v)
      dense[bucketIndex(v)]! += 1
    }
    h.recordBucket(BUCKET_COUNT - 1, 3)
    dense[BUCKET_COUNT - 1]! += 3
    assert.ok(h.heldBuckets <= BUCKET_COUNT)
    for (let i = 0; i < BUCKET_COUNT; i++) assert.equal(h.countAt(i), dense[i], `bucket ${i}`)
    assert.equal(h.total, values.length + 3)
    const expected = [...dense].flatMap((c, i): Array<[number, number]> => (c === 0 ? [] : [[i, c]]))
    assert.deepEqual(h.entries(), expected)
    assert.deepEqual(h.toMap(), Object.fromEntries(expected.map(([i, c]) => [String(i), c])))
    // Merging into an empty one, and into one that holds a range elsewhere.
    const low = new Histogram()
    low.record(3)
    low.merge(h)
    low.merge(new Histogram())
    dense[3]! += 1
    for (let i = 0; i < BUCKET_COUNT; i++) assert.equal(low.countAt(i), dense[i], `merged bucket ${i}`)
    assert.equal(low.minIndex, 0)
    assert.equal(low.maxIndex, BUCKET_COUNT - 1)
  }
})
