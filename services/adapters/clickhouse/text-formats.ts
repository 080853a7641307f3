/**
 * Text formats of ad hoc results, streamed, with whole rows counted and cut
 * at the caps (result-shape.ts).
 *
 * chDB formats every streamed block as a whole result of its own, so a
 * format's header (CSVWithNames' names, JSON's "meta") comes again every
 * block of 1,000 rows; and a byte cut would split a row or leave a JSON
 * document unparseable, which is what @clickhouse/client reads by default. So:
 *
 * - formats with one row per line (TSV and JSON*EachRow families) are read
 *   line by line, the CSV family record by record (a quoted value may hold a
 *   newline): header kept once, rows counted and cut whole. A block whose rows
 *   the engine counted and that fits the caps passes whole, its repeated
 *   header dropped, without being split into rows;
 * - the JSON documents (JSON, JSONCompact, JSONStrings, JSONCompactStrings)
 *   are written here from the engine's JSONCompact(Strings)EachRowWithNamesAndTypes,
 *   whose values are written by the same serializers: the head once the names
 *   and types are known, each row as it comes, the tail at the end;
 * - the formats for people (Pretty*, Markdown, Vertical, XML, Values) pass as
 *   the engine wrote them, a block at a time: their rows are counted where the
 *   engine counts them (chDB), and cut by the guard with a LIMIT around the
 *   query, never by bytes inside a row.
 */
import { NativeFormatError } from './native-format.js'
import type { EngineChunk, ResultShape, ShapeCaps } from './result-shape.js'

const NL = 0x0a
const QUOTE = 0x22
const EMPTY = Buffer.alloc(0)

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

/** Header records of the CSV family. */
const CSV_FORMATS: Record<string, number> = { CSV: 0, CSVWithNames: 1, CSVWithNamesAndTypes: 2 }

/** The JSON documents, and the line format each is written from. */
const JSON_DOCUMENTS: Record<string, string> = {
  JSON: 'JSONCompactEachRowWithNamesAndTypes',
  JSONCompact: 'JSONCompactEachRowWithNamesAndTypes',
  JSONStrings: 'JSONCompactStringsEachRowWithNamesAndTypes',
  JSONCompactStrings: 'JSONCompactStringsEachRowWithNamesAndTypes',
}

/** Where the record starting at `from` ends (the index of its newline), or -1 when it has not all arrived. */
type RecordEnd = (buf: Buffer, from: number) => number

const lineEnd: RecordEnd = (buf, from) => buf.indexOf(NL, from)

/** A CSV record ends at a newline outside quotes ("" inside quotes toggles twice, so it needs no case of its own). */
const csvRecordEnd: RecordEnd = (buf, from) => {
  let quoted = false
  for (let i = from; i < buf.length; i++) {
    const c = buf[i]
    if (c === QUOTE) quoted = !quoted
    else if (c === NL && !quoted) return i
  }
  return -1
}

/** The offset after the first `n` records of a buffer, or -1 when it holds fewer. */
function afterRecords(buf: Buffer, n: number, end: RecordEnd): number {
  let at = 0
  for (let i = 0; i < n; i++) {
    const nl = end(buf, at)
    if (nl < 0) return -1
    at = nl + 1
  }
  return at
}

/**
 * Reads records (lines, CSV records) from chunks: header records once, then
 * the rows. `whole`: every chunk is a block's whole result, starting with the
 * header records again (chDB); they are dropped.
 */
class RecordReader {
  private carry: Buffer = EMPTY
  private chunks = 0
  headerSeen = 0

  constructor(
    readonly headerRecords: number,
    private readonly whole: boolean,
    readonly recordEnd: RecordEnd,
  ) {}

  get chunkCount(): number {
    return this.chunks
  }

  /** Notes a chunk that was passed whole (its header handled by the caller). */
  passed(): void {
    this.chunks++
    this.headerSeen = this.headerRecords
  }

  get pending(): boolean {
    return this.carry.length > 0
  }

  /** Calls `record` with each complete record (newline included) and whether it is a header record; stops on false. */
  read(data: Buffer, record: (r: Buffer, header: boolean) => boolean): void {
    const buf = this.carry.length === 0 ? data : Buffer.concat([this.carry, data])
    let skip = this.whole && this.chunks > 0 ? this.headerRecords : 0
    this.chunks++
    let at = 0
    for (;;) {
      const nl = this.recordEnd(buf, at)
      if (nl < 0) break
      const r = buf.subarray(at, nl + 1)
      at = nl + 1
      if (this.headerSeen < this.headerRecords) {
        this.headerSeen++
        if (!record(r, true)) return this.drop()
        continue
      }
      if (skip > 0) {
        skip--
        continue
      }
      if (!record(r, false)) return this.drop()
    }
    this.carry = at === buf.length ? EMPTY : Buffer.from(buf.subarray(at))
  }

