#!/usr/bin/env bash
# Runs a real single-node Apache HBase 2 (HMaster, one region server and ZooKeeper in one
# JVM, data on the local filesystem) on 127.0.0.1 (or HBASE_HOST) without Docker, for local development
# and benchmarks of Benchstream with YCSB.
#
# HBase publishes no server tarball on Maven Central, so the server is assembled from its
# module jars through deploy/local/hbase/pom.xml and cached per version outside the
# repository. The config (hbase-site.xml, log4j2, metrics2) is generated into the data dir
# on every start. deploy/local/hbase/HBaseLocalTool.java (compiled once per version) waits
# for readiness, creates the YCSB table, flushes and reads JMX.
#
# Usage: deploy/local/hbase.sh start|stop|status|fetch|restart|create-table|flush|metrics|clean
#
# Environment (all optional):
#   HBASE_VERSION           Maven version of org.apache.hbase:hbase-server   [2.5.10-hadoop3]
#   HBASE_HOST              the address every server binds and announces (ZooKeeper, meta,
#                           info servers): another machine's clients need this machine's
#                           address here; no authentication, so a trusted network only [127.0.0.1]
#   HBASE_ZK_PORT           ZooKeeper client port                            [2181]
#   HBASE_MASTER_PORT       master RPC port                                  [16000]
#   HBASE_RS_PORT           region server RPC port                           [16020]
#   HBASE_MASTER_INFO_PORT  master web UI port, -1 = off                     [16010]
#   HBASE_RS_INFO_PORT      region server web UI + /jmx port, -1 = off       [16030]
#   HBASE_JMX_PORT          remote JMX (no auth, loopback) port, empty = off [empty]
#   BENCHSTREAM_DATA_DIR    root for local state                             [<repo>/.benchstream]
#   HBASE_DATA_DIR          conf, root dir, ZooKeeper data, logs, pid
#                           [$BENCHSTREAM_DATA_DIR/hbase-$HBASE_ZK_PORT]
#   HBASE_LIBS_DIR          jar cache     [${XDG_CACHE_HOME:-$HOME/.cache}/benchstream/hbase-<version>/lib]
#   HBASE_HEAP              JVM heap flags                                   [-Xms512m -Xmx1g]
#   HBASE_BLOCKCACHE_SIZE   hfile.block.cache.size, fraction of heap (0 = no block cache) [0.4]
#   HBASE_HANDLERS          hbase.regionserver.handler.count                 [30]
#   HBASE_METRICS_PERIOD    seconds between metric refreshes (JMX values)    [1]
#   HBASE_TABLE             table that start creates if missing, empty = none [usertable]
#   HBASE_FAMILY            its column family (YCSB's default)               [family]
#   HBASE_REGIONS           its initial regions (YCSB-style pre-split if > 1) [1]
#   HBASE_START_TIMEOUT     seconds to wait for readiness on start           [120]
#   HBASE_STOP_TIMEOUT      seconds to wait after SIGTERM before SIGKILL     [30]
set -euo pipefail

SCRIPT_DIR="$(cd -P -- "$(dirname -- "${BASH_SOURCE[0]}")" && pwd)"
REPO_ROOT="$(cd -P -- "$SCRIPT_DIR/../.." && pwd)"
POM="$SCRIPT_DIR/hbase/pom.xml"
TOOL_SRC="$SCRIPT_DIR/hbase/HBaseLocalTool.java"
SCRIPT_NAME=hbase.sh
# shellcheck source=lib.sh
source "$SCRIPT_DIR/lib.sh"

usage() {
  echo "usage: ${0##*/} start|stop|status|fetch|restart|create-table|flush|metrics|clean" >&2
  echo "  start         fetch jars if needed, start HBase, wait until ready, create \$HBASE_TABLE" >&2
  echo "  stop          SIGTERM HBase (SIGKILL after HBASE_STOP_TIMEOUT s)" >&2
  echo "  status        exit 0 if HBase is running, 3 if not" >&2
  echo "  fetch         download the server jars into the cache (HBASE_LIBS_DIR)" >&2
  echo "  restart       stop, then start" >&2
  echo "  create-table  create \$HBASE_TABLE with \$HBASE_FAMILY (and \$HBASE_REGIONS) if missing" >&2
  echo "  flush         flush \$HBASE_TABLE's memstore to HFiles (reads then use the block cache)" >&2
  echo "  metrics       print the region server's block cache counters as one JSON line" >&2
  echo "  clean         delete the data dir's HBase and ZooKeeper data (HBase must be stopped)" >&2
  exit 2
}

