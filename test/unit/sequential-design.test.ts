/**
 * Repetitions until decided (services/core/compare/sequential.ts): the
 * group-sequential design's error rates and power, proved on seeded samples
 * with bounds derived from the design, never read off a run
 * (docs/design/sequential.md).
 *
 * Samples: a figure of each run is a level times log-normal noise (10 % on the
 * log scale, as a busy machine's runs spread), one per repetition; each look
 * after a round compares the first r runs of each side with the verdict code
 * compare uses (verdict.ts compareFigure, Welch's t on logarithms, the
 * sequential design's test) and decides the figure as a sequential experiment
 * does (decideFigures: compare's verdict, else the equivalence test).
 *
 * - False positives under optional stopping: identical setups, a look after
 *   every round from 3 to 12. Testing each look at alpha (the naive rule)
 *   calls them different more often than alpha allows, beyond what chance
 *   explains; spending alpha over the looks (O'Brien-Fleming- or Pocock-type)
 *   stays within alpha. The count bounds are binomial quantiles at a 1e-6 tail.
 * - No change is proven only within minEffect: a change of exactly minEffect
 *   is called "no change" at most alpha of the time over all looks.
 * - Power: the detectable change the design reports for an undecided figure
 *   (80% power of the last look) is found at least 80% of the time by that
 *   look, and at least 80% - alpha of the time by the whole sequential
 *   procedure (which may stop early, falsely "unchanged", at most alpha of the
 *   time); a large change stops at the first look at least as often as the
 *   exact power bound of that look says.
 */
import assert from 'node:assert/strict'
import { test } from 'node:test'
import type { ComparedFigure } from '../../schemas/compare-api.v1.js'
import {
  alphaSpent,
  decideFigures,
  detectableChange,
  detectableDifference,
  equivalenceTest,
  figuresOf,
  lookAlpha,
  namesFigure,
  welchPowerLowerBound,
  type SequentialDesign,
  type SpendingFunction,
} from '../../services/core/compare/sequential.js'
import { compareFigure } from '../../services/core/compare/verdict.js'
import { Rng } from '../../services/core/workload/random.js'
import { gaussian } from './compare-synthetic.js'
import { binomialAtLeast, binomialAtMost, welchPowerThreeAndThree } from './stat-bounds.js'

const ALPHA = 0.05
/** Run-to-run spread of a figure, log scale. */
const SD = 0.1
const LEVEL = 1000

function design(spending: SpendingFunction, min = 3, max = 12): SequentialDesign {
  return { alpha: ALPHA, min, max, spending }
}

/** A compared row of one latency figure, as compareRuns makes it, from compare's verdict on the runs. */
function row(a: number[], b: number[], alpha: number, minEffect: number): ComparedFigure {
  const v = compareFigure(
    { runs: a },
    { runs: b },
    { direction: 'lower-is-better', alpha, minEffect, logScale: true, test: 'welch', replicates: 1 },
  )
  const side = (xs: number[]) => ({ center: null, spreadPercent: null, values: xs, n: xs.length, perClient: null })
  return {
    workload: 'workloada',
    op: 'SCAN',
    figure: 'p50',
    label: 'SCAN p50 (µs)',
    direction: 'lower-is-better',
    baseline: side(a),
    candidate: side(b),
    changePercent: v.relativeChange.median === null ? null : v.relativeChange.median * 100,
    verdict: v.verdict,
    samples: v.samples,
    method: v.method,
    pValue: v.pValue,
    adjustedPValue: v.pValue,
    effectPercent: null,
    ci: null,
    note: null,
    reason: v.reason,
    resolutionUs: 0,
    clientMedian: 0,
  }
}

/** The decision at one look of one figure, as a sequential experiment makes it. */
function decide(a: number[], b: number[], alpha: number, minEffect: number) {
  const d = decideFigures(
    { alpha, minEffect, figures: [row(a, b, alpha, minEffect)] },
    { round: a.length, stop: 'decided', detectable: false },
  )
  return d.figures[0]!
}

