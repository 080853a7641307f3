# Shell helpers shared by the deploy/local scripts (kafka.sh, hbase.sh, ycsb.sh,
# async-profiler.sh): sourced, never run. Each script sets SCRIPT_NAME before sourcing,
# so that every message says which script it comes from.
#
# Only what the scripts did identically lives here; what differs (how jars are fetched,
# readiness, configuration) stays in each script.

# The script's one way out on an error: its name, the message, exit 1.
die() { echo "${SCRIPT_NAME:?}: $*" >&2; exit 1; }
# A line for the user on stderr (stdout is kept for what a command prints as its result).
note() { echo "${SCRIPT_NAME:?}: $*" >&2; }

is_uint() { [[ "$1" =~ ^[0-9]+$ ]]; }

# need COMMAND WHY: fail early, saying what to install, rather than halfway through.
need() {
  command -v "$1" >/dev/null 2>&1 || die "'$1' not found on PATH: $2"
}

# port_open PORT [HOST]: bash's /dev/tcp, no nc/ss dependency; loopback connects succeed or
# get RST at once. HOST defaults to 127.0.0.1.
port_open() {
  (: <>"/dev/tcp/${2:-127.0.0.1}/$1") 2>/dev/null
}

# print_log_tail FILE...: the last 40 lines of each non-empty file, for a failed start.
print_log_tail() {
  local f shown=
  for f in "$@"; do
    if [[ -s "$f" ]]; then
      echo "---- last 40 lines of $f ----" >&2
      tail -n 40 -- "$f" >&2
      echo "----" >&2
      shown=1
    fi
  done
  [[ -n "$shown" ]] || echo "(no $*)" >&2
}

# lock_data_dir DIR SECONDS: one script at a time per data dir (fd 9, held until exit), so
# that two starts cannot both format, configure or launch into it. Without flock (not
# every system has util-linux), no lock.
lock_data_dir() {
  local dir="$1" seconds="$2"
  mkdir -p -- "$dir"
  if command -v flock >/dev/null 2>&1; then
    exec 9>"$dir/.lock"
    flock -w "$seconds" 9 || die "timed out waiting for another ${SCRIPT_NAME:?} on $dir"
  fi
}

# stop_pid PID SECONDS WHAT: SIGTERM, wait up to SECONDS, then SIGKILL (and wait a little
# for the kernel to reap it).
stop_pid() {
  local pid="$1" seconds="$2" what="$3" deadline=$((SECONDS + $2))
  kill -TERM "$pid" 2>/dev/null || return 0
  while kill -0 "$pid" 2>/dev/null; do
    if ((SECONDS >= deadline)); then
      note "$what $pid did not exit ${seconds}s after SIGTERM; sending SIGKILL"
      kill -KILL "$pid" 2>/dev/null || true
      local tries=20
      while ((tries-- > 0)) && kill -0 "$pid" 2>/dev/null; do sleep 0.25; done
      break
    fi
    sleep 0.2
  done
}

# The temporary directory of a jar fetch in progress (each script's fetch sets it); removed
# on exit so that an interrupted fetch leaves nothing half-written behind.
FETCH_TMP=""
cleanup_fetch_tmp() { [[ -z "$FETCH_TMP" ]] || rm -rf -- "$FETCH_TMP"; }
