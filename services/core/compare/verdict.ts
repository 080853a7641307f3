/**
 * The verdict on one figure of release A (baseline) vs release B (candidate):
 * `regression`, `improvement` or `no significant change`, with the p-value,
 * the effect (relative change of medians and of means), a confidence interval
 * of the relative change, the sample sizes and the method, in the spirit of
 * Go's benchstat (significance level 0.05, `~` when not significant, n shown
 * for each side).
 *
 * Which samples, and why:
 * 1. Repetitions: when each side has at least 3 runs, each run's figure is one
 *    sample. Runs are independent, so classic tests apply:
 *    - Mann-Whitney U (benchstat's test; ranks, so robust to an outlier run),
 *      exact for small samples. Its effect is the relative change of medians,
 *      with a bootstrap percentile interval (independent resampling).
 *    - Welch's t-test when Mann-Whitney cannot reach alpha with so few runs
 *      (3 + 3 runs: its smallest possible two-sided p is 0.1 > 0.05, so it
 *      could never report anything). Its effect is the relative change of
 *      means, with Welch's interval of the difference divided by the
 *      baseline mean. It assumes roughly normal run-to-run noise; the
 *      output says which test ran.
 * 2. Windows: with fewer repetitions, the per-window figures of the runs
 *    (steady-state windows only; the caller drops warm-up) are the samples.
 *    Consecutive windows are correlated, so a circular block bootstrap of the
 *    difference in means is used (block-bootstrap.ts); at least
 *    `minWindows` windows per side are needed.
 * 3. Otherwise: `insufficient data`, never a guess.
 *
 * Minimum effect: a change that is statistically significant but smaller than
 * `minEffect` (default 1 %) is reported as `no significant change`, with
 * `belowMinEffect` set and the reason saying so. With many windows even a
 * 0.2 % shift becomes "significant", and nobody should chase it: run-to-run
 * differences of about 1 % come from machine placement, memory layout and
 * clock behaviour, not from the release.
 *
 * Ratio-scale figures (`logScale`: latencies, throughput): with 3 + 3 runs
 * the t-test runs on the logarithms of the runs' figures, and its effect is
 * the ratio of their geometric means. A release changes such a figure by a
 * factor, and a loaded machine's run-to-run noise is a factor too: on the
 * raw scale one run whose scans waited 16 ms instead of 8 ms has so much
 * weight that 3 runs at 8-16 ms against 3 at 0.05 ms gave p = 0.064 (Welch's
 * df falls to about 2); on logarithms that is p < 0.001, which is what
 * anyone reading the numbers sees. Needs every sample > 0 (else raw scale);
 * Mann-Whitney is unchanged (ranks do not see the transform), and so are the
 * window bootstrap and the cross-check (ClickHouse is given raw values).
 *
 * Direction: the tests are symmetric; `direction` only decides whether a
 * significant change is a regression or an improvement.
 *
 * Cross-check: `crossCheck` holds ClickHouse-comparable results on the same
 * samples (baseline = ClickHouse's sample 0): `mannWhitneyUTest` (normal
 * approximation, continuity correction on, as ClickHouse's defaults) and
 * `welchTTest` (see mann-whitney.ts and welch-t-test.ts for the definitions).
 * On windows they ignore autocorrelation and are shown for reference only.
 */
import { Rng } from '../workload/random.js'
import { blockBootstrapMeans } from './block-bootstrap.js'
import { mannWhitneyU, minimumTwoSidedP, type MannWhitneyResult } from './mann-whitney.js'
import {
  mean,
  median,
  quantileSorted,
  relativeChange,
  requireFinite,
  requireHalfOpenRange,
  requireInt,
  requireOpenRange,
  summarize,
} from './sample-stats.js'
import type { Direction, SideSummary, TestMethod, VerdictKind } from './types.js'
import { welchTTest, type WelchResult } from './welch-t-test.js'

/** One side of a comparison: the figure of each run, and optionally each run's per-window figures. */
export interface FigureSamples {
  /** The figure of each run (e.g. its throughput over the steady state), one per repetition. */
  runs: readonly number[]
  /** The figure of each window of each run, steady-state windows only, one array per run. */
  windows?: ReadonlyArray<readonly number[]>
}

