/**
 * The pieces that let a client's threads run in worker threads: the event
 * ring between a client thread and the delivery thread, the workload state
 * the threads share (key sequences, acknowledged-insert window), the exact
 * merge of their measurements, and how many workers a client starts.
 */
import assert from 'node:assert/strict'
import { test } from 'node:test'
import { CoreWorkload } from '../../services/core/workload/core-workload.js'
import { createEventRing, RingConsumer, RingProducer, ringState } from '../../services/driver/event-ring.js'
import { Measurements } from '../../services/driver/measurements.js'
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

test('event ring: a full ring drops and counts, never overwrites; publishEvery holds records back until publish()', () => {
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
  assert.deepEqual(seen.map((r) => r[4]), [1, 2, 3, 4])
  // Values beyond 32 bits are clamped, not wrapped.
  p.record(65_535, 6, 2, 15, 5, 2 ** 33, 2 ** 33, 2 ** 40)
  p.publish()
  c.drain(visitor)
  assert.deepEqual(seen.at(-1), [65_535, 6, 2, 15, 5, 0xffff_ffff, 0xffff_ffff, 0xffff_ffff])
})

const PROPS = { recordcount: '1000', operationcount: '1000', insertproportion: '1', readproportion: '0', updateproportion: '0', requestdistribution: 'latest' }

test('shared workload state: threads load every key once, between them', () => {
  const main = CoreWorkload.fromProperties({ ...PROPS, insertstart: '100', insertcount: '500' })
  const shared = main.createSharedState()
  const threads = [1, 2, 3].map((seed) => CoreWorkload.fromProperties({ ...PROPS, insertstart: '100', insertcount: '500' }, { seed, shared }))
  const keys: number[] = []
  for (let i = 0; keys.length < 600 && i < 2000; i++) {
    const tx = threads[i % 3]!.nextLoad()
    if (tx !== undefined && tx.op === 'INSERT') keys.push(tx.keynum)
  }
  assert.equal(keys.length, 500)
  assert.deepEqual([...keys].sort((a, b) => a - b), Array.from({ length: 500 }, (_, i) => 100 + i))
  assert.ok(threads.every((t) => t.nextLoad() === undefined))
})

test('shared workload state: run inserts take one sequence; the acknowledged limit follows acknowledgements from any thread, in any order', () => {
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
})

test('shared workload state: the sequential distribution walks one position for all threads', () => {
  const props = { recordcount: '10', operationcount: '100', readproportion: '1', updateproportion: '0', requestdistribution: 'sequential' }
  const shared = CoreWorkload.fromProperties(props).createSharedState()
  const [a, b] = [1, 2].map((seed) => CoreWorkload.fromProperties(props, { seed, shared }))
  const keys = Array.from({ length: 12 }, (_, i) => {
    const tx = (i % 2 === 0 ? a : b)!.nextTransaction()
    return tx.op === 'READ' ? tx.key : ''
  })
  const single = CoreWorkload.fromProperties(props)
  assert.deepEqual(keys, Array.from({ length: 12 }, () => { const tx = single.nextTransaction(); return tx.op === 'READ' ? tx.key : '' }))
})

test('measurements merge exactly: two threads merged = one thread that saw everything', () => {
  const one = new Measurements()
  const parts = [new Measurements(), new Measurements()]
  for (let i = 0; i < 5000; i++) {
    const key = (1 + (i % 3)) * 16 + (i % 7 === 0 ? 1 : 0)
    const lat = (i * 7919) % 100_000
    one.add(key, lat)
    parts[i % 2]!.add(key, lat)
  }
  const merged = new Measurements()
  for (const p of parts) merged.merge(p.toWire())
  assert.deepEqual(merged.aggregates(), one.aggregates())
  assert.equal(merged.count(), 5000)
  assert.deepEqual([...merged.intervals().keys()].sort(), ['INSERT', 'INSERT-FAILED', 'READ', 'READ-FAILED', 'UPDATE', 'UPDATE-FAILED'])
})

test('workers: one per core, never more than the client threads or MAX_WORKERS', () => {
  assert.equal(defaultWorkerCount(8, 2), 2)
  assert.equal(defaultWorkerCount(1, 16), 1)
  assert.equal(defaultWorkerCount(12, 16), 12)
  assert.equal(defaultWorkerCount(1000, 256), 64)
})
