import assert from 'node:assert/strict'
import { test } from 'node:test'
import { compareSetups, type RunSetup } from '../../services/core/compare/comparable.js'

const run = (runId: string, over: Partial<RunSetup> = {}, props: Record<string, string> = {}): RunSetup => ({
  runId,
  properties: {
    workload: 'site.ycsb.workloads.CoreWorkload',
    recordcount: '100000',
    readproportion: '0.5',
    updateproportion: '0.5',
    ...props,
  },
  recordCount: 100_000,
  threads: 32,
  target: null,
  durationS: 60,
  clients: 2,
  ...over,
})

test('identical setups are comparable; labels, run ids, output and password settings are ignored', () => {
  const a = [
    run(
      'a1',
      {},
      {
        'label.version': '1.0',
        exportfile: 'a.txt',
        'status.interval': '1',
        'hdrhistogram.fileoutput': 'true',
        'redis.password': 'x',
        runid: 'a1',
      },
    ),
  ]
  const b = [
    run(
      'b1',
      {},
      {
        'label.version': '1.1',
        exportfile: 'b.txt',
        'status.interval': '10',
        'hdrhistogram.fileoutput': 'false',
        'redis.password': 'y',
        runid: 'b1',
      },
    ),
  ]
  const c = compareSetups(a, b)
  assert.equal(c.comparable, true)
  assert.deepEqual(c.differences, [])
  assert.deepEqual(c.ignored, [
    'exportfile',
    'hdrhistogram.fileoutput',
    'label.version',
    'redis.password',
    'runid',
    'status.interval',
  ])
})

test('every differing setting is listed with both values', () => {
  const c = compareSetups(
    [run('a', { threads: 32, target: 10_000 }, { readproportion: '0.5' })],
    [run('b', { threads: 64, target: 20_000 }, { readproportion: '0.95', requestdistribution: 'uniform' })],
  )
  assert.equal(c.comparable, false)
  assert.deepEqual(c.differences, [
    { name: 'threads', baseline: ['32'], candidate: ['64'], where: ['between sides'] },
    { name: 'target', baseline: ['10000'], candidate: ['20000'], where: ['between sides'] },
    { name: 'property readproportion', baseline: ['0.5'], candidate: ['0.95'], where: ['between sides'] },
    { name: 'property requestdistribution', baseline: ['(unset)'], candidate: ['uniform'], where: ['between sides'] },
  ])
})

test('repetitions that differ among themselves are reported', () => {
  const c = compareSetups(
    [run('a1', { recordCount: 100_000 }), run('a2', { recordCount: 200_000 })],
    [run('b1', { recordCount: 100_000 })],
  )
  assert.deepEqual(c.differences, [
    {
      name: 'recordCount',
      baseline: ['100000', '200000'],
      candidate: ['100000'],
      where: ['between sides', 'within baseline'],
    },
  ])
})

test(
  'durations within 5 % are equal (measured ends), beyond that they differ; null and 0 targets ' +
    'are both unthrottled',
  () => {
    assert.equal(
      compareSetups([run('a', { durationS: 60 })], [run('b', { durationS: 61.5, target: 0 })]).comparable,
      true,
    )
    const c = compareSetups([run('a', { durationS: 60 })], [run('b', { durationS: 90 })])
    assert.deepEqual(
      c.differences.map((d) => d.name),
      ['durationS'],
    )
    assert.equal(
      compareSetups([run('a', { durationS: 60 })], [run('b', { durationS: 61.5 })], { durationTolerance: 0 })
        .comparable,
      false,
    )
  },
)

test('connection settings count by default, can be ignored, and never show a password', () => {
  const a = [run('a', {}, { 'postgres.url': 'postgres://bench:s3cret@db1:5432/ycsb' })]
  const b = [run('b', {}, { 'postgres.url': 'postgres://bench:other@db2:5432/ycsb' })]
  const c = compareSetups(a, b)
  assert.deepEqual(c.differences, [
    {
      name: 'property postgres.url',
      baseline: ['postgres://bench:***@db1:5432/ycsb'],
      candidate: ['postgres://bench:***@db2:5432/ycsb'],
      where: ['between sides'],
    },
  ])
  assert.ok(!JSON.stringify(c).includes('s3cret'))
  assert.equal(compareSetups(a, b, { ignore: ['postgres.*'] }).comparable, true)
  assert.equal(compareSetups(a, b, { ignore: ['postgres.url'] }).comparable, true)
})
