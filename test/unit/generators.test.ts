/**
 * Generators against their distributions. Every test uses a fixed seed, so
 * results are deterministic; the tolerances are still set at several standard
 * deviations, so they would hold for other seeds too and a real change in a
 * distribution (not noise) is what fails them.
 */
import assert from 'node:assert/strict'
import { test } from 'node:test'
import { isBenchstreamError } from '../../services/core/errors.js'
import { fnvhash64, fnvhash64Mod } from '../../services/core/workload/fnv-hash.js'
import {
  AcknowledgedCounterGenerator,
  ConstantIntegerGenerator,
  CounterGenerator,
  DiscreteGenerator,
  ExponentialGenerator,
  HotspotIntegerGenerator,
  SequentialGenerator,
  UniformLongGenerator,
} from '../../services/core/workload/generators.js'
import { zeta, zetaRange } from '../../services/core/workload/zeta.js'
import {
  ScrambledZipfianGenerator,
  SkewedLatestGenerator,
  ZipfianGenerator,
} from '../../services/core/workload/zipfian-generators.js'
import { Rng } from '../../services/core/workload/random.js'

const isWorkloadError = (err: unknown): boolean => isBenchstreamError(err, 'BS_ERR_WORKLOAD')

/** YCSB's Utils.fnvhash64 in BigInt, the reference the fast version must match. */
function referenceFnv(value: number): bigint {
  let h = 0xcbf29ce484222325n
  let v = BigInt(value)
  for (let i = 0; i < 8; i++) {
    h ^= v & 0xffn
    v >>= 8n
    h = (h * 0x100000001b3n) & 0xffffffffffffffffn
  }
  const signed = BigInt.asIntN(64, h)
  return BigInt.asIntN(64, signed < 0n ? -signed : signed)
}

function counts(n: number, draws: number, next: () => number, offset = 0): number[] {
  const c = Array.from<number>({ length: n }).fill(0)
  for (let i = 0; i < draws; i++) {
    const v = next() - offset
    c[v] = (c[v] ?? 0) + 1
  }
  return c
}

test('Rng: same seed, same sequence; values in range', () => {
  const a = new Rng(12345)
  const b = new Rng(12345)
  const c = new Rng(12346)
  const sa = Array.from({ length: 100 }, () => a.next())
  assert.deepEqual(
    sa,
    Array.from({ length: 100 }, () => b.next()),
  )
  assert.notDeepEqual(
    sa,
    Array.from({ length: 100 }, () => c.next()),
  )
  // Seeds above 2^32 are not truncated to the same stream.
  assert.notEqual(new Rng(1).next(), new Rng(1 + 2 ** 32).next())
  const r = new Rng(1)
  for (let i = 0; i < 100_000; i++) {
    const x = r.next()
    assert.ok(x >= 0 && x < 1)
    const k = r.int(7)
    assert.ok(Number.isInteger(k) && k >= 0 && k < 7)
  }
})

test('fnvhash64 matches YCSB (BigInt reference) and gives YCSB key user6284781860667377211 for 0', () => {
  assert.equal(fnvhash64(0), '6284781860667377211')
  const values = [0, 1, 255, 256, 65535, 2 ** 31, 2 ** 32 - 1, 2 ** 32, 2 ** 40 + 7, Number.MAX_SAFE_INTEGER]
  const r = new Rng(9)
  for (let i = 0; i < 20_000; i++) values.push(i, r.int(Number.MAX_SAFE_INTEGER), r.int(2 ** 37))
  for (const v of values) {
    const ref = referenceFnv(v)
    assert.equal(fnvhash64(v), ref.toString(), `fnvhash64(${v})`)
    for (const n of [1, 7, 1000, 10_000_000_001, 2 ** 37])
      assert.equal(fnvhash64Mod(v, n), Number(ref % BigInt(n)), `fnvhash64Mod(${v}, ${n})`)
  }
  assert.throws(() => fnvhash64(-1), isWorkloadError)
  assert.throws(() => fnvhash64(1.5), isWorkloadError)
})

