/**
 * Binding properties are validated before anything connects: a bad value
 * names the property and the allowed range, a misspelt name lists the valid
 * ones.
 */
import assert from 'node:assert/strict'
import { test } from 'node:test'
import { isBenchstreamError } from '../../services/core/errors.js'
import {
  BINDING_NAMES,
  BINDING_PROPERTIES,
  createBinding,
  DEFAULT_POSTGRES_URL,
  postgresConfig,
  redisConfig,
} from '../../services/adapters/datastores/index.js'

const rejects = (fn: () => unknown, ...parts: string[]): void => {
  assert.throws(fn, (err: unknown) => {
    assert.ok(isBenchstreamError(err, 'BS_ERR_WORKLOAD'), String(err))
    for (const p of parts)
      assert.ok(err.message.includes(p), `${JSON.stringify(err.message)} should mention ${JSON.stringify(p)}`)
    return true
  })
}

test('every binding has a property list', () => {
  assert.deepEqual(Object.keys(BINDING_PROPERTIES).sort(), [...BINDING_NAMES].sort())
})

test('redis defaults and overrides', () => {
  assert.deepEqual(
    { ...redisConfig({}) },
    { host: '127.0.0.1', port: 6379, password: undefined, db: 0, timeoutMs: 2000 },
  )
  assert.deepEqual(
    {
      ...redisConfig({
        'redis.host': 'cache.local',
        'redis.port': '7000',
        'redis.password': 'pw',
        'redis.db': '3',
        'redis.timeout': '150',
      }),
    },
    { host: 'cache.local', port: 7000, password: 'pw', db: 3, timeoutMs: 150 },
  )
})

test('redis numeric properties are checked against their ranges', () => {
  rejects(() => createBinding('redis', { 'redis.port': '0' }), 'redis.port', '1 to 65535')
  rejects(() => createBinding('redis', { 'redis.port': '6379.5' }), 'redis.port', '1 to 65535')
  rejects(() => createBinding('redis', { 'redis.db': '-1' }), 'redis.db', '0 to 2147483647')
  rejects(() => createBinding('redis', { 'redis.timeout': 'soon' }), 'redis.timeout', '1 to 3600000')
  rejects(() => createBinding('redis', { 'redis.host': '' }), 'redis.host')
  rejects(() => createBinding('redis', { 'redis.prot': '6379' }), 'redis.prot', 'redis.port')
})

test('postgres URL from parts, pool sized to the threads', () => {
  assert.equal(postgresConfig({}).url, DEFAULT_POSTGRES_URL)
  assert.equal(postgresConfig({}).poolSize, 1)
  assert.equal(postgresConfig({}, { threads: 8 }).poolSize, 8)
  assert.equal(postgresConfig({ threadcount: '3' }).poolSize, 3)
  assert.equal(postgresConfig({ 'postgres.poolsize': '5' }, { threads: 8 }).poolSize, 5)
  const c = postgresConfig({
    'postgres.host': 'db.local',
    'postgres.port': '6543',
    'postgres.user': 'bench user',
    'postgres.password': 'p@ss',
    'postgres.database': 'ycsb',
    table: 't1',
    fieldcount: '4',
    fieldnameprefix: 'f',
  })
  assert.equal(c.url, 'postgres://bench%20user:p%40ss@db.local:6543/ycsb')
  assert.deepEqual([c.table, c.fieldCount, c.fieldNamePrefix], ['t1', 4, 'f'])
})

test('postgres properties are checked', () => {
  rejects(() => createBinding('postgres', { 'postgres.poolsize': '0' }), 'postgres.poolsize', '1 to 1000')
  rejects(() => createBinding('postgres', { 'postgres.port': '99999' }), 'postgres.port', '1 to 65535')
  rejects(() => createBinding('postgres', { 'postgres.url': 'mysql://h/db' }), 'postgres.url', 'postgres://')
  rejects(
    () => createBinding('postgres', { 'postgres.url': DEFAULT_POSTGRES_URL, 'postgres.host': 'x' }),
    'postgres.url',
    'postgres.host',
  )
  rejects(() => createBinding('postgres', { fieldcount: '1600' }), 'fieldcount', '1599')
  rejects(() => createBinding('postgres', { 'postgres.pool': '4' }), 'postgres.pool', 'postgres.poolsize')
})

test('memory cache size is checked', () => {
  rejects(() => createBinding('memory', { 'memory.cachesize': '0' }), 'memory.cachesize', '1 to')
})
