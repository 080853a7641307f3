/**
 * Apache Arrow's IPC formats (what clickhouse-connect's query_arrow and
 * query_df_arrow read), streamed and cut at the row and byte caps. The engine writes the
 * stream format (ArrowStream), one record batch per block of at most
 * max_block_size rows:
 *
 *   message := 0xFFFFFFFF, int32 metadata length, Message flatbuffer (padded to 8), body
 *   stream  := schema message, (dictionary | record batch message)*, 0xFFFFFFFF 0x00000000
 *
 * A record batch's row count and body length are read from its Message
 * flatbuffer (Message.fbs: header_type, header, bodyLength; RecordBatch.length);
 * whole batches are sent while they fit the caps, so a cut result has at most
 * the row cap (less by up to one block). chDB formats every streamed block as
 * a whole stream of its own (schema, batch, end marker): schemas after the
 * first are dropped and reading goes on past end markers, so one stream comes
 * out either way. For the file format (Arrow), the sent
 * messages are framed as File.fbs says: "ARROW1", padding, the stream, a
 * Footer flatbuffer (the schema, copied from the schema message, and one Block
 * per record batch), its length, "ARROW1".
 */
import { NativeFormatError } from './native-format.js'
import type { EngineChunk, ResultShape, ShapeCaps } from './result-shape.js'

export const ARROW_FORMATS = ['Arrow', 'ArrowStream'] as const
export type ArrowFormat = (typeof ARROW_FORMATS)[number]
/** The format the engine is asked for. */
export const ARROW_SOURCE = 'ArrowStream'

const CONTINUATION = 0xffffffff
/** MessageHeader union tags (Message.fbs). */
const HEADER = { Schema: 1, DictionaryBatch: 2, RecordBatch: 3 } as const
/** MetadataVersion.V5 (Schema.fbs). */
const METADATA_V5 = 4
const MAGIC = Buffer.from('ARROW1\0\0')
const EOS = Buffer.from([0xff, 0xff, 0xff, 0xff, 0, 0, 0, 0])

/** A table of a flatbuffer: where it is and where its fields are (0: absent). */
class Table {
  private readonly vtable: number
  private readonly vsize: number
  constructor(
    readonly buf: Buffer,
    readonly pos: number,
  ) {
    this.vtable = pos - buf.readInt32LE(pos)
    if (this.vtable < 0 || this.vtable + 4 > buf.length) throw new NativeFormatError('a malformed Arrow message')
    this.vsize = buf.readUInt16LE(this.vtable)
  }
  private field(i: number): number {
    const at = 4 + 2 * i
    if (at + 2 > this.vsize) return 0
    const off = this.buf.readUInt16LE(this.vtable + at)
    return off === 0 ? 0 : this.pos + off
  }
  u8(i: number): number {
    const f = this.field(i)
    return f === 0 ? 0 : this.buf[f]!
  }
  i64(i: number): number {
    const f = this.field(i)
    return f === 0 ? 0 : Number(this.buf.readBigInt64LE(f))
  }
  table(i: number): Table | undefined {
    const f = this.field(i)
    return f === 0 ? undefined : new Table(this.buf, f + this.buf.readUInt32LE(f))
  }
}

interface Message {
  /** The whole message: prefix, metadata, body. */
  bytes: Buffer
  /** Prefix and metadata (the Block's metaDataLength). */
  metaLength: number
  bodyLength: number
  type: number
  rows: number
  /** The metadata flatbuffer alone. */
  meta: Buffer
}

/** Reads the message at pos, or undefined when it has not all arrived (or for the end-of-stream marker: null). */
function readMessage(buf: Buffer, pos: number): Message | null | undefined {
  if (pos + 8 > buf.length) return undefined
  let prefix = 8
  let len = buf.readUInt32LE(pos + 4)
  if (buf.readUInt32LE(pos) !== CONTINUATION) {
    // The pre-1.0 framing: the length alone.
    prefix = 4
    len = buf.readUInt32LE(pos)
  }
  if (len === 0) return null
  if (len > 64 << 20) throw new NativeFormatError('an Arrow message header is too large')
  if (pos + prefix + len > buf.length) return undefined
  const meta = buf.subarray(pos + prefix, pos + prefix + len)
  let message: Table
  try {
    message = new Table(meta, meta.readUInt32LE(0))
  } catch (err) {
    if (err instanceof RangeError) throw new NativeFormatError('a malformed Arrow message')
    throw err
  }
  const bodyLength = message.i64(3)
  const type = message.u8(1)
  if (bodyLength < 0 || bodyLength > 1 << 30) throw new NativeFormatError('an Arrow message body is too large')
  if (pos + prefix + len + bodyLength > buf.length) return undefined
  const rows = type === HEADER.RecordBatch ? (message.table(2)?.i64(0) ?? 0) : 0
  return {
    bytes: buf.subarray(pos, pos + prefix + len + bodyLength),
    metaLength: prefix + len,
    bodyLength,
    type,
    rows,
    meta,
  }
}

/**
 * Streams an Arrow IPC stream fed in arbitrary chunks as the asked format,
 * keeping whole record batches within the caps: the schema first (after the
 * file's magic), each batch as it arrives, and at the end the end-of-stream
 * marker (and, for the file format, the footer that lists the batches).
 */
export class ArrowShape implements ResultShape {
  private pending: Buffer = Buffer.alloc(0)
  private readonly blocks: Array<{ offset: number; meta: number; body: number; type: number }> = []
  private schema: Message | undefined
  /** Bytes written so far in the file format's layout (where the next message starts). */
  private offset = 0
  rows = 0
  bytes = 0
  stoppedBy: 'rows' | 'bytes' | undefined

