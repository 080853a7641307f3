/**
 * ClickHouse's exception block: how its HTTP interface (25.11 and later,
 * src/Server/HTTP/HTTP1/HTTP1ServerResponse.cpp, cancelWithException) ends
 * a response whose status has already gone out when the query fails:
 *
 *   \r\n__exception__\r\n<tag>\r\n<message>\n<bytes of message and newline> <tag>\r\n__exception__\r\n
 *
 * where <tag> is the response's X-ClickHouse-Exception-Tag (16 random
 * lowercase letters and digits), so that no row can pass for it; then the
 * server breaks the response (no terminating chunk). Benchstream writes it
 * (services/api/result-reply.ts) and reads it where it relays or prints an
 * answer (the CLI, a ClickHouse server behind the guard): the bytes before
 * the block are the result's, the block is the error.
 */
import { randomInt } from 'node:crypto'

const MARKER = '__exception__'
/** Characters of a tag. */
const TAG_LENGTH = 16
/** The most of a message a block carries (ClickHouse caps the whole block at 16 KiB). */
const MAX_MESSAGE_BYTES = 16 * 1024 - 128

/** A new exception tag. */
export function exceptionTag(): string {
  const chars = 'abcdefghijklmnopqrstuvwxyz0123456789'
  let tag = ''
  for (let i = 0; i < TAG_LENGTH; i++) tag += chars[randomInt(chars.length)]
  return tag
}

/** The block for a message (one line or several). */
export function exceptionBlock(tag: string, message: string): Buffer {
  let text = message.endsWith('\n') ? message : `${message}\n`
  if (Buffer.byteLength(text) > MAX_MESSAGE_BYTES)
    text = `${Buffer.from(text).toString('utf8', 0, MAX_MESSAGE_BYTES)}\n`
  return Buffer.from(`\r\n${MARKER}\r\n${tag}\r\n${text}${Buffer.byteLength(text)} ${tag}\r\n${MARKER}\r\n`)
}

/**
 * Reads a body piece by piece and splits off an exception block with its
 * tag: push() gives the bytes that are surely the result's, holding back the
 * last few until the next piece shows they do not open a block (at most the
 * opening's length, a few dozen bytes); once the opening is seen, the rest
 * is the block. Without a tag (an answer that carries none) it holds nothing.
 */
export class ExceptionScanner {
  private readonly open: Buffer | undefined
  private held: Buffer = Buffer.alloc(0)
  private block: Buffer | undefined

  constructor(private readonly tag: string | undefined) {
    this.open = tag === undefined || tag === '' ? undefined : Buffer.from(`\r\n${MARKER}\r\n${tag}\r\n`)
  }

  /** True once the opening of a block was seen: what follows is the error, not the result. */
  get failed(): boolean {
    return this.block !== undefined
  }

  /** The result's bytes from this piece (possibly none). */
  push(piece: Buffer): Buffer {
    if (this.block !== undefined) {
      if (this.block.length < MAX_MESSAGE_BYTES * 2) this.block = Buffer.concat([this.block, piece])
      return Buffer.alloc(0)
    }
    if (this.open === undefined) return piece
    const buf = this.held.length === 0 ? piece : Buffer.concat([this.held, piece])
    const at = buf.indexOf(this.open)
    if (at >= 0) {
      this.block = buf.subarray(at + this.open.length)
      this.held = Buffer.alloc(0)
      return buf.subarray(0, at)
    }
    const keep = Math.min(buf.length, this.open.length - 1)
    this.held = Buffer.from(buf.subarray(buf.length - keep))
    return buf.subarray(0, buf.length - keep)
  }

  /** What was held back, when the body ended without a block. */
  end(): Buffer {
    const rest = this.held
    this.held = Buffer.alloc(0)
    return rest
  }

  /** The block's message, as far as it came (a block cut short gives its beginning). */
  message(): string {
    const rest = this.block ?? Buffer.alloc(0)
    const close = rest.lastIndexOf(Buffer.from(` ${this.tag}\r\n${MARKER}`))
    return (close < 0 ? rest : rest.subarray(0, close))
      .toString('utf8')
      .replace(/\n\d+$/, '')
      .trim()
  }
}
