/**
 * The partition worker's flush protocol, phase by phase, against fake ports:
 * a source that records commits, seeks, pauses and resumes in one log with
 * the store's writes (so the order of the protocol's steps is what is
 * checked), a store whose writes can fail, hang until released or report
 * dropped rows, and fake dead-letter and run-registry ports. Backoff is
 * driven by the time given to tick(), not by sleeping.
 */
import assert from 'node:assert/strict'
import { test } from 'node:test'
import { pino } from 'pino'
import { OpsBatchWriter } from '../../services/core/codec/ops-batch-writer.js'
import { isBenchstreamError } from '../../services/core/errors.js'
import type { DeadLetterRecord, DeadLetterSink } from '../../services/core/ports/dead-letter-sink.js'
import type {
  CommittedPosition,
  PartitionSource,
  PartitionSourceHandlers,
  SourceBatch,
} from '../../services/core/ports/partition-source.js'
import type { RunWindowRegistry } from '../../services/core/ports/run-registry.js'
import type { WindowStore, WriteOptions, WriteResult } from '../../services/core/ports/window-store.js'
import type { FlushBatch } from '../../services/core/stats/partition-state.js'
import { build } from '../../services/processor/app.js'
import { readProcessorConfig } from '../../services/processor/config.js'
import { PartitionWorker } from '../../services/processor/partition-worker.js'
import { newProcessorStats, type WorkerContext } from '../../services/processor/worker-context.js'
import { RunWindows } from '../../services/processor/run-windows.js'

/** Backoff long enough that only a tick() given a later time retries (no test waits for it). */
const config = readProcessorConfig({ PROCESSOR_GROUP_ID: 'g', INSERT_RETRY_MIN_MS: '60000' })
const TOPIC = config.infra.topics.events
const token = (a: number, b: number): string => `g/${TOPIC}/0/${a}-${b}`
const intent = (end: number): string => JSON.stringify({ v: 1, end })
/** A time after any backoff this file configures. */
const later = (): number => performance.now() + 3_600_000

interface Deferred {
  promise: Promise<void>
  resolve: () => void
  reject: (err: Error) => void
}
function deferred(): Deferred {
  let resolve!: () => void
  let reject!: (err: Error) => void
  const promise = new Promise<void>((res, rej) => {
    resolve = res
    reject = rej
  })
  return { promise, resolve, reject }
}

/** Lets pending promise reactions and timers of 0 ms run. */
const settle = (): Promise<void> => new Promise((r) => setTimeout(r, 5))

class FakeSource implements PartitionSource {
  position: CommittedPosition = { offset: -1, metadata: null }
  /** Commits to these offsets fail (once each). */
  readonly failCommitAt = new Set<number>()
  /** The next n commits fail, whatever their offset (a Kafka outage). */
  failNext = 0
  /** The next commit waits for this before it lands. */
  holdCommit: Deferred | undefined
  handlers: PartitionSourceHandlers | undefined

  constructor(private readonly log: string[]) {}

  async start(handlers: PartitionSourceHandlers): Promise<void> {
    this.handlers = handlers
  }
  async committed(): Promise<CommittedPosition> {
    this.log.push('read committed')
    return { ...this.position }
  }
  async commit(_partition: number, offset: number, metadata: string | null): Promise<void> {
    this.log.push(metadata === null ? `commit ${offset}` : `commit ${offset} ${metadata}`)
    const hold = this.holdCommit
    this.holdCommit = undefined
    if (hold !== undefined) await hold.promise
    if (this.failCommitAt.delete(offset)) throw new Error('The coordinator is not aware of this member')
    if (this.failNext > 0) {
      this.failNext--
      throw new Error('The group coordinator is not available')
    }
    this.position = { offset, metadata }
  }
  async endOffsets(): Promise<Map<number, number>> {
    return new Map()
  }
  seek(_partition: number, offset: number): void {
    this.log.push(`seek ${offset}`)
  }
  pause(): void {
    this.log.push('pause')
  }
  resume(): void {
    this.log.push('resume')
  }
  async stop(): Promise<void> {}
  async close(): Promise<void> {}
}

