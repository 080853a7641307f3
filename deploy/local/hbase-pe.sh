#!/usr/bin/env bash
# HBase's own benchmark, PerformanceEvaluation, as `bin/hbase pe` runs it, without an HBase
# tarball: `hbase-pe.sh pe [PE options] <command> <nclients>` runs
# org.apache.hadoop.hbase.PerformanceEvaluation against the HBase on HBASE_HOST:HBASE_ZK_PORT
# (the one deploy/local/hbase.sh runs, or any other). Give it to an agent as the command of
# `driver: pe` (`benchstream agent --allow-command hbase=deploy/local/hbase-pe.sh`), or run it
# by hand; `benchstream import-pe` reads what it prints.
#
# PerformanceEvaluation is a test class of hbase-mapreduce (its `tests` jar), so it is
# fetched from Maven Central through deploy/local/hbase/pe-pom.xml into a cache beside the
# server jars hbase.sh fetches (the client side of the class path). What PE logs goes to
# stderr in HBase's own layout (its conf/log4j2.properties: `%d{ISO8601} %-5p [%t] %c{2}: %m`),
# as bin/hbase prints it (the ZooKeeper client's chatter left out).
#
# Usage: deploy/local/hbase-pe.sh pe [-Dkey=value]... [--nomapred] [PE options] <command> <nclients>
#        deploy/local/hbase-pe.sh fetch
#
# Environment (all optional):
#   HBASE_VERSION      Maven version of org.apache.hbase:hbase-mapreduce     [2.5.10-hadoop3]
#   HBASE_HOST         ZooKeeper's host                                       [127.0.0.1]
#   HBASE_ZK_PORT      ZooKeeper's client port                                [2181]
#   HBASE_LIBS_DIR     the server jars (hbase.sh fetch)  [$CACHE/lib]
#   HBASE_PE_LIBS_DIR  PE's own jars                     [$CACHE/pe-lib]
#   ($CACHE: ${XDG_CACHE_HOME:-$HOME/.cache}/benchstream/hbase-<version>)
#   HBASE_PE_HEAP      JVM heap flags of the PE client                        [-Xmx1g]
set -euo pipefail

SCRIPT_DIR="$(cd -P -- "$(dirname -- "${BASH_SOURCE[0]}")" && pwd)"
POM="$SCRIPT_DIR/hbase/pe-pom.xml"
SCRIPT_NAME=hbase-pe.sh
# shellcheck source=lib.sh
source "$SCRIPT_DIR/lib.sh"

usage() {
  echo "usage: ${0##*/} pe [-Dkey=value]... [PE options] <command> <nclients>   (as bin/hbase pe)" >&2
  echo "       ${0##*/} fetch   (only download PE's jars)" >&2
  exit 2
}

HBASE_VERSION="${HBASE_VERSION:-2.5.10-hadoop3}"
[[ "$HBASE_VERSION" =~ ^2\.[0-9]+\.[0-9]+(-hadoop3)?$ ]] \
  || die "HBASE_VERSION must look like 2.5.10-hadoop3 (an org.apache.hbase 2.x version), got '$HBASE_VERSION'"
HBASE_HOST="${HBASE_HOST:-127.0.0.1}"
[[ "$HBASE_HOST" =~ ^[A-Za-z0-9]([A-Za-z0-9.-]{0,252})$ ]] \
  || die "HBASE_HOST must be a host name or IPv4 address, got '$HBASE_HOST'"
