/**
 * `memory`: an embedded key-value store with a bounded LRU read cache, the
 * zero-setup default. Records live encoded (JSON bytes) in the backing map,
 * the way a real store keeps them on disk pages; the cache holds decoded
 * records. A read that hits the cache skips the decode; a miss pays for it
 * and fills the cache. So every read knows its cache outcome, and hits and
 * misses have genuinely different costs.
 *
 * Properties: memory.cachesize (records in the read cache, default 10% of
 * recordcount, at least 1).
 *
 * Slowing it down on purpose, to stand in for a slower release in tests and
 * demos of `compare` and of the live baseline:
 * - memory.delay.<op> (read, scan, update, insert, delete): µs added to every
 *   such call. Below 1000 µs the call spins for that long (exact, and it
 *   holds up this client's other threads, which share one event loop, as a
 *   CPU-bound store in the process would); from 1000 µs on it waits on a
 *   timer instead (the other threads go on, as with a remote store; Node's
 *   timers are good to about a millisecond).
 * - memory.delay.after: seconds after this binding's first operation before
 *   the delays start (default 0: from the first); a run that slows down in
 *   the middle.
 */
import type { FieldValues } from '../../core/workload/workload-types.js'
import { valuesBytes, type Binding, type OpResult } from '../../core/ports/binding.js'

const OK_UNKNOWN = (bytes: number): OpResult => ({ status: 'OK', cache: 'UNKNOWN', bytes })
const NOT_FOUND: OpResult = { status: 'NOT_FOUND', cache: 'UNKNOWN', bytes: 0 }

/** The store itself; one per process, shared by all threads of a client. */
export class MemoryStore {
  private readonly backing = new Map<string, Buffer>()
  /** Map keeps insertion order: the first key is the least recently used. */
  private readonly cache = new Map<string, FieldValues>()
  /** Sorted keys, for scans; built lazily after inserts. */
  private sortedKeys: string[] = []
  private sortedDirty = false
  hits = 0
  misses = 0

  constructor(readonly cacheSize: number) {}

  get size(): number {
    return this.backing.size
  }

  /** The stored record, decoded, without touching the cache or its counters (for inspection and tests). */
  peek(key: string): FieldValues | undefined {
    const raw = this.backing.get(key)
    return raw === undefined ? undefined : (JSON.parse(raw.toString('utf8')) as FieldValues)
  }

  read(key: string, fields: string[] | undefined): OpResult {
    let rec = this.cache.get(key)
    let cache: OpResult['cache']
    if (rec !== undefined) {
      // Move to most-recently-used.
      this.cache.delete(key)
      this.cache.set(key, rec)
      cache = 'HIT'
      this.hits++
    } else {
      const raw = this.backing.get(key)
      if (raw === undefined) return NOT_FOUND
      rec = JSON.parse(raw.toString('utf8')) as FieldValues
      this.remember(key, rec)
      cache = 'MISS'
      this.misses++
    }
    return { status: 'OK', cache, bytes: fields === undefined ? valuesBytes(rec) : fieldsBytes(rec, fields) }
  }

  scan(startKey: string, count: number, fields: string[] | undefined): OpResult {
    if (this.sortedDirty) {
      this.sortedKeys = [...this.backing.keys()].sort()
      this.sortedDirty = false
    }
    let i = lowerBound(this.sortedKeys, startKey)
    let bytes = 0
    for (let n = 0; n < count && i < this.sortedKeys.length; n++, i++) {
      const raw = this.backing.get(this.sortedKeys[i]!)
      if (raw === undefined) continue
      const rec = JSON.parse(raw.toString('utf8')) as FieldValues
      bytes += fields === undefined ? valuesBytes(rec) : fieldsBytes(rec, fields)
    }
    return OK_UNKNOWN(bytes)
  }

  update(key: string, values: FieldValues): OpResult {
    const raw = this.backing.get(key)
    if (raw === undefined) return NOT_FOUND
    const rec = { ...(this.cache.get(key) ?? (JSON.parse(raw.toString('utf8')) as FieldValues)), ...values }
    this.backing.set(key, Buffer.from(JSON.stringify(rec)))
    // Write-through: a cached record stays current.
    if (this.cache.has(key)) this.cache.set(key, rec)
    return OK_UNKNOWN(valuesBytes(values))
  }

  insert(key: string, values: FieldValues): OpResult {
    if (!this.backing.has(key)) this.sortedDirty = true
    this.backing.set(key, Buffer.from(JSON.stringify(values)))
    this.cache.delete(key)
    return OK_UNKNOWN(valuesBytes(values))
  }

  delete(key: string): OpResult {
    if (!this.backing.delete(key)) return NOT_FOUND
    this.cache.delete(key)
    this.sortedDirty = true
    return OK_UNKNOWN(0)
  }