/** `trials` pairs of sides of `max` runs: baseline at LEVEL, candidate at LEVEL × e^shift, log-normal noise SD. */
function trialsOf(seed: number, trials: number, max: number, shift: number): Array<[number[], number[]]> {
  const rng = new Rng(seed)
  return Array.from({ length: trials }, () => {
    const a = Array.from({ length: max }, () => LEVEL * Math.exp(SD * gaussian(rng)))
    const b = Array.from({ length: max }, () => LEVEL * Math.exp(shift + SD * gaussian(rng)))
    return [a, b]
  })
}

/** Runs a look after each round min..max; returns the round it stopped at and the decision then (or undecided). */
function sequential(
  a: number[],
  b: number[],
  levelOf: (round: number) => number,
  min: number,
  max: number,
  minEffect: number,
): { round: number; decision: string } {
  for (let r = min; r <= max; r++) {
    const f = decide(a.slice(0, r), b.slice(0, r), levelOf(r), minEffect)
    if (f.decision !== 'undecided') return { round: r, decision: f.decision }
  }
  return { round: max, decision: 'undecided' }
}

test('the looks spend alpha exactly: each share positive, all of them adding up to alpha', () => {
  for (const spending of ['obrien-fleming', 'pocock'] as const)
    for (const [min, max] of [
      [3, 3],
      [3, 4],
      [3, 12],
      [5, 20],
      [3, 100],
    ] as const) {
      const d = design(spending, min, max)
      let sum = 0
      for (let r = min; r <= max; r++) {
        const a = lookAlpha(d, r)
        assert.ok(a > 0 && a < ALPHA + 1e-12, `${spending} ${min}..${max} look ${r}: ${a}`)
        sum += a
      }
      assert.ok(Math.abs(sum - ALPHA) < 1e-12, `${spending} ${min}..${max}: ${sum}`)
    }
  // A fixed number (min = max) is the one look at alpha; O'Brien-Fleming spends almost nothing early.
  assert.ok(Math.abs(lookAlpha(design('obrien-fleming', 6, 6), 6) - ALPHA) < 1e-12)
  assert.ok(alphaSpent('obrien-fleming', ALPHA, 0.25) < 1e-4)
  assert.ok(Math.abs(alphaSpent('pocock', ALPHA, 1) - ALPHA) < 1e-15)
  assert.throws(() => lookAlpha(design('pocock'), 2), RangeError)
  assert.throws(() => lookAlpha(design('pocock'), 13), RangeError)
})

test(
  'optional stopping on identical setups: testing every look at alpha exceeds alpha; spending it over the looks ' +
    "does not (O'Brien-Fleming- and Pocock-type)",
  () => {
    const TRIALS = 1000
    const samples = trialsOf(20261205, TRIALS, 12, 0)
    const called = (levelOf: (r: number) => number): number =>
      samples.filter(([a, b]) => {
        const s = sequential(a, b, levelOf, 3, 12, 0)
        return s.decision === 'regression' || s.decision === 'improvement'
      }).length
    const naive = called(() => ALPHA)
    const obf = called((r) => lookAlpha(design('obrien-fleming'), r))
    const pocock = called((r) => lookAlpha(design('pocock'), r))
    const bound = binomialAtMost(TRIALS, ALPHA)
    process.stdout.write(
      `# identical setups, looks after 3..12 runs, ${TRIALS} trials: naive ${naive}, O'Brien-Fleming ${obf}, ` +
        `Pocock ${pocock} called different; a rate of at most ${ALPHA} gives at most ${bound}\n`,
    )
    // A rate <= alpha would exceed `bound` with probability 1e-6: the naive rule's rate is above alpha.
    assert.ok(naive > bound, `naive: ${naive} of ${TRIALS}, not above ${bound}`)
    assert.ok(obf <= bound, `O'Brien-Fleming: ${obf} of ${TRIALS}, above ${bound}`)
    assert.ok(pocock <= bound, `Pocock: ${pocock} of ${TRIALS}, above ${bound}`)
  },
)