  /** What is left after the last newline (a last row without one). */
  rest(): Buffer {
    const r = this.carry
    this.carry = EMPTY
    return r
  }

  private drop(): void {
    this.carry = EMPTY
  }
}

/** Formats with one row per record: the TSV and JSON*EachRow families (lines) and the CSV family. */
class RecordShape implements ResultShape {
  private readonly reader: RecordReader
  rows = 0
  bytes = 0
  stoppedBy: 'rows' | 'bytes' | undefined

  constructor(
    headerRecords: number,
    private readonly caps: ShapeCaps,
    private readonly whole: boolean,
    recordEnd: RecordEnd,
  ) {
    this.reader = new RecordReader(headerRecords, whole, recordEnd)
  }

  push({ data, rows }: EngineChunk): Buffer[] {
    if (this.stoppedBy !== undefined) return []
    const fast = this.passWhole(data, rows)
    if (fast !== undefined) return fast
    const out: Buffer[] = []
    this.reader.read(data, (r, header) => {
      if (!header) {
        if (this.rows >= this.caps.maxRows) return this.stop('rows')
        if (this.bytes + r.length > this.caps.maxBytes) return this.stop('bytes')
        this.rows++
      }
      this.bytes += r.length
      out.push(r)
      return true
    })
    return out.length <= 1 ? out : [Buffer.concat(out)]
  }

  end(): Buffer[] {
    const rest = this.reader.rest()
    if (rest.length === 0 || this.stoppedBy !== undefined) return []
    // A last row without its newline: sent as it is, if it fits.
    if (this.rows >= this.caps.maxRows) return (this.stop('rows'), [])
    if (this.bytes + rest.length > this.caps.maxBytes) return (this.stop('bytes'), [])
    this.rows++
    this.bytes += rest.length
    return [rest]
  }

  /** A block's whole result, its rows counted by the engine, that fits the caps: its header dropped, the rest whole. */
  private passWhole(data: Buffer, rows: number | undefined): Buffer[] | undefined {
    if (!this.whole || rows === undefined || this.reader.pending) return undefined
    const first = this.reader.chunkCount === 0
    const headerEnd = afterRecords(data, this.reader.headerRecords, this.reader.recordEnd)
    if (headerEnd < 0 || (data.length > headerEnd && data[data.length - 1] !== NL)) return undefined
    const out = first ? data : data.subarray(headerEnd)
    if (this.rows + rows > this.caps.maxRows || this.bytes + out.length > this.caps.maxBytes) return undefined
    this.reader.passed()
    this.rows += rows
    this.bytes += out.length
    return out.length === 0 ? [] : [out]
  }

