/**
 * The driver's final report shaped by YCSB's output properties
 * (measurement.interval, hdrhistogram.percentiles, exporter): a hook after
 * formatOutcome, which it leaves as it is for the defaults. Benchstream's
 * own `[BENCHSTREAM]` lines come last, as records of the same exporter.
 */
import { renderRecords, ycsbRecords, type YcsbRecord } from '../core/reports/ycsb-exporters.js'
import { formatOutcome, type DriverOutcome } from './app.js'
import type { DriverConfig } from './config.js'

export function formatDriverReport(cfg: DriverConfig, outcome: DriverOutcome): string {
  const base = formatOutcome(cfg, outcome)
  const y = cfg.ycsb
  if (
    cfg.export === 'json' ||
    (y.exporter === 'text' && y.percentiles === undefined && y.measurementInterval === undefined)
  )
    return base
  const own: YcsbRecord[] = []
  for (const line of base.split('\n')) {
    const m = /^\[BENCHSTREAM\], ([^,]+), (.*)$/.exec(line)
    if (m === null) continue
    const n = Number(m[2])
    // YCSB's JSON exporters write numbers only (and readers expect them): the run and client ids stay in the text form.
    if (!(m[2]!.trim() !== '' && Number.isFinite(n)) && y.exporter !== 'text') continue
    own.push({
      metric: 'BENCHSTREAM',
      measurement: m[1]!,
      value: m[2]!.trim() !== '' && Number.isFinite(n) ? n : m[2]!,
      double: !Number.isInteger(n),
    })
  }
  return renderRecords(
    [
      ...ycsbRecords(outcome.report, {
        ...(y.percentiles === undefined ? {} : { percentiles: y.percentiles }),
        ...(y.measurementInterval === undefined ? {} : { measurementInterval: y.measurementInterval }),
      }),
      ...own,
    ],
    y.exporter,
  )
}
