/**
 * What a comparison decided (services/core/compare/decision.ts), over real
 * comparisons (compareRuns over fabricated runs) and the headline compare
 * prints from it: "nothing, of N tested figures" only when every figure was
 * tested and every workload compared; otherwise Undecided, with the figures
 * not testable (their n and change) and the workloads one side lacks, even
 * when the one change is 150 times the baseline; a regression found is said
 * with what stays undecided. And the exit code each outcome gives.
 */
import assert from 'node:assert/strict'
import { test } from 'node:test'
import type { RunData } from '../../services/core/compare/release.js'
import { outcomeExit, REGRESSION_EXIT, UNDECIDED_EXIT } from '../../services/common/cli-env.js'
import { decideComparison, percentText } from '../../services/core/compare/decision.js'
import { formatComparison } from '../../services/core/compare/release-format.js'
import { compareRuns } from '../../services/core/compare/release.js'
import { fabricatedFigures, fabricatedOp, fabricatedRun } from '../helpers/fabricated-runs.js'
import { joinRegExp } from '../helpers/regexp.js'

const side = (ids: readonly string[], workload = 'workloada') => ({
  ref: `group:${ids[0]!.slice(0, 1)}`,
  runs: ids.map((id) => fabricatedRun(id, { group_id: id.slice(0, 1), workload })),
})
const headline = (md: string): string => md.split('\n')[2]!

test('3 + 3, nothing changed: decided, "nothing, of N tested figures", exit 0', () => {
  const a = ['a1', 'a2', 'a3']
  const b = ['b1', 'b2', 'b3']
  const c = compareRuns(
    side(a),
    side(b),
    [...fabricatedFigures(a, [100, 101, 99], 1), ...fabricatedFigures(b, [100, 99, 101], 2)],
    [],
  )
  const d = decideComparison(c)
  assert.equal(d.outcome, 'no regression')
  assert.deepEqual(d.undecided, [])
  assert.equal(d.untested.length, 0)
  assert.equal(d.tested, c.figures.filter((f) => f.pValue !== null).length)
  assert.equal(headline(formatComparison(c, 'markdown')), `**Regressed:** nothing, of ${d.tested} tested figures.`)
  assert.equal(outcomeExit({ regressed: false, undecided: false }, true), 0)
})

test('2 + 3 runs, no windows, READ p50 150 times slower: undecided, the change named untested, never "nothing"', () => {
  const a = ['a1', 'a2']
  const b = ['b1', 'b2', 'b3']
  const c = compareRuns(
    side(a),
    side(b),
    [...fabricatedFigures(a, [100, 100], 1), ...fabricatedFigures(b, [15_028, 15_028, 15_028], 2)],
    [],
  )
  const d = decideComparison(c)
  assert.equal(d.outcome, 'undecided')
  assert.equal(d.tested, 0)
  assert.equal(d.untested.length, c.figures.filter((f) => f.verdict === 'insufficient data').length)
  // Every figure that differs at all between the runs; the rest are the same on every run.
  assert.equal(
    d.untested.length,
    c.figures.filter((f) => new Set([...f.baseline.values, ...f.candidate.values]).size > 1).length,
  )
  const of = `${d.untested.length} of ${c.figures.length}`
  assert.deepEqual(d.undecided, [`${of} figures could not be tested (n = 2 + 3)`])
  assert.match(
    headline(formatComparison(c, 'markdown')),
    new RegExp(
      `^\\*\\*Undecided:\\*\\* ${of} figures could not be tested \\(n = 2 \\+ 3\\)\\. Largest changes for the worse, ` +
        'untested: READ p50 \\+14,928%(, [A-Z]+ [a-z0-9. ]+ \\+[\\d.]+%)?\\.$',
    ),
  )
  assert.doesNotMatch(formatComparison(c, 'terminal'), /nothing, of|No regression/)
  assert.equal(outcomeExit({ regressed: false, undecided: true }, false), UNDECIDED_EXIT)
  assert.equal(outcomeExit({ regressed: false, undecided: true }, true), UNDECIDED_EXIT)
})

