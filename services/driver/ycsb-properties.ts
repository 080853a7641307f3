/**
 * YCSB's output properties as Benchstream's driver takes them, checked once
 * with the rest of the configuration: what it supports works as in YCSB
 * 0.17.0, a value it does not support is refused by name (never ignored).
 */
import { BenchstreamError } from '../core/errors.js'
import {
  REPORT_PERCENTILES,
  YCSB_EXPORTERS,
  type MeasurementInterval,
  type YcsbExporter,
} from '../core/reports/ycsb-exporters.js'

export interface YcsbOutputOptions {
  /** measurement.interval as given; undefined: intended sections when the run has a target (YCSB's default is op). */
  measurementInterval: MeasurementInterval | undefined
  /** hdrhistogram.percentiles; undefined: every percentile the report holds (YCSB's default prints 95 and 99). */
  percentiles: number[] | undefined
  /** exporter (default: YCSB's TextMeasurementsExporter). */
  exporter: YcsbExporter
  /** hdrhistogram.fileoutput=true: interval logs `<pathPrefix><NAME>.hdr`, one line every intervalS. */
  hdrLog: { pathPrefix: string; intervalS: number } | undefined
}

/** YCSB binding classes with an equivalent binding here, and how they differ. */
export const YCSB_BINDING_EQUIVALENTS: Readonly<Record<string, { binding: string; differences: string }>> = {
  'site.ycsb.db.RedisClient': {
    binding: 'redis',
    differences:
      "records are hashes as in YCSB's binding; the key index is the sorted set _bs_keys by key instead " +
      'of _indices by key hash, so scans go in key order',
  },
  'com.yahoo.ycsb.db.RedisClient': {
    binding: 'redis',
    differences:
      "records are hashes as in YCSB's binding; the key index is the sorted set _bs_keys by key instead " +
      'of _indices by key hash, so scans go in key order',
  },
}

function workload(message: string): BenchstreamError {
  return new BenchstreamError('BS_ERR_WORKLOAD', message)
}

export function parseYcsbOutput(p: Record<string, string>): YcsbOutputOptions {
  const type = p.measurementtype
  if (type !== undefined && type !== 'hdrhistogram') {
    throw workload(
      `measurementtype=${type} is not supported by Benchstream's driver: it measures as YCSB's default, ` +
        `hdrhistogram (every event also goes to ClickHouse's ops table, which is what raw output gives); ` +
        `remove it, or run YCSB itself with \`benchstream ycsb -- ...\``,
    )
  }
  const mi = p['measurement.interval']
  if (mi !== undefined && mi !== 'op' && mi !== 'intended' && mi !== 'both')
    throw workload(`measurement.interval=${mi} is not allowed: expected op, intended or both`)
  let percentiles: number[] | undefined
  const pl = p['hdrhistogram.percentiles']
  if (pl !== undefined) {
    percentiles = pl
      .split(',')
      .map((x) => x.trim())
      .filter((x) => x !== '')
      .map(Number)
    const bad = percentiles.filter((x) => !(REPORT_PERCENTILES as readonly number[]).includes(x))
    if (percentiles.length === 0 || bad.length > 0) {
      throw workload(
        `hdrhistogram.percentiles=${pl}: ` +
          (bad.length > 0 ? `${bad.join(', ')} ${bad.length === 1 ? 'is' : 'are'} not supported` : 'lists none') +
          '; ' +
          `the driver's report holds ${REPORT_PERCENTILES.join(', ')} (choose among them), or run YCSB ` +
          `itself with \`benchstream ycsb -- ...\``,
      )
    }
  }
  const ex = p.exporter
  if (ex !== undefined && !Object.hasOwn(YCSB_EXPORTERS, ex))
    throw workload(
      `exporter=${ex} is not supported: expected one of YCSB's ${Object.keys(YCSB_EXPORTERS)
        .filter((k) => k.startsWith('site.'))
        .join(', ')}`,
    )
  const fo = p['hdrhistogram.fileoutput']
  if (fo !== undefined && fo !== 'true' && fo !== 'false')
    throw workload(`hdrhistogram.fileoutput=${fo} is not allowed: expected true or false`)
  const si = Number(p['status.interval'] ?? '10')
  if (!Number.isInteger(si) || si < 1 || si > 86_400)
    throw workload(`status.interval=${p['status.interval']} is not allowed: expected an integer from 1 to 86400`)
  return {
    measurementInterval: mi,
    percentiles,
    exporter: ex === undefined ? 'text' : YCSB_EXPORTERS[ex as keyof typeof YCSB_EXPORTERS],
    // YCSB's default path is "" (the working directory), names as YCSB's: READ.hdr, Intended-READ.hdr.
    hdrLog: fo === 'true' ? { pathPrefix: p['hdrhistogram.output.path'] ?? '', intervalS: si } : undefined,
  }
}