type WriteMode = 'ok' | 'fail' | 'hang' | 'drop'

class FakeStore implements WindowStore {
  /** What the next writes do, in turn; 'ok' once the list is used up. */
  readonly next: WriteMode[] = []
  /** Writes in 'hang', waiting to be resolved (then they succeed) or rejected. */
  readonly hung: Deferred[] = []

  constructor(private readonly log: string[]) {}

  async write(batch: FlushBatch, opts?: WriteOptions): Promise<WriteResult> {
    const mode = this.next.shift() ?? 'ok'
    this.log.push(`write ${batch.token} verify=${opts?.verify === true}`)
    if (mode === 'fail') throw new Error('connect ECONNREFUSED 127.0.0.1:8123 (simulated)')
    if (mode === 'hang') {
      const d = deferred()
      this.hung.push(d)
      await d.promise
    }
    if (mode === 'drop' && opts?.verify === true)
      return { refused: [], missing: [{ table: 'benchstream.ops', expected: batch.events, found: 0, restored: true }] }
    return { refused: [], missing: [] }
  }
}

class FakeDeadLetters implements DeadLetterSink {
  readonly sent: DeadLetterRecord[][] = []
  /** The next send waits for this. */
  hold: Deferred | undefined

  constructor(private readonly log: string[]) {}

  async send(records: readonly DeadLetterRecord[]): Promise<void> {
    this.log.push(`dead letters ${records.length}`)
    this.sent.push([...records])
    const hold = this.hold
    this.hold = undefined
    if (hold !== undefined) await hold.promise
  }
  async close(): Promise<void> {}
}

class FakeRuns implements RunWindowRegistry {
  readonly claims: string[][] = []
  constructor(private readonly registered: Record<string, number> = {}) {}
  async claim(runIds: readonly string[], windowMs: number): Promise<Map<string, number>> {
    this.claims.push([...runIds])
    return new Map(runIds.map((r) => [r, this.registered[r] ?? windowMs]))
  }
}

/** One OPS message with `n` events of run `runId`. */
function ops(n = 2, runId = 'run-1'): Buffer {
  const w = new OpsBatchWriter(runId, 'client-1')
  for (let i = 0; i < n; i++) w.add(0, 1, 0, 0, Date.now() * 1000, 100 + i, 100 + i, 10)
  return w.finish()
}
/** A message that cannot be decoded (a dead letter: bad_magic). */
const junk = (): Buffer => Buffer.from([0x7b, 0x22, 0x61, 0x22, 0x7d])

function batchOf(firstOffset: number, values: Array<Buffer | null>): SourceBatch {
  return {
    partition: 0,
    firstOffset,
    messages: values.map((value, i) => ({ offset: firstOffset + i, value })),
    heartbeat: async () => undefined,
    isCurrent: () => true,
  }
}
const opsBatch = (firstOffset: number, count: number): SourceBatch =>
  batchOf(
    firstOffset,
    Array.from({ length: count }, () => ops()),
  )

function harness(registered: Record<string, number> = {}) {
  const log: string[] = []
  const lines: string[] = []
  const source = new FakeSource(log)
  const store = new FakeStore(log)
  const deadLetters = new FakeDeadLetters(log)
  const registry = new FakeRuns(registered)
  const flushed: FlushBatch[] = []
  let running = true
  const logger = pino({ level: 'info' }, { write: (s: string) => lines.push((JSON.parse(s) as { msg: string }).msg) })
  const ctx: WorkerContext = {
    config,
    ports: { source, store, deadLetters, log: logger, onFlushed: (b) => flushed.push(b) },
    stats: newProcessorStats(),
    runs: new RunWindows(registry, config.windowMs),
    running: () => running,
    track: () => undefined,
  }
  return {
    log,
    lines,
    source,
    store,
    deadLetters,
    registry,
    flushed,
    ctx,
    stats: ctx.stats,
    worker: new PartitionWorker(0, ctx),
    stop: () => (running = false),
  }
}

