#!/usr/bin/env bash
# Fetches async-profiler from Maven Central and takes CPU / wall-clock profiles of a
# running JVM (e.g. the broker of deploy/local/kafka.sh) as collapsed stacks, the input
# of Benchstream's per-run flame graphs.
#
# The Maven artifact tools.profiler:async-profiler is a plain jar: the Java API
# (one.profiler.*) plus libasyncProfiler.so for linux-x64, linux-arm64 and macOS. It has
# no `asprof` launcher, so capture attaches with the JDK's own `jcmd <pid>
# JVMTI.agent_load <lib> <options>`: one `start,...,timeout=N,file=...` (the profiler
# stops itself after N s and writes the file), then `status` until it is done. The
# library is cached outside the repository and shared by every checkout.
#
# Usage: deploy/local/async-profiler.sh fetch|path|capture [options]
#   see usage() below, or run it without arguments.
#
# Environment (all optional):
#   ASYNC_PROFILER_VERSION  version of tools.profiler:async-profiler          [4.6]
#   ASYNC_PROFILER_DIR      cache dir [${XDG_CACHE_HOME:-$HOME/.cache}/benchstream/async-profiler-<version>]
set -euo pipefail

SCRIPT_NAME=async-profiler.sh
# shellcheck source=lib.sh
source "$(cd -P -- "$(dirname -- "${BASH_SOURCE[0]}")" && pwd)/lib.sh"

usage() {
  cat >&2 <<'EOF'
usage: async-profiler.sh fetch|path|capture [options]
  fetch     download async-profiler from Maven Central (mvn) into the cache
  path      print the absolute path of libasyncProfiler.so (fetches first if needed)
  capture --pid P --output FILE [--seconds N] [--event auto|cpu|ctimer|itimer|wall]
          [--interval NS] [--threads] [--ann]
            attach to the running JVM P, profile it for N seconds (default 10) and
            write collapsed stacks ("frame;frame;frame count" lines) to FILE.
            --event   auto (default): cpu if perf_events work in the target, else
                      ctimer, else itimer; the choice and the reason go to stderr.
                      cpu = perf_events cpu-clock (fails rather than degrading)
                      ctimer/itimer = CPU-time timers without perf_events
                      wall = every thread, running or not
            --interval sampling interval in ns (suffixes ns/us/ms/s accepted);
                      default 10ms for CPU events, 50ms for wall
            --threads one stack per thread: a leading "[name tid=N]" frame
            --ann     suffix frames with their kind: _[j] JIT, _[i] inlined,
                      _[0] interpreted, _[1] C1, _[k] kernel
EOF
  exit 2
}

ASYNC_PROFILER_VERSION="${ASYNC_PROFILER_VERSION:-4.6}"
[[ "$ASYNC_PROFILER_VERSION" =~ ^[0-9][0-9A-Za-z.-]*$ ]] \
  || die "ASYNC_PROFILER_VERSION must look like a Maven version (e.g. 4.6), got '$ASYNC_PROFILER_VERSION'"
