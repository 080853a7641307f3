/**
 * Following the HdrHistogram interval logs a running YCSB writes: fed the
 * bytes each file grew by, it hands out complete intervals. Pure. A measured
 * interval waits for its intended twin only while an `Intended-` log of its
 * operation exists (docs/design/ycsb-files.md#following-a-running-ycsb-followts).
 */
import type { Operation, Status } from '../../../schemas/events.v1.js'
import { parseHdrLog, type HdrInterval } from './hdr-log.js'
import { pairIntervals, type PlannedInterval } from './import-plan.js'
import type { MeasurementName } from './report-types.js'
import { decodeError } from './text-input.js'

/** A partial last line longer than this is not an interval log line (YCSB's are a few hundred bytes). */
const MAX_LINE_CHARS = 1024 * 1024

interface FileState {
  name: MeasurementName
  /** Comment and legend lines so far: the context each new chunk is parsed in. */
  header: string
  /** Complete lines consumed so far (line numbers in messages stay the file's). */
  lines: number
  partial: string
  intervals: number
  operations: number
}

interface OpQueue {
  op: Operation
  status: Status
  measured: HdrInterval[]
  intended: HdrInterval[]
}

export class IntervalLogFollower {
  private readonly files = new Map<string, FileState>()
  private readonly queues = new Map<string, OpQueue>()

  /** Starts following a log; `name` is the measurement its file name stands for. */
  add(file: string, name: MeasurementName): void {
    if (this.files.has(file)) return
    this.files.set(file, { name, header: '', lines: 0, partial: '', intervals: 0, operations: 0 })
  }

  has(file: string): boolean {
    return this.files.has(file)
  }

  /**
   * A log truncated and written anew before it held an interval: read it again from the start. YCSB 0.17 can
   * construct one operation's measurement twice when two client threads measure it first at the same moment
   * (Measurements.getOpMeasurement's get-then-putIfAbsent); each opens the log with truncation and writes the header.
   * False once the log gave an interval: then it is another run writing the file, which is refused.
   */
  rewind(file: string): boolean {
    const f = this.files.get(file)
    if (f === undefined || f.intervals > 0) return false
    f.header = ''
    f.lines = 0
    f.partial = ''
    return true
  }

  /**
   * The text a log grew by. Complete lines are parsed at once; a partial
   * last line (YCSB's writer prints a line in pieces) waits for the rest.
   * Throws BS_ERR_DECODE naming the file and line of a malformed line.
   */
  feed(file: string, text: string): void {
    const f = this.files.get(file)
    if (f === undefined) throw new Error(`feed of a file not added: ${file}`)
    const all = f.partial + text
    const cut = all.lastIndexOf('\n')
    f.partial = cut === -1 ? all : all.slice(cut + 1)
    if (f.partial.length > MAX_LINE_CHARS)
      throw decodeError(
        file,
        f.lines + 1,
        `a line of more than ${MAX_LINE_CHARS} characters; expected an HdrHistogram interval log line`,
      )
    if (cut === -1) return
    const lines = all.slice(0, cut).split('\n')
    // Parsed after the header lines seen so far (StartTime decides where relative
    // timestamps count from), with blank lines standing in for the other lines
    // consumed before, so messages name the file's own line numbers.
    const log = parseHdrLog(f.header + '\n'.repeat(Math.max(0, f.lines - lineCount(f.header))) + lines.join('\n'), file)
    for (const l of lines) {
      const t = l.trim()
      if (t.startsWith('#') || /^"?(?:Start)?Timestamp"?\s*,/.test(t)) f.header += l + '\n'
    }
    f.lines += lines.length
    if (f.name.kind === 'operation') {
      const q = this.queue(f.name.op!, f.name.status)
      q[f.name.latency].push(...log.intervals)
    }
    for (const iv of log.intervals) {
      f.intervals++
      f.operations += iv.total
    }
  }

  /**
   * Interval records ready to send. With `final` (YCSB has exited, or the
   * follow ended), everything left, unpaired halves with an empty twin.
   */
  ready(final: boolean): PlannedInterval[] {
    const out: PlannedInterval[] = []
    for (const q of this.queues.values()) {
      const hasFile = (latency: 'measured' | 'intended'): boolean =>
        [...this.files.values()].some(
          (f) =>
            f.name.kind === 'operation' &&
            f.name.op === q.op &&
            f.name.status === q.status &&
            f.name.latency === latency,
        )
      const waitIntended = hasFile('intended')
      const waitMeasured = hasFile('measured')
      let n: number
      if (final) n = Math.max(q.measured.length, q.intended.length)
      else if (waitIntended && waitMeasured) n = Math.min(q.measured.length, q.intended.length)
      else n = waitMeasured ? q.measured.length : q.intended.length
      if (n === 0) continue
      const measured = q.measured.splice(0, Math.min(n, q.measured.length))
      const intended = q.intended.splice(0, Math.min(n, q.intended.length))
      // Empty arrays on a side that has no log: pairIntervals then leaves the intended section out.
      for (const iv of pairIntervals(measured, waitIntended ? padTo(intended, n) : []))
        out.push({ op: q.op, status: q.status, ...iv })
    }
    return out
  }

  /** What each log held so far: for the closing summary. */
  summary(): Array<{
    file: string
    name: string
    kind: MeasurementName['kind']
    intervals: number
    operations: number
  }> {
    return [...this.files].map(([file, f]) => ({
      file,
      name: f.name.name,
      kind: f.name.kind,
      intervals: f.intervals,
      operations: f.operations,
    }))
  }

  private queue(op: Operation, status: Status): OpQueue {
    const key = `${op}/${status}`
    let q = this.queues.get(key)
    if (q === undefined) {
      q = { op, status, measured: [], intended: [] }
      this.queues.set(key, q)
    }
    return q
  }
}

function lineCount(text: string): number {
  let n = 0
  for (let i = text.indexOf('\n'); i !== -1; i = text.indexOf('\n', i + 1)) n++
  return n
}

/** An intended side shorter than the measured one (the final flush) is padded with empty intervals. */
function padTo(intervals: HdrInterval[], n: number): HdrInterval[] {
  const out = [...intervals]
  while (out.length < n)
    out.push({
      line: 0,
      startUs: 0,
      lengthUs: 0,
      tag: undefined,
      maxColumn: 0,
      encoding: 'V2',
      significantDigits: 3,
      total: 0,
      buckets: [],
    })
  return out
}
