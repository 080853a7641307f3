/**
 * The cursor the decoders read a message with, and the error it throws when a
 * field runs past the end (decodeMessage turns it into a 'truncated' reject).
 */

import { ID_PATTERN } from '../../../schemas/events.v1.js'

/** Longest run or client id, in bytes. */
export const MAX_ID_BYTES = 64

export class Truncated extends Error {}

/** Cursor over a message; throws Truncated when reading past the end. */
export class Reader {
  pos: number
  constructor(
    readonly buf: Buffer,
    start: number,
  ) {
    this.pos = start
  }
  u8(): number {
    if (this.pos >= this.buf.length) throw new Truncated()
    return this.buf[this.pos++]!
  }
  f64(): number {
    if (this.pos + 8 > this.buf.length) throw new Truncated()
    const v = this.buf.readDoubleLE(this.pos)
    this.pos += 8
    return v
  }
  varint(): number {
    const buf = this.buf
    let result = 0
    let mul = 1
    for (let i = 0; i < 8; i++) {
      if (this.pos >= buf.length) throw new Truncated()
      const b = buf[this.pos++]!
      result += (b & 0x7f) * mul
      if (b < 0x80) return result
      mul *= 0x80
    }
    // More than 8 varint bytes would exceed 2^56: never produced by the writer.
    throw new Truncated()
  }
  id(): string | undefined {
    const len = this.u8()
    if (this.pos + len > this.buf.length) throw new Truncated()
    const s = this.buf.toString('utf8', this.pos, this.pos + len)
    this.pos += len
    return len > 0 && len <= MAX_ID_BYTES && ID_PATTERN.test(s) ? s : undefined
  }
}
