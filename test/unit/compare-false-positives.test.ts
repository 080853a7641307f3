/**
 * How often a release comparison (compareRuns, services/core/compare/release.ts)
 * calls identical setups different, and how surely it finds a real change, on
 * seeded synthetic runs. Issue 19: these properties are proved here, with
 * bounds derived from the guarantees of the tests the comparison runs; the
 * e2e compare test only checks the wiring, with an effect far beyond noise.
 *
 * The runs (runFigures below) do READ, UPDATE and SCAN; every figure is a
 * level times multiplicative log-normal noise, as a busy machine's runs are:
 * - a run factor shared by every latency of the run (the machine was slower
 *   during that run), log standard deviation RUN_SD;
 * - an operation factor shared by avg, p50, p95, p99, p99.9 and max of one
 *   operation in one run, OP_SD;
 * - each figure's own noise, FIGURE_SD; in all every latency figure varies by
 *   LATENCY_SD = 10 % (log scale) from run to run, and the figures of one
 *   operation are correlated (0.5: they share the run and operation factors).
 * - Throughput, unthrottled: OVERALL moves with the inverse of the run factor,
 *   plus 2 %, and each operation's share by another 2 %. Throttled: every run
 *   meets its target, so the throughput rows are `at target`, not tests.
 * A comparison has a finding when any row is a regression, an improvement or
 * below target.
 */
import assert from 'node:assert/strict'
import { test } from 'node:test'
import type { ComparedFigure, ReleaseComparison } from '../../schemas/compare-api.v1.js'
import type { OpFigures, RunFigures, RunInfo, WindowFigures } from '../../schemas/runs-api.v1.js'
import { compareRuns } from '../../services/core/compare/release.js'
import { Rng } from '../../services/core/workload/random.js'
import { ar1Noise, gaussian } from './compare-synthetic.js'
import { binomialAtLeast, binomialAtMost, welchMissBoundThreeAndThree, welchPowerThreeAndThree } from './stat-bounds.js'

/** compareRuns' default significance level and minimum effect. */
const ALPHA = 0.05
const MIN_EFFECT = 0.01
const RUN_SD = 0.05
const OP_SD = 0.05
const LATENCY_SD = 0.1
const FIGURE_SD = Math.sqrt(LATENCY_SD ** 2 - RUN_SD ** 2 - OP_SD ** 2)
const SECONDS = 30
const TARGET = 2000
/** Operation, share of the operations, p50 in µs. */
const OPS = [
  ['READ', 0.5, 100],
  ['UPDATE', 0.3, 150],
  ['SCAN', 0.2, 800],
] as const
type Op = (typeof OPS)[number][0]
/** Each latency figure relative to the operation's p50. */
const SHAPE = { avgUs: 1.2, p50Us: 1, p95Us: 2.5, p99Us: 4, p999Us: 8, maxUs: 30 } as const
const LATENCY_FIGURES = ['avg', 'p50', 'p95', 'p99', 'p99.9', 'max']

interface Setup {
  /** Runs a side. */
  runs: number
  throttled?: boolean
  /** The candidate's latencies of this operation are `factor` times the baseline's. */
  slower?: { op: Op; factor: number }
  /** Per-window figures too (sides of fewer than 3 runs): this many windows a run, AR(1) coefficient phi. */
  windows?: { n: number; phi: number }
}

function runInfo(id: string, setup: Setup): RunInfo {
  return {
    run_id: id,
    started_at: `2026-12-03 10:00:${id.slice(1).padStart(2, '0')}.000000`,
    ended_at: '2026-12-03 10:01:00.000000',
    clients: 1,
    clients_ended: 1,
    threads: 8,
    target: setup.throttled === true ? TARGET : 0,
    labels: {},
    workload: 'workloada',
    binding: 'memory',
    sent: {},
    undelivered: 0,
    runtime_ms: SECONDS * 1000,
    window_ms: 1000,
    group_id: id.slice(0, 1),
    repeat: 0,
    properties: { recordcount: '1000', maxexecutiontime: String(SECONDS) },
    schedule_lag_max_ms: 0,
    behind_schedule_episodes: 0,
    expected_clients: 0,
    start_skew_ms: null,
    clock_offset_max_ms: null,
  }
}

function opFigures(op: string, o: Partial<OpFigures>): OpFigures {
  return {
    op,
    operations: 0,
    errors: 0,
    opsPerSec: 0,
    errorRate: 0,
    avgUs: null,
    minUs: 1,
    maxUs: null,
    p50Us: null,
    p90Us: null,
    p95Us: null,
    p99Us: null,
    p999Us: null,
    p9999Us: null,
    cacheHitRatio: null,
    ...o,
  }
}

