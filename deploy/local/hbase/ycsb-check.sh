#!/usr/bin/env bash
# The whole workflow on a real HBase: start deploy/local/hbase.sh on a fresh data dir,
# run real YCSB 0.17.0 with io.benchstream.ycsb.hbase.HBaseClient, read the region
# server's block cache counters around each phase, stop. Prints figures; asserts only
# that the steps work (and, for 'outage', that YCSB ends in bounded time).
#
# Usage: deploy/local/hbase/ycsb-check.sh workloads|outage
#   workloads  load, flush, workload A, workload E; throughput and block cache hit ratio
#   outage     load, then stop HBase OUTAGE_AFTER s into workload A and time how long
#              operations take to fail and YCSB to end
#
# Environment: every hbase.sh variable (HBASE_VERSION, HBASE_*_PORT, HBASE_BLOCKCACHE_SIZE,
# HBASE_HANDLERS, ...; the RS info port must be on for the hit ratios), plus
#   RECORDS [10000]  OPS [20000]  E_OPS [$OPS]  THREADS [4]  OUTAGE_AFTER [15]
#   REGISTRY   how the client finds meta: rpc (bootstrap servers = master and region
#              server RPC ports) or zk (ZooKeeper quorum only, YCSB's usual way)  [rpc]
#   YCSB_ARGS  more YCSB arguments, split on spaces (e.g. "-p hbase.failfast.ms=0")  [none]
#   CHECK_OUT  where YCSB's reports go                     [a new temp dir, kept]
#   MAX_SECONDS  YCSB maxexecutiontime per phase            [600]
set -euo pipefail

SCRIPT_DIR="$(cd -P -- "$(dirname -- "${BASH_SOURCE[0]}")" && pwd)"
REPO_ROOT="$(cd -P -- "$SCRIPT_DIR/../../.." && pwd)"
HBASE_SH="$REPO_ROOT/deploy/local/hbase.sh"
YCSB_SH="$REPO_ROOT/services/ycsb/hbase/ycsb.sh"
WORKLOADS="$REPO_ROOT/workloads"

die() { echo "ycsb-check.sh: $*" >&2; exit 1; }
[[ $# -eq 1 && ( "$1" == workloads || "$1" == outage ) ]] || die "usage: ${0##*/} workloads|outage"
MODE="$1"

RECORDS="${RECORDS:-10000}"
OPS="${OPS:-20000}"
E_OPS="${E_OPS:-$OPS}"
THREADS="${THREADS:-4}"
OUTAGE_AFTER="${OUTAGE_AFTER:-15}"
MAX_SECONDS="${MAX_SECONDS:-600}"
export HBASE_ZK_PORT="${HBASE_ZK_PORT:-2181}"
export HBASE_RS_INFO_PORT="${HBASE_RS_INFO_PORT:-16030}"
CHECK_OUT="${CHECK_OUT:-$(mktemp -d "${TMPDIR:-/tmp}/hbase-ycsb-check.XXXXXX")}"
mkdir -p -- "$CHECK_OUT"
# A data dir of its own, so every check starts from an empty HBase.
export HBASE_DATA_DIR="${HBASE_DATA_DIR:-$CHECK_OUT/hbase-data}"

ycsb_props=(-p "recordcount=$RECORDS" -p hbase.zookeeper.quorum=127.0.0.1
  -p "hbase.zookeeper.property.clientPort=$HBASE_ZK_PORT" -p "maxexecutiontime=$MAX_SECONDS")
case "${REGISTRY:=rpc}" in
  rpc)
    ycsb_props+=(-p
      "hbase.client.bootstrap.servers=127.0.0.1:${HBASE_MASTER_PORT:-16000},127.0.0.1:${HBASE_RS_PORT:-16020}")
    ;;
  zk) ;;
  *) die "REGISTRY must be rpc or zk, got '$REGISTRY'" ;;
esac
read -r -a extra_args <<<"${YCSB_ARGS:-}"
ycsb_props+=("${extra_args[@]}")

cleanup() { "$HBASE_SH" stop >/dev/null 2>&1 || true; }
trap cleanup EXIT

# "<hits> <misses>" from the region server's /jmx (hbase.sh metrics).
cache_counts() {
  local line
  line="$("$HBASE_SH" metrics)"
  echo "$line" >>"$CHECK_OUT/metrics.jsonl"
  local h m
  h="$(sed -n 's/.*"blockCacheHitCount": *\([0-9]*\).*/\1/p' <<<"$line")"
  m="$(sed -n 's/.*"blockCacheMissCount": *\([0-9]*\).*/\1/p' <<<"$line")"
  echo "${h:-0} ${m:-0}"
}

