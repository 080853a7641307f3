/**
 * `measurementtype=raw` output (YCSB 0.17.0): `READ,<timestamp ms>,<latency
 * us>` lines, on stdout before the text report or in measurement.raw.output_file.
 * The timestamp is a completion time, so an operation started at timestamp ·
 * 1000 - latency µs (docs/design/ycsb-files.md#raw-data-raw-reportts).
 */
import { BenchstreamError } from '../errors.js'
import type { RawReport, RawSeries, SummaryReport } from './report-types.js'
import { parseMeasurementName } from './measurement-name.js'
import { buildSummaryReport } from './summary-report.js'
import { scanTextRecords } from './text-report.js'
import { decodeError, unquoteMail } from './text-input.js'

export const RAW_HEADER = /^(\S+) latency raw data: op, timestamp\(ms\), latency\(us\)$/
export const RAW_LINE = /^([A-Za-z][\w-]*)\s*,\s*(\d+)\s*,\s*(\d+)$/
/**
 * Most raw data lines read from one file (every latency is kept in memory,
 * about 50 bytes each while parsed). A bigger run's latencies are better
 * imported as HdrHistogram interval logs, which hold any count in kilobytes.
 */
export const MAX_RAW_LINES = 10_000_000
const RAW_CHATTER = /^Raw data measurement: will output to (?:stdout|result file: .*)\.?$/

/** Parses raw output; throws BS_ERR_DECODE naming the line. The summary, when present, must agree with the data. */
export function parseRawReport(content: string, source: string): RawReport {
  const lines = unquoteMail(content.replace(/\r\n?/g, '\n')).split('\n')
  const sections = new Map<string, { line: number; endMs: number[]; latencyUs: number[] }>()
  let current: string | undefined
  let currentLine = 0
  let dataLines = 0
  for (let n = 0; n < lines.length; n++) {
    const line = lines[n]!.trim()
    const header = RAW_HEADER.exec(line)
    const data = header === null ? RAW_LINE.exec(line) : null
    if (header === null && data === null) {
      if (RAW_CHATTER.test(line)) lines[n] = ''
      continue
    }
    lines[n] = '' // what is left is the summary, scanned below with its line numbers intact
    const name = (header ?? data)![1]!
    if (header !== null || current !== name) {
      const previous = sections.get(name)
      if (previous !== undefined) {
        throw decodeError(
          source,
          n + 1,
          header !== null
            ? `a second "${name} latency raw data" header (the first is at line ${previous.line}): the file ` +
                `holds more than one run (YCSB appends to measurement.raw.output_file); give one run per file`
            : `a ${name} line inside the ${current ?? '?'} data started at line ${currentLine}, after ${name}'s ` +
                `own data at line ${previous.line}; expected each measurement's lines together`,
        )
      }
      sections.set(name, { line: n + 1, endMs: [], latencyUs: [] })
      current = name
      currentLine = n + 1
      if (header !== null) continue
    }
    if (++dataLines > MAX_RAW_LINES) {
      throw new BenchstreamError(
        'BS_ERR_TOO_LARGE',
        `${source} line ${n + 1}: more than ${MAX_RAW_LINES} raw data lines (MAX_RAW_LINES); import ` +
          `this run's HdrHistogram interval logs instead (-p hdrhistogram.fileoutput=true), or split the ` +
          `file by measurement`,
      )
    }
    const s = sections.get(name)!
    const endMs = Number(data![2])
    const latencyUs = Number(data![3])
    if (!Number.isSafeInteger(endMs) || !Number.isSafeInteger(latencyUs))
      throw decodeError(
        source,
        n + 1,
        `expected NAME,<timestamp ms>,<latency µs> with whole numbers; found ${JSON.stringify(line)}`,
      )
    s.endMs.push(endMs)
    s.latencyUs.push(latencyUs)
  }
  if (sections.size === 0)
    throw decodeError(
      source,
      1,
      'holds no raw data; expected "READ latency raw data: op, timestamp(ms), latency(us)" and lines ' +
        '"READ,<timestamp ms>,<latency µs>"',
    )
  const series: RawSeries[] = [...sections].map(([name, s]) => ({
    name: parseMeasurementName(name),
    line: s.line,
    count: s.endMs.length,
    endMs: Float64Array.from(s.endMs),
    latencyUs: Float64Array.from(s.latencyUs),
    startUs: Float64Array.from(s.endMs, (e, i) => e * 1000 - s.latencyUs[i]!),
  }))
  const { records, ignoredLines } = scanTextRecords(lines.join('\n'), source)
  const summary: SummaryReport | undefined =
    records.length === 0 ? undefined : buildSummaryReport(records, 'text', source, ignoredLines)
  for (const m of summary?.measurements ?? []) {
    if (m.writer !== 'raw' || m.operations === undefined) continue
    const s = series.find((x) => x.name.name === m.name.name)
    if (s === undefined)
      throw decodeError(
        source,
        undefined,
        `the report says [${m.name.name}] Total Operations ${m.operations}, ` +
          `but the file holds no ${m.name.name} raw data`,
      )
    if (s.count !== m.operations) {
      throw decodeError(
        source,
        s.line,
        `${s.count} ${m.name.name} raw data lines from here, but the report says Total Operations ${m.operations} ` +
          `(truncated or joined file?)`,
      )
    }
  }
  return { kind: 'raw', format: 'raw', source, series, summary }
}
