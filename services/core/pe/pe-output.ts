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
 */
import type { Operation } from '../../../schemas/events.v1.js'
import { decodeError, excerpt } from '../ycsb/text-input.js'
import { peTest } from './pe-tests.js'

/** Largest file read (PE's output is kilobytes; status lines of a long run megabytes). */
export const MAX_PE_FILE_BYTES = 64 * 1024 * 1024
/** Most clients of one test (`hbase pe ... <nclients>`; PE's own tests use a few hundred). */
export const MAX_PE_CLIENTS = 4096
/** Most tests in one file (a shell loop appending one run after another). */
export const MAX_PE_TESTS = 1000
/**
 * Latencies PE keeps per client: a UniformReservoir of 1024 * 500 (TestBase.testSetup). Beyond that its mean,
 * min, max and percentiles are those of a uniform sample of the client's latencies.
 */
export const PE_RESERVOIR = 1024 * 500
/** Longest duration accepted: ten years in ms (the SUMMARY_REPORT limit). */
const MAX_DURATION_MS = 10 * 365 * 86400e3
/** Largest latency accepted, µs (the SUMMARY_REPORT limit). */
const MAX_LATENCY_US = 1e15

/** One printed percentile of a client's latencies. */
export interface PePercentile {
  /** In percent: 50, 99.9. */
  percentile: number
  valueUs: number
  /** As printed: `99.9th`. */
  label: string
}

/** A client's `Latency (us) : ...` line and its `Num measures (latency)`. */
export interface PeLatency {
  /** How many latencies PE recorded (`Num measures (latency)`): one less than the rows by default (PE skips row 0). */
  measures: number | undefined
  meanUs: number
  minUs: number
  maxUs: number
  stdDevUs: number
  percentiles: PePercentile[]
  /**
   * True when PE recorded more latencies than its reservoir keeps (PE_RESERVOIR): mean, min, max and percentiles
   * are then over a uniform sample of them, as PE printed them.
   */
  sampled: boolean
  line: number
}

/** One client of a test: a thread of `--nomapred` (TestClient-N), a map task, or the one client of an old line. */
export interface PeClient {
  /** `TestClient-0`; for the old form's lines, `client-<n>` in the order printed. */
  name: string
  /** Rows PE gave the client (`for R rows`, `over R rows`). */
  rows: number
  /**
   * Operations it ran: the rows, times PE's `--cycles`, and when PE sampled (`--sampleRate`, its `Sampling 1 every
   * N` line) only the rows it sampled: the multiples of N in [offset, offset + rows).
   */
  operations: number
  durationMs: number
  /** Its first row (`at offset O`), when printed. */
  offset: number | undefined
  /** PE's `(x MB/s)` of the client, when printed. */
  mbPerSec: number | undefined
  latency: PeLatency | undefined
  line: number
}

/** One PE test in a file, with its clients. */
export interface PeTest {
  /** As printed: the class's simple name (`RandomReadTest`), a command (`randomRead`), or an old line's words. */
  test: string
  /** The command a user types (`randomRead`), when the test is one of PE's. */
  command: string | undefined
  /** Benchstream's operation, when the test says which (pe-tests.ts); undefined for a test PE does not ship. */
  op: Operation | undefined
  /** `current`: latency summaries per client; `old`: a time and a row count per client. */
  form: 'current' | 'old'
  clients: PeClient[]
  /**
   * The options PE ran it with (its `RandomReadTest test run options={...}` line, PE 1.1 on): scalar values as
   * text, by PE's names (`valueSize`, `perClientRunRows`, `numClientThreads`, ...); empty when not printed.
   */
  options: Record<string, string>
  /** PE's own summary lines of the test, as printed (not used for any figure; checked against the clients). */
  printed: {
    timingsMs: number[] | undefined
    avgLatencyUs: number | undefined
    rowsPerSec: number | undefined
  }
  /** Line where the test's output starts. */
  line: number
}

export interface PeOutput {
  kind: 'pe'
  source: string
  tests: PeTest[]
  /** Lines that are none of PE's result lines (its chatter, other loggers, the pretty histogram). */
  ignoredLines: number
}

/** The thread and message of a log line, or the line itself when it has no prefix. */
interface LogLine {
  thread: string | undefined
  msg: string
  line: number
}

const PE_PREFIX = /^.*?(?:\[([^\]\s]+)\]\s+)?[\w.$]*PerformanceEvaluation(?:\(\d+\))?:\s?(.*)$/
/** Any log4j/commons-logging prefix: `08/01/12 10:01:02 INFO hbase.Foo: `, `... INFO  [main] foo.Bar(12): `. */
const ANY_PREFIX = /^.*?\b(?:TRACE|DEBUG|INFO|WARN|ERROR|FATAL)\s+(?:\[([^\]\s]+)\]\s+)?[\w.$]+(?:\(\d+\))?:\s?(.*)$/

