/**
 * The pieces that let a client's threads run in worker threads: the event
 * ring between a client thread and the delivery thread, the workload state
 * the threads share (key sequences, acknowledged-insert window), the exact
 * merge of their measurements (intended latencies too), schedule keeping
 * per JS thread joined into the client's episodes, and how many workers a
 * client starts.
 */
import assert from 'node:assert/strict'
import { test } from 'node:test'
import { CoreWorkload } from '../../services/core/workload/core-workload.js'
import { createEventRing, RingConsumer, RingProducer, ringState } from '../../services/driver/event-ring.js'
import { Measurements } from '../../services/driver/measurements.js'
import { ScheduleEpisodes, ScheduleTracker, type ScheduleEvent } from '../../services/driver/schedule-keeping.js'
import { ThreadGroup } from '../../services/driver/thread-group.js'
import { defaultWorkerCount } from '../../services/driver/worker-pool.js'

type Rec = [number, number, number, number, number, number, number, number]

function collect(): { visitor: { record: (...a: Rec) => void }; seen: Rec[] } {
  const seen: Rec[] = []
  return { seen, visitor: { record: (...a: Rec) => void seen.push(a) } }
}

test('event ring: records come out as they went in, in order, across the wrap-around', () => {
  const sab = createEventRing(8)
  const p = new RingProducer(sab)
  const c = new RingConsumer(sab)
  const { visitor, seen } = collect()
  const want: Rec[] = []
  for (let i = 0; i < 30; i++) {
    const r: Rec = [i % 5, (i % 6) + 1, i % 3, i % 9, 1.7e15 + i * 13, 100 + i, 200 + i, i * 1000]
    p.record(...r)
    want.push(r)
    if (i % 3 === 2) c.drain(visitor)
  }
  c.drain(visitor)
  assert.deepEqual(seen, want)
  assert.deepEqual(ringState(sab), { pending: 0, dropped: 0 })
})

test(
  'event ring: a full ring drops and counts, never overwrites; publishEvery holds records back ' + 'until publish()',
  () => {
    const sab = createEventRing(4)
    const p = new RingProducer(sab, 3)
    const c = new RingConsumer(sab)
    const { visitor, seen } = collect()
    p.record(0, 1, 0, 0, 1, 1, 1, 1)
    p.record(0, 1, 0, 0, 2, 2, 2, 2)
    assert.equal(c.drain(visitor), 0, 'not published yet')
    assert.equal(p.unpublishedCount, 2)
    p.publish()
    for (let i = 3; i <= 7; i++) p.record(0, 1, 0, 0, i, i, i, i)
    p.publish()
    assert.deepEqual(ringState(sab), { pending: 4, dropped: 3 })
    assert.equal(c.drain(visitor), 4)
    assert.deepEqual(
      seen.map((r) => r[4]),
      [1, 2, 3, 4],
    )
    // Values beyond 32 bits are clamped, not wrapped.
    p.record(65_535, 6, 2, 15, 5, 2 ** 33, 2 ** 33, 2 ** 40)
    p.publish()
    c.drain(visitor)
    assert.deepEqual(seen.at(-1), [65_535, 6, 2, 15, 5, 0xffff_ffff, 0xffff_ffff, 0xffff_ffff])
  },
)

const PROPS = {
  recordcount: '1000',
  operationcount: '1000',
  insertproportion: '1',
  readproportion: '0',
  updateproportion: '0',
  requestdistribution: 'latest',
}