test('a flush commits the intent, then writes under the range token, then commits b + 1, in that order', async () => {
  const h = harness()
  await h.worker.onBatch(opsBatch(0, 3))
  assert.equal(h.worker.phase, 'accumulating')
  assert.deepEqual(h.log, ['read committed'], 'nothing is written before a flush')
  await h.worker.flushAll()
  assert.deepEqual(h.log, ['read committed', `commit 0 ${intent(2)}`, `write ${token(0, 2)} verify=false`, 'commit 3'])
  assert.equal(h.worker.phase, 'accumulating')
  assert.deepEqual(h.source.position, { offset: 3, metadata: null })
  assert.equal(h.stats.flushes, 1)
  assert.equal(h.stats.events, 6)
  assert.deepEqual(
    h.flushed.map((b) => b.token),
    [token(0, 2)],
  )
})

test('the next range accumulates while a batch is stored in the background; its flush waits for it', async () => {
  const h = harness()
  h.store.next.push('hang')
  await h.worker.onBatch(opsBatch(0, 3))
  await h.worker.tick(later()) // due by the flush interval: intent, drain, store in the background
  assert.equal(h.worker.phase, 'storing')
  await h.worker.onBatch(opsBatch(3, 2))
  assert.equal(h.worker.phase, 'storing')
  const flushing = h.worker.flushAll()
  await settle()
  assert.deepEqual(h.log.slice(1), [`commit 0 ${intent(2)}`, `write ${token(0, 2)} verify=false`])
  h.store.hung[0]!.resolve()
  await flushing
  assert.deepEqual(h.log.slice(1), [
    `commit 0 ${intent(2)}`,
    `write ${token(0, 2)} verify=false`,
    'commit 3',
    `commit 3 ${intent(4)}`,
    `write ${token(3, 4)} verify=false`,
    'commit 5',
  ])
  assert.equal(h.worker.phase, 'accumulating')
})

test('a failed write holds the batch back: the partition pauses, takes nothing more, resumes on retry', async () => {
  const h = harness()
  h.store.next.push('fail')
  await h.worker.onBatch(opsBatch(0, 3))
  await h.worker.tick(later())
  await h.worker.settled()
  assert.equal(h.worker.phase, 'held-back')
  assert.deepEqual(h.log.slice(1), [`commit 0 ${intent(2)}`, `write ${token(0, 2)} verify=false`, 'pause'])
  assert.equal(h.stats.insertRetries, 1)
  assert.equal(h.worker.heldBack()?.failures, 1)
  assert.ok(h.lines.includes('ClickHouse write failed; partition paused, retrying with backoff'))
  // Held back: a batch the source still delivers is taken again later, from where the state goes on.
  await h.worker.onBatch(opsBatch(3, 2))
  assert.equal(h.log.at(-1), 'seek 3')
  // Not before the backoff has passed...
  await h.worker.tick(performance.now())
  assert.equal(h.log.filter((l) => l.startsWith('write')).length, 1)
  // ...then retried as a verified write, committed, resumed.
  await h.worker.tick(later())
  await h.worker.settled()
  assert.deepEqual(h.log.slice(-3), [`write ${token(0, 2)} verify=true`, 'commit 3', 'resume'])
  assert.equal(h.worker.phase, 'accumulating')
  assert.equal(h.worker.heldBack(), undefined)
  assert.ok(h.lines.includes('ClickHouse write succeeded after retries; partition resumed'))
  assert.equal(h.stats.flushes, 1)
})