ratio() { # h0 m0 h1 m1
  awk -v h=$(($3 - $1)) -v m=$(($4 - $2)) 'BEGIN {
    if (h + m == 0) printf "n/a (0 lookups)"; else printf "%.4f (%d hits, %d misses)", h / (h + m), h, m }'
}

throughput() { sed -n 's/^\[OVERALL\], Throughput(ops\/sec), \([0-9.]*\).*/\1/p' "$1" | awk '{ printf "%.1f", $1 }'; }
returns() {
  grep -E '^\[[A-Z-]+\], Return=' "$1" \
    | sed 's/^\[\([A-Z-]*\)\], Return=\([A-Z_]*\), \([0-9]*\)/\1 \2=\3/' \
    | paste -sd' ' -
}

ycsb() { # phase workload outfile [extra ycsb args...]
  local phase="$1" workload="$2" out="$3"
  shift 3
  "$YCSB_SH" "$phase" -P "$WORKLOADS/$workload" -threads "$THREADS" -s "${ycsb_props[@]}" "$@" \
    >"$out" 2>"${out%.txt}.err"
}

echo "HBase ${HBASE_VERSION:-2.5.10-hadoop3}, block cache ${HBASE_BLOCKCACHE_SIZE:-0.4}," \
  "handlers ${HBASE_HANDLERS:-30}; client registry $REGISTRY; $RECORDS records, $THREADS threads;" \
  "reports in $CHECK_OUT"
echo "load average: $(cut -d' ' -f1-3 /proc/loadavg) on $(nproc) cores"

t0=$(date +%s%N)
"$HBASE_SH" start >"$CHECK_OUT/start.txt" 2>&1 || { cat "$CHECK_OUT/start.txt" >&2; die "hbase.sh start failed"; }
echo "start (empty data dir, table created): $(( ($(date +%s%N) - t0) / 1000000 )) ms"

ycsb load workloada "$CHECK_OUT/load.txt" || die "YCSB load failed; see $CHECK_OUT/load.err"
echo "load: $(throughput "$CHECK_OUT/load.txt") ops/s; $(returns "$CHECK_OUT/load.txt")"
# Freshly loaded rows sit in the memstore, where reads never touch the block cache.
"$HBASE_SH" flush >/dev/null

if [[ "$MODE" == workloads ]]; then
  read -r h0 m0 < <(cache_counts)
  ycsb run workloada "$CHECK_OUT/a.txt" -p "operationcount=$OPS" || die "YCSB workload A failed; see $CHECK_OUT/a.err"
  sleep "${HBASE_METRICS_PERIOD:-1}"; sleep 1   # let the metrics catch up with the last requests
  read -r h1 m1 < <(cache_counts)
  echo "workload A: $(throughput "$CHECK_OUT/a.txt") ops/s; $(returns "$CHECK_OUT/a.txt");" \
    "block cache hit ratio $(ratio "$h0" "$m0" "$h1" "$m1")"
  ycsb run workloade "$CHECK_OUT/e.txt" -p "operationcount=$E_OPS" || die "YCSB workload E failed; see $CHECK_OUT/e.err"
  sleep "${HBASE_METRICS_PERIOD:-1}"; sleep 1
  read -r h2 m2 < <(cache_counts)
  echo "workload E: $(throughput "$CHECK_OUT/e.txt") ops/s; $(returns "$CHECK_OUT/e.txt");" \
    "block cache hit ratio $(ratio "$h1" "$m1" "$h2" "$m2")"
else
  ycsb run workloada "$CHECK_OUT/outage.txt" -p "operationcount=$OPS" &
  ycsb_pid=$!
  sleep "$OUTAGE_AFTER"
  kill -0 "$ycsb_pid" 2>/dev/null || die "YCSB ended before the outage; see $CHECK_OUT/outage.err"
  t_stop=$(date +%s%N)
  "$HBASE_SH" stop
  echo "HBase stopped at $(( (t_stop - t0) / 1000000 )) ms; waiting for YCSB (pid $ycsb_pid) to end"
  rc=0
  wait "$ycsb_pid" || rc=$?
  echo "YCSB exited with status $rc, $(( ($(date +%s%N) - t_stop) / 1000000 )) ms after HBase was told to stop"
  echo "outage run: $(returns "$CHECK_OUT/outage.txt")"
  figures='Operations|AverageLatency|MaxLatency|95thPercentileLatency|99thPercentileLatency'
  grep -E "^\\[(READ|UPDATE)-FAILED\\], ($figures)" "$CHECK_OUT/outage.txt" || true
  grep -E '^HBaseClient:' "$CHECK_OUT/outage.err" | head -n 12 || true
fi

t0=$(date +%s%N)
"$HBASE_SH" stop
echo "stop: $(( ($(date +%s%N) - t0) / 1000000 )) ms"
