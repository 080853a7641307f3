import assert from 'node:assert/strict'
import { test } from 'node:test'
import { eDivisive, energyQ } from '../../services/core/compare/change-points.js'
import { isBenchstreamError } from '../../services/core/errors.js'
import { noisy } from './compare-synthetic.js'
import { binomialAtMost } from './stat-bounds.js'

test('energy statistic by hand: [0, 0, 1, 1] split in the middle gives Q = 2', () => {
  // m = n = 2: 2/(mn) * sum|X-Y| = 2/4 * 4 = 2, within terms 0, mn/(m+n) = 1.
  assert.equal(energyQ([0, 0, 1, 1], 2), 2)
  // A split that mixes the groups scores lower.
  assert.ok(energyQ([0, 1, 0, 1], 2) < 0)
  assert.ok(Number.isNaN(energyQ([0, 0, 1], 1)))
})

test('finds a 20 % step in 30 noisy points at the right index', () => {
  // 15 points around 100 then 15 around 120, 3 % Gaussian noise. Only the first change point is asked for: whether
  // the search then stops is a matter of chance (at most alpha), counted over many series below.
  const series = [...noisy(15, 100, 0.03, 42), ...noisy(15, 120, 0.03, 43)]
  const cps = eDivisive(series, { seed: 1, maxChangePoints: 1 })
  assert.equal(cps.length, 1, JSON.stringify(cps))
  const cp = cps[0]
  assert.ok(cp !== undefined && Math.abs(cp.index - 15) <= 1, `index ${cp?.index}`)
  // With 199 permutations none beats a step this clear: p = 1/200.
  assert.equal(cp?.pValue, 1 / 200)
  assert.ok(Math.abs((cp?.meanBefore ?? 0) - 100) < 3 && Math.abs((cp?.meanAfter ?? 0) - 120) < 3, JSON.stringify(cp))
  assert.ok(Math.abs((cp?.relativeChange ?? 0) - 0.2) < 0.04)
})

test('finds two changes (up, then partly back down) in 45 points', () => {
  const series = [...noisy(15, 100, 0.02, 1), ...noisy(15, 120, 0.02, 2), ...noisy(15, 105, 0.02, 3)]
  const idx = eDivisive(series, { seed: 2, maxChangePoints: 2 }).map((c) => c.index)
  assert.equal(idx.length, 2, JSON.stringify(idx))
  assert.ok(Math.abs((idx[0] ?? 0) - 15) <= 1 && Math.abs((idx[1] ?? 0) - 30) <= 1, JSON.stringify(idx))
})

test(
  'flat series: a change point in at most alpha of them; a 20 % step: found in every one, and a second change ' +
    'point after it in at most alpha of them (binomial bounds)',
  (t) => {
    // The permutation test is exact for exchangeable points (independent noise around one level): with 199
    // permutations p = (1 + #{permuted >= observed}) / 200 <= 0.05 exactly when at most 9 permutations score as high,
    // which has probability 10 / 200 = 0.05 (continuous data: no ties). So the series with a change point are
    // Binomial(N, 0.05). Once the step is found at its index (as good as certain, see below), the next round tests
    // the two flat segments the same way (the maximum over both, each permuted on its own; the split's own score
    // does not depend on the order inside them), so a second change point has probability at most 0.05 too. The
    // step itself, 6.7 sigma, is missed only if a permutation scores as high as the true split, which needs it to
    // all but sort the two groups apart: about 1 permutation in C(30, 15) = 1.6e8 does.
    const N = 60
    let flagged = 0
    let extra = 0
    for (let s = 1; s <= N; s++) {
      if (eDivisive(noisy(30, 100, 0.03, 1000 + s), { seed: s }).length > 0) flagged++
      const cps = eDivisive([...noisy(15, 100, 0.03, 2000 + s), ...noisy(15, 120, 0.03, 3000 + s)], { seed: s })
      assert.ok(
        cps.some((c) => Math.abs(c.index - 15) <= 1),
        `series ${s}: ${JSON.stringify(cps.map((c) => c.index))}`,
      )
      if (cps.length > 1) extra++
    }
    const bound = binomialAtMost(N, 0.05)
    t.diagnostic(
      `flat series with a change point: ${flagged} of ${N}; steps with a second one: ${extra}; bound ${bound}`,
    )
    assert.ok(flagged <= bound, `${flagged} of ${N} flat series had a change point (bound ${bound})`)
    assert.ok(extra <= bound, `${extra} of ${N} stepped series had a second change point (bound ${bound})`)
  },
)

test('a regression near the end of a running series is caught with the minimum segment size', () => {
  // The last 4 windows of 24 dropped by 25 %: minSegment 3 lets the split sit there.
  const series = [...noisy(20, 1000, 0.02, 5), ...noisy(4, 750, 0.02, 6)]
  const cps = eDivisive(series, { seed: 3, maxChangePoints: 1 })
  assert.equal(cps.length, 1, JSON.stringify(cps))
  assert.equal(cps[0]?.index, 20)
  assert.ok((cps[0]?.relativeChange ?? 0) < -0.2)
  // With a minimum segment of 5 the last 4 points cannot form a segment.
  assert.ok(eDivisive(series, { seed: 3, minSegment: 5 }).every((c) => c.index <= 19))
})

test('deterministic for a seed; options are validated', () => {
  const series = [...noisy(12, 10, 0.05, 8), ...noisy(12, 11, 0.05, 9)]
  assert.deepEqual(eDivisive(series, { seed: 5 }), eDivisive(series, { seed: 5 }))
  assert.deepEqual(eDivisive([1, 2, 3], {}), [])
  assert.deepEqual(eDivisive(series, { maxChangePoints: 0 }), [])
  assert.throws(
    () => eDivisive(series, { minSegment: 1 }),
    (e: unknown) => isBenchstreamError(e, 'BS_ERR_BAD_REQUEST'),
  )
  assert.throws(
    () => eDivisive(series, { exponent: 2 }),
    (e: unknown) => isBenchstreamError(e, 'BS_ERR_BAD_REQUEST'),
  )
})