  constructor(
    private readonly format: ArrowFormat,
    private readonly caps: ShapeCaps,
  ) {}

  push({ data }: EngineChunk): Buffer[] {
    if (this.stoppedBy !== undefined) return []
    this.pending = this.pending.length === 0 ? Buffer.from(data) : Buffer.concat([this.pending, data])
    const out: Buffer[] = []
    let pos = 0
    for (;;) {
      const m = readMessage(this.pending, pos)
      if (m === undefined) break
      if (m === null) {
        // The end marker: of the engine's whole result, or of one block's stream (chDB).
        pos += 8
        continue
      }
      pos += m.bytes.length
      if (m.type === HEADER.Schema) {
        if (this.schema === undefined) {
          this.schema = { ...m, meta: m.bytes.subarray(m.metaLength - m.meta.length, m.metaLength) }
          const first = this.format === 'Arrow' ? Buffer.concat([MAGIC, m.bytes]) : m.bytes
          this.offset = first.length
          this.bytes += first.length
          out.push(first)
        } else if (!this.schema.bytes.equals(m.bytes))
          throw new NativeFormatError('the Arrow stream changed its schema between blocks')
        continue
      }
      if (this.rows + m.rows > this.caps.maxRows) {
        this.stoppedBy = 'rows'
        break
      }
      // 1 KiB kept for the end marker and the footer.
      if (this.bytes + m.bytes.length + 1024 > this.caps.maxBytes) {
        this.stoppedBy = 'bytes'
        break
      }
      this.blocks.push({ offset: this.offset, meta: m.metaLength, body: m.bodyLength, type: m.type })
      this.offset += m.bytes.length
      this.rows += m.rows
      this.bytes += m.bytes.length
      out.push(m.bytes)
    }
    this.pending = this.stoppedBy !== undefined ? Buffer.alloc(0) : this.pending.subarray(pos)
    return out.length <= 1 ? out : [Buffer.concat(out)]
  }

  /** The end marker (and the file's footer); throws when the stream ended inside a message or had no schema. */
  end(): Buffer[] {
    if (this.stoppedBy === undefined && this.pending.length > 0)
      throw new NativeFormatError(`the Arrow stream ended inside a message (${this.pending.length} bytes left over)`)
    if (this.schema === undefined) throw new NativeFormatError('the Arrow stream has no schema')
    if (this.format === 'ArrowStream') {
      this.bytes += EOS.length
      return [EOS]
    }
    const footer = fileFooter(this.schema.meta, this.blocks)
    const size = Buffer.alloc(4)
    size.writeInt32LE(footer.length)
    const tail = Buffer.concat([EOS, footer, size, MAGIC.subarray(0, 6)])
    this.bytes += tail.length
    return [tail]
  }
}

/**
 * The Footer flatbuffer (File.fbs): version, schema, dictionaries, recordBatches.
 * The schema table is the one of the schema message: its flatbuffer is copied
 * whole, 8-aligned, after the footer's own table (flatbuffer offsets are
 * relative, so they stay valid), and the footer points into it.
 */
function fileFooter(schemaMeta: Buffer, blocks: Array<{ offset: number; meta: number; body: number; type: number }>) {
  const dictionaries = blocks.filter((b) => b.type === HEADER.DictionaryBatch)
  const batches = blocks.filter((b) => b.type === HEADER.RecordBatch)
  const schemaMessage = new Table(schemaMeta, schemaMeta.readUInt32LE(0))
  const schemaTable = schemaMessage.table(2)
  if (schemaTable === undefined) throw new NativeFormatError('the Arrow schema message has no schema')
  // Layout: root offset (4), vtable (12), table (20) = 36; vectors of 24-byte Block structs, each length word
  // placed so that its structs are 8-aligned; then the schema message's flatbuffer.
  const vtable = 4
  const table = 16
  const vector = (at: number, n: number): { lengthAt: number; end: number } => {
    const lengthAt = at % 8 === 4 ? at : at + 4
    return { lengthAt, end: lengthAt + 4 + 24 * n }
  }
  const dict = vector(36, dictionaries.length)
  const recs = vector(dict.end, batches.length)
  const schemaAt = Math.ceil(recs.end / 8) * 8
  const out = Buffer.alloc(schemaAt + schemaMeta.length)
  out.writeUInt32LE(table, 0)
  // vtable: its size, the table's size, field offsets (version, schema, dictionaries, recordBatches).
  ;[12, 20, 4, 8, 12, 16].forEach((v, i) => out.writeUInt16LE(v, vtable + 2 * i))
  out.writeInt32LE(table - vtable, table)
  out.writeInt16LE(METADATA_V5, table + 4)
  out.writeUInt32LE(schemaAt + schemaTable.pos - (table + 8), table + 8)
  out.writeUInt32LE(dict.lengthAt - (table + 12), table + 12)
  out.writeUInt32LE(recs.lengthAt - (table + 16), table + 16)
  for (const [v, list] of [
    [dict, dictionaries],
    [recs, batches],
  ] as const) {
    out.writeUInt32LE(list.length, v.lengthAt)
    list.forEach((b, i) => {
      const at = v.lengthAt + 4 + 24 * i
      out.writeBigInt64LE(BigInt(b.offset), at)
      out.writeInt32LE(b.meta, at + 8)
      out.writeBigInt64LE(BigInt(b.body), at + 16)
    })
  }
  schemaMeta.copy(out, schemaAt)
  return out
}
