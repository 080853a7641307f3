import assert from 'node:assert/strict'
import { test } from 'node:test'
import { blockBootstrapMeans, optimalBlockLength } from '../../services/core/compare/block-bootstrap.js'
import { mannWhitneyU } from '../../services/core/compare/mann-whitney.js'
import { welchTTest } from '../../services/core/compare/welch-t-test.js'
import { ar1, noisy } from './compare-synthetic.js'

test('block length is chosen from the data: short for independent windows, long for correlated ones', () => {
  const iid = optimalBlockLength(noisy(100, 1000, 0.05, 3))
  const correlated = optimalBlockLength(ar1(100, 1000, 0.05, 0.9, 3))
  assert.ok(iid <= 2, `independent windows: block length ${iid}`)
  assert.ok(correlated >= 6, `AR(1) phi=0.9: block length ${correlated}`)
  // Bounded by ceil(min(3 sqrt(n), n/3)) and at least 1.
  assert.ok(optimalBlockLength(ar1(30, 1000, 0.05, 0.99, 4)) <= 10)
  assert.equal(optimalBlockLength([5, 5, 5, 5, 5, 5]), 1)
  assert.equal(optimalBlockLength([1, 2]), 1)
})

test(
  'on autocorrelated windows with no change, the block bootstrap keeps its false-positive rate; ' +
    'independent-sample tests do not',
  () => {
    // 20 pairs of AR(1) series (phi 0.7, 5 % noise, 60 windows each) from the
    // same process. At alpha 0.05 about 1 in 20 may be flagged by chance. The
    // t-test and Mann-Whitney treat windows as independent and flag 6 and 5:
    // that is the mistake the block bootstrap exists to avoid.
    let bootstrap = 0
    let welch = 0
    let mw = 0
    for (let s = 1; s <= 20; s++) {
      const a = ar1(60, 1000, 0.05, 0.7, s * 2)
      const b = ar1(60, 1000, 0.05, 0.7, s * 2 + 1)
      if (blockBootstrapMeans([a], [b], { seed: s }).pValue < 0.05) bootstrap++
      if (welchTTest(a, b).pValue < 0.05) welch++
      if (mannWhitneyU(a, b).pValue < 0.05) mw++
    }
    assert.ok(bootstrap <= 2, `block bootstrap false positives: ${bootstrap} of 20`)
    assert.ok(welch >= 5, `Welch on windows false positives: ${welch} of 20 (expected many)`)
    assert.ok(mw >= 4, `Mann-Whitney on windows false positives: ${mw} of 20 (expected many)`)
  },
)

test('finds a 5 % shift in autocorrelated windows most of the time', () => {
  let found = 0
  for (let s = 1; s <= 20; s++) {
    const r = blockBootstrapMeans([ar1(60, 1000, 0.05, 0.7, s * 2)], [ar1(60, 950, 0.05, 0.7, s * 2 + 1)], { seed: s })
    if (r.pValue < 0.05 && (r.relativeChange ?? 0) < 0) found++
  }
  assert.ok(found >= 14, `detected ${found} of 20`)
})

test('is deterministic for a seed, and its interval contains the observed change', () => {
  const a = [ar1(40, 500, 0.03, 0.5, 11)]
  const b = [ar1(40, 520, 0.03, 0.5, 12)]
  const r1 = blockBootstrapMeans(a, b, { seed: 7, replicates: 500 })
  const r2 = blockBootstrapMeans(a, b, { seed: 7, replicates: 500 })
  assert.deepEqual(r1, r2)
  assert.equal(r1.replicates, 500)
  const rel = r1.relativeChange ?? Number.NaN
  assert.ok(r1.ci !== null && r1.ci.low <= rel && rel <= r1.ci.high, JSON.stringify(r1))
  // p has the resolution 1/(B+1) and is never 0.
  assert.ok(r1.pValue >= 1 / 501)
})

test('runs of one side are resampled separately and pooled', () => {
  // Two baseline runs at different levels: the pooled mean is their window-weighted mean.
  const r = blockBootstrapMeans(
    [
      [10, 10, 10, 10],
      [20, 20, 20, 20, 20, 20],
    ],
    [[16, 16, 16, 16, 16]],
    { replicates: 50, blockLength: 2 },
  )
  assert.equal(r.difference, 0)
  assert.equal(r.blockLength, 2)
  // Every resample of a constant run has the same mean, so the null is never contradicted.
  assert.equal(r.pValue, 1)
})
