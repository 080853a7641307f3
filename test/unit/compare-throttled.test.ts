import assert from 'node:assert/strict'
import { test } from 'node:test'
import { assessThrottle, throttledThroughputVerdict } from '../../services/core/compare/throttled.js'
import { compareFigure } from '../../services/core/compare/verdict.js'
import { isBenchstreamError } from '../../services/core/errors.js'

const runs = (target: number | null, ...tp: number[]) => tp.map((throughput) => ({ throughput, target }))

test('a run at 99 % of its target or more met it', () => {
  const s = assessThrottle(runs(10_000, 9_990, 9_950, 10_001))
  assert.equal(s.status, 'at target')
  assert.equal(s.runsBelow, 0)
  assert.equal(s.target, 10_000)
  assert.equal(s.medianRatio, 0.999)
  assert.equal(s.shortfallPercent, Math.max(0, (1 - 0.995) * 100))
})

test('one run below 99 % of the target makes the side below target, with how much', () => {
  const s = assessThrottle(runs(10_000, 9_990, 9_800, 10_000))
  assert.equal(s.status, 'below target')
  assert.equal(s.runsBelow, 1)
  assert.ok(Math.abs((s.shortfallPercent ?? 0) - 2) < 1e-9)
})

test('tolerance is a parameter; no target or 0 means unthrottled', () => {
  assert.equal(assessThrottle(runs(10_000, 9_950), 0.995).status, 'at target')
  assert.equal(assessThrottle(runs(10_000, 9_940), 0.995).status, 'below target')
  assert.equal(assessThrottle(runs(null, 5_000)).status, 'unthrottled')
  assert.equal(assessThrottle(runs(0, 5_000)).status, 'unthrottled')
  assert.throws(
    () => assessThrottle([...runs(10_000, 1), ...runs(20_000, 1)]),
    (e: unknown) => isBenchstreamError(e, 'BS_ERR_BAD_REQUEST'),
  )
  assert.throws(
    () => assessThrottle(runs(10_000, 1), 1.5),
    (e: unknown) => isBenchstreamError(e, 'BS_ERR_BAD_REQUEST'),
  )
})

test('both sides at target: the throughput verdict is at target, whatever the statistics say', () => {
  // A statistically "significant" 0.4 % difference in pacing is not a regression.
  const stats = compareFigure(
    { runs: [10_000, 10_001, 9_999, 10_000, 10_002] },
    { runs: [9_960, 9_961, 9_959, 9_962, 9_960] },
    { direction: 'higher-is-better', minEffect: 0 },
  )
  assert.equal(stats.verdict, 'regression')
  const t = throttledThroughputVerdict(
    assessThrottle(runs(10_000, 10_000, 10_001, 9_999, 10_000, 10_002)),
    assessThrottle(runs(10_000, 9_960, 9_961, 9_959, 9_962, 9_960)),
    stats,
  )
  assert.equal(t.verdict, 'at target')
  assert.match(t.reason, /carries no signal; so did the baseline/)
})

test(
  'candidate below target is a finding with the shortfall; baseline shortfall is mentioned when ' +
    'the candidate meets it',
  () => {
    const below = throttledThroughputVerdict(
      assessThrottle(runs(10_000, 10_000, 10_000, 10_000)),
      assessThrottle(runs(10_000, 8_800, 8_700, 8_900)),
      null,
    )
    assert.equal(below.verdict, 'below target')
    assert.match(below.reason, /3 of 3 runs \(median 88\.0% of target, worst 13\.0% short\)/)
    const fixed = throttledThroughputVerdict(
      assessThrottle(runs(10_000, 9_000, 9_100, 9_050)),
      assessThrottle(runs(10_000, 10_000, 9_999, 10_000)),
      null,
    )
    assert.equal(fixed.verdict, 'at target')
    assert.match(fixed.reason, /baseline missed the same target by up to 10\.0%/)
  },
)

test('unthrottled runs keep the statistical verdict', () => {
  const stats = compareFigure(
    { runs: [100, 101, 99, 100, 102] },
    { runs: [90, 91, 89, 90, 92] },
    { direction: 'higher-is-better' },
  )
  const t = throttledThroughputVerdict(
    assessThrottle(runs(null, 100, 101, 99, 100, 102)),
    assessThrottle(runs(null, 90, 91, 89, 90, 92)),
    stats,
  )
  assert.equal(t.verdict, 'regression')
  assert.equal(t.statistics, stats)
  assert.equal(
    throttledThroughputVerdict(assessThrottle(runs(null, 1)), assessThrottle(runs(null, 1)), null).verdict,
    'insufficient data',
  )
})