const OPTIONS = /^(\S+) test run options=(\{.*\})\s*$/
/** Longest options line read (PE's is about 1 KB), and most options kept. */
const MAX_OPTIONS_CHARS = 64 * 1024
const MAX_OPTIONS = 128
const START = /^Start (?:class )?(\S+) at offset (\d+) for (\d+) rows\s*$/
const SAMPLING = /^Sampling 1 every (\d+) out of (\d+) total rows\.?\s*$/
const CYCLE = /^Cycle=(\d+) of (\d+)\s*$/
const TEST_THREAD = /^Test : (\S+), Thread : (\S+)\s*$/
const LATENCY = /^Latency \(us\) : (.*)$/
const MEASURES = /^Num measures \(latency\) : (\S+)\s*$/
const FINISHED_CLASS =
  /^Finished (?!\S+ in \S+ over )(?:class )?(\S+) in (\S+?)ms at offset (\S+)(?: for (\S+) rows)?(?: \((\S+) MB\/s\))?/
const FINISHED_THREAD = /^Finished (\S+) in (\S+?)ms over (\S+) rows\s*$/
const SUMMARY = /^\[(\S+)\] Summary of timings \(ms\): \[([^\]]*)\]\s*$/
const DURATION = /^\[(\S+) duration \]\s+Min: (\S+)ms\s+Max: (\S+)ms\s+Avg: (\S+)ms\s*$/
const AVG_LATENCY = /^\[ Avg latency \(us\)\]\s+(\S+)\s*$/
const AVG_TPS = /^\[ Avg TPS\/QPS\]\s+(\S+)\s+row per second\s*$/
const OLD_TOOK = new RegExp(
  '^(Writing|Inserting|Updating|Reading|Scanning|Deleting) (\\d+) ((?:[A-Za-z-]+ )*?)(records|rows) ' +
    'took (\\d+) ?ms\\.?\\s*$',
  'i',
)
const OLD_RUNNING = /^Running (\w+) for (\d+) rows took (\d+) ?ms\.?\s*$/
/** What PE's Latency line holds, in its order (YammerHistogramUtils.getHistogramReport). */
const LATENCY_KEYS = ['mean', 'min', 'max', 'stdDev', '50th', '75th', '95th', '99th', '99.9th', '99.99th', '99.999th']

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

interface ThreadState {
  test: OpenTest
  client: PeClient
  sampleEvery: number
  cycles: number
  finishedClassLine: number | undefined
  finished: boolean
}

interface OpenTest extends PeTest {
  /** Threads of this test, by name. */
  threads: Map<string, ThreadState>
  /** `Finished <test> in ...` lines that name no thread: the clients of the old form. */
  unthreaded: PeClient[]
}

class PeReader {
  private readonly tests: OpenTest[] = []
  /** Tests whose summary has not been printed yet, by class or command name. */
  private readonly open = new Map<string, OpenTest>()
  /** Each thread's client of the test it is running. */
  private readonly threads = new Map<string, ThreadState>()
  /** The thread a `Test : X, Thread : T` line named: the Latency and Num measures lines after it are T's. */
  private context: ThreadState | undefined
  /** The test PE summarized last: its `[ Avg latency (us)]` and `[ Avg TPS/QPS]` lines follow. */
  private lastSummarized: OpenTest | undefined
  private ignored = 0

  constructor(private readonly source: string) {}

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

  private fail(line: number, what: string): never {
    throw decodeError(this.source, line, what)
  }

  private logLine(raw: string, line: number): LogLine | undefined {
    const trimmed = raw.trim()
    if (trimmed === '') return undefined
    const pe = PE_PREFIX.exec(trimmed)
    if (pe !== null) return { thread: pe[1], msg: pe[2]!.trim(), line }
    const any = ANY_PREFIX.exec(trimmed)
    if (any !== null) return { thread: any[1], msg: any[2]!.trim(), line }
    return { thread: undefined, msg: trimmed, line }
  }

