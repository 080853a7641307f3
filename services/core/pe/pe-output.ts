/**
 * What HBase's PerformanceEvaluation (`hbase pe`) prints, read into one
 * result per test: each client's rows, time and latency summary as PE
 * printed them, nothing recomputed. Two forms:
 *
 * - today's (HBase 1.x to 2.x, `--nomapred`): per client thread
 *   (`TestClient-N`) a `Latency (us) : mean=..., min=..., 50th=...,
 *   99.999th=...` line, `Num measures (latency) : N` and `Finished
 *   TestClient-N in Xms over R rows`; then PE's own summary of the test
 *   (`[RandomReadTest] Summary of timings (ms): [...]`, `[ Avg TPS/QPS]`);
 * - the old one, a line per test and client: `Finished randomRead in Xms at
 *   offset O for R rows` (PE 0.1 to 0.20, and every map task since),
 *   `Reading 100000 random records took 129879ms`, `Running
 *   UniformRandomReadBenchmark for 100000 rows took 7418ms.` (MapFile and
 *   HFile PerformanceEvaluation).
 *
 * Log prefixes (`2026-12-06T03:39:44,345 INFO  [TestClient-0]
 * hbase.PerformanceEvaluation: `) are read for the thread and dropped; other
 * lines are counted, not read. A line in one of PE's forms that cannot be
 * what PE prints is an error (BS_ERR_DECODE: file, line, what was expected);
 * nothing partial is returned. docs/guides/hbase.md#hbase-performanceevaluation-hbase-pe.
 *
 * This file holds the entry (parsePeOutput) and PeReader: which handler each
 * line goes to, PE's summary of a test and the merge of its clients into one
 * PeTest, and the old form's one-line tests. The line patterns are in
 * pe-lines.ts, what it returns in pe-result.ts, the reading's state in
 * pe-reader-state.ts and the handlers of a client's lines in
 * pe-client-lines.ts.
 */
import type { Operation } from '../../../schemas/events.v1.js'
import { decodeError } from '../ycsb/text-input.js'
import { PeClientLines } from './pe-client-lines.js'
import {
  AVG_LATENCY,
  AVG_TPS,
  CYCLE,
  DURATION,
  FINISHED_CLASS,
  FINISHED_THREAD,
  LATENCY,
  MAX_DURATION_MS,
  MEASURES,
  OLD_RUNNING,
  OLD_TOOK,
  OPTIONS,
  SAMPLING,
  START,
  SUMMARY,
  TEST_THREAD,
  simpleName,
  type LogLine,
} from './pe-lines.js'
import type { OpenTest } from './pe-reader-state.js'
import { MAX_PE_TESTS, PE_RESERVOIR, type PeOutput } from './pe-result.js'
import { peTest } from './pe-tests.js'

/** UTF-8 text of a file, without a byte-order mark; NUL bytes or invalid UTF-8 are not what PE prints. */
export function peText(content: string | Uint8Array, source: string): string {
  let text: string
  if (typeof content === 'string') text = content
  else {
    try {
      text = new TextDecoder('utf-8', { fatal: true }).decode(content)
    } catch (err) {
      throw decodeError(source, undefined, 'is not UTF-8 text; PerformanceEvaluation prints text', err)
    }
  }
  const nul = text.indexOf('\u0000')
  if (nul !== -1)
    throw decodeError(
      source,
      text.slice(0, nul).split('\n').length,
      'holds a NUL byte: a binary file, not what PerformanceEvaluation prints',
    )
  return text.startsWith('\uFEFF') ? text.slice(1) : text
}

/** Reads PE's output; throws BS_ERR_DECODE when a result line cannot be what PE prints, or when it holds none. */
export function parsePeOutput(content: string | Uint8Array, source: string): PeOutput {
  return new PeReader(source).read(peText(content, source))
}