/** One run's figures (see the file comment), and its windows when asked. */
function runFigures(
  id: string,
  rng: Rng,
  setup: Setup,
  slower: Setup['slower'],
): { run: RunFigures; windows: WindowFigures[] } {
  // A 1 + 1 comparison of windows tests whether two runs' windows come from the same process: no run factors.
  const runNoise = setup.windows === undefined ? 1 : 0
  const runFactor = runNoise * RUN_SD * gaussian(rng)
  const total =
    setup.throttled === true
      ? TARGET * (1 + 0.002 * Math.abs(gaussian(rng)))
      : 2000 * Math.exp(-runFactor + runNoise * 0.02 * gaussian(rng))
  const ops = [opFigures('OVERALL', { opsPerSec: total, operations: Math.round(total * SECONDS) })]
  const windows: WindowFigures[] = []
  for (const [op, share, p50] of OPS) {
    const level = p50 * (slower?.op === op ? slower.factor : 1) * Math.exp(runFactor + runNoise * OP_SD * gaussian(rng))
    const tp = setup.throttled === true ? total * share : total * share * Math.exp(runNoise * 0.02 * gaussian(rng))
    const f: Partial<OpFigures> = { opsPerSec: tp, operations: Math.round(tp * SECONDS) }
    for (const [key, m] of Object.entries(SHAPE))
      f[key as keyof typeof SHAPE] = level * m * Math.exp(FIGURE_SD * gaussian(rng))
    ops.push(opFigures(op, f))
    if (setup.windows !== undefined) {
      // Each window: the run's level times the window's own AR(1) factor (latency up, throughput down) and
      // FIGURE_SD per figure; windows 0 and n+1 are the partial ones compareRuns leaves out.
      const w = ar1Noise(rng, setup.windows.n + 2, 0.05, setup.windows.phi)
      w.forEach((e, k) => {
        const count = Math.round(tp * Math.exp(-e))
        const row: WindowFigures = {
          runId: id,
          tS: k,
          op,
          windowMs: 1000,
          operations: count,
          errors: 0,
          opsPerSec: count,
          errorRate: 0,
          avgUs: null,
          maxUs: null,
          p50Us: null,
          p95Us: null,
          p99Us: null,
          p999Us: null,
          cacheHitRatio: null,
        }
        for (const [key, m] of Object.entries(SHAPE))
          row[key as keyof typeof SHAPE] = level * m * Math.exp(e + FIGURE_SD * gaussian(rng))
        windows.push(row)
      })
    }
  }
  return { run: { runId: id, runtimeMs: SECONDS * 1000, ops, serverCache: [] }, windows }
}

/** Baseline A and candidate B of one seed, compared both ways. */
function compare(seed: number, setup: Setup): { ab: ReleaseComparison; ba: () => ReleaseComparison } {
  const rng = new Rng(seed)
  const ids = (side: string): string[] => Array.from({ length: setup.runs }, (_, i) => `${side}${i + 1}`)
  const a = ids('a').map((id) => runFigures(id, rng, setup, undefined))
  const b = ids('b').map((id) => runFigures(id, rng, setup, setup.slower))
  const sideA = { ref: 'group:a', runs: ids('a').map((id) => runInfo(id, setup)) }
  const sideB = { ref: 'group:b', runs: ids('b').map((id) => runInfo(id, setup)) }
  const figures = [...a, ...b].map((r) => r.run)
  const windows = [...a, ...b].flatMap((r) => r.windows)
  return {
    ab: compareRuns(sideA, sideB, figures, windows),
    ba: () => compareRuns(sideB, sideA, figures, windows),
  }
}

const FINDINGS = new Set<ComparedFigure['verdict']>(['regression', 'improvement', 'below target'])
const findings = (c: ReleaseComparison): ComparedFigure[] => c.figures.filter((f) => FINDINGS.has(f.verdict))
const pct = (k: number, n: number): string => `${k} of ${n} (${((100 * k) / n).toFixed(1)} %)`

