#!/usr/bin/env bash
# Runs real YCSB 0.17.0 (site.ycsb.Client from Maven Central) with Benchstream's
# YCSB modules: the bridge (io.benchstream.ycsb.BenchstreamDB, wraps any YCSB
# binding and streams one event per operation to Kafka) and our Redis binding
# (io.benchstream.ycsb.redis.RedisClient). No Docker, no YCSB tarball: YCSB core,
# its dependencies and ours come from Maven Central through services/ycsb (the only
# place versions are written down) and are cached outside the repository.
#
# Usage: deploy/local/ycsb.sh fetch|classpath|binding-classpath NAME|run ARGS...
#   fetch       build services/ycsb (mvn package, tests skipped) and cache the class path
#   classpath   print the class path (fetching first if the cache is missing or stale)
#   binding-classpath hbase
#               build our HBase binding (services/ycsb/hbase, a module of its own: the
#               HBase client's ~100 jars stay out of everyone else's class path) when
#               its sources changed, and print its jar and dependencies (no YCSB core)
#   run ARGS    java -cp <classpath> site.ycsb.Client ARGS, e.g.
#               deploy/local/ycsb.sh run -t -P workloads/workloada -threads 8 \
#                 -db io.benchstream.ycsb.BenchstreamDB -p benchstream.db=io.benchstream.ycsb.redis.RedisClient \
#                 -p redis.host=127.0.0.1 -p redis.port=6379 -p benchstream.runid=R \
#                 -p benchstream.brokers=127.0.0.1:9092
#
# Environment (all optional):
#   YCSB_LIBS_DIR   jar cache        [${XDG_CACHE_HOME:-$HOME/.cache}/benchstream/ycsb-<version>/libs]
#   YCSB_JAVA_OPTS  JVM flags for run [-Xmx1g]
set -euo pipefail

SCRIPT_DIR="$(cd -P -- "$(dirname -- "${BASH_SOURCE[0]}")" && pwd)"
REPO_ROOT="$(cd -P -- "$SCRIPT_DIR/../.." && pwd)"
SCRIPT_NAME=ycsb.sh
# shellcheck source=lib.sh
source "$SCRIPT_DIR/lib.sh"
MODULES="$REPO_ROOT/services/ycsb"
POM="$MODULES/pom.xml"

usage() {
  echo "usage: ${0##*/} fetch|classpath|binding-classpath hbase|run ARGS..." >&2
  echo "  fetch      build services/ycsb and cache YCSB core + dependencies + our jars" >&2
  echo "  classpath  print the class path (fetches when missing or stale)" >&2
  echo "  binding-classpath hbase  build our HBase binding if needed and print its class path" >&2
  echo "  run ARGS   run site.ycsb.Client ARGS with that class path" >&2
  exit 2
}