CACHE_DIR="${ASYNC_PROFILER_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/benchstream/async-profiler-$ASYNC_PROFILER_VERSION}"
[[ "$CACHE_DIR" == /* ]] || CACHE_DIR="$PWD/$CACHE_DIR"
ARTIFACT="tools.profiler:async-profiler:$ASYNC_PROFILER_VERSION"
JAR_NAME="async-profiler-$ASYNC_PROFILER_VERSION.jar"
# Written last by fetch; its presence is what makes the cache "complete".
MARKER=".benchstream-complete"

# The jar's folder names for the native library (see its META-INF/maven pom).
platform_tag() {
  case "$(uname -s)/$(uname -m)" in
    Linux/x86_64 | Linux/amd64) echo linux-x64 ;;
    Linux/aarch64 | Linux/arm64) echo linux-arm64 ;;
    *) die "no libasyncProfiler.so for $(uname -s)/$(uname -m) in $ARTIFACT (it has linux-x64, linux-arm64, macos)" ;;
  esac
}
PLATFORM="$(platform_tag)"
LIB_PATH="$CACHE_DIR/$PLATFORM/libasyncProfiler.so"

# ---------------------------------------------------------------- cache

cache_complete() {
  [[ -f "$CACHE_DIR/$MARKER" && -f "$LIB_PATH" && -f "$CACHE_DIR/$JAR_NAME" ]]
}

# Progress goes to stderr so that `path` prints only the path on stdout.
cmd_fetch() {
  if cache_complete; then
    note "async-profiler $ASYNC_PROFILER_VERSION already cached in $CACHE_DIR"
    return 0
  fi
  need mvn "install Maven 3 (e.g. apt-get install maven); it downloads $ARTIFACT from Maven Central"
  need jar "install a JDK 17+ (e.g. apt-get install openjdk-17-jdk-headless); its 'jar' tool unpacks the library"
  local parent
  parent="$(dirname -- "$CACHE_DIR")"
  mkdir -p -- "$parent"
  # Same-filesystem temp dir, so the final mv is an atomic rename(2): an interrupted
  # fetch leaves only a .tmp dir (removed by the trap), never a half-filled cache.
  FETCH_TMP="$(mktemp -d "$parent/.async-profiler.tmp.XXXXXX")"
  trap cleanup_fetch_tmp EXIT
  trap 'exit 130' INT TERM HUP
  note "fetching $ARTIFACT from Maven Central into $CACHE_DIR ..."
  local mvn_log="$FETCH_TMP/mvn.log" out="$FETCH_TMP/out"
  mkdir -p -- "$out"
  # dependency:copy with -Dartifact needs no pom (unlike kafka.sh, there is only one jar).
  if ! mvn -q -B -Dstyle.color=never dependency:copy -Dartifact="$ARTIFACT" \
      -DoutputDirectory="$out" >"$mvn_log" 2>&1; then
    cat "$mvn_log" >&2
    die "mvn dependency:copy of $ARTIFACT failed" \
      "(see output above; is ASYNC_PROFILER_VERSION published on Maven Central?)"
  fi
  [[ -f "$out/$JAR_NAME" ]] || die "mvn finished but $JAR_NAME is missing from its output"
  # The jar keeps every platform's library; only ours is unpacked next to it.
  (cd "$out" && jar xf "$JAR_NAME" "$PLATFORM/libasyncProfiler.so") \
    || die "could not unpack $PLATFORM/libasyncProfiler.so from $JAR_NAME"
  [[ -f "$out/$PLATFORM/libasyncProfiler.so" ]] \
    || die "$JAR_NAME has no $PLATFORM/libasyncProfiler.so"
  echo "$ASYNC_PROFILER_VERSION $PLATFORM $(date -u +%Y-%m-%dT%H:%M:%SZ)" >"$out/$MARKER"
  # A cache dir without the marker is a leftover of an interrupted or older layout.
  if [[ -e "$CACHE_DIR" ]] && ! cache_complete; then
    mv -- "$CACHE_DIR" "$FETCH_TMP/stale"
  fi
  # mv -T fails only if a concurrent fetch won the race; its result is equally good.
  if ! mv -T -- "$out" "$CACHE_DIR" 2>/dev/null; then
    cache_complete || die "could not move the fetched files into $CACHE_DIR"
  fi
  cleanup_fetch_tmp
  FETCH_TMP=""
  note "async-profiler $ASYNC_PROFILER_VERSION cached: $LIB_PATH"
}

cmd_path() {
  cache_complete || cmd_fetch
  echo "$LIB_PATH"
}

# ---------------------------------------------------------------- capture

PID=""
TMP_OUT=""  # where the target writes the profile before it is renamed to --output
LOG=""      # the profiler's own messages (its log= option)
STATUS=""   # answer of the `status` command
# shellcheck disable=SC2034 # read by the INT/TERM trap, which shellcheck cannot see
ACTIVE=0    # 1 while a profiling session we started may be running in the target
cleanup_capture() { rm -f -- ${TMP_OUT:+"$TMP_OUT"} ${LOG:+"$LOG"} ${STATUS:+"$STATUS"}; }

# Sends one async-profiler command to the target and returns the agent's return code
# (0 = ok). jcmd itself exits 0 even when the agent fails, so the code is read from its
# "return code: N" line; the agent's own messages go to $LOG (log=), not to the
# target's stdout.
agent() {
  local out rc
  # The option string must reach the agent as ONE DCmd argument: HotSpot's DCmd parser
  # splits an unquoted `start,event=cpu,...` at '=' into a key and a value, and the
  # agent then sees a mangled string (observed: "[ERROR] event must not be empty").
  # Inner double quotes make it a single quoted argument; hence no '"' in values.
  if ! out="$(jcmd "$PID" JVMTI.agent_load "$LIB_PATH" "\"$1,log=$LOG\"" 2>&1)"; then
    echo "$out" >&2
    die "jcmd could not attach to pid $PID (same user? a JVM? attach disabled with -XX:+DisableAttachMechanism?)"
  fi
  rc="$(sed -n 's/^return code: \(-\{0,1\}[0-9]*\)$/\1/p' <<<"$out" | tail -n1)"
  if [[ -z "$rc" ]]; then
    echo "$out" >&2
    die "unexpected jcmd output (no 'return code:' line)"
  fi
  return "$rc"
}

agent_log() {
  if [[ -s "$LOG" ]]; then cat -- "$LOG" >&2; fi
  : >"$LOG"
}

# CPU time (user+system, all threads) the target has used so far, in ms; fields 14
# and 15 of /proc/PID/stat are in clock ticks. The comm field (2) may contain spaces,
# so the fields are counted after its closing parenthesis.
cpu_ms() {
  local stat rest
  stat="$(<"/proc/$PID/stat")" || return 1
  rest="${stat##*) }"
  local -a f
  read -r -a f <<<"$rest"
  # rest starts at field 3, so utime (14) and stime (15) are f[11] and f[12].
  echo $(((f[11] + f[12]) * 1000 / $(getconf CLK_TCK)))
}

# Interval in ns from "123", "10ms", "100us", "1s".
interval_ns() {
  [[ "$1" =~ ^([0-9]+)(ns|us|ms|s)?$ ]] || return 1
  local n="${BASH_REMATCH[1]}" unit="${BASH_REMATCH[2]:-ns}"
  case "$unit" in
    ns) echo $((10#$n)) ;;
    us) echo $((10#$n * 1000)) ;;
    ms) echo $((10#$n * 1000000)) ;;
    s) echo $((10#$n * 1000000000)) ;;
  esac
}

# 0 while the profiler in the target is running, 1 once it has stopped.
profiler_running() {
  : >"$STATUS"
  agent "status,file=$STATUS" || { agent_log; die "status query failed in pid $PID"; }
  grep -q '^Profiling is running' "$STATUS"
}

cmd_capture() {
  local seconds=10 event=auto interval="" output="" threads=0 ann=0
  while [[ $# -gt 0 ]]; do
    case "$1" in
      --pid) PID="${2:-}"; shift 2 || usage ;;
      --seconds) seconds="${2:-}"; shift 2 || usage ;;
      --event) event="${2:-}"; shift 2 || usage ;;
      --interval) interval="${2:-}"; shift 2 || usage ;;
      --output) output="${2:-}"; shift 2 || usage ;;
      --threads) threads=1; shift ;;
      --ann) ann=1; shift ;;
      *) echo "async-profiler.sh: unknown capture option '$1'" >&2; usage ;;
    esac
  done
  is_uint "$PID" || die "--pid must be a process id, got '$PID'"
  kill -0 "$PID" 2>/dev/null || die "no process $PID (or not ours to signal)"
  if ! is_uint "$seconds" || ((10#$seconds == 0)); then
    die "--seconds must be a positive number, got '$seconds'"
  fi
  seconds=$((10#$seconds))
  case "$event" in
    auto | cpu | ctimer | itimer | wall) ;;
    *) die "--event must be auto, cpu, ctimer, itimer or wall, got '$event'" ;;
  esac
  if [[ -z "$interval" ]]; then
    # async-profiler's own CPU default is 10 ms; wall-clock samples every thread, idle
    # or not, each period, so it is sampled more sparsely.
    if [[ "$event" == wall ]]; then interval=50ms; else interval=10ms; fi
  fi
  local ns
  ns="$(interval_ns "$interval")" || die "--interval must be a number of ns (or with ns/us/ms/s), got '$interval'"
  ((ns > 0)) || die "--interval must be positive"
  [[ -n "$output" ]] || die "--output FILE is required"
  [[ "$output" == /* ]] || output="$PWD/$output"
  # The path travels inside async-profiler's comma-separated option string (and the
  # DCmd quoting above), which has no escaping.
  [[ "$output" != *[,\"[:space:]]* ]] || die "--output must not contain commas, quotes or spaces: '$output'"
  local out_dir
  out_dir="$(dirname -- "$output")"
  [[ -d "$out_dir" ]] || die "directory $out_dir does not exist"
  need jcmd "install a JDK 17+ (e.g. apt-get install openjdk-17-jdk-headless); capture attaches with jcmd"
  cache_complete || cmd_fetch

  # The target JVM, not this script, writes these files; they live next to the output
  # so the final mv is a rename and a failed capture leaves no half-written FILE.
  TMP_OUT="$(mktemp "$out_dir/.${output##*/}.XXXXXX")"
  LOG="$TMP_OUT.log"
  STATUS="$TMP_OUT.status"
  : >"$LOG"
  : >"$STATUS"
  chmod a+rw -- "$TMP_OUT" "$LOG" "$STATUS" # the target may run as another user
  trap cleanup_capture EXIT
  # Never leave a session running inside the target (it would keep sampling until the
  # JVM exits): on Ctrl-C or kill, stop it (no dump options: nothing is written).
  trap 'if ((ACTIVE)); then
      agent stop || true
      note "interrupted: profiler in pid $PID stopped, nothing written"
    fi
    exit 130' INT TERM HUP

  # timeout=N makes the profiler stop itself exactly N s after it started and dump to
  # file= (with the output options given here), so the sampled window does not stretch
  # by the jcmd round trip of a `stop` (each jcmd is a JVM start: 0.5 s when idle,
  # several s on a busy machine). Comparing runs needs equal windows.
  local opts=",interval=$ns,timeout=$seconds,file=$TMP_OUT,collapsed,quiet"
  if ((threads)); then opts+=",threads"; fi
  if ((ann)); then opts+=",ann"; fi

  local chosen="" why=""
  if [[ "$event" == auto ]]; then
    # async-profiler's own event=cpu silently falls back to ctimer (then wall) when
    # perf_event_open fails; cpu-clock is the same perf_events event without that
    # fallback, so trying it first tells us which engine is really sampling.
    local e
    for e in cpu-clock ctimer itimer; do
      if agent "start,event=$e$opts"; then
        chosen="$e"
        break
      fi
      why+="$e failed: $(tr '\n' ' ' <"$LOG")"$'\n'
      : >"$LOG"
    done
    [[ -n "$chosen" ]] || { printf '%s' "$why" >&2; die "no CPU profiling event works in pid $PID"; }
    if [[ "$chosen" == cpu-clock ]]; then
      why="auto: perf_events work in the target, so cpu-clock (includes kernel frames)"
    else
      why="auto: $(printf '%s' "$why" | tr '\n' ';') so $chosen"
    fi
  else
    chosen="$event"
    if [[ "$event" == cpu ]]; then chosen=cpu-clock; fi # see above: fail rather than degrade
    if ! agent "start,event=$chosen$opts"; then
      agent_log
      die "could not start event=$chosen in pid $PID (see the profiler's message above)"
    fi
    why="requested"
  fi
  ACTIVE=1
  local cpu0 cpu1
  cpu0="$(cpu_ms)" || cpu0=""
  note "profiling pid $PID: event=$chosen interval=${ns}ns for ${seconds}s ($why)"
  agent_log

  # In the background so that a TERM runs the trap at once, not after the sleep.
  sleep "$seconds" &
  wait $!
  cpu1="$(cpu_ms)" || cpu1=""

  # status takes the profiler's state lock, which the timeout's stop+dump holds, so
  # "not running" means the file is complete. The bound only guards against a stuck
  # target; the timer fires on time and polls are one jcmd each.
  local polls=0
  while profiler_running; do
    ((++polls <= 60)) || die "profiler in pid $PID still running ${seconds}s + 60 polls after start;" \
      "stop it with: jcmd $PID JVMTI.agent_load $LIB_PATH '\"stop\"'"
    sleep 0.5
  done
  # shellcheck disable=SC2034 # read by the INT/TERM trap
  ACTIVE=0
  agent_log
  [[ -s "$TMP_OUT" ]] || note "warning: the profile is empty (was the target idle?)"
  mv -f -- "$TMP_OUT" "$output"
  TMP_OUT=""

  # A sanity line for the sample count: for CPU events each sample stands for one
  # interval of the target's CPU time, so samples ~ CPU time / interval. CPU time is
  # read from /proc over the same N s, starting when `start` returned.
  local stacks samples
  stacks="$(wc -l <"$output")"
  samples="$(awk '{ s += $NF } END { print s + 0 }' "$output")"
  local line="wrote $output: $stacks stack lines, $samples samples"
  if [[ -n "$cpu0" && -n "$cpu1" ]]; then
    local used=$((cpu1 - cpu0))
    line+="; target CPU time in the ${seconds}s window: $used ms"
    if [[ "$chosen" != wall ]]; then line+=" = $((used * 1000000 / ns)) intervals"; fi
  fi
  note "$line"
}

[[ $# -ge 1 ]] || usage
cmd="$1"
shift
case "$cmd" in
  fetch) [[ $# -eq 0 ]] || usage; cmd_fetch ;;
  path) [[ $# -eq 0 ]] || usage; cmd_path ;;
  capture) cmd_capture "$@" ;;
  *) usage ;;
esac