export interface VerdictOptions {
  direction: Direction
  /** Significance level. @default 0.05 (benchstat's) */
  alpha?: number
  /** Smallest relative change reported as a regression or improvement (0.01 = 1 %). @default 0.01 */
  minEffect?: number
  /** Level of the interval of the relative change. @default 0.95 */
  confidenceLevel?: number
  /** Fewest windows per side for the windows method. @default 10 */
  minWindows?: number
  /** Bootstrap replicates (interval of medians, block bootstrap). @default 2000 */
  replicates?: number
  /** PRNG seed of the bootstraps, for reproducible output. @default 1 */
  seed?: number
  /** Welch's t-test on the logarithms of positive samples (see the file comment). @default false */
  logScale?: boolean
}

export interface Verdict {
  verdict: VerdictKind
  direction: Direction
  /** What one sample is: a run, or a window of a run. */
  samples: 'repetitions' | 'windows' | 'none'
  method: TestMethod
  /** null when nothing was tested. */
  pValue: number | null
  alpha: number
  /** pValue < alpha, before the minimum-effect rule. */
  significant: boolean
  baseline: SideSummary
  candidate: SideSummary
  /**
   * (candidate - baseline) / |baseline| of the medians and of the means of the samples; null when the baseline's is 0.
   */
  relativeChange: { median: number | null; mean: number | null }
  /**
   * The change the verdict is about: medians for Mann-Whitney, means for the t-test and the bootstrap, geometric means
   * for the t-test on logarithms.
   */
  effect: { basis: 'median' | 'mean' | 'geometric mean'; relativeChange: number | null }
  /** Interval of effect.relativeChange. */
  ci: { level: number; low: number; high: number } | null
  minEffect: number
  /** Significant, but |effect| < minEffect: reported as no significant change. */
  belowMinEffect: boolean
  /** Block length of the block bootstrap, in windows; null for other methods. */
  blockLength: number | null
  /** ClickHouse-comparable tests on the same samples (see the file comment). */
  crossCheck: { mannWhitney: MannWhitneyResult; welch: WelchResult } | null
  /** One sentence: why this verdict. */
  reason: string
}

const MIN_REPETITIONS = 3
const DEFAULTS = {
  alpha: 0.05,
  minEffect: 0.01,
  confidenceLevel: 0.95,
  minWindows: 10,
  replicates: 2000,
  seed: 1,
  logScale: false,
}

/** Compares one figure of the candidate with the baseline's (see the file comment for the method). */
export function compareFigure(baseline: FigureSamples, candidate: FigureSamples, options: VerdictOptions): Verdict {
  // Field by field, so that an option passed as undefined takes its default.
  const o: Resolved = {
    direction: options.direction,
    alpha: options.alpha ?? DEFAULTS.alpha,
    minEffect: options.minEffect ?? DEFAULTS.minEffect,
    confidenceLevel: options.confidenceLevel ?? DEFAULTS.confidenceLevel,
    minWindows: options.minWindows ?? DEFAULTS.minWindows,
    replicates: options.replicates ?? DEFAULTS.replicates,
    seed: options.seed ?? DEFAULTS.seed,
    logScale: options.logScale ?? DEFAULTS.logScale,
  }
  requireOpenRange('alpha', o.alpha, 0, 1)
  requireOpenRange('confidenceLevel', o.confidenceLevel, 0, 1)
  requireHalfOpenRange('minEffect', o.minEffect, 0, 1)
  requireInt('minWindows', o.minWindows, 2, Number.MAX_SAFE_INTEGER)
  requireInt('replicates', o.replicates, 1, 1_000_000)
  requireFinite('baseline.runs', baseline.runs)
  requireFinite('candidate.runs', candidate.runs)

  if (baseline.runs.length >= MIN_REPETITIONS && candidate.runs.length >= MIN_REPETITIONS)
    return byRepetitions(baseline.runs, candidate.runs, o)
  const wa = (baseline.windows ?? []).filter((s) => s.length > 0)
  const wb = (candidate.windows ?? []).filter((s) => s.length > 0)
  const na = wa.reduce((n, s) => n + s.length, 0)
  const nb = wb.reduce((n, s) => n + s.length, 0)
  if (na >= o.minWindows && nb >= o.minWindows) return byWindows(wa, wb, o)
  const sa = na > 0 ? wa.flat() : [...baseline.runs]
  const sb = nb > 0 ? wb.flat() : [...candidate.runs]
  return {
    ...frame(sa, sb, Math.max(baseline.runs.length, wa.length), Math.max(candidate.runs.length, wb.length), o),
    verdict: 'insufficient data',
    samples: 'none',
    method: 'none',
    pValue: null,
    significant: false,
    effect: { basis: 'median', relativeChange: relativeChange(median(sa), median(sb)) },
    ci: null,
    belowMinEffect: false,
    blockLength: null,
    crossCheck: null,
    reason:
      `needs at least ${MIN_REPETITIONS} runs on each side (got ${baseline.runs.length} + ${candidate.runs.length}) ` +
      `or at least ${o.minWindows} windows on each side (got ${na} + ${nb})`,
  }
}