test('zeta: Euler-Maclaurin agrees with exact summation and with YCSB precomputed constant', () => {
  for (const theta of [0.2, 0.5, 0.99]) {
    for (const n of [10_001, 123_456]) {
      const exact = zetaRange(0, n, theta, 0)
      assert.ok(Math.abs(zeta(n, theta) - exact) / exact < 1e-12, `zeta(${n}, ${theta})`)
    }
  }
  const z = zeta(ScrambledZipfianGenerator.ITEM_COUNT + 1, 0.99)
  assert.ok(Math.abs(z - ScrambledZipfianGenerator.ZETAN) / ScrambledZipfianGenerator.ZETAN < 1e-9, `got ${z}`)
})

test('UniformLongGenerator: covers [lb, ub] evenly (chi-square)', () => {
  const g = new UniformLongGenerator(new Rng(1), 50, 149)
  const draws = 100_000
  const c = counts(100, draws, () => g.nextValue(), 50)
  assert.equal(c.length, 100, 'no value outside [50, 149]')
  const expected = draws / 100
  const chi2 = c.reduce((s, o) => s + (o - expected) ** 2 / expected, 0)
  // 99 degrees of freedom: mean 99, sd 14; 170 is ~5 sd.
  assert.ok(chi2 < 170, `chi-square ${chi2}`)
  assert.ok(c.every((o) => o > 0))
  assert.equal(g.lastValue() >= 50 && g.lastValue() <= 149, true)
  assert.throws(() => new UniformLongGenerator(new Rng(1), 5, 4), isWorkloadError)
})

test('ZipfianGenerator: rank 1 has share 1/zeta(n, theta) and f(1)/f(2) = 2^theta', () => {
  // Sized so that each tolerance is at least ~4 standard deviations.
  for (const [theta, n] of [
    [0.99, 1000],
    [0.5, 100],
  ] as const) {
    const draws = 400_000
    const g = new ZipfianGenerator(new Rng(3), 10, 10 + n - 1, theta)
    const c = counts(n, draws, () => g.nextValue(), 10)
    assert.equal(c.length, n, 'values stay in [min, max]')
    const f1 = c[0]! / draws
    const expected = 1 / zeta(n, theta)
    assert.ok(Math.abs(f1 - expected) / expected < 0.03, `theta ${theta}: f(1) ${f1} vs ${expected}`)
    const ratio = c[0]! / c[1]!
    assert.ok(Math.abs(ratio - 2 ** theta) / 2 ** theta < 0.04, `theta ${theta}: f(1)/f(2) ${ratio} vs ${2 ** theta}`)
    // Popularity falls with rank.
    assert.ok(c[0]! > c[1]! && c[1]! > c[9]! && c[9]! > c[n - 1]!)
  }
  assert.throws(() => new ZipfianGenerator(new Rng(1), 0, 10, 1), isWorkloadError)
  assert.throws(() => new ZipfianGenerator(new Rng(1), 0, 10, 0), isWorkloadError)
})

test('ZipfianGenerator: the item count can grow (and shrink) after construction', () => {
  const g = new ZipfianGenerator(new Rng(4), 0, 999)
  const draws = 200_000
  for (const n of [1001, 1500, 5000, 20_000, 2000]) {
    const c = counts(n, draws, () => g.nextForCount(n))
    assert.equal(c.length, n, `values stay below ${n}`)
    assert.equal(g.itemCount, n)
    const expected = 1 / zeta(n, 0.99)
    assert.ok(Math.abs(c[0]! / draws - expected) / expected < 0.03, `n=${n}: f(1) ${c[0]! / draws} vs ${expected}`)
  }
})

