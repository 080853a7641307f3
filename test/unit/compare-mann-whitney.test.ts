import assert from 'node:assert/strict'
import { test } from 'node:test'
import { mannWhitneyU, minimumTwoSidedP, type Alternative } from '../../services/core/compare/mann-whitney.js'
import { welchTTest } from '../../services/core/compare/welch-t-test.js'
import { isBenchstreamError } from '../../services/core/errors.js'

const close = (actual: number, expected: number, rel: number, what: string): void => {
  assert.ok(Math.abs(actual - expected) <= rel * Math.abs(expected), `${what}: ${actual} vs ${expected}`)
}

// ClickHouse's own test data (tests/queries/0_stateless/01560_mann_whitney.sql): sample 0 and sample 1.
const CH_X = [310, 195, 530, 155, 530, 245, 385, 450, 465, 545, 170, 180, 125, 180, 230, 75, 430, 480, 495, 295]
const CH_Y = [116, 171, 176, 421, 111, 326, 481, 111, 346, 441, 261, 411, 206, 521, 456, 446, 296, 51, 426, 261]

test("normal approximation reproduces ClickHouse's mannWhitneyUTest results", () => {
  // Expected output of 01560_mann_whitney: (223, 0.5426959774289482), default two-sided with continuity correction.
  const r = mannWhitneyU(CH_X, CH_Y, { method: 'normal' })
  assert.equal(r.u, 223)
  close(r.pValue, 0.5426959774289482, 1e-12, 'two-sided p')
  // ClickHouse's documentation example: mannWhitneyUTest('greater') on (10,11,12) vs (1,2,3) = (9,
  // 0.04042779918503192).
  const g = mannWhitneyU([10, 11, 12], [1, 2, 3], { alternative: 'greater', method: 'normal' })
  assert.equal(g.u, 9)
  close(g.pValue, 0.04042779918503192, 1e-9, "'greater' p")
  // 'less' on the same data is the other tail; the statistic stays U_x.
  const l = mannWhitneyU([10, 11, 12], [1, 2, 3], { alternative: 'less', method: 'normal' })
  assert.equal(l.u, 9)
  assert.ok(l.pValue > 0.95)
})

test('continuity correction off changes the normal p-value as ClickHouse parameter 2 = 0 does', () => {
  // z = (9 - 4.5) / sqrt(9*7/12); 1 - Φ(z) from mpmath.
  const r = mannWhitneyU([10, 11, 12], [1, 2, 3], {
    alternative: 'greater',
    method: 'normal',
    continuityCorrection: false,
  })
  close(r.pValue, 0.02476730671781337, 1e-12, 'p without correction')
})

test('exact p-values of complete separation: 2 / C(n1+n2, n1)', () => {
  assert.equal(mannWhitneyU([1, 2, 3], [4, 5, 6]).pValue, 0.1)
  assert.equal(mannWhitneyU([1, 2, 3, 4, 5], [6, 7, 8, 9, 10]).pValue, 2 / 252)
  assert.equal(mannWhitneyU([1, 2, 3, 4, 5], [6, 7, 8, 9, 10]).method, 'exact')
  assert.equal(minimumTwoSidedP(3, 3), 0.1)
  close(minimumTwoSidedP(3, 4), 2 / 35, 1e-15, 'min p 3+4')
  close(minimumTwoSidedP(4, 4), 2 / 70, 1e-15, 'min p 4+4')
})

/** The exact p-value by definition: every split of the pooled values into n1 + n2 is equally likely. */
function bruteForceP(x: number[], y: number[], alternative: Alternative): number {
  const all = [...x, ...y]
  const n = all.length
  const uOf = (xs: number[], ys: number[]): number => {
    let u = 0
    for (const a of xs) for (const b of ys) u += a > b ? 1 : a === b ? 0.5 : 0
    return u
  }
  const observed = uOf(x, y)
  let ge = 0
  let le = 0
  let total = 0
  for (let mask = 0; mask < 1 << n; mask++) {
    let bits = 0
    for (let i = 0; i < n; i++) if (mask & (1 << i)) bits++
    if (bits !== x.length) continue
    const xs = all.filter((_, i) => (mask & (1 << i)) !== 0)
    const ys = all.filter((_, i) => (mask & (1 << i)) === 0)
    const u = uOf(xs, ys)
    total++
    if (u >= observed - 1e-9) ge++
    if (u <= observed + 1e-9) le++
  }
  if (alternative === 'greater') return ge / total
  if (alternative === 'less') return le / total
  return Math.min(1, (2 * Math.min(ge, le)) / total)
}

