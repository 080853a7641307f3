/**
 * Text formats of ad hoc results, cut at whole rows within the caps.
 *
 * Two things make a plain byte cut wrong. chDB formats every streamed block
 * as a whole result of its own, so a format's header (CSVWithNames' names,
 * JSON's "meta") comes again every 1,000 rows; and a byte cut splits a row,
 * or leaves a JSON document unparseable, which is what @clickhouse/client
 * reads by default. So:
 *
 * - formats with one row per line (TSV and JSON*EachRow families) are read
 *   line by line: header lines kept once, rows counted and cut whole;
 * - the JSON documents (JSON, JSONCompact, JSONStrings, JSONCompactStrings)
 *   are written here from the engine's JSONCompact(Strings)EachRowWithNamesAndTypes,
 *   whose values are written by the same serializers, so the document is
 *   always whole and holds the rows that fit;
 * - other formats (CSV, whose quoted values may hold newlines; Pretty, XML,
 *   Markdown, Values, Vertical) keep the byte cut.
 */

/** Header lines of the formats with one row per line. */
const LINE_FORMATS: Record<string, number> = {
  TabSeparated: 0,
  TSV: 0,
  TabSeparatedRaw: 0,
  TSVRaw: 0,
  TabSeparatedWithNames: 1,
  TSVWithNames: 1,
  TabSeparatedWithNamesAndTypes: 2,
  TSVWithNamesAndTypes: 2,
  JSONEachRow: 0,
  JSONLines: 0,
  NDJSON: 0,
  JSONStringsEachRow: 0,
  JSONCompactEachRow: 0,
  JSONCompactEachRowWithNames: 1,
  JSONCompactEachRowWithNamesAndTypes: 2,
  JSONCompactStringsEachRow: 0,
  JSONCompactStringsEachRowWithNames: 1,
  JSONCompactStringsEachRowWithNamesAndTypes: 2,
}

/** The JSON documents, and the line format each is written from. */
const JSON_DOCUMENTS: Record<string, string> = {
  JSON: 'JSONCompactEachRowWithNamesAndTypes',
  JSONCompact: 'JSONCompactEachRowWithNamesAndTypes',
  JSONStrings: 'JSONCompactStringsEachRowWithNamesAndTypes',
  JSONCompactStrings: 'JSONCompactStringsEachRowWithNamesAndTypes',
}

/** What the engine is asked for to answer a text format, and how its output is cut. */
export function textPlan(format: string): { source: string; headerLines: number } | undefined {
  const doc = JSON_DOCUMENTS[format]
  if (doc !== undefined) return { source: doc, headerLines: 2 }
  const header = LINE_FORMATS[format]
  return header === undefined ? undefined : { source: format, headerLines: header }
}

export interface TextCaps {
  maxRows: number
  maxBytes: number
}

/**
 * Reads a line format in chunks; keeps its header lines once and whole rows
 * within the caps. `whole`: every chunk is a block's whole result, starting
 * with the header lines again (chDB).
 */
export class LineCutter {
  private carry = ''
  private header: string[] = []
  private chunks = 0
  readonly rows: string[] = []
  bytes = 0
  truncated = false

  constructor(
    private readonly headerLines: number,
    private readonly caps: TextCaps,
    private readonly whole: boolean,
  ) {}

  /** Takes a chunk; returns false once a cap is reached (stop reading). */
  push(chunk: string): boolean {
    if (this.truncated) return false
    const text = this.carry + chunk
    const lines = text.split('\n')
    this.carry = lines.pop() ?? ''
    // A block's whole result after the first (chDB) starts with the same header lines again: dropped.
    let skip = this.whole && this.chunks > 0 ? this.headerLines : 0
    for (const line of lines) {
      if (this.header.length < this.headerLines) {
        this.header.push(line)
        this.bytes += Buffer.byteLength(line) + 1
        continue
      }
      if (skip > 0) {
        skip--
        continue
      }
      const n = Buffer.byteLength(line) + 1
      if (this.rows.length >= this.caps.maxRows || this.bytes + n > this.caps.maxBytes) {
        this.truncated = true
        return false
      }
      this.rows.push(line)
      this.bytes += n
    }
    this.chunks++
    return true
  }

  /** Column names and types (JSON documents' header lines). */
  get headerText(): string[] {
    return this.header
  }

  /** The kept lines in the line format. */
  text(): string {
    const all = [...this.header, ...this.rows]
    return all.length === 0 ? '' : `${all.join('\n')}\n`
  }
}

/** The top-level elements of a JSON array written on one line (values stay as the engine wrote them). */
export function splitJsonArray(line: string): string[] {
  const out: string[] = []
  let depth = 0
  let start = 1
  for (let i = 0; i < line.length; i++) {
    const c = line[i]
    if (c === '"') {
      for (i++; i < line.length && line[i] !== '"'; i++) if (line[i] === '\\') i++
    } else if (c === '[' || c === '{') depth++
    else if (c === ']' || c === '}') {
      depth--
      if (depth === 0) {
        const last = line.slice(start, i).trim()
        if (last !== '' || out.length > 0) out.push(last)
      }
    } else if (c === ',' && depth === 1) {
      out.push(line.slice(start, i).trim())
      start = i + 1
    }
  }
  return out
}

/** A JSON document (JSON, JSONCompact, JSONStrings, JSONCompactStrings) of the cut rows, as ClickHouse lays it out. */
export function jsonDocument(format: string, cut: LineCutter, elapsedMs: number): string {
  const [namesLine = '[]', typesLine = '[]'] = cut.headerText
  const names = JSON.parse(namesLine) as string[]
  const types = JSON.parse(typesLine) as string[]
  const compact = format === 'JSONCompact' || format === 'JSONCompactStrings'
  const keys = names.map((n) => JSON.stringify(n))
  const data = cut.rows.map((line) => {
    if (compact) return `\t\t${line}`
    const values = splitJsonArray(line)
    return `\t\t{${values.map((v, i) => `${keys[i]}: ${v}`).join(', ')}}`
  })
  const meta = names.map((n, i) => `\t\t{"name": ${JSON.stringify(n)}, "type": ${JSON.stringify(types[i])}}`)
  return (
    `{\n\t"meta":\n\t[\n${meta.join(',\n')}\n\t],\n\n\t"data":\n\t[\n${data.join(',\n')}\n\t],\n\n` +
    `\t"rows": ${cut.rows.length},\n\n\t"statistics":\n\t{\n\t\t"elapsed": ${(elapsedMs / 1000).toFixed(6)},\n` +
    `\t\t"rows_read": 0,\n\t\t"bytes_read": 0\n\t}\n}\n`
  )
}
