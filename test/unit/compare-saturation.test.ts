import assert from 'node:assert/strict'
import { test } from 'node:test'
import { analyzeSweep } from '../../services/core/compare/saturation.js'
import { isBenchstreamError } from '../../services/core/errors.js'

const threads = [1, 2, 4, 8, 16, 32]
const tp = [1000, 1950, 3800, 7000, 7200, 7100]
const p99 = [200, 210, 230, 300, 800, 2000]

test('thread sweep: saturation where doubling the threads adds less than 5 %, knee where p99 more than doubles', () => {
  // Given in shuffled order: the analysis sorts by x.
  const order = [3, 0, 5, 1, 4, 2]
  const a = analyzeSweep(order.map((i) => ({ x: threads[i] ?? 0, throughput: tp[i] ?? 0, p99Us: p99[i] ?? null })))
  assert.deepEqual(
    a.points.map((p) => p.x),
    threads,
  )
  // 8 -> 16 threads: 7000 -> 7200 ops/s, +2.9 %.
  assert.equal(a.saturation?.index, 3)
  assert.equal(a.saturation?.x, 8)
  assert.ok(Math.abs((a.saturation?.nextGrowth ?? 0) - 200 / 7000) < 1e-12)
  // 8 -> 16 threads: p99 300 -> 800 µs, 2.67x.
  assert.equal(a.knee?.index, 4)
  assert.equal(a.knee?.x, 16)
  assert.ok(Math.abs((a.knee?.factor ?? 0) - 800 / 300) < 1e-12)
  assert.deepEqual(a.peak, { index: 4, x: 16, throughput: 7200 })
})

test('a sweep that still scales has no saturation; a gradual p99 rise has no knee', () => {
  const a = analyzeSweep([1, 2, 4, 8].map((x, i) => ({ x, throughput: 1000 * x, p99Us: 100 * 1.5 ** i })))
  assert.equal(a.saturation, null)
  assert.equal(a.knee, null)
  // A falling step is saturation too.
  assert.equal(
    analyzeSweep([
      { x: 1, throughput: 100, p99Us: null },
      { x: 2, throughput: 90, p99Us: null },
    ]).saturation?.index,
    0,
  )
  // A 3x threshold moves the knee past the 2.67x jump.
  assert.equal(
    analyzeSweep(
      threads.map((x, i) => ({ x, throughput: tp[i] ?? 0, p99Us: p99[i] ?? null })),
      { kneeFactor: 3 },
    ).knee,
    null,
  )
})

test('target sweep: saturation is the last point that met its target, however finely the targets are spaced', () => {
  // Targets 2 % apart: per-step growth is always below 5 %, which must not matter here.
  const xs = [10_000, 10_200, 10_400, 10_600, 10_800]
  const got = [10_000, 10_199, 10_390, 10_450, 10_460]
  const a = analyzeSweep(
    xs.map((x, i) => ({ x, throughput: got[i] ?? 0, p99Us: null })),
    { x: 'target' },
  )
  // 10 400 reached 99.9 % of its target; 10 600 reached 98.6 %.
  assert.equal(a.saturation?.index, 2)
  assert.equal(a.saturation?.x, 10_400)
  // Read as a thread sweep, the same numbers would saturate at once.
  assert.equal(analyzeSweep(xs.map((x, i) => ({ x, throughput: got[i] ?? 0, p99Us: null }))).saturation?.index, 0)
  assert.equal(
    analyzeSweep(
      xs.map((x) => ({ x, throughput: x, p99Us: null })),
      { x: 'target' },
    ).saturation,
    null,
  )
  assert.deepEqual(analyzeSweep([{ x: 1000, throughput: 500, p99Us: null }], { x: 'target' }).saturation, {
    index: 0,
    x: 1000,
    throughput: 500,
    nextGrowth: null,
  })
})

test('bad sweeps are rejected', () => {
  assert.throws(
    () => analyzeSweep([]),
    (e: unknown) => isBenchstreamError(e, 'BS_ERR_BAD_REQUEST'),
  )
  assert.throws(
    () => analyzeSweep([{ x: 1, throughput: 1, p99Us: 1 }], { kneeFactor: 1 }),
    (e: unknown) => isBenchstreamError(e, 'BS_ERR_BAD_REQUEST'),
  )
})
