#!/usr/bin/env bash
# Where the driver's emission CPU goes, thread by thread (issue 33): the driver pinned to core 0 (redis-server and a
# private broker on core 1), redis binding, workload C, 8 client threads, OPS operations, once with emission and once
# without, under `perf record` (samples per thread) and once more with --trace-gc (collections per isolate).
#
#   bench/shell/driver-emission-threads.sh [OPS]   (default 1000000; needs perf, redis-server, Java for the broker)
set -u
OPS=${1:-1000000}
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
N=$ROOT/node_modules/.bin/node
P=$(mktemp -d /tmp/benchstream-emission-threads-XXXXXX)
chmod 755 "$P"
cd "$ROOT" || exit 1
export KAFKA_PORT=$((29000 + RANDOM % 500)) KAFKA_DATA_DIR=$P/kafka
RP=$((42000 + RANDOM % 1000))
cleanup() {
  bash deploy/local/kafka.sh stop >/dev/null 2>&1
  kill "$(cat "$P/redis.pid" 2>/dev/null)" 2>/dev/null
}
trap cleanup EXIT
taskset -c 1 bash deploy/local/kafka.sh start >/dev/null 2>&1 || { echo 'the broker did not start' >&2; exit 1; }
redis-server --port $RP --save '' --appendonly no --daemonize yes --pidfile "$P/redis.pid" >/dev/null || exit 1
sleep 0.5
taskset -cp 1 "$(cat "$P/redis.pid")" >/dev/null
bash deploy/local/ycsb.sh run -load -P workloads/workloada -threads 8 -db io.benchstream.ycsb.redis.RedisClient \
  -p redis.port=$RP -p recordcount=10000 >/dev/null 2>&1 || { echo 'YCSB could not load the records' >&2; exit 1; }
# run MODE(on|off) TOOL-ARGS...: the driver under TOOL-ARGS, pinned; its output and bash `times` into $P/MODE.out
run() {
  local mode=$1
  shift
  local emit=()
  [ "$mode" = off ] && emit=(--no-emit)
  bash -c '"$@"; times' _ taskset -c 0 "$@" bin/benchstream.js run -P workloads/workloadc -threads 8 -db redis \
    -p redis.port=$RP -p recordcount=10000 -p operationcount="$OPS" --run-id "threads-$mode-$RANDOM" \
    --client-id threads --topic bench-emission-threads --kafka-brokers 127.0.0.1:$KAFKA_PORT "${emit[@]}" \
    >"$P/$mode.out" 2>&1
}
for mode in on off; do
  run $mode perf record -q -F 1999 -o "$P/perf-$mode.data" "$N" --perf-basic-prof
  cpu=$(tail -1 "$P/$mode.out" | awk '{ split($1, u, /[ms]/); split($2, s, /[ms]/); print u[1]*60+u[2]+s[1]*60+s[2] }')
  echo "emission $mode: $(grep -E '^\[OVERALL\], Throughput' "$P/$mode.out" | cut -d, -f3 | cut -d. -f1) ops/s" \
    "under perf, client CPU $cpu s; samples by thread (CPU s = share x client CPU):"
  perf report -i "$P/perf-$mode.data" --sort pid --stdio 2>/dev/null | grep -E '^ +[0-9.]+%' | head -8 |
    awk -v c="$cpu" '{ sub("%", "", $1); printf "  %6.2f%%  %6.2f s  %s\n", $1, $1 * c / 100, $2 }'
done
for mode in on off; do
  run $mode "$N" --trace-gc
  echo "emission $mode, --trace-gc: collections per isolate (the delivery thread's is the one only 'on' has)"
  grep -oE '^\[[0-9]+:0x[0-9a-f]+\] +[0-9]+ ms: (Scavenge|Mark-Compact)[^,]*, [^/]*/' "$P/$mode.out" |
    sed -E 's/^\[[0-9]+:(0x[0-9a-f]+)\] +[0-9]+ ms: ([A-Za-z-]+).*, ([0-9.]+) \/$/\1 \2 \3/' |
    awk '{ n[$1" "$2]++; ms[$1" "$2] += $3 } END { for (k in n) printf "  %s: %d, %.1f ms\n", k, n[k], ms[k] }' | sort
done
echo "(profiles and logs in $P)"
