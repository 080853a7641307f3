/**
 * Apache Arrow's IPC formats (what clickhouse-connect's query_arrow and
 * query_df_arrow read), cut at the row and byte caps. The engine writes the
 * stream format (ArrowStream), one record batch per block of at most
 * max_block_size rows:
 *
 *   message := 0xFFFFFFFF, int32 metadata length, Message flatbuffer (padded to 8), body
 *   stream  := schema message, (dictionary | record batch message)*, 0xFFFFFFFF 0x00000000
 *
 * A record batch's row count and body length are read from its Message
 * flatbuffer (Message.fbs: header_type, header, bodyLength; RecordBatch.length);
 * whole batches are kept while they fit the caps, so a cut result has at most
 * the row cap (less by up to one block). chDB formats every streamed block as
 * a whole stream of its own (schema, batch, end marker): schemas after the
 * first are dropped and reading goes on past end markers, so one stream comes
 * out either way. For the file format (Arrow), the kept
 * messages are framed as File.fbs says: "ARROW1", padding, the stream, a
 * Footer flatbuffer (the schema, copied from the schema message, and one Block
 * per record batch), its length, "ARROW1".
 */
import { NativeFormatError } from './native-format.js'

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

export interface ArrowCaps {
  maxRows: number
  maxBytes: number
}

/**
 * Cuts an Arrow IPC stream fed in arbitrary chunks at whole record batches
 * within the caps; result() gives the asked format.
 */
export class ArrowCutter {
  private pending: Buffer = Buffer.alloc(0)
  private readonly kept: Message[] = []
  private schema: Message | undefined
  private done = false
  rows = 0
  bytes = 0
  truncated = false

  constructor(
    private readonly format: ArrowFormat,
    private readonly caps: ArrowCaps,
  ) {}

  /** Takes a chunk; returns true while more input is wanted. */
  push(chunk: Uint8Array): boolean {
    if (this.done) return false
    this.pending = this.pending.length === 0 ? Buffer.from(chunk) : Buffer.concat([this.pending, chunk])
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
      const copy = { ...m, bytes: Buffer.from(m.bytes) }
      if (m.type === HEADER.Schema) {
        if (this.schema === undefined) {
          this.schema = { ...copy, meta: copy.bytes.subarray(copy.metaLength - m.meta.length, copy.metaLength) }
          this.bytes += copy.bytes.length
        } else if (!this.schema.bytes.equals(copy.bytes))
          throw new NativeFormatError('the Arrow stream changed its schema between blocks')
        continue
      }
      if (this.rows + m.rows > this.caps.maxRows || this.bytes + copy.bytes.length + 1024 > this.caps.maxBytes) {
        this.truncated = true
        this.done = true
        break
      }
      this.kept.push(copy)
      this.rows += m.rows
      this.bytes += copy.bytes.length
    }
    this.pending = this.done ? Buffer.alloc(0) : this.pending.subarray(pos)
    return !this.done
  }

  /** The kept messages in the asked format; throws when the stream ended inside a message. */
  result(): Buffer {
    if (!this.done && this.pending.length > 0)
      throw new NativeFormatError(`the Arrow stream ended inside a message (${this.pending.length} bytes left over)`)
    if (this.schema === undefined) throw new NativeFormatError('the Arrow stream has no schema')
    const stream = [this.schema.bytes, ...this.kept.map((m) => m.bytes)]
    if (this.format === 'ArrowStream') return Buffer.concat([...stream, EOS])
    // File: every message starts 8-aligned after the 8-byte magic, as the engine padded them.
    const blocks: Array<{ offset: number; meta: number; body: number; type: number }> = []
    let offset = MAGIC.length + this.schema.bytes.length
    for (const m of this.kept) {
      blocks.push({ offset, meta: m.metaLength, body: m.bodyLength, type: m.type })
      offset += m.bytes.length
    }
    const footer = fileFooter(this.schema.meta, blocks)
    const size = Buffer.alloc(4)
    size.writeInt32LE(footer.length)
    return Buffer.concat([MAGIC, ...stream, EOS, footer, size, MAGIC.subarray(0, 6)])
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
