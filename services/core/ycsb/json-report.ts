/**
 * The JSON exporters' output. Both write one `{"metric", "measurement",
 * "value"}` object per record with Jackson's pretty printer:
 * JSONArrayMeasurementsExporter as one array (`[ {...}, {...} ]`),
 * JSONMeasurementsExporter as objects one after another (`{...} {...}`),
 * which is not one JSON document. Objects are cut out one by one so an
 * error names the line of the object at fault; a line break inside a string
 * (a mail re-wrapping a long measurement name) reads as a space.
 */
import type { SummaryReport } from './report-types.js'
import { buildSummaryReport, type ReportRecord } from './summary-report.js'
import { decodeError, excerpt, lineOf, lineStarts, unquoteMail } from './text-input.js'

/** Parses either exporter's output; `format` is what detectFormat found. Throws BS_ERR_DECODE naming the line. */
export function parseJsonReport(content: string, source: string, format: 'json-array' | 'json-objects'): SummaryReport {
  const text = unquoteMail(content.replace(/\r\n?/g, '\n'))
  const starts = lineStarts(text)
  const at = (offset: number): number => lineOf(starts, offset)
  let pos = skipSpace(text, 0)
  let end = text.length
  if (format === 'json-array') {
    if (text[pos] !== '[')
      throw decodeError(
        source,
        at(pos),
        `expected "[" opening JSONArrayMeasurementsExporter's array; found ${excerpt(text.slice(pos, pos + 20))}`,
      )
    const close = text.lastIndexOf(']')
    if (close <= pos || text.slice(close + 1).trim() !== '')
      throw decodeError(source, at(text.length), 'the array is not closed by "]" at the end of the file (truncated?)')
    pos = skipSpace(text, pos + 1)
    end = close
  }
  const records: ReportRecord[] = []
  while (pos < end) {
    if (records.length > 0 && format === 'json-array') {
      if (text[pos] !== ',')
        throw decodeError(
          source,
          at(pos),
          `expected "," between array elements; found ${excerpt(text.slice(pos, pos + 20))}`,
        )
      pos = skipSpace(text, pos + 1)
    }
    if (text[pos] !== '{')
      throw decodeError(
        source,
        at(pos),
        `expected "{" starting a {"metric", "measurement", "value"} object; ` +
          `found ${excerpt(text.slice(pos, pos + 20))}`,
      )
    const close = objectEnd(text, pos, end)
    if (close === -1) throw decodeError(source, at(pos), 'the object starting here is not closed (truncated?)')
    records.push(record(text.slice(pos, close), source, at(pos)))
    pos = skipSpace(text, close)
  }
  if (records.length === 0) throw decodeError(source, 1, 'holds no {"metric", "measurement", "value"} object')
  return buildSummaryReport(records, format, source, 0)
}

function skipSpace(text: string, pos: number): number {
  while (pos < text.length && /\s/.test(text[pos]!)) pos++
  return pos
}

/** Offset just past the `}` closing the object that opens at `start`, or -1. */
function objectEnd(text: string, start: number, end: number): number {
  let depth = 0
  let inString = false
  for (let i = start; i < end; i++) {
    const c = text[i]
    if (inString) {
      if (c === '\\') i++
      else if (c === '"') inString = false
    } else if (c === '"') inString = true
    else if (c === '{') depth++
    else if (c === '}' && --depth === 0) return i + 1
  }
  return -1
}

function record(json: string, source: string, line: number): ReportRecord {
  let o: unknown
  try {
    // A mail may wrap a string: line breaks (and the indentation after them) inside strings become one space.
    o = JSON.parse(json.replace(/"(?:[^"\\]|\\.)*"/g, (s) => s.replace(/\s*\n\s*/g, ' ')))
  } catch (err) {
    throw decodeError(
      source,
      line,
      `the object starting here is not valid JSON (${(err as Error).message.replace(/\s+/g, ' ')})`,
      err,
    )
  }
  const r = o as { metric?: unknown; measurement?: unknown; value?: unknown }
  // Jackson writes a NaN or infinite double as a string ("NaN") by default.
  const value = typeof r.value === 'string' && /^(?:NaN|-?Infinity)$/.test(r.value) ? Number(r.value) : r.value
  if (typeof r.metric !== 'string' || typeof r.measurement !== 'string' || typeof value !== 'number') {
    throw decodeError(
      source,
      line,
      `expected {"metric": string, "measurement": string, "value": number}; found ${excerpt(json)}`,
    )
  }
  return { metric: r.metric, measurement: r.measurement.replace(/\s+/g, ' '), value, line }
}
