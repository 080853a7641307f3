/**
 * Help texts of the subcommands, apart from their code: `--help` must
 * answer at once, without loading Kafka, ClickHouse or OpenTelemetry.
 */
import { OPERATIONS } from '../../schemas/events.v1.js'

export const DEMO_USAGE = `usage: benchstream demo [--system memory|hbase] [--seconds N] [--target OPS] [--threads N]
                        [--records N] [--workload FILE] [--threshold EXPR]...
  Starts Kafka (unless KAFKA_BROKERS is set), the processor and the API with the
  embedded ClickHouse, runs a workload, prints a live line every second read back
  from ClickHouse, then the merged report and checks. The server's own log
  lines go to <BENCHSTREAM_DATA_DIR>/demo.log (its warnings also to stderr
  while the run goes on).
  --system memory   (default) Benchstream's driver against the embedded store
  --system hbase    a real HBase 2 (deploy/local/hbase.sh; HBASE_VERSION, HBASE_ZK_PORT,
                    HBASE_MASTER_PORT, HBASE_RS_PORT, HBASE_RS_INFO_PORT as there) and real
                    YCSB 0.17.0 through the bridge (benchstream ycsb -db hbase): load, flush,
                    run; the region server's block cache sampled every second, a CPU profile
                    of the HBase JVM (async-profiler) attached to the run; prints YCSB's report
                    beside Benchstream's, the block cache hit ratio and the flame graph's file.
                    Java 17+ and Maven (first run: the jars). npm run demo:hbase
  --seconds N       run time, 1 to 86400 (default 30)
  --target OPS      throughput target, 0 = unthrottled (default: a tenth of what the driver
                    runs unthrottled in a 2 s probe on this machine, 200 to 20000, said with
                    the probe's figure; hbase: 0)
  --threads N       driver (YCSB) threads, 1 to 100000 (default 8)
  --records N       records loaded first, 1 to 100000000 (default 100000; hbase: 10000)
  --workload FILE   YCSB workload file (default workloads/workloada)
  --threshold EXPR  pass/fail criterion on the merged report, e.g. 'READ.p99<2ms'
                    (repeatable; exit code 99 when one fails; benchstream help thresholds)`

