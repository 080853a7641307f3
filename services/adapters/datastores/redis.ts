/**
 * `redis`: a real Redis server through our own RESP client (resp.ts), with YCSB's data layout: one
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
 *
 * The connection is our own lean RESP client (resp.ts): one socket per
 * binding instance, one write per operation, and reads that count the reply's
 * bytes without decoding it, so the driver's own cost per operation stays
 * well below the server's. The driver gives each client thread a binding
 * instance of its own (one connection per thread, as YCSB's binding has);
 * threads sharing one instance (runPhase on one thread) pipeline on its
 * connection. Bytes are UTF-8 bytes of the field values.
 */
import { BenchstreamError } from '../../core/errors.js'
import type { FieldValues } from '../../core/workload/workload-types.js'
import { statusOf, valuesBytes, type Binding, type OpResult } from '../../core/ports/binding.js'
import { RedisReplyError, RespConnection, scriptSha, type ReplySizes } from './resp.js'

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
const failed = (err: unknown): OpResult => ({ status: statusOf(err), cache: 'UNKNOWN', bytes: 0 })

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
const UPDATE_IF_EXISTS_SHA = scriptSha(UPDATE_IF_EXISTS_LUA)

export class RedisBinding implements Binding {
  readonly name = 'redis'
  private conn: RespConnection | undefined

  constructor(readonly config: Readonly<RedisBindingConfig>) {}

  async init(): Promise<void> {
    const c = this.config
    const conn = new RespConnection({
      host: c.host,
      port: c.port,
      password: c.password,
      db: c.db,
      timeoutMs: c.timeoutMs,
    })
    try {
      await conn.connect()
    } catch (err) {
      await conn.close()
      throw new BenchstreamError(
        'BS_ERR_BINDING',
        `redis: cannot use the server at ${c.host}:${c.port} (db ${c.db}): ${(err as Error).message}; ` +
          `start one or set redis.host, redis.port, redis.password, redis.db`,
        { cause: err, retryable: true },
      )
    }
    this.conn = conn
  }

  private get redis(): RespConnection {
    if (this.conn === undefined) throw new BenchstreamError('BS_ERR_BINDING', 'redis binding used before init()')
    return this.conn
  }

  async read(_table: string, key: string, fields: string[] | undefined): Promise<OpResult> {
    try {
      if (fields === undefined) {
        const r = (await this.redis.command(['HGETALL', key], true)) as ReplySizes
        return r.count === 0 ? NOT_FOUND : ok(r.oddBytes)
      }
      const r = (await this.redis.command(['HMGET', key, ...fields], true)) as ReplySizes
      // All fields nil: either no record or a record without those fields;
      // only the rare miss pays for the second round trip to tell them apart.
      if (r.nils === r.count && (await this.redis.command(['EXISTS', key])) === 0) return NOT_FOUND
      return ok(r.bytes)
    } catch (err) {
      return failed(err)
    }
  }

  async scan(_table: string, startKey: string, count: number, fields: string[] | undefined): Promise<OpResult> {
    try {
      const redis = this.redis
      const keys = (await redis.command([
        'ZRANGEBYLEX',
        REDIS_INDEX_KEY,
        `[${startKey}`,
        '+',
        'LIMIT',
        '0',
        String(count),
      ])) as string[]
      if (keys.length === 0) return ok(0)
      const replies = await redis.commands(
        keys.map((k) => (fields === undefined ? ['HGETALL', k] : ['HMGET', k, ...fields])),
        true,
      )
      let bytes = 0
      for (const reply of replies) {
        if (reply instanceof RedisReplyError) return failed(reply)
        // A key deleted between the index read and the hash read is skipped.
        const r = reply as ReplySizes
        bytes += fields === undefined ? r.oddBytes : r.bytes
      }
      return ok(bytes)
    } catch (err) {
      return failed(err)
    }
  }

  async update(_table: string, key: string, values: FieldValues): Promise<OpResult> {
    try {
      const args = flatten(values)
      let found
      try {
        found = await this.redis.command(['EVALSHA', UPDATE_IF_EXISTS_SHA, '1', key, ...args])
      } catch (err) {
        // The server does not know the script yet (first use, or restarted): send it once.
        if (!(err instanceof RedisReplyError) || !err.message.startsWith('NOSCRIPT')) throw err
        found = await this.redis.command(['EVAL', UPDATE_IF_EXISTS_LUA, '1', key, ...args])
      }
      return found === 1 ? ok(valuesBytes(values)) : NOT_FOUND
    } catch (err) {
      return failed(err)
    }
  }

  async insert(_table: string, key: string, values: FieldValues): Promise<OpResult> {
    try {
      // MULTI: the record and its index entry appear together or not at all.
      const replies = await this.redis.commands([
        ['MULTI'],
        ['HSET', key, ...flatten(values)],
        ['ZADD', REDIS_INDEX_KEY, '0', key],
        ['EXEC'],
      ])
      const err = transactionError(replies)
      return err === undefined ? ok(valuesBytes(values)) : failed(err)
    } catch (err) {
      return failed(err)
    }
  }

  async delete(_table: string, key: string): Promise<OpResult> {
    try {
      const replies = await this.redis.commands([['MULTI'], ['DEL', key], ['ZREM', REDIS_INDEX_KEY, key], ['EXEC']])
      const err = transactionError(replies)
      if (err !== undefined) return failed(err)
      return (replies.at(-1) as unknown[])[0] === 0 ? NOT_FOUND : ok(0)
    } catch (err) {
      return failed(err)
    }
  }

  /** Cumulative keyspace_hits and keyspace_misses from INFO stats. */
  async sampleServerMetrics(): Promise<{ source: string; values: Record<string, number> }> {
    const info = (await this.redis.command(['INFO', 'stats'])) as string
    return { source: 'redis', values: parseInfo(info, ['keyspace_hits', 'keyspace_misses']) }
  }

  async cleanup(): Promise<void> {
    const conn = this.conn
    this.conn = undefined
    await conn?.close()
  }
}

/**
 * The error of a MULTI ... EXEC batch: a command that could not be queued, an aborted EXEC, or a failed command inside.
 */
function transactionError(replies: readonly unknown[]): unknown {
  const exec = replies.at(-1)
  if (exec instanceof Error) return exec
  if (exec === null || !Array.isArray(exec)) return new Error('redis transaction aborted')
  for (const r of [...replies.slice(0, -1), ...exec]) if (r instanceof Error) return r
  return undefined
}

function flatten(values: FieldValues): string[] {
  const out: string[] = []
  for (const f in values) out.push(f, values[f]!)
  return out
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
    if (out[n] === undefined || !Number.isFinite(out[n]))
      throw new BenchstreamError('BS_ERR_BINDING', `redis: INFO stats has no numeric ${n}`)
  }
  return out
}
