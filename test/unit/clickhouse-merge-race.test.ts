/**
 * A read of the embedded engine that raced a merge is run again
 * (services/adapters/clickhouse/client.ts retryReadsRacingMerges), and
 * nothing else is. The error is the one chDB threw on CI (the alert
 * evaluator's read of run_settings), turned into @clickhouse/client's error
 * by the same parseError the chDB connection uses.
 */
import assert from 'node:assert/strict'
import { test } from 'node:test'
import { parseError } from '@clickhouse/client'
import {
  MERGE_RACE_RETRIES,
  mergeRaceRetryCount,
  retryReadsRacingMerges,
  type Connection,
} from '../../services/adapters/clickhouse/client.js'

const SEEN_ON_CI =
  'Code: 107. DB::Exception: Cannot open file ' +
  '/tmp/benchstream-test-480aba9d-oLixP7/clickhouse/store/392/' +
  '392c216a-d891-4f70-99d6-a18368c94130/all_3_3_0/data.bin: ' +
  ', errno: 2, strerror: No such file or directory: (while reading ' +
  'from part /tmp/benchstream-test-480aba9d-oLixP7/clickhouse/store/392/' +
  '392c216a-d891-4f70-99d6-a18368c94130/all_3_3_0/ ' +
  'in table benchstream.run_settings (392c216a-d891-4f70-99d6-a18368c94130) located on disk default ' +
  'of type local, from mark 0 with max_rows_to_read = 1, offset = 0): While reading part all_3_3_0: ' +
  'While executing MergeTreeSelect(pool: ReadPoolInOrder, algorithm: InOrder). (FILE_DOESNT_EXIST) ' +
  '(version 26.7.2.1)'

/** A connection whose query fails with `errors` in turn, then answers; the other methods count their calls. */
function fake(errors: Error[]): { conn: Connection; queries: () => number; others: () => number } {
  let queries = 0
  let others = 0
  const conn = {
    query: async () => {
      queries++
      const e = errors.shift()
      if (e !== undefined) throw e
      return { query_id: 'q', stream: 'rows' }
    },
    command: async () => {
      others++
      const e = errors.shift()
      if (e !== undefined) throw e
      return { query_id: 'c' }
    },
  } as unknown as Connection
  return { conn, queries: () => queries, others: () => others }
}

const query = (c: Connection) => c.query({ query: 'SELECT 1' })

test("a read that raced a merge is run again and counted; its answer is the second read's", async () => {
  const err = parseError(SEEN_ON_CI)
  assert.equal(
    (err as { code?: string }).code,
    '107',
    'parsed as ClickHouse error 107, as the chDB connection throws it',
  )
  const f = fake([err])
  const before = mergeRaceRetryCount()
  const r = await query(retryReadsRacingMerges(f.conn))
  assert.deepEqual(r, { query_id: 'q', stream: 'rows' })
  assert.equal(f.queries(), 2)
  assert.equal(mergeRaceRetryCount() - before, 1)
})

test('at most MERGE_RACE_RETRIES retries: a part that stays missing reaches the caller', async () => {
  const f = fake(Array.from({ length: MERGE_RACE_RETRIES + 1 }, () => parseError(SEEN_ON_CI)))
  await assert.rejects(query(retryReadsRacingMerges(f.conn)), /Cannot open file .*all_3_3_0\/data\.bin/)
  assert.equal(f.queries(), MERGE_RACE_RETRIES + 1)
})

test('other errors, and the same error from a write, are not retried', async () => {
  for (const message of [
    "Code: 60. DB::Exception: Unknown table expression identifier 'benchstream.nosuch' in scope " +
      'SELECT * FROM benchstream.nosuch. (UNKNOWN_TABLE)',
    "Code: 107. DB::Exception: File /etc/nosuch doesn't exist. (FILE_DOESNT_EXIST)",
    'Code: 159. DB::Exception: Timeout exceeded: elapsed 3.0 seconds, maximum: 3. (TIMEOUT_EXCEEDED)',
  ]) {
    const f = fake([parseError(message)])
    await assert.rejects(query(retryReadsRacingMerges(f.conn)), { message: parseError(message).message })
    assert.equal(f.queries(), 1, message)
  }
  const w = fake([parseError(SEEN_ON_CI)])
  const wrapped = retryReadsRacingMerges(w.conn)
  await assert.rejects(wrapped.command({ query: 'ALTER TABLE t DELETE WHERE 1' }), /data\.bin/)
  assert.equal(w.others(), 1)
})