  /** Reads one line; false when it is none of PE's result lines. */
  private line(l: LogLine): boolean {
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

  /** The test of this name that is still running, or a new one. */
  private testNamed(name: string, line: number, form: PeTest['form']): OpenTest {
    const known = peTest(name)
    const key = known?.className ?? name
    let t = this.open.get(key)
    if (t === undefined) {
      if (this.tests.length >= MAX_PE_TESTS) this.fail(line, `more than ${MAX_PE_TESTS} tests in one file; split it`)
      t = {
        test: name,
        command: known?.command,
        op: known?.op,
        form,
        clients: [],
        options: {},
        printed: { timingsMs: undefined, avgLatencyUs: undefined, rowsPerSec: undefined },
        line,
        threads: new Map(),
        unthreaded: [],
      }
      this.open.set(key, t)
      this.tests.push(t)
    }
    return t
  }

  private thread(l: LogLine, name: string, test: string): ThreadState {
    let s = this.threads.get(name)
    if (s !== undefined && !s.finished) return s
    const t = this.testNamed(test, l.line, 'current')
    if (t.threads.has(name))
      this.fail(l.line, `${name} starts ${test} a second time before PE summarized it ("Summary of timings")`)
    if (t.threads.size >= MAX_PE_CLIENTS) this.fail(l.line, `more than ${MAX_PE_CLIENTS} clients in one test`)
    s = {
      test: t,
      client: {
        name,
        rows: 0,
        operations: 0,
        durationMs: Number.NaN,
        offset: undefined,
        mbPerSec: undefined,
        latency: undefined,
        line: l.line,
      },
      sampleEvery: 1,
      cycles: 1,
      finishedClassLine: undefined,
      finished: false,
    }
    t.threads.set(name, s)
    this.threads.set(name, s)
    return s
  }

  private threadOf(l: LogLine): ThreadState | undefined {
    if (l.thread === undefined) return undefined
    const s = this.threads.get(l.thread)
    return s === undefined || s.finished ? undefined : s
  }

  /** `RandomReadTest test run options={...}` (main thread, before any client starts): a new test and its options. */
  private options(l: LogLine, m: RegExpExecArray): boolean {
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

  private start(l: LogLine, m: RegExpExecArray): boolean {
    if (l.thread === undefined) return true
    const s = this.thread(l, l.thread, simpleName(m[1]!))
    s.client.offset = this.count(l, m[2]!, 'the offset', 0)
    s.client.rows = this.count(l, m[3]!, 'the number of rows', 0)
    return true
  }

  private latency(l: LogLine, text: string): boolean {
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

  private finishedThread(l: LogLine, m: RegExpExecArray): boolean {
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

  private finish(s: ThreadState, l: LogLine, durationMs: number, rows: number): void {
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

  private lastOpenTest(l: LogLine): OpenTest {
    const open = [...this.open.values()]
    if (open.length === 1) return open[0]!
    this.fail(
      l.line,
      open.length === 0
        ? `"${l.msg.slice(0, 60)}" names a client of no test: no "Start", "Test : ..." or other line of its ` +
            'test before it'
        : `"${l.msg.slice(0, 60)}" could belong to any of ${open.length} tests running at once (${open
            .map((t) => t.test)
            .join(', ')}); keep PE's log prefixes ([TestClient-0]) so each line names its thread`,
    )
  }

  private finishedClass(l: LogLine, m: RegExpExecArray): boolean {
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

  private summary(l: LogLine, m: RegExpExecArray): boolean {
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
  private close(t: OpenTest): void {
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

  private oldLine(l: LogLine, test: string, op: Operation | undefined, rowsText: string, msText: string): void {
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

  /** A whole number in [min, max]. */
  private count(l: LogLine, text: string, what: string, min: number, max = Number.MAX_SAFE_INTEGER): number {
    const v = /^\d{1,16}$/.test(text) ? Number(text) : Number.NaN
    if (!Number.isSafeInteger(v) || v < min || v > max)
      this.fail(l.line, `${what} is ${excerpt(text, 30)}; expected a whole number from ${min} to ${max}`)
    return v
  }

  /**
   * A number as PE's DecimalFormat("#0.00") prints it: digits, a decimal point, or a decimal comma where the JVM's
   * locale uses one (`1018,96`); finite, >= 0 and at most max.
   */
  private number(l: LogLine, text: string, what: string, max = Number.MAX_VALUE): number {
    const t = /^\d{1,20}(?:,\d{1,12})?$/.test(text) ? text.replace(',', '.') : text
    const v = /^\d{1,20}(?:\.\d{1,12})?$/.test(t) ? Number(t) : Number.NaN
    if (!Number.isFinite(v) || v > max)
      this.fail(l.line, `${what} is ${excerpt(text, 30)}; expected a number >= 0 such as 1018.96, at most ${max}`)
    return v
  }
}

/** `org.apache.hadoop.hbase.PerformanceEvaluation$RandomReadTest` -> `RandomReadTest`. */
function simpleName(name: string): string {
  return name.slice(Math.max(name.lastIndexOf('$'), name.lastIndexOf('.')) + 1)
}

/** Rows PE tests of [offset, offset + rows) when it samples every n-th row index (i % n == 0). */
export function sampledRows(offset: number, rows: number, n: number): number {
  if (n <= 1) return rows
  return Math.ceil((offset + rows) / n) - Math.ceil(offset / n)
}