test('dead letters are sent once, however often the write is retried', async () => {
  const h = harness()
  h.store.next.push('fail', 'fail')
  await h.worker.onBatch(batchOf(0, [junk(), ops()]))
  await h.worker.flushAll()
  assert.equal(h.worker.phase, 'held-back')
  await h.worker.tick(later())
  assert.equal(h.worker.phase, 'held-back')
  await h.worker.tick(later())
  assert.equal(h.worker.phase, 'accumulating')
  assert.equal(h.log.filter((l) => l.startsWith('write')).length, 3)
  assert.equal(h.deadLetters.sent.length, 1)
  assert.equal(h.deadLetters.sent[0]![0]!.reason, 'bad_magic')
  assert.equal(h.deadLetters.sent[0]![0]!.sourceOffset, 0)
  assert.equal(h.stats.deadLetters, 1)
  assert.deepEqual(h.stats.rejectedByReason, { bad_magic: 1 })
  assert.equal(h.stats.insertRetries, 2)
})

test('an intent found at assignment is replayed: exactly a..b again, the same token, a verified write', async () => {
  const h = harness()
  h.source.position = { offset: 10, metadata: intent(12) }
  await h.worker.onBatch(opsBatch(10, 5))
  await h.worker.settled()
  assert.equal(h.stats.replays, 1)
  // No intent commit: the intent is there already. Offsets 13 and 14 go on into the next range.
  assert.deepEqual(h.log, ['read committed', `write ${token(10, 12)} verify=true`, 'commit 13'])
  assert.equal(h.worker.phase, 'accumulating')
  await h.worker.flushAll()
  assert.deepEqual(h.log.slice(3), [`commit 13 ${intent(14)}`, `write ${token(13, 14)} verify=false`, 'commit 15'])
})

test('a replay is not flushed early: it waits for offset b, whatever the timer says', async () => {
  const h = harness()
  h.source.position = { offset: 10, metadata: intent(12) }
  await h.worker.onBatch(opsBatch(10, 2))
  assert.equal(h.worker.phase, 'replaying')
  await h.worker.tick(later())
  await h.worker.flushAll()
  assert.deepEqual(h.log, ['read committed'])
  await h.worker.onBatch(opsBatch(12, 1))
  await h.worker.settled()
  assert.deepEqual(h.log.slice(1), [`write ${token(10, 12)} verify=true`, 'commit 13'])
})

test('rows a verified replay finds dropped are written again, counted and logged', async () => {
  const h = harness()
  h.source.position = { offset: 0, metadata: intent(1) }
  h.store.next.push('drop')
  await h.worker.onBatch(opsBatch(0, 2))
  await h.worker.settled()
  assert.equal(h.stats.rowsRewritten, 4)
  assert.equal(h.stats.rowsUnaccounted, 0)
  assert.ok(h.lines.some((l) => l.includes('as a duplicate of an insert that never landed')))
})

test('a rebalance during a background store: a write resolving after it is not committed or repeated', async () => {
  const h = harness()
  h.store.next.push('hang')
  await h.worker.onBatch(opsBatch(0, 3))
  await h.worker.tick(later())
  assert.equal(h.worker.phase, 'storing')
  h.worker.revoke()
  assert.equal(h.worker.phase, 'revoked')
  h.store.hung[0]!.resolve()
  await h.worker.settled()
  await h.worker.flushAll()
  await h.worker.tick(later())
  assert.deepEqual(h.log, ['read committed', `commit 0 ${intent(2)}`, `write ${token(0, 2)} verify=false`])
  assert.equal(h.stats.flushes, 0)
  assert.deepEqual(h.flushed, [])
  assert.deepEqual(h.lines, [], 'stopped by its own check, not by an impossible transition')
  // A late batch of the revoked partition is ignored.
  await h.worker.onBatch(opsBatch(3, 2))
  assert.equal(h.log.length, 3)
})