HBASE_VERSION="${HBASE_VERSION:-2.5.10-hadoop3}"
# Only HBase 2 builds: the config keys and the single-JVM layout below are 2.x's.
[[ "$HBASE_VERSION" =~ ^2\.[0-9]+\.[0-9]+(-hadoop3)?$ ]] \
  || die "HBASE_VERSION must look like 2.5.10-hadoop3 (an org.apache.hbase:hbase-server 2.x version)," \
    "got '$HBASE_VERSION'"

HBASE_HOST="${HBASE_HOST:-127.0.0.1}"
[[ "$HBASE_HOST" =~ ^[A-Za-z0-9]([A-Za-z0-9.-]{0,252})$ ]] \
  || die "HBASE_HOST must be a host name or IPv4 address this machine has, got '$HBASE_HOST'"

check_port() { # name value allow_off
  local name="$1" value="$2" allow_off="${3:-}"
  if [[ -n "$allow_off" && "$value" == "-1" ]]; then return 0; fi
  if ! is_uint "$value" || ((10#$value < 1 || 10#$value > 65535)); then
    die "$name must be a port number 1-65535${allow_off:+ or -1 (off)}, got '$value'"
  fi
}
HBASE_ZK_PORT="${HBASE_ZK_PORT:-2181}"
HBASE_MASTER_PORT="${HBASE_MASTER_PORT:-16000}"
HBASE_RS_PORT="${HBASE_RS_PORT:-16020}"
HBASE_MASTER_INFO_PORT="${HBASE_MASTER_INFO_PORT:-16010}"
HBASE_RS_INFO_PORT="${HBASE_RS_INFO_PORT:-16030}"
HBASE_JMX_PORT="${HBASE_JMX_PORT:-}"
check_port HBASE_ZK_PORT "$HBASE_ZK_PORT"
check_port HBASE_MASTER_PORT "$HBASE_MASTER_PORT"
check_port HBASE_RS_PORT "$HBASE_RS_PORT"
check_port HBASE_MASTER_INFO_PORT "$HBASE_MASTER_INFO_PORT" off
check_port HBASE_RS_INFO_PORT "$HBASE_RS_INFO_PORT" off
[[ -z "$HBASE_JMX_PORT" ]] || check_port HBASE_JMX_PORT "$HBASE_JMX_PORT"
# Every listening port, for the clash checks (one JVM binds them all).
PORTS=("$HBASE_ZK_PORT" "$HBASE_MASTER_PORT" "$HBASE_RS_PORT")
[[ "$HBASE_MASTER_INFO_PORT" == "-1" ]] || PORTS+=("$HBASE_MASTER_INFO_PORT")
[[ "$HBASE_RS_INFO_PORT" == "-1" ]] || PORTS+=("$HBASE_RS_INFO_PORT")
[[ -z "$HBASE_JMX_PORT" ]] || PORTS+=("$HBASE_JMX_PORT")
if [[ "$(printf '%s\n' "${PORTS[@]}" | sort | uniq -d)" != "" ]]; then
  die "HBASE_*_PORT values must all differ, got ${PORTS[*]}"
fi

HBASE_BLOCKCACHE_SIZE="${HBASE_BLOCKCACHE_SIZE:-0.4}"
# HBase refuses to start when block cache + memstore (0.4) exceed 0.8 of the heap.
if ! [[ "$HBASE_BLOCKCACHE_SIZE" =~ ^(0(\.[0-9]+)?|\.[0-9]+)$ ]] \
    || ! awk -v v="$HBASE_BLOCKCACHE_SIZE" 'BEGIN { exit !(v >= 0 && v <= 0.4) }'; then
  die "HBASE_BLOCKCACHE_SIZE must be a fraction of the heap from 0 to 0.4 (0 = no block cache)," \
    "got '$HBASE_BLOCKCACHE_SIZE'"
fi
HBASE_HANDLERS="${HBASE_HANDLERS:-30}"
if ! is_uint "$HBASE_HANDLERS" || ((10#$HBASE_HANDLERS < 1)); then
  die "HBASE_HANDLERS must be a positive number, got '$HBASE_HANDLERS'"
fi
HBASE_METRICS_PERIOD="${HBASE_METRICS_PERIOD:-1}"
if ! is_uint "$HBASE_METRICS_PERIOD" || ((10#$HBASE_METRICS_PERIOD < 1)); then
  die "HBASE_METRICS_PERIOD must be a positive number of seconds, got '$HBASE_METRICS_PERIOD'"
fi
HBASE_TABLE="${HBASE_TABLE-usertable}"
HBASE_FAMILY="${HBASE_FAMILY:-family}"
HBASE_REGIONS="${HBASE_REGIONS:-1}"
if ! is_uint "$HBASE_REGIONS" || ((10#$HBASE_REGIONS < 1)); then
  die "HBASE_REGIONS must be a positive number, got '$HBASE_REGIONS'"
fi
HBASE_START_TIMEOUT="${HBASE_START_TIMEOUT:-120}"
is_uint "$HBASE_START_TIMEOUT" || die "HBASE_START_TIMEOUT must be a number of seconds"
HBASE_STOP_TIMEOUT="${HBASE_STOP_TIMEOUT:-30}"
is_uint "$HBASE_STOP_TIMEOUT" || die "HBASE_STOP_TIMEOUT must be a number of seconds"
HBASE_HEAP="${HBASE_HEAP:--Xms512m -Xmx1g}"

BENCHSTREAM_DATA_DIR="${BENCHSTREAM_DATA_DIR:-$REPO_ROOT/.benchstream}"
DATA_DIR="${HBASE_DATA_DIR:-$BENCHSTREAM_DATA_DIR/hbase-$HBASE_ZK_PORT}"
CACHE_DIR="${XDG_CACHE_HOME:-$HOME/.cache}/benchstream/hbase-$HBASE_VERSION"
LIBS_DIR="${HBASE_LIBS_DIR:-$CACHE_DIR/lib}"
# Absolute paths: they end up in hbase-site.xml and on the JVM command line (which
# hbase_pid matches against), so they must not depend on the caller's cwd.
[[ "$DATA_DIR" == /* ]] || DATA_DIR="$PWD/$DATA_DIR"
[[ "$LIBS_DIR" == /* ]] || LIBS_DIR="$PWD/$LIBS_DIR"

CONF_DIR="$DATA_DIR/conf"
LOG_DIR="$DATA_DIR/logs"
LOG_FILE="$LOG_DIR/hbase.log"
OUT_FILE="$LOG_DIR/hbase.out"
PID_FILE="$DATA_DIR/hbase.pid"
VERSION_FILE="$DATA_DIR/hbase.version"
ROOT_DIR="$DATA_DIR/root"
ZK_DIR="$DATA_DIR/zookeeper"
TMP_DIR="$DATA_DIR/tmp"
# Written last by fetch; its presence is what makes the cache "complete".
LIBS_MARKER=".benchstream-complete"
# The region server's own metrics: blockCacheHitCount, blockCacheMissCount, ...
RS_SERVER_BEAN="Hadoop:service=HBase,name=RegionServer,sub=Server"
# The attributes 'metrics' prints (hit ratio = HitCount / (HitCount + MissCount)).
CACHE_ATTRS="blockCache(HitCount|MissCount|DataHitCount|DataMissCount|EvictionCount"
CACHE_ATTRS+="|Count|Size|FreeSize|CountHitPercent)"

java_major() {
  local v
  v="$(java -version 2>&1 | awk -F '"' '/version/ { print $2; exit }')"
  v="${v#1.}"
  echo "${v%%[.+-]*}"
}

# ---------------------------------------------------------------- jar cache

libs_complete() {
  [[ -f "$LIBS_DIR/$LIBS_MARKER" \
    && -f "$LIBS_DIR/hbase-server-$HBASE_VERSION.jar" \
    && -f "$LIBS_DIR/hbase-zookeeper-$HBASE_VERSION.jar" ]]
}

fetch_libs() {
  if libs_complete; then
    echo "hbase $HBASE_VERSION jars already cached in $LIBS_DIR"
    return 0
  fi
  need mvn "install Maven 3 (e.g. apt-get install maven); it downloads the HBase jars from Maven Central"
  need java "install a JDK 17 (e.g. apt-get install openjdk-17-jdk-headless)"
  local parent
  parent="$(dirname -- "$LIBS_DIR")"
  mkdir -p -- "$parent"
  # Same-filesystem temp dir, so the final mv is an atomic rename(2): an interrupted
  # fetch leaves only a .tmp dir (removed by the trap), never a half-filled cache.
  FETCH_TMP="$(mktemp -d "$parent/.lib.tmp.XXXXXX")"
  trap cleanup_fetch_tmp EXIT
  trap 'exit 130' INT TERM HUP
  echo "fetching hbase $HBASE_VERSION jars from Maven Central into $LIBS_DIR ..."
  local mvn_log="$FETCH_TMP/mvn.log"
  if ! mvn -q -B -Dstyle.color=never -f "$POM" -Dhbase.version="$HBASE_VERSION" \
      dependency:copy-dependencies -DoutputDirectory="$FETCH_TMP/lib" -DincludeScope=runtime \
      >"$mvn_log" 2>&1; then
    cat "$mvn_log" >&2
    die "mvn dependency:copy-dependencies failed for HBase $HBASE_VERSION (see output above; is it on Maven Central?)"
  fi
  [[ -f "$FETCH_TMP/lib/hbase-server-$HBASE_VERSION.jar" ]] \
    || die "mvn finished but hbase-server-$HBASE_VERSION.jar is missing from its output"
  echo "$HBASE_VERSION $(date -u +%Y-%m-%dT%H:%M:%SZ)" >"$FETCH_TMP/lib/$LIBS_MARKER"
  if [[ -e "$LIBS_DIR" ]] && ! libs_complete; then
    mv -- "$LIBS_DIR" "$FETCH_TMP/stale"
  fi
  if ! mv -T -- "$FETCH_TMP/lib" "$LIBS_DIR" 2>/dev/null; then
    libs_complete || die "could not move fetched jars into $LIBS_DIR"
  fi
  cleanup_fetch_tmp
  FETCH_TMP=""
  echo "hbase $HBASE_VERSION jars cached in $LIBS_DIR ($(find "$LIBS_DIR" -name '*.jar' | wc -l) jars)"
}

# Some published hbase-server jars (2.5.12-hadoop3) lack hbase-webapps/, without which
# the info servers cannot start; say so before the JVM fails with a less obvious error.
has_webapps() {
  local jar="$LIBS_DIR/hbase-server-$HBASE_VERSION.jar"
  if command -v unzip >/dev/null 2>&1; then
    unzip -l "$jar" 'hbase-webapps/regionserver/index.html' >/dev/null 2>&1
  else
    jar tf "$jar" 2>/dev/null | grep -q '^hbase-webapps/regionserver/'
  fi
}

# ---------------------------------------------------------------- helper tool

# Compiled once per HBase version and source content (a changed .java recompiles).
tool_dir() {
  local sum
  sum="$(cksum <"$TOOL_SRC" | cut -d' ' -f1)"
  echo "$CACHE_DIR/tool-$sum"
}

ensure_tool() {
  local dir
  dir="$(tool_dir)"
  [[ -f "$dir/HBaseLocalTool.class" ]] && return 0
  mkdir -p -- "$CACHE_DIR"
  need javac "install a JDK 17 (e.g. apt-get install openjdk-17-jdk-headless); the helper is compiled with javac"
  local tmp
  tmp="$(mktemp -d "$CACHE_DIR/.tool.tmp.XXXXXX")"
  if ! javac -nowarn -d "$tmp" -cp "$LIBS_DIR/*" "$TOOL_SRC" >"$tmp/javac.log" 2>&1; then
    cat "$tmp/javac.log" >&2
    rm -rf -- "$tmp"
    die "could not compile $TOOL_SRC against HBase $HBASE_VERSION"
  fi
  rm -f -- "$tmp/javac.log"
  mv -T -- "$tmp" "$dir" 2>/dev/null || rm -rf -- "$tmp"
  # Builds of older versions of the source are never used again.
  find "$CACHE_DIR" -maxdepth 1 -name 'tool-*' ! -path "$dir" -exec rm -rf -- {} + 2>/dev/null || true
}

run_tool() {
  ensure_tool
  # The conf dir first: the tool reads the generated hbase-site.xml for quorum and port.
  java -Dlog4j2.configurationFile="$CONF_DIR/log4j2-tool.properties" \
    -cp "$CONF_DIR:$(tool_dir):$LIBS_DIR/*" HBaseLocalTool "$@"
}

# ---------------------------------------------------------------- process state

# Prints the HBase pid if the pid file names a live process that is really ours (the
# command line names our conf dir: guards against pid reuse after a crash or reboot).
hbase_pid() {
  [[ -f "$PID_FILE" ]] || return 1
  local pid args
  pid="$(<"$PID_FILE")"
  is_uint "$pid" || return 1
  kill -0 "$pid" 2>/dev/null || return 1
  args="$(ps -o args= -p "$pid" 2>/dev/null || true)"
  [[ "$args" == *org.apache.hadoop.hbase.master.HMaster* && "$args" == *"$CONF_DIR"* ]] || return 1
  echo "$pid"
}

# ---------------------------------------------------------------- config

prop() { printf '  <property><name>%s</name><value>%s</value></property>\n' "$1" "$2"; }

write_config() {
  mkdir -p -- "$CONF_DIR" "$LOG_DIR" "$ROOT_DIR" "$ZK_DIR" "$TMP_DIR"
  {
    echo '<?xml version="1.0"?>'
    echo '<!-- Generated by deploy/local/hbase.sh on every start; edits are overwritten. -->'
    echo '<configuration>'
    # Standalone: master, region server and ZooKeeper in one JVM, data on the local FS.
    prop hbase.cluster.distributed false
    prop hbase.rootdir "file://$ROOT_DIR"
    # The local FS has no hflush/hsync capability; HBase would refuse to write its WAL.
    prop hbase.unsafe.stream.capability.enforce false
    # Defaults live under /tmp/hbase-\${user.name}, shared by every HBase of this user.
    prop hbase.tmp.dir "$TMP_DIR"
    prop hbase.zookeeper.property.dataDir "$ZK_DIR"
    prop hbase.zookeeper.quorum "$HBASE_HOST"
    prop hbase.zookeeper.property.clientPort "$HBASE_ZK_PORT"
    # One address (loopback unless HBASE_HOST says otherwise), the same name everywhere, so
    # that ZooKeeper and meta hold the address the clients connect to.
    # HBase checks its in-process ZooKeeper on the loopback (MiniZooKeeperCluster's 'stat'):
    # another address needs ZooKeeper on every interface.
    if [[ "$HBASE_HOST" == 127.0.0.1 ]]; then
      prop hbase.zookeeper.property.clientPortAddress 127.0.0.1
    else
      prop hbase.zookeeper.property.clientPortAddress 0.0.0.0
    fi
    prop hbase.master.hostname "$HBASE_HOST"
    prop hbase.unsafe.regionserver.hostname "$HBASE_HOST"
    prop hbase.master.ipc.address "$HBASE_HOST"
    prop hbase.regionserver.ipc.address "$HBASE_HOST"
    prop hbase.master.port "$HBASE_MASTER_PORT"
    prop hbase.regionserver.port "$HBASE_RS_PORT"
    prop hbase.master.info.port "$HBASE_MASTER_INFO_PORT"
    prop hbase.master.info.bindAddress "$HBASE_HOST"
    prop hbase.regionserver.info.port "$HBASE_RS_INFO_PORT"
    prop hbase.regionserver.info.bindAddress "$HBASE_HOST"
    # One region server exists; do not wait 4.5 s for more before assigning regions.
    prop hbase.master.wait.on.regionservers.mintostart 1
    prop hbase.master.wait.on.regionservers.timeout 1000
    prop hbase.master.wait.on.regionservers.interval 200
    # The region server's first reportForDuty usually races the master's start and then
    # sleeps this long (default 3 s) before retrying; it is also the heartbeat period.
    prop hbase.regionserver.msginterval 1000
    # ZooKeeper lives and dies with this JVM: on SIGTERM the master stops it before the
    # region server has deleted its znode, which then retried for ~20 s (default 3 retries
    # with growing sleeps; 1 retry still took up to ~9 s). An in-process ZooKeeper is not
    # lost for any other reason, so the server does not retry.
    prop zookeeper.recovery.retry 0
    prop zookeeper.recovery.retry.intervalmill 200
    prop hfile.block.cache.size "$HBASE_BLOCKCACHE_SIZE"
    prop hbase.regionserver.handler.count "$HBASE_HANDLERS"
    # How often the region server recomputes the values it exposes as metrics (ms).
    prop hbase.regionserver.metrics.period "$((10#$HBASE_METRICS_PERIOD * 1000))"
    echo '</configuration>'
  } >"$CONF_DIR/hbase-site.xml"

  # Hadoop metrics2 serves JMX (and so /jmx) from a cache refreshed once per period
  # (default 10 s); a per-second sampler needs it at least as fast.
  cat >"$CONF_DIR/hadoop-metrics2-hbase.properties" <<EOF
# Generated by deploy/local/hbase.sh on every start; edits are overwritten.
*.period=$HBASE_METRICS_PERIOD
EOF

  # Server log to hbase.log only; hbase.out keeps what the JVM itself prints.
  cat >"$CONF_DIR/log4j2.properties" <<EOF
# Generated by deploy/local/hbase.sh on every start; edits are overwritten.
status = warn
dest = err
appender.file.type = File
appender.file.name = file
appender.file.fileName = $LOG_FILE
appender.file.append = true
appender.file.layout.type = PatternLayout
appender.file.layout.pattern = %d{ISO8601} %-5p [%t] %c{2}: %.1000m%n
rootLogger.level = info
rootLogger.appenderRef.file.ref = file
# ZooKeeper and Hadoop chatter would drown the useful lines.
logger.zookeeper.name = org.apache.zookeeper
logger.zookeeper.level = warn
logger.hadoop.name = org.apache.hadoop
logger.hadoop.level = warn
logger.hbase.name = org.apache.hadoop.hbase
logger.hbase.level = info
EOF

  # The helper only needs to complain, on stderr.
  cat >"$CONF_DIR/log4j2-tool.properties" <<EOF
# Generated by deploy/local/hbase.sh on every start; edits are overwritten.
status = warn
dest = err
appender.err.type = Console
appender.err.name = err
appender.err.target = SYSTEM_ERR
appender.err.layout.type = PatternLayout
appender.err.layout.pattern = %d{ISO8601} %-5p %c{2}: %.500m%n
rootLogger.level = error
rootLogger.appenderRef.err.ref = err
EOF
}

# What HBase's own bin/hbase adds on JDK 11+: the info servers (jetty/jersey), netty and
# the off-heap code reflect into JDK internals that Java 17 closes by default.
JDK17_FLAGS=(
  -Dorg.apache.hbase.thirdparty.io.netty.tryReflectionSetAccessible=true
  --add-modules jdk.unsupported
  --add-opens java.base/java.io=ALL-UNNAMED
  --add-opens java.base/java.nio=ALL-UNNAMED
  --add-opens java.base/sun.nio.ch=ALL-UNNAMED
  --add-opens java.base/java.lang=ALL-UNNAMED
  --add-opens java.base/jdk.internal.ref=ALL-UNNAMED
  --add-opens java.base/java.lang.reflect=ALL-UNNAMED
  --add-opens java.base/java.util=ALL-UNNAMED
  --add-opens java.base/java.util.concurrent=ALL-UNNAMED
  --add-exports java.base/jdk.internal.misc=ALL-UNNAMED
  --add-exports java.security.jgss/sun.security.krb5=ALL-UNNAMED
  --add-exports java.base/sun.net.dns=ALL-UNNAMED
  --add-exports java.base/sun.net.util=ALL-UNNAMED
)

# ---------------------------------------------------------------- commands

cmd_start() {
  need java "install a JDK 17 (e.g. apt-get install openjdk-17-jdk-headless)"
  lock_data_dir "$DATA_DIR" $((HBASE_START_TIMEOUT + HBASE_STOP_TIMEOUT + 120))

  local pid started=$SECONDS
  if pid="$(hbase_pid)"; then
    echo "hbase process $pid already running on $HBASE_HOST:$HBASE_ZK_PORT; checking readiness"
  else
    rm -f -- "$PID_FILE"
    if [[ -f "$VERSION_FILE" && "$(<"$VERSION_FILE")" != "$HBASE_VERSION" ]]; then
      die "$DATA_DIR holds data of HBase $(<"$VERSION_FILE"), not $HBASE_VERSION;" \
        "use another HBASE_DATA_DIR or run '${0##*/} clean' with HBASE_VERSION=$(<"$VERSION_FILE")"
    fi
    local p
    for p in "${PORTS[@]}"; do
      if port_open "$p" "$HBASE_HOST"; then
        die "$HBASE_HOST:$p is already in use by another process (not the HBase of $DATA_DIR);" \
          "set the HBASE_*_PORT variables"
      fi
    done

    libs_complete || fetch_libs
    if [[ "$HBASE_MASTER_INFO_PORT" != "-1" || "$HBASE_RS_INFO_PORT" != "-1" ]] && ! has_webapps; then
      die "hbase-server-$HBASE_VERSION.jar has no hbase-webapps/, so its info servers cannot start;" \
        "set HBASE_MASTER_INFO_PORT=-1 HBASE_RS_INFO_PORT=-1 (and HBASE_JMX_PORT for metrics)" \
        "or use another HBASE_VERSION"
    fi
    ensure_tool
    write_config
    echo "$HBASE_VERSION" >"$VERSION_FILE"

    if [[ -f "$LOG_FILE" ]]; then mv -f -- "$LOG_FILE" "$LOG_FILE.1"; fi
    if [[ -f "$OUT_FILE" ]]; then mv -f -- "$OUT_FILE" "$OUT_FILE.1"; fi
    local heap jvm=()
    read -r -a heap <<<"$HBASE_HEAP"
    if (($(java_major) >= 11)); then jvm+=("${JDK17_FLAGS[@]}"); fi
    if [[ -n "$HBASE_JMX_PORT" ]]; then
      # Registry and RMI server on one loopback port, no auth: local benchmarks only.
      jvm+=(
        -Dcom.sun.management.jmxremote.port="$HBASE_JMX_PORT"
        -Dcom.sun.management.jmxremote.rmi.port="$HBASE_JMX_PORT"
        -Dcom.sun.management.jmxremote.host=127.0.0.1
        -Djava.rmi.server.hostname=127.0.0.1
        -Dcom.sun.management.jmxremote.authenticate=false
        -Dcom.sun.management.jmxremote.ssl=false
        -Dcom.sun.management.jmxremote.local.only=true
      )
    fi
    local launcher=(nohup)
    command -v setsid >/dev/null 2>&1 && launcher=(setsid nohup)
    # setsid+nohup: own session, so HBase outlives this script and the caller's Ctrl-C.
    # fd 9 (the lock) must not leak into the JVM or it would hold the lock forever.
    "${launcher[@]}" java -Dproc_master "${heap[@]}" "${jvm[@]}" \
      -XX:+UseG1GC -XX:OnOutOfMemoryError="kill -9 %p" -Djava.awt.headless=true \
      -Djava.net.preferIPv4Stack=true \
      -Dlog4j2.configurationFile="$CONF_DIR/log4j2.properties" \
      -Dhbase.log.dir="$LOG_DIR" -Djava.io.tmpdir="$TMP_DIR" \
      -cp "$CONF_DIR:$LIBS_DIR/*" org.apache.hadoop.hbase.master.HMaster start \
      </dev/null >>"$OUT_FILE" 2>&1 9>&- &
    pid=$!
    echo "$pid" >"$PID_FILE"
  fi

  local left=$((HBASE_START_TIMEOUT - (SECONDS - started)))
  ((left > 0)) || left=1
  local rc=0 table_args=()
  [[ -z "$HBASE_TABLE" ]] || table_args=("$HBASE_TABLE" "$HBASE_FAMILY" "$HBASE_REGIONS")
  run_tool wait-ready "$pid" "$left" "${table_args[@]}" || rc=$?
  if ((rc != 0)); then
    if ((rc == 3)); then
      rm -f -- "$PID_FILE"
      echo "hbase.sh: HBase process $pid exited during startup" >&2
    elif ((rc == 5)); then
      # Ready, but the table could not be created: leave HBase up to look at it.
      die "HBase is up but creating table $HBASE_TABLE failed (see above)"
    else
      echo "hbase.sh: HBase not ready after ${HBASE_START_TIMEOUT}s;" \
        "stopping it (raise HBASE_START_TIMEOUT on slow machines)" >&2
      stop_pid "$pid" "$HBASE_STOP_TIMEOUT" HBase >/dev/null
      rm -f -- "$PID_FILE"
    fi
    print_log_tail "$OUT_FILE" "$LOG_FILE"
    exit 1
  fi
  echo "hbase $HBASE_VERSION ready on $HBASE_HOST in $((SECONDS - started)) s:" \
    "zookeeper :$HBASE_ZK_PORT, master :$HBASE_MASTER_PORT, region server :$HBASE_RS_PORT$(info_summary)" \
    "(pid $pid, data: $DATA_DIR)"
}

info_summary() {
  local s=""
  [[ "$HBASE_MASTER_INFO_PORT" == "-1" ]] || s+=", master UI :$HBASE_MASTER_INFO_PORT"
  [[ "$HBASE_RS_INFO_PORT" == "-1" ]] || s+=", region server UI and /jmx :$HBASE_RS_INFO_PORT"
  [[ -z "$HBASE_JMX_PORT" ]] || s+=", JMX :$HBASE_JMX_PORT"
  echo "$s"
}

create_table() {
  [[ -n "$HBASE_TABLE" ]] || die "HBASE_TABLE is empty"
  run_tool create-table "$HBASE_TABLE" "$HBASE_FAMILY" "$HBASE_REGIONS" 60 \
    || die "create-table $HBASE_TABLE failed (see above)"
}

cmd_create_table() {
  hbase_pid >/dev/null || die "hbase not running (data: $DATA_DIR)"
  create_table
}

cmd_flush() {
  hbase_pid >/dev/null || die "hbase not running (data: $DATA_DIR)"
  run_tool flush "${HBASE_TABLE:?HBASE_TABLE is empty}" 120 || die "flush of $HBASE_TABLE failed"
}

# One JSON line with the region server's block cache counters. Through the info server's
# /jmx servlet when it is on (fast: one HTTP request), else through remote JMX (a JVM
# start per call; 'HBaseLocalTool jmx <port> <bean> 1' keeps one open and prints every s).
cmd_metrics() {
  hbase_pid >/dev/null || die "hbase not running (data: $DATA_DIR)"
  if [[ "$HBASE_RS_INFO_PORT" != "-1" ]]; then
    need curl "install curl, or read http://$HBASE_HOST:$HBASE_RS_INFO_PORT/jmx?qry=$RS_SERVER_BEAN yourself"
    local body
    body="$(curl -fsS --max-time 5 "http://$HBASE_HOST:$HBASE_RS_INFO_PORT/jmx?qry=$RS_SERVER_BEAN")" \
      || die "GET http://$HBASE_HOST:$HBASE_RS_INFO_PORT/jmx failed"
    # /jmx pretty-prints one '"name" : value,' per line; keep the block cache counters.
    printf '%s\n' "$body" | awk -v ts="$(date +%s%3N)" -v re="\"$CACHE_ATTRS\"" '
      $0 ~ re {
        line = $0; sub(/^[ \t]*/, "", line); sub(/,[ \t]*$/, "", line); sub(/": */, "\":", line)
        out = out "," line
      }
      END { if (out == "") exit 1; print "{\"ts\":" ts out "}" }' \
      || die "no blockCache* attributes in /jmx?qry=$RS_SERVER_BEAN (region server not up yet?)"
  elif [[ -n "$HBASE_JMX_PORT" ]]; then
    run_tool jmx "$HBASE_JMX_PORT" "$RS_SERVER_BEAN" 0 "$CACHE_ATTRS"
  else
    die "no metrics endpoint: HBASE_RS_INFO_PORT is -1 and HBASE_JMX_PORT is empty"
  fi
}

# SIGTERM runs HBase's shutdown hook (regions closed, memstores flushed, WAL closed);
# SIGKILL is only the fallback for a hung JVM (stop_pid, lib.sh).
cmd_stop() {
  [[ -d "$DATA_DIR" ]] || { echo "hbase not running"; return 0; }
  lock_data_dir "$DATA_DIR" $((HBASE_START_TIMEOUT + HBASE_STOP_TIMEOUT + 120))
  local pid
  if ! pid="$(hbase_pid)"; then
    rm -f -- "$PID_FILE"
    echo "hbase not running"
    return 0
  fi
  local t0=$SECONDS
  stop_pid "$pid" "$HBASE_STOP_TIMEOUT" HBase
  rm -f -- "$PID_FILE"
  echo "hbase stopped (pid $pid, $((SECONDS - t0)) s)"
}

cmd_status() {
  local pid
  if pid="$(hbase_pid)"; then
    if port_open "$HBASE_ZK_PORT" "$HBASE_HOST" && port_open "$HBASE_RS_PORT" "$HBASE_HOST"; then
      echo "hbase $(<"$VERSION_FILE") running on $HBASE_HOST:" \
        "zookeeper :$HBASE_ZK_PORT, master :$HBASE_MASTER_PORT, region server :$HBASE_RS_PORT$(info_summary)" \
        "(pid $pid, data: $DATA_DIR)"
    else
      echo "hbase process running (pid $pid, data: $DATA_DIR)" \
        "but $HBASE_HOST:$HBASE_ZK_PORT/$HBASE_RS_PORT not answering yet"
    fi
    return 0
  fi
  echo "hbase not running (data: $DATA_DIR)"
  return 3
}

cmd_clean() {
  [[ -d "$DATA_DIR" ]] || { echo "nothing to clean in $DATA_DIR"; return 0; }
  lock_data_dir "$DATA_DIR" $((HBASE_START_TIMEOUT + HBASE_STOP_TIMEOUT + 120))
  if hbase_pid >/dev/null; then die "hbase is running; stop it first"; fi
  rm -rf -- "$ROOT_DIR" "$ZK_DIR" "$TMP_DIR" "$VERSION_FILE"
  echo "removed HBase and ZooKeeper data in $DATA_DIR (logs and conf kept)"
}

[[ $# -eq 1 ]] || usage
case "$1" in
  start) cmd_start ;;
  stop) cmd_stop ;;
  status) cmd_status ;;
  fetch) fetch_libs ;;
  restart) cmd_stop; cmd_start ;;
  create-table) cmd_create_table ;;
  flush) cmd_flush ;;
  metrics) cmd_metrics ;;
  clean) cmd_clean ;;
  *) usage ;;
esac