[[ -f "$POM" ]] || die "missing $POM"
YCSB_VERSION="$(sed -n 's:.*<ycsb.version>\([^<]*\)</ycsb.version>.*:\1:p' "$POM" | head -n1)"
[[ -n "$YCSB_VERSION" ]] || die "cannot read <ycsb.version> from $POM"
LIBS_DIR="${YCSB_LIBS_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/benchstream/ycsb-$YCSB_VERSION/libs}"
[[ "$LIBS_DIR" == /* ]] || LIBS_DIR="$PWD/$LIBS_DIR"
LIBS_MARKER=".benchstream-complete"

# The cache holds our own jars too, so it is only valid for the sources it was built
# from: the marker records a digest of services/ycsb's poms and main sources.
sources_digest() {
  (cd "$MODULES" && find . -path '*/target' -prune -o \( -name pom.xml -o -path '*/src/main/*' \) -type f -print \
    | LC_ALL=C sort | xargs sha256sum) | sha256sum | cut -c1-16
}

libs_current() {
  [[ -f "$LIBS_DIR/$LIBS_MARKER" && -f "$LIBS_DIR/core-$YCSB_VERSION.jar" ]] \
    && [[ "$(cut -d' ' -f1 <"$LIBS_DIR/$LIBS_MARKER")" == "$(sources_digest)" ]]
}

fetch_libs() {
  need mvn "install Maven 3 (e.g. apt-get install maven); it downloads YCSB core from Maven Central"
  need java "install a JDK 17+ (e.g. apt-get install openjdk-17-jdk-headless)"
  local parent digest
  parent="$(dirname -- "$LIBS_DIR")"
  mkdir -p -- "$parent"
  digest="$(sources_digest)"
  # Built next to the final dir so the final mv is an atomic same-filesystem rename:
  # an interrupted fetch leaves only a .tmp dir (removed by the trap).
  FETCH_TMP="$(mktemp -d "$parent/.libs.tmp.XXXXXX")"
  trap cleanup_fetch_tmp EXIT
  trap 'exit 130' INT TERM HUP
  echo "building services/ycsb and caching YCSB $YCSB_VERSION + Benchstream jars in $LIBS_DIR ..." >&2
  local mvn_log="$FETCH_TMP/mvn.log"
  if ! mvn -q -B -Dstyle.color=never -f "$POM" package -DskipTests >"$mvn_log" 2>&1; then
    cat "$mvn_log" >&2
    die "mvn package failed (see output above)"
  fi
  mkdir -p "$FETCH_TMP/libs"
  cp -- "$MODULES"/runtime/target/lib/*.jar "$FETCH_TMP/libs/"
  [[ -f "$FETCH_TMP/libs/core-$YCSB_VERSION.jar" ]] \
    || die "mvn finished but core-$YCSB_VERSION.jar is missing from its output"
  echo "$digest $YCSB_VERSION $(date -u +%Y-%m-%dT%H:%M:%SZ)" >"$FETCH_TMP/libs/$LIBS_MARKER"
  if [[ -e "$LIBS_DIR" ]]; then mv -- "$LIBS_DIR" "$FETCH_TMP/stale"; fi
  if ! mv -T -- "$FETCH_TMP/libs" "$LIBS_DIR" 2>/dev/null; then
    libs_current || die "could not move the jars into $LIBS_DIR"
  fi
  cleanup_fetch_tmp
  FETCH_TMP=""
  echo "cached $(find "$LIBS_DIR" -name '*.jar' | wc -l) jars in $LIBS_DIR" >&2
}

classpath() {
  libs_current || fetch_libs
  # Explicit jar list (not "dir/*") so the class path printed is usable anywhere.
  find "$LIBS_DIR" -maxdepth 1 -name '*.jar' | LC_ALL=C sort | paste -sd: -
}

# Our HBase binding: built in its own folder (target/), rebuilt when a source or the
# pom is newer than the jar; YCSB core and jaxb come from the main class path.
hbase_classpath() {
  local dir="$MODULES/hbase" jar cp_file log
  jar="$(ls "$dir"/target/ycsb-hbase-*.jar 2>/dev/null | head -n1 || true)"
  cp_file="$dir/target/classpath.txt"
  if [[ -z "$jar" || ! -f "$cp_file" || -n "$(find "$dir/pom.xml" "$dir/src/main" -newer "$jar" -print -quit)" ]]; then
    need mvn "install Maven 3 (e.g. apt-get install maven); it downloads the HBase client from Maven Central"
    echo "building services/ycsb/hbase (mvn package) ..." >&2
    log="$(mktemp)"
    if ! mvn -q -B -Dstyle.color=never -f "$dir/pom.xml" package dependency:build-classpath -DskipTests \
        -Dmdep.outputFile="$cp_file" -Dmdep.includeScope=runtime >"$log" 2>&1; then
      cat "$log" >&2
      rm -f -- "$log"
      die "mvn package of services/ycsb/hbase failed (see above)"
    fi
    rm -f -- "$log"
    jar="$(ls "$dir"/target/ycsb-hbase-*.jar | head -n1)"
  fi
  echo "$jar:$(<"$cp_file")"
}

[[ $# -ge 1 ]] || usage
cmd="$1"
shift
case "$cmd" in
  fetch) [[ $# -eq 0 ]] || usage; fetch_libs ;;
  classpath) [[ $# -eq 0 ]] || usage; classpath ;;
  binding-classpath)
    [[ $# -eq 1 && "$1" == hbase ]] || die "binding-classpath knows hbase only (redis is in the main class path)"
    hbase_classpath
    ;;
  run)
    cp="$(classpath)"
    read -r -a opts <<<"${YCSB_JAVA_OPTS:--Xmx1g}"
    exec java "${opts[@]}" -cp "$cp" site.ycsb.Client "$@"
    ;;
  *) usage ;;
esac
