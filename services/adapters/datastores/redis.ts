/**
 * `redis`: a real Redis server through ioredis, with YCSB's data layout: one
 * hash per record (HSET key field value ...), keyed by the bare record key as
 * YCSB's Redis binding does, so a data set loaded by either tool can be read
 * by the other.
 *
 * Scans need an ordered index, which Redis hashes do not give. YCSB keeps a
 * sorted set scored by Java's String.hashCode() of the key and scans with
 * ZRANGEBYSCORE, which returns records in hash order (and mixes up keys whose
 * hashes collide), not the key order a CoreWorkload scan means. This binding
 * instead adds every key to a sorted set with score 0 and scans with
 * ZRANGEBYLEX: all-equal scores make Redis order members by their bytes, so a
 * scan returns the `count` keys at or after startKey in key order, the same
 * records the memory and postgres bindings return, at the same O(log N +
 * count) cost. The index has its own name (REDIS_INDEX_KEY) so it is never
 * confused with YCSB's hash-scored `_indices`.
 *
 * Redis keeps everything in memory, so an operation's cache outcome is
 * UNKNOWN; the server's keyspace_hits/keyspace_misses counters are sampled
 * instead (sampleServerMetrics).
 */
import { Redis } from 'ioredis'
import { BenchstreamError } from '../../core/errors.js'
import type { FieldValues } from '../../core/workload/workload-types.js'
import { statusOf, valuesBytes, type Binding, type OpResult } from '../../core/ports/binding.js'

/** Sorted set of all record keys, every score 0 (lexicographic order). */
export const REDIS_INDEX_KEY = '_bs_keys'

export interface RedisBindingConfig {
  /** @default '127.0.0.1' */
  host: string
  /** @default 6379 */
  port: number
  /** AUTH password. @default undefined (no AUTH) */
  password: string | undefined
  /** Database index (SELECT). @default 0 */
  db: number
  /** Connect and per-command timeout, ms. @default 2000 (YCSB's Jedis default) */
  timeoutMs: number
}

const ok = (bytes: number): OpResult => ({ status: 'OK', cache: 'UNKNOWN', bytes })
const NOT_FOUND: OpResult = { status: 'NOT_FOUND', cache: 'UNKNOWN', bytes: 0 }
const failed = (err: unknown): OpResult => ({ status: redisStatus(err), cache: 'UNKNOWN', bytes: 0 })

/**
 * ioredis reports a command given up while the connection is down as
 * MaxRetriesPerRequestError, whose message names no connection problem.
 */
function redisStatus(err: unknown): OpResult['status'] {
  return (err as { name?: unknown })?.name === 'MaxRetriesPerRequestError' ? 'SERVICE_UNAVAILABLE' : statusOf(err)
}

/**
 * Update only an existing record: YCSB's plain HMSET would create a partial
 * record for a missing key, where the other bindings answer NOT_FOUND. HSET
 * arguments go in chunks because Lua's unpack() has a bounded stack (the
 * workload allows up to 10,000 fields); the chunk is even so pairs stay whole.
 */
const UPDATE_IF_EXISTS_LUA = `
if redis.call('EXISTS', KEYS[1]) == 0 then return 0 end
for i = 1, #ARGV, 1000 do
  redis.call('HSET', KEYS[1], unpack(ARGV, i, math.min(i + 999, #ARGV)))
end
return 1`

type RedisWithUpdate = Redis & { bsUpdateIfExists(key: string, ...fieldValues: string[]): Promise<number> }

export class RedisBinding implements Binding {
  readonly name = 'redis'
  private client: RedisWithUpdate | undefined

  constructor(readonly config: Readonly<RedisBindingConfig>) {}

  async init(): Promise<void> {
    const c = this.config
    const client = new Redis({
      host: c.host,
      port: c.port,
      db: c.db,
      ...(c.password === undefined ? {} : { password: c.password }),
      connectTimeout: c.timeoutMs,
      commandTimeout: c.timeoutMs,
      lazyConnect: true,
      // A command fails after one reconnect attempt instead of waiting for
      // twenty: the runner counts it as SERVICE_UNAVAILABLE and goes on.
      maxRetriesPerRequest: 1,
    }) as RedisWithUpdate
    // Errors reach the operation that hit them; without a listener ioredis
    // would print every reconnect failure. The last one explains a failed connect.
    let lastError: Error | undefined
    client.on('error', (err: Error) => {
      lastError = err
    })
    client.defineCommand('bsUpdateIfExists', { numberOfKeys: 1, lua: UPDATE_IF_EXISTS_LUA })
    try {
      await client.connect()
      // ioredis sends SELECT on connect but only emits its failure, and
      // would go on in database 0: ask again so a bad redis.db fails here.
      if (c.db !== 0) await client.select(c.db)
      await client.ping()
    } catch (err) {
      client.disconnect()
      const why = lastError !== undefined && lastError !== err ? `${(err as Error).message} (${lastError.message})` : (err as Error).message
      throw new BenchstreamError('BS_ERR_BINDING', `redis: cannot use the server at ${c.host}:${c.port} (db ${c.db}): ${why}; start one or set redis.host, redis.port, redis.password, redis.db`, { cause: err, retryable: true })
    }
    this.client = client
  }