test(
  '3 + 3 runs of identical setups, throttled or not: at most alpha of the comparisons have a finding ' +
    '(binomial bound)',
  (t) => {
    // Why alpha bounds each comparison:
    // - Every latency and throughput figure is tested by Welch's t on the logarithms of the runs' figures
    //   (verdict.ts; Mann-Whitney cannot reach 0.05 with 3 + 3), and here the logarithms are exactly normal with
    //   the same variance on both sides. With equal sample sizes Welch's statistic is Student's pooled t, which has
    //   exactly Student's distribution with 4 df under the null; Welch's df is at most 4, so its p-value is at
    //   least Student's: each test has size at most alpha.
    // - Benjamini-Hochberg at alpha: when nothing changed, "any rejection" is the Simes test, whose size is at most
    //   alpha for independent or positively dependent (PRDS) statistics (Benjamini and Hochberg 1995, Benjamini and
    //   Yekutieli 2001). The figures here are positively dependent (shared run and operation factors; throughput
    //   through the inverse), and the tests are two-sided: for |t| of correlated normal statistics Simes' bound is
    //   proved in special cases (two statistics, equal correlations) and has no known counterexample.
    // - A finding also needs |effect| >= 1 %: that only removes findings. Throttled runs at target have no
    //   throughput test and meet their target, so no `below target` either.
    // Comparisons have disjoint seeds, so the count is at most Binomial(N, alpha) stochastically.
    const N = 400
    let flagged = 0
    for (let seed = 1; seed <= N; seed++) {
      const { ab } = compare(seed, { runs: 3, throttled: seed % 2 === 0 })
      if (seed <= 2) {
        const latency = ab.figures.filter((f) => f.op === 'SCAN' && LATENCY_FIGURES.includes(f.figure))
        assert.ok(
          latency.every((f) => f.method === 'welch-t' && /logarithms/.test(f.reason)),
          'the bound is derived for Welch on logarithms',
        )
        assert.equal(ab.tests, seed === 1 ? 22 : 18, 'throttled: the 4 throughput rows are at target, not tests')
      }
      if (findings(ab).length > 0) flagged++
    }
    const bound = binomialAtMost(N, ALPHA)
    t.diagnostic(`comparisons with a finding: ${pct(flagged, N)}; bound ${bound} (alpha ${ALPHA}, tail 1e-6)`)
    assert.ok(flagged <= bound, `${flagged} of ${N} comparisons of identical setups had a finding (bound ${bound})`)
  },
)

test('5 + 5 runs of identical setups: exact Mann-Whitney; at most alpha of the comparisons have a finding', (t) => {
  // The exact Mann-Whitney p-value satisfies P(p <= x) <= x under the null (continuous data: no ties), so every
  // test has size at most alpha, and Benjamini-Hochberg keeps "any finding" at alpha as above. In fact far less:
  // the smallest two-sided p of 5 + 5 is 2/252 = 0.0079 > alpha / m (m = 18 or 22 figures), so no figure can
  // be found alone. Each
  // comparison costs about 70 ms (a bootstrap interval per figure), hence few seeds and a loose count bound.
  const N = 8
  let flagged = 0
  for (let seed = 1001; seed < 1001 + N; seed++) {
    const { ab } = compare(seed, { runs: 5, throttled: seed % 2 === 0 })
    assert.ok(ab.figures.filter((f) => f.pValue !== null).every((f) => f.method === 'mann-whitney-u-exact'))
    if (findings(ab).length > 0) flagged++
  }
  const bound = binomialAtMost(N, ALPHA)
  t.diagnostic(`comparisons with a finding: ${pct(flagged, N)}; bound ${bound}`)
  assert.ok(flagged <= bound, `${flagged} of ${N} (bound ${bound})`)
})

test(
  '1 + 1 run, windows as samples: the circular block bootstrap decides; a gross excess over 2 alpha of ' +
    'comparisons with a finding is caught (independent windows)',
  (t) => {
    // The block bootstrap's p-value is only asymptotically valid: its size error shrinks with the number of
    // windows n and the block length b as O(1/b + b/n), and for 60 windows that is several percentage points.
    // The stated bound is therefore 2 alpha per comparison, not alpha. Windows here are independent (phi = 0):
    // with autocorrelated windows the bootstrap exceeds even that (compare-block-bootstrap.test.ts).
    // What a 1 + 1 comparison cannot see is the run-to-run noise: its samples are one run's windows, so a
    // machine 3 % slower during one run is a 3 % change to it. The null here is the one it can test: both runs'
    // windows from the same process (no run factor). With 8 comparisons (80 ms each) this count only catches a
    // gross failure; the bound is checked where it can be, on the bootstrap's own p-values over hundreds of
    // series (compare-block-bootstrap.test.ts, where autocorrelated windows fail it).
    const N = 8
    let flagged = 0
    for (let seed = 2001; seed < 2001 + N; seed++) {
      const { ab } = compare(seed, { runs: 1, windows: { n: 60, phi: 0 } })
      const tested = ab.figures.filter((f) => f.pValue !== null)
      assert.ok(tested.every((f) => f.method === 'circular-block-bootstrap' && f.baseline.n === 60))
      if (findings(ab).length > 0) flagged++
    }
    const bound = binomialAtMost(N, 2 * ALPHA)
    t.diagnostic(`comparisons with a finding: ${pct(flagged, N)}; bound ${bound}`)
    assert.ok(flagged <= bound, `${flagged} of ${N} (bound ${bound})`)
  },
)

