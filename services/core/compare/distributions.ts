/**
 * The standard normal and Student's t, written out (the core imports no
 * third-party code but typebox) to agree with ClickHouse's Boost.Math to many
 * digits: erfc within 1e-13 relative, the t tails within 1e-12
 * (test/unit/compare-distributions.test.ts; docs/design/statistical-tests.md).
 */

const SQRT_PI = Math.sqrt(Math.PI)
const SQRT2 = Math.SQRT2
// Below this, erf's Taylor-type series converges quickly and without
// cancellation; above, the continued fraction of erfc does.
const ERF_SERIES_LIMIT = 2.5
const MAX_ITERATIONS = 10_000
const EPS = 1e-16
const TINY = 1e-300

/**
 * erfc(x) = 1 - erf(x), computed without the cancellation of `1 - erf(x)`
 * for large x (where the value is tiny).
 */
export function erfc(x: number): number {
  if (Number.isNaN(x)) return Number.NaN
  if (x < 0) return 2 - erfc(-x)
  if (x < ERF_SERIES_LIMIT) return 1 - erfSeries(x)
  return erfcContinuedFraction(x)
}

// erf(x) = 2/sqrt(pi) * exp(-x^2) * sum_{n>=0} 2^n x^(2n+1) / (1*3*...*(2n+1)):
// all terms positive, so no cancellation (Abramowitz and Stegun 7.1.6).
function erfSeries(x: number): number {
  const x2 = x * x
  let term = x
  let sum = x
  for (let n = 1; n < MAX_ITERATIONS; n++) {
    term *= (2 * x2) / (2 * n + 1)
    sum += term
    if (term < sum * EPS) break
  }
  return (2 / SQRT_PI) * Math.exp(-x2) * sum
}

// erfc(x) = exp(-x^2)/sqrt(pi) * 1/(x + (1/2)/(x + 1/(x + (3/2)/(x + 2/(x + ...)))))
// (A&S 7.1.14), evaluated with the modified Lentz algorithm.
function erfcContinuedFraction(x: number): number {
  let f = x
  let c = x
  let d = 0
  for (let k = 1; k < MAX_ITERATIONS; k++) {
    const a = k / 2
    d = x + a * d
    d = Math.abs(d) < TINY ? TINY : d
    c = x + a / c
    c = Math.abs(c) < TINY ? TINY : c
    d = 1 / d
    const delta = c * d
    f *= delta
    if (Math.abs(delta - 1) < EPS) break
  }
  return Math.exp(-x * x) / SQRT_PI / f
}

/** Standard normal cumulative distribution function Φ(z). */
export function normalCdf(z: number): number {
  return 0.5 * erfc(-z / SQRT2)
}

/** Upper tail 1 - Φ(z), accurate also where Φ(z) is close to 1. */
export function normalUpperTail(z: number): number {
  return 0.5 * erfc(z / SQRT2)
}

// Lanczos approximation (g = 7, 9 terms), about 1e-15 relative for x > 0.
const LANCZOS = [
  0.99999999999980993, 676.5203681218851, -1259.1392167224028, 771.32342877765313, -176.61502916214059,
  12.507343278686905, -0.13857109526572012, 9.9843695780195716e-6, 1.5056327351493116e-7,
]

/** ln Γ(x) for x > 0. */
export function logGamma(x: number): number {
  if (x < 0.5) return Math.log(Math.PI / Math.abs(Math.sin(Math.PI * x))) - logGamma(1 - x)
  const z = x - 1
  let a = LANCZOS[0] ?? 0
  const t = z + 7.5
  for (let i = 1; i < LANCZOS.length; i++) a += (LANCZOS[i] ?? 0) / (z + i)
  return 0.5 * Math.log(2 * Math.PI) + (z + 0.5) * Math.log(t) - t + Math.log(a)
}

/**
 * Regularized incomplete beta function I_x(a, b): the continued fraction of
 * Numerical Recipes (6.4), with the symmetry I_x(a,b) = 1 - I_{1-x}(b,a)
 * where the fraction converges slowly.
 */
export function incompleteBeta(x: number, a: number, b: number): number {
  if (Number.isNaN(x) || Number.isNaN(a) || Number.isNaN(b)) return Number.NaN
  if (x <= 0) return 0
  if (x >= 1) return 1
  const lnFront = logGamma(a + b) - logGamma(a) - logGamma(b) + a * Math.log(x) + b * Math.log1p(-x)
  if (x < (a + 1) / (a + b + 2)) return (Math.exp(lnFront) * betaContinuedFraction(x, a, b)) / a
  return 1 - (Math.exp(lnFront) * betaContinuedFraction(1 - x, b, a)) / b
}

function betaContinuedFraction(x: number, a: number, b: number): number {
  const qab = a + b
  const qap = a + 1
  const qam = a - 1
  let c = 1
  let d = 1 - (qab * x) / qap
  d = Math.abs(d) < TINY ? TINY : d
  d = 1 / d
  let h = d
  for (let m = 1; m < MAX_ITERATIONS; m++) {
    const m2 = 2 * m
    let aa = (m * (b - m) * x) / ((qam + m2) * (a + m2))
    d = 1 + aa * d
    d = Math.abs(d) < TINY ? TINY : d
    c = 1 + aa / c
    c = Math.abs(c) < TINY ? TINY : c
    d = 1 / d
    h *= d * c
    aa = (-(a + m) * (qab + m) * x) / ((a + m2) * (qap + m2))
    d = 1 + aa * d
    d = Math.abs(d) < TINY ? TINY : d
    c = 1 + aa / c
    c = Math.abs(c) < TINY ? TINY : c
    d = 1 / d
    const delta = d * c
    h *= delta
    if (Math.abs(delta - 1) < EPS) break
  }
  return h
}

/**
 * P(|T| >= |t|) for Student's t with `df` degrees of freedom (df may be
 * fractional, as Welch's is): I_{df/(df+t^2)}(df/2, 1/2), which needs no
 * `1 - cdf` and so stays accurate for tiny p-values.
 */
export function studentTTwoSided(t: number, df: number): number {
  if (Number.isNaN(t) || !(df > 0)) return Number.NaN
  if (!Number.isFinite(t)) return 0
  return incompleteBeta(df / (df + t * t), df / 2, 0.5)
}

/** Student's t cumulative distribution function P(T <= t). */
export function studentTCdf(t: number, df: number): number {
  const tail = studentTTwoSided(t, df) / 2
  return t > 0 ? 1 - tail : tail
}

/**
 * The t with P(T <= t) = p, for 0 < p < 1: bisection on the monotone
 * two-sided tail (100 halvings of [0, 1e8] or of the bracket found by
 * doubling; far below the precision anyone reads a confidence bound with).
 */
export function studentTQuantile(p: number, df: number): number {
  if (!(p > 0 && p < 1) || !(df > 0)) return Number.NaN
  if (p === 0.5) return 0
  const tail = 2 * Math.min(p, 1 - p)
  let hi = 1
  while (studentTTwoSided(hi, df) > tail && hi < 1e8) hi *= 2
  let lo = 0
  for (let i = 0; i < 200 && hi - lo > 1e-15 * hi; i++) {
    const mid = (lo + hi) / 2
    if (studentTTwoSided(mid, df) > tail) lo = mid
    else hi = mid
  }
  const t = (lo + hi) / 2
  return p < 0.5 ? -t : t
}
