/**
 * What every YCSB file reader needs: bytes to text, mail quoting removed,
 * offsets to line numbers, and the one error shape (BS_ERR_DECODE naming
 * the file, the line and what was expected).
 */
import { BenchstreamError } from '../errors.js'

export function decodeError(source: string, line: number | undefined, what: string, cause?: unknown): BenchstreamError {
  const where = line === undefined ? source : `${source} line ${line}`
  return new BenchstreamError('BS_ERR_DECODE', `${where}: ${what}`, cause === undefined ? undefined : { cause })
}

/** UTF-8 text of a file, without a byte-order mark; a file with NUL bytes or invalid UTF-8 is not one YCSB wrote. */
export function fileText(content: string | Uint8Array, source: string): string {
  let text: string
  if (typeof content === 'string') text = content
  else {
    try {
      text = new TextDecoder('utf-8', { fatal: true }).decode(content)
    } catch (err) {
      throw decodeError(
        source,
        undefined,
        'is not UTF-8 text; YCSB reports, raw data and HdrHistogram interval logs are text',
        err,
      )
    }
  }
  const nul = text.indexOf('\u0000')
  if (nul !== -1)
    throw decodeError(
      source,
      lineOf(lineStarts(text), nul),
      'holds a NUL byte: a binary file, not a YCSB report, raw data or HdrHistogram interval log',
    )
  return text.startsWith('\uFEFF') ? text.slice(1) : text
}

/**
 * A report quoted in a mail reply has every line starting with `>` (or
 * `> >`); the markers are replaced by spaces so offsets and line numbers stay
 * those of the file. Only when every non-blank line is quoted: a lone `>1000`
 * at the start of a wrapped line is YCSB's histogram overflow, not quoting.
 */
export function unquoteMail(text: string): string {
  const lines = text.split('\n')
  const nonBlank = lines.filter((l) => l.trim() !== '')
  if (nonBlank.length === 0 || !nonBlank.every((l) => /^\s*>/.test(l))) return text
  return lines.map((l) => l.replace(/^(?:\s*>)+/, (q) => ' '.repeat(q.length))).join('\n')
}

/** Offsets at which each line starts. */
export function lineStarts(text: string): number[] {
  const starts = [0]
  for (let i = text.indexOf('\n'); i !== -1; i = text.indexOf('\n', i + 1)) starts.push(i + 1)
  return starts
}

/** 1-based line holding an offset. */
export function lineOf(starts: readonly number[], offset: number): number {
  let lo = 0
  let hi = starts.length - 1
  while (lo < hi) {
    const mid = (lo + hi + 1) >> 1
    if (starts[mid]! <= offset) lo = mid
    else hi = mid - 1
  }
  return lo + 1
}

/** A short, printable excerpt for an error message. */
export function excerpt(s: string, max = 60): string {
  const one = s.replace(/\s+/g, ' ').trim()
  return JSON.stringify(one.length > max ? `${one.slice(0, max)}...` : one)
}
