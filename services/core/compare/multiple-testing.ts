/**
 * Many figures, one verdict people can trust. A release comparison tests
 * some thirty figures at once (throughput, avg, p50 ... max, error rate and
 * cache-hit ratio per operation); at a 0.05 level each, two identical
 * releases would show a "regression" somewhere in most comparisons. The
 * p-values of one comparison are therefore adjusted together with
 * Benjamini-Hochberg (1995), which keeps the expected share of false
 * findings among the reported ones at alpha, and, when nothing changed at
 * all, the chance of reporting anything at alpha too. It is less
 * conservative than Bonferroni or Holm, which matters when a real
 * regression moves several figures of one operation together (avg, p50, p99
 * all at once). Its guarantee holds for independent or positively dependent
 * tests, which is what figures of the same runs are.
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
