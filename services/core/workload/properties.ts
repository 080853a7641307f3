/**
 * YCSB property files and `-p key=value` overrides, merged into one flat map.
 * The line-oriented subset of java.util.Properties YCSB's files use; `\uXXXX`
 * and other escapes are not interpreted (docs/design/workload.md#property-files-propertiests).
 */
import { closest } from '../suggest.js'
import { BenchstreamError } from '../errors.js'

export type Properties = Record<string, string>

// A plain-object write that stays a data property even for "__proto__".
function put(target: Properties, key: string, value: string): void {
  if (key === '__proto__')
    Object.defineProperty(target, key, { value, enumerable: true, writable: true, configurable: true })
  else target[key] = value
}

/**
 * Parses the text of one property file. Later lines win over earlier ones
 * with the same key, as in Java.
 * @param source shown in error messages (a file name).
 */
export function parseProperties(text: string, source = 'properties'): Properties {
  const out: Properties = {}
  const lines = text.split(/\r\n|\r|\n/)
  for (let i = 0; i < lines.length; i++) {
    const lineNo = i + 1
    let line = (lines[i] ?? '').trim()
    if (line === '' || line.startsWith('#') || line.startsWith('!')) continue
    // Continuation: an odd number of trailing backslashes joins the next line.
    while (/(^|[^\\])(\\\\)*\\$/.test(line) && i + 1 < lines.length) {
      i++
      line = line.slice(0, -1) + (lines[i] ?? '').trim()
    }
    const sep = line.search(/[=:]/)
    let key: string
    let value: string
    if (sep >= 0) {
      key = line.slice(0, sep).trim()
      value = line.slice(sep + 1).trim()
    } else {
      const ws = line.search(/\s/)
      key = ws >= 0 ? line.slice(0, ws) : line
      value = ws >= 0 ? line.slice(ws).trim() : ''
    }
    if (key === '') {
      throw new BenchstreamError(
        'BS_ERR_WORKLOAD',
        `${source}:${lineNo}: a property line needs a name before '${line[sep] ?? '='}'; got '${line}'`,
      )
    }
    put(out, key, value)
  }
  return out
}

/**
 * Merges property files (their text, in order) and then `-p` overrides;
 * later sources win, as in YCSB's command line.
 */
export function mergeProperties(
  files: readonly string[],
  overrides: ReadonlyArray<readonly [string, string]> = [],
): Properties {
  const out: Properties = {}
  files.forEach((text, i) => {
    const parsed = parseProperties(text, `property file ${i + 1}`)
    for (const key of Object.keys(parsed)) put(out, key, parsed[key] ?? '')
  })
  for (const [key, value] of overrides) {
    const k = key.trim()
    if (k === '') throw new BenchstreamError('BS_ERR_WORKLOAD', `a property override needs a name; got '=${value}'`)
    put(out, k, value.trim())
  }
  return out
}

/** Every property CoreWorkload reads (services/core/workload/core-workload.ts). */
export const CORE_WORKLOAD_PROPERTIES = [
  'workload',
  'recordcount',
  'operationcount',
  'maxexecutiontime',
  'table',
  'fieldcount',
  'fieldlength',
  'minfieldlength',
  'fieldlengthdistribution',
  'fieldnameprefix',
  'readallfields',
  'readallfieldsbyname',
  'writeallfields',
  'readproportion',
  'updateproportion',
  'insertproportion',
  'scanproportion',
  'readmodifywriteproportion',
  'deleteproportion',
  'requestdistribution',
  'zipfianconstant',
  'minscanlength',
  'maxscanlength',
  'scanlengthdistribution',
  'insertorder',
  'insertstart',
  'insertcount',
  'hotspotdatafraction',
  'hotspotopnfraction',
  'exponential.percentile',
  'exponential.frac',
  'keyprefix',
  'zeropadding',
] as const

/** Properties of the driver itself (YCSB's Client), read by the CLI rather than the workload. */
export const DRIVER_PROPERTIES = [
  'threadcount',
  'target',
  'status.interval',
  'measurement.interval',
  'db',
  'workload',
  'exportfile',
  'measurementtype',
  'hdrhistogram.percentiles',
  'hdrhistogram.fileoutput',
  'hdrhistogram.output.path',
  'exporter',
  'dotransactions',
] as const

