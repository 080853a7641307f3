/**
 * An agent's clock against the broker's (services/core/experiments/clock.ts):
 * the sample with the shortest round trip gives the offset (broker time minus
 * the round trip's midpoint), unusable samples are ignored, the bound is
 * judged with the uncertainty in the agent's favour, and a refusal says by how
 * much, which way and what to do.
 */
import assert from 'node:assert/strict'
import { test } from 'node:test'
import type { ClockEstimate } from '../../schemas/experiment-control.v1.js'
import { clockRefusal, clockWithin, estimateClock, type ClockSample } from '../../services/core/experiments/clock.js'

const T0 = 1_750_000_000_000

/** A sample the broker stamped `at` (0..1) of the way through its round trip, on a clock `offset` ahead. */
function sample(sentMs: number, rttMs: number, offsetMs: number, at = 0.5): ClockSample {
  return { sentMs, ackedMs: sentMs + rttMs, brokerMs: sentMs + rttMs * at + offsetMs }
}

test('the shortest round trip wins: its broker time minus its midpoint', () => {
  const offset = 37.5
  // Long round trips with the stamp far from the middle would give offsets up to 60 ms off.
  const samples = [
    sample(T0, 120, offset, 1),
    sample(T0 + 1000, 40, offset, 0),
    sample(T0 + 2000, 6, offset, 0.75),
    sample(T0 + 3000, 80, offset, 0.9),
  ]
  const c = estimateClock(samples, T0 + 5000)
  assert.deepEqual(c, { offsetMs: offset + 6 * 0.25, rttMs: 6, samples: 4, atMs: T0 + 5000 })
  // Within half its round trip of the truth.
  assert.ok(Math.abs(c.offsetMs - offset) <= c.rttMs / 2)
  // A clock behind the broker's has a positive offset, one ahead a negative one.
  assert.equal(estimateClock([sample(T0, 2, -250)], T0)!.offsetMs, -250)
  assert.equal(estimateClock([sample(T0, 2, 250)], T0)!.offsetMs, 250)
})

test('unusable samples are ignored: acknowledged before sent, no broker time, NaN', () => {
  const good = sample(T0, 30, 10)
  const bad: ClockSample[] = [
    { sentMs: T0, ackedMs: T0 - 1, brokerMs: T0 }, // a clock stepped back during the round trip
    { sentMs: T0, ackedMs: T0 + 1, brokerMs: 0 }, // no append time
    { sentMs: T0, ackedMs: T0 + 1, brokerMs: -5 },
    { sentMs: T0, ackedMs: T0 + 1, brokerMs: Number.NaN },
    { sentMs: Number.NaN, ackedMs: T0 + 1, brokerMs: T0 },
    { sentMs: T0, ackedMs: T0 + 1, brokerMs: Number.POSITIVE_INFINITY },
  ]
  const c = estimateClock([...bad, good], T0)
  assert.equal(c?.offsetMs, 10)
  assert.equal(c?.rttMs, 30)
  assert.equal(c?.samples, bad.length + 1, 'every sample counted, used or not')
  assert.equal(estimateClock(bad, T0), null)
  assert.equal(estimateClock([], T0), null)
})

const est = (offsetMs: number, rttMs: number): ClockEstimate => ({ offsetMs, rttMs, samples: 8, atMs: T0 })

test("clockWithin counts half the round trip (and the stamp's millisecond) in the agent's favour", () => {
  assert.equal(clockWithin(est(50, 0), 50), true)
  assert.equal(clockWithin(est(-50, 0), 50), true)
  assert.equal(clockWithin(est(51, 0), 50), true, "the broker's millisecond stamp")
  assert.equal(clockWithin(est(51.5, 0), 50), false)
  assert.equal(clockWithin(est(-51.5, 0), 50), false)
  // 70 ms off, known to within ±20: it may be 50, so it is not refused.
  assert.equal(clockWithin(est(70, 40), 50), true)
  assert.equal(clockWithin(est(-70, 40), 50), true)
  assert.equal(clockWithin(est(72, 40), 50), false)
  assert.equal(clockWithin(est(2000, 10), 50), false)
})

test('clockRefusal names the agent, the offset, which way, the uncertainty, the bound and the fix', () => {
  const ahead = clockRefusal('a2', est(-2003.25, 4), 50)
  assert.match(ahead, /^agent a2's clock is 2003\.3 ms ahead of the broker's \(±2\.0 ms\), beyond the bound of 50 ms/)
  assert.match(ahead, /chrony or systemd-timesyncd/)
  assert.match(ahead, /raise clockBoundMs in the plan/)
  const behind = clockRefusal('a3', est(120, 1), 50)
  assert.match(behind, /^agent a3's clock is 120\.0 ms behind the broker's \(±0\.5 ms\)/)
})