test('a rebalance during a background store whose write then fails: no hold-back, no pause, no retry', async () => {
  const h = harness()
  h.store.next.push('hang')
  await h.worker.onBatch(opsBatch(0, 3))
  await h.worker.tick(later())
  h.worker.revoke()
  h.store.hung[0]!.reject(new Error('socket hang up'))
  await h.worker.settled()
  await h.worker.tick(later())
  assert.deepEqual(h.log, ['read committed', `commit 0 ${intent(2)}`, `write ${token(0, 2)} verify=false`])
  assert.equal(h.worker.phase, 'revoked')
  assert.equal(h.stats.insertRetries, 0)
  assert.deepEqual(h.lines, [])
})

test('a rebalance while the dead letters go out: the batch is not written', async () => {
  const h = harness()
  h.deadLetters.hold = deferred()
  const hold = h.deadLetters.hold
  await h.worker.onBatch(batchOf(0, [junk(), ops()]))
  await h.worker.tick(later())
  assert.equal(h.worker.phase, 'storing')
  h.worker.revoke()
  hold.resolve()
  await h.worker.settled()
  assert.deepEqual(h.log, ['read committed', `commit 0 ${intent(1)}`, 'dead letters 1'])
})

test('a rebalance during the intent commit: nothing is drained or written', async () => {
  const h = harness()
  await h.worker.onBatch(opsBatch(0, 3))
  h.source.holdCommit = deferred()
  const hold = h.source.holdCommit
  const ticking = h.worker.tick(later())
  await settle()
  assert.equal(h.worker.phase, 'intent-committing')
  h.worker.revoke()
  hold.resolve()
  await ticking
  await h.worker.settled()
  assert.deepEqual(h.log, ['read committed', `commit 0 ${intent(2)}`])
})

test('a rebalance while held back: the partition is resumed and the retry never runs', async () => {
  const h = harness()
  h.store.next.push('fail')
  await h.worker.onBatch(opsBatch(0, 3))
  await h.worker.flushAll()
  assert.equal(h.worker.phase, 'held-back')
  h.worker.revoke()
  assert.equal(h.log.at(-1), 'resume')
  await h.worker.tick(later())
  await h.worker.flushAll()
  assert.equal(h.log.filter((l) => l.startsWith('write')).length, 1)
  assert.equal(h.worker.heldBack(), undefined)
})

test('a rebalance during a replay: what the revoked worker reads next is ignored, nothing written', async () => {
  const h = harness()
  h.source.position = { offset: 10, metadata: intent(14) }
  await h.worker.onBatch(opsBatch(10, 2))
  assert.equal(h.worker.phase, 'replaying')
  h.worker.revoke()
  await h.worker.onBatch(opsBatch(12, 3))
  await h.worker.flushAll()
  assert.deepEqual(h.log, ['read committed'])
})

test(
  "a rebalance during a replay's verified write: no commit; the next worker replays again, " +
    'only once the old write has settled',
  async () => {
    const h = harness()
    h.source.position = { offset: 10, metadata: intent(12) }
    h.store.next.push('hang')
    await h.worker.onBatch(opsBatch(10, 3))
    assert.equal(h.worker.phase, 'storing')
    h.worker.revoke()
    const next = new PartitionWorker(0, h.ctx, h.worker.settled())
    const taking = next.onBatch(opsBatch(10, 3))
    await settle()
    assert.equal(next.phase, 'replaying')
    assert.deepEqual(h.log, ['read committed', `write ${token(10, 12)} verify=true`, 'read committed'])
    h.log.push('old write lands')
    h.store.hung[0]!.resolve()
    await taking
    await next.settled()
    assert.deepEqual(h.log.slice(3), ['old write lands', `write ${token(10, 12)} verify=true`, 'commit 13'])
    assert.equal(h.stats.replays, 2)
    assert.equal(h.stats.flushes, 1)
  },
)

