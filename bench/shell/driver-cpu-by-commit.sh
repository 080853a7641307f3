#!/usr/bin/env bash
# The driver's own client CPU per operation (no emission) at several commits and Node versions, side by side with
# YCSB 0.17 (our Redis DB class) on one private redis-server (issue 33, part 3: which commit made the driver costlier).
# Every round runs every variant once, the order flipping each round; start-up CPU (the median of two runs of 8
# operations) is subtracted per variant. Prints one line per run, then medians [min..max] and per-round ratios.
#
#   bench/shell/driver-cpu-by-commit.sh ROUNDS OPS COMMIT@NODE...   e.g. 5 500000 d2c61f5@20 HEAD@24
#   NODE: 20 = /usr/bin/node (the system's), 24 = the project's node_modules/.bin/node
#   PIN=1 (default): client on core 0, redis-server on core 1 (taskset); PIN=0 unpinned. WL=c (default) or a.
# Each commit is built once in a worktree under $BENCH_WORKTREES (default /tmp/benchstream-by-commit).
set -u
[ $# -ge 3 ] || { sed -n 2,11p "$0"; exit 2; }
ROUNDS=$1 OPS=$2
shift 2
PIN=${PIN:-1} WL=${WL:-c}
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
N24=$ROOT/node_modules/.bin/node N20=/usr/bin/node
W=${BENCH_WORKTREES:-/tmp/benchstream-by-commit}
mkdir -p "$W"
PINC=()
[ "$PIN" = 1 ] && PINC=(taskset -c 0)
cd "$ROOT" || exit 1
declare -A DIR
for v in "$@"; do
  sha=$(git rev-parse --short "${v%@*}") || exit 1
  DIR[$v]=$W/$sha
  [ -d "$W/$sha" ] && continue
  git worktree add -f --detach "$W/$sha" "$sha" >/dev/null || exit 1
  (cd "$W/$sha" && npm install --no-audit --no-fund >/dev/null 2>&1 && npm run build --silent >/dev/null 2>&1) ||
    { echo "could not build $sha" >&2; exit 1; }
done
PORT=$((40000 + RANDOM % 2000))
redis-server --port $PORT --save '' --appendonly no --daemonize yes --pidfile "$W/redis.pid" >/dev/null || exit 1
trap 'kill $(cat "$W/redis.pid") 2>/dev/null' EXIT
sleep 0.5
[ "$PIN" = 1 ] && taskset -cp 1 "$(cat "$W/redis.pid")" >/dev/null
YCSB_ARGS=(-threads 8 -db io.benchstream.ycsb.redis.RedisClient -p redis.port=$PORT -p recordcount=10000)
bash deploy/local/ycsb.sh run -load -P workloads/workloada "${YCSB_ARGS[@]}" >/dev/null 2>&1 ||
  { echo 'YCSB could not load the records' >&2; exit 1; }
# Client CPU seconds (user + system of the command and its children, bash `times`) and its reported ops/s.
cpu_of() {
  local times
  times=$(bash -c '"$@" > "$0" 2>&1; times' "$W/last.out" "${PINC[@]}" "$@" | tail -1)
  local tp
  tp=$(grep -E '^\[OVERALL\], Throughput' "$W/last.out" | head -1 | awk -F', ' '{print $3}')
  echo "$times" | awk -v tp="${tp:-NaN}" '{
    split($1, u, /[ms]/); split($2, s, /[ms]/); print u[1] * 60 + u[2] + s[1] * 60 + s[2], tp }'
}
run_variant() { # variant ops
  if [ "$1" = ycsb ]; then
    cpu_of bash deploy/local/ycsb.sh run -t -P "workloads/workload$WL" "${YCSB_ARGS[@]}" -p operationcount="$2"
  else
    local node=$N24
    [ "${1#*@}" = 20 ] && node=$N20
    (cd "${DIR[$1]}" && cpu_of "$node" bin/benchstream.js run -P "workloads/workload$WL" -threads 8 -db redis \
      -p redis.port=$PORT -p recordcount=10000 -p operationcount="$2" --run-id "by-commit-$RANDOM" \
      --client-id by-commit --no-emit)
  fi
}
VARIANTS=(ycsb "$@")
declare -A START
for v in "${VARIANTS[@]}"; do
  a=$(run_variant "$v" 8 | cut -d' ' -f1)
  b=$(run_variant "$v" 8 | cut -d' ' -f1)
  START[$v]=$(awk -v a="$a" -v b="$b" 'BEGIN { print (a + b) / 2 }')
  echo "start-up CPU $v: ${START[$v]} s"
done
OUT=$W/runs.txt
: >"$OUT"
for r in $(seq 1 "$ROUNDS"); do
  order=("${VARIANTS[@]}")
  [ $((r % 2)) = 0 ] && mapfile -t order < <(printf '%s\n' "${VARIANTS[@]}" | tac)
  for v in "${order[@]}"; do
    load=$(cut -d' ' -f1 /proc/loadavg)
    read -r cpu tp < <(run_variant "$v" "$OPS")
    us=$(awk -v c="$cpu" -v s="${START[$v]}" -v n="$OPS" 'BEGIN { printf "%.2f", (c - s) / n * 1e6 }')
    echo "round $r $v cpu_us_per_op $us ops_s $tp load $load" | tee -a "$OUT"
  done
done
python3 "$ROOT/bench/shell/by-commit-summary.py" "$OUT" "${1}"
