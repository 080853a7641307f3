#!/usr/bin/env bash
# Runs a standalone Apache ZooKeeper on 127.0.0.1 without Docker: the coordinator a ClickHouse cluster's replicated
# tables and ON CLUSTER DDL need (ClickHouse speaks ZooKeeper's protocol). Used by the test:server tier's cluster
# check (test/server/clickhouse-cluster.test.ts) beside two ClickHouse stand-ins (deploy/local/clickhouse.sh).
#
# The jars come from Maven Central through deploy/local/zookeeper-pom.xml (the only place the default version is
# written down) and are cached outside the repository, one directory per version.
#
# Usage: deploy/local/zookeeper.sh start|stop|status|fetch|version
#
# Environment (all optional):
#   ZOOKEEPER_VERSION        version to fetch/start               [<zookeeper.version> in zookeeper-pom.xml]
#   ZOOKEEPER_PORT           client port                                               [2181]
#   BENCHSTREAM_DATA_DIR     root for local state                                      [<repo>/.benchstream]
#   ZOOKEEPER_DATA_DIR       snapshots, transaction log, pid file, zookeeper.log
#                            [$BENCHSTREAM_DATA_DIR/zookeeper-$ZOOKEEPER_PORT]
#   ZOOKEEPER_LIBS_DIR       jar cache      [${XDG_CACHE_HOME:-$HOME/.cache}/benchstream/zookeeper-<version>/libs]
#   ZOOKEEPER_START_TIMEOUT  seconds to wait for 'imok' on start                       [60]
#   ZOOKEEPER_STOP_TIMEOUT   seconds to wait after SIGTERM before SIGKILL              [20]
set -euo pipefail

SCRIPT_DIR="$(cd -P -- "$(dirname -- "${BASH_SOURCE[0]}")" && pwd)"
REPO_ROOT="$(cd -P -- "$SCRIPT_DIR/../.." && pwd)"
POM="$SCRIPT_DIR/zookeeper-pom.xml"
SCRIPT_NAME=zookeeper.sh
# shellcheck source=lib.sh
source "$SCRIPT_DIR/lib.sh"

usage() {
  echo "usage: ${0##*/} start|stop|status|fetch|version" >&2
  echo "  start    fetch jars if needed, start ZooKeeper, wait until it answers 'ruok'" >&2
  echo "  stop     SIGTERM (SIGKILL after ZOOKEEPER_STOP_TIMEOUT s)" >&2
  echo "  status   exit 0 if running and answering, 3 if not" >&2
  echo "  fetch    download the jars into the cache (ZOOKEEPER_LIBS_DIR)" >&2
  echo "  version  print the ZooKeeper version start/fetch would use" >&2
  exit 2
}

[[ -f "$POM" ]] || die "missing $POM"
if [[ -z "${ZOOKEEPER_VERSION:-}" ]]; then
  ZOOKEEPER_VERSION="$(sed -n 's:.*<zookeeper.version>\([^<]*\)</zookeeper.version>.*:\1:p' "$POM" | head -n1)"
  [[ -n "$ZOOKEEPER_VERSION" ]] || die "cannot read <zookeeper.version> from $POM"
fi
[[ "$ZOOKEEPER_VERSION" =~ ^[0-9]+\.[0-9]+\.[0-9]+$ ]] \
  || die "ZOOKEEPER_VERSION must be a release version like 3.9.5, got '$ZOOKEEPER_VERSION'"