test('a ring that publishes in steps is published when its client threads step aside, all sleep, or end', async () => {
  const sab = createEventRing(1024)
  const p = new RingProducer(sab, 1000)
  const c = new RingConsumer(sab)
  const { visitor, seen } = collect()
  const stop = new Int32Array(new SharedArrayBuffer(4))
  const g = new ThreadGroup(false, false, p, 0, { word: stop, index: 0 })
  g.enter()
  p.record(0, 1, 0, 0, 1, 10, 10, 0)
  g.epoch(1)
  assert.equal(c.drain(visitor), 0, 'within the yield interval: held back')
  g.epoch(6)
  assert.equal(c.drain(visitor), 1, 'a new epoch (the threads step aside): visible')
  p.record(0, 1, 0, 0, 2, 20, 20, 0)
  // The only thread sleeps until a start far enough ahead that the thread idles on a timer first.
  const woke = g.sleep(performance.now() + 40)
  assert.equal(c.drain(visitor), 1, 'every thread asleep: visible')
  await woke
  p.record(0, 1, 0, 0, 3, 30, 30, 0)
  g.leave()
  assert.equal(c.drain(visitor), 1, 'the last thread ended: visible')
  assert.deepEqual(
    seen.map((r) => r[5]),
    [10, 20, 30],
  )
})

test('shared workload state: threads load every key once, between them', () => {
  const main = CoreWorkload.fromProperties({ ...PROPS, insertstart: '100', insertcount: '500' })
  const shared = main.createSharedState()
  const threads = [1, 2, 3].map((seed) =>
    CoreWorkload.fromProperties({ ...PROPS, insertstart: '100', insertcount: '500' }, { seed, shared }),
  )
  const keys: number[] = []
  for (let i = 0; keys.length < 600 && i < 2000; i++) {
    const tx = threads[i % 3]!.nextLoad()
    if (tx !== undefined && tx.op === 'INSERT') keys.push(tx.keynum)
  }
  assert.equal(keys.length, 500)
  assert.deepEqual(
    [...keys].sort((a, b) => a - b),
    Array.from({ length: 500 }, (_, i) => 100 + i),
  )
  assert.ok(threads.every((t) => t.nextLoad() === undefined))
})

test(
  'shared workload state: run inserts take one sequence; the acknowledged limit follows acknowledgements ' +
    'from any thread, in any order',
  () => {
    const shared = CoreWorkload.fromProperties(PROPS).createSharedState()
    const [a, b] = [1, 2].map((seed) => CoreWorkload.fromProperties(PROPS, { seed, shared }))
    const keynums: number[] = []
    for (let i = 0; i < 6; i++) {
      const tx = (i % 2 === 0 ? a : b)!.nextTransaction()
      assert.equal(tx.op, 'INSERT')
      if (tx.op === 'INSERT') keynums.push(tx.keynum)
    }
    assert.deepEqual(keynums, [1000, 1001, 1002, 1003, 1004, 1005])
    assert.equal(a!.acknowledgedKeyLimit, 1000)
    b!.acknowledgeInsert(1001)
    a!.acknowledgeInsert(1002)
    assert.equal(b!.acknowledgedKeyLimit, 1000, 'a gap at 1000 holds the limit back')
    b!.acknowledgeInsert(1000)
    assert.equal(a!.acknowledgedKeyLimit, 1003)
    assert.equal(b!.acknowledgedKeyLimit, 1003)
    a!.acknowledgeInsert(1005)
    a!.acknowledgeInsert(1004)
    b!.acknowledgeInsert(1003)
    assert.equal(a!.acknowledgedKeyLimit, 1006)
    assert.throws(() => a!.acknowledgeInsert(1006), /never handed out/)
  },
)

test('shared workload state: the sequential distribution walks one position for all threads', () => {
  const props = {
    recordcount: '10',
    operationcount: '100',
    readproportion: '1',
    updateproportion: '0',
    requestdistribution: 'sequential',
  }
  const shared = CoreWorkload.fromProperties(props).createSharedState()
  const [a, b] = [1, 2].map((seed) => CoreWorkload.fromProperties(props, { seed, shared }))
  const keys = Array.from({ length: 12 }, (_, i) => {
    const tx = (i % 2 === 0 ? a : b)!.nextTransaction()
    return tx.op === 'READ' ? tx.key : ''
  })
  const single = CoreWorkload.fromProperties(props)
  assert.deepEqual(
    keys,
    Array.from({ length: 12 }, () => {
      const tx = single.nextTransaction()
      return tx.op === 'READ' ? tx.key : ''
    }),
  )
})

