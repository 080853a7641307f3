/**
 * The live baseline (rule vs_baseline), pure: the baseline's expected value
 * per offset and its window-to-window noise, the bar a candidate window must
 * pass, and the evaluator firing on a sustained difference only.
 */
import assert from 'node:assert/strict'
import { test } from 'node:test'
import type { VsBaselineRule } from '../../schemas/alert-rules.v1.js'
import { AlertEvaluator } from '../../services/core/alerting/alert-rules.js'
import type { RunContext } from '../../services/core/alerting/alert-window.js'
import {
  buildBaselineProfile,
  exceedance,
  judgeWindow,
  worstJudgement,
  type BaselineWindowRow,
} from '../../services/core/alerting/baseline-profile.js'
import { joinRegExp } from '../helpers/regexp.js'

const W = 1000
const T0 = 1_700_000_000_000
const rule: VsBaselineRule = {
  type: 'vs_baseline',
  name: 'Slower',
  severity: 'warning',
  sigmas: 4,
  minPercent: 10,
  minOps: 20,
  warmupWindows: 1,
  windows: 3,
  resolveWindows: 2,
}

/** A baseline run: `n` windows of READ and SCAN, throughput and p99 from the functions (offset -> value). */
function baselineRun(
  runId: string,
  n: number,
  read: (k: number) => number,
  scanP99: (k: number) => number,
): BaselineWindowRow[] {
  const rows: BaselineWindowRow[] = []
  for (let k = 0; k < n; k++) {
    rows.push({ runId, offset: k, op: 'READ', windowMs: W, count: read(k), p99Us: 100 })
    rows.push({ runId, offset: k, op: 'SCAN', windowMs: W, count: 100, p99Us: scanP99(k) })
  }
  return rows
}

test(
  'expected value per offset is the median over runs; sigma is 1.4826 x the median consecutive ' +
    'difference; partial windows left out',
  () => {
    // Run 1 alternates 1000 / 1010 (every difference 10); run 2 sits 40 higher. First and last windows: partial, huge.
    const r1 = baselineRun(
      'b1',
      12,
      (k) => (k === 0 || k === 11 ? 5 : 1000 + (k % 2) * 10),
      () => 200,
    )
    const r2 = baselineRun(
      'b2',
      12,
      (k) => (k === 0 || k === 11 ? 5 : 1040 + (k % 2) * 10),
      () => 200,
    )
    const one = buildBaselineProfile('b1', r1)
    assert.equal(one.windowMs, W)
    const read = one.ops.get('READ')!.throughput
    assert.equal(read.expected.get(0), undefined, 'the first window is partial')
    assert.equal(read.expected.get(11), undefined, 'the last window is partial')
    assert.equal(read.expected.get(1), 1010)
    assert.equal(read.expected.get(2), 1000)
    assert.ok(Math.abs(read.sigma! - 14.826) < 1e-9, `sigma ${read.sigma}`)
    const group = buildBaselineProfile('group:g', [...r1, ...r2])
    assert.deepEqual(group.runs, ['b1', 'b2'])
    assert.equal(group.ops.get('READ')!.throughput.expected.get(2), 1020, 'median of 1000 and 1040')
    // A constant p99 has no noise at all: the percentage bar decides.
    assert.equal(group.ops.get('SCAN')!.p99.sigma, 0)
    // Too few windows for a sigma: nothing is judged.
    const short = buildBaselineProfile(
      's',
      baselineRun(
        's',
        4,
        () => 1000,
        () => 200,
      ),
    )
    assert.equal(short.ops.get('READ')!.throughput.sigma, undefined)
    assert.deepEqual(judgeWindow(short, rule, 'READ', 1, { count: 10, windowMs: W, p99Us: 100 }), [])
  },
)