test('ScrambledZipfianGenerator: stays in [min, max]; hottest item is hash(rank 1) with the theoretical share', () => {
  const min = 100
  const n = 1000
  const draws = 200_000
  const g = new ScrambledZipfianGenerator(new Rng(5), min, min + n - 1)
  const c = counts(n, draws, () => g.nextValue(), min)
  assert.equal(c.length, n)
  assert.ok(c.every((x) => Number.isInteger(x)))
  const hottest = c.indexOf(Math.max(...c))
  assert.equal(hottest, fnvhash64Mod(0, n), 'the most popular item is where rank 1 hashes to')
  // Expected share: every rank that hashes onto the hottest item, exactly for
  // the first 10^5 ranks, then the remaining mass spread evenly.
  const Z = ScrambledZipfianGenerator.ZETAN
  let expected = 0
  let head = 0
  for (let r = 0; r < 100_000; r++) {
    const p = Math.pow(r + 1, -0.99) / Z
    head += p
    if (fnvhash64Mod(r, n) === hottest) expected += p
  }
  expected += (1 - head) / n
  const share = c[hottest]! / draws
  assert.ok(share >= 0.95 / Z, `at least rank 1's share, ${1 / Z}`)
  assert.ok(Math.abs(share - expected) / expected < 0.1, `share ${share} vs ${expected}`)
  // Other constants work too (zeta from the Euler-Maclaurin path).
  const h = new ScrambledZipfianGenerator(new Rng(6), 0, 9, 0.8)
  for (let i = 0; i < 1000; i++) {
    const v = h.nextValue()
    assert.ok(v >= 0 && v <= 9)
  }
})

test('HotspotIntegerGenerator: hot set is hotsetFraction of the range and gets hotOpnFraction of draws', () => {
  const g = new HotspotIntegerGenerator(new Rng(8), 1000, 1999, 0.2, 0.8)
  assert.equal(g.hotInterval, 200)
  assert.equal(g.coldInterval, 800)
  const draws = 100_000
  const c = counts(1000, draws, () => g.nextValue(), 1000)
  assert.equal(c.length, 1000)
  const hot = c.slice(0, 200).reduce((a, b) => a + b, 0) / draws
  assert.ok(Math.abs(hot - 0.8) < 0.01, `hot share ${hot}`)
  // Each hot value is drawn 0.8/200 = 16x as often as a cold one (0.2/800): the boundary is sharp.
  const hotMean = (hot * draws) / 200
  const coldMean = ((1 - hot) * draws) / 800
  assert.ok(hotMean / coldMean > 14 && hotMean / coldMean < 18)
  assert.ok(c[199]! > 3 * coldMean && c[200]! < hotMean / 3)
  // Degenerate sets: an empty set is never drawn from.
  const allCold = new HotspotIntegerGenerator(new Rng(1), 0, 9, 0, 0.8)
  const allHot = new HotspotIntegerGenerator(new Rng(1), 0, 9, 1, 0.1)
  for (let i = 0; i < 1000; i++) {
    const a = allCold.nextValue()
    const b = allHot.nextValue()
    assert.ok(a >= 0 && a <= 9 && b >= 0 && b <= 9)
  }
  assert.throws(() => new HotspotIntegerGenerator(new Rng(1), 0, 9, 1.5, 0.5), isWorkloadError)
})

test('SkewedLatestGenerator: picks near the newest acknowledged value, never past it', () => {
  const counter = new AcknowledgedCounterGenerator(1000)
  const g = new SkewedLatestGenerator(new Rng(7), counter)
  const draws = 100_000
  const c = counts(1000, draws, () => g.nextValue())
  assert.equal(c.length, 1000, 'never past the newest (999)')
  assert.equal(c.indexOf(Math.max(...c)), 999, 'the newest is the most popular')
  const newest100 = c.slice(900).reduce((a, b) => a + b, 0) / draws
  const expected = zeta(100, 0.99) / zeta(1000, 0.99)
  assert.ok(Math.abs(newest100 - expected) < 0.03, `share of the newest 10%: ${newest100} vs ${expected}`)

  // Hand out 100 more; only acknowledged ones become readable.
  const issued = Array.from({ length: 100 }, () => counter.nextValue())
  assert.deepEqual([issued[0], issued[99]], [1000, 1099])
  for (const v of issued.slice(0, 50)) counter.acknowledge(v)
  for (let i = 0; i < 10_000; i++) assert.ok(g.nextValue() <= 1049)
  for (const v of issued.slice(50)) counter.acknowledge(v)
  const c2 = counts(1100, draws, () => g.nextValue())
  assert.equal(c2.length, 1100)
  assert.equal(c2.indexOf(Math.max(...c2)), 1099)
})

