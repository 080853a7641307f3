/**
 * What the reader of HBase PerformanceEvaluation's output (pe-output.ts)
 * returns: one PeTest per test in the file, its clients and their latency
 * summaries as PE printed them; and the limits on what it reads.
 */
import type { Operation } from '../../../schemas/events.v1.js'

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
