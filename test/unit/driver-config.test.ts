import assert from 'node:assert/strict'
import { test } from 'node:test'
import { isBenchstreamError } from '../../services/core/errors.js'
import { BINDING_NAMES } from '../../services/adapters/datastores/index.js'
import { parseDriverArgs } from '../../services/driver/config.js'

const files: Record<string, string> = {
  a: 'recordcount=1000\nreadproportion=0.5\nupdateproportion=0.5\n',
  b: 'recordcount=2000\n',
}
const read = (p: string): string => {
  const f = files[p]
  if (f === undefined) throw new Error('ENOENT')
  return f
}
const env = { KAFKA_BROKERS: '127.0.0.1:9092' }

test('YCSB flags: -P files in order, -p overrides, threads, target, status, binding, labels', () => {
  const c = parseDriverArgs(
    'run',
    [
      '-P',
      'a',
      '-P',
      'b',
      '-p',
      'recordcount=3000',
      '-threads',
      '8',
      '-target',
      '20000',
      '-s',
      '-db',
      'memory',
      '--run-id',
      'r1',
      '--client-id',
      'c1',
      '--label',
      'version=0.98.4',
    ],
    env,
    { bindings: BINDING_NAMES, readFile: read },
  )
  assert.equal(c.properties.recordcount, '3000')
  assert.equal(c.properties.readproportion, '0.5')
  assert.equal(c.threads, 8)
  assert.equal(c.target, 20000)
  assert.equal(c.statusIntervalS, 10)
  assert.equal(c.binding, 'memory')
  assert.deepEqual(c.labels, { version: '0.98.4' })
  assert.equal(c.workloadName, 'a+b')
  assert.ok(Object.isFrozen(c))
  assert.equal(c.exportFile, undefined)
})

test('Kafka settings and the export file come from flags too', () => {
  const c = parseDriverArgs(
    'run',
    [
      '-P',
      'a',
      '--kafka-brokers',
      '10.0.0.1:9092,10.0.0.2:9092',
      '--topic',
      'bench.events',
      '-p',
      'exportfile=/tmp/r.txt',
      '--export',
      'json',
    ],
    env,
    { bindings: BINDING_NAMES, readFile: read },
  )
  assert.deepEqual(c.infra.kafka.brokers, ['10.0.0.1:9092', '10.0.0.2:9092'])
  assert.equal(c.infra.topics.events, 'bench.events')
  assert.equal(c.exportFile, '/tmp/r.txt')
  assert.equal(c.export, 'json')
  assert.throws(
    () => parseDriverArgs('run', ['--kafka-brokers', 'nohost'], env, { bindings: BINDING_NAMES, readFile: read }),
    /KAFKA_BROKERS="nohost" is not allowed: expected host:port\[,host:port\.\.\.\]/,
  )
})

test('bad input is rejected with the valid choices named', () => {
  const expect = (argv: string[], code: string, pattern: RegExp): void => {
    assert.throws(
      () => parseDriverArgs('run', argv, env, { bindings: BINDING_NAMES, readFile: read }),
      (err: unknown) => isBenchstreamError(err) && err.code === code && pattern.test(err.message),
    )
  }
  expect(
    ['-p', 'recordcont=5'],
    'BS_ERR_WORKLOAD',
    /unknown property recordcont \(did you mean recordcount\?\); valid names are .*recordcount/,
  )
  expect(['-db', 'hbase'], 'BS_ERR_USAGE', /unknown binding "hbase"; valid bindings are memory/)
  // The same range whatever is wrong with the value.
  expect(['-threads', '-3'], 'BS_ERR_USAGE', /-threads "-3" is not allowed: expected an integer from 1 to 100000/)
  expect(['-threads', '0'], 'BS_ERR_USAGE', /-threads "0" is not allowed: expected an integer from 1 to 100000/)
  expect(['--run-id', 'has space'], 'BS_ERR_USAGE', /--run-id "has space" is not allowed/)
  expect(['--frobnicate'], 'BS_ERR_USAGE', /unknown option "--frobnicate"/)
  expect(['-P', 'missing'], 'BS_ERR_USAGE', /cannot read workload file missing/)
  expect(['--export', 'xml'], 'BS_ERR_USAGE', /expected text or json/)
})

test('--linger-ms: 250 ms by default, the given value otherwise, refused outside 1 to 60000', () => {
  const parse = (argv: string[]) => parseDriverArgs('run', argv, env, { bindings: BINDING_NAMES, readFile: read })
  assert.equal(parse(['-P', 'a']).lingerMs, 250)
  assert.equal(parse(['-P', 'a', '--linger-ms', '1000']).lingerMs, 1000)
  for (const bad of ['0', '60001', '2.5', 'soon'])
    assert.throws(
      () => parse(['-P', 'a', '--linger-ms', bad]),
      (err: unknown) =>
        isBenchstreamError(err) &&
        err.code === 'BS_ERR_USAGE' &&
        err.message.includes(`--linger-ms "${bad}" is not allowed: expected an integer from 1 to 60000`),
    )
})
