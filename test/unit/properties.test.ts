import assert from 'node:assert/strict'
import { readFileSync, readdirSync } from 'node:fs'
import path from 'node:path'
import { test } from 'node:test'
import { repoRoot } from '../../services/common/repo-root.js'
import { isBenchstreamError } from '../../services/core/errors.js'
import {
  BINDING_PROPERTY_PREFIXES,
  CORE_WORKLOAD_PROPERTIES,
  DRIVER_PROPERTIES,
  assertKnownProperties,
  mergeProperties,
  parseProperties,
  unknownProperties,
} from '../../services/core/workload/properties.js'

test('parseProperties: comments, blank lines, separators and trimming', () => {
  const text = [
    '# a comment',
    '! also a comment',
    '',
    '   ',
    'recordcount=1000',
    '  operationcount = 2000  ',
    'table: accounts',
    'fieldcount 7',
    'hdrhistogram.percentiles=50,95,99',
    'empty=',
    'url=jdbc:postgresql://db/x?a=b',
    '   # indented comment',
    'recordcount=3000',
  ].join('\n')
  assert.deepEqual(parseProperties(text), {
    recordcount: '3000',
    operationcount: '2000',
    table: 'accounts',
    fieldcount: '7',
    'hdrhistogram.percentiles': '50,95,99',
    empty: '',
    url: 'jdbc:postgresql://db/x?a=b',
  })
})

test('parseProperties: CRLF line endings and backslash continuations', () => {
  assert.deepEqual(parseProperties('a=1\r\nb = 2\r\n'), { a: '1', b: '2' })
  assert.deepEqual(parseProperties('list=a,\\\n    b,\\\n    c\nnext=x'), { list: 'a,b,c', next: 'x' })
  // An even number of backslashes is an escaped backslash, not a continuation.
  assert.deepEqual(parseProperties('path=C:\\\\\nnext=x'), { path: 'C:\\\\', next: 'x' })
})

test('parseProperties: a line without a name is rejected with its location', () => {
  assert.throws(
    () => parseProperties('a=1\n=2\n', 'workloadz'),
    (err: unknown) => isBenchstreamError(err, 'BS_ERR_WORKLOAD') && /workloadz:2/.test(err.message),
  )
})

test('parseProperties: "__proto__" is an ordinary key', () => {
  const p = parseProperties('__proto__=x\na=1')
  assert.equal(Object.getPrototypeOf(p), Object.prototype)
  assert.equal(Object.getOwnPropertyDescriptor(p, '__proto__')?.value, 'x')
  assert.equal(p['a'], '1')
})

test('mergeProperties: later files win, overrides win over files', () => {
  const merged = mergeProperties(
    ['recordcount=10\ntable=t1\nfieldcount=3', 'recordcount=20\n'],
    [
      ['table', 't2'],
      [' threadcount ', ' 8 '],
      ['table', 't3'],
    ],
  )
  assert.deepEqual(merged, { recordcount: '20', table: 't3', fieldcount: '3', threadcount: '8' })
  assert.deepEqual(mergeProperties([]), {})
  assert.throws(
    () => mergeProperties([], [['  ', 'x']]),
    (err: unknown) => isBenchstreamError(err, 'BS_ERR_WORKLOAD'),
  )
})

test('every property used by the workload files is a known CoreWorkload or driver property', () => {
  const dir = path.join(repoRoot(), 'workloads')
  for (const f of readdirSync(dir)) {
    const props = parseProperties(readFileSync(path.join(dir, f), 'utf8'), f)
    assert.deepEqual(unknownProperties(props), [], f)
  }
})

test('unknownProperties: core, driver and binding-prefixed names are accepted', () => {
  const props: Record<string, string> = {}
  for (const k of [...CORE_WORKLOAD_PROPERTIES, ...DRIVER_PROPERTIES]) props[k] = '1'
  for (const p of BINDING_PROPERTY_PREFIXES) props[`${p}host`] = 'localhost'
  assert.deepEqual(unknownProperties(props), [])
  assert.deepEqual(unknownProperties({ recordcont: '1', 'mongodb.url': 'x', readproportion: '1' }), [
    'mongodb.url',
    'recordcont',
  ])
  assert.deepEqual(unknownProperties({ 'mongodb.url': 'x' }, ['mongodb.']), [])
  assert.equal(new Set(CORE_WORKLOAD_PROPERTIES).size, CORE_WORKLOAD_PROPERTIES.length, 'no duplicates')
})

test('assertKnownProperties names the unknown property and lists the valid names', () => {
  assert.doesNotThrow(() => assertKnownProperties({ recordcount: '1', threadcount: '4', 'redis.host': 'x' }))
  assert.throws(
    () => assertKnownProperties({ recordcont: '1' }),
    (err: unknown) =>
      isBenchstreamError(err, 'BS_ERR_WORKLOAD') &&
      /unknown property recordcont \(did you mean recordcount\?\);/.test(err.message) &&
      /recordcount/.test(err.message) &&
      /requestdistribution/.test(err.message) &&
      /threadcount/.test(err.message) &&
      /redis\.\*/.test(err.message),
  )
})