HBASE_ZK_PORT="${HBASE_ZK_PORT:-2181}"
if ! is_uint "$HBASE_ZK_PORT" || ((10#$HBASE_ZK_PORT < 1 || 10#$HBASE_ZK_PORT > 65535)); then
  die "HBASE_ZK_PORT must be a port number 1-65535, got '$HBASE_ZK_PORT'"
fi
HBASE_PE_HEAP="${HBASE_PE_HEAP:--Xmx1g}"
CACHE_DIR="${XDG_CACHE_HOME:-$HOME/.cache}/benchstream/hbase-$HBASE_VERSION"
LIBS_DIR="${HBASE_LIBS_DIR:-$CACHE_DIR/lib}"
PE_LIBS_DIR="${HBASE_PE_LIBS_DIR:-$CACHE_DIR/pe-lib}"
LIBS_MARKER=".benchstream-complete"
PE_JAR="hbase-mapreduce-$HBASE_VERSION-tests.jar"
# The last dependency of pe-pom.xml: its presence tells a cache of this pom from an older one.
PE_LAST_JAR="hbase-server-$HBASE_VERSION-tests.jar"

pe_libs_complete() {
  [[ -f "$PE_LIBS_DIR/$LIBS_MARKER" && -f "$PE_LIBS_DIR/$PE_JAR" && -f "$PE_LIBS_DIR/$PE_LAST_JAR" ]]
}

fetch_pe_libs() {
  pe_libs_complete && return 0
  need mvn "install Maven 3 (e.g. apt-get install maven); it downloads PE's jars from Maven Central"
  local parent
  parent="$(dirname -- "$PE_LIBS_DIR")"
  mkdir -p -- "$parent"
  # Same-filesystem temp dir and a rename, as hbase.sh: never a half-filled cache.
  PE_FETCH_TMP="$(mktemp -d "$parent/.pe-lib.tmp.XXXXXX")"
  trap 'rm -rf -- "$PE_FETCH_TMP"' EXIT  # global: the trap outlives the function
  note "fetching PerformanceEvaluation of HBase $HBASE_VERSION from Maven Central into $PE_LIBS_DIR ..."
  if ! mvn -q -B -Dstyle.color=never -f "$POM" -Dhbase.version="$HBASE_VERSION" \
      dependency:copy-dependencies -DoutputDirectory="$PE_FETCH_TMP/lib" -DincludeScope=runtime \
      >"$PE_FETCH_TMP/mvn.log" 2>&1; then
    cat "$PE_FETCH_TMP/mvn.log" >&2
    die "mvn dependency:copy-dependencies failed for hbase-mapreduce $HBASE_VERSION (tests jar)"
  fi
  [[ -f "$PE_FETCH_TMP/lib/$PE_JAR" ]] || die "mvn finished but $PE_JAR is missing from its output"
  # The server jars come first on the class path; the same jars here would only shadow them.
  local j
  for j in "$PE_FETCH_TMP"/lib/*.jar; do
    if [[ -f "$LIBS_DIR/${j##*/}" ]]; then rm -f -- "$j"; fi
  done
  echo "$HBASE_VERSION $(date -u +%Y-%m-%dT%H:%M:%SZ)" >"$PE_FETCH_TMP/lib/$LIBS_MARKER"
  if [[ -e "$PE_LIBS_DIR" ]] && ! pe_libs_complete; then mv -- "$PE_LIBS_DIR" "$PE_FETCH_TMP/stale"; fi
  mv -T -- "$PE_FETCH_TMP/lib" "$PE_LIBS_DIR" 2>/dev/null || pe_libs_complete \
    || die "could not move the fetched jars into $PE_LIBS_DIR"
  rm -rf -- "$PE_FETCH_TMP"
  trap - EXIT
}

ensure_libs() {
  if [[ ! -f "$LIBS_DIR/$LIBS_MARKER" ]]; then
    if [[ -n "${HBASE_LIBS_DIR:-}" ]]; then
      die "HBASE_LIBS_DIR=$HBASE_LIBS_DIR holds no complete jar cache (run deploy/local/hbase.sh fetch)"
    fi
    HBASE_VERSION="$HBASE_VERSION" bash "$SCRIPT_DIR/hbase.sh" fetch >&2
  fi
  fetch_pe_libs
}

run_pe() {
  need java "install a JDK 17 (e.g. apt-get install openjdk-17-jdk-headless)"
  ensure_libs
  local heap
  # Global: the EXIT trap runs after this function returned.
  PE_CONF="$(mktemp -d "${TMPDIR:-/tmp}/hbase-pe.XXXXXX")"
  trap 'rm -rf -- "$PE_CONF"' EXIT
  # HBase's shipped conf/log4j2.properties, as bin/hbase uses it: INFO to the console on stderr.
  cat >"$PE_CONF/log4j2.properties" <<'EOF'
status = warn
dest = err
appender.console.type = Console
appender.console.target = SYSTEM_ERR
appender.console.name = console
appender.console.layout.type = PatternLayout
appender.console.layout.pattern = %d{ISO8601} %-5p [%t] %c{2}: %.1000m%n
rootLogger = INFO,console
# Unlike bin/hbase: the ZooKeeper client's environment dump (class path, home and work
# folders, 30 lines a connection) at WARN; PE's own lines are all INFO of hbase.PerformanceEvaluation.
logger.zookeeper.name = org.apache.zookeeper
logger.zookeeper.level = WARN
EOF
  read -r -a heap <<<"$HBASE_PE_HEAP"
  # The generic options (-D) go before PE's own: ToolRunner takes them off the front.
  java "${heap[@]}" \
    -Dorg.apache.hbase.thirdparty.io.netty.tryReflectionSetAccessible=true \
    --add-opens java.base/java.nio=ALL-UNNAMED --add-opens java.base/sun.nio.ch=ALL-UNNAMED \
    --add-opens java.base/java.lang=ALL-UNNAMED --add-opens java.base/java.util=ALL-UNNAMED \
    --add-opens java.base/java.util.concurrent=ALL-UNNAMED --add-opens java.base/java.lang.reflect=ALL-UNNAMED \
    --add-exports java.base/jdk.internal.misc=ALL-UNNAMED \
    -Djava.net.preferIPv4Stack=true -Dlog4j2.configurationFile="$PE_CONF/log4j2.properties" \
    -cp "$LIBS_DIR/*:$PE_LIBS_DIR/*" org.apache.hadoop.hbase.PerformanceEvaluation \
    -Dhbase.zookeeper.quorum="$HBASE_HOST" -Dhbase.zookeeper.property.clientPort="$HBASE_ZK_PORT" "$@"
}

[[ $# -ge 1 ]] || usage
case "$1" in
  pe) shift; run_pe "$@" ;;
  fetch) ensure_libs; echo "PerformanceEvaluation of HBase $HBASE_VERSION cached in $PE_LIBS_DIR" ;;
  *) usage ;;
esac
