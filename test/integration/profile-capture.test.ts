/**
 * `benchstream profile capture` against a real JVM: the test's own Kafka
 * broker (its pid is in the broker data directory's kafka.pid, exported by
 * test/run.mjs as TEST_KAFKA_DATA_DIR) while this test produces to it. The
 * profile is taken by async-profiler (deploy/local/async-profiler.sh),
 * stored against a run, and read back: both profiles with their labels,
 * interval and window; CPU samples that are the broker's (the heaviest
 * application frames, Java methods outside the JDK, are kafka/ or
 * org/apache/kafka/, as async-profiler writes them; a broker started for the
 * test still spends much CPU in the JIT compiler); a wall-clock profile with
 * one stack per thread, never more samples per thread than the window holds
 * intervals (60, plus one at an edge). How many samples a quiet machine
 * takes (against the broker's CPU time; per thread) is
 * test/timing/profile-sampling.test.ts's: a loaded machine wakes the sampler
 * late and loses samples.
 */
import assert from 'node:assert/strict'
import { test } from 'node:test'
import { frameShareChanges } from '../../services/core/profiles/flame-graph.js'
import { profileTestBroker, wallSamplesPerThread } from '../helpers/broker-profile.js'

const KAFKA_FRAME = /(^|;)(kafka|org\/apache\/kafka)\//

test('capture profiles the test broker under load and stores it against a run, with its frames', async (t) => {
  const p = await profileTestBroker(t)
  if (p === undefined) {
    t.skip('TEST_KAFKA_DATA_DIR is unset (an external KAFKA_BROKERS cluster): no broker pid to profile')
    return
  }
  assert.deepEqual(p.codes, [0, 0])
  assert.match(p.text, /profiling pid \d+: event=cpu-clock interval=10000000ns for 4s/)
  assert.ok(p.produced > 0, `load ran during the captures (${p.produced} records)`)
  const profiles = await p.store.list({ runIds: [p.runId] })
  assert.equal(profiles.length, 2, 'both stored against the run')
  const cpu = profiles.find((x) => x.event === 'cpu')!
  const wall = profiles.find((x) => x.event === 'wall')!
  assert.deepEqual(
    [cpu.labels.pid, cpu.labels.role, typeof cpu.labels.host, cpu.intervalNs, cpu.toMs - cpu.fromMs],
    [p.pid, 'broker', 'string', 10_000_000, 4000],
  )
  assert.match(cpu.source, /^async-profiler 4\.6 \(cpu-clock\)$/)
  assert.ok(cpu.cpuMs !== null && cpu.cpuMs > 0)
  assert.ok(cpu.samples > 0)
  t.diagnostic(`cpu: ${cpu.samples} samples, broker CPU time ${cpu.cpuMs} ms`)

  // Plausible frames: the broker's own code.
  const stacks = await p.store.stacks({ runIds: [p.runId], labels: { role: 'broker' } }, 100_000)
  let kafkaSamples = 0
  for (const [k, n] of stacks) if (KAFKA_FRAME.test(k)) kafkaSamples += n
  const app = frameShareChanges(new Map(), stacks, 1000)
    .total.filter((f) => f.frame.includes('/') && !/^(java|jdk|sun|scala)\//.test(f.frame))
    .slice(0, 5)
  t.diagnostic(
    `kafka frames on ${kafkaSamples} of ${cpu.samples} samples; heaviest ` +
      `application frames: ${app.map((f) => `${f.frame} ${f.candidate.toFixed(1)}%`).join(', ')}`,
  )
  assert.ok(kafkaSamples > 0, `${kafkaSamples} of ${cpu.samples} samples on stacks with kafka frames`)
  assert.match(app[0]!.frame, /^(kafka|org\/apache\/kafka)\//, "the heaviest application frame is the broker's")
  assert.ok(
    [...stacks.keys()].some((k) => /kafka\/(server|network)\//.test(k)),
    'request handling or the network layer is sampled',
  )

  // Wall clock: one stack per thread, at most one sample per interval of the 3 s window (60, one more at an edge).
  assert.equal(wall.intervalNs, 50_000_000)
  const counts = await wallSamplesPerThread(p, wall.fromMs)
  t.diagnostic(`wall: ${wall.samples} samples, ${counts.length} threads, per thread ${counts[0]}..${counts.at(-1)}`)
  assert.ok(counts.length >= 20, `${counts.length} threads`)
  assert.ok(counts.at(-1)! <= 61, `most sampled thread: ${counts.at(-1)}`)
})
