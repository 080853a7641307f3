/**
 * The verdict on one figure of release A (baseline) vs B (candidate):
 * regression, improvement, no significant change or insufficient data, with
 * p-value, effect, interval, n and method, as benchstat reports them. Samples
 * are repetitions (>= 3 runs a side: Mann-Whitney where its smallest p can
 * survive the adjustment of a whole comparison, else Welch on logarithms),
 * else windows (block bootstrap); changes under `minEffect` are not called.
 * Why each choice: docs/design/verdicts.md.
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
  /**
   * Which test repetitions get: `auto` (Mann-Whitney where its smallest p can survive the adjustment, else Welch) or
   * `welch` (Welch's t always: the sequential design's test, whose power is computable; sequential.ts). @default auto
   */
  test?: 'auto' | 'welch'
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
/**
 * Mann-Whitney is used only when its smallest two-sided p is at most alpha / MW_FAMILY_DIVISOR: a change of one
 * operation moves its six latency figures together, and Benjamini-Hochberg over a comparison's ~25 figures finds
 * those six when each p <= 6 alpha / 25, about alpha / 4. With fewer runs (4 + 4 at alpha 0.05: smallest p 0.029)
 * no single operation's change could ever be found, however large.
 */
const MW_FAMILY_DIVISOR = 4
const DEFAULTS = {
  alpha: 0.05,
  minEffect: 0.01,
  confidenceLevel: 0.95,
  minWindows: 10,
  replicates: 2000,
  seed: 1,
  logScale: false,
  test: 'auto' as 'auto' | 'welch',
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
    test: options.test ?? DEFAULTS.test,
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
  const useMannWhitney = o.test === 'auto' && minimumTwoSidedP(a.length, b.length) <= o.alpha / MW_FAMILY_DIVISOR
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
    o.test === 'welch'
      ? "Welch's t asked for: the sequential design's test"
      : `Mann-Whitney's smallest p with so few, ${minimumTwoSidedP(a.length, b.length).toFixed(3)}, ` +
        "cannot survive the adjustment over a comparison's figures " +
        `(it needs ${(o.alpha / MW_FAMILY_DIVISOR).toFixed(4)})`
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
