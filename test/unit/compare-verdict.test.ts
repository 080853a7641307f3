import assert from 'node:assert/strict'
import { test } from 'node:test'
import { mannWhitneyU } from '../../services/core/compare/mann-whitney.js'
import { compareFigure } from '../../services/core/compare/verdict.js'
import { isBenchstreamError } from '../../services/core/errors.js'
import { ar1, noisy } from './compare-synthetic.js'

test('5 + 5 repetitions, throughput 10 % lower: regression by exact Mann-Whitney, p = 2/252', () => {
  const v = compareFigure(
    { runs: noisy(5, 10_000, 0.01, 1) },
    { runs: noisy(5, 9_000, 0.01, 2) },
    { direction: 'higher-is-better' },
  )
  assert.equal(v.verdict, 'regression')
  assert.equal(v.samples, 'repetitions')
  assert.equal(v.method, 'mann-whitney-u-exact')
  // Complete separation of 5 + 5: the smallest two-sided exact p.
  assert.equal(v.pValue, 2 / 252)
  assert.equal(v.baseline.n, 5)
  assert.equal(v.candidate.n, 5)
  assert.equal(v.effect.basis, 'median')
  const rel = v.effect.relativeChange ?? 0
  assert.ok(rel < -0.08 && rel > -0.12, `change of medians ${rel}`)
  assert.ok(v.ci !== null && v.ci.low <= rel && rel <= v.ci.high && v.ci.high < 0, JSON.stringify(v.ci))
  assert.match(v.reason, /Mann-Whitney U on 5 \+ 5 runs: p=0\.008/)
})

test('direction decides the label: the same change is an improvement when lower is better', () => {
  const v = compareFigure(
    { runs: noisy(5, 10_000, 0.01, 1) },
    { runs: noisy(5, 9_000, 0.01, 2) },
    { direction: 'lower-is-better' },
  )
  assert.equal(v.verdict, 'improvement')
  const p99 = compareFigure(
    { runs: noisy(6, 800, 0.02, 3) },
    { runs: noisy(6, 1000, 0.02, 4) },
    { direction: 'lower-is-better' },
  )
  assert.equal(p99.verdict, 'regression')
})

test("3 + 3 repetitions: Welch's t-test, because Mann-Whitney's smallest p would be 0.1", () => {
  const v = compareFigure(
    { runs: noisy(3, 10_000, 0.01, 1) },
    { runs: noisy(3, 9_000, 0.01, 2) },
    { direction: 'higher-is-better' },
  )
  assert.equal(v.method, 'welch-t')
  assert.equal(v.verdict, 'regression')
  assert.ok((v.pValue ?? 1) < 0.01, `p ${v.pValue}`)
  assert.equal(v.effect.basis, 'mean')
  assert.ok(v.ci !== null && v.ci.high < 0)
  assert.match(v.reason, /smallest p with so few, 0\.100, cannot survive the adjustment/)
})

test('no change: no significant change, with p well above alpha', () => {
  const v = compareFigure(
    { runs: noisy(5, 10_000, 0.01, 3) },
    { runs: noisy(5, 10_000, 0.01, 4) },
    { direction: 'higher-is-better' },
  )
  assert.equal(v.verdict, 'no significant change')
  assert.ok((v.pValue ?? 0) > 0.2, `p ${v.pValue}`)
  assert.equal(v.significant, false)
})

test('a significant change below the minimum effect is reported as no significant change, and says so', () => {
  // 30 + 30 runs, 0.5 % apart, 0.1 % noise: overwhelming evidence of a negligible change.
  const a = { runs: noisy(30, 10_000, 0.001, 5) }
  const b = { runs: noisy(30, 10_050, 0.001, 6) }
  const v = compareFigure(a, b, { direction: 'higher-is-better' })
  assert.equal(v.verdict, 'no significant change')
  assert.equal(v.significant, true)
  assert.equal(v.belowMinEffect, true)
  assert.ok((v.pValue ?? 1) < 1e-10)
  assert.match(v.reason, /smaller than the minimum effect of 1\.00%/)
  // With the threshold lowered to 0.1 % it is an improvement.
  const strict = compareFigure(a, b, { direction: 'higher-is-better', minEffect: 0.001 })
  assert.equal(strict.verdict, 'improvement')
  assert.equal(strict.belowMinEffect, false)
})