/**
 * Probability that a comparison with true changes in `s` of its `m` tested figures has a finding among the other
 * m - s: at most (1 + s) alpha (m - s) / m. Benjamini-Hochberg keeps the expected share of false findings among
 * the findings (FDR) at alpha (m - s) / m for independent or PRDS tests; with V false and S <= s true findings,
 * V >= 1 makes V / (V + S) >= 1 / (1 + s), so P(V >= 1) <= (1 + s) FDR. Not alpha: with true findings the
 * procedure is less strict with the rest, by design.
 */
function falseFindingBound(s: number, m: number): number {
  return Math.min(1, (1 + s) * ALPHA * ((m - s) / m))
}

test('SCAN 10x slower (3 + 3): all six SCAN latencies are regressions in every comparison', (t) => {
  // Six figures have the effect, each alone tested at its Benjamini-Hochberg step 6 alpha / m: if all six p-values
  // are at most 6 alpha / m, all six are found (step-up), and each misses that with probability at most
  // welchMissBound (Welch's t on logarithms, delta = ln 10 against 10 % noise: t is about 28 on average, and even
  // at Welch's smallest df of 2 the critical value is 8.5). By the union bound a comparison misses with
  // probability at most 6 x that; the expected number of misses over N comparisons is N times it.
  const N = 40
  const m = 22
  const miss = welchMissBoundThreeAndThree(Math.log(10), LATENCY_SD, (6 * ALPHA) / m, Math.log1p(MIN_EFFECT))
  const expectedMisses = N * 6 * miss
  assert.ok(expectedMisses < 1e-3, `the bound allows ${expectedMisses} misses`)
  let others = 0
  for (let seed = 3001; seed < 3001 + N; seed++) {
    const { ab } = compare(seed, { runs: 3, slower: { op: 'SCAN', factor: 10 } })
    assert.equal(ab.tests, m)
    const scan = ab.figures.filter((f) => f.op === 'SCAN' && LATENCY_FIGURES.includes(f.figure))
    assert.deepEqual(
      scan.map((f) => f.verdict),
      LATENCY_FIGURES.map(() => 'regression'),
      `seed ${seed}`,
    )
    if (findings(ab).some((f) => !scan.includes(f))) others++
  }
  const bound = binomialAtMost(N, falseFindingBound(6, m))
  t.diagnostic(`miss probability bound ${(6 * miss).toExponential(1)} a comparison; other findings ${pct(others, N)}`)
  assert.ok(others <= bound, `${others} of ${N} comparisons had another finding (bound ${bound})`)
})

/** SCAN 10x slower with n + n runs: the verdicts of SCAN's six latency figures (Mann-Whitney from 4 + 4 on). */
function scanVerdicts(runs: number, seed: number): { verdicts: string[]; tests: number } {
  const { ab } = compare(seed, { runs, slower: { op: 'SCAN', factor: 10 } })
  const scan = ab.figures.filter((f) => f.op === 'SCAN' && LATENCY_FIGURES.includes(f.figure))
  return { verdicts: scan.map((f) => f.verdict), tests: ab.tests }
}

test('SCAN 10x slower with 5 + 5 and 6 + 6 runs (exact Mann-Whitney): all six SCAN latencies are regressions', () => {
  // 10x against 10 % noise puts every slowed run above every baseline run (16 sigma apart), so each of the six
  // figures has Mann-Whitney's smallest p, 2 / C(2n, n): 0.0079 for 5 + 5, 0.0022 for 6 + 6. Benjamini-Hochberg
  // finds all six when that is at most 6 alpha / m, which holds up to m = 37 figures (5 + 5).
  for (const runs of [5, 6])
    for (let seed = 6001; seed < 6003; seed++) {
      const r = scanVerdicts(runs, seed)
      assert.ok(r.tests <= 37, `${r.tests} tests`)
      assert.deepEqual(
        r.verdicts,
        LATENCY_FIGURES.map(() => 'regression'),
        `${runs} + ${runs}, seed ${seed}`,
      )
    }
})

