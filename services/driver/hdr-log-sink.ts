/**
 * YCSB's `hdrhistogram.fileoutput=true` for Benchstream's driver: an
 * EventSink decorator that passes every event on and also keeps, per
 * measurement, the histogram of the current interval; every interval it
 * appends one line to `<hdrhistogram.output.path><NAME>.hdr` (NAME as YCSB
 * names them: READ, READ-FAILED, Intended-READ), the last one at close. A
 * hook beside the runner, not in it: it runs in the delivery thread
 * (delivery-main.ts), which drains every client thread's event ring into it,
 * wherever the client threads run. Events reach it within the drain interval
 * (50 ms) of their completion, so one near an interval's end may fall into
 * the next line, as one recorded while YCSB's status thread writes does. The
 * files go through `write` (delivery-main.ts passes node:fs); a file is
 * created (an old one replaced, as YCSB's FileOutputStream does) with its
 * header when its measurement first appears.
 */
import { OPERATIONS, STATUSES } from '../../schemas/events.v1.js'
import type { RunLifecycle, ServerMetrics } from '../../schemas/events.v1.js'
import { Histogram } from '../core/stats/histogram.js'
import type { EventSink, SinkStats } from '../core/ports/event-sink.js'
import { hdrLogHeader, hdrLogLine } from '../core/ycsb/hdr-log-writer.js'

export interface HdrLogSinkOptions {
  /** hdrhistogram.output.path: what file names start with (a directory ends in /). */
  pathPrefix: string
  /** Interval length, ms (status.interval). */
  intervalMs: number
  /** Write the measured logs (measurement.interval op or both). */
  measured: boolean
  /** Write the Intended- logs (measurement.interval intended or both). */
  intended: boolean
  /** Appends text to a file; `create`: the file is new, replace whatever is there. */
  write: (file: string, text: string, create: boolean) => void
  /** ms since epoch. @default Date.now */
  now?: () => number
}

const STATUS_OK = 0

export class HdrLogSink implements EventSink {
  private readonly now: () => number
  private readonly baseMs: number
  private intervalStart: number
  /** Measurement name -> this interval's histogram. */
  private current = new Map<string, Histogram>()
  /** Measurements that have a file (a header written): they get a line every interval, empty or not, as YCSB's. */
  private readonly started = new Set<string>()
  private readonly timer: NodeJS.Timeout
  private closed = false

  constructor(
    private readonly inner: EventSink,
    private readonly opts: HdrLogSinkOptions,
  ) {
    this.now = opts.now ?? Date.now
    this.baseMs = this.now()
    this.intervalStart = this.baseMs
    this.timer = setInterval(() => this.roll(), opts.intervalMs)
    this.timer.unref()
  }

  record(
    thread: number,
    opCode: number,
    cacheIndex: number,
    statusIndex: number,
    startUs: number,
    latencyUs: number,
    intendedUs: number,
    bytes: number,
  ): void {
    this.inner.record(thread, opCode, cacheIndex, statusIndex, startUs, latencyUs, intendedUs, bytes)
    const op = OPERATIONS[opCode - 1]
    if (op === undefined || STATUSES[statusIndex] === undefined) return
    const name = statusIndex === STATUS_OK ? op : `${op}-FAILED`
    if (this.opts.measured) this.histogram(name).record(latencyUs)
    if (this.opts.intended) this.histogram(`Intended-${name}`).record(intendedUs)
  }

  sendRecord(record: RunLifecycle | ServerMetrics): Promise<void> {
    return this.inner.sendRecord(record)
  }

  flush(timeoutMs: number): Promise<void> {
    return this.inner.flush(timeoutMs)
  }

  stats(): SinkStats {
    return this.inner.stats()
  }

  /** Writes the last interval, then closes the sink it wraps. */
  async close(): Promise<void> {
    if (!this.closed) {
      this.closed = true
      clearInterval(this.timer)
      this.roll()
    }
    await this.inner.close()
  }

  private histogram(name: string): Histogram {
    let h = this.current.get(name)
    if (h === undefined) {
      h = new Histogram()
      this.current.set(name, h)
    }
    return h
  }

  /** Ends the current interval: one line per measurement (the timer calls it every interval, close once more). */
  roll(): void {
    const end = this.now()
    const snap = this.current
    this.current = new Map()
    for (const name of snap.keys()) {
      if (this.started.has(name)) continue
      this.started.add(name)
      this.opts.write(this.file(name), hdrLogHeader(name, this.baseMs), true)
    }
    for (const name of this.started) {
      this.opts.write(
        this.file(name),
        hdrLogLine(this.intervalStart - this.baseMs, end - this.intervalStart, snap.get(name)?.entries() ?? []),
        false,
      )
    }
    this.intervalStart = end
  }

  private file(name: string): string {
    return `${this.opts.pathPrefix}${name}.hdr`
  }
}