test('exact distribution with ties equals brute-force enumeration of all splits', () => {
  const cases: Array<[number[], number[]]> = [
    [
      [1, 2, 2, 3],
      [2, 3, 3, 4, 5],
    ],
    [
      [5, 5, 5],
      [5, 6, 7, 7],
    ],
    [
      [10, 12, 12, 15, 20, 20],
      [9, 12, 14, 20, 21],
    ],
    [
      [3, 1, 4, 1, 5],
      [9, 2, 6, 5, 3, 5],
    ],
  ]
  for (const [x, y] of cases) {
    for (const alt of ['two-sided', 'less', 'greater'] as const) {
      const ours = mannWhitneyU(x, y, { method: 'exact', alternative: alt }).pValue
      close(ours, bruteForceP(x, y, alt), 1e-12, `${JSON.stringify(x)} vs ${JSON.stringify(y)} ${alt}`)
    }
  }
})

test('auto picks exact up to 100 values in all, normal above', () => {
  const x = Array.from({ length: 50 }, (_, i) => i)
  const y = Array.from({ length: 50 }, (_, i) => i + 0.5)
  assert.equal(mannWhitneyU(x, y).method, 'exact')
  assert.equal(mannWhitneyU([...x, 100], y).method, 'normal')
  // On the 20 + 20 ClickHouse data the exact and approximate p agree to 1e-3.
  assert.ok(Math.abs(mannWhitneyU(CH_X, CH_Y).pValue - 0.5426959774289482) < 1e-3)
})

test('all values equal: p = 1 two-sided, 0.5 one-sided, as current ClickHouse', () => {
  assert.equal(mannWhitneyU([4, 4, 4], [4, 4], { method: 'normal' }).pValue, 1)
  assert.equal(mannWhitneyU([4, 4, 4], [4, 4], { method: 'normal', alternative: 'greater' }).pValue, 0.5)
  assert.equal(mannWhitneyU([4, 4, 4], [4, 4], { method: 'exact' }).pValue, 1)
})

test('non-finite samples are rejected with BS_ERR_BAD_REQUEST', () => {
  assert.throws(
    () => mannWhitneyU([1, Number.NaN], [2]),
    (e: unknown) => isBenchstreamError(e, 'BS_ERR_BAD_REQUEST'),
  )
})

test("Welch's t-test reproduces ClickHouse's welchTTest documentation example", () => {
  // welchTTest(0.95) on (20.3, 22.1, 21.9) vs (18.9, 20.3, 19):
  // (2.7988719532211235, 0.05180736034858519, -0.026294346671631885, 4.092961013338302).
  // ClickHouse uses running sums; we agree to ~1e-12, and with mpmath to ~1e-15.
  const r = welchTTest([20.3, 22.1, 21.9], [18.9, 20.3, 19], 0.95)
  close(r.t, 2.7988719532211235, 1e-9, 't')
  close(r.pValue, 0.051807360348581945, 1e-9, 'p')
  close(r.ci?.low ?? 0, -0.026294346671631885, 1e-7, 'ci low')
  close(r.ci?.high ?? 0, 4.092961013338302, 1e-9, 'ci high')
  close(r.t, 2.7988719532208535, 1e-14, 't vs mpmath')
  close(r.df, 3.799904002425202, 1e-14, 'df vs mpmath')
  close(r.pValue, 0.05180736034859955, 1e-13, 'p vs mpmath')
})

test("Welch's t-test is undefined below 2 values a side or with no variance at all", () => {
  assert.ok(Number.isNaN(welchTTest([1], [2, 3]).pValue))
  assert.ok(Number.isNaN(welchTTest([1, 1], [2, 2]).pValue))
  // One side constant is fine: the other carries the variance.
  assert.ok(welchTTest([1, 1, 1], [2, 2.1, 1.9]).pValue < 0.01)
})
