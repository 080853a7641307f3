/**
 * ClickHouse's RowBinary formats, cut at the row and byte caps. The engine
 * writes RowBinaryWithNamesAndTypes:
 *
 *   uvarint ncols, ncols names (String), ncols types (String), then rows
 *
 * and every value of a row follows the last, with no length: a row ends
 * where its last value ends, so rows are found by walking the values by type
 * (what the JDBC driver does to read them):
 *
 *   numbers, dates, UUID, IPs, enums, decimals: fixed width, little-endian
 *   String: uvarint length, bytes; FixedString(N): N bytes
 *   Nullable(T): UInt8 1 for NULL (nothing follows), else 0 and T
 *   Array(T): uvarint count, the elements; Map(K, V): uvarint count, key value pairs
 *   Tuple(...): the elements in order; LowCardinality(T): as T
 *
 * chDB formats every streamed block as a whole result of its own, header
 * included: in `whole` mode every chunk starts with a header again, which
 * must equal the first and is dropped. The output keeps the header the client asked for (RowBinary: none,
 * RowBinaryWithNames: the count and names, RowBinaryWithNamesAndTypes: all)
 * and whole rows up to the caps. Types it does not walk (JSON, Dynamic,
 * Variant, aggregate states) are refused by typeSpec with a message that says
 * to cast them.
 */
import { Cursor, Incomplete, NativeFormatError, str, typeSpec, uvarint, type Spec } from './native-format.js'
import type { EngineChunk, ResultShape, ShapeCaps } from './result-shape.js'

export const ROW_BINARY_FORMATS = ['RowBinary', 'RowBinaryWithNames', 'RowBinaryWithNamesAndTypes'] as const
export type RowBinaryFormat = (typeof ROW_BINARY_FORMATS)[number]

/** The format the engine is asked for: the types are needed to find where rows end. */
export const ROW_BINARY_SOURCE = 'RowBinaryWithNamesAndTypes'

/** Skips one value of the type. */
function skipValue(spec: Spec, c: Cursor): void {
  switch (spec.kind) {
    case 'fixed':
      return c.skip(spec.size)
    case 'string':
      return c.skip(c.uvarint())
    case 'nullable': {
      c.need(1)
      const isNull = c.buf[c.pos++]!
      if (isNull > 1) throw new NativeFormatError('a Nullable flag in the RowBinary stream is neither 0 nor 1')
      if (isNull === 0) skipValue(spec.inner, c)
      return
    }
    case 'array': {
      const n = c.uvarint()
      if (n > 1_000_000_000) throw new NativeFormatError('an array in the RowBinary stream is too large')
      if (spec.inner.kind === 'fixed') return c.skip(n * spec.inner.size)
      for (let i = 0; i < n; i++) skipValue(spec.inner, c)
      return
    }
    case 'tuple':
      for (const item of spec.items) skipValue(item, c)
      return
    case 'lowcardinality':
      return skipValue(spec.inner, c)
  }
}

interface Header {
  names: string[]
  types: string[]
  specs: Spec[]
  end: number
}

function readHeader(buf: Buffer): Header {
  const c = new Cursor(buf, 0)
  const n = c.uvarint()
  if (n > 100_000) throw new NativeFormatError(`a RowBinary header with ${n} columns is not plausible`)
  const names: string[] = []
  const types: string[] = []
  for (let i = 0; i < n; i++) names.push(c.str())
  for (let i = 0; i < n; i++) types.push(c.str())
  return { names, types, specs: types.map((t) => typeSpec(t)), end: c.pos }
}

/**
 * Cuts a RowBinaryWithNamesAndTypes stream fed in arbitrary chunks into the
 * asked RowBinary format, at whole rows within the caps. push() returns the
 * bytes ready so far; once a cap is reached `stoppedBy` is set and further
 * input is ignored. `whole`: every chunk is a block's whole result, starting
 * with its own header (chDB); such a block whose rows the engine counted and
 * that fits the caps passes without its rows being walked.
 */
export class RowBinaryShape implements ResultShape {
  private pending: Buffer = Buffer.alloc(0)
  private header: Header | undefined
  rows = 0
  bytes = 0
  stoppedBy: 'rows' | 'bytes' | undefined

