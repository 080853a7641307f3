/**
 * Synthetic series with known properties for the comparison statistics'
 * tests: Gaussian noise, steps and AR(1) (autocorrelated) noise, all from a
 * seeded PRNG so every test sees the same numbers on every run.
 */
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
  const rng = new Rng(seed)
  let e = relNoise * gaussian(rng)
  const out: number[] = []
  for (let i = 0; i < n; i++) {
    out.push(level * (1 + e))
    e = phi * e + Math.sqrt(1 - phi * phi) * relNoise * gaussian(rng)
  }
  return out
}
