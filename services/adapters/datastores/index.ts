/**
 * The binding registry: names accepted by -db and how each is built from the
 * merged properties. Adding a datastore means one file in this folder and one
 * entry here; the runner and the workload do not change.
 *
 * Binding properties are validated here, once, before anything connects:
 * a misspelt `redis.prot` or an out-of-range `postgres.poolsize` fails with
 * the property's name and what is allowed.
 */
import { BenchstreamError } from '../../core/errors.js'
import type { Binding } from '../../core/ports/binding.js'
import { MemoryBinding, memoryStore, type DelayClock, type MemoryDelays } from './memory.js'
import { PostgresBinding, type PostgresBindingConfig } from './postgres.js'
import { RedisBinding, type RedisBindingConfig } from './redis.js'

import { BINDING_NAMES, type BindingName } from './names.js'

export { BINDING_NAMES, type BindingName }

export function isBindingName(name: string): name is BindingName {
  return (BINDING_NAMES as readonly string[]).includes(name)
}

/**
 * Bindings whose data lives inside the driver process (the memory store):
 * their client threads all run on the driver's main thread. The others run
 * each client thread with its own connection in worker threads.
 */
export const IN_PROCESS_BINDINGS: readonly BindingName[] = ['memory']

/** Properties each binding reads; any other `<binding>.` property is rejected. */
export const BINDING_PROPERTIES = {
  memory: [
    'memory.cachesize',
    'memory.delay.read',
    'memory.delay.scan',
    'memory.delay.update',
    'memory.delay.insert',
    'memory.delay.delete',
    'memory.delay.after',
  ],
  redis: ['redis.host', 'redis.port', 'redis.password', 'redis.db', 'redis.timeout'],
  postgres: [
    'postgres.url',
    'postgres.host',
    'postgres.port',
    'postgres.user',
    'postgres.password',
    'postgres.database',
    'postgres.poolsize',
  ],
} as const satisfies Record<BindingName, readonly string[]>

export const DEFAULT_POSTGRES_URL = 'postgres://postgres@127.0.0.1:5432/postgres'
/**
 * Upper bound of postgres.poolsize: far above any sane thread count, below what a server accepts by default many times
 * over.
 */
export const MAX_POOL_SIZE = 1000
/** Upper bound of redis.timeout and friends, ms (one hour). */
export const MAX_TIMEOUT_MS = 3_600_000

/** What the driver knows beyond the properties. */
export interface BindingContext {
  /** Worker threads of this client (-threads), which sizes connection pools. */
  threads?: number
  /** The memory binding's delays: how they pass time (tests inject their own). */
  delayClock?: DelayClock
}

type Props = Readonly<Record<string, string>>

export function createBinding(name: string, props: Props, ctx: BindingContext = {}): Binding {
  if (!isBindingName(name))
    throw invalid(`unknown binding ${JSON.stringify(name)}; valid bindings are ${BINDING_NAMES.join(', ')}`)
  rejectUnknown(name, props)
  switch (name) {
    case 'memory': {
      const records = Number(props.recordcount ?? '1000')
      const def = Math.max(1, Math.floor((Number.isFinite(records) ? records : 1000) / 10))
      return new MemoryBinding(
        memoryStore(intProp(props, 'memory.cachesize', def, 1, Number.MAX_SAFE_INTEGER)),
        memoryDelays(props),
        ctx.delayClock,
      )
    }
    case 'redis':
      return new RedisBinding(redisConfig(props))
    case 'postgres':
      return new PostgresBinding(postgresConfig(props, ctx))
  }
}

/** Upper bound of a memory.delay.<op>, µs (one minute). */
export const MAX_MEMORY_DELAY_US = 60_000_000

export function memoryDelays(props: Props): Readonly<MemoryDelays> {
  const us = (op: string): number => intProp(props, `memory.delay.${op}`, 0, 0, MAX_MEMORY_DELAY_US)
  return Object.freeze({
    read: us('read'),
    scan: us('scan'),
    update: us('update'),
    insert: us('insert'),
    delete: us('delete'),
    afterS: intProp(props, 'memory.delay.after', 0, 0, 86_400),
  })
}