type Resolved = typeof DEFAULTS & VerdictOptions

/** The fields every verdict has, from the samples used. */
function frame(a: readonly number[], b: readonly number[], runsA: number, runsB: number, o: Resolved) {
  const baseline = summarize(a, runsA)
  const candidate = summarize(b, runsB)
  return {
    direction: o.direction,
    alpha: o.alpha,
    minEffect: o.minEffect,
    baseline,
    candidate,
    relativeChange: {
      median: relativeChange(baseline.median, candidate.median),
      mean: relativeChange(baseline.mean, candidate.mean),
    },
  }
}

function crossCheck(a: readonly number[], b: readonly number[]): Verdict['crossCheck'] {
  return { mannWhitney: mannWhitneyU(a, b, { method: 'normal', continuityCorrection: true }), welch: welchTTest(a, b) }
}

function byRepetitions(a: readonly number[], b: readonly number[], o: Resolved): Verdict {
  const base = frame(a, b, a.length, b.length, o)
  const useMannWhitney = minimumTwoSidedP(a.length, b.length) <= o.alpha
  if (useMannWhitney) {
    const mw = mannWhitneyU(a, b)
    const effect = base.relativeChange.median
    return decide(
      {
        ...base,
        samples: 'repetitions',
        method: mw.method === 'exact' ? 'mann-whitney-u-exact' : 'mann-whitney-u-normal',
        pValue: mw.pValue,
        effect: { basis: 'median', relativeChange: effect },
        ci: medianRatioInterval(a, b, o),
        blockLength: null,
        crossCheck: crossCheck(a, b),
      },
      `Mann-Whitney U on ${a.length} + ${b.length} runs`,
    )
  }
  const why =
    `Mann-Whitney cannot reach p < ${o.alpha} with so few; its minimum ` +
    `is ${minimumTwoSidedP(a.length, b.length).toFixed(3)}`
  if (o.logScale && [...a, ...b].every((x) => x > 0)) {
    // On logarithms: the difference of mean logs is the log of the ratio of geometric means.
    const w = welchTTest(b.map(Math.log), a.map(Math.log), o.confidenceLevel)
    return decide(
      {
        ...base,
        samples: 'repetitions',
        method: 'welch-t',
        pValue: Number.isNaN(w.pValue) ? null : w.pValue,
        effect: { basis: 'geometric mean', relativeChange: Math.expm1(w.difference) },
        ci: w.ci === null ? null : { level: w.ci.level, low: Math.expm1(w.ci.low), high: Math.expm1(w.ci.high) },
        blockLength: null,
        crossCheck: crossCheck(a, b),
      },
      `Welch's t-test on the logarithms of ${a.length} + ${b.length} runs (${why})`,
    )
  }
  const w = welchTTest(b, a, o.confidenceLevel)
  const ma = mean(a)
  const ci =
    w.ci === null || ma === 0
      ? null
      : { level: w.ci.level, low: w.ci.low / Math.abs(ma), high: w.ci.high / Math.abs(ma) }
  return decide(
    {
      ...base,
      samples: 'repetitions',
      method: 'welch-t',
      pValue: Number.isNaN(w.pValue) ? null : w.pValue,
      effect: { basis: 'mean', relativeChange: base.relativeChange.mean },
      ci,
      blockLength: null,
      crossCheck: crossCheck(a, b),
    },
    `Welch's t-test on ${a.length} + ${b.length} runs (${why})`,
  )
}

