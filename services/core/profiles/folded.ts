/**
 * Folded stacks: frames root first separated by `;`, a space, the count. As
 * async-profiler 4.6 writes them, the count follows the *last* space and equal
 * stacks on several lines are summed (docs/design/profiles.md#folded-stacks-foldedts).
 */
import { MAX_FRAME_CHARS, MAX_STACK_DEPTH } from '../../../schemas/events.v1.js'
import { BenchstreamError } from '../errors.js'

/** Stacks of one profile: frames joined by `;` (root first) -> samples. Frames never contain `;`. */
export type Folded = Map<string, number>

/** Most samples one profile may count (stays exact in a float and in UInt64). */
export const MAX_PROFILE_SAMPLES = Number.MAX_SAFE_INTEGER

/** The frames of a stack key (frames joined by `;`). */
export const stackFrames = (key: string): string[] => key.split(';')

export function decodeError(file: string, line: number, what: string): BenchstreamError {
  return new BenchstreamError('BS_ERR_DECODE', `${file}:${line}: ${what}`)
}

const COLLAPSED_EXPECTED =
  'expected a folded stack line "frame;frame;...;frame COUNT" (root first, a whole number of samples ' +
  "after the last space), as async-profiler's collapsed output and the stackcollapse scripts write"

/**
 * Parses folded stacks. Empty lines are skipped; anything else that is not
 * `stack COUNT` is a BS_ERR_DECODE naming the file, the line and what was
 * expected. Equal stacks are summed.
 */
export function parseFolded(text: string, file: string): { stacks: Folded; lines: number; samples: number } {
  const stacks: Folded = new Map()
  let lines = 0
  let samples = 0
  let lineNo = 0
  for (const raw of text.split('\n')) {
    lineNo++
    const line = raw.endsWith('\r') ? raw.slice(0, -1) : raw
    if (line === '') continue
    const sp = line.lastIndexOf(' ')
    if (sp <= 0) throw decodeError(file, lineNo, `${show(line)} has no count; ${COLLAPSED_EXPECTED}`)
    const countText = line.slice(sp + 1)
    if (!/^\d{1,16}$/.test(countText))
      throw decodeError(
        file,
        lineNo,
        `the count ${show(countText)} is not a whole number of samples; ${COLLAPSED_EXPECTED}`,
      )
    const count = Number(countText)
    const key = line.slice(0, sp)
    checkStack(key, file, lineNo)
    if (count === 0) continue
    samples += count
    if (samples > MAX_PROFILE_SAMPLES)
      throw decodeError(file, lineNo, `more than ${MAX_PROFILE_SAMPLES} samples in one profile`)
    stacks.set(key, (stacks.get(key) ?? 0) + count)
    lines++
  }
  return { stacks, lines, samples }
}

/** The bounds every stored stack meets (schemas/events.v1.ts), checked where it is read. */
function checkStack(key: string, file: string, lineNo: number): void {
  if (key.includes('\0'))
    throw decodeError(file, lineNo, 'the line has a NUL byte: this is not a text file of folded stacks')
  let depth = 1
  let start = 0
  for (let i = 0; i <= key.length; i++) {
    if (i < key.length && key.charCodeAt(i) !== 59) continue
    if (i - start > MAX_FRAME_CHARS)
      throw decodeError(
        file,
        lineNo,
        `frame ${depth} is ${i - start} characters long; at most ${MAX_FRAME_CHARS} are accepted`,
      )
    if (i < key.length) depth++
    start = i + 1
  }
  if (depth > MAX_STACK_DEPTH)
    throw decodeError(file, lineNo, `the stack has ${depth} frames; at most ${MAX_STACK_DEPTH} are accepted`)
}

/** Folded text: one `stack count` line per stack, sorted by byte order (what stackcollapse-perf.pl prints). */
export function formatFolded(stacks: Folded): string {
  return [...stacks]
    .sort((a, b) => compareBytes(a[0], b[0]))
    .map(([k, v]) => `${k} ${v}\n`)
    .join('')
}

/**
 * Orders strings as their UTF-8 bytes compare (Perl's `cmp` on bytes,
 * ClickHouse's String order): by code point, which differs from JavaScript's
 * UTF-16 `<` only around surrogates.
 */
export function compareBytes(a: string, b: string): number {
  const n = Math.min(a.length, b.length)
  for (let i = 0; i < n; i++) {
    const x = a.codePointAt(i)!
    const y = b.codePointAt(i)!
    if (x !== y) return x < y ? -1 : 1
    if (x > 0xffff) i++
  }
  return a.length === b.length ? 0 : a.length < b.length ? -1 : 1
}

/** Total samples of a profile. */
export function totalSamples(stacks: Folded): number {
  let n = 0
  for (const v of stacks.values()) n += v
  return n
}

/**
 * JVM hidden classes carry their address in the name, different in every
 * JVM (`Processor$$Lambda$716.0x00007f75cc3871a8.accept`), which would make
 * two runs' stacks differ where the code is the same. This removes the
 * address and the lambda's sequence number (`Processor$$Lambda.accept`), as
 * async-profiler's `norm` option does for its own output; equal stacks merge.
 */
export function normalizeHiddenClasses(stacks: Folded): { stacks: Folded; changed: number } {
  const out: Folded = new Map()
  let changed = 0
  for (const [k, v] of stacks) {
    const n = k.replace(/\$\$Lambda\$\d+[./]0x[0-9a-f]+/g, '$$$$Lambda').replace(/\.0x[0-9a-f]{6,16}(?=[.;]|$)/g, '')
    if (n !== k) changed++
    out.set(n, (out.get(n) ?? 0) + v)
  }
  return { stacks: out, changed }
}

function show(s: string): string {
  return JSON.stringify(s.length > 80 ? s.slice(0, 80) + '...' : s)
}