test('SequentialGenerator wraps around', () => {
  const g = new SequentialGenerator(5, 7)
  assert.deepEqual(
    Array.from({ length: 8 }, () => g.nextValue()),
    [5, 6, 7, 5, 6, 7, 5, 6],
  )
  assert.equal(g.lastValue(), 6)
  const one = new SequentialGenerator(3, 3)
  assert.deepEqual([one.nextValue(), one.nextValue()], [3, 3])
})

test('ExponentialGenerator: percentile% of draws fall below range', () => {
  const g = new ExponentialGenerator(new Rng(10), 95, 1000)
  const draws = 100_000
  let below = 0
  for (let i = 0; i < draws; i++) {
    const v = g.nextValue()
    assert.ok(v >= 0 && Number.isFinite(v))
    if (v < 1000) below++
  }
  assert.ok(Math.abs(below / draws - 0.95) < 0.005, `${below / draws}`)
  assert.throws(() => new ExponentialGenerator(new Rng(1), 100, 10), isWorkloadError)
  assert.throws(() => new ExponentialGenerator(new Rng(1), 95, 0), isWorkloadError)
})

test('ConstantIntegerGenerator and CounterGenerator', () => {
  const k = new ConstantIntegerGenerator(42)
  assert.deepEqual([k.nextValue(), k.nextValue(), k.lastValue()], [42, 42, 42])
  const c = new CounterGenerator(10)
  assert.equal(c.lastValue(), 9)
  assert.deepEqual([c.nextValue(), c.nextValue(), c.nextValue()], [10, 11, 12])
  assert.equal(c.lastValue(), 12)
})

test('AcknowledgedCounterGenerator: the limit advances over the contiguous acknowledged prefix only', () => {
  const g = new AcknowledgedCounterGenerator(100, 8)
  assert.equal(g.lastValue(), 99)
  const v = Array.from({ length: 6 }, () => g.nextValue())
  assert.deepEqual(v, [100, 101, 102, 103, 104, 105])
  g.acknowledge(101)
  assert.equal(g.lastValue(), 99, 'a gap at 100 holds the limit back')
  g.acknowledge(103)
  g.acknowledge(100)
  assert.equal(g.lastValue(), 101)
  g.acknowledge(102)
  assert.equal(g.lastValue(), 103)
  g.acknowledge(102) // twice: harmless
  g.acknowledge(5) // below the start (a loaded key): ignored
  assert.equal(g.lastValue(), 103)
  assert.throws(() => g.acknowledge(106), isWorkloadError, 'never handed out')
  // Window of 8: at most 8 values may be outstanding past the limit.
  g.nextValue() // 106
  g.nextValue() // 107
  g.nextValue() // 108
  g.nextValue() // 109
  g.nextValue() // 110
  g.nextValue() // 111
  assert.throws(
    () => g.nextValue(),
    (err: unknown) => isWorkloadError(err) && /unacknowledged/.test((err as Error).message),
  )
  for (let i = 104; i <= 111; i++) g.acknowledge(i)
  assert.equal(g.lastValue(), 111)
  // The ring reuses its slots correctly after wrapping many times.
  for (let i = 0; i < 1000; i++) g.acknowledge(g.nextValue())
  assert.equal(g.lastValue(), 1111)
  assert.throws(() => new AcknowledgedCounterGenerator(0, 6), isWorkloadError)
})

test('DiscreteGenerator: picks in proportion to weights, never a zero weight', () => {
  const g = new DiscreteGenerator(new Rng(11), [
    { weight: 1, value: 'a' },
    { weight: 0, value: 'never' },
    { weight: 3, value: 'b' },
  ])
  const draws = 100_000
  let a = 0
  for (let i = 0; i < draws; i++) {
    const v = g.nextValue()
    assert.notEqual(v, 'never')
    if (v === 'a') a++
  }
  assert.ok(Math.abs(a / draws - 0.25) < 0.01, `${a / draws}`)
  assert.throws(() => new DiscreteGenerator(new Rng(1), [{ weight: 0, value: 1 }]), isWorkloadError)
  assert.throws(() => new DiscreteGenerator(new Rng(1), [{ weight: -1, value: 1 }]), isWorkloadError)
})
