/**
 * The lines of PerformanceEvaluation's output that describe one client of a
 * test: PE's options of the test, a client's start, its `Latency (us)`
 * summary, and the `Finished ...` lines of a client thread (today's form) or
 * of a map task or old PE (the old form). PeReader (pe-output.ts) dispatches
 * each line to these handlers.
 */
import { decodeError, excerpt } from '../ycsb/text-input.js'
import {
  LATENCY_KEYS,
  MAX_DURATION_MS,
  MAX_LATENCY_US,
  MAX_OPTIONS,
  MAX_OPTIONS_CHARS,
  sampledRows,
  simpleName,
  type LogLine,
} from './pe-lines.js'
import { MAX_PE_CLIENTS, type PeLatency } from './pe-result.js'
import { PeReaderState, type ThreadState } from './pe-reader-state.js'
import { peTest } from './pe-tests.js'

export abstract class PeClientLines extends PeReaderState {
  /** `RandomReadTest test run options={...}` (main thread, before any client starts): a new test and its options. */
  protected options(l: LogLine, m: RegExpExecArray): boolean {
    const name = simpleName(m[1]!)
    const key = peTest(name)?.className ?? name
    if (this.open.has(key))
      this.fail(l.line, `a second run of ${name} starts before PE summarized the first ("Summary of timings")`)
    if (m[2]!.length > MAX_OPTIONS_CHARS)
      this.fail(l.line, `PE's options of ${name} are ${m[2]!.length} characters long; at most ${MAX_OPTIONS_CHARS}`)
    let parsed: unknown
    try {
      parsed = JSON.parse(m[2]!)
    } catch (err) {
      throw decodeError(this.source, l.line, `PE's options of ${name} are not JSON: ${(err as Error).message}`, err)
    }
    if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed))
      this.fail(l.line, `PE's options of ${name} are not a JSON object`)
    const t = this.testNamed(name, l.line, 'current')
    for (const [k, v] of Object.entries(parsed)) {
      if (Object.keys(t.options).length >= MAX_OPTIONS) break
      if (!/^[A-Za-z][A-Za-z0-9_.]{0,63}$/.test(k)) continue
      if (typeof v === 'string' || typeof v === 'number' || typeof v === 'boolean')
        t.options[k] = String(v).slice(0, 256)
    }
    return true
  }

  protected start(l: LogLine, m: RegExpExecArray): boolean {
    if (l.thread === undefined) return true
    const s = this.thread(l, l.thread, simpleName(m[1]!))
    s.client.offset = this.count(l, m[2]!, 'the offset', 0)
    s.client.rows = this.count(l, m[3]!, 'the number of rows', 0)
    return true
  }

  protected latency(l: LogLine, text: string): boolean {
    const t = l.thread !== undefined ? this.threads.get(l.thread) : this.context
    if (t === undefined || t.finished)
      this.fail(l.line, 'a "Latency (us)" line of no client: no "Test : X, Thread : T" line or client thread before it')
    if (t.client.latency !== undefined)
      this.fail(
        l.line,
        `a second "Latency (us)" line for ${t.client.name} (the first at line ${t.client.latency.line})`,
      )
    const parts = text.split(/,\s+/)
    const values = new Map<string, number>()
    for (const p of parts) {
      const kv = /^([\w.]+)=(\S+)$/.exec(p.trim())
      if (kv === null)
        this.fail(l.line, `"Latency (us)" holds ${excerpt(p)}; expected name=value pairs (mean=1018.96, min=2.00, ...)`)
      if (values.has(kv[1]!)) this.fail(l.line, `"Latency (us)" gives ${kv[1]} twice`)
      values.set(kv[1]!, this.number(l, kv[2]!, `${kv[1]} latency`, MAX_LATENCY_US))
    }
    const missing = ['mean', 'min', 'max'].filter((k) => !values.has(k))
    if (missing.length > 0)
      this.fail(l.line, `"Latency (us)" has no ${missing.join(', ')}; PE prints ${LATENCY_KEYS.join(', ')}`)
    const unknown = [...values.keys()].filter((k) => !LATENCY_KEYS.includes(k))
    if (unknown.length > 0)
      this.fail(l.line, `"Latency (us)" has ${unknown.join(', ')}; PE prints ${LATENCY_KEYS.join(', ')}`)
    const percentiles = [...values]
      .filter(([k]) => k.endsWith('th'))
      .map(([label, valueUs]) => ({ percentile: Number(label.slice(0, -2)), valueUs, label }))
    const lat: PeLatency = {
      measures: undefined,
      meanUs: values.get('mean')!,
      minUs: values.get('min')!,
      maxUs: values.get('max')!,
      stdDevUs: values.get('stdDev') ?? 0,
      percentiles,
      sampled: false,
      line: l.line,
    }
    // A reservoir's summary is ordered: min <= mean, every percentile <= max, each percentile >= the one before.
    let below = lat.minUs
    for (const p of percentiles) {
      if (p.valueUs < below || p.valueUs > lat.maxUs)
        this.fail(
          l.line,
          `"Latency (us)": ${p.label}=${p.valueUs} lies outside [${below}, ${lat.maxUs}] (min or the percentile ` +
            'before it, max); PE prints its percentiles in order between min and max',
        )
      below = p.valueUs
    }
    if (lat.meanUs < lat.minUs || lat.meanUs > lat.maxUs)
      this.fail(l.line, `"Latency (us)": mean=${lat.meanUs} lies outside [min=${lat.minUs}, max=${lat.maxUs}]`)
    t.client.latency = lat
    return true
  }

  protected finishedThread(l: LogLine, m: RegExpExecArray): boolean {
    const name = m[1]!
    const s = this.threads.get(name)
    const durationMs = this.count(l, m[2]!, 'the duration', 0, MAX_DURATION_MS)
    const rows = this.count(l, m[3]!, 'the number of rows', 0)
    if (s === undefined || s.finished) {
      // Only PE's summary lines and this one were kept (grep): the client is known by its time alone.
      const t = this.lastOpenTest(l)
      const st = this.thread(l, name, t.test)
      this.finish(st, l, durationMs, rows)
      return true
    }
    this.finish(s, l, durationMs, rows)
    return true
  }

  protected finish(s: ThreadState, l: LogLine, durationMs: number, rows: number): void {
    const c = s.client
    if (c.offset !== undefined && c.rows !== 0 && c.rows !== rows)
      this.fail(l.line, `${c.name} finished ${rows} rows but started with ${c.rows} (line ${c.line})`)
    c.rows = rows
    c.durationMs = durationMs
    c.operations = sampledRows(c.offset ?? 0, rows, s.sampleEvery) * s.cycles
    if (c.latency?.measures !== undefined && c.latency.measures > c.operations)
      this.fail(
        l.line,
        `${c.name} measured ${c.latency.measures} latencies but ran ${c.operations} operations; PE measures at ` +
          'most one latency per operation',
      )
    s.finished = true
    if (this.context === s) this.context = undefined
  }

  protected finishedClass(l: LogLine, m: RegExpExecArray): boolean {
    const test = simpleName(m[1]!)
    const durationMs = this.count(l, m[2]!, 'the duration', 0, MAX_DURATION_MS)
    const offset = this.count(l, m[3]!, 'the offset', 0)
    const rows = m[4] === undefined ? undefined : this.count(l, m[4], 'the number of rows', 0)
    const mbPerSec = m[5] === undefined ? undefined : this.number(l, m[5], 'MB/s')
    const s = l.thread === undefined ? undefined : this.threads.get(l.thread)
    if (s !== undefined && !s.finished && s.test.test === test) {
      // Today's form: the thread's "Finished TestClient-N ... over R rows" line follows and decides.
      s.client.offset = offset
      s.client.mbPerSec = mbPerSec
      if (rows !== undefined) s.client.rows = rows
      s.finishedClassLine = l.line
      return true
    }
    const t = this.testNamed(test, l.line, 'old')
    if (t.unthreaded.length + t.threads.size >= MAX_PE_CLIENTS)
      this.fail(l.line, `more than ${MAX_PE_CLIENTS} clients in one test`)
    t.unthreaded.push({
      // Map tasks' logs name no client (their thread is each one's `main`): numbered in the order printed.
      name: `client-${t.unthreaded.length + 1}`,
      rows: rows ?? 0,
      operations: rows ?? 0,
      durationMs,
      offset,
      mbPerSec,
      latency: undefined,
      line: l.line,
    })
    if (rows === undefined)
      this.fail(
        l.line,
        `"Finished ${test} in ${durationMs}ms at offset ${offset}" says no "for N rows": the rows it ran are not known`,
      )
    return true
  }
}