class PeReader extends PeClientLines {
  read(text: string): PeOutput {
    const lines = text.replace(/\r\n?/g, '\n').split('\n')
    for (const [i, raw] of lines.entries()) {
      const l = this.logLine(raw, i + 1)
      if (l === undefined || !this.line(l)) {
        if (raw.trim() !== '') this.ignored++
      }
    }
    for (const t of this.tests) this.close(t)
    const tests = this.tests.filter((t) => t.clients.length > 0)
    if (tests.length === 0)
      throw decodeError(
        this.source,
        undefined,
        'holds no PerformanceEvaluation result: expected per-client lines such as "Latency (us) : mean=..." ' +
          'and "Finished TestClient-0 in 1234ms over 1000 rows" (hbase pe --nomapred), "Finished randomRead ' +
          'in 1234ms at offset 0 for 1000 rows", or "Reading 100000 random records took 129879ms"',
      )
    return {
      kind: 'pe',
      source: this.source,
      tests: tests.map(({ threads: _t, unthreaded: _u, ...t }) => t),
      ignoredLines: this.ignored,
    }
  }

  /** Reads one line; false when it is none of PE's result lines. */
  protected line(l: LogLine): boolean {
    const { msg } = l
    let m: RegExpExecArray | null
    if ((m = START.exec(msg)) !== null) return this.start(l, m)
    if ((m = OPTIONS.exec(msg)) !== null) return this.options(l, m)
    if ((m = SAMPLING.exec(msg)) !== null) {
      const t = this.threadOf(l)
      if (t !== undefined) t.sampleEvery = this.count(l, m[1]!, 'the sampling interval', 1)
      return true
    }
    if ((m = CYCLE.exec(msg)) !== null) {
      const t = this.threadOf(l)
      if (t !== undefined) t.cycles = this.count(l, m[2]!, 'the number of cycles', 1)
      return true
    }
    if ((m = TEST_THREAD.exec(msg)) !== null) {
      const state = this.thread(l, m[2]!, simpleName(m[1]!))
      this.context = state
      return true
    }
    if ((m = LATENCY.exec(msg)) !== null) return this.latency(l, m[1]!)
    if ((m = MEASURES.exec(msg)) !== null) {
      const t = l.thread !== undefined ? this.threads.get(l.thread) : this.context
      if (t === undefined)
        this.fail(l.line, 'a "Num measures (latency)" line of no client: no "Test : X, Thread : T" before it')
      if (t.client.latency === undefined)
        this.fail(l.line, `"Num measures (latency)" of ${t.client.name} before its "Latency (us)" line`)
      t.client.latency.measures = this.count(l, m[1]!, 'the number of latencies measured', 0)
      t.client.latency.sampled = t.client.latency.measures > PE_RESERVOIR
      return true
    }
    if ((m = FINISHED_THREAD.exec(msg)) !== null) return this.finishedThread(l, m)
    if ((m = FINISHED_CLASS.exec(msg)) !== null) return this.finishedClass(l, m)
    if ((m = SUMMARY.exec(msg)) !== null) return this.summary(l, m)
    if ((m = DURATION.exec(msg)) !== null) return true
    if ((m = AVG_LATENCY.exec(msg)) !== null) {
      const t = this.lastSummarized
      if (t !== undefined) t.printed.avgLatencyUs = this.number(l, m[1]!, 'the average latency')
      return true
    }
    if ((m = AVG_TPS.exec(msg)) !== null) {
      const t = this.lastSummarized
      if (t !== undefined) t.printed.rowsPerSec = this.number(l, m[1]!, 'rows per second')
      return true
    }
    if ((m = OLD_TOOK.exec(msg)) !== null) {
      const verb = m[1]!.toLowerCase()
      const op: Operation =
        verb === 'reading'
          ? 'READ'
          : verb === 'scanning'
            ? 'SCAN'
            : verb === 'deleting'
              ? 'DELETE'
              : verb === 'updating'
                ? 'UPDATE'
                : 'INSERT'
      this.oldLine(l, `${m[1]} ${m[3]}${m[4]}`, op, m[2]!, m[5]!)
      return true
    }
    if ((m = OLD_RUNNING.exec(msg)) !== null) {
      const name = m[1]!
      const op: Operation | undefined = /Write/i.test(name)
        ? 'INSERT'
        : /Scan/i.test(name)
          ? 'SCAN'
          : /Read/i.test(name)
            ? 'READ'
            : undefined
      this.oldLine(l, name, op, m[2]!, m[3]!)
      return true
    }
    return false
  }