test("SCAN 10x slower with 4 + 4 runs (Welch on logarithms: Mann-Whitney's 2/70 cannot survive the adjustment)", () => {
  for (let seed = 6001; seed < 6003; seed++)
    assert.deepEqual(
      scanVerdicts(4, seed).verdicts,
      LATENCY_FIGURES.map(() => 'regression'),
      `seed ${seed}`,
    )
})

test(
  'SCAN 2x slower at 10 % noise (3 + 3): found in at least the fraction the exact Welch distribution gives; ' +
    'nothing else beyond the false-finding bound',
  (t) => {
    // A lower bound of P(found): the SCAN avg alone is found when its p <= alpha / m (Benjamini-Hochberg's first
    // step) and its effect is >= 1 % (welchPower: delta = ln 2, sd 0.1 on each side's 3 logarithms); or all six
    // SCAN latencies are found when each p <= 6 alpha / m, with probability at least 1 - 6 x (1 - power at that
    // level). The larger of the two, less 1e-3 for the numerical integration, is p_found; the count over N
    // comparisons is then at least Binomial(N, p_found) stochastically. The bound is loose: the six figures
    // together find the change far more often than one does alone.
    const N = 200
    const m = 22
    const single = welchPowerThreeAndThree(Math.log(2), LATENCY_SD, ALPHA / m, Math.log1p(MIN_EFFECT))
    const six = 1 - 6 * (1 - welchPowerThreeAndThree(Math.log(2), LATENCY_SD, (6 * ALPHA) / m, Math.log1p(MIN_EFFECT)))
    const pFound = Math.max(single, six) - 1e-3
    let found = 0
    let others = 0
    for (let seed = 4001; seed < 4001 + N; seed++) {
      const { ab } = compare(seed, { runs: 3, slower: { op: 'SCAN', factor: 2 } })
      const scan = findings(ab).filter((f) => f.op === 'SCAN' && LATENCY_FIGURES.includes(f.figure))
      assert.ok(
        scan.every((f) => f.verdict === 'regression'),
        `seed ${seed}: slower scans are regressions, never improvements`,
      )
      if (scan.length > 0) found++
      if (findings(ab).length > scan.length) others++
    }
    const least = binomialAtLeast(N, pFound)
    const most = binomialAtMost(N, falseFindingBound(6, m))
    t.diagnostic(
      `found ${pct(found, N)} (bound: at least ${least}, from p_found ${pFound.toFixed(3)}); other findings ` +
        `${pct(others, N)} (bound ${most})`,
    )
    assert.ok(found >= least, `found in ${found} of ${N} comparisons (bound ${least})`)
    assert.ok(others <= most, `${others} of ${N} comparisons had another finding (bound ${most})`)
  },
)

test('symmetry: B vs A has the same p-values, adjusted p-values and the turned verdicts of A vs B', () => {
  // Welch's |t| and df and Mann-Whitney's two-sided p do not depend on which side is first, and neither does
  // Benjamini-Hochberg; only the direction of a change turns. (The block bootstrap is left out: which side takes
  // which random draws changes with the order, so its p-values agree only in distribution.)
  const turned: Record<string, string> = { regression: 'improvement', improvement: 'regression' }
  const setups: Setup[] = [
    { runs: 3 },
    { runs: 3, throttled: true },
    { runs: 3, slower: { op: 'SCAN', factor: 2 } },
    { runs: 3, slower: { op: 'READ', factor: 10 } },
    { runs: 5, slower: { op: 'SCAN', factor: 2 } },
  ]
  let changed = 0
  setups.forEach((setup, i) => {
    for (let seed = 5001 + 100 * i; seed < 5001 + 100 * i + (setup.runs === 5 ? 1 : 10); seed++) {
      const { ab, ba } = compare(seed, setup)
      const back = new Map(ba().figures.map((f) => [f.label, f]))
      for (const f of ab.figures) {
        const g = back.get(f.label)!
        const where = `seed ${seed} ${f.label}`
        const same = (x: number | null, y: number | null): boolean =>
          x === y || (x !== null && y !== null && Math.abs(x - y) <= 1e-12 * Math.max(1, Math.abs(x)))
        assert.ok(same(f.pValue, g.pValue), `${where}: p ${f.pValue} vs ${g.pValue}`)
        assert.ok(same(f.adjustedPValue, g.adjustedPValue), `${where}: adjusted p`)
        assert.equal(g.verdict, turned[f.verdict] ?? f.verdict, where)
        if (f.verdict in turned) changed++
      }
    }
  })
  assert.ok(changed > 0, 'some comparisons have findings to turn')
})
