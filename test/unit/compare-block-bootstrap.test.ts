import assert from 'node:assert/strict'
import { test, type TestContext } from 'node:test'
import { blockBootstrapMeans, optimalBlockLength } from '../../services/core/compare/block-bootstrap.js'
import { mannWhitneyU } from '../../services/core/compare/mann-whitney.js'
import { normalCdf, normalUpperTail, studentTQuantile } from '../../services/core/compare/distributions.js'
import { welchTTest } from '../../services/core/compare/welch-t-test.js'
import { ar1, noisy } from './compare-synthetic.js'
import { ar1MeanVariance, binomialAtLeast, binomialAtMost } from './stat-bounds.js'

test('block length is chosen from the data: short for independent windows, long for correlated ones', () => {
  // Independent windows: the rule's target is 1 (no autocovariance). From 100 windows its estimate scatters: when
  // the first autocorrelations are insignificant (bandwidth 2), b = ceil((6 r² / (1 + 2 r)²)^(1/3) n^(1/3)) with r
  // the lag-1 sample autocorrelation, about N(-1/n, 1/n), so b <= 2 for r in [-0.094, 0.150]: probability 0.74.
  // AR(1) phi 0.9: from the true autocovariances, G = 2 phi / (1 - phi)² = 180 and the long-run variance
  // (1 + phi) / (1 - phi) = 19 give b = ceil((2 G² / (4/3 x 19²))^(1/3) 100^(1/3)) = 24; 6 or more unless the
  // estimate falls to a quarter of that. Both are checked over 200 series against Binomial(200, 0.6), which leaves
  // room for the approximations (normal r, true autocovariances).
  const N = 200
  let short = 0
  let long = 0
  for (let s = 1; s <= N; s++) {
    if (optimalBlockLength(noisy(100, 1000, 0.05, s)) <= 2) short++
    if (optimalBlockLength(ar1(100, 1000, 0.05, 0.9, s)) >= 6) long++
  }
  const least = binomialAtLeast(N, 0.6)
  assert.ok(short >= least, `independent windows: block length <= 2 in ${short} of ${N} (bound ${least})`)
  assert.ok(long >= least, `AR(1) phi=0.9: block length >= 6 in ${long} of ${N} (bound ${least})`)
  // Bounded by ceil(min(3 sqrt(n), n/3)) and at least 1.
  assert.ok(optimalBlockLength(ar1(30, 1000, 0.05, 0.99, 4)) <= 10)
  assert.equal(optimalBlockLength([5, 5, 5, 5, 5, 5]), 1)
  assert.equal(optimalBlockLength([1, 2]), 1)
})

/**
 * A lower bound of P(Welch's p < alpha) for two independent stationary Gaussian AR(1) series of n values (unit
 * variance, coefficient phi) with the same mean, that is Welch's false-positive rate when windows are taken for
 * independent samples. The mean difference D is N(0, 2 v) with v = ar1MeanVariance(phi, n), where Welch assumes
 * v = 1/n. Welch's df is at least n - 1, so its critical value c is at most Student's at
 * n - 1; its squared standard error S² = (s_x² + s_y²) / n is at most R = (Q_x + Q_y) / n, Q = Σ (x_i - mean)² /
 * (n - 1) around the true mean, with E R = 2 / (n - 1) and Var Q = 2 Σ_{i,j} phi^(2|i-j|) / (n - 1)² (Gaussian).
 * So for any r: P(|D| >= c S) >= P(|D| >= c sqrt(r)) - P(R > r), the last at most Var R / (Var R + (r - E R)²)
 * (Cantelli). The best r on a grid.
 */
function welchSizeOnAr1(n: number, phi: number, alpha: number): number {
  const c = studentTQuantile(1 - alpha / 2, n - 1)
  const sdD = Math.sqrt(2 * ar1MeanVariance(phi, n))
  let s2 = 0
  for (let i = 0; i < n; i++) for (let j = 0; j < n; j++) s2 += phi ** (2 * Math.abs(i - j))
  const varR = (2 * ((2 * s2) / (n - 1) ** 2)) / (n * n)
  const meanR = 2 / (n - 1)
  let best = 0
  for (let r = meanR * 1.01; r < meanR * 20; r += meanR / 100)
    best = Math.max(best, 2 * normalUpperTail((c * Math.sqrt(r)) / sdD) - varR / (varR + (r - meanR) ** 2))
  return best
}

