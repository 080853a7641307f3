/**
 * The datastore's own cache-hit ratio, from the cumulative counters its
 * sampler reports (SERVER_METRICS records, one sample a second per client):
 * Redis keyspace hits/misses, PostgreSQL shared-buffer hits/reads, HBase's
 * region-server block cache, the embedded store's own. People put this
 * figure next to throughput ("block cache hit ratio 95%"); it is the
 * server's view, where the client's ratio is what each operation saw.
 */

/** Which counters are hits and misses, per sampler source. All are cumulative. */
export const SERVER_CACHE_COUNTERS = {
  memory: { hits: 'cache_hits', misses: 'cache_misses' },
  postgres: { hits: 'blks_hit', misses: 'blks_read' },
  redis: { hits: 'keyspace_hits', misses: 'keyspace_misses' },
  hbase: { hits: 'blockCacheHitCount', misses: 'blockCacheMissCount' },
} as const satisfies Record<string, { hits: string; misses: string }>

export interface CounterSample {
  clientId: string
  source: string
  name: string
  /** µs since the epoch. */
  atUs: number
  value: number
}

export interface ServerCacheFigure {
  source: string
  hits: number
  misses: number
  /** hits / (hits + misses) over the run; null when the counters did not move. */
  ratio: number | null
}

/**
 * Hits and misses during the run per source: each client's counter growth
 * from its first sample to its last, summed over clients. A counter that
 * goes down (the server restarted) counts again from zero.
 */
export function serverCacheFigures(samples: readonly CounterSample[]): ServerCacheFigure[] {
  const series = new Map<string, CounterSample[]>()
  for (const s of samples) {
    const key = `${s.source}\u0000${s.clientId}\u0000${s.name}`
    const list = series.get(key)
    if (list === undefined) series.set(key, [s])
    else list.push(s)
  }
  const growth = new Map<string, { hits: number; misses: number }>()
  for (const list of series.values()) {
    const { source, name } = list[0]!
    const counters = (SERVER_CACHE_COUNTERS as Record<string, { hits: string; misses: string } | undefined>)[source]
    if (counters === undefined || (name !== counters.hits && name !== counters.misses)) continue
    list.sort((a, b) => a.atUs - b.atUs)
    let g = 0
    for (let i = 1; i < list.length; i++) {
      const d = list[i]!.value - list[i - 1]!.value
      g += d >= 0 ? d : list[i]!.value
    }
    const t = growth.get(source) ?? { hits: 0, misses: 0 }
    if (name === counters.hits) t.hits += g
    else t.misses += g
    growth.set(source, t)
  }
  return [...growth]
    .sort(([a], [b]) => a.localeCompare(b))
    .map(([source, { hits, misses }]) => ({
      source,
      hits,
      misses,
      ratio: hits + misses === 0 ? null : hits / (hits + misses),
    }))
}