/**
 * YCSB 0.17.0 properties (Client, Measurements, CoreWorkload) that
 * Benchstream's driver does not implement, with what to do instead. They are
 * refused by name, never silently ignored; `benchstream ycsb` runs YCSB
 * itself, where all of them work.
 */
export const YCSB_UNSUPPORTED_PROPERTIES: Readonly<Record<string, string>> = {
  'measurement.trackjvm': 'JVM figures ([TOTAL_GCs], ...) exist only in a JVM',
  'measurement.raw.output_file':
    'raw output (measurementtype=raw) is not written; every event is in ClickHouse (table ops)',
  'measurement.histogram.verbose': 'the histogram measurement type is not implemented',
  'histogram.buckets': 'the histogram measurement type is not implemented',
  'timeseries.granularity': 'the timeseries measurement type is not implemented',
  reportlatencyforeacherror: 'failed operations are reported as OP-FAILED with their Return= counts per status',
  latencytrackederrors: 'failed operations are reported as OP-FAILED with their Return= counts per status',
  dataintegrity: 'values are not checked on read',
  core_workload_insertion_retry_limit: 'failed inserts are not retried',
  core_workload_insertion_retry_interval: 'failed inserts are not retried',
  fieldlengthhistogram: 'fieldlengthdistribution=histogram is not implemented (constant, uniform and zipfian are)',
  debug: 'use LOG_LEVEL=debug',
  'redis.cluster': 'the redis binding talks to one Redis server (ioredis), not a Redis Cluster',
}
/** Why one of YCSB_UNSUPPORTED_PROPERTIES is refused, in one line. */
export const YCSB_UNSUPPORTED_HINT = 'run YCSB itself with `benchstream ycsb -- ...`, which supports it'

/** Prefixes of binding-specific properties (`redis.host`), which each binding checks itself. */
export const BINDING_PROPERTY_PREFIXES = ['memory.', 'redis.', 'postgres.'] as const

const KNOWN = new Set<string>([...CORE_WORKLOAD_PROPERTIES, ...DRIVER_PROPERTIES])

/** Names in `props` that neither CoreWorkload, the driver nor a binding prefix accounts for, sorted. */
export function unknownProperties(
  props: Properties,
  bindingPrefixes: readonly string[] = BINDING_PROPERTY_PREFIXES,
): string[] {
  return Object.keys(props)
    .filter((k) => !KNOWN.has(k) && !bindingPrefixes.some((p) => k.startsWith(p)))
    .sort()
}

/** Throws BS_ERR_WORKLOAD naming the unknown properties and listing the valid ones. */
export function assertKnownProperties(
  props: Properties,
  bindingPrefixes: readonly string[] = BINDING_PROPERTY_PREFIXES,
): void {
  const unsupported = Object.keys(props)
    .filter((k) => Object.hasOwn(YCSB_UNSUPPORTED_PROPERTIES, k))
    .sort()
  if (unsupported.length > 0) {
    throw new BenchstreamError(
      'BS_ERR_WORKLOAD',
      `YCSB propert${unsupported.length === 1 ? 'y' : 'ies'} ` +
        `${unsupported.map((k) => `${k} (${YCSB_UNSUPPORTED_PROPERTIES[k]})`).join(', ')} ` +
        `not supported by Benchstream's driver; remove ${unsupported.length === 1 ? 'it' : 'them'}, ` +
        `or ${YCSB_UNSUPPORTED_HINT}`,
    )
  }
  const unknown = unknownProperties(props, bindingPrefixes)
  if (unknown.length === 0) return
  const valid = [...KNOWN].sort().join(', ')
  const prefixes = bindingPrefixes.map((p) => `${p}*`).join(', ')
  // A close match is named first: "readproportoin (did you mean readproportion?)".
  const named = unknown.map((k) => {
    const c = closest(k, KNOWN)
    return c === undefined ? k : `${k} (did you mean ${c}?)`
  })
  throw new BenchstreamError(
    'BS_ERR_WORKLOAD',
    `unknown propert${unknown.length === 1 ? 'y' : 'ies'} ${named.join(', ')}; valid names are ${valid}, ` +
      `and binding properties ${prefixes}`,
  )
}
