/**
 * YCSB's text report (`[READ], 95thPercentileLatency(us), 1246`), read as
 * people hand it around: re-wrapped, commas lost, quoted in a mail. Without
 * commas only YCSB's measurement names are accepted; chatter between records
 * is skipped and counted (docs/design/ycsb-files.md#text-report-text-reportts).
 */
import type { SummaryReport } from './report-types.js'
import { buildSummaryReport, type ReportRecord } from './summary-report.js'
import { decodeError, excerpt, lineOf, lineStarts, unquoteMail } from './text-input.js'

const RECORD_START = /\[([A-Za-z][A-Za-z0-9_%.-]*)\]/g
const NUMBER = String.raw`(?:[-+]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][-+]?\d+)?|NaN|-?Infinity)`
/** A number ends at white space, a comma, the next record or the end. */
const AFTER_NUMBER = String.raw`(?=[\s,[]|$)`
const WITH_COMMAS = new RegExp(String.raw`\s*,\s*([^,[\]]+?)\s*,\s*(${NUMBER})${AFTER_NUMBER}`, 'y')
/** Every measurement name YCSB 0.1.0 to 0.17.0 prints, white space inside them free. */
const KNOWN_MEASUREMENTS = [
  String.raw`Below\s+is\s+a\s+summary\s+of\s+latency\s+in\s+microseconds:`,
  String.raw`Total\s+Operations`,
  String.raw`Return=[A-Za-z0-9_-]+`,
  String.raw`\d+(?:\.\d+)?(?:st|nd|rd|th)?PercentileLatency\((?:us|ms)\)`,
  String.raw`(?:Average|Min|Max)Latency\(us\)`,
  String.raw`LatencyVariance\(us\)`,
  String.raw`Operations`,
  String.raw`RunTime\(ms\)`,
  String.raw`Throughput\(ops/sec\)`,
  String.raw`Count`,
  String.raw`Time\(ms\)`,
  String.raw`Time\(%\)`,
  String.raw`Average`,
  String.raw`Min`,
  String.raw`Max`,
  String.raw`p\d+(?:\.\d+)?`,
  String.raw`>?\d+`,
].join('|')
const WITHOUT_COMMAS = new RegExp(String.raw`\s*,?\s*(${KNOWN_MEASUREMENTS})\s*,?\s*(${NUMBER})${AFTER_NUMBER}`, 'y')

/** The records of a text and how many non-empty lines hold none. */
export function scanTextRecords(text: string, source: string): { records: ReportRecord[]; ignoredLines: number } {
  const starts = lineStarts(text)
  const records: ReportRecord[] = []
  const spans: Array<[number, number]> = []
  RECORD_START.lastIndex = 0
  for (let m = RECORD_START.exec(text); m !== null; m = RECORD_START.exec(text)) {
    const after = m.index + m[0].length
    let r: RegExpExecArray | null = null
    for (const form of [WITH_COMMAS, WITHOUT_COMMAS]) {
      form.lastIndex = after
      r = form.exec(text)
      if (r !== null) break
    }
    const line = lineOf(starts, m.index)
    // Benchstream's driver ends its report with [BENCHSTREAM], RunId, <id> and the like: its own, not YCSB's, skipped.
    if (r === null && m[1] === 'BENCHSTREAM') continue
    if (r === null) {
      throw decodeError(
        source,
        line,
        `expected a measurement and a number after [${m[1]}], as in "[READ], Operations, 2504"; found ` +
          `${excerpt(text.slice(after, after + 60))}`,
      )
    }
    const end = after + r[0].length
    records.push({ metric: m[1]!, measurement: r[1]!.replace(/\s+/g, ' '), value: parseNumber(r[2]!), line })
    spans.push([m.index, end])
    RECORD_START.lastIndex = end
  }
  let rest = ''
  let from = 0
  for (const [s, e] of spans) {
    rest += text.slice(from, s)
    from = e
  }
  rest += text.slice(from)
  const ignoredLines = rest.split('\n').filter((l) => l.trim() !== '').length
  return { records, ignoredLines }
}

function parseNumber(s: string): number {
  if (s === 'NaN') return Number.NaN
  if (s.endsWith('Infinity')) return s.startsWith('-') ? Number.NEGATIVE_INFINITY : Number.POSITIVE_INFINITY
  return Number(s)
}

/** Parses a text report; throws BS_ERR_DECODE naming the line when a record is malformed or none is found. */
export function parseTextReport(content: string, source: string): SummaryReport {
  const text = unquoteMail(content.replace(/\r\n?/g, '\n'))
  const { records, ignoredLines } = scanTextRecords(text, source)
  if (records.length === 0)
    throw decodeError(
      source,
      1,
      'holds no YCSB report record; expected lines such as "[OVERALL], RunTime(ms), 727" and "[READ], ' +
        'Operations, 2504"',
    )
  return buildSummaryReport(records, 'text', source, ignoredLines)
}
