/**
 * One entry for every file an old YCSB run left behind: detectFormat tells
 * the format from the content (the name only names things), parseYcsbFile
 * reads it into the common result (report-types.ts). A file that fails is an
 * error (BS_ERR_DECODE: file, line, what was expected); nothing partial is
 * returned.
 */
import type { Operation, Status } from '../../../schemas/events.v1.js'
import { parseHdrLog, type HdrInterval } from './hdr-log.js'
import { parseJsonReport } from './json-report.js'
import { measurementFromFileName, parseMeasurementName } from './measurement-name.js'
import { parseRawReport, RAW_HEADER, RAW_LINE } from './raw-report.js'
import type { IntervalLogReport, MeasurementName, YcsbFile, YcsbFormat } from './report-types.js'
import { parseTextReport } from './text-report.js'
import { decodeError, fileText, unquoteMail } from './text-input.js'

/**
 * Largest file import-ycsb reads (it holds each in memory as text, and
 * checks all before sending any). YCSB's reports are kilobytes, interval
 * logs megabytes; raw data is bounded by MAX_RAW_LINES too.
 */
export const MAX_YCSB_FILE_BYTES = 256 * 1024 * 1024

const onAnyLine = (re: RegExp): RegExp => new RegExp(`^[ \\t]*${re.source.slice(1, -1)}[ \\t]*$`, 'm')
const RAW_HEADER_LINE = onAnyLine(RAW_HEADER)
const RAW_DATA_LINE = onAnyLine(RAW_LINE)
const HDR_LOG_LINE =
  /^[ \t]*(?:#\[Histogram log format version|"?StartTimestamp"?\s*,|(?:Tag=[^,\s]*,)?[\d.]+,[\d.]+,[\d.]+,HIST)/m
const TEXT_RECORD = /\[[A-Za-z][A-Za-z0-9_%.-]*\]\s*,?\s*[\w>]/

/** The format of a file, from its content; throws BS_ERR_DECODE when it is none of YCSB's. */
export function detectFormat(fileName: string, content: string | Uint8Array): YcsbFormat {
  return detect(fileName, unquoteMail(fileText(content, fileName).replace(/\r\n?/g, '\n')))
}

function detect(fileName: string, text: string): YcsbFormat {
  const head = text.trimStart()
  if (head === '')
    throw decodeError(fileName, 1, 'is empty; expected a YCSB report, raw data or an HdrHistogram interval log')
  if (/^\[\s*[{\]]/.test(head)) return 'json-array'
  if (head.startsWith('{')) return 'json-objects'
  if (HDR_LOG_LINE.test(text)) return 'hdr-log'
  if (RAW_HEADER_LINE.test(text) || RAW_DATA_LINE.test(text)) return 'raw'
  if (TEXT_RECORD.test(text)) return 'text'
  throw decodeError(
    fileName,
    text.slice(0, text.length - head.length).split('\n').length,
    'is not a YCSB file; expected a text report ("[OVERALL], RunTime(ms), 727"), JSON exporter output ' +
      '("[ {" or "{"), raw data ("READ latency raw data: ..." / "READ,<ms>,<µs>") or an HdrHistogram ' +
      'interval log ("#[Histogram log format version 1.1]")',
  )
}

/**
 * Detects and parses one file. `measurement` names an interval log's
 * measurement when neither its file name (`<prefix>READ.hdr`) nor YCSB's
 * `#[Logging for: READ]` line does; it is ignored for other formats.
 */
export function parseYcsbFile(
  fileName: string,
  content: string | Uint8Array,
  options: { measurement?: string } = {},
): YcsbFile {
  const text = fileText(content, fileName)
  const format = detect(fileName, unquoteMail(text.replace(/\r\n?/g, '\n')))
  switch (format) {
    case 'text':
      return parseTextReport(text, fileName)
    case 'json-array':
    case 'json-objects':
      return parseJsonReport(text, fileName, format)
    case 'raw':
      return parseRawReport(text, fileName)
    case 'hdr-log':
      return parseIntervalLogFile(fileName, text, options.measurement)
  }
}

/**
 * An interval log of one measurement. The name comes from `measurement` when
 * given, else from the file name, else from `#[Logging for: ...]`; a file
 * name and a log line naming different measurements are an error.
 */
export function parseIntervalLogFile(fileName: string, text: string, measurement?: string): IntervalLogReport {
  const log = parseHdrLog(text, fileName)
  const fromLog = log.loggingFor === undefined ? undefined : parseMeasurementName(log.loggingFor)
  let name: MeasurementName | undefined
  let nameFrom: IntervalLogReport['nameFrom'] = 'given'
  let prefix: string | undefined
  if (measurement !== undefined) {
    name = parseMeasurementName(measurement)
    if (name.kind === 'other')
      throw decodeError(
        fileName,
        undefined,
        `measurement ${JSON.stringify(measurement)} is not a YCSB measurement; expected [Intended-]OP[-STATUS] ` +
          `with OP one of READ, UPDATE, INSERT, SCAN, READ-MODIFY-WRITE, DELETE, CLEANUP`,
      )
  } else {
    const fromFile = measurementFromFileName(fileName)
    if (
      fromFile !== undefined &&
      fromLog !== undefined &&
      fromLog.kind !== 'other' &&
      fromLog.name !== fromFile.name.name
    ) {
      throw decodeError(
        fileName,
        undefined,
        `the file name says ${fromFile.name.name} but the log says "#[Logging for: ${fromLog.name}]"; ` +
          `rename the file or name the measurement explicitly`,
      )
    }
    if (fromFile !== undefined) {
      name = fromFile.name
      nameFrom = 'file-name'
      prefix = fromFile.prefix
    } else if (fromLog !== undefined && fromLog.kind !== 'other') {
      name = fromLog
      nameFrom = 'log-comment'
    }
  }
  if (name === undefined) {
    throw decodeError(
      fileName,
      undefined,
      'cannot tell which measurement this log holds: the file name does not end in one (READ.hdr, ' +
        'Intended-READ.hdr, CLEANUP.hdr, as YCSB names them) and there is no "#[Logging for: READ]" ' +
        'line; name the measurement explicitly',
    )
  }
  let total = 0
  for (const iv of log.intervals) total += iv.total
  return { kind: 'intervals', format: 'hdr-log', source: fileName, name, nameFrom, prefix, log, total }
}

/** The interval logs of one client, by what they measure. */
export interface ClientIntervals {
  /** Per operation and status: the measured latencies and, from `Intended-` logs, the intended ones. */
  operations: Array<{ op: Operation; status: Status; measured: HdrInterval[]; intended: HdrInterval[] }>
  /** CLEANUP (and Intended-CLEANUP): reported on their own, never counted as operations. */
  cleanup: { measured: HdrInterval[]; intended: HdrInterval[] } | undefined
}

/**
 * Groups one client's interval logs: `Intended-READ` lands in READ's
 * intended histogram, `CLEANUP` apart. Two logs of the same measurement (or
 * an Hdr and a plain one) are an error: each must be given once.
 */
export function groupIntervalLogs(logs: readonly IntervalLogReport[]): ClientIntervals {
  const out: ClientIntervals = { operations: [], cleanup: undefined }
  const seen = new Map<string, string>()
  for (const l of logs) {
    const n = l.name
    const key = `${n.kind}/${n.op ?? ''}/${n.status}/${n.ycsbStatus ?? ''}/${n.latency}`
    const before = seen.get(key)
    if (before !== undefined)
      throw decodeError(
        l.source,
        undefined,
        `measures ${n.name} again (already given by ${before}); give each measurement of a client once`,
      )
    seen.set(key, l.source)
    const intervals = l.log.intervals
    if (n.kind === 'cleanup') {
      out.cleanup ??= { measured: [], intended: [] }
      out.cleanup[n.latency].push(...intervals)
    } else if (n.kind === 'operation') {
      let o = out.operations.find((x) => x.op === n.op && x.status === n.status)
      if (o === undefined) {
        o = { op: n.op!, status: n.status, measured: [], intended: [] }
        out.operations.push(o)
      }
      o[n.latency].push(...intervals)
    }
  }
  return out
}
