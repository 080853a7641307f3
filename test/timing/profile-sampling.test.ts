/**
 * How many samples async-profiler takes of the test broker under load, on a
 * machine that is not otherwise busy (npm run test:timing):
 *
 *  - CPU (cpu-clock, 10 ms, 4 s): samples ~ the broker's CPU time over the
 *    window / the interval; 0.85-1.00 measured here (1.00 for threads that
 *    never stop, 0.85-0.86 for a broker whose ~100 threads run in short
 *    bursts: a thread's unfinished interval at the end of the window is never
 *    sampled). Bound 0.6-1.15: /proc CPU time comes in 10 ms ticks and is read
 *    over a window shifted by the jcmd round trip from the profiler's own.
 *  - wall clock (50 ms, 3 s, one stack per thread): a thread that lives the
 *    whole window is sampled every interval, 60 times; a sampler round that
 *    wakes late on a loaded machine is lost. Bound: the most sampled thread
 *    57-61, the median thread 54-61.
 */
import assert from 'node:assert/strict'
import { test } from 'node:test'
import { profileTestBroker, wallSamplesPerThread } from '../helpers/broker-profile.js'

test('capture: CPU samples match the broker CPU time, wall samples the window, within bounds', async (t) => {
  const p = await profileTestBroker(t)
  if (p === undefined) {
    t.skip('TEST_KAFKA_DATA_DIR is unset (an external KAFKA_BROKERS cluster): no broker pid to profile')
    return
  }
  assert.deepEqual(p.codes, [0, 0])
  const profiles = await p.store.list({ runIds: [p.runId] })
  const cpu = profiles.find((x) => x.event === 'cpu')!
  const wall = profiles.find((x) => x.event === 'wall')!
  const expected = cpu.cpuMs! / 10
  const ratio = cpu.samples / expected
  t.diagnostic(`cpu: ${cpu.samples} samples, broker CPU time ${cpu.cpuMs} ms, ratio ${ratio.toFixed(3)}`)
  assert.ok(cpu.samples >= 30, `enough samples to judge (${cpu.samples})`)
  assert.ok(ratio >= 0.6 && ratio <= 1.15, `samples / (CPU time / interval) = ${ratio.toFixed(3)}; expected 0.6..1.15`)
  const counts = await wallSamplesPerThread(p, wall.fromMs)
  const median = counts[Math.floor(counts.length / 2)]!
  t.diagnostic(`wall: ${counts.length} threads, per thread max ${counts.at(-1)}, median ${median}`)
  assert.ok(counts.at(-1)! >= 57 && counts.at(-1)! <= 61, `most sampled thread: ${counts.at(-1)}`)
  assert.ok(median >= 54 && median <= 61, `median thread: ${median}`)
})