ZOOKEEPER_PORT="${ZOOKEEPER_PORT:-2181}"
is_uint "$ZOOKEEPER_PORT" && ((10#$ZOOKEEPER_PORT >= 1 && 10#$ZOOKEEPER_PORT <= 65535)) \
  || die "ZOOKEEPER_PORT must be a port from 1 to 65535, got '$ZOOKEEPER_PORT'"
ZOOKEEPER_START_TIMEOUT="${ZOOKEEPER_START_TIMEOUT:-60}"
is_uint "$ZOOKEEPER_START_TIMEOUT" || die "ZOOKEEPER_START_TIMEOUT must be a number of seconds"
ZOOKEEPER_STOP_TIMEOUT="${ZOOKEEPER_STOP_TIMEOUT:-20}"
is_uint "$ZOOKEEPER_STOP_TIMEOUT" || die "ZOOKEEPER_STOP_TIMEOUT must be a number of seconds"

BENCHSTREAM_DATA_DIR="${BENCHSTREAM_DATA_DIR:-$REPO_ROOT/.benchstream}"
DATA_DIR="${ZOOKEEPER_DATA_DIR:-$BENCHSTREAM_DATA_DIR/zookeeper-$ZOOKEEPER_PORT}"
LIBS_DIR="${ZOOKEEPER_LIBS_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/benchstream/zookeeper-$ZOOKEEPER_VERSION/libs}"
[[ "$DATA_DIR" == /* ]] || DATA_DIR="$PWD/$DATA_DIR"
[[ "$LIBS_DIR" == /* ]] || LIBS_DIR="$PWD/$LIBS_DIR"
PID_FILE="$DATA_DIR/zookeeper.pid"
LOG_FILE="$DATA_DIR/zookeeper.log"
LIBS_MARKER=".benchstream-complete"

libs_complete() {
  [[ -f "$LIBS_DIR/$LIBS_MARKER" && -f "$LIBS_DIR/zookeeper-$ZOOKEEPER_VERSION.jar" ]]
}

fetch_libs() {
  if libs_complete; then
    echo "zookeeper $ZOOKEEPER_VERSION jars already cached in $LIBS_DIR"
    return 0
  fi
  need mvn "install Maven 3 (e.g. apt-get install maven); it downloads the ZooKeeper jars from Maven Central"
  local parent
  parent="$(dirname -- "$LIBS_DIR")"
  mkdir -p -- "$parent"
  # Fetched beside the cache and renamed into place: an interrupted fetch leaves no half-filled cache.
  FETCH_TMP="$(mktemp -d "$parent/.libs.tmp.XXXXXX")"
  trap cleanup_fetch_tmp EXIT
  trap 'exit 130' INT TERM HUP
  echo "fetching zookeeper $ZOOKEEPER_VERSION jars from Maven Central into $LIBS_DIR ..."
  if ! mvn -q -B -Dstyle.color=never -f "$POM" -Dzookeeper.version="$ZOOKEEPER_VERSION" \
      dependency:copy-dependencies -DoutputDirectory="$FETCH_TMP/libs" -DincludeScope=runtime \
      >"$FETCH_TMP/mvn.log" 2>&1; then
    cat "$FETCH_TMP/mvn.log" >&2
    die "mvn dependency:copy-dependencies failed for ZooKeeper $ZOOKEEPER_VERSION (is it on Maven Central?)"
  fi
  [[ -f "$FETCH_TMP/libs/zookeeper-$ZOOKEEPER_VERSION.jar" ]] \
    || die "mvn finished but zookeeper-$ZOOKEEPER_VERSION.jar is missing from its output"
  echo "$ZOOKEEPER_VERSION $(date -u +%Y-%m-%dT%H:%M:%SZ)" >"$FETCH_TMP/libs/$LIBS_MARKER"
  if [[ -e "$LIBS_DIR" ]] && ! libs_complete; then mv -- "$LIBS_DIR" "$FETCH_TMP/stale"; fi
  if ! mv -T -- "$FETCH_TMP/libs" "$LIBS_DIR" 2>/dev/null; then
    libs_complete || die "could not move fetched jars into $LIBS_DIR"
  fi
  cleanup_fetch_tmp
  FETCH_TMP=""
  echo "zookeeper $ZOOKEEPER_VERSION jars cached in $LIBS_DIR ($(find "$LIBS_DIR" -name '*.jar' | wc -l) jars)"
}

zk_pid() {
  [[ -s "$PID_FILE" ]] || return 1
  local pid
  pid="$(<"$PID_FILE")"
  is_uint "$pid" && kill -0 "$pid" 2>/dev/null || return 1
  tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null | grep -qF -- "$DATA_DIR/zoo.cfg" || return 1
  echo "$pid"
}

# four_letter WORD: ZooKeeper's answer to a four-letter command (ruok, srvr), or nothing.
four_letter() {
  (exec 3<>"/dev/tcp/127.0.0.1/$ZOOKEEPER_PORT" && printf '%s' "$1" >&3 && timeout 5 cat <&3) 2>/dev/null || true
}

cmd_start() {
  need java "install a JDK 17+ (e.g. apt-get install openjdk-17-jre-headless)"
  lock_data_dir "$DATA_DIR" $((ZOOKEEPER_START_TIMEOUT + ZOOKEEPER_STOP_TIMEOUT + 60))
  libs_complete || fetch_libs
  local pid
  if pid="$(zk_pid)"; then
    echo "zookeeper already running on 127.0.0.1:$ZOOKEEPER_PORT (pid $pid, data: $DATA_DIR)"
    return 0
  fi
  rm -f -- "$PID_FILE"
  port_open "$ZOOKEEPER_PORT" \
    && die "127.0.0.1:$ZOOKEEPER_PORT is already in use by another process; set ZOOKEEPER_PORT"
  mkdir -p -- "$DATA_DIR/data"
  cat >"$DATA_DIR/zoo.cfg" <<EOF
dataDir=$DATA_DIR/data
clientPort=$ZOOKEEPER_PORT
clientPortAddress=127.0.0.1
tickTime=2000
maxClientCnxns=0
# No AdminServer: it would take port 8080.
admin.enableServer=false
4lw.commands.whitelist=ruok,srvr
EOF
  [[ -f "$LOG_FILE" ]] && mv -f -- "$LOG_FILE" "$LOG_FILE.1"
  local start=(nohup)
  command -v setsid >/dev/null 2>&1 && start=(setsid nohup)
  "${start[@]}" java -Xmx256m -Xms64m -Dorg.slf4j.simpleLogger.defaultLogLevel=warn \
    -cp "$LIBS_DIR/*" org.apache.zookeeper.server.ZooKeeperServerMain "$DATA_DIR/zoo.cfg" \
    </dev/null >>"$LOG_FILE" 2>&1 9>&- &
  pid=$!
  echo "$pid" >"$PID_FILE"
  local deadline=$((SECONDS + ZOOKEEPER_START_TIMEOUT))
  until [[ "$(four_letter ruok)" == imok ]]; do
    if ! kill -0 "$pid" 2>/dev/null; then
      rm -f -- "$PID_FILE"
      echo "zookeeper.sh: ZooKeeper (pid $pid) exited during startup" >&2
      print_log_tail "$LOG_FILE"
      exit 1
    fi
    if ((SECONDS >= deadline)); then
      echo "zookeeper.sh: no 'imok' on 127.0.0.1:$ZOOKEEPER_PORT within ${ZOOKEEPER_START_TIMEOUT}s; stopping it" >&2
      print_log_tail "$LOG_FILE"
      stop_pid "$pid" "$ZOOKEEPER_STOP_TIMEOUT" zookeeper
      rm -f -- "$PID_FILE"
      exit 1
    fi
    sleep 0.25
  done
  echo "zookeeper $ZOOKEEPER_VERSION ready on 127.0.0.1:$ZOOKEEPER_PORT (pid $pid, data: $DATA_DIR)"
}

cmd_stop() {
  [[ -d "$DATA_DIR" ]] || { echo "zookeeper not running"; return 0; }
  lock_data_dir "$DATA_DIR" $((ZOOKEEPER_START_TIMEOUT + ZOOKEEPER_STOP_TIMEOUT + 60))
  local pid
  if ! pid="$(zk_pid)"; then
    rm -f -- "$PID_FILE"
    echo "zookeeper not running"
    return 0
  fi
  stop_pid "$pid" "$ZOOKEEPER_STOP_TIMEOUT" zookeeper
  rm -f -- "$PID_FILE"
  echo "zookeeper stopped (pid $pid)"
}

cmd_status() {
  local pid
  if pid="$(zk_pid)" && [[ "$(four_letter ruok)" == imok ]]; then
    echo "zookeeper running on 127.0.0.1:$ZOOKEEPER_PORT (pid $pid, data: $DATA_DIR)"
  else
    echo "zookeeper not running (data: $DATA_DIR)"
    return 3
  fi
}

[[ $# -eq 1 ]] || usage
case "$1" in
  start) cmd_start ;;
  stop) cmd_stop ;;
  status) cmd_status ;;
  fetch) fetch_libs ;;
  version) echo "$ZOOKEEPER_VERSION" ;;
  *) usage ;;
esac
