import assert from 'node:assert/strict'
import { test } from 'node:test'
import { CACHE_OUTCOMES, OPERATIONS, STATUSES } from '../../schemas/events.v1.js'
import { opsTsv, usToDateTime64 } from '../../services/adapters/clickhouse/window-store.js'
import { RawOps } from '../../services/core/stats/partition-state.js'

test('raw events serialize to the same TabSeparated rows as a plain string template', () => {
  const ops = new RawOps()
  ops.runIds.push('run-1', 'run.2')
  ops.clientIds.push('c:a', 'c_b')
  const starts = [1_764_680_000_000_000, 1_764_680_000_999_999, 1_764_680_001_000_001, 1_000_000, 9_007_199_254_740_991]
  const expected: string[] = []
  for (let i = 0; i < 10_000; i++) {
    const e = { thread: i % 65_536, opCode: 1 + (i % 6), statusIndex: i % STATUSES.length, cacheIndex: i % 3, startUs: starts[i % starts.length]! + i, latencyUs: i * 7919 % 4_000_000_000, intendedUs: i * 104729 % 4_000_000_000, bytes: i * 31 }
    ops.push(i % 2, e, 1e12 + i)
    expected.push(`${ops.runIds[i % 2]}\t${ops.clientIds[i % 2]}\t${e.thread}\t${OPERATIONS[e.opCode - 1]}\t${usToDateTime64(e.startUs)}\t${e.latencyUs}\t${e.intendedUs}\t${STATUSES[e.statusIndex]}\t${CACHE_OUTCOMES[e.cacheIndex]}\t${e.bytes}\t7\t${1e12 + i}\n`)
  }
  assert.equal(ops.length, 10_000)
  assert.equal(opsTsv(ops, 7).toString('latin1'), expected.join(''))
})
