/**
 * ClickHouse's Native format, re-framed for a client protocol revision.
 *
 * chDB (and a ClickHouse server asked over HTTP without
 * `client_protocol_version`) writes Native blocks at revision 0:
 *
 *   uvarint ncols, uvarint nrows, then per column: String name, String type, data
 *
 * A client that sends `client_protocol_version=R` (clickhouse-go v2 sends
 * 54460, then decodes with the server's `revision()`; lib/proto/block.go
 * Decode) expects what ClickHouse's NativeWriter writes for R:
 *
 *   R > 0:      BlockInfo first: field 1 is_overflows (UInt8 0), field 2 bucket_num (Int32 -1), end 0
 *   R >= 54454: after each column's type, a UInt8 "has custom serialization" (0 here)
 *
 * Inserting a byte after each type means finding where each column's data
 * ends, so the data is walked by type. Walking it also lets a block be cut
 * after k rows, which is how the row and byte caps are applied. Types whose
 * serialization is not walked here (JSON, Dynamic, Variant, aggregate
 * states, ...) are refused with a message that says to cast them.
 */

import type { EngineChunk, ResultShape, ShapeCaps } from './result-shape.js'

/** DBMS_MIN_REVISION_WITH_CUSTOM_SERIALIZATION: from this revision on, a flag byte follows each column type. */
export const MIN_REVISION_WITH_CUSTOM_SERIALIZATION = 54454

/** A Native stream this module cannot re-frame (a type it does not walk, malformed bytes). */
export class NativeFormatError extends Error {
  constructor(message: string) {
    super(message)
    this.name = 'NativeFormatError'
  }
}

/** Thrown inside the walk when the buffer ends before the block does: wait for more bytes. */
export class Incomplete extends Error {}

/** How a type's values are laid out: what the Native and RowBinary walks need to know of a type. */
export type Spec =
  | { kind: 'fixed'; size: number }
  | { kind: 'string' }
  | { kind: 'nullable'; inner: Spec }
  | { kind: 'array'; inner: Spec }
  | { kind: 'tuple'; items: Spec[] }
  | { kind: 'lowcardinality'; keys: Spec; inner: Spec }

/** Byte widths of the fixed-size types (IColumn of numbers, dates, IPs, UUIDs, decimals by name). */
const FIXED: Record<string, number> = {
  UInt8: 1,
  Int8: 1,
  Bool: 1,
  Nothing: 1,
  Enum8: 1,
  UInt16: 2,
  Int16: 2,
  Date: 2,
  Enum16: 2,
  BFloat16: 2,
  UInt32: 4,
  Int32: 4,
  Float32: 4,
  Date32: 4,
  DateTime: 4,
  IPv4: 4,
  Decimal32: 4,
  Time: 4,
  UInt64: 8,
  Int64: 8,
  Float64: 8,
  DateTime64: 8,
  Decimal64: 8,
  Time64: 8,
  UInt128: 16,
  Int128: 16,
  UUID: 16,
  IPv6: 16,
  Decimal128: 16,
  UInt256: 32,
  Int256: 32,
  Decimal256: 32,
  IntervalNanosecond: 8,
  IntervalMicrosecond: 8,
  IntervalMillisecond: 8,
  IntervalSecond: 8,
  IntervalMinute: 8,
  IntervalHour: 8,
  IntervalDay: 8,
  IntervalWeek: 8,
  IntervalMonth: 8,
  IntervalQuarter: 8,
  IntervalYear: 8,
}

/** Geo types are aliases of tuples and arrays of Float64. */
const GEO: Record<string, string> = {
  Point: 'Tuple(Float64, Float64)',
  Ring: 'Array(Point)',
  LineString: 'Array(Point)',
  Polygon: 'Array(Ring)',
  MultiLineString: 'Array(LineString)',
  MultiPolygon: 'Array(Polygon)',
}

/** Splits at commas outside parentheses, quotes and backquotes. */
function splitTopLevel(s: string): string[] {
  const out: string[] = []
  let depth = 0
  let start = 0
  for (let i = 0; i < s.length; i++) {
    const c = s[i]
    if (c === "'" || c === '`' || c === '"') {
      for (i++; i < s.length && s[i] !== c; i++) if (s[i] === '\\') i++
    } else if (c === '(') depth++
    else if (c === ')') depth--
    else if (c === ',' && depth === 0) {
      out.push(s.slice(start, i).trim())
      start = i + 1
    }
  }
  out.push(s.slice(start).trim())
  return out
}