test('a failed commit of b + 1 drops the state; the partition is read again from its committed position', async () => {
  const h = harness()
  h.source.failCommitAt.add(3)
  await h.worker.onBatch(opsBatch(0, 3))
  await h.worker.flushAll()
  assert.equal(h.worker.phase, 'closed')
  assert.equal(h.stats.flushes, 0)
  assert.deepEqual(h.source.position, { offset: 0, metadata: intent(2) })
  // The source read on: the next batch starts later, so the worker seeks back (once) to the committed position...
  await h.worker.onBatch(opsBatch(3, 2))
  assert.deepEqual(h.log.slice(-2), ['read committed', 'seek 0'])
  assert.equal(h.worker.phase, 'replaying')
  // ...and replays the interrupted range from there.
  await h.worker.onBatch(opsBatch(0, 5))
  await h.worker.settled()
  assert.deepEqual(h.log.slice(-2), [`write ${token(0, 2)} verify=true`, 'commit 3'])
  assert.equal(h.stats.flushes, 1)
})

test('a failed intent commit drops the state and fails the batch (the source delivers it again)', async () => {
  const h = harness()
  h.source.failCommitAt.add(0)
  await h.worker.onBatch(opsBatch(0, 3))
  await assert.rejects(h.worker.flushAll(), (e: unknown) => isBenchstreamError(e, 'BS_ERR_KAFKA'))
  assert.equal(h.worker.phase, 'closed')
  assert.deepEqual(h.log, ['read committed', `commit 0 ${intent(2)}`])
})

test('commits failing again and again at one position (an outage): the worker goes back to it each time', async () => {
  const h = harness()
  h.source.position = { offset: 0, metadata: null }
  h.source.failNext = 2
  await h.worker.onBatch(opsBatch(0, 3))
  await assert.rejects(h.worker.flushAll(), (e: unknown) => isBenchstreamError(e, 'BS_ERR_KAFKA'))
  // The source read on past the dropped state: back to the committed position.
  await h.worker.onBatch(opsBatch(3, 2))
  assert.deepEqual(h.log.slice(-2), ['read committed', 'seek 0'])
  await h.worker.onBatch(opsBatch(0, 5))
  await assert.rejects(h.worker.flushAll(), (e: unknown) => isBenchstreamError(e, 'BS_ERR_KAFKA'))
  // Failed again at the same position, and the source read on again: back to it again (the seek worked last time).
  await h.worker.onBatch(opsBatch(5, 2))
  assert.deepEqual(h.log.slice(-2), ['read committed', 'seek 0'])
  await h.worker.onBatch(opsBatch(0, 7))
  await h.worker.flushAll()
  await h.worker.settled()
  assert.deepEqual(h.log.slice(-3), [`commit 0 ${intent(6)}`, `write ${token(0, 6)} verify=false`, 'commit 7'])
  assert.equal(h.stats.events, 14, 'all 7 messages of 2 events, none skipped')
})

test('a failed first commit of a partition never committed: reading starts over where the state began', async () => {
  const h = harness()
  h.source.failNext = 1
  await h.worker.onBatch(opsBatch(10, 3))
  await assert.rejects(h.worker.flushAll(), (e: unknown) => isBenchstreamError(e, 'BS_ERR_KAFKA'))
  // Nothing committed yet, the source read on: back to where the dropped state began, not to this batch.
  await h.worker.onBatch(opsBatch(13, 2))
  assert.deepEqual(h.log.slice(-2), ['read committed', 'seek 10'])
  await h.worker.onBatch(opsBatch(10, 5))
  await h.worker.flushAll()
  await h.worker.settled()
  assert.deepEqual(h.log.slice(-3), [`commit 10 ${intent(14)}`, `write ${token(10, 14)} verify=false`, 'commit 15'])
  assert.equal(h.stats.events, 10)
})