test('3 + 3 with figures only one side has: undecided over them, with their n, though the rest were tested', () => {
  const a = ['a1', 'a2', 'a3']
  const b = ['b1', 'b2', 'b3']
  // The candidate's reads fail now and then: READ-FAILED has no baseline to be tested against.
  const failed = () => [fabricatedOp('READ-FAILED', { operations: 40, opsPerSec: 4, p50Us: 3000 })]
  const figures: RunData[] = [
    ...fabricatedFigures(a, [100, 101, 99], 1),
    ...fabricatedFigures(b, [100, 99, 101], 2, failed),
  ]
  const c = compareRuns(side(a), side(b), figures, [])
  const d = decideComparison(c)
  assert.equal(d.outcome, 'undecided')
  assert.ok(d.tested > 0)
  assert.ok(d.untested.length > 0 && d.untested.every((f) => f.op === 'READ-FAILED'))
  assert.deepEqual(d.undecided, [`${d.untested.length} of ${c.figures.length} figures could not be tested (n = 0 + 3)`])
  assert.equal(
    headline(formatComparison(c, 'markdown')),
    `**Undecided:** ${d.untested.length} of ${c.figures.length} figures could not be tested (n = 0 + 3); nothing ` +
      `regressed of the ${d.tested} tested figures.`,
  )
})

test('a workload only one side ran: undecided, "not compared" with which', () => {
  const a = ['a1', 'a2', 'a3']
  const b = ['b1', 'b2', 'b3']
  const c = compareRuns(
    { ref: 'A', runs: [...side(a).runs, fabricatedRun('a9', { workload: 'workloadc' })] },
    side(b),
    [
      ...fabricatedFigures(a, [100, 101, 99], 1),
      ...fabricatedFigures(['a9'], [100], 3),
      ...fabricatedFigures(b, [100, 99, 101], 2),
    ],
    [],
  )
  const d = decideComparison(c)
  assert.equal(d.outcome, 'undecided')
  assert.equal(d.untested.length, 0)
  assert.deepEqual(d.notCompared, c.unpaired)
  assert.ok(c.unpaired.length === 1 && c.unpaired[0]!.includes('workloadc'), c.unpaired.join())
  assert.match(
    headline(formatComparison(c, 'markdown')),
    /^\*\*Undecided:\*\* not compared: .*workloadc.*; nothing regressed of the \d+ tested figures\.$/,
  )
})

test('a regression is said, and what stays undecided beside it; --fail-on-regression makes it 99', () => {
  const a = ['a1', 'a2', 'a3']
  const b = ['b1', 'b2', 'b3']
  const failed = () => [fabricatedOp('READ-FAILED', { operations: 40, opsPerSec: 4, p50Us: 3000 })]
  const c = compareRuns(
    side(a),
    side(b),
    [...fabricatedFigures(a, [100, 101, 99], 1), ...fabricatedFigures(b, [150, 152, 148], 2, failed)],
    [],
  )
  const d = decideComparison(c)
  assert.equal(d.outcome, 'regression')
  assert.deepEqual(
    d.regressions.map((f) => f.label),
    ['READ p50 (µs)'],
  )
  assert.match(
    headline(formatComparison(c, 'markdown')),
    joinRegExp([
      /^\*\*Regressed:\*\* READ p50 \+50\.0%\. /,
      /\*\*Undecided beyond that:\*\* \d+ of \d+ figures could not be tested \(n = 0 \+ 3\)\./,
    ]),
  )
  assert.equal(outcomeExit({ regressed: true, undecided: true }, true), REGRESSION_EXIT)
  assert.equal(outcomeExit({ regressed: true, undecided: true }, false), UNDECIDED_EXIT)
  assert.equal(outcomeExit({ regressed: true, undecided: false }, false), 0)
})

test('changes as headlines print them: one decimal under 100 %, whole and grouped above', () => {
  assert.deepEqual([14_928.4, 1111.1, 100, 99.95, 50, 0, -0.04, -74.81, -150.5].map(percentText), [
    '+14,928%',
    '+1,111%',
    '+100%',
    '+100.0%',
    '+50.0%',
    '+0.0%',
    '-0.0%',
    '-74.8%',
    '-151%',
  ])
})