test('measurements merge exactly: two threads merged = one thread that saw everything, intended latencies too', () => {
  const one = new Measurements(true)
  const parts = [new Measurements(true), new Measurements(true)]
  for (let i = 0; i < 5000; i++) {
    const key = (1 + (i % 3)) * 16 + (i % 7 === 0 ? 1 : 0)
    const lat = (i * 7919) % 100_000
    one.add(key, lat, lat + (i % 11) * 1000)
    parts[i % 2]!.add(key, lat, lat + (i % 11) * 1000)
  }
  const merged = new Measurements()
  for (const p of parts) merged.merge(p.toWire())
  assert.deepEqual(merged.aggregates(), one.aggregates())
  assert.ok(merged.aggregates().every((a) => a.intended !== undefined && a.intended.maxUs >= a.maxUs))
  assert.equal(merged.count(), 5000)
  const names = ['INSERT', 'INSERT-FAILED', 'READ', 'READ-FAILED', 'UPDATE', 'UPDATE-FAILED']
  assert.deepEqual([...merged.intervals().keys()].sort(), [...names, ...names.map((n) => `Intended-${n}`)].sort())
  // Unthrottled: no intended cells at all.
  const plain = new Measurements()
  plain.add(16, 5, 9)
  assert.equal(plain.aggregates()[0]!.intended, undefined)
  assert.deepEqual([...plain.intervals().keys()], ['READ'])
})

test(
  'schedule keeping: one JS thread behind, then caught up after a second without a late start; ' +
    "the client joins its threads' episodes",
  () => {
    const seen: ScheduleEvent[] = []
    const lag = new ScheduleTracker(50, 1000, (e) => seen.push(e))
    lag.started(1010, 1000)
    lag.started(1100, 1000) // 100 ms late: behind
    lag.started(1300, 1100) // 200 ms late, same episode
    lag.started(1400, 1390)
    lag.started(2400, 2395) // on time, but the last late start was 1.1 s ago: caught up
    lag.started(2600, 2500) // behind again
    assert.deepEqual(seen, [
      { kind: 'behind', lagMs: 100, elapsedMs: 100 },
      { kind: 'caught-up', maxLagMs: 200, durationMs: 200, elapsedMs: 1400 },
      { kind: 'behind', lagMs: 100, elapsedMs: 1600 },
    ])
    assert.equal(lag.episodes, 2)
    assert.equal(lag.maxLagMs, 200)

    // Two workers: the client is behind from the first one's 'behind' to the last one's 'caught-up'.
    const client: ScheduleEvent[] = []
    const episodes = new ScheduleEpisodes((e) => client.push(e))
    episodes.add(0, { kind: 'behind', lagMs: 60, elapsedMs: 100 })
    episodes.add(1, { kind: 'behind', lagMs: 300, elapsedMs: 150 })
    episodes.add(0, { kind: 'caught-up', maxLagMs: 80, durationMs: 500, elapsedMs: 1700 })
    episodes.add(1, { kind: 'caught-up', maxLagMs: 400, durationMs: 900, elapsedMs: 2100 })
    episodes.add(1, { kind: 'behind', lagMs: 70, elapsedMs: 3000 })
    assert.deepEqual(client, [
      { kind: 'behind', lagMs: 60, elapsedMs: 100 },
      { kind: 'caught-up', maxLagMs: 400, durationMs: 950, elapsedMs: 2100 },
      { kind: 'behind', lagMs: 70, elapsedMs: 3000 },
    ])
    assert.equal(episodes.episodes, 2)
  },
)

test('workers: one per core, never more than the client threads or MAX_WORKERS', () => {
  assert.equal(defaultWorkerCount(8, 2), 2)
  assert.equal(defaultWorkerCount(1, 16), 1)
  assert.equal(defaultWorkerCount(12, 16), 12)
  assert.equal(defaultWorkerCount(1000, 256), 64)
})