test('on autocorrelated windows, Welch taking windows for independent samples is far too confident', (t) => {
  // 200 pairs of AR(1) series (phi 0.9, 5 % noise, 60 windows each) from one process: at alpha 0.05 a calibrated
  // test flags at most binomialAtMost(200, 0.05) of them. Welch's rate is at least welchSizeOnAr1 (above), and
  // the count at least the binomial bound of that: more than alpha could ever give. That is the mistake the block
  // bootstrap exists to avoid. Mann-Whitney's count is printed (no bound is derived for ranks of dependent data).
  const N = 200
  const size = welchSizeOnAr1(60, 0.9, 0.05)
  let welch = 0
  let mw = 0
  for (let s = 1; s <= N; s++) {
    const a = ar1(60, 1000, 0.05, 0.9, 10_000 + s)
    const b = ar1(60, 1000, 0.05, 0.9, 20_000 + s)
    if (welchTTest(a, b).pValue < 0.05) welch++
    if (mannWhitneyU(a, b).pValue < 0.05) mw++
  }
  const least = binomialAtLeast(N, size)
  t.diagnostic(`Welch ${welch}, Mann-Whitney ${mw} of ${N} identical pairs; Welch's rate at least ${size.toFixed(3)}`)
  assert.ok(least > binomialAtMost(N, 0.05), `the bound ${least} must exceed what alpha allows`)
  assert.ok(welch >= least, `Welch on windows false positives: ${welch} of ${N} (bound: at least ${least})`)
})

/**
 * The block bootstrap's p-value is only asymptotically valid: the size error of a block bootstrap test of a mean
 * shrinks as O(1/b + b/n) (Lahiri 2003), several percentage points at n = 60 windows. The stated bound is therefore
 * 2 alpha, not alpha; and because a comparison adjusts some twenty figures together (Benjamini-Hochberg), the small
 * p-values matter as much: P(p <= alpha/20) is held to 2 alpha/20 likewise.
 */
function bootstrapNull(seedBase: number, phi: number): { n: number; below: number; small: number } {
  const n = 400
  let below = 0
  let small = 0
  for (let s = 1; s <= n; s++) {
    const a = ar1(60, 1000, 0.05, phi, seedBase + 2 * s)
    const b = ar1(60, 1000, 0.05, phi, seedBase + 2 * s + 1)
    const p = blockBootstrapMeans([a], [b], { seed: s, replicates: 1000 }).pValue
    if (p < 0.05) below++
    if (p <= 0.05 / 20) small++
  }
  return { n, below, small }
}

function checkBootstrapNull(t: TestContext, r: { n: number; below: number; small: number }): void {
  const text =
    `p < 0.05 in ${r.below} of ${r.n} pairs (bound ${binomialAtMost(r.n, 0.1)}); ` +
    `p <= 0.0025 in ${r.small} (bound ${binomialAtMost(r.n, 0.005)})`
  t.diagnostic(text)
  assert.ok(r.below <= binomialAtMost(r.n, 0.1) && r.small <= binomialAtMost(r.n, 0.005), text)
}

test('independent windows, no change: the block bootstrap flags at most 2 alpha (2 alpha/20 below alpha/20)', (t) => {
  checkBootstrapNull(t, bootstrapNull(30_000, 0))
})

test(
  'autocorrelated windows (phi 0.7), no change: the block bootstrap flags at most 2 alpha (and 2 alpha/20 below ' +
    'alpha/20)',
  {
    todo:
      'the circular block bootstrap is liberal on 60 windows of AR(1) noise: its variance misses the ' +
      'autocovariance beyond the block, and the shifted percentile p has no small-sample correction',
  },
  (t) => {
    checkBootstrapNull(t, bootstrapNull(40_000, 0.7))
  },
)

test('finds a 5 % shift in autocorrelated windows at least as often as a test with the true standard error', (t) => {
  // The difference of the means of two AR(1) series (phi 0.7, 5 % noise, 60 windows) is exactly
  // N(-50, 50² x 2 v), v = ar1MeanVariance(0.7, 60): a two-sided test at 0.05 that knew its standard error would
  // find the shift with probability Φ(50 / sd - 1.96) + Φ(-50 / sd - 1.96). The bootstrap estimates the standard
  // error, and too small if anything (see above), which only raises its rejections; so that probability is the
  // rate the count is held to.
  const N = 100
  const sd = 50 * Math.sqrt(2 * ar1MeanVariance(0.7, 60))
  const power = normalCdf(50 / sd - 1.959964) + normalCdf(-50 / sd - 1.959964)
  let found = 0
  for (let s = 1; s <= N; s++) {
    const r = blockBootstrapMeans(
      [ar1(60, 1000, 0.05, 0.7, 50_000 + 2 * s)],
      [ar1(60, 950, 0.05, 0.7, 50_001 + 2 * s)],
      {
        seed: s,
      },
    )
    if (r.pValue < 0.05 && (r.relativeChange ?? 0) < 0) found++
  }
  const least = binomialAtLeast(N, power)
  t.diagnostic(`found ${found} of ${N}; power with the true standard error ${power.toFixed(3)}, bound ${least}`)
  assert.ok(found >= least, `detected ${found} of ${N} (bound ${least})`)
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