test('"no change" is proven within minEffect: a change of exactly minEffect is called unchanged at most alpha', () => {
  const TRIALS = 1000
  const minEffect = 0.1
  const samples = trialsOf(7, TRIALS, 12, Math.log1p(minEffect))
  for (const spending of ['obrien-fleming', 'pocock'] as const) {
    const unchanged = samples.filter(
      ([a, b]) => sequential(a, b, (r) => lookAlpha(design(spending), r), 3, 12, minEffect).decision === 'no change',
    ).length
    process.stdout.write(`# a change of exactly ${minEffect * 100}%, ${spending}: called unchanged ${unchanged}\n`)
    assert.ok(unchanged <= binomialAtMost(TRIALS, ALPHA), `${spending}: ${unchanged} of ${TRIALS}`)
  }
  // Far inside the margin, it is proven: 12 + 12 runs of 10 % noise pin a mean within ±4 % or so.
  const [a, b] = trialsOf(8, 1, 12, 0)[0]!
  assert.equal(decide(a, b, lookAlpha(design('obrien-fleming'), 12), 0.25).decision, 'no change')
})

test('the power bound agrees with the exact 3 + 3 power and is a lower bound of it', () => {
  for (const [delta, level, minDelta] of [
    [0.3, 0.05, 0],
    [0.5, 0.01, 0.05],
    [1, 0.0014, 0],
  ] as const) {
    const exact = welchPowerThreeAndThree(delta, SD * 1.5, level, minDelta, 200)
    const bound = welchPowerLowerBound(delta, SD * 1.5, 3, level, minDelta)
    assert.ok(bound <= exact + 1e-3, `delta ${delta}: bound ${bound} above exact ${exact}`)
    // Welch's df is 2 to 4 with 3 + 3 runs; the bound takes 2, so it is below, not far below, where power is high.
    assert.ok(exact < 0.5 || bound > exact - 0.2, `delta ${delta}: bound ${bound}, exact ${exact}`)
  }
  assert.ok(welchPowerLowerBound(0, SD, 12, 0.05) < 0.05)
  // Monotone in the change, and the detectable difference is where it reaches 80%.
  const d = detectableDifference(SD, 12, 0.01)
  assert.ok(Math.abs(welchPowerLowerBound(d, SD, 12, 0.01) - 0.8) < 1e-6)
  assert.ok(welchPowerLowerBound(d * 0.9, SD, 12, 0.01) < 0.8)
})

test(
  'power: the detectable change an undecided figure reports is found by its look at least 80% of the time, and by ' +
    'the whole sequential procedure at least 80% - alpha of the time',
  () => {
    const TRIALS = 1000
    const d = design('obrien-fleming')
    const last = lookAlpha(d, d.max)
    const minEffect = 0.01
    const delta = detectableDifference(SD, d.max, last, 0.8, Math.log1p(minEffect))
    const samples = trialsOf(99, TRIALS, d.max, delta)
    const atLast = samples.filter(([a, b]) => decide(a, b, last, minEffect).decision === 'regression').length
    const seq = samples.filter(
      ([a, b]) => sequential(a, b, (r) => lookAlpha(d, r), d.min, d.max, minEffect).decision === 'regression',
    ).length
    // What an undecided figure would say at that look, with the true noise: the same change.
    const reported = detectableChange([LEVEL, LEVEL * Math.exp(SD * Math.SQRT2)], [LEVEL, LEVEL], {
      level: last,
      minEffect,
      logScale: true,
    })
    process.stdout.write(
      `# a change of +${(Math.expm1(delta) * 100).toFixed(1)}% at ${SD * 100}% noise (the 80%-power change of the ` +
        `look after ${d.max} runs at ${last.toPrecision(2)}): that look finds it ${atLast}, the procedure ${seq} ` +
        `of ${TRIALS}\n`,
    )
    assert.ok(atLast >= binomialAtLeast(TRIALS, 0.8), `${atLast} of ${TRIALS}`)
    assert.ok(seq >= binomialAtLeast(TRIALS, 0.8 - ALPHA), `${seq} of ${TRIALS}`)
    assert.ok(reported !== null && reported.increasePercent > 0)
  },
)

test("a large change stops at the first look at least as often as that look's power bound says", () => {
  const TRIALS = 1000
  for (const spending of ['pocock', 'obrien-fleming'] as const) {
    const d = design(spending, 3, 8)
    const first = lookAlpha(d, 3)
    const shift = Math.log(3) // three times slower
    const bound = welchPowerLowerBound(shift, SD, 3, first, Math.log1p(0.01))
    const samples = trialsOf(spending === 'pocock' ? 11 : 12, TRIALS, 3, shift)
    const stopped = samples.filter(([a, b]) => decide(a, b, first, 0.01).decision === 'regression').length
    process.stdout.write(
      `# three times slower, ${spending}: decided at the first look (3 + 3 runs, level ${first.toPrecision(2)}) ` +
        `${stopped} of ${TRIALS}; bound ${bound.toFixed(3)}\n`,
    )
    assert.ok(stopped >= binomialAtLeast(TRIALS, bound), `${spending}: ${stopped}`)
  }
  assert.ok(welchPowerLowerBound(Math.log(3), SD, 3, lookAlpha(design('pocock', 3, 8), 3)) > 0.99)
})

