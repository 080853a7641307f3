/**
 * Silences without infrastructure (services/core/alerting/silences.ts):
 * Alertmanager's matching (all matchers, = and !=), pending / active /
 * expired by time, no end only for a silence that names a run, expiry, and
 * the words a refused silence gets.
 */
import assert from 'node:assert/strict'
import { test } from 'node:test'
import {
  expireSilence,
  matchersText,
  newSilence,
  silencedBy,
  silenceMatches,
  silenceState,
  silenceView,
} from '../../services/core/alerting/silences.js'
import { isBenchstreamError } from '../../services/core/errors.js'

const NOW = Date.UTC(2026, 0, 10, 12, 0, 0)
const iso = (ms: number): string => new Date(ms).toISOString()
const alert = { rule: 'BenchstreamThroughputDrop', runId: 'r1', op: 'READ', severity: 'warning' }

function refused(fn: () => unknown, words: RegExp): void {
  assert.throws(fn, (err: unknown) => isBenchstreamError(err, 'BS_ERR_BAD_REQUEST') && words.test(err.message))
}

test('a silence matches when every matcher holds; != matchers exclude', () => {
  const s = newSilence(
    {
      matchers: [
        { name: 'alertname', value: 'BenchstreamThroughputDrop' },
        { name: 'op', value: 'SCAN', isEqual: false },
      ],
      endsAt: iso(NOW + 3600_000),
    },
    'id1',
    NOW,
  )
  assert.equal(silenceMatches(s, alert), true)
  assert.equal(silenceMatches(s, { ...alert, op: 'SCAN' }), false, 'op != SCAN')
  assert.equal(silenceMatches(s, { ...alert, rule: 'BenchstreamBelowTarget' }), false)
  assert.equal(matchersText(s), 'alertname="BenchstreamThroughputDrop", op!="SCAN"')
})

test('pending before its start, active until its end, expired after; a run silence has no end', () => {
  const timed = newSilence(
    { matchers: [{ name: 'severity', value: 'warning' }], startsAt: iso(NOW + 60_000), endsAt: iso(NOW + 120_000) },
    'timed',
    NOW,
  )
  assert.equal(silenceState(timed, NOW), 'pending')
  assert.equal(silenceState(timed, NOW + 60_000), 'active')
  assert.equal(silenceState(timed, NOW + 119_999), 'active')
  assert.equal(silenceState(timed, NOW + 120_000), 'expired')
  assert.equal(silencedBy(alert, [timed], NOW), undefined, 'a pending silence silences nothing')
  assert.equal(silencedBy(alert, [timed], NOW + 90_000), 'timed')

  const forRun = newSilence(
    {
      matchers: [
        { name: 'alertname', value: 'BenchstreamThroughputDrop' },
        { name: 'run_id', value: 'r1' },
      ],
      createdBy: 'ann',
      comment: 'known slow disk',
    },
    'run',
    NOW,
  )
  assert.equal(forRun.endsAtMs, undefined)
  assert.equal(silenceState(forRun, NOW + 365 * 86_400_000), 'active')
  assert.equal(silencedBy({ ...alert, runId: 'r2' }, [forRun], NOW), undefined, 'another run is not silenced')
  const view = silenceView(forRun, NOW)
  assert.deepEqual(view, {
    id: 'run',
    matchers: [
      { name: 'alertname', value: 'BenchstreamThroughputDrop', isEqual: true },
      { name: 'run_id', value: 'r1', isEqual: true },
    ],
    startsAt: iso(NOW),
    endsAt: null,
    createdBy: 'ann',
    comment: 'known slow disk',
    updatedAt: iso(NOW),
    status: { state: 'active' },
  })
})

test('of several matching silences the smallest id is named, so a replay names the same one', () => {
  const mk = (id: string) =>
    newSilence({ matchers: [{ name: 'run_id', value: 'r1' }], endsAt: iso(NOW + 1000) }, id, NOW)
  assert.equal(silencedBy(alert, [mk('c'), mk('a'), mk('b')], NOW), 'a')
})

test('expiry: an active silence ends now, a pending one never starts, an expired one is left alone', () => {
  const active = newSilence({ matchers: [{ name: 'op', value: 'READ' }], endsAt: iso(NOW + 60_000) }, 'a', NOW)
  const ended = expireSilence(active, NOW + 10_000)
  assert.equal(ended.endsAtMs, NOW + 10_000)
  assert.equal(ended.startsAtMs, NOW)
  assert.equal(silenceState(ended, NOW + 10_000), 'expired')
  const pending = newSilence(
    { matchers: [{ name: 'op', value: 'READ' }], startsAt: iso(NOW + 30_000), endsAt: iso(NOW + 60_000) },
    'p',
    NOW,
  )
  const never = expireSilence(pending, NOW + 10_000)
  assert.deepEqual([never.startsAtMs, never.endsAtMs], [NOW + 10_000, NOW + 10_000])
  assert.equal(silenceState(never, NOW + 40_000), 'expired', 'it does not start later')
  assert.equal(expireSilence(ended, NOW + 20_000), ended)
})

test('refused silences say what is wrong', () => {
  refused(
    () => newSilence({ matchers: [{ name: 'op', value: 'READ', isEqual: false }], endsAt: iso(NOW + 1) }, 'x', NOW),
    /at least one matcher with isEqual true/,
  )
  refused(
    () => newSilence({ matchers: [{ name: 'alertname', value: 'X' }] }, 'x', NOW),
    /endsAt is required unless a run_id matcher/,
  )
  refused(
    () =>
      newSilence(
        {
          matchers: [
            { name: 'run_id', value: 'r1', isEqual: false },
            { name: 'op', value: 'READ' },
          ],
        },
        'x',
        NOW,
      ),
    /endsAt is required/,
  )
  refused(
    () =>
      newSilence(
        { matchers: [{ name: 'alertname', value: 'X' }], startsAt: iso(NOW + 2000), endsAt: iso(NOW + 1000) },
        'x',
        NOW,
      ),
    /must be after startsAt/,
  )
  refused(
    () =>
      newSilence(
        { matchers: [{ name: 'alertname', value: 'X' }], endsAt: iso(NOW - 1000), startsAt: iso(NOW - 5000) },
        'x',
        NOW,
      ),
    /is in the past/,
  )
})
