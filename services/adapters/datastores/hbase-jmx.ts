/**
 * The server side of an HBase benchmark: a region server's own counters,
 * read from its info server's `/jmx` JSON endpoint (HBase 2.x,
 * `Hadoop:service=HBase,name=RegionServer,sub=Server`). YCSB drives HBase
 * from Java, so nothing in the Node driver talks to HBase; this sampler runs
 * beside YCSB (`benchstream ycsb`, `demo --system hbase`) and its samples go
 * out as SERVER_METRICS records like the Node bindings' own.
 *
 * HBase refreshes these values every hbase.metrics period (10 s by default;
 * deploy/local/hbase.sh sets 1 s): a faster sampler only repeats values.
 */
import { BenchstreamError } from '../../core/errors.js'

/** The bean with the region server's block cache and request counters. */
export const REGION_SERVER_BEAN = 'Hadoop:service=HBase,name=RegionServer,sub=Server'

/** Counters kept from the bean: the block cache (hits, misses, also data blocks only) and request totals. */
export const HBASE_COUNTERS = [
  'blockCacheHitCount',
  'blockCacheMissCount',
  'blockCacheDataHitCount',
  'blockCacheDataMissCount',
  'blockCacheCount',
  'blockCacheSize',
  'readRequestCount',
  'writeRequestCount',
  'totalRequestCount',
] as const

export interface ServerSample {
  source: string
  values: Record<string, number>
}

/** Reads the counters out of a `/jmx` answer; BS_ERR_BINDING when the bean or a block cache counter is missing. */
export function parseRegionServerJmx(body: unknown, where: string): ServerSample {
  const beans = (body as { beans?: unknown } | null)?.beans
  const bean = Array.isArray(beans)
    ? (beans as Array<Record<string, unknown>>).find((b) => b?.name === REGION_SERVER_BEAN)
    : undefined
  if (bean === undefined)
    throw new BenchstreamError(
      'BS_ERR_BINDING',
      `${where} has no ${REGION_SERVER_BEAN} bean: is it a region server's info port (HBASE_RS_INFO_PORT), ` +
        `with HBase 2.x?`,
    )
  const values: Record<string, number> = {}
  for (const name of HBASE_COUNTERS) {
    const v = bean[name]
    if (typeof v === 'number' && Number.isFinite(v)) values[name] = v
  }
  if (values.blockCacheHitCount === undefined || values.blockCacheMissCount === undefined)
    throw new BenchstreamError(
      'BS_ERR_BINDING',
      `${where}: the region server bean has no blockCacheHitCount/blockCacheMissCount`,
    )
  return { source: 'hbase', values }
}

export class HBaseJmxSampler {
  private readonly url: string

  /** @param infoUrl the region server's info server, e.g. http://127.0.0.1:16030 */
  constructor(
    infoUrl: string,
    private readonly timeoutMs = 2000,
  ) {
    this.url = `${infoUrl.replace(/\/+$/, '')}/jmx?qry=${encodeURIComponent(REGION_SERVER_BEAN)}`
  }

  async sample(): Promise<ServerSample> {
    let res: Response
    try {
      res = await fetch(this.url, { signal: AbortSignal.timeout(this.timeoutMs) })
    } catch (err) {
      throw new BenchstreamError('BS_ERR_BINDING', `HBase metrics at ${this.url}: ${(err as Error).message}`, {
        cause: err,
        retryable: true,
      })
    }
    if (!res.ok)
      throw new BenchstreamError('BS_ERR_BINDING', `HBase metrics at ${this.url}: HTTP ${res.status}`, {
        retryable: true,
      })
    let body: unknown
    try {
      body = await res.json()
    } catch (err) {
      throw new BenchstreamError(
        'BS_ERR_BINDING',
        `HBase metrics at ${this.url}: not JSON (${(err as Error).message})`,
        { cause: err },
      )
    }
    return parseRegionServerJmx(body, this.url)
  }
}