  private get redis(): RedisWithUpdate {
    if (this.client === undefined) throw new BenchstreamError('BS_ERR_BINDING', 'redis binding used before init()')
    return this.client
  }

  async read(_table: string, key: string, fields: string[] | undefined): Promise<OpResult> {
    try {
      if (fields === undefined) {
        const rec = await this.redis.hgetall(key)
        let bytes = 0
        let n = 0
        for (const f in rec) {
          bytes += rec[f]!.length
          n++
        }
        return n === 0 ? NOT_FOUND : ok(bytes)
      }
      const values = await this.redis.hmget(key, ...fields)
      const bytes = presentBytes(values)
      // All fields nil: either no record or a record without those fields;
      // only the rare miss pays for the second round trip to tell them apart.
      if (bytes < 0 && (await this.redis.exists(key)) === 0) return NOT_FOUND
      return ok(Math.max(0, bytes))
    } catch (err) {
      return failed(err)
    }
  }

  async scan(_table: string, startKey: string, count: number, fields: string[] | undefined): Promise<OpResult> {
    try {
      const redis = this.redis
      const keys = await redis.zrangebylex(REDIS_INDEX_KEY, `[${startKey}`, '+', 'LIMIT', 0, count)
      if (keys.length === 0) return ok(0)
      const p = redis.pipeline()
      for (const k of keys) {
        if (fields === undefined) p.hgetall(k)
        else p.hmget(k, ...fields)
      }
      const replies = (await p.exec()) ?? []
      let bytes = 0
      for (const [err, reply] of replies) {
        if (err !== null) return failed(err)
        // A key deleted between the index read and the hash read is skipped.
        if (fields === undefined) {
          for (const v of Object.values(reply as Record<string, string>)) bytes += v.length
        } else {
          bytes += Math.max(0, presentBytes(reply as Array<string | null>))
        }
      }
      return ok(bytes)
    } catch (err) {
      return failed(err)
    }
  }

  async update(_table: string, key: string, values: FieldValues): Promise<OpResult> {
    try {
      const found = await this.redis.bsUpdateIfExists(key, ...flatten(values))
      return found === 1 ? ok(valuesBytes(values)) : NOT_FOUND
    } catch (err) {
      return failed(err)
    }
  }

  async insert(_table: string, key: string, values: FieldValues): Promise<OpResult> {
    try {
      // MULTI: the record and its index entry appear together or not at all.
      const replies = await this.redis.multi().hset(key, values).zadd(REDIS_INDEX_KEY, 0, key).exec()
      const err = firstError(replies)
      return err === undefined ? ok(valuesBytes(values)) : failed(err)
    } catch (err) {
      return failed(err)
    }
  }

  async delete(_table: string, key: string): Promise<OpResult> {
    try {
      const replies = await this.redis.multi().del(key).zrem(REDIS_INDEX_KEY, key).exec()
      const err = firstError(replies)
      if (err !== undefined) return failed(err)
      return replies?.[0]?.[1] === 0 ? NOT_FOUND : ok(0)
    } catch (err) {
      return failed(err)
    }
  }

  /** Cumulative keyspace_hits and keyspace_misses from INFO stats. */
  async sampleServerMetrics(): Promise<{ source: string; values: Record<string, number> }> {
    const info = await this.redis.info('stats')
    return { source: 'redis', values: parseInfo(info, ['keyspace_hits', 'keyspace_misses']) }
  }

  async cleanup(): Promise<void> {
    const client = this.client
    this.client = undefined
    if (client === undefined) return
    try {
      await client.quit()
    } catch {
      client.disconnect()
    }
  }
}

/** Sum of the lengths of the non-nil values, or -1 when all are nil. */
function presentBytes(values: Array<string | null>): number {
  let bytes = -1
  for (const v of values) if (v !== null) bytes = Math.max(bytes, 0) + v.length
  return bytes
}

function flatten(values: FieldValues): string[] {
  const out: string[] = []
  for (const f in values) out.push(f, values[f]!)
  return out
}

function firstError(replies: Array<[Error | null, unknown]> | null): unknown {
  if (replies === null) return new Error('redis transaction aborted')
  for (const [err] of replies) if (err !== null) return err
  return undefined
}

/** Reads the named integer fields of an INFO section (`name:value` lines). */
export function parseInfo(info: string, names: readonly string[]): Record<string, number> {
  const out: Record<string, number> = {}
  for (const line of info.split(/\r?\n/)) {
    const colon = line.indexOf(':')
    if (colon <= 0) continue
    const name = line.slice(0, colon)
    if (names.includes(name)) out[name] = Number(line.slice(colon + 1))
  }
  for (const n of names) {
    if (out[n] === undefined || !Number.isFinite(out[n])) throw new BenchstreamError('BS_ERR_BINDING', `redis: INFO stats has no numeric ${n}`)
  }
  return out
}