  private stop(why: 'rows' | 'bytes'): false {
    this.stoppedBy = why
    return false
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

/**
 * A JSON document (JSON, JSONCompact, JSONStrings, JSONCompactStrings) as
 * ClickHouse lays it out, written as the rows come: the head once the names
 * and types are known, each row, the tail (row count, statistics) at the end.
 */
class JsonDocumentShape implements ResultShape {
  private readonly reader: RecordReader
  private header: string[] = []
  private keys: string[] = []
  private headSent = false
  rows = 0
  bytes = 0
  stoppedBy: 'rows' | 'bytes' | undefined

  constructor(
    private readonly format: string,
    private readonly caps: ShapeCaps,
    whole: boolean,
    private readonly elapsedMs: () => number,
  ) {
    this.reader = new RecordReader(2, whole, lineEnd)
  }

  push({ data }: EngineChunk): Buffer[] {
    if (this.stoppedBy !== undefined) return []
    const out: string[] = []
    this.reader.read(data, (r, header) => {
      const line = r.toString('utf8', 0, r.length - 1)
      if (header) {
        this.header.push(line)
        if (this.header.length === 2) out.push(this.head())
        return true
      }
      const row = (this.rows === 0 ? '' : ',\n') + this.row(line)
      const n = Buffer.byteLength(row)
      if (this.rows >= this.caps.maxRows) return this.stop('rows')
      if (this.bytes + n > this.caps.maxBytes) return this.stop('bytes')
      this.rows++
      this.bytes += n
      out.push(row)
      return true
    })
    return out.length === 0 ? [] : [Buffer.from(out.join(''))]
  }

  end(): Buffer[] {
    // No block came (no rows, no header): the document still says what it holds.
    const head = this.headSent ? '' : this.head()
    const tail =
      `\n\t],\n\n\t"rows": ${this.rows},\n\n\t"statistics":\n\t{\n\t\t"elapsed": ` +
      `${(this.elapsedMs() / 1000).toFixed(6)},\n\t\t"rows_read": 0,\n\t\t"bytes_read": 0\n\t}\n}\n`
    const b = Buffer.from(head + tail)
    this.bytes += b.length
    return [b]
  }

  private head(): string {
    this.headSent = true
    const [namesLine = '[]', typesLine = '[]'] = this.header
    const names = JSON.parse(namesLine) as string[]
    const types = JSON.parse(typesLine) as string[]
    this.keys = names.map((n) => JSON.stringify(n))
    const meta = names.map((n, i) => `\t\t{"name": ${JSON.stringify(n)}, "type": ${JSON.stringify(types[i])}}`)
    const head = `{\n\t"meta":\n\t[\n${meta.join(',\n')}\n\t],\n\n\t"data":\n\t[\n`
    this.bytes += Buffer.byteLength(head)
    return head
  }

  private row(line: string): string {
    if (this.format === 'JSONCompact' || this.format === 'JSONCompactStrings') return `\t\t${line}`
    const values = splitJsonArray(line)
    return `\t\t{${values.map((v, i) => `${this.keys[i]}: ${v}`).join(', ')}}`
  }

  private stop(why: 'rows' | 'bytes'): false {
    this.stoppedBy = why
    return false
  }
}

/**
 * The formats for people (Pretty*, Markdown, Vertical, XML, Values), as the
 * engine wrote them, a block at a time: rows counted where the engine says
 * (chDB), -1 otherwise; a block that would pass a cap is not sent.
 */
class PeopleShape implements ResultShape {
  private counted = 0
  private uncounted = false
  bytes = 0
  stoppedBy: 'rows' | 'bytes' | undefined

  constructor(
    private readonly format: string,
    private readonly caps: ShapeCaps,
    private readonly whole: boolean,
  ) {}

  get rows(): number {
    return this.uncounted ? -1 : this.counted
  }

  push({ data, rows }: EngineChunk): Buffer[] {
    if (this.stoppedBy !== undefined || data.length === 0) return []
    if (rows === undefined) this.uncounted = true
    else if (this.counted + rows > this.caps.maxRows) return ((this.stoppedBy = 'rows'), [])
    // Values separates rows with commas; chDB writes each block as a result of its own, without the one between.
    const piece =
      this.format === 'Values' && this.whole && this.bytes > 0 ? Buffer.concat([Buffer.from(','), data]) : data
    if (this.bytes + piece.length > this.caps.maxBytes) return ((this.stoppedBy = 'bytes'), [])
    this.counted += rows ?? 0
    this.bytes += piece.length
    return [piece]
  }

  end(): Buffer[] {
    return []
  }
}

/** The formats for people: the guard cuts them with a LIMIT around the query, since their rows cannot be cut here. */
export const PEOPLE_FORMATS = [
  'Pretty',
  'PrettyCompact',
  'PrettyCompactMonoBlock',
  'PrettySpace',
  'PrettyNoEscapes',
  'PrettyCompactNoEscapes',
  'Markdown',
  'Vertical',
  'Values',
  'XML',
] as const

/** What the engine is asked for to answer a text format, and the shape that makes the answer. */
export function textShape(
  format: string,
  caps: ShapeCaps,
  whole: boolean,
  elapsedMs: () => number,
): { source: string; shape: ResultShape } {
  const doc = JSON_DOCUMENTS[format]
  if (doc !== undefined) return { source: doc, shape: new JsonDocumentShape(format, caps, whole, elapsedMs) }
  const lines = LINE_FORMATS[format]
  if (lines !== undefined) return { source: format, shape: new RecordShape(lines, caps, whole, lineEnd) }
  const csv = CSV_FORMATS[format]
  if (csv !== undefined) return { source: format, shape: new RecordShape(csv, caps, whole, csvRecordEnd) }
  if ((PEOPLE_FORMATS as readonly string[]).includes(format))
    return { source: format, shape: new PeopleShape(format, caps, whole) }
  throw new NativeFormatError(`format ${format} has no shape here`)
}
