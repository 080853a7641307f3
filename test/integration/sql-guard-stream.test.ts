/**
 * The guard's streams on the real embedded engine (no Kafka, no API): a
 * result comes chunk by chunk and whole; a limit passed fails it where it is
 * passed (before the first byte when that is within the first MiB, part-way
 * after); a cut comes only where asked, and is said; a query's connection is
 * given back when its caller cancels, and when its time is up even if the
 * caller stopped reading (that caller then gets the time-out at its next
 * read, never a short result that looks whole).
 */
import assert from 'node:assert/strict'
import { mkdtempSync, rmSync } from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { test } from 'node:test'
import { Session } from 'chdb'
import { openSqlGuard, type SqlGuard } from '../../services/adapters/clickhouse/sql-guard.js'
import type { GuardLimits } from '../../services/adapters/clickhouse/sql-guard-connections.js'
import { isBenchstreamError } from '../../services/core/errors.js'
import type { AdHocStream } from '../../services/core/ports/ad-hoc-queries.js'

const ROWS = 200_000

const dir = mkdtempSync(path.join(os.tmpdir(), 'benchstream-guard-stream-'))
test.after(() => rmSync(dir, { recursive: true, force: true }))

const LIMITS: GuardLimits = {
  timeoutS: 1,
  maxMemory: 300 * 1024 * 1024,
  maxRowsToRead: 2_000_000_000,
  maxBytesToRead: 2 ** 40,
  maxRows: 0,
  maxBytes: 0,
}

async function guard(limits: Partial<GuardLimits> = {}): Promise<SqlGuard> {
  return openSqlGuard(
    {
      url: undefined,
      cluster: undefined,
      user: 'default',
      password: '',
      database: 'benchstream',
      embeddedPath: dir,
      opsTtlDays: 0,
    },
    { database: 'benchstream', limits: { ...LIMITS, ...limits }, concurrency: 1, queue: 0, queueTimeoutMs: 0 },
  )
}

async function drain(s: AdHocStream): Promise<{ text: string; chunks: number }> {
  const parts: Buffer[] = []
  for await (const c of s) parts.push(Buffer.from(c))
  return { text: Buffer.concat(parts).toString(), chunks: parts.length }
}

const lines = (t: string): number => (t === '' ? 0 : t.trimEnd().split('\n').length)

/** Asks again while the one connection is not back yet (at most 5 s). */
async function retryBusy<T>(fn: () => Promise<T>): Promise<T> {
  for (let i = 0; ; i++) {
    try {
      return await fn()
    } catch (err) {
      if (!isBenchstreamError(err, 'BS_ERR_BUSY') || i >= 100) throw err
      await new Promise((r) => setTimeout(r, 50))
    }
  }
}

test('setup: a table of 200,000 rows', async () => {
  const s = new Session(dir)
  try {
    await s.queryAsync('CREATE DATABASE IF NOT EXISTS benchstream')
    await s.queryAsync('CREATE TABLE IF NOT EXISTS benchstream.t (n UInt64, s String) ENGINE = MergeTree ORDER BY n')
    await s.queryAsync(`INSERT INTO benchstream.t SELECT number, repeat('x', 20) FROM numbers(${ROWS})`)
  } finally {
    s.close()
  }
})

test('a result streams chunk by chunk and whole; a cut only where asked, and said', async () => {
  const g = await guard()
  try {
    const all = await g.stream('SELECT n, s FROM t ORDER BY n FORMAT TSV')
    assert.equal(all.complete, false, '5 MB do not fit the first MiB')
    const { text, chunks } = await drain(all)
    assert.equal(lines(text), ROWS)
    assert.ok(chunks > 10, `${chunks} chunks`)
    assert.equal(all.rows, ROWS)
    assert.equal(all.truncated, false)
    const cut = await g.stream('SELECT n FROM t ORDER BY n', { format: 'TSV', cut: { rows: 10 } })
    assert.equal((await drain(cut)).text, '0\n1\n2\n3\n4\n5\n6\n7\n8\n9\n')
    assert.equal(cut.truncated, true)
    assert.equal(cut.complete, true)
    // A format for people: cut by a LIMIT around the query.
    const pretty = await g.stream('SELECT n FROM t ORDER BY n', { format: 'PrettyCompact', cut: { rows: 5 } })
    assert.equal(lines((await drain(pretty)).text), 5 + 2)
    assert.equal(pretty.truncated, true)
  } finally {
    await g.close()
  }
})

test('a limit passed fails the result where it is passed: before the first byte, or part-way', async () => {
  const g = await guard({ maxRows: 150_000 })
  try {
    // Within the first MiB: the stream is refused.
    await assert.rejects(
      g.stream('SELECT number FROM numbers(200000)', { format: 'TSV' }),
      (err) => isBenchstreamError(err, 'BS_ERR_RESULT_LIMIT') && /max rows: 150000/.test(err.message),
    )
    // Part-way: the rows of the blocks before the one that passes the limit, then the error (the table's blocks are
    // the engine's; the rows of the block that passes it are not sent).
    const s = await g.stream('SELECT n, s FROM t ORDER BY n FORMAT TSV')
    let got = ''
    await assert.rejects(
      (async () => {
        for await (const c of s) got += Buffer.from(c).toString()
      })(),
      (err) => isBenchstreamError(err, 'BS_ERR_RESULT_LIMIT'),
    )
    assert.ok(lines(got) <= 150_000 && lines(got) > 100_000, `${lines(got)} rows before the error`)
    // The request's own limit, and a cut below the limit.
    await assert.rejects(
      g.stream('SELECT n FROM t', { format: 'TSV', fail: { rows: 5 } }),
      (err) => isBenchstreamError(err, 'BS_ERR_RESULT_LIMIT') && /max_result_rows/.test(err.message),
    )
    const cut = await g.stream('SELECT n FROM t', { format: 'TSV', cut: { rows: 1000 } })
    assert.equal(lines((await drain(cut)).text), 1000)
  } finally {
    await g.close()
  }
})

test('cancel and time-out free the connection; a stalled reader gets the time-out, not a short result', async () => {
  const g = await guard()
  try {
    const first = await g.stream('SELECT n, s FROM t ORDER BY n FORMAT TSV')
    // One connection, no queue: busy while a result is open.
    await assert.rejects(g.stream('SELECT 1'), (err) => isBenchstreamError(err, 'BS_ERR_BUSY'))
    first.cancel()
    assert.equal(first.stopped.aborted, true)
    // The connection comes back once the engine's stream is closed: a moment, not the rest of the result.
    assert.equal((await drain(await retryBusy(() => g.stream('SELECT 1 FORMAT TSV')))).text, '1\n')
    // A reader that takes one chunk and then stops: after the time limit (1 s, +2 s), the connection is free.
    const stalled = await g.stream('SELECT n, s FROM t ORDER BY n FORMAT TSV')
    const it = stalled[Symbol.asyncIterator]()
    await it.next()
    await new Promise((r) => setTimeout(r, 3500))
    assert.equal(stalled.stopped.aborted, true)
    assert.equal((await drain(await retryBusy(() => g.stream('SELECT 2 FORMAT TSV')))).text, '2\n')
    // Its next reads: the time-out.
    await assert.rejects(
      (async () => {
        for (;;) if ((await it.next()).done === true) return
      })(),
      (err) => isBenchstreamError(err, 'BS_ERR_QUERY_FAILED') && /longer than 1 s/.test(err.message),
    )
  } finally {
    await g.close()
  }
})