test('stopping with a held-back batch that still fails abandons it with the state after it', async () => {
  const h = harness()
  h.store.next.push('hang', 'fail')
  await h.worker.onBatch(opsBatch(0, 3))
  await h.worker.tick(later())
  await h.worker.onBatch(opsBatch(3, 2)) // the next range, decoded while 0..2 is stored
  h.store.hung[0]!.reject(new Error('connect ECONNREFUSED (simulated)'))
  await h.worker.settled()
  assert.equal(h.worker.phase, 'held-back')
  h.stop()
  await h.worker.flushAll()
  assert.equal(h.worker.phase, 'closed')
  // 3..4 must not be committed past 0..2, which was never written: the committed position stays at 0.
  assert.deepEqual(h.source.position, { offset: 0, metadata: intent(2) })
  assert.deepEqual(h.log.slice(-2), [`write ${token(0, 2)} verify=true`, 'resume'])
  assert.ok(!h.log.some((l) => l.startsWith('commit 3')))
})

test('an impossible transition is a bug: revoking twice throws BS_ERR_INTERNAL', () => {
  const h = harness()
  h.worker.revoke()
  assert.throws(
    () => h.worker.revoke(),
    (e: unknown) => isBenchstreamError(e, 'BS_ERR_INTERNAL') && /from revoked to revoked/.test(e.message),
  )
})

test('run window lengths are claimed once per run; a run registered with another length is dead-lettered', async () => {
  const h = harness({ 'run-500': 500 })
  await h.worker.onBatch(batchOf(0, [ops(2, 'run-1'), ops(2, 'run-500'), ops(2, 'run-1')]))
  await h.worker.onBatch(batchOf(3, [ops(2, 'run-1')]))
  assert.deepEqual(h.registry.claims, [['run-1', 'run-500']])
  await h.worker.flushAll()
  assert.equal(h.stats.events, 6)
  assert.deepEqual(h.stats.rejectedByReason, { window_length_mismatch: 1 })
})

test('lag and stalls: behind the committed position, not advanced for longer than the bound', async () => {
  const h = harness()
  await h.worker.onBatch(opsBatch(0, 3))
  assert.equal(h.worker.observeLogEnd(10), 7, 'the consumer-lag metric: behind what was read')
  assert.equal(h.worker.stalled(60_000), undefined)
  assert.match(
    h.worker.stalled(60_000, Date.now() + 120_000) ?? '',
    /^partition 0: 10 messages behind and not advanced/,
  )
  await h.worker.flushAll()
  h.worker.observeLogEnd(10)
  assert.match(h.worker.stalled(60_000, Date.now() + 120_000) ?? '', /^partition 0: 7 messages behind/)
})

test('the processor routes batches to one worker per partition and revokes them all at a rebalance', async () => {
  const log: string[] = []
  const source = new FakeSource(log)
  const store = new FakeStore(log)
  const p = build(config, { source, store, deadLetters: new FakeDeadLetters(log), runs: new FakeRuns() })
  await p.start()
  try {
    const handlers = source.handlers!
    store.next.push('hang')
    await handlers.onBatch(opsBatch(0, 3))
    const flushing = p.flushAll()
    await settle()
    assert.deepEqual(log.slice(1), [`commit 0 ${intent(2)}`, `write ${token(0, 2)} verify=false`])
    handlers.onRebalance([0])
    store.hung[0]!.resolve()
    await flushing
    // The partition's next batch gets a new worker: it replays the intent after the old write has settled.
    await handlers.onBatch(opsBatch(0, 3))
    await p.flushAll()
    assert.deepEqual(log.slice(3), ['read committed', `write ${token(0, 2)} verify=true`, 'commit 3'])
    assert.equal(p.stats.replays, 1)
    assert.equal(p.stats.flushes, 1)
    assert.deepEqual(p.heldBack(), [])
    assert.deepEqual(p.health({ failingMs: 1000, stallMs: 1000, kafkaMs: 1000 }), [])
  } finally {
    await p.stop()
  }
})
