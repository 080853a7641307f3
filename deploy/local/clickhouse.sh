#!/usr/bin/env bash
# Runs a local stand-in for a ClickHouse server on 127.0.0.1, without Docker and without a ClickHouse package:
# clickhouse-local's main from the libchdb.so that npm `chdb` installs (ClickHouse 26.7), started with --path,
# --http_port and --tcp_port and a query that opens ClickHouse's own HTTP and native TCP listeners and then lasts
# as long as the server should live. Benchstream's server mode (CLICKHOUSE_URL), @clickhouse/client,
# clickhouse-client and the native-protocol drivers talk to it as to a server.
#
# It is a stand-in for tests and development, not a production server: no interserver port (so no replicated
# tables), no ON CLUSTER DDL, no SQL-driven users, roles or settings profiles (users.xml ones only), no Keeper.
# docs/guides/deploy.md#a-local-clickhouse-server says what it stands in for and what it does not.
#
# The launcher (deploy/local/clickhouse/launcher.c) is compiled on first use with cc into the cache, once per
# version of its source.
#
# Usage: deploy/local/clickhouse.sh start|stop|status|kill|restart|version
#
# Environment (all optional):
#   CLICKHOUSE_HTTP_PORT      HTTP port (/ping, queries, CLICKHOUSE_URL)          [8123]
#   CLICKHOUSE_TCP_PORT       native protocol port (clickhouse-client, drivers)   [9000]
#   CLICKHOUSE_LISTEN_HOST    address both listen on                              [127.0.0.1]
#   CLICKHOUSE_PASSWORD       password of the user `default` (no password: loopback only) [empty]
#   BENCHSTREAM_DATA_DIR      root for local state                                [<repo>/.benchstream]
#   CLICKHOUSE_DATA_DIR       config.xml, config.d/, data/, pid file, logs
#                             [$BENCHSTREAM_DATA_DIR/clickhouse-$CLICKHOUSE_HTTP_PORT]
#                             Files in its config.d/ are merged into config.xml (ClickHouse's own rule): macros,
#                             remote_servers, zookeeper, users...
#   CLICKHOUSE_LIBCHDB        the library to run                       [node_modules/@chdb/lib-linux-*/libchdb.so]
#   CLICKHOUSE_LAUNCHER_DIR   where the compiled launcher is cached
#                             [${XDG_CACHE_HOME:-$HOME/.cache}/benchstream/clickhouse-launcher]
#   CLICKHOUSE_START_TIMEOUT  seconds to wait for /ping on start                  [60]
#   CLICKHOUSE_STOP_TIMEOUT   seconds to wait for a clean exit before SIGKILL     [30]
set -euo pipefail

SCRIPT_DIR="$(cd -P -- "$(dirname -- "${BASH_SOURCE[0]}")" && pwd)"
REPO_ROOT="$(cd -P -- "$SCRIPT_DIR/../.." && pwd)"
LAUNCHER_SRC="$SCRIPT_DIR/clickhouse/launcher.c"
SCRIPT_NAME=clickhouse.sh
# shellcheck source=lib.sh
source "$SCRIPT_DIR/lib.sh"

usage() {
  echo "usage: ${0##*/} start|stop|status|kill|restart|version" >&2
  echo "  start    build the launcher if needed, start the server, wait until /ping answers, print its version" >&2
  echo "  stop     cancel the server's keep-alive query (a clean exit), SIGKILL after CLICKHOUSE_STOP_TIMEOUT s" >&2
  echo "  status   exit 0 if the server is running and answers /ping, 3 if not" >&2
  echo "  kill     SIGKILL the server: a crash, nothing flushed or closed" >&2
  echo "  restart  stop, then start (on the same data)" >&2
  echo "  version  print the ClickHouse version of the library (no server needed)" >&2
  exit 2
}

