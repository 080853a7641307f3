/**
 * The writer's unsigned LEB128 varint, shared by the OPS batch writer and the
 * interval histogram encoder. The readers' varints stay beside their loops
 * (message-reader.ts's Reader.varint, ops-decoder.ts's varintAt): the OPS hot
 * loop keeps its position in a local.
 */

/**
 * Writes an unsigned LEB128 varint of a non-negative integer up to 2^53. Below 2^31 (every value but far
 * timestamps) with 32-bit integer operations; the same bytes as the division below.
 */
export function writeVarint(buf: Buffer, pos: number, v: number): number {
  if (v < 0x8000_0000) {
    while (v >= 0x80) {
      buf[pos++] = (v & 0x7f) | 0x80
      v >>>= 7
    }
    buf[pos++] = v
    return pos
  }
  while (v >= 0x80) {
    buf[pos++] = (v % 0x80) | 0x80
    v = Math.floor(v / 0x80)
  }
  buf[pos++] = v
  return pos
}