test(
  'the bar: beyond sigmas x sigma and minPercent, in the bad direction only; p99 needs minOps; ' +
    'another window length is not judged',
  () => {
    // Throughput noise: consecutive differences of 50 -> sigma 74.13; 4 sigma = 296.5 > 10 % of 1000.
    const p = buildBaselineProfile(
      'b',
      baselineRun(
        'b',
        20,
        (k) => 1000 + (k % 2) * 50,
        () => 200,
      ),
    )
    const at = (count: number, p99Us: number | null) => judgeWindow(p, rule, 'READ', 4, { count, windowMs: W, p99Us })
    const [tp] = at(1000, 100)
    assert.equal(tp!.figure, 'throughput')
    assert.equal(tp!.expected, 1000)
    assert.ok(Math.abs(tp!.threshold - (1000 - 4 * 1.4826 * 50)) < 1e-9)
    assert.equal(at(710, 100).find((j) => j.figure === 'throughput')!.bad, false, '29 % below, within 4 sigma')
    assert.equal(at(700, 100).find((j) => j.figure === 'throughput')!.bad, true, '30 % below')
    assert.equal(at(5000, 100).find((j) => j.figure === 'throughput')!.bad, false, 'faster is not an alert')
    // p99 with zero noise: the 10 % bar.
    const scan = (p99Us: number, count = 100) =>
      judgeWindow(p, rule, 'SCAN', 4, { count, windowMs: W, p99Us }).find((j) => j.figure === 'p99')
    assert.equal(scan(220)!.bad, false, '+10 % is the bar itself')
    assert.equal(scan(221)!.bad, true)
    assert.equal(scan(100)!.bad, false, 'lower p99 is not an alert')
    assert.equal(scan(5000, 19), undefined, 'a p99 of 19 operations is not judged')
    assert.deepEqual(
      judgeWindow(p, rule, 'SCAN', 4, { count: 100, windowMs: 500, p99Us: 5000 }),
      [],
      'windows of another length cannot be aligned',
    )
    assert.deepEqual(
      judgeWindow(p, rule, 'SCAN', 40, { count: 100, windowMs: W, p99Us: 5000 }),
      [],
      'past the end of the baseline',
    )
    assert.deepEqual(
      judgeWindow(p, { ...rule, figures: ['throughput'] }, 'SCAN', 4, { count: 100, windowMs: W, p99Us: 5000 }).map(
        (j) => j.figure,
      ),
      ['throughput'],
    )
  },
)

test('p50 is judged like p99, from its own series: one slow call in a window moves p99, not p50', () => {
  // SCAN: p50 200 µs steady, p99 jumping between 1 ms and 3 ms (one slow call in 100 is all it takes).
  const rows = baselineRun(
    'b',
    20,
    () => 1000,
    (k) => (k % 2 === 0 ? 1000 : 3000),
  ).map((r) => (r.op === 'SCAN' ? { ...r, p50Us: 200 } : r))
  const p = buildBaselineProfile('b', rows)
  const both: VsBaselineRule = { ...rule, figures: ['p50', 'p99'] }
  const at = (p50Us: number, p99Us: number) =>
    judgeWindow(p, both, 'SCAN', 4, { count: 100, windowMs: W, p50Us, p99Us })
  assert.deepEqual(
    at(200, 2900).map((j) => [j.figure, j.bad]),
    [
      ['p50', false],
      ['p99', false],
    ],
    'a p99 within its own noise; the p50 as the baseline',
  )
  const slow = at(50_000, 52_000)
  assert.deepEqual(
    slow.map((j) => [j.figure, j.bad]),
    [
      ['p50', true],
      ['p99', true],
    ],
  )
  assert.equal(slow.find((j) => j.figure === 'p50')!.threshold, 220, 'zero noise in p50: the 10 % bar')
  assert.equal(worstJudgement(slow).figure, 'p50', 'p50 is the furthest beyond its bar')
  assert.deepEqual(
    judgeWindow(p, both, 'SCAN', 4, { count: 100, windowMs: W, p99Us: 52_000 }).map((j) => j.figure),
    ['p99'],
    'a window without a p50 has only its p99 judged',
  )
})

