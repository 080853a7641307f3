/**
 * The coordinator's roster of agents (services/core/experiments/roster.ts),
 * pure: heartbeats in the order the control topic delivers them, on a clock
 * the test moves. A new instance under a known name is a restart; the older
 * instance heartbeating again after it is two live agents, in conflict until
 * all but one have been silent for the agent timeout; then work goes to the
 * one left, whichever it is.
 */
import assert from 'node:assert/strict'
import { test } from 'node:test'
import type { AgentHeartbeat } from '../../schemas/experiment-control.v1.js'
import { AgentRoster } from '../../services/core/experiments/roster.js'

const TIMEOUT = 5000

function hb(agent: string, instance: string, host = `host-${instance}`): AgentHeartbeat {
  return {
    type: 'agent.heartbeat',
    sentAtMs: 0,
    agent,
    instance,
    host,
    pid: 1,
    cores: 1,
    labels: {},
    capabilities: {
      drivers: ['benchstream'],
      bindings: [],
      ycsbBindings: [],
      workloads: [],
      commands: [],
      env: [],
      profileTargets: [],
    },
    clock: null,
    busyWith: null,
    version: '0.1.0',
  }
}

test('a restart: the new instance takes the name, no conflict however soon it comes', () => {
  const r = new AgentRoster()
  assert.equal(r.heartbeat(hb('a1', 'old-instance'), 0), undefined)
  assert.equal(r.heartbeat(hb('a1', 'old-instance'), 1000), undefined)
  const change = r.heartbeat(hb('a1', 'new-instance'), 1500)
  assert.equal(change?.kind, 'restarted')
  assert.equal(change.kind === 'restarted' && change.previous.instance, 'old-instance')
  assert.equal(r.entry('a1')?.hb.instance, 'new-instance')
  for (let t = 2500; t < 20_000; t += 1000) assert.equal(r.heartbeat(hb('a1', 'new-instance'), t), undefined)
  assert.equal(r.conflict('a1', 20_000, TIMEOUT), undefined)
  assert.deepEqual(r.names(), ['a1'])
})

test('two live instances: one conflict, no flapping, until one is silent for the timeout; the other keeps it', () => {
  for (const survivor of ['first-instance', 'second-instance']) {
    const r = new AgentRoster()
    r.heartbeat(hb('a2', 'first-instance'), 0)
    assert.equal(r.heartbeat(hb('a2', 'second-instance'), 100)?.kind, 'restarted')
    const c = r.heartbeat(hb('a2', 'first-instance'), 1000)
    assert.equal(c?.kind, 'conflict')
    assert.deepEqual(c.kind === 'conflict' && c.instances.map((x) => x.instance), ['first-instance', 'second-instance'])
    // Both go on heartbeating: said once, and the name is in conflict all along.
    let t = 1000
    for (; t < 10_000; t += 500) {
      assert.equal(r.heartbeat(hb('a2', 'first-instance'), t), undefined)
      assert.equal(r.heartbeat(hb('a2', 'second-instance'), t + 1), undefined)
      assert.equal(r.conflict('a2', t + 1, TIMEOUT)?.length, 2)
    }
    // One of them is stopped: the other goes on.
    const last = t
    for (; t < last + TIMEOUT; t += 500) {
      r.heartbeat(hb('a2', survivor), t)
      assert.equal(r.conflict('a2', t, TIMEOUT)?.length, 2, `${survivor}: not silent for the timeout yet at ${t}`)
    }
    r.heartbeat(hb('a2', survivor), t)
    assert.equal(r.conflict('a2', t + 1, TIMEOUT), undefined)
    assert.equal(r.entry('a2')?.hb.instance, survivor)
    // And a later restart of it is a restart again.
    assert.equal(r.heartbeat(hb('a2', 'third-instance'), t + 2000)?.kind, 'restarted')
    assert.equal(r.conflict('a2', t + 2000, TIMEOUT), undefined)
  }
})

test('names are kept apart: a conflict under one name leaves the others alone', () => {
  const r = new AgentRoster()
  r.heartbeat(hb('a1', 'a1-instance'), 0)
  r.heartbeat(hb('a2', 'a2-one'), 0)
  r.heartbeat(hb('a2', 'a2-two'), 1)
  r.heartbeat(hb('a2', 'a2-one'), 2)
  assert.equal(r.conflict('a1', 3, TIMEOUT), undefined)
  assert.equal(r.entry('a1')?.hb.instance, 'a1-instance')
  assert.equal(r.conflict('a2', 3, TIMEOUT)?.length, 2)
  assert.deepEqual(r.names(), ['a1', 'a2'])
})
