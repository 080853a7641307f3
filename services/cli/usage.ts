/**
 * Help texts of the subcommands, apart from their code: `--help` must
 * answer at once, without loading Kafka, ClickHouse or OpenTelemetry.
 */
import { OPERATIONS } from '../../schemas/events.v1.js'

export const DEMO_USAGE = `usage: benchstream demo [--seconds N] [--target OPS] [--threads N] [--records N] [--workload FILE] [--threshold EXPR]...
  Starts Kafka (unless KAFKA_BROKERS is set), the processor and the API with the
  embedded ClickHouse, runs one driver against the embedded store, prints a live
  line every second read back from ClickHouse, then the merged report and checks.
  --seconds N       run time, 1 to 86400 (default 30)
  --target OPS      throughput target, 0 = unthrottled (default 20000)
  --threads N       driver threads, 1 to 100000 (default 8)
  --records N       records loaded first, 1 to 100000000 (default 100000)
  --workload FILE   YCSB workload file (default workloads/workloada)
  --threshold EXPR  pass/fail criterion on the merged report, e.g. 'READ.p99<2ms'
                    (repeatable; exit code 99 when one fails; benchstream help thresholds)`

export const READ_USAGE = {
  report: `usage: benchstream report <run-id> [--json] [--threshold EXPR]...
  The run's report merged over its clients, in YCSB's layout (with
  [Intended-OP] sections when the run had a target), or JSON.
  --json              the report as JSON (the API's shape)
  --threshold EXPR    pass/fail criterion, e.g. 'READ.p99<2ms' (repeatable; exit code 99
                      when one fails; see benchstream help thresholds)
  List run ids with benchstream runs.`,
  sql: `usage: benchstream sql [--json] "SELECT ..."
  One read-only query over the benchmark data (database benchstream: op_windows,
  runs, run_summary, op_percentiles, ...). Printed as clickhouse-client prints it:
  a table on a terminal, TSV into a pipe, JSON with --json, or the query's own
  FORMAT clause. Limits: API_MAX_QUERY_ROWS, API_QUERY_MAX_BYTES, API_QUERY_TIMEOUT_MS.
  --json              JSON output (ClickHouse's JSON format)`,
  runs: `usage: benchstream runs [--json]
  The most recent runs: id, start, workload, binding, operations, labels.
  --json              as JSON`,
} as const

export const IMPORT_YCSB_USAGE = `usage: benchstream import-ycsb --run-id R --client-id C [--label k=v]... [--kafka-brokers host:port,...] OP=FILE [OP=FILE...]

  OP    one of ${OPERATIONS.join(', ')} (case-insensitive)
  FILE  an HdrHistogram interval log written by YCSB, e.g. READ=ycsb-READ.hdr
        (YCSB: -p measurementtype=hdrhistogram -p hdrhistogram.fileoutput=true -p hdrhistogram.output.path=ycsb-)
  Latencies are taken as microseconds (YCSB's unit).`
