/**
 * Synthetic series with known properties for the comparison and alert
 * statistics' tests: Gaussian noise, steps, AR(1) (autocorrelated) noise,
 * operation mixes and per-window p99s of log-normal latencies, all from a
 * seeded PRNG so every test sees the same numbers on every run.
 */
import { Histogram } from '../../services/core/stats/histogram.js'
import { Rng } from '../../services/core/workload/random.js'

/** Standard normal draws (Box-Muller). */
export function gaussian(rng: Rng): number {
  const u = 1 - rng.next() // (0, 1]: log(0) is not allowed
  const v = rng.next()
  return Math.sqrt(-2 * Math.log(u)) * Math.cos(2 * Math.PI * v)
}

/** `n` values of `level` × (1 + relNoise × N(0,1)). */
export function noisy(n: number, level: number, relNoise: number, seed: number): number[] {
  const rng = new Rng(seed)
  return Array.from({ length: n }, () => level * (1 + relNoise * gaussian(rng)))
}

/**
 * AR(1) series around `level`: e_t = phi e_{t-1} + sqrt(1 - phi^2) relNoise N(0,1),
 * value = level (1 + e_t), so the marginal spread is relNoise whatever phi is
 * and consecutive values are correlated with coefficient phi (a slow second
 * followed by another slow second). Starts from the stationary distribution.
 */
export function ar1(n: number, level: number, relNoise: number, phi: number, seed: number): number[] {
  return ar1Noise(new Rng(seed), n, relNoise, phi).map((e) => level * (1 + e))
}

/** The noise e_t of ar1() from a given PRNG: stationary AR(1), marginal standard deviation `sd`, coefficient phi. */
export function ar1Noise(rng: Rng, n: number, sd: number, phi: number): number[] {
  let e = sd * gaussian(rng)
  const out: number[] = []
  for (let i = 0; i < n; i++) {
    out.push(e)
    e = phi * e + Math.sqrt(1 - phi * phi) * sd * gaussian(rng)
  }
  return out
}

/** How many of `total` operations fall to each kind, each drawn independently with probabilities `shares`. */
export function multinomial(rng: Rng, total: number, shares: readonly number[]): number[] {
  const counts = shares.map(() => 0)
  for (let i = 0; i < total; i++) {
    let u = rng.next()
    let k = 0
    while (k < shares.length - 1 && u >= shares[k]!) u -= shares[k++]!
    counts[k]!++
  }
  return counts
}

/**
 * The p99 of one window of `count` operations whose latencies are log-normal
 * (median `medianUs`, log standard deviation `logSd`) plus `addUs`, as the
 * store reports it: HDR histogram buckets, rank 0.99 n rounded half up, so
 * for a few dozen operations the largest or second largest of them. null
 * without operations.
 */
export function windowP99(rng: Rng, count: number, medianUs: number, logSd: number, addUs = 0): number | null {
  if (count === 0) return null
  const h = new Histogram()
  for (let i = 0; i < count; i++) h.record(Math.max(1, Math.round(medianUs * Math.exp(logSd * gaussian(rng)) + addUs)))
  return h.quantile(0.99)
}