test('equivalence test: margins on logarithms or around the mean, untestable cases say so', () => {
  const eq = equivalenceTest([100, 101, 99, 100], [100, 100.5, 99.5, 101], { minEffect: 0.1, logScale: true })
  assert.ok(eq.pValue !== null && eq.pValue < 1e-4)
  assert.ok(Math.abs(eq.high - Math.log(1.1)) < 1e-12 && Math.abs(eq.low - Math.log(0.9)) < 1e-12)
  assert.equal(equivalenceTest([1], [1, 2], { minEffect: 0.1, logScale: true }).pValue, null)
  // Zero spread: decided by the difference itself.
  assert.equal(equivalenceTest([5, 5, 5], [5, 5, 5], { minEffect: 0.01, logScale: false }).pValue, 0)
  assert.equal(equivalenceTest([5, 5, 5], [6, 6, 6], { minEffect: 0.01, logScale: false }).pValue, 1)
  // Identical values (an error rate of 0 in every run): no change at all, even around a mean of 0.
  assert.equal(equivalenceTest([0, 0, 0], [0, 0, 0, 0], { minEffect: 0.01, logScale: false }).pValue, 0)
  // Without minEffect nothing else can be proven unchanged.
  assert.equal(equivalenceTest([5, 5.1, 4.9], [5, 5.1, 4.9], { minEffect: 0, logScale: true }).pValue, 1)
  // Raw scale: the margin is ±m of the baseline's mean.
  const raw = equivalenceTest([0.9, 1, 1.1], [0.9, 1, 1.1], { minEffect: 0.5, logScale: false })
  assert.ok(Math.abs(raw.high - 0.5) < 1e-12)
})

test('figures named by label, unit optional, after an optional workload; names that match nothing say so', () => {
  const f = { workload: 'workloade', label: 'SCAN throughput (ops/s)' }
  for (const n of ['SCAN throughput', 'scan  throughput (ops/s)', 'workloade:SCAN throughput', 'e:SCAN throughput'])
    assert.ok(namesFigure(n, f), n)
  for (const n of ['workloada:SCAN throughput', 'SCAN p50', 'SCAN']) assert.ok(!namesFigure(n, f), n)
  assert.deepEqual(figuresOf(['e:SCAN p50', 'READ p99', 'workloada:x'], 'workloade'), ['e:SCAN p50', 'READ p99'])
  assert.equal(figuresOf(undefined, 'workloade'), undefined)

  const [a, b] = trialsOf(3, 1, 5, Math.log(2))[0]!
  const r = row(a, b, 0.05, 0.01)
  const d = decideFigures(
    { alpha: 0.05, minEffect: 0.01, figures: [r] },
    { figures: ['SCAN p5O', 'SCAN p50'], round: 5, stop: 'decided' },
  )
  assert.deepEqual(d.unknown, ['SCAN p5O (did you mean SCAN p50 (µs)?)'])
  assert.equal(d.decided, false, 'a name that matches nothing leaves the comparison undecided')
  assert.equal(d.figures[0]!.decision, 'regression')
  assert.match(d.figures[0]!.reason, /^regression \(\+\d/)
  // Undecided: says what it could have found.
  const [c, e] = trialsOf(4, 1, 3, 0)[0]!
  const u = decideFigures(
    { alpha: 0.001, minEffect: 0.01, figures: [row(c, e, 0.001, 0.01)] },
    { round: 3, stop: 'max' },
  )
  assert.equal(u.figures[0]!.decision, 'undecided')
  assert.ok(u.figures[0]!.detectable !== null && u.figures[0]!.detectable.increasePercent > 1)
  assert.match(u.figures[0]!.reason, /could have found \+[\d.]+% or -[\d.]+% with 80% power/)
})