function byWindows(a: ReadonlyArray<readonly number[]>, b: ReadonlyArray<readonly number[]>, o: Resolved): Verdict {
  const fa = a.flat()
  const fb = b.flat()
  const base = frame(fa, fb, a.length, b.length, o)
  const bs = blockBootstrapMeans(a, b, { replicates: o.replicates, seed: o.seed, confidenceLevel: o.confidenceLevel })
  return decide(
    {
      ...base,
      samples: 'windows',
      method: 'circular-block-bootstrap',
      pValue: bs.pValue,
      effect: { basis: 'mean', relativeChange: base.relativeChange.mean },
      ci: bs.ci,
      blockLength: bs.blockLength,
      crossCheck: crossCheck(fa, fb),
    },
    `circular block bootstrap of the difference in means over ${fa.length} + ${fb.length} windows ` +
      `of ${a.length} + ${b.length} runs (block length ${bs.blockLength}, ${bs.replicates} replicates)`,
  )
}

type Undecided = Omit<Verdict, 'verdict' | 'significant' | 'belowMinEffect' | 'reason'>

/** Applies the significance level, the minimum effect and the direction. */
function decide(v: Undecided, how: string): Verdict {
  const p = v.pValue
  const rel = v.effect.relativeChange
  const basis = v.effect.basis === 'median' ? 'medians' : v.effect.basis === 'mean' ? 'means' : 'geometric means'
  if (p === null || rel === null) {
    const why =
      p === null
        ? 'the test is undefined (both sides have zero variance)'
        : `the baseline's ${v.effect.basis} is 0, so no relative change exists`
    return { ...v, verdict: 'insufficient data', significant: false, belowMinEffect: false, reason: `${how}: ${why}` }
  }
  const significant = p < v.alpha
  const pct = `${rel >= 0 ? '+' : ''}${(rel * 100).toFixed(2)}%`
  if (!significant)
    return {
      ...v,
      verdict: 'no significant change',
      significant,
      belowMinEffect: false,
      reason: `${how}: p=${fmtP(p)} is not below ${v.alpha} (change of ${basis} ${pct})`,
    }
  if (Math.abs(rel) < v.minEffect) {
    return {
      ...v,
      verdict: 'no significant change',
      significant,
      belowMinEffect: true,
      reason:
        `${how}: p=${fmtP(p)} is below ${v.alpha} but the change of ${basis} ${pct} is smaller than ` +
        `the minimum effect of ${(v.minEffect * 100).toFixed(2)}%`,
    }
  }
  const better = v.direction === 'higher-is-better' ? rel > 0 : rel < 0
  return {
    ...v,
    verdict: better ? 'improvement' : 'regression',
    significant,
    belowMinEffect: false,
    reason: `${how}: p=${fmtP(p)} < ${v.alpha}, change of ${basis} ${pct}`,
  }
}

function fmtP(p: number): string {
  return p < 0.001 ? p.toExponential(1) : p.toFixed(3)
}

/**
 * Percentile bootstrap interval of (median(b) - median(a)) / |median(a)|,
 * resampling runs independently (they are independent). With few runs it is
 * coarse (a median of 5 takes few distinct values) but honest about it.
 */
function medianRatioInterval(a: readonly number[], b: readonly number[], o: Resolved): Verdict['ci'] {
  const rng = new Rng(o.seed)
  const rels: number[] = []
  const sa = Array.from({ length: a.length }, () => 0)
  const sb = Array.from({ length: b.length }, () => 0)
  for (let r = 0; r < o.replicates; r++) {
    for (let i = 0; i < a.length; i++) sa[i] = a[rng.int(a.length)] ?? 0
    for (let i = 0; i < b.length; i++) sb[i] = b[rng.int(b.length)] ?? 0
    const rel = relativeChange(median(sa), median(sb))
    if (rel !== null) rels.push(rel)
  }
  if (rels.length === 0) return null
  rels.sort((x, y) => x - y)
  return {
    level: o.confidenceLevel,
    low: quantileSorted(rels, (1 - o.confidenceLevel) / 2),
    high: quantileSorted(rels, (1 + o.confidenceLevel) / 2),
  }
}