  private remember(key: string, rec: FieldValues): void {
    this.cache.set(key, rec)
    if (this.cache.size > this.cacheSize) {
      const oldest = this.cache.keys().next().value
      if (oldest !== undefined) this.cache.delete(oldest)
    }
  }
}

function fieldsBytes(rec: FieldValues, fields: string[]): number {
  let n = 0
  for (const f of fields) n += rec[f]?.length ?? 0
  return n
}

function lowerBound(a: string[], x: string): number {
  let lo = 0
  let hi = a.length
  while (lo < hi) {
    const mid = (lo + hi) >>> 1
    if (a[mid]! < x) lo = mid + 1
    else hi = mid
  }
  return lo
}

/** One store per process and cache size, so the load and run phases of one process share data. */
const stores = new Map<number, MemoryStore>()

export function memoryStore(cacheSize: number): MemoryStore {
  let s = stores.get(cacheSize)
  if (s === undefined) {
    s = new MemoryStore(cacheSize)
    stores.set(cacheSize, s)
  }
  return s
}

/** Added latency per operation, µs (0 = none), and when it starts. */
export interface MemoryDelays {
  read: number
  scan: number
  update: number
  insert: number
  delete: number
  /** Seconds after the binding's first operation before the delays apply. */
  afterS: number
}

export const NO_DELAYS: Readonly<MemoryDelays> = Object.freeze({
  read: 0,
  scan: 0,
  update: 0,
  insert: 0,
  delete: 0,
  afterS: 0,
})
/** Delays from this many µs on wait on a timer instead of spinning. */
export const TIMER_FROM_US = 1000

/** How the delays pass time: the real clock, or a test's own (injected, so no test waits on a busy machine). */
export interface DelayClock {
  /** Milliseconds, monotonic (performance.now()). */
  now(): number
  /** Waits on a timer. */
  sleep(ms: number): Promise<void>
  /** Busy-waits: sub-millisecond delays that a timer cannot give. */
  spin(ms: number): void
}

const spinUntil = (until: number): void => {
  while (performance.now() < until) {
    // spin
  }
}
const timer = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms))

export const REAL_DELAY_CLOCK: DelayClock = {
  now: () => performance.now(),
  // A timer counts from the event loop's cached time, so it fires early by as long as the loop was busy or the
  // process descheduled before it was set (milliseconds on a loaded machine): what is left is waited out, so a
  // delay is never shorter than asked (a compare test saw scans "10 ms slower" measured at under 10 ms).
  sleep: async (ms) => {
    const until = performance.now() + ms
    await timer(ms)
    for (let left = until - performance.now(); left > 0; left = until - performance.now()) {
      if (left >= 1) await timer(left)
      else spinUntil(until)
    }
  },
  spin: (ms) => spinUntil(performance.now() + ms),
}

export class MemoryBinding implements Binding {
  readonly name = 'memory'
  /** clock.now() of the first operation; the delays count from there. */
  private firstOpMs: number | undefined
  constructor(
    private readonly store: MemoryStore,
    private readonly delays: Readonly<MemoryDelays> = NO_DELAYS,
    private readonly clock: DelayClock = REAL_DELAY_CLOCK,
  ) {}
  async init(): Promise<void> {}
  async read(_t: string, key: string, fields: string[] | undefined): Promise<OpResult> {
    return this.slow(this.delays.read, this.store.read(key, fields))
  }
  async scan(_t: string, startKey: string, count: number, fields: string[] | undefined): Promise<OpResult> {
    return this.slow(this.delays.scan, this.store.scan(startKey, count, fields))
  }
  async update(_t: string, key: string, values: FieldValues): Promise<OpResult> {
    return this.slow(this.delays.update, this.store.update(key, values))
  }
  async insert(_t: string, key: string, values: FieldValues): Promise<OpResult> {
    return this.slow(this.delays.insert, this.store.insert(key, values))
  }
  async delete(_t: string, key: string): Promise<OpResult> {
    return this.slow(this.delays.delete, this.store.delete(key))
  }
  private async slow(us: number, r: OpResult): Promise<OpResult> {
    const now = this.clock.now()
    this.firstOpMs ??= now
    if (us <= 0 || now - this.firstOpMs < this.delays.afterS * 1000) return r
    if (us >= TIMER_FROM_US) await this.clock.sleep(us / 1000)
    else this.clock.spin(us / 1000)
    return r
  }
  async sampleServerMetrics(): Promise<{ source: string; values: Record<string, number> }> {
    return {
      source: 'memory',
      values: { cache_hits: this.store.hits, cache_misses: this.store.misses, records: this.store.size },
    }
  }
  async cleanup(): Promise<void> {}
}
