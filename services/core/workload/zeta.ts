/**
 * The normaliser of a Zipfian distribution (zipfian-generators.ts): exact for
 * small n, an Euler-Maclaurin tail beyond.
 */
// Zeta: the normaliser of a Zipfian distribution, sum_{i=1..n} 1/i^theta.

const ZETA_EXACT_LIMIT = 10_000
// Terms summed exactly before the Euler-Maclaurin tail starts; at 1000 the
// first dropped correction term is below 1e-25, far under double rounding.
export const ZETA_EM_HEAD = 1_000

/** sum_{i=st+1..n} 1/i^theta added to `initial` (YCSB's zetastatic). */
export function zetaRange(st: number, n: number, theta: number, initial: number): number {
  let sum = initial
  for (let i = st; i < n; i++) sum += 1 / Math.pow(i + 1, theta)
  return sum
}

/**
 * zeta(n, theta) = sum_{i=1..n} 1/i^theta. Exact summation for small n; above
 * that the first terms are summed and the rest is an Euler-Maclaurin
 * expansion, which agrees with exact summation to ~1e-13 and costs O(1000)
 * instead of O(n), so a Zipfian over 10^10 items is built in microseconds.
 */
export function zeta(n: number, theta: number): number {
  if (n <= ZETA_EXACT_LIMIT) return zetaRange(0, n, theta, 0)
  const m = ZETA_EM_HEAD
  const head = zetaRange(0, m - 1, theta, 0)
  const f = (x: number): number => Math.pow(x, -theta)
  const t1 = theta
  const t3 = theta * (theta + 1) * (theta + 2)
  const t5 = t3 * (theta + 3) * (theta + 4)
  // Odd derivatives of x^-theta, without their (negative) sign.
  const d1 = (x: number): number => t1 * Math.pow(x, -theta - 1)
  const d3 = (x: number): number => t3 * Math.pow(x, -theta - 3)
  const d5 = (x: number): number => t5 * Math.pow(x, -theta - 5)
  // n^(1-theta) - m^(1-theta), written with expm1 so theta near 1 keeps its digits.
  const integral =
    theta === 1 ? Math.log(n / m) : (Math.pow(m, 1 - theta) * Math.expm1((1 - theta) * Math.log(n / m))) / (1 - theta)
  // Bernoulli terms B2/2!, B4/4!, B6/6! = 1/12, -1/720, 1/30240 applied to f', f''', f^(5).
  const corrections = -(d1(n) - d1(m)) / 12 + (d3(n) - d3(m)) / 720 - (d5(n) - d5(m)) / 30240
  return head + integral + (f(m) + f(n)) / 2 + corrections
}
