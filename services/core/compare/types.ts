/**
 * Shapes shared by the release-comparison statistics (verdict, throttled runs,
 * formatting). Plain types only, so every module of services/core/compare/
 * can import them without pulling in another module's code.
 */

/**
 * Which way is good for a figure: throughput is `higher-is-better`,
 * latencies and error counts are `lower-is-better`. The statistics are the
 * same either way; only the label of a significant change (regression or
 * improvement) depends on it.
 */
export type Direction = 'higher-is-better' | 'lower-is-better'

/**
 * The verdict on one figure. `insufficient data` is returned instead of a
 * guess when neither repetitions nor per-window samples are enough to test
 * (see verdict.ts for the thresholds).
 */
export type VerdictKind = 'regression' | 'improvement' | 'no significant change' | 'insufficient data'

/**
 * How the p-value was obtained: repetitions as samples (`mann-whitney-u-exact`,
 * `mann-whitney-u-normal`, or `welch-t` where Mann-Whitney's smallest p cannot survive the adjustment),
 * per-window samples (`circular-block-bootstrap`), or `none`
 * (docs/design/verdicts.md#which-samples-and-why).
 */
export type TestMethod =
  | 'mann-whitney-u-exact'
  | 'mann-whitney-u-normal'
  | 'welch-t'
  | 'circular-block-bootstrap'
  | 'none'

/** Center and spread of one side, over the samples the test used. */
export interface SideSummary {
  /** Number of samples (runs, or windows over all runs of the side). */
  n: number
  /** Number of runs behind the samples. */
  runs: number
  median: number
  mean: number
  /** Sample standard deviation (n - 1 in the denominator); 0 when n < 2. */
  stddev: number
  min: number
  max: number
  /**
   * Largest distance of a sample from the median, in percent of the median:
   * every sample lies within ± this much of the median. benchstat's old `±`
   * without its outlier removal (we do not want to hide a noisy run).
   * null when the median is 0.
   */
  spreadPercent: number | null
}