port_var() {
  local name="$1" value="$2"
  is_uint "$value" && ((10#$value >= 1 && 10#$value <= 65535)) \
    || die "$name must be a port from 1 to 65535, got '$value'"
  echo $((10#$value))
}
CLICKHOUSE_HTTP_PORT="$(port_var CLICKHOUSE_HTTP_PORT "${CLICKHOUSE_HTTP_PORT:-8123}")"
CLICKHOUSE_TCP_PORT="$(port_var CLICKHOUSE_TCP_PORT "${CLICKHOUSE_TCP_PORT:-9000}")"
((CLICKHOUSE_HTTP_PORT != CLICKHOUSE_TCP_PORT)) || die "CLICKHOUSE_HTTP_PORT and CLICKHOUSE_TCP_PORT must differ"
CLICKHOUSE_LISTEN_HOST="${CLICKHOUSE_LISTEN_HOST:-127.0.0.1}"
[[ "$CLICKHOUSE_LISTEN_HOST" =~ ^[0-9A-Fa-f.:]+$ ]] \
  || die "CLICKHOUSE_LISTEN_HOST must be an IP address (127.0.0.1, 0.0.0.0, ::), got '$CLICKHOUSE_LISTEN_HOST'"
CLICKHOUSE_START_TIMEOUT="${CLICKHOUSE_START_TIMEOUT:-60}"
is_uint "$CLICKHOUSE_START_TIMEOUT" || die "CLICKHOUSE_START_TIMEOUT must be a number of seconds"
CLICKHOUSE_STOP_TIMEOUT="${CLICKHOUSE_STOP_TIMEOUT:-30}"
is_uint "$CLICKHOUSE_STOP_TIMEOUT" || die "CLICKHOUSE_STOP_TIMEOUT must be a number of seconds"

BENCHSTREAM_DATA_DIR="${BENCHSTREAM_DATA_DIR:-$REPO_ROOT/.benchstream}"
DATA_DIR="${CLICKHOUSE_DATA_DIR:-$BENCHSTREAM_DATA_DIR/clickhouse-$CLICKHOUSE_HTTP_PORT}"
# Absolute: it is written into config.xml and matched in the server's command line (server_pid).
[[ "$DATA_DIR" == /* ]] || DATA_DIR="$PWD/$DATA_DIR"
LAUNCHER_DIR="${CLICKHOUSE_LAUNCHER_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/benchstream/clickhouse-launcher}"
[[ "$LAUNCHER_DIR" == /* ]] || LAUNCHER_DIR="$PWD/$LAUNCHER_DIR"
CONFIG="$DATA_DIR/config.xml"
DB_PATH="$DATA_DIR/data"
PID_FILE="$DATA_DIR/clickhouse.pid"
SERVER_LOG="$DATA_DIR/clickhouse-server.log"
# The launcher's stdout and stderr: clickhouse-local's own messages (a failed listener, a bad option) land here.
LAUNCHER_LOG="$DATA_DIR/launcher.log"
# The keep-alive query's id: cancelling it (KILL QUERY) is the clean way to stop the server.
KEEPALIVE_ID="benchstream-clickhouse-keepalive"

# The library npm chdb installed for this platform (@chdb/lib-linux-x64-gnu, ...-arm64-gnu).
find_libchdb() {
  if [[ -n "${CLICKHOUSE_LIBCHDB:-}" ]]; then
    [[ -f "$CLICKHOUSE_LIBCHDB" ]] || die "CLICKHOUSE_LIBCHDB=$CLICKHOUSE_LIBCHDB is not a file"
    echo "$CLICKHOUSE_LIBCHDB"
    return 0
  fi
  local so
  for so in "$REPO_ROOT"/node_modules/@chdb/lib-linux-*/libchdb.so; do
    [[ -f "$so" ]] && { echo "$so"; return 0; }
  done
  die "no libchdb.so under $REPO_ROOT/node_modules/@chdb/: run npm install (the chdb package brings it)," \
    "or set CLICKHOUSE_LIBCHDB"
}

# The compiled launcher, built once per version of its source: a changed launcher.c gets a new binary.
launcher() {
  local sum bin tmp
  sum="$(sha256sum -- "$LAUNCHER_SRC" | cut -c1-16)"
  bin="$LAUNCHER_DIR/$sum/benchstream-clickhouse"
  if [[ ! -x "$bin" ]]; then
    local cc="${CC:-cc}"
    need "$cc" "install a C compiler (e.g. apt-get install gcc libc6-dev); the launcher is compiled on first use"
    mkdir -p -- "$LAUNCHER_DIR/$sum"
    # Compiled under a temporary name and renamed: a concurrent start never runs a half-written binary.
    tmp="$(mktemp "$LAUNCHER_DIR/$sum/.build.XXXXXX")"
    if ! "$cc" -O2 -Wall -o "$tmp" "$LAUNCHER_SRC" -ldl 2>"$tmp.log"; then
      cat -- "$tmp.log" >&2
      rm -f -- "$tmp" "$tmp.log"
      die "compiling $LAUNCHER_SRC failed (see above)"
    fi
    rm -f -- "$tmp.log"
    mv -f -- "$tmp" "$bin"
  fi
  echo "$bin"
}

# Prints the server's pid if the pid file names a live process started on this data dir.
server_pid() {
  [[ -s "$PID_FILE" ]] || return 1
  local pid
  pid="$(<"$PID_FILE")"
  is_uint "$pid" && kill -0 "$pid" 2>/dev/null || return 1
  # A recycled pid belongs to something else: its command line would not name our data.
  tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null | grep -qF -- "--path=$DB_PATH" || return 1
  echo "$pid"
}

# http_query SQL: the answer of our own server, or a non-zero status.
http_query() {
  curl -sS --fail-with-body --max-time 10 --data-binary "$1" "http://127.0.0.1:$CLICKHOUSE_HTTP_PORT/"
}

ping_ok() {
  [[ "$(curl -s --max-time 2 "http://127.0.0.1:$CLICKHOUSE_HTTP_PORT/ping" 2>/dev/null)" == "Ok." ]]
}

xml_escape() {
  local s="$1"
  s="${s//&/&amp;}"
  s="${s//</&lt;}"
  s="${s//>/&gt;}"
  echo "$s"
}

# config.xml, written on every start (config.d/ is the place for additions). clickhouse-local reads no
# config.xml unless told, and reads users from this file's <users> section.
write_config() {
  local networks password
  # Without a password the default user is the loopback's only, whatever CLICKHOUSE_LISTEN_HOST says.
  if [[ -n "${CLICKHOUSE_PASSWORD:-}" ]]; then
    password="<password_sha256_hex>$(printf '%s' "$CLICKHOUSE_PASSWORD" | sha256sum | cut -c1-64)</password_sha256_hex>"
    networks="<ip>::/0</ip>"
  else
    password="<password></password>"
    networks="<ip>127.0.0.1</ip><ip>::1</ip>"
  fi
  mkdir -p -- "$DATA_DIR/config.d"
  cat >"$CONFIG" <<EOF
<!-- Written by deploy/local/clickhouse.sh on every start; put additions in config.d/ beside it. -->
<clickhouse>
  <logger>
    <level>information</level>
    <log>$(xml_escape "$SERVER_LOG")</log>
    <size>100M</size>
    <count>3</count>
  </logger>
  <!-- Without naming this file here, clickhouse-local reads the users below but not their access_management. -->
  <user_directories><users_xml><path>$(xml_escape "$CONFIG")</path></users_xml></user_directories>
  <users>
    <default>
      $password
      <networks>$networks</networks>
      <profile>default</profile>
      <quota>default</quota>
      <!-- So that CREATE USER and friends reach the engine's own answer (docs/guides/deploy.md). -->
      <access_management>1</access_management>
    </default>
  </users>
  <profiles><default/></profiles>
  <quotas><default/></quotas>
</clickhouse>
EOF
}

cmd_start() {
  need curl "install curl (e.g. apt-get install curl); readiness is checked on /ping"
  lock_data_dir "$DATA_DIR" $((CLICKHOUSE_START_TIMEOUT + CLICKHOUSE_STOP_TIMEOUT + 60))
  local so bin pid
  so="$(find_libchdb)"
  bin="$(launcher)"
  if pid="$(server_pid)"; then
    if ping_ok; then
      echo "clickhouse already running on 127.0.0.1:$CLICKHOUSE_HTTP_PORT (pid $pid, data: $DATA_DIR)"
      return 0
    fi
    echo "clickhouse process $pid exists but /ping on :$CLICKHOUSE_HTTP_PORT does not answer yet; waiting"
  else
    rm -f -- "$PID_FILE"
    local p
    for p in "$CLICKHOUSE_HTTP_PORT" "$CLICKHOUSE_TCP_PORT"; do
      port_open "$p" && die "127.0.0.1:$p is already in use by another process (not the server of $DATA_DIR);" \
        "set CLICKHOUSE_HTTP_PORT / CLICKHOUSE_TCP_PORT"
    done
    write_config
    [[ -f "$LAUNCHER_LOG" ]] && mv -f -- "$LAUNCHER_LOG" "$LAUNCHER_LOG.1"
    # The keep-alive: one row a second, never ending (system.numbers), summed so that nothing is output and the
    # result stays empty. sleepEachRow sleeps at most 3 s a block, so one-row blocks.
    local query="SYSTEM START LISTEN HTTP; SYSTEM START LISTEN TCP;
      SELECT sum(sleepEachRow(1)) FROM system.numbers SETTINGS max_block_size = 1"
    # setsid+nohup: its own session, immune to the caller's SIGHUP and Ctrl-C. cwd is the data dir, so that
    # nothing the engine resolves against it lands elsewhere. fd 9 (the lock) must not leak into the server.
    local start=(nohup)
    command -v setsid >/dev/null 2>&1 && start=(setsid nohup)
    (cd -- "$DATA_DIR" && exec "${start[@]}" "$bin" "$so" \
      --config-file="$CONFIG" --path="$DB_PATH" \
      --http_port="$CLICKHOUSE_HTTP_PORT" --tcp_port="$CLICKHOUSE_TCP_PORT" \
      --listen_host="$CLICKHOUSE_LISTEN_HOST" --query_id="$KEEPALIVE_ID" --query "$query" \
      </dev/null >>"$LAUNCHER_LOG" 2>&1 9>&-) &
    pid=$!
    echo "$pid" >"$PID_FILE"
  fi
  local deadline=$((SECONDS + CLICKHOUSE_START_TIMEOUT))
  until ping_ok; do
    if ! kill -0 "$pid" 2>/dev/null; then
      rm -f -- "$PID_FILE"
      echo "clickhouse.sh: the server (pid $pid) exited during startup" >&2
      print_log_tail "$LAUNCHER_LOG" "$SERVER_LOG"
      exit 1
    fi
    if ((SECONDS >= deadline)); then
      echo "clickhouse.sh: /ping on 127.0.0.1:$CLICKHOUSE_HTTP_PORT did not answer within" \
        "${CLICKHOUSE_START_TIMEOUT}s; killing it (raise CLICKHOUSE_START_TIMEOUT on slow machines)" >&2
      print_log_tail "$LAUNCHER_LOG" "$SERVER_LOG"
      kill -KILL "$pid" 2>/dev/null || true
      rm -f -- "$PID_FILE"
      exit 1
    fi
    sleep 0.2
  done
  local version
  version="$(http_query 'SELECT version()')" || die "the server answers /ping but not SELECT version()"
  echo "clickhouse $version (chDB stand-in, $(basename -- "$(dirname -- "$so")")) ready on" \
    "http://$CLICKHOUSE_LISTEN_HOST:$CLICKHOUSE_HTTP_PORT, native :$CLICKHOUSE_TCP_PORT (pid $pid, data: $DATA_DIR)"
}

# Cancelling the keep-alive query ends clickhouse-local's main: the listeners close, the tables are detached and
# the status file is removed, as at a server's clean shutdown. SIGTERM would not do that: chDB installs no handler
# for it, so it ends the process at once, like SIGKILL.
cmd_stop() {
  [[ -d "$DATA_DIR" ]] || { echo "clickhouse not running"; return 0; }
  lock_data_dir "$DATA_DIR" $((CLICKHOUSE_START_TIMEOUT + CLICKHOUSE_STOP_TIMEOUT + 60))
  local pid
  if ! pid="$(server_pid)"; then
    rm -f -- "$PID_FILE"
    echo "clickhouse not running"
    return 0
  fi
  http_query "KILL QUERY WHERE query_id = '$KEEPALIVE_ID' ASYNC" >/dev/null 2>&1 \
    || note "could not cancel the keep-alive query over HTTP; the server will be killed"
  local deadline=$((SECONDS + CLICKHOUSE_STOP_TIMEOUT))
  while kill -0 "$pid" 2>/dev/null; do
    if ((SECONDS >= deadline)); then
      note "the server $pid did not exit ${CLICKHOUSE_STOP_TIMEOUT}s after its query was cancelled; sending SIGKILL"
      kill -KILL "$pid" 2>/dev/null || true
      local tries=20
      while ((tries-- > 0)) && kill -0 "$pid" 2>/dev/null; do sleep 0.25; done
      break
    fi
    sleep 0.2
  done
  rm -f -- "$PID_FILE"
  echo "clickhouse stopped (pid $pid)"
}

# A crash as the operating system sees one: the process ends where it is, in the middle of an insert or a merge.
# ClickHouse finds its data on the next start on the same data dir (parts are written to temporary names and
# renamed when complete).
cmd_kill() {
  local pid
  if ! pid="$(server_pid)"; then
    rm -f -- "$PID_FILE"
    echo "clickhouse not running"
    return 0
  fi
  kill -KILL "$pid" 2>/dev/null || true
  local tries=40
  while ((tries-- > 0)) && kill -0 "$pid" 2>/dev/null; do sleep 0.05; done
  rm -f -- "$PID_FILE"
  echo "clickhouse killed (pid $pid)"
}

cmd_status() {
  local pid
  if ! pid="$(server_pid)"; then
    echo "clickhouse not running (data: $DATA_DIR)"
    return 3
  fi
  if ping_ok; then
    echo "clickhouse running on 127.0.0.1:$CLICKHOUSE_HTTP_PORT, native :$CLICKHOUSE_TCP_PORT" \
      "(pid $pid, data: $DATA_DIR)"
  else
    echo "clickhouse process running (pid $pid, data: $DATA_DIR) but /ping on :$CLICKHOUSE_HTTP_PORT does not answer"
    return 3
  fi
}

cmd_version() {
  local so bin
  so="$(find_libchdb)"
  bin="$(launcher)"
  "$bin" "$so" --query "SELECT version()"
}

[[ $# -eq 1 ]] || usage
case "$1" in
  start) cmd_start ;;
  stop) cmd_stop ;;
  status) cmd_status ;;
  kill) cmd_kill ;;
  restart) cmd_stop; cmd_start ;;
  version) cmd_version ;;
  *) usage ;;
esac
