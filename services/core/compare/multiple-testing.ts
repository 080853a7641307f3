/**
 * Benjamini-Hochberg adjustment of the p-values of one comparison: some thirty
 * figures at 0.05 each would otherwise find a "regression" between identical
 * releases most of the time. Why this one rather than Bonferroni or Holm:
 * docs/design/verdicts.md#many-figures-at-once.
 */
import { requireFinite } from './sample-stats.js'

/**
 * Benjamini-Hochberg adjusted p-values, in the input order: p_(i) * m / i
 * over the ascending order, made monotone from the largest down, at most 1
 * (R's p.adjust(p, "BH")). A figure is significant at level alpha when its
 * adjusted p-value is below alpha.
 */
export function benjaminiHochberg(pValues: readonly number[]): number[] {
  requireFinite('pValues', pValues)
  const m = pValues.length
  const order = pValues.map((p, i) => ({ p, i })).sort((a, b) => a.p - b.p || a.i - b.i)
  const adjusted = Array.from({ length: m }, () => 1)
  let running = 1
  for (let k = m - 1; k >= 0; k--) {
    const e = order[k]!
    running = Math.min(running, (e.p * m) / (k + 1))
    adjusted[e.i] = Math.min(1, running)
  }
  return adjusted
}
