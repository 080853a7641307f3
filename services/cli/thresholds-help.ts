const SYNOPSIS = '--threshold <measurement>.<metric><operator><value>[unit]   (repeatable; run, demo, report)'

/**
 * `benchstream help thresholds`.
 */
export const THRESHOLDS_HELP = `${SYNOPSIS}

Pass/fail criteria on the run's merged report, as k6 does it. Each is printed
with the figure it was checked against (✓ or ✗); when one fails, the command
exits with code 99.

  measurement  OVERALL, READ, UPDATE, INSERT, SCAN, READ-MODIFY-WRITE, DELETE,
               their failures (READ-FAILED) and intended latency (Intended-READ)
  metric       latency: avg min max p50 p90 p95 p99 p99.9 p99.99 (also k6's p(99));
               a unit is required: us, ms or s
               throughput (ops/s), operations, errors (failed operations),
               error_rate (a fraction 0.01 or a percentage 1%)
               OVERALL has throughput, operations, errors and error_rate only
  operator     <  <=  >  >=  ==  !=

examples
  benchstream run -P workloads/workloada -target 10000 --seconds 60 \\
    --threshold 'READ.p99<2ms' --threshold 'OVERALL.throughput>9000'
  benchstream report <run-id> --threshold 'Intended-UPDATE.p99.9<=50ms' \\
    --threshold 'OVERALL.error_rate<0.1%'

\`run\` checks the merged run (all clients) when it can reach the Benchstream API
(BENCHSTREAM_API_URL, or a server on the same data directory); otherwise it
checks its own client's figures and says so.`
