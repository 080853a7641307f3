import assert from 'node:assert/strict'
import { test } from 'node:test'
import type { DecodedOp } from '../../services/core/codec/decode-result.js'
import { opCodes } from '../../services/core/codec/record-encoders.js'
import { WindowAggregator } from '../../services/core/stats/windows.js'

const ev = (
  startUs: number,
  latencyUs: number,
  op: 'READ' | 'UPDATE' = 'READ',
  status: 'OK' | 'ERROR' = 'OK',
  cache: 'HIT' | 'MISS' | 'UNKNOWN' = 'UNKNOWN',
): DecodedOp => {
  const [opCode, statusIndex, cacheIndex] = opCodes(op, status, cache)
  return { thread: 0, opCode, statusIndex, cacheIndex, startUs, latencyUs, intendedUs: latencyUs + 5, bytes: 100 }
}

test('events fall into event-time windows per client, operation and status', () => {
  const w = new WindowAggregator({ windowUs: 1_000_000, allowedLatenessUs: 2_000_000 })
  w.begin('run', 'c1')
  w.add(ev(10_000_000, 100, 'READ', 'OK', 'HIT'))
  w.add(ev(10_999_999, 300, 'READ', 'OK', 'MISS'))
  w.add(ev(11_000_000, 50))
  w.add(ev(10_500_000, 70, 'UPDATE', 'ERROR'))
  w.begin('run', 'c2')
  w.add(ev(10_100_000, 10))
  const rows = w.drain()
  assert.equal(rows.length, 4)
  const r = rows.find((x) => x.clientId === 'c1' && x.op === 'READ' && x.windowStartUs === 10_000_000)!
  assert.equal(r.count, 2)
  assert.equal(r.sumUs, 400)
  assert.equal(r.minUs, 100)
  assert.equal(r.maxUs, 300)
  assert.equal(r.intendedSumUs, 410)
  assert.equal(r.cacheHits, 1)
  assert.equal(r.cacheMisses, 1)
  assert.equal(r.bytes, 200)
  assert.equal(r.lastEndUs, 10_999_999 + 300)
  const u = rows.find((x) => x.op === 'UPDATE')!
  assert.equal(u.status, 'ERROR')
  assert.equal(u.errors, 1)
  assert.equal(w.drain().length, 0, 'a drain empties the aggregator')
})

test('late events are counted, marked, and still kept', () => {
  const w = new WindowAggregator({ windowUs: 1_000_000, allowedLatenessUs: 2_000_000 })
  w.begin('run', 'c')
  w.add(ev(100_000_000, 1))
  w.add(ev(96_500_000, 1)) // window [96,97) closed at 99 < watermark 100 -> late
  w.add(ev(97_500_000, 1)) // window [97,98) closes at 100: not late yet
  const rows = w.drain()
  assert.equal(
    rows.reduce((a, r) => a + r.count, 0),
    3,
  )
  assert.equal(rows.find((r) => r.windowStartUs === 96_000_000)!.lateEvents, 1)
  assert.equal(rows.find((r) => r.windowStartUs === 97_000_000)!.lateEvents, 0)
  assert.equal(w.lateTotal, 1)
  // The watermark survives drains.
  w.begin('run', 'c')
  w.add(ev(90_000_000, 1))
  assert.equal(w.drain()[0]!.lateEvents, 1)
})

test(
  'an interval histogram with an intended histogram fills intended_hist from it, not from the ' + 'measured buckets',
  async () => {
    const { bucketValue, bucketIndex } = await import('../../services/core/stats/histogram.js')
    const w = new WindowAggregator({ windowUs: 1_000_000, allowedLatenessUs: 2_000_000 })
    const measured: Array<[number, number]> = [
      [bucketIndex(100), 3],
      [bucketIndex(5000), 1],
    ]
    const intended: Array<[number, number]> = [
      [bucketIndex(100), 1],
      [bucketIndex(90_000), 3],
    ]
    w.addHistogram('run', 'c', 'READ', 'OK', 10_000_000, measured, bucketValue, 1_000_000, intended)
    w.addHistogram('run', 'c', 'UPDATE', 'OK', 10_000_000, measured, bucketValue, 1_000_000)
    const rows = w.drain()
    const read = rows.find((r) => r.op === 'READ')!
    assert.equal(read.count, 4)
    assert.deepEqual([...read.hist.entries()], measured)
    assert.deepEqual([...read.intendedHist.entries()], intended)
    assert.equal(read.intendedMaxUs, Math.ceil(bucketValue(bucketIndex(90_000))))
    assert.equal(
      read.intendedSumUs,
      Math.round(bucketValue(bucketIndex(100))) + Math.round(bucketValue(bucketIndex(90_000)) * 3),
    )
    // Without one, intended is the measured histogram (an unthrottled client).
    const update = rows.find((r) => r.op === 'UPDATE')!
    assert.deepEqual([...update.intendedHist.entries()], measured)
    assert.equal(update.intendedSumUs, update.sumUs)
  },
)
