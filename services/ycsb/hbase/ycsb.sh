#!/usr/bin/env bash
# Runs real YCSB 0.17.0 (site.ycsb.Client from Maven Central) with Benchstream's HBase 2
# binding, io.benchstream.ycsb.hbase.HBaseClient. Builds the binding on first use and
# caches the resolved classpath in target/.
#
# Usage: services/ycsb/hbase/ycsb.sh load|run [YCSB arguments...]
#   e.g. services/ycsb/hbase/ycsb.sh load -P workloads/workloada -threads 4 -s \
#          -p hbase.zookeeper.quorum=127.0.0.1 -p hbase.zookeeper.property.clientPort=2181
#
# Environment (all optional):
#   HBASE_CONF_DIR   a directory with hbase-site.xml, put first on the classpath  [none]
#   YCSB_HEAP        JVM heap flags                                               [-Xmx1g]
#   YCSB_LOG4J2      log4j2 config for the HBase client's own logging     [conf/log4j2.properties]
set -euo pipefail

MODULE_DIR="$(cd -P -- "$(dirname -- "${BASH_SOURCE[0]}")" && pwd)"
die() { echo "ycsb.sh: $*" >&2; exit 1; }

[[ $# -ge 1 ]] || die "usage: ${0##*/} load|run [YCSB arguments...]"
case "$1" in
  load) phase=-load ;;
  run) phase=-t ;;
  *) die "first argument must be load or run, got '$1'" ;;
esac
shift

JAR="$MODULE_DIR/target/ycsb-hbase-0.1.0-SNAPSHOT.jar"
CP_FILE="$MODULE_DIR/target/classpath.txt"
# Rebuild when a source or the pom is newer than the jar (or the classpath list).
stale() {
  [[ -f "$JAR" && -f "$CP_FILE" ]] || return 0
  [[ -n "$(find "$MODULE_DIR/pom.xml" "$MODULE_DIR/src" -newer "$JAR" -print -quit)" ]]
}
if stale; then
  command -v mvn >/dev/null 2>&1 || die "mvn not found: install Maven 3 to build the binding"
  echo "ycsb.sh: building the HBase binding (mvn package) ..." >&2
  log="$(mktemp)"
  # includeScope=test: compile + provided (YCSB core, JAXB) + runtime (log4j2 binding),
  # less the test-only JUnit jars.
  if ! mvn -q -B -Dstyle.color=never -f "$MODULE_DIR/pom.xml" package dependency:build-classpath \
      -Dmdep.outputFile="$CP_FILE" -Dmdep.includeScope=test \
      -DexcludeGroupIds=org.junit.jupiter,org.junit.platform,org.opentest4j,org.apiguardian >"$log" 2>&1; then
    cat "$log" >&2
    rm -f -- "$log"
    die "mvn package failed (see above)"
  fi
  rm -f -- "$log"
fi

cp="$JAR:$(<"$CP_FILE")"
[[ -z "${HBASE_CONF_DIR:-}" ]] || cp="$HBASE_CONF_DIR:$cp"
read -r -a heap <<<"${YCSB_HEAP:--Xmx1g}"
# As for the server (deploy/local/hbase.sh): without them the HBase client falls back
# from its Unsafe byte comparisons and logs a stack trace on Java 17.
jdk_flags=(
  -Dorg.apache.hbase.thirdparty.io.netty.tryReflectionSetAccessible=true
  --add-opens java.base/java.nio=ALL-UNNAMED
  --add-opens java.base/sun.nio.ch=ALL-UNNAMED
  --add-opens java.base/java.lang=ALL-UNNAMED
  --add-opens java.base/jdk.internal.ref=ALL-UNNAMED
  --add-opens java.base/java.lang.reflect=ALL-UNNAMED
  --add-opens java.base/java.util=ALL-UNNAMED
  --add-opens java.base/java.util.concurrent=ALL-UNNAMED
  --add-exports java.base/jdk.internal.misc=ALL-UNNAMED
)

exec java "${heap[@]}" "${jdk_flags[@]}" \
  -Dlog4j2.configurationFile="${YCSB_LOG4J2:-$MODULE_DIR/conf/log4j2.properties}" \
  -cp "$cp" site.ycsb.Client "$phase" -db io.benchstream.ycsb.hbase.HBaseClient "$@"