test('one run a side: per-window samples with the circular block bootstrap', () => {
  const base = { runs: [10_000], windows: [ar1(60, 10_000, 0.05, 0.7, 7)] }
  const v = compareFigure(
    base,
    { runs: [9_000], windows: [ar1(60, 9_000, 0.05, 0.7, 8)] },
    { direction: 'higher-is-better' },
  )
  assert.equal(v.verdict, 'regression')
  assert.equal(v.samples, 'windows')
  assert.equal(v.method, 'circular-block-bootstrap')
  assert.equal(v.baseline.n, 60)
  assert.equal(v.baseline.runs, 1)
  assert.ok((v.blockLength ?? 0) >= 3, `block length ${v.blockLength}`)
  assert.ok((v.pValue ?? 1) < 0.01)
  // Same process on both sides: no significant change.
  const same = compareFigure(
    base,
    { runs: [10_000], windows: [ar1(60, 10_000, 0.05, 0.7, 8)] },
    { direction: 'higher-is-better' },
  )
  assert.equal(same.verdict, 'no significant change')
  // Deterministic for a seed.
  assert.deepEqual(
    compareFigure(base, base, { direction: 'higher-is-better', seed: 3 }),
    compareFigure(base, base, { direction: 'higher-is-better', seed: 3 }),
  )
})

test('too little data: insufficient data, never a guess', () => {
  const v = compareFigure({ runs: [10_000] }, { runs: [9_000] }, { direction: 'higher-is-better' })
  assert.equal(v.verdict, 'insufficient data')
  assert.equal(v.method, 'none')
  assert.equal(v.pValue, null)
  assert.match(
    v.reason,
    /at least 3 runs on each side \(got 1 \+ 1\) or at least 10 windows on each side \(got 0 \+ 0\)/,
  )
  const fewWindows = compareFigure(
    { runs: [1], windows: [[1, 2, 3]] },
    { runs: [1], windows: [[1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11]] },
    { direction: 'higher-is-better' },
  )
  assert.equal(fewWindows.verdict, 'insufficient data')
  // Zero variance on both sides: the t-test is undefined.
  const flat = compareFigure({ runs: [5, 5, 5] }, { runs: [6, 6, 6] }, { direction: 'higher-is-better' })
  assert.equal(flat.verdict, 'insufficient data')
})

test('cross-check carries ClickHouse-comparable tests on the same samples', () => {
  const a = noisy(8, 100, 0.05, 21)
  const b = noisy(8, 104, 0.05, 22)
  const v = compareFigure({ runs: a }, { runs: b }, { direction: 'higher-is-better' })
  assert.deepEqual(v.crossCheck?.mannWhitney, mannWhitneyU(a, b, { method: 'normal' }))
  assert.ok(Number.isFinite(v.crossCheck?.welch.pValue))
})

test('invalid options are rejected', () => {
  const ok = { runs: [1, 2, 3] }
  assert.throws(
    () => compareFigure(ok, ok, { direction: 'higher-is-better', alpha: 0 }),
    (e: unknown) => isBenchstreamError(e, 'BS_ERR_BAD_REQUEST'),
  )
  assert.throws(
    () => compareFigure(ok, ok, { direction: 'higher-is-better', minEffect: -0.1 }),
    (e: unknown) => isBenchstreamError(e, 'BS_ERR_BAD_REQUEST'),
  )
  assert.throws(
    () => compareFigure({ runs: [1, Number.NaN, 3] }, ok, { direction: 'higher-is-better' }),
    (e: unknown) => isBenchstreamError(e, 'BS_ERR_BAD_REQUEST'),
  )
})
