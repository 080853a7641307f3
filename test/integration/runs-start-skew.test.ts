/**
 * The runs view's start skew is the spread of the clients' first operations
 * on the broker's clock: each client's first operation (its end record, on
 * its own machine's clock) less its machine's clock offset (its start record,
 * as its agent measured it). Found across a network (npm run
 * test:distributed): an agent whose clock libfaketime moved +30 ms started
 * its client at the right instant, but the skew, taken on the clients' own
 * clocks, said 30 ms for runs that started within 5. Real engine, lifecycle
 * rows as the processor writes them.
 */
import assert from 'node:assert/strict'
import { test } from 'node:test'
import { queryRows } from '../../services/adapters/clickhouse/client.js'
import { usToDateTime64 } from '../../services/adapters/clickhouse/datetime64-text.js'
import { readInfraConfig } from '../../services/common/infra-config.js'
import { migratedClickHouse } from '../helpers/clickhouse.js'
import { testEnv } from '../helpers/env.js'

const START = Date.UTC(2026, 11, 6, 3, 0, 0)

/** A run_clients row: the start record (with the clock offset) or the end record (with the first operation). */
function row(runId: string, client: string, phase: 'start' | 'end', extra: Record<string, unknown>) {
  return {
    run_id: runId,
    client_id: client,
    phase,
    at: usToDateTime64((START + (phase === 'end' ? 2000 : 0)) * 1000),
    labels: {},
    workload: 'workloada',
    binding: 'memory',
    threads: 2,
    target: 100,
    sent: phase === 'end' ? { READ: 100 } : {},
    undelivered: 0,
    runtime_ms: phase === 'end' ? 2000 : 0,
    src_partition: 0,
    src_offset: 0,
    expected_clients: 3,
    ...extra,
  }
}

test('start skew: first operations less each machine clock offset; a client without one counts as 0', async (t) => {
  const te = testEnv()
  t.after(te.cleanup)
  const ch = await migratedClickHouse(t, readInfraConfig(te.env).clickhouse)
  // Client a2's machine is 30 ms ahead (offset +30): its first operation at +33 ms on its clock is +3 on the broker's.
  // a1 at +1 on a clock 0.4 ms behind is +1.4, a3 (no agent, no offset) at +5: 3.6 ms of skew, not the 32 the
  // clients' own clocks span.
  const firsts: Array<[string, number, number | null]> = [
    ['a1', 1, -0.4],
    ['a2', 33, 30],
    ['a3', 5, null],
  ]
  const rows = firsts.flatMap(([c, firstMs, offset]) => [
    row('skewed', c, 'start', { clock_offset_ms: offset }),
    row('skewed', c, 'end', { first_op_at: usToDateTime64((START + firstMs) * 1000) }),
  ])
  // One client alone has no skew.
  rows.push(
    row('alone', 'a1', 'start', { clock_offset_ms: 12 }),
    row('alone', 'a1', 'end', { first_op_at: usToDateTime64(START * 1000) }),
  )
  for (const r of ['skewed', 'alone'])
    await ch.client.insert({
      table: 'benchstream.run_settings',
      values: [{ run_id: r, window_ms: 1000, claimed_by: 'test' }],
      format: 'JSONEachRow',
    })
  await ch.client.insert({ table: 'benchstream.run_clients', values: rows, format: 'JSONEachRow' })
  const got = await queryRows<{ run_id: string; start_skew_ms: number | null; clock_offset_max_ms: number | null }>(
    ch,
    "SELECT run_id, start_skew_ms, clock_offset_max_ms FROM benchstream.runs WHERE run_id IN ('skewed', 'alone') " +
      'ORDER BY run_id',
  )
  assert.deepEqual(
    got.map((r) => [r.run_id, r.start_skew_ms === null ? null : Math.round(r.start_skew_ms * 1000) / 1000]),
    [
      ['alone', null],
      ['skewed', 3.6],
    ],
  )
  assert.equal(got[1]!.clock_offset_max_ms, 30)
})
