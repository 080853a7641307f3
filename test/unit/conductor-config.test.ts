/**
 * The coordinator's configuration (services/experiments/config.ts): the defaults are the waits and bounds the
 * Conductor has always run with, an override replaces only itself, the result is frozen, and a value outside the
 * schema is BS_ERR_CONFIG naming the option.
 */
import assert from 'node:assert/strict'
import { test } from 'node:test'
import { readConductorConfig } from '../../services/experiments/config.js'

test('the defaults are the waits the coordinator ran with; an override replaces only itself; frozen', () => {
  const d = readConductorConfig()
  assert.deepEqual(
    { ...d },
    {
      startLeadMs: 500,
      readyWaitMs: 120_000,
      endSlackMs: 120_000,
      operationsRunMaxMs: 6 * 3600_000,
      countWaitMs: 90_000,
      stepSlackMs: 30_000,
      pollMs: 250,
      maxNotes: 1000,
      earlyNotes: 50,
      heartbeatMs: 1000,
      stallGapMs: 2000,
    },
  )
  assert.ok(Object.isFrozen(d))
  const o = readConductorConfig({ pollMs: 20, countWaitMs: 0 })
  assert.equal(o.pollMs, 20)
  assert.equal(o.countWaitMs, 0)
  assert.equal(o.readyWaitMs, 120_000)
})

test('a value outside the schema is BS_ERR_CONFIG naming the option', () => {
  for (const [bad, name] of [
    [{ pollMs: 0 }, 'pollMs'],
    [{ readyWaitMs: 1.5 }, 'readyWaitMs'],
    [{ maxNotes: -1 }, 'maxNotes'],
  ] as const)
    assert.throws(
      () => readConductorConfig(bad),
      (err: Error & { code?: string }) =>
        err.code === 'BS_ERR_CONFIG' && err.message.includes(`option ${name} is not allowed`),
      JSON.stringify(bad),
    )
})
