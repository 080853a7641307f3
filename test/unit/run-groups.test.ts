/**
 * Groups, repeats and baselines on the command line, what the start record
 * carries, the memory binding's delays (what compare's and the live
 * baseline's tests slow a run with), and how sweep reads its command line.
 */
import assert from 'node:assert/strict'
import { test } from 'node:test'
import { BINDING_NAMES, createBinding, memoryDelays } from '../../services/adapters/datastores/index.js'
import type { DelayClock } from '../../services/adapters/datastores/memory.js'
import { planSweep } from '../../services/cli/sweep.js'
import { isBenchstreamError } from '../../services/core/errors.js'
import { parseDriverArgs, repetitionArgv, startRecordFields } from '../../services/driver/config.js'

const read = (): string => 'recordcount=1000\nreadproportion=0.5\nupdateproportion=0.5\n'
const env = { KAFKA_BROKERS: '127.0.0.1:9092' }
const parse = (argv: string[]) => parseDriverArgs('run', argv, env, { bindings: BINDING_NAMES, readFile: read })
const usage = (argv: string[], re: RegExp) =>
  assert.throws(
    () => parse(argv),
    (e: unknown) => isBenchstreamError(e, 'BS_ERR_USAGE') && re.test(e.message),
    argv.join(' '),
  )

test(
  '--repeat N: one group (given or generated), run ids <run-id>-k or <group>-k, each repetition ' +
    'its own command line',
  () => {
    const c = parse([
      '-P',
      'workloads/workloada',
      '--repeat',
      '3',
      '--group',
      'rel-a',
      '-threads',
      '4',
      '-s',
      '--no-emit',
      '--label',
      'version=1',
    ])
    assert.equal(c.repeat, 3)
    assert.equal(c.group, 'rel-a')
    assert.deepEqual(c.repeatRunIds, ['rel-a-1', 'rel-a-2', 'rel-a-3'])
    const argv2 = repetitionArgv(
      [
        '-P',
        'workloads/workloada',
        '--repeat',
        '3',
        '--group',
        'rel-a',
        '-threads',
        '4',
        '-s',
        '--no-emit',
        '--label',
        'version=1',
      ],
      c,
      2,
    )
    assert.deepEqual(argv2, [
      '-P',
      'workloads/workloada',
      '-threads',
      '4',
      '-s',
      '--no-emit',
      '--label',
      'version=1',
      '--run-id',
      'rel-a-2',
      '--group',
      'rel-a',
      '--repetition',
      '2',
    ])
    const k2 = parse(argv2)
    assert.equal(k2.runId, 'rel-a-2')
    assert.equal(k2.repetition, 2)
    assert.equal(k2.repeat, 1)
    assert.deepEqual(startRecordFields(k2).group, 'rel-a')
    assert.equal(startRecordFields(k2).repeat, 2)
    // With --run-id: <run-id>-k; without --group: a generated group, shared by the repetitions.
    const r = parse(['-P', 'workloads/workloada', '--repeat', '2', '--run-id', 'nightly'])
    assert.deepEqual(r.repeatRunIds, ['nightly-1', 'nightly-2'])
    assert.match(r.group!, /^workloada-\d{8}T\d{6}-[a-z0-9]{1,4}$/)
    assert.equal(
      repetitionArgv(['-P', 'workloads/workloada', '--repeat', '2', '--run-id', 'nightly'], r, 1).slice(-6).join(' '),
      `--run-id nightly-1 --group ${r.group} --repetition 1`,
    )
    // Without --repeat: no group, no repetition in the start record.
    const plain = parse(['-P', 'workloads/workloada'])
    assert.deepEqual(Object.keys(startRecordFields(plain)), ['properties'])
    usage(['--repeat', '0'], /--repeat "0" is not allowed: expected an integer from 1 to 1000/)
    usage(['--repeat', '2', '--repetition', '1'], /--repeat and --repetition do not go together/)
    usage(['--group', 'a b'], /--group "a b" is not allowed/)
    assert.throws(
      () => parseDriverArgs('load', ['--repeat', '2'], env, { bindings: BINDING_NAMES, readFile: read }),
      /--repeat applies to run, not load/,
    )
  },
)

test('--baseline puts the run or group in the label baseline; a conflicting label is refused', () => {
  assert.deepEqual(parse(['--baseline', 'group:rel-a', '--label', 'version=2']).labels, {
    version: '2',
    baseline: 'group:rel-a',
  })
  assert.equal(parse(['--baseline', 'run-7']).baseline, 'run-7')
  usage(['--baseline', 'group:'], /--baseline "group:" is not allowed: a run id or group:NAME/)
  usage(['--baseline', 'a', '--label', 'baseline=b'], /--baseline a and --label baseline=b disagree/)
})