test(
  'the evaluator fires on a sustained difference at the same phase, once, and resolves; a steady ' +
    'candidate and a run without baseline raise nothing',
  () => {
    // The baseline has a phase: from offset 10 on its throughput halves (the workload does so); noise +-20.
    const tp = (k: number): number => (k < 10 ? 1000 : 500) + (k % 3) * 20
    const profile = buildBaselineProfile(
      'base-1',
      baselineRun('base-1', 30, tp, (k) => 200 + (k % 2) * 10),
    )
    const ev = new AlertEvaluator([rule])
    const first = T0
    const ctx = (runId: string): RunContext => ({
      runId,
      targetOpsPerSec: 0,
      baseline: { profile, firstWindowMs: first },
    })
    // Steady candidate following the same phases: nothing, although throughput halves at 10 s.
    const quiet = []
    for (let k = 1; k < 29; k++)
      quiet.push(
        ...ev.observeWindow(ctx('steady'), {
          startMs: first + k * W,
          windowMs: W,
          ops: [
            { op: 'READ', count: tp(k) + 7, errors: 0, p99Us: 100 },
            { op: 'SCAN', count: 100, errors: 0, p99Us: 205 },
          ],
        }),
      )
    assert.deepEqual(quiet, [])
    // Candidate whose scans slow from offset 15 to 20: SCAN fires at offset 17 (3 bad windows) and resolves at 21 (2
    // good ones); READ never.
    const out = []
    for (let k = 1; k < 29; k++) {
      const slow = k >= 15 && k < 20
      out.push(
        ...ev.observeWindow(ctx('slow'), {
          startMs: first + k * W,
          windowMs: W,
          ops: [
            { op: 'READ', count: tp(k), errors: 0, p99Us: 100 },
            { op: 'SCAN', count: 100, errors: 0, p99Us: slow ? 2500 : 200 },
          ],
        }),
      )
    }
    assert.deepEqual(
      out.map((t) => [t.state, t.op, (t.atWindowMs - first) / W, (t.startsAtMs - first) / W]),
      [
        ['firing', 'SCAN', 17, 15],
        ['resolved', 'SCAN', 21, 15],
      ],
    )
    const fired = out[0]!
    assert.equal(fired.ruleType, 'vs_baseline')
    assert.equal(fired.value, 2500)
    // Offset 17 expects 210 µs; sigma 14.826 (differences of 10), so 4 sigma (59.3) is the bar, above 10 % (21).
    assert.ok(Math.abs(fired.threshold - (210 + 4 * 1.4826 * 10)) < 1e-9, `threshold ${fired.threshold}`)
    assert.match(
      fired.summary,
      joinRegExp([
        /^SCAN of run slow is slower than baseline base-1 at the same second: /,
        /p99 [\d.]+x the baseline's \(p99 2500 µs vs 2\d\d µs\)$/,
      ]),
    )
    // Without a baseline in the context the rule has nothing to say.
    const none = new AlertEvaluator([rule])
    const silent = []
    for (let k = 1; k < 29; k++)
      silent.push(
        ...none.observeWindow(
          { runId: 'x', targetOpsPerSec: 0 },
          { startMs: first + k * W, windowMs: W, ops: [{ op: 'SCAN', count: 100, errors: 0, p99Us: 99_999 }] },
        ),
      )
    assert.deepEqual(silent, [])
  },
)

test('when both figures are bad, the one furthest beyond its bar speaks, whatever the rule lists first', () => {
  // Throughput 1000 +- 50 (bar at 703.4), SCAN p99 200 (bar at 220: zero noise, the 10 % bar).
  const p = buildBaselineProfile(
    'b',
    baselineRun(
      'b',
      20,
      (k) => 1000 + (k % 2) * 50,
      () => 200,
    ),
  )
  // Slow scans (seen on CI): the p99 is 25x the baseline's and the scans' rate drops too, just past its bar.
  const slowScans = judgeWindow(p, rule, 'SCAN', 4, { count: 60, windowMs: W, p99Us: 5000 })
  assert.deepEqual(
    slowScans.map((j) => [j.figure, j.bad]),
    [
      ['throughput', true],
      ['p99', true],
    ],
  )
  assert.equal(worstJudgement(slowScans).figure, 'p99')
  assert.ok(exceedance(slowScans[1]!) > exceedance(slowScans[0]!))
  // A collapse of the rate with a p99 just over its bar: throughput speaks.
  const stalled = judgeWindow(p, rule, 'SCAN', 4, { count: 5, windowMs: W, p99Us: 230 })
  assert.equal(worstJudgement(stalled).figure, 'throughput')
  // On the bar is 1; nothing bad: the first judged speaks.
  const fine = judgeWindow(p, rule, 'SCAN', 4, { count: 1000, windowMs: W, p99Us: 220 })
  assert.ok(Math.abs(exceedance(fine[1]!) - 1) < 1e-9)
  assert.equal(worstJudgement(fine).figure, 'throughput')
  // The evaluator's summary names the figure that spoke.
  const ev = new AlertEvaluator([{ ...rule, warmupWindows: 0, windows: 1 }])
  const [fired] = ev.observeWindow(
    { runId: 'c', targetOpsPerSec: 0, baseline: { profile: p, firstWindowMs: T0 } },
    { startMs: T0 + 4 * W, windowMs: W, ops: [{ op: 'SCAN', count: 60, errors: 0, p99Us: 5000 }] },
  )
  assert.match(
    fired!.summary,
    joinRegExp([
      /^SCAN of run c is slower than baseline b at the same second: /,
      /p99 25\.0x the baseline's \(p99 5000 µs vs 200 µs\)$/,
    ]),
  )
  assert.equal(fired!.value, 5000)
})