  protected summary(l: LogLine, m: RegExpExecArray): boolean {
    const name = m[1]!
    const key = peTest(name)?.className ?? name
    const t = this.open.get(key)
    const timings =
      m[2]!.trim() === '' ? [] : m[2]!.split(',').map((x) => this.count(l, x.trim(), 'a timing', 0, MAX_DURATION_MS))
    if (t === undefined) {
      this.fail(
        l.line,
        `PE's summary of ${name} (${timings.length} clients), but no client of ${name} finished before it: the ` +
          'output is cut or out of order',
      )
    }
    t.printed.timingsMs = timings
    this.close(t)
    this.open.delete(key)
    this.lastSummarized = t
    return true
  }

  /** The clients of a test, checked against each other and against PE's own summary of it. */
  protected close(t: OpenTest): void {
    if (t.clients.length > 0) return
    const threaded = [...t.threads.values()]
    for (const s of threaded) {
      if (!s.finished)
        this.fail(
          s.client.line,
          `${s.client.name} of ${t.test} never finished (no "Finished ${s.client.name} in ...ms over N rows" ` +
            'line): the output is cut, or PE failed',
        )
      this.threads.delete(s.client.name)
    }
    if (threaded.length > 0) {
      // In PE's order of clients (TestClient-0, -1, ..., -10), not the order they finished in.
      t.clients = threaded.map((s) => s.client).sort((a, b) => a.name.localeCompare(b.name, 'en', { numeric: true }))
      t.form = t.clients.some((c) => c.latency !== undefined) ? 'current' : 'old'
      const noLatency = t.clients.filter((c) => c.latency === undefined)
      if (t.form === 'current' && noLatency.length > 0)
        this.fail(
          noLatency[0]!.line,
          `${noLatency[0]!.name} of ${t.test} printed no "Latency (us)" line while other clients did`,
        )
    } else t.clients = t.unthreaded
    const timings = t.printed.timingsMs
    if (timings !== undefined) {
      const mine = t.clients.map((c) => c.durationMs).sort((a, b) => a - b)
      const theirs = [...timings].sort((a, b) => a - b)
      if (mine.length !== theirs.length || mine.some((v, i) => v !== theirs[i]))
        this.fail(
          t.line,
          `${t.test}: PE's summary lists ${timings.length} client timings (${timings.join(', ')} ms) but ` +
            `${t.clients.length} clients finished in ${mine.join(', ')} ms: two runs mixed in one file, or a cut one`,
        )
    }
  }

  protected oldLine(l: LogLine, test: string, op: Operation | undefined, rowsText: string, msText: string): void {
    if (this.tests.length >= MAX_PE_TESTS) this.fail(l.line, `more than ${MAX_PE_TESTS} tests in one file; split it`)
    const rows = this.count(l, rowsText, 'the number of rows', 0)
    // Each such line is a whole test of one client: a test printed twice is two runs.
    this.tests.push({
      test,
      command: undefined,
      op,
      form: 'old',
      clients: [
        {
          name: 'client-1',
          rows,
          operations: rows,
          durationMs: this.count(l, msText, 'the duration', 0, MAX_DURATION_MS),
          offset: undefined,
          mbPerSec: undefined,
          latency: undefined,
          line: l.line,
        },
      ],
      options: {},
      printed: { timingsMs: undefined, avgLatencyUs: undefined, rowsPerSec: undefined },
      line: l.line,
      threads: new Map(),
      unthreaded: [],
    })
  }
}