test('the start record carries the merged properties, passwords masked', () => {
  const c = parse([
    '-P',
    'w',
    '-p',
    'postgres.password=secret',
    '-p',
    'postgres.url=postgres://bench:secret@db:5432/ycsb',
    '-p',
    'memory.delay.scan=300',
    '-db',
    'memory',
  ])
  const p = startRecordFields(c).properties
  assert.equal(p.recordcount, '1000')
  assert.equal(p['memory.delay.scan'], '300')
  assert.equal(p['postgres.password'], '***')
  assert.equal(p['postgres.url'], 'postgres://bench:***@db:5432/ycsb')
  assert.ok(!JSON.stringify(p).includes('secret'))
})

test(
  'memory binding delays: checked like any property; a spin below 1 ms, a timer from 1 ms, and ' +
    'only after memory.delay.after',
  async () => {
    assert.deepEqual(memoryDelays({ 'memory.delay.scan': '250', 'memory.delay.after': '2' }), {
      read: 0,
      scan: 250,
      update: 0,
      insert: 0,
      delete: 0,
      afterS: 2,
    })
    assert.throws(
      () => createBinding('memory', { 'memory.delay.scan': '-1' }),
      /memory\.delay\.scan="-1" is not allowed: expected an integer from 0 to 60000000/,
    )
    assert.throws(
      () => createBinding('memory', { 'memory.delay.fetch': '1' }),
      /unknown memory binding property memory\.delay\.fetch/,
    )
    // An injected clock: every delay the binding asks for is recorded, and time moves only when the test says.
    let nowMs = 1000
    const asked: string[] = []
    const delayClock: DelayClock = {
      now: () => nowMs,
      sleep: async (ms) => void asked.push(`sleep ${ms}`),
      spin: (ms) => void asked.push(`spin ${ms}`),
    }
    const props = {
      recordcount: '10',
      'memory.cachesize': '7',
      'memory.delay.read': '800',
      'memory.delay.scan': '3000',
    }
    const b = createBinding('memory', props, { delayClock })
    await b.insert('t', 'k1', { f: 'v' })
    await b.update('t', 'k1', { f: 'w' })
    await b.read('t', 'k1', undefined)
    await b.scan('t', 'k', 5, undefined)
    assert.deepEqual(asked, ['spin 0.8', 'sleep 3'], 'inserts and updates not delayed; 800 µs spun, 3 ms on a timer')
    // Delays from 1 s after the first operation.
    asked.length = 0
    const later = createBinding('memory', { ...props, 'memory.delay.after': '1' }, { delayClock })
    await later.read('t', 'k1', undefined)
    nowMs += 999
    await later.read('t', 'k1', undefined)
    assert.deepEqual(asked, [], 'not in the first second')
    nowMs += 1
    await later.read('t', 'k1', undefined)
    assert.deepEqual(asked, ['spin 0.8'], 'from 1 s on')
    // The real clock waits at least what was asked (a busy machine can only add to it).
    const real = createBinding('memory', props)
    await real.insert('t', 'k1', { f: 'v' })
    const time = async (f: () => Promise<unknown>): Promise<number> => {
      const t0 = performance.now()
      await f()
      return (performance.now() - t0) * 1000
    }
    const readUs = await time(() => real.read('t', 'k1', undefined))
    assert.ok(readUs >= 800, `read took ${readUs} µs`)
    const scanUs = await time(() => real.scan('t', 'k', 5, undefined))
    assert.ok(scanUs >= 3000, `scan took ${scanUs} µs`)
  },
)

test('sweep: exactly one parameter takes a list; its own flags; what it sets itself is refused', () => {
  const p = planSweep(
    [
      '-P',
      'workloads/workloada',
      '-threads',
      '1,2,4',
      '-p',
      'recordcount=1000',
      '-s',
      '--out',
      '/tmp/x',
      '--seconds',
      '5',
    ],
    new Date('2026-12-03T10:00:00Z'),
  )
  assert.equal(p.param, 'threads')
  assert.deepEqual(p.values, ['1', '2', '4'])
  assert.deepEqual(p.common, ['-P', 'workloads/workloada', '-p', 'recordcount=1000', '-s', '--seconds', '5'])
  assert.deepEqual(p.setParam('2'), ['-threads', '2'])
  assert.equal(p.outDir, '/tmp/x')
  assert.match(p.sweepId, /^sweep-20261203T100000-[a-z0-9]{1,4}$/)
  const t = planSweep(['-P', 'w', '-p', 'target=1000,5000', '--sweep-id', 'tgt'])
  assert.deepEqual(
    [t.param, t.values, t.setParam('5000'), t.sweepId],
    ['target', ['1000', '5000'], ['-p', 'target=5000'], 'tgt'],
  )
  const bad = (argv: string[], re: RegExp) =>
    assert.throws(
      () => planSweep(argv),
      (e: unknown) => isBenchstreamError(e, 'BS_ERR_USAGE') && re.test(e.message),
      argv.join(' '),
    )
  bad(['-P', 'w'], /nothing to sweep/)
  bad(
    ['-threads', '1,2', '-target', '10,20'],
    /only one parameter can take a list of values; threads already does, and so does target/,
  )
  bad(['-threads', '1,two'], /every value of a sweep must be a number/)
  bad(['-threads', '1,2', '--run-id', 'x'], /--run-id is set by sweep/)
  bad(['-threads', '1,1'], /repeats a value/)
})
