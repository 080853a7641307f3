/**
 * The state of one reading of PerformanceEvaluation's output (pe-output.ts):
 * the tests read so far, the ones PE has not summarized yet, each thread's
 * client, and how a line finds its test and client; with the checks on the
 * numbers a line holds. PeClientLines (pe-client-lines.ts) and PeReader
 * (pe-output.ts) extend it; it is apart so that each stays one concept.
 */
import { decodeError, excerpt } from '../ycsb/text-input.js'
import { ANY_PREFIX, PE_PREFIX, type LogLine } from './pe-lines.js'
import { MAX_PE_CLIENTS, MAX_PE_TESTS, type PeClient, type PeTest } from './pe-result.js'
import { peTest } from './pe-tests.js'

export interface ThreadState {
  test: OpenTest
  client: PeClient
  sampleEvery: number
  cycles: number
  finishedClassLine: number | undefined
  finished: boolean
}

export interface OpenTest extends PeTest {
  /** Threads of this test, by name. */
  threads: Map<string, ThreadState>
  /** `Finished <test> in ...` lines that name no thread: the clients of the old form. */
  unthreaded: PeClient[]
}

/** What a reading knows between lines; the line handlers of its subclasses read and change it. */
export abstract class PeReaderState {
  protected readonly tests: OpenTest[] = []
  /** Tests whose summary has not been printed yet, by class or command name. */
  protected readonly open = new Map<string, OpenTest>()
  /** Each thread's client of the test it is running. */
  protected readonly threads = new Map<string, ThreadState>()
  /** The thread a `Test : X, Thread : T` line named: the Latency and Num measures lines after it are T's. */
  protected context: ThreadState | undefined
  /** The test PE summarized last: its `[ Avg latency (us)]` and `[ Avg TPS/QPS]` lines follow. */
  protected lastSummarized: OpenTest | undefined
  protected ignored = 0

  constructor(protected readonly source: string) {}

  protected fail(line: number, what: string): never {
    throw decodeError(this.source, line, what)
  }

  protected logLine(raw: string, line: number): LogLine | undefined {
    const trimmed = raw.trim()
    if (trimmed === '') return undefined
    const pe = PE_PREFIX.exec(trimmed)
    if (pe !== null) return { thread: pe[1], msg: pe[2]!.trim(), line }
    const any = ANY_PREFIX.exec(trimmed)
    if (any !== null) return { thread: any[1], msg: any[2]!.trim(), line }
    return { thread: undefined, msg: trimmed, line }
  }

  /** The test of this name that is still running, or a new one. */
  protected testNamed(name: string, line: number, form: PeTest['form']): OpenTest {
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

  protected thread(l: LogLine, name: string, test: string): ThreadState {
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

  protected threadOf(l: LogLine): ThreadState | undefined {
    if (l.thread === undefined) return undefined
    const s = this.threads.get(l.thread)
    return s === undefined || s.finished ? undefined : s
  }

  protected lastOpenTest(l: LogLine): OpenTest {
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

  /** A whole number in [min, max]. */
  protected count(l: LogLine, text: string, what: string, min: number, max = Number.MAX_SAFE_INTEGER): number {
    const v = /^\d{1,16}$/.test(text) ? Number(text) : Number.NaN
    if (!Number.isSafeInteger(v) || v < min || v > max)
      this.fail(l.line, `${what} is ${excerpt(text, 30)}; expected a whole number from ${min} to ${max}`)
    return v
  }

  /**
   * A number as PE's DecimalFormat("#0.00") prints it: digits, a decimal point, or a decimal comma where the JVM's
   * locale uses one (`1018,96`); finite, >= 0 and at most max.
   */
  protected number(l: LogLine, text: string, what: string, max = Number.MAX_VALUE): number {
    const t = /^\d{1,20}(?:,\d{1,12})?$/.test(text) ? text.replace(',', '.') : text
    const v = /^\d{1,20}(?:\.\d{1,12})?$/.test(t) ? Number(t) : Number.NaN
    if (!Number.isFinite(v) || v > max)
      this.fail(l.line, `${what} is ${excerpt(text, 30)}; expected a number >= 0 such as 1018.96, at most ${max}`)
    return v
  }
}
