/**
 * `perf script` text to folded stacks by the rules of FlameGraph's
 * stackcollapse-perf.pl (41fee1f), matched byte for byte against the script's
 * own output (test/fixtures/profiles/perf-script/). Unlike the script, a line
 * it cannot read is a BS_ERR_DECODE. The rules: docs/design/profiles.md.
 */
import { MAX_FRAME_CHARS, MAX_STACK_DEPTH } from '../../../schemas/events.v1.js'
import { decodeError, MAX_PROFILE_SAMPLES, type Folded } from './folded.js'

export interface PerfCollapseOptions {
  /** Process name with the pid: `comm-pid` (--pid). */
  pid?: boolean
  /** Process name with pid and tid: `comm-pid/tid` (--tid). */
  tid?: boolean
  /** `_[k]` on kernel frames (--kernel). */
  kernel?: boolean
  /** `_[j]` on JIT frames from /tmp/perf-PID.map (--jit). */
  jit?: boolean
  /** The address where a symbol is unknown: `[module <pc>]` (--addrs). */
  addrs?: boolean
  /** Keep samples of this event only (--event-filter); default: the first event seen. */
  eventFilter?: string
}

/** The option names of stackcollapse-perf.pl that are implemented (`all` = kernel + jit). */
export const PERF_OPTIONS = ['pid', 'tid', 'kernel', 'jit', 'all', 'addrs'] as const
export type PerfOption = (typeof PERF_OPTIONS)[number]

export function perfOptions(names: readonly PerfOption[]): PerfCollapseOptions {
  const o: PerfCollapseOptions = {}
  for (const n of names) {
    if (n === 'all') o.kernel = o.jit = true
    else o[n] = true
  }
  return o
}

export interface PerfCollapseResult {
  stacks: Folded
  /** The event kept (e.g. `cpu-clock:ppp`), undefined when no header named one. */
  event: string | undefined
  /** Samples counted (not their periods). */
  samples: number
  /** Samples of other events that were skipped. */
  skippedOtherEvents: number
  /** True when the last sample had no blank line after it and was not counted. */
  droppedUnterminated: boolean
}

const HEADER = /^(\S.+?)\s+(\d+)\/*(\d+)*\s+/
const PERIOD_EVENT = /:\s*(\d+)*\s+(\S+):\s*$/
const FRAME = /^\s*(\w+)\s*(.+) \((.*)\)/

const EXPECTED =
  'expected a sample header ("comm [pid/]tid [cpu] time: [period] event:"), a frame line ("address ' +
  'symbol (module)"), a # comment or a blank line, as `perf script` writes them'

export function collapsePerfScript(text: string, file: string, opts: PerfCollapseOptions = {}): PerfCollapseResult {
  const stacks: Folded = new Map()
  let eventFilter = opts.eventFilter ?? ''
  let stack: string[] = []
  let pname: string | undefined
  let period = 1
  let samples = 0
  let total = 0
  let skipped = 0
  let pending = false
  let lineNo = 0
  const lines = text.split('\n')
  // The piece after the last newline is not a line (Perl reads none there).
  if (lines[lines.length - 1] === '') lines.pop()
  for (const line of lines) {
    lineNo++
    if (line.startsWith('#')) continue
    if (line === '') {
      if (pname !== undefined) {
        stack.unshift(pname)
        if (stack.length > MAX_STACK_DEPTH)
          throw decodeError(
            file,
            lineNo,
            `the sample ending here has ${stack.length} frames; at most ${MAX_STACK_DEPTH} are accepted`,
          )
        const key = stack.join(';')
        stacks.set(key, (stacks.get(key) ?? 0) + period)
        samples++
        total += period
        if (total > MAX_PROFILE_SAMPLES)
          throw decodeError(file, lineNo, `the periods add up to more than ${MAX_PROFILE_SAMPLES}`)
      }
      stack = []
      pname = undefined
      pending = false
      continue
    }
    const h = HEADER.exec(line)
    if (h !== null) {
      const comm = h[1]!
      let pid = h[2]!
      let tid = h[3]
      // Perl: `not $tid` is also true for "0".
      if (tid === undefined || tid === '0') {
        tid = pid
        pid = '?'
      }
      let periodText: string | undefined
      const pe = PERIOD_EVENT.exec(line)
      if (pe !== null) {
        periodText = pe[1]
        const event = pe[2]!
        if (eventFilter === '') eventFilter = event
        else if (event !== eventFilter) {
          skipped++
          continue
        }
      }
      // A missing (or zero, which Perl reads as false) period counts 1.
      period = periodText === undefined || Number(periodText) === 0 ? 1 : Number(periodText)
      if (!Number.isSafeInteger(period)) throw decodeError(file, lineNo, `period ${periodText} is too large`)
      pname = (opts.tid ? `${comm}-${pid}/${tid}` : opts.pid ? `${comm}-${pid}` : comm).replaceAll(' ', '_')
      pending = true
      continue
    }
    const f = FRAME.exec(line)
    if (f === null)
      throw decodeError(
        file,
        lineNo,
        `${JSON.stringify(line.length > 80 ? line.slice(0, 80) + '...' : line)} is not a perf script line; ${EXPECTED}`,
      )
    if (pname === undefined) continue // a frame of a skipped sample
    const pc = f[1]!
    const mod = f[3]!
    const rawfunc = f[2]!.replace(/\+0x[\da-f]+$/, '')
    if (rawfunc.startsWith('(')) continue
    const inline: string[] = []
    for (let func of rawfunc.split('->')) {
      if (func === '[unknown]') {
        func = mod !== '[unknown]' ? mod.replace(/.*\//, '') : 'unknown'
        func = opts.addrs ? `[${func} <${pc}>]` : `[${func}]`
      }
      func = func.replaceAll(';', ':')
      // Everything from the first "(" is noise, unless it is a Go method like net/http.(*Client).Do.
      if (!/\.\(.*\)\./.test(func)) func = func.replace(/\((?!anonymous namespace\)).*/, '')
      func = func.replace(/["']/g, '')
      if (pname.startsWith('java') && func.includes('/')) func = func.replace(/^L/, '')
      if (inline.length > 0) {
        if (!func.includes('_[i]')) func += '_[i]'
      } else if (opts.kernel && /(^\[|vmlinux$)/.test(mod) && !mod.includes('unknown')) {
        func += '_[k]'
      } else if (opts.jit && /\/tmp\/perf-\d+\.map/.test(mod)) {
        if (!func.includes('_[j]')) func += '_[j]'
      }
      if (func.length > MAX_FRAME_CHARS)
        throw decodeError(
          file,
          lineNo,
          `the frame is ${func.length} characters long; at most ${MAX_FRAME_CHARS} are accepted`,
        )
      inline.push(func)
    }
    stack.unshift(...inline)
  }
  return {
    stacks,
    event: eventFilter === '' ? undefined : eventFilter,
    samples,
    skippedOtherEvents: skipped,
    droppedUnterminated: pending,
  }
}

/**
 * True when the text looks like `perf script` output rather than folded
 * stacks: a `#` header line, or an indented line (a frame) among the first
 * non-empty lines. Folded stacks have neither.
 */
export function looksLikePerfScript(text: string): boolean {
  let seen = 0
  for (const line of text.slice(0, 64 * 1024).split('\n')) {
    if (line === '') continue
    if (line.startsWith('#') || /^\s/.test(line)) return true
    if (++seen >= 50) break
  }
  return false
}