export function redisConfig(props: Props): Readonly<RedisBindingConfig> {
  return Object.freeze({
    host: stringProp(props, 'redis.host', '127.0.0.1'),
    port: intProp(props, 'redis.port', 6379, 1, 65535),
    password:
      props['redis.password'] === undefined || props['redis.password'] === '' ? undefined : props['redis.password'],
    // Redis accepts as many databases as its `databases` setting (16 by
    // default); the server rejects an index above that at connect time.
    db: intProp(props, 'redis.db', 0, 0, 2 ** 31 - 1),
    timeoutMs: intProp(props, 'redis.timeout', 2000, 1, MAX_TIMEOUT_MS),
  })
}

export function postgresConfig(props: Props, ctx: BindingContext = {}): Readonly<PostgresBindingConfig> {
  const parts = ['postgres.host', 'postgres.port', 'postgres.user', 'postgres.password', 'postgres.database'].filter(
    (k) => props[k] !== undefined,
  )
  let url: string
  if (props['postgres.url'] !== undefined) {
    if (parts.length > 0)
      throw invalid(`postgres.url cannot be combined with ${parts.join(', ')}: give either a URL or its parts`)
    url = props['postgres.url']
    if (!/^postgres(ql)?:\/\//.test(url))
      throw invalid(
        `postgres.url=${JSON.stringify(url)} is not allowed: expected postgres://user[:password]@host[:port]/database`,
      )
  } else {
    const host = stringProp(props, 'postgres.host', '127.0.0.1')
    const port = intProp(props, 'postgres.port', 5432, 1, 65535)
    const user = stringProp(props, 'postgres.user', 'postgres')
    const password = props['postgres.password'] ?? ''
    const database = stringProp(props, 'postgres.database', 'postgres')
    const auth = encodeURIComponent(user) + (password === '' ? '' : `:${encodeURIComponent(password)}`)
    url = `postgres://${auth}@${host.includes(':') ? `[${host}]` : host}:${port}/${encodeURIComponent(database)}`
  }
  const threads = ctx.threads ?? intProp(props, 'threadcount', 1, 1, 100_000)
  return Object.freeze({
    url,
    poolSize: intProp(props, 'postgres.poolsize', Math.min(Math.max(1, threads), MAX_POOL_SIZE), 1, MAX_POOL_SIZE),
    table: stringProp(props, 'table', 'usertable'),
    fieldCount: postgresFieldCount(props),
    fieldNamePrefix: props.fieldnameprefix ?? 'field',
  })
}

/** PostgreSQL tables hold at most 1600 columns, one of them the key. */
export const MAX_POSTGRES_FIELDS = 1599

function postgresFieldCount(props: Props): number {
  const n = intProp(props, 'fieldcount', 10, 1, Number.MAX_SAFE_INTEGER)
  if (n > MAX_POSTGRES_FIELDS)
    throw invalid(
      `fieldcount=${n} is not allowed with the postgres binding: a PostgreSQL table has at most 1600 ` +
        `columns, so fieldcount can be 1 to ${MAX_POSTGRES_FIELDS}`,
    )
  return n
}

function invalid(message: string): BenchstreamError {
  return new BenchstreamError('BS_ERR_WORKLOAD', message)
}

function rejectUnknown(name: BindingName, props: Props): void {
  const known: readonly string[] = BINDING_PROPERTIES[name]
  const unknown = Object.keys(props).filter((k) => k.startsWith(`${name}.`) && !known.includes(k))
  if (unknown.length > 0)
    throw invalid(
      `unknown ${name} binding propert${unknown.length === 1 ? 'y' : 'ies'} ${unknown.join(', ')}; ` +
        `valid ones are ${known.join(', ')}`,
    )
}

function intProp(props: Props, name: string, def: number, min: number, max: number): number {
  const raw = props[name]
  if (raw === undefined) return def
  const v = Number(raw)
  if (raw.trim() === '' || !Number.isInteger(v) || v < min || v > max)
    throw invalid(`${name}=${JSON.stringify(raw)} is not allowed: expected an integer from ${min} to ${max}`)
  return v
}

function stringProp(props: Props, name: string, def: string): string {
  const raw = props[name]
  if (raw === undefined) return def
  if (raw === '') throw invalid(`${name} must not be empty`)
  return raw
}