/** A named tuple element (`name Type`, `` `a b` Type ``) without its name. */
function elementType(e: string): string {
  const quoted = /^`(?:[^`\\]|\\.)*`\s+([\s\S]+)$/.exec(e)
  if (quoted !== null) return quoted[1]!
  const named = /^[A-Za-z_][A-Za-z0-9_]*\s+([\s\S]+)$/.exec(e)
  // A type name never has a space before its first parenthesis: "x UInt8" is named, "DateTime64(3, 'UTC')" is not.
  return named !== null && !/^[A-Za-z_][A-Za-z0-9_]*\(/.test(e) ? named[1]! : e
}

const specCache = new Map<string, Spec>()

/** The walk for a ClickHouse type name; throws NativeFormatError for types it does not know. */
export function typeSpec(type: string): Spec {
  const cached = specCache.get(type)
  if (cached !== undefined) return cached
  const spec = parseType(type.trim(), type)
  if (specCache.size < 10_000) specCache.set(type, spec)
  return spec
}

function parseType(t: string, whole: string): Spec {
  const m = /^([A-Za-z_][A-Za-z0-9_]*)(?:\(([\s\S]*)\))?$/.exec(t)
  if (m === null) throw new NativeFormatError(`cannot read the type ${JSON.stringify(whole)}`)
  const name = m[1]!
  const args = m[2] === undefined ? [] : splitTopLevel(m[2])
  const arg = (i: number): string =>
    args[i] ??
    (() => {
      throw new NativeFormatError(`type ${whole}: ${name} needs an argument`)
    })()
  const geo = GEO[name]
  if (geo !== undefined) return parseType(geo, whole)
  switch (name) {
    case 'String':
      return { kind: 'string' }
    case 'FixedString': {
      const n = Number(arg(0))
      if (!Number.isInteger(n) || n <= 0) throw new NativeFormatError(`type ${whole}: bad FixedString length`)
      return { kind: 'fixed', size: n }
    }
    case 'Decimal': {
      const p = Number(arg(0))
      return { kind: 'fixed', size: p <= 9 ? 4 : p <= 18 ? 8 : p <= 38 ? 16 : 32 }
    }
    case 'Nullable':
      return { kind: 'nullable', inner: parseType(arg(0), whole) }
    case 'Array':
      return { kind: 'array', inner: parseType(arg(0), whole) }
    case 'Map':
      // Serialized as Array(Tuple(K, V)): offsets, then all keys, then all values.
      return { kind: 'array', inner: { kind: 'tuple', items: [parseType(arg(0), whole), parseType(arg(1), whole)] } }
    case 'Tuple':
      return { kind: 'tuple', items: args.map((a) => parseType(elementType(a), whole)) }
    case 'Nested':
      return { kind: 'array', inner: { kind: 'tuple', items: args.map((a) => parseType(elementType(a), whole)) } }
    case 'SimpleAggregateFunction':
      return parseType(arg(1), whole)
    case 'LowCardinality': {
      // The dictionary holds the nested type without Nullable (index 0 stands for NULL).
      const inner = parseType(arg(0), whole)
      return { kind: 'lowcardinality', keys: inner.kind === 'nullable' ? inner.inner : inner, inner }
    }
  }
  const size = FIXED[name]
  if (size !== undefined) return { kind: 'fixed', size }
  throw new NativeFormatError(
    `columns of type ${whole} cannot be sent in the Native format by this endpoint; cast them (toString(...), ` +
      `CAST(... AS ...)) or ask for a text format`,
  )
}

/** Reads little-endian/varint values from a buffer, throwing Incomplete at its end. */
export class Cursor {
  constructor(
    readonly buf: Buffer,
    public pos: number,
  ) {}
  need(n: number): void {
    if (this.pos + n > this.buf.length) throw new Incomplete()
  }
  uvarint(): number {
    let result = 0
    let shift = 0
    for (;;) {
      this.need(1)
      const b = this.buf[this.pos++]!
      result += (b & 0x7f) * 2 ** shift
      if ((b & 0x80) === 0) return result
      shift += 7
      if (shift > 49) throw new NativeFormatError('a varint in the Native stream is too long')
    }
  }
  u64(): number {
    this.need(8)
    const hi = this.buf.readUInt32LE(this.pos + 4)
    const v = this.buf.readUInt32LE(this.pos) + hi * 2 ** 32
    if (hi >= 2 ** 21) throw new NativeFormatError('a UInt64 count in the Native stream is out of range')
    this.pos += 8
    return v
  }
  str(): string {
    const n = this.uvarint()
    this.need(n)
    const s = this.buf.toString('utf8', this.pos, this.pos + n)
    this.pos += n
    return s
  }
  skip(n: number): void {
    this.need(n)
    this.pos += n
  }
}

/** LowCardinality serialization flags (SerializationLowCardinality.cpp). */
const LC_NEED_GLOBAL_DICTIONARY = 1 << 8
const LC_HAS_ADDITIONAL_KEYS = 1 << 9
const LC_INDEX_SIZES = [1, 2, 4, 8] as const

/** Skips the per-column state prefix (the LowCardinality key version, nested ones included). */
function skipPrefix(spec: Spec, c: Cursor): void {
  switch (spec.kind) {
    case 'lowcardinality': {
      const version = c.u64()
      // 1 = SharedDictionariesWithAdditionalKeys, the only version ClickHouse writes.
      if (version !== 1) throw new NativeFormatError(`LowCardinality key version ${version} is not supported`)
      return
    }
    case 'nullable':
    case 'array':
      return skipPrefix(spec.inner, c)
    case 'tuple':
      for (const item of spec.items) skipPrefix(item, c)
      return
    default:
      return
  }
}

/** Skips the data of n rows and returns the byte ranges of the first k rows' data, in order. */
function walk(spec: Spec, c: Cursor, n: number, k: number): Array<[number, number] | Buffer> {
  const start = c.pos
  switch (spec.kind) {
    case 'fixed':
      c.skip(n * spec.size)
      return [[start, start + k * spec.size]]
    case 'string': {
      let cut = start
      for (let i = 0; i < n; i++) {
        if (i === k) cut = c.pos
        c.skip(c.uvarint())
      }
      return [[start, k >= n ? c.pos : cut]]
    }
    case 'nullable': {
      c.skip(n)
      return [[start, start + k], ...walk(spec.inner, c, n, k)]
    }
    case 'array': {
      c.need(n * 8)
      const offset = (i: number): number => (i < 0 ? 0 : Number(c.buf.readBigUInt64LE(start + i * 8)))
      const total = offset(n - 1)
      const kept = offset(k - 1)
      c.skip(n * 8)
      if (total > 1_000_000_000) throw new NativeFormatError('an array column in the Native stream is too large')
      return [[start, start + k * 8], ...walk(spec.inner, c, total, kept)]
    }
    case 'tuple':
      return spec.items.flatMap((item) => walk(item, c, n, k))
    case 'lowcardinality': {
      const flags = c.u64()
      if ((flags & LC_NEED_GLOBAL_DICTIONARY) !== 0 || (flags & LC_HAS_ADDITIONAL_KEYS) === 0)
        throw new NativeFormatError('LowCardinality columns with a global dictionary are not supported')
      const indexSize =
        LC_INDEX_SIZES[flags & 0xff] ??
        (() => {
          throw new NativeFormatError(`LowCardinality index type ${flags & 0xff} is not known`)
        })()
      const keys = c.u64()
      walk(spec.keys, c, keys, keys)
      const keysEnd = c.pos
      const rows = c.u64()
      if (rows !== n) throw new NativeFormatError(`LowCardinality column has ${rows} rows in a block of ${n}`)
      const indexStart = c.pos
      c.skip(n * indexSize)
      const count = Buffer.alloc(8)
      count.writeBigUInt64LE(BigInt(k))
      // Every key is kept (indexes of the first k rows point anywhere in the dictionary).
      return [[start, keysEnd], count, [indexStart, indexStart + k * indexSize]]
    }
  }
}

interface ParsedColumn {
  name: string
  type: string
  prefix: [number, number]
  spec: Spec
  dataStart: number
  /** Where the column's data ends (the next column's name starts). */
  dataEnd: number
}

interface ParsedBlock {
  rows: number
  columns: ParsedColumn[]
  end: number
}

function readBlock(buf: Buffer, pos: number): ParsedBlock {
  const c = new Cursor(buf, pos)
  const ncols = c.uvarint()
  const rows = c.uvarint()
  if (ncols > 100_000 || rows > 1_000_000_000)
    throw new NativeFormatError(`a Native block with ${ncols} columns and ${rows} rows is not plausible`)
  const columns: ParsedColumn[] = []
  for (let i = 0; i < ncols; i++) {
    const name = c.str()
    const type = c.str()
    const spec = typeSpec(type)
    const prefixStart = c.pos
    // With no rows, neither the state prefix nor data are written (NativeWriter: `if (rows)`).
    if (rows > 0) skipPrefix(spec, c)
    const prefix: [number, number] = [prefixStart, c.pos]
    const dataStart = c.pos
    if (rows > 0) walk(spec, c, rows, 0)
    columns.push({ name, type, prefix, spec, dataStart, dataEnd: c.pos })
  }
  return { rows, columns, end: c.pos }
}

export function uvarint(v: number): Buffer {
  const out: number[] = []
  while (v >= 0x80) {
    out.push((v % 0x80) | 0x80)
    v = Math.floor(v / 0x80)
  }
  out.push(v)
  return Buffer.from(out)
}

export function str(s: string): Buffer {
  const b = Buffer.from(s, 'utf8')
  return Buffer.concat([uvarint(b.length), b])
}

/** BlockInfo as NativeWriter writes it: is_overflows = false, bucket_num = -1. */
const BLOCK_INFO = Buffer.from([0x01, 0x00, 0x02, 0xff, 0xff, 0xff, 0xff, 0x00])

/** The first k rows of a block, framed for the revision. */
function frame(buf: Buffer, block: ParsedBlock, k: number, revision: number): Buffer {
  const parts: Buffer[] = []
  if (revision > 0) parts.push(BLOCK_INFO)
  parts.push(uvarint(block.columns.length), uvarint(k))
  for (const col of block.columns) {
    parts.push(str(col.name), str(col.type))
    if (revision >= MIN_REVISION_WITH_CUSTOM_SERIALIZATION) parts.push(Buffer.from([0]))
    if (k === 0) continue
    // The whole block: its prefix and data as they are; fewer rows: the walk picks the bytes of the first k.
    if (k === block.rows) {
      parts.push(buf.subarray(col.prefix[0], col.dataEnd))
      continue
    }
    parts.push(buf.subarray(col.prefix[0], col.prefix[1]))
    for (const r of walk(col.spec, new Cursor(buf, col.dataStart), block.rows, k))
      parts.push(Buffer.isBuffer(r) ? r : buf.subarray(r[0], r[1]))
  }
  return Buffer.concat(parts)
}

/**
 * Re-frames a revision-0 Native stream fed in arbitrary chunks. push()
 * returns the re-framed bytes of the blocks completed so far and stops at
 * the caps (then `stoppedBy` is set and further input is ignored). `whole`:
 * every chunk is one block's whole result (chDB); at revision 0 such a block
 * whose rows the engine counted and that fits the caps passes as it is.
 */
export class NativeReframer implements ResultShape {
  private pending: Buffer = Buffer.alloc(0)
  rows = 0
  bytes = 0
  stoppedBy: 'rows' | 'bytes' | undefined

  constructor(
    private readonly revision: number,
    private readonly caps: ShapeCaps,
    private readonly whole = false,
  ) {}

  push({ data, rows }: EngineChunk): Buffer[] {
    if (this.stoppedBy !== undefined) return []
    if (
      this.whole &&
      this.revision === 0 &&
      rows !== undefined &&
      this.pending.length === 0 &&
      this.rows + rows <= this.caps.maxRows &&
      this.bytes + data.length <= this.caps.maxBytes
    ) {
      this.rows += rows
      this.bytes += data.length
      return data.length === 0 ? [] : [data]
    }
    this.pending = this.pending.length === 0 ? Buffer.from(data) : Buffer.concat([this.pending, data])
    const out: Buffer[] = []
    let pos = 0
    while (pos < this.pending.length && this.stoppedBy === undefined) {
      let block: ParsedBlock
      try {
        block = readBlock(this.pending, pos)
      } catch (err) {
        if (err instanceof Incomplete) break
        throw err
      }
      out.push(...this.take(block))
      pos = block.end
    }
    this.pending = this.pending.subarray(pos)
    return out
  }

  /** Throws when the stream ended inside a block. */
  end(): Buffer[] {
    if (this.stoppedBy === undefined && this.pending.length > 0)
      throw new NativeFormatError(`the Native stream ended inside a block (${this.pending.length} bytes left over)`)
    return []
  }

  private take(block: ParsedBlock): Buffer[] {
    let k = Math.min(block.rows, this.caps.maxRows - this.rows)
    let why: 'rows' | 'bytes' = 'rows'
    let framed = frame(this.pending, block, k, this.revision)
    if (this.bytes + framed.length > this.caps.maxBytes) {
      why = 'bytes'
      // The most rows that fit: framed size grows with k.
      let lo = 0
      let hi = k - 1
      while (lo < hi) {
        const mid = Math.ceil((lo + hi) / 2)
        if (this.bytes + frame(this.pending, block, mid, this.revision).length <= this.caps.maxBytes) lo = mid
        else hi = mid - 1
      }
      k = lo
      framed = frame(this.pending, block, k, this.revision)
      if (this.bytes + framed.length > this.caps.maxBytes) {
        this.stoppedBy = 'bytes'
        return []
      }
    }
    if (k < block.rows) this.stoppedBy = why
    // A block cut to no rows says nothing a client needs, unless it is the only header.
    if (k === 0 && block.rows > 0 && this.rows + this.bytes > 0) return []
    this.rows += k
    this.bytes += framed.length
    return [framed]
  }
}