export const READ_USAGE = {
  report: `usage: benchstream report <run-id> [--json] [--threshold EXPR]...
  The run's report merged over its clients, in YCSB's layout (with
  [Intended-OP] sections when the run had a target), or JSON. A summary run
  (imported YCSB reports only) shows YCSB's figures as printed, marked
  [BENCHSTREAM], Origin, reported: merged over clients where that is exact
  (counts, throughput, weighted averages, min of mins, max of maxes), and with
  several clients each client's report, percentiles included, as printed.
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
  runs: `usage: benchstream runs [--group NAME] [--label KEY=VALUE]... [--limit N] [--json]
  The most recent runs, newest first: id, start, workload, binding, clients, target
  ("reported" for a summary run: YCSB's reports as printed), group and repetition, labels.
  --group NAME        only the runs of this group of repetitions (run --group/--repeat)
  --label KEY=VALUE   only runs with this label value (repeatable: all must match)
  --limit N           at most N runs, 1 to 1000 (default 100)
  --json              as JSON (the runs view's rows: properties, group, repeat, ...)`,
} as const

export const ALERTS_USAGE = `usage: benchstream alerts [--run R] [--state firing|resolved] [--rule NAME] [--since WHEN]
                          [--limit N] [--json] [--follow]
       benchstream alerts silence (--rule NAME | --run R | --op OP | --severity S)...
                          [--for DURATION | --until TIME] [--from TIME] [--comment TEXT] [--by NAME] [--json]
       benchstream alerts silences [--all] [--json]
       benchstream alerts expire ID [--json]
  Alerts the evaluator raised (one line per incident, newest first: state, start, end,
  rule, severity, run, operation, why), read through a running server or ClickHouse.
  --run R             only alerts of this run
  --state S           firing (open now) or resolved
  --rule NAME         only this rule (the alertname label)
  --since WHEN        only alerts firing at some time since WHEN: an ISO 8601 time or a
                      duration back from now (90s, 30m, 2h, 7d)
  --limit N           at most N alerts, 1 to 10000 (default 100)
  --json              as JSON (the API's shape; with --follow one object per line)
  --follow            then print every transition (firing, resolved) as it is published
                      on the alerts topic (KAFKA_BROKERS, BENCHSTREAM_TOPIC_ALERTS), until
                      Ctrl-C; the filters apply to it too
  silence: hold the webhook back for alerts matching every given flag (Alertmanager's
  model; silenced alerts are still stored and listed, marked "silenced by ID").
  --rule, --run, --op, --severity   what to match (at least one)
  --for DURATION      for this long from the start (90s, 30m, 2h, 7d)
  --until TIME        until this ISO 8601 time
  --from TIME         start later than now (ISO 8601 or a duration ahead)
                      without --for/--until a silence needs --run and lasts as long as that run
  --comment TEXT      why; --by NAME who (default: this user)
  silences: the active and pending silences (--all: expired ones too).
  expire ID: end a silence now.`

export const COMPARE_USAGE = `usage: benchstream compare BASELINE CANDIDATE [--format terminal|markdown|json] [--force]
                           [--by KEY] [--alpha P] [--min-effect F] [--fail-on-regression]
  Release A vs release B, per workload and operation: throughput, avg, p50, p95, p99,
  p99.9, max, error rate and cache-hit ratio, each with its spread over the runs, the
  change, and a verdict: regression, improvement or ~ (no significant change), with p
  and the sample counts (benchstat's layout). Summary runs (imported YCSB reports) are
  compared on what their reports hold: throughput, avg, min, max, each printed
  percentile (the median of a run's clients when it has several), errors; with 1 + 1
  runs both values and the change are shown, "n = 1 + 1: not testable".
  BASELINE, CANDIDATE  a run id, group:NAME (runs of benchstream run --repeat/--group),
                       or a label selector KEY=VALUE[,KEY=VALUE...] such as
                       version=0.98.0 or version=0.98.4,workload=e (workload= and group=
                       select by workload and group)
  Samples: with at least 3 runs a side, each run's figure is a sample (Welch's t-test
  for 3 + 3, Mann-Whitney U from 4 + 4); with fewer, the runs' one-second windows
  with a circular block bootstrap (the output says which). The p-values of all figures
  are adjusted together (Benjamini-Hochberg). Throttled runs that met their target say
  "at target" instead of a throughput verdict; below target is flagged.
  --format F          terminal (default: a table, coloured on a terminal), markdown (for a
                      release email or a JIRA comment) or json (also --json)
  --force             compare runs whose setups differ (properties, record count, threads,
                      target, duration, clients); without it they are refused, listed
  --by KEY            pair the runs by the value of label KEY instead of by workload (the
                      run's workload, else its workload label); never pooled across values
  --alpha P           significance level, greater than 0 and less than 1 (default 0.05)
  --min-effect F      smallest change called a regression or improvement, a fraction from
                      0 to below 1 (default 0.01 = 1%)
  --fail-on-regression  exit 99 when a figure regressed (or fell below its target)
  The headline says what was decided: what regressed, "nothing, of N tested figures", or
  "Undecided:" and why (figures not testable with their n, workloads one side lacks).
  Exit codes: 0 decided (every figure tested, every workload compared; regressions are in
  the headline), 5 undecided, 99 a regression with --fail-on-regression, 4 nothing to
  compare (BS_ERR_NOTHING_TO_COMPARE: no common workload, operation or figure; the message
  says which and what to do), 1 refused (BS_ERR_NOT_COMPARABLE: setups differ, or several
  runs of a side have no recorded workload) or failed, 2 usage error.`

export const HISTORY_USAGE = `usage: benchstream history --label KEY [--workload W] [--op OP] [--figure F]
                           [--filter KEY=VALUE]... [--format terminal|markdown|json]
  A figure over a release series: every run with the label KEY, one point per value in
  natural order (0.98.9 before 0.98.10), the median over that value's runs, and the
  change points of the series (E-divisive means, permutation test at 0.05).
  --label KEY         the label that orders the runs, e.g. version or date
  --workload W        only runs of this workload (workloade, or e)
  --op OP             an operation (READ, SCAN, ...) or OVERALL (default)
  --figure F          throughput (default), avg, min, p50, p90, p95, p99, p99.9, p99.99,
                      max, errors, error_rate, cache_hit_ratio (summary runs: the figures
                      their reports hold; a percentile of several clients is their median)
  --filter KEY=VALUE  only runs with this label value (repeatable)
  --format F          terminal (default), markdown or json (also --json)`

export const SWEEP_USAGE = `usage: benchstream sweep -P FILE (-threads A,B,... | -target A,B,... | -p KEY=A,B,...)
                         [driver options] [--out DIR] [--sweep-id ID]
  Runs the workload once per value of one parameter, back to back, each point a run
  labelled sweep=<id>, sweep.param=<parameter>, point=<value>; then prints throughput
  and p50/p95/p99 per point from the runs' merged reports, where throughput stops
  growing (saturation) and where p99 turns (the knee), and writes the chart as SVG.
  Needs a running server (benchstream server) or BENCHSTREAM_API_URL / CLICKHOUSE_URL.
  -threads A,B,...    thread counts to sweep (or -target, or any -p KEY=A,B,...;
                      exactly one parameter takes a list)
  --seconds N         length of each point (as for run; add -p operationcount=0)
  --out DIR           where the chart (sweep-<id>.svg), the table (sweep-<id>.txt) and
                      each point's YCSB report (<run-id>.txt) go (default: .)
  --sweep-id ID       the sweep's id (default: generated)
  Every other option is passed to benchstream run (see benchstream help run).`

export const IMPORT_YCSB_USAGE = `usage: benchstream import-ycsb --run-id R --client-id C [--label k=v]...
                               [--workload NAME | -P FILE...] [--kafka-brokers host:port,...]
                               [--dry-run] FILE|OP=FILE...
       benchstream import-ycsb --follow --run-id R --client-id C [--label k=v]... [--pid P]
                               [--idle-timeout S] PREFIX

  FILE   what a real YCSB client wrote, its format told from the content:
           a text report ([OVERALL], RunTime(ms), ...; also old (ms) percentiles, pasted
             or wrapped in a mail), or the JSON exporters' output: stored as reported
             figures per client (table reported_measurements), never merged into percentiles
           raw data (-p measurementtype=raw): one event per operation, start = completion - latency
           HdrHistogram interval logs (-p hdrhistogram.fileoutput=true), V0/V1/V2: one
             record per interval; Intended-OP logs fill OP's intended latency
         CLEANUP is reported, never counted as operations. Every file is checked before
         anything is sent; a malformed one is BS_ERR_DECODE naming file, line and what was expected.
  OP=FILE  an interval log whose file name does not say its measurement: OP is
         [Intended-]${OPERATIONS.join('|')} or CLEANUP
         (case-insensitive), e.g. read=client1.hlog
  --dry-run        read and check the files, print what would be sent, send nothing
  --workload NAME  the workload the run ran (e is workloade): compare pairs runs by it
  -P FILE          the workload file the run used, as YCSB takes it (repeatable): its name
                   is the workload (workloads/workloade: workloade), its properties are
                   recorded. Without either: a workload file next to the report
                   (<report>.properties, or the one workload* file holding YCSB workload
                   properties), else YCSB's "Command line: ... -P FILE" in the report
  --follow PREFIX  tail the logs a running YCSB writes under hdrhistogram.output.path=PREFIX
                   (PREFIXREAD.hdr, PREFIXIntended-READ.hdr, ...; a directory ends in /) and
                   send each interval as it appears; ends when process --pid exits, or after
                   --idle-timeout seconds without a new interval (default 60 without --pid)
  Several clients of one run: the same --run-id, each its own --client-id.
  Final reports alone make a summary run: benchstream report, compare, history, the
  API and the live view's picker show it, marked as reported.`
export const IMPORT_PE_USAGE = `usage: benchstream import-pe --run-id R --client-id C [--label k=v]... [--workload NAME]
                             [--test TEST] [--kafka-brokers host:port,...] [--dry-run] FILE

  FILE   what HBase's PerformanceEvaluation printed (hbase pe ... > FILE 2>&1: PE logs to stderr):
           today's form (HBase 1.x, 2.x, --nomapred): per client thread TestClient-N its rows, time
             and "Latency (us) : mean=..., min=..., max=..., 50th=..., ..., 99.999th=..." line
           the old form: "Finished randomRead in 129879ms at offset 0 for 1048576 rows" (PE 0.1
             to 0.20, and each map task's log), "Reading 100000 random records took 129879ms",
             "Running UniformRandomReadBenchmark for 100000 rows took 7418ms."
         Each PE client is a client of a summary run (figures as PE printed them, table
         reported_measurements): C with one PE client, C.TestClient-N with several. Operations,
         throughput, average (weighted), min and max merge exactly over clients; percentiles stay
         per client (not mergeable from summaries). The file is checked whole before anything is
         sent; a malformed result line is BS_ERR_DECODE naming file, line and what was expected.
  --test TEST      the test to import when the file holds several (randomRead, RandomReadTest, or
                   an old line's words): a run is one test
  --workload NAME  the workload the run records (default: PE's command, randomRead; an old line's
                   words, reading-random-records): compare pairs runs by it
  --dry-run        read and check the file, print what would be sent, send nothing
  Several machines of one run: one import each, the same --run-id, each its own --client-id.`
export const PE_USAGE = `usage: benchstream pe --command PATH --run-id R --client-id C [--label k=v]... [--group G]
                      [--repetition K] [--barrier stdin] [--expected-clients N] [--clock-offset-ms X]
                      [--server-metrics hbase=URL]... [--kafka-brokers B]
                      -- [-Dkey=value]... --nomapred [--option=value]... <test> <nclients>
  One client of a PE run (what an experiment's driver: pe has its agents start): runs HBase's
  PerformanceEvaluation as PATH pe <arguments> (PATH: HBase's bin/hbase, or deploy/local/hbase-pe.sh),
  then sends what it printed as the run's clients, as benchstream import-pe does (each PE client
  one: C, or C.TestClient-N with several). PE's output goes to stderr; stdout gets [OP], Operations, N.
  --command PATH        HBase's bin/hbase (run as PATH pe ...)
  --barrier stdin       print "benchstream-barrier: ready" on stderr, start PE at the instant of
                        "start <ms since epoch>" on stdin ("abort" calls it off); a closed stdin ends it
  --server-metrics hbase=URL
                        sample the region server's /jmx every second into the run while PE runs
  --expected-clients N  the run's clients as its experiment counts them (each runs <nclients>)
  --group G, --repetition K, --label k=v, --clock-offset-ms X: as benchstream ycsb takes them`
export const YCSB_USAGE = `usage: benchstream ycsb [--ycsb-home DIR] [--run-id R] [--client-id C] [--label k=v]...
                        [--threshold EXPR]... [--server-metrics hbase=URL] [--group G] [--repetition K]
                        [--barrier stdin] [--expected-clients N] [--clock-offset-ms X] -- <YCSB arguments>
  Runs real YCSB (site.ycsb.Client) with Benchstream's bridge in front of the binding named by
  -db, so every operation streams to Kafka as it happens (live view, Grafana, alerts), then prints
  YCSB's own report, Benchstream's merged report of the run read back through the API, and the
  counts per operation side by side. -s status lines pass through.
  YCSB arguments, as YCSB takes them: load|run [binding] or -load/-t, -db <binding>, -P <file>,
  -p key=value, -threads n, -target ops/s, -s. Bindings: redis, hbase (Benchstream's own YCSB DB
  classes; YCSB's site.ycsb.db.RedisClient / hbase2 names map to them), basic, basicts (YCSB core),
  or a class name on the class path.
  --ycsb-home DIR     a YCSB installation: its lib/ and <binding>-binding/ on the class path,
                      its bin/bindings.properties names (e.g. -db mongodb) accepted
  --classpath CP      more class path entries (a binding's jars outside an installation)
  --run-id R          run id shared by the clients of one run (default: generated)
  --client-id C       this client's id (default: <host>-<pid>)
  --label k=v         run label (repeatable; no "," in values)
  --kafka-brokers B   Kafka brokers (default: KAFKA_BROKERS or 127.0.0.1:9092)
  --topic T           event topic (default: BENCHSTREAM_TOPIC_EVENTS or benchstream.events.v1)
  --threshold EXPR    pass/fail criterion on the merged report, e.g. 'READ.p99<2ms' (repeatable;
                      exit code 99 when one fails; benchstream help thresholds)
  --report-wait S     seconds to wait for the server to count the whole run, 0 to 3600 (default 60)
  --server-metrics hbase=URL
                      during a run phase, sample the region server's block cache counters every
                      second from its info server (URL e.g. http://127.0.0.1:16030, /jmx optional)
                      into server_metrics: the report's ServerCacheHitRatio(hbase)
  --group G           group of repetitions this run belongs to (benchstream compare's samples)
  --repetition K      this run's number in its group, 1 to 100000
  --barrier stdin     get ready (Kafka, every client thread's DB connected), print
                      "benchstream-barrier: ready" on stderr, then start at the time read from stdin
                      ("start <ms since epoch>"; "abort" ends it); after the start, the end of stdin
                      ends YCSB and this command at once, with no end record: how an experiment's
                      agent starts every client of a run at one instant
  --expected-clients N  how many clients the run has, 1 to 1024 (recorded with the run)
  --clock-offset-ms X   this machine's clock offset from the broker's, as measured (recorded)
  YCSB core 0.17.0 and the bridge are built with Maven on first use and cached like the Kafka
  jars (deploy/local/ycsb.sh). Java 17+ (YCSB_JAVA_OPTS for JVM flags, default -Xmx1g).
  Example: benchstream ycsb -- run -db redis -P workloads/workloada -p redis.port=6379 -threads 8 -s`
