/**
 * The lines of PerformanceEvaluation's output that the reader (pe-output.ts)
 * knows, as patterns, both forms: today's per-client lines (`Latency (us)`,
 * `Finished TestClient-N in Xms over R rows`, PE's summary of a test) and the
 * old form's (`Reading N random records took N ms`); the log line they
 * stand in once its prefix is read; and the small functions on their words.
 */

/** Longest duration accepted: ten years in ms (the SUMMARY_REPORT limit). */
export const MAX_DURATION_MS = 10 * 365 * 86400e3
/** Largest latency accepted, µs (the SUMMARY_REPORT limit). */
export const MAX_LATENCY_US = 1e15

/** The thread and message of a log line, or the line itself when it has no prefix. */
export interface LogLine {
  thread: string | undefined
  msg: string
  line: number
}

export const PE_PREFIX = /^.*?(?:\[([^\]\s]+)\]\s+)?[\w.$]*PerformanceEvaluation(?:\(\d+\))?:\s?(.*)$/
/** Any log4j/commons-logging prefix: `08/01/12 10:01:02 INFO hbase.Foo: `, `... INFO  [main] foo.Bar(12): `. */
export const ANY_PREFIX =
  /^.*?\b(?:TRACE|DEBUG|INFO|WARN|ERROR|FATAL)\s+(?:\[([^\]\s]+)\]\s+)?[\w.$]+(?:\(\d+\))?:\s?(.*)$/

export const OPTIONS = /^(\S+) test run options=(\{.*\})\s*$/
/** Longest options line read (PE's is about 1 KB), and most options kept. */
export const MAX_OPTIONS_CHARS = 64 * 1024
export const MAX_OPTIONS = 128
export const START = /^Start (?:class )?(\S+) at offset (\d+) for (\d+) rows\s*$/
export const SAMPLING = /^Sampling 1 every (\d+) out of (\d+) total rows\.?\s*$/
export const CYCLE = /^Cycle=(\d+) of (\d+)\s*$/
export const TEST_THREAD = /^Test : (\S+), Thread : (\S+)\s*$/
export const LATENCY = /^Latency \(us\) : (.*)$/
export const MEASURES = /^Num measures \(latency\) : (\S+)\s*$/
export const FINISHED_CLASS =
  /^Finished (?!\S+ in \S+ over )(?:class )?(\S+) in (\S+?)ms at offset (\S+)(?: for (\S+) rows)?(?: \((\S+) MB\/s\))?/
export const FINISHED_THREAD = /^Finished (\S+) in (\S+?)ms over (\S+) rows\s*$/
export const SUMMARY = /^\[(\S+)\] Summary of timings \(ms\): \[([^\]]*)\]\s*$/
export const DURATION = /^\[(\S+) duration \]\s+Min: (\S+)ms\s+Max: (\S+)ms\s+Avg: (\S+)ms\s*$/
export const AVG_LATENCY = /^\[ Avg latency \(us\)\]\s+(\S+)\s*$/
export const AVG_TPS = /^\[ Avg TPS\/QPS\]\s+(\S+)\s+row per second\s*$/
export const OLD_TOOK = new RegExp(
  '^(Writing|Inserting|Updating|Reading|Scanning|Deleting) (\\d+) ((?:[A-Za-z-]+ )*?)(records|rows) ' +
    'took (\\d+) ?ms\\.?\\s*$',
  'i',
)
export const OLD_RUNNING = /^Running (\w+) for (\d+) rows took (\d+) ?ms\.?\s*$/
/** What PE's Latency line holds, in its order (YammerHistogramUtils.getHistogramReport). */
export const LATENCY_KEYS = [
  'mean',
  'min',
  'max',
  'stdDev',
  '50th',
  '75th',
  '95th',
  '99th',
  '99.9th',
  '99.99th',
  '99.999th',
]

/** `org.apache.hadoop.hbase.PerformanceEvaluation$RandomReadTest` -> `RandomReadTest`. */
export function simpleName(name: string): string {
  return name.slice(Math.max(name.lastIndexOf('$'), name.lastIndexOf('.')) + 1)
}

/** Rows PE tests of [offset, offset + rows) when it samples every n-th row index (i % n == 0). */
export function sampledRows(offset: number, rows: number, n: number): number {
  if (n <= 1) return rows
  return Math.ceil((offset + rows) / n) - Math.ceil(offset / n)
}