  constructor(
    private readonly format: RowBinaryFormat,
    private readonly caps: ShapeCaps,
    private readonly whole = false,
  ) {}

  /** Column names and types, once the header has arrived. */
  get columns(): Array<{ name: string; type: string }> | undefined {
    return this.header?.names.map((name, i) => ({ name, type: this.header!.types[i]! }))
  }

  push({ data, rows }: EngineChunk): Buffer[] {
    if (this.stoppedBy !== undefined) return []
    const out: Buffer[] = []
    let chunk: Uint8Array = data
    if (this.whole && this.header !== undefined) {
      if (this.pending.length > 0)
        throw new NativeFormatError(`a RowBinary block ended inside a row (${this.pending.length} bytes left over)`)
      const again = readHeader(Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength))
      if (again.types.join('\0') !== this.header.types.join('\0'))
        throw new NativeFormatError('the RowBinary stream changed its columns between blocks')
      chunk = chunk.subarray(again.end)
      // Counted by the engine and within the caps: the block's rows pass as they are.
      if (
        rows !== undefined &&
        this.rows + rows <= this.caps.maxRows &&
        this.bytes + chunk.length <= this.caps.maxBytes
      ) {
        this.rows += rows
        this.bytes += chunk.length
        return chunk.length === 0 ? [] : [Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength)]
      }
    }
    this.pending = this.pending.length === 0 ? Buffer.from(chunk) : Buffer.concat([this.pending, chunk])
    let pos = 0
    if (this.header === undefined) {
      try {
        this.header = readHeader(this.pending)
      } catch (err) {
        if (err instanceof Incomplete) return out
        throw err
      }
      pos = this.header.end
      const head = this.headerBytes(this.header)
      if (head.length > this.caps.maxBytes) {
        this.stoppedBy = 'bytes'
        return out
      }
      if (head.length > 0) out.push(head)
      this.bytes += head.length
      const body = this.pending.subarray(pos)
      if (
        this.whole &&
        rows !== undefined &&
        this.rows + rows <= this.caps.maxRows &&
        this.bytes + body.length <= this.caps.maxBytes
      ) {
        this.rows += rows
        this.bytes += body.length
        if (body.length > 0) out.push(body)
        this.pending = Buffer.alloc(0)
        return out
      }
    }
    const start = pos
    const c = new Cursor(this.pending, pos)
    while (c.pos < this.pending.length) {
      if (this.rows >= this.caps.maxRows) {
        this.stoppedBy = 'rows'
        break
      }
      const rowStart = c.pos
      try {
        for (const spec of this.header.specs) skipValue(spec, c)
      } catch (err) {
        if (err instanceof Incomplete) {
          c.pos = rowStart
          break
        }
        throw err
      }
      if (this.bytes + (c.pos - start) > this.caps.maxBytes) {
        c.pos = rowStart
        this.stoppedBy = 'bytes'
        break
      }
      this.rows++
      // A row of no columns has no bytes: stop rather than loop.
      if (c.pos === rowStart) break
    }
    if (c.pos > start) {
      out.push(Buffer.from(this.pending.subarray(start, c.pos)))
      this.bytes += c.pos - start
    }
    this.pending = this.stoppedBy !== undefined ? Buffer.alloc(0) : this.pending.subarray(c.pos)
    return out
  }

  /** Throws when the stream ended inside the header or a row. */
  end(): Buffer[] {
    if (this.stoppedBy !== undefined) return []
    if (this.header === undefined && this.pending.length > 0)
      throw new NativeFormatError('the RowBinary stream ended inside its header')
    if (this.pending.length > 0)
      throw new NativeFormatError(`the RowBinary stream ended inside a row (${this.pending.length} bytes left over)`)
    return []
  }

  private headerBytes(h: Header): Buffer {
    if (this.format === 'RowBinary') return Buffer.alloc(0)
    const parts = [uvarint(h.names.length), ...h.names.map(str)]
    if (this.format === 'RowBinaryWithNamesAndTypes') parts.push(...h.types.map(str))
    return Buffer.concat(parts)
  }
}
