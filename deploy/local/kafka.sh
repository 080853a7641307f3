#!/usr/bin/env bash
# Runs a real Apache Kafka broker (KRaft, combined broker+controller) on 127.0.0.1 (or the
# addresses of KAFKA_HOSTS) without
# Docker, for local development, tests and benchmarks of Benchstream: one node by default,
# or a cluster of KAFKA_BROKERS_COUNT combined nodes, each with its own ports, data dir,
# pid file and log, which can be stopped, killed and started one by one (failure tests).
#
# The broker jars come from Maven Central through deploy/local/kafka-pom.xml (the only
# place the default Kafka version is written down) and are cached outside the repository,
# one directory per version, so every checkout and every data dir shares one copy.
# Two release lines are supported: 4.x (the default; log4j2) and 3.x in KRaft mode
# (3.9.x is the one kept working, e.g. KAFKA_VERSION=3.9.1; log4j 1 via reload4j).
#
# Usage: deploy/local/kafka.sh start|stop|status|fetch|restart|version|brokers
#        deploy/local/kafka.sh kill-node|stop-node|start-node <node id>
#
# Environment (all optional):
#   KAFKA_VERSION          broker version to fetch/start    [<kafka.version> in kafka-pom.xml]
#   KAFKA_BROKERS_COUNT    nodes, 1-9; node i has node.id i  [1, or the count the data dir has]
#   KAFKA_PORT             client port of node 1 (node i: KAFKA_PORT+i-1) [9092]
#   KAFKA_CONTROLLER_PORT  controller port of node 1 (node i: +i-1)     [KAFKA_PORT+count]
#   KAFKA_HOSTS            the address each node listens on and advertises, comma-separated, one
#                          per node or one for all [127.0.0.1]; an address other machines (or
#                          network namespaces) reach makes the cluster reachable from them
#   KAFKA_NETNS            the network namespace each node runs in, comma-separated, one per node
#                          (ip netns exec; root only) [none]: deploy/local/netns.sh makes them, and
#                          test:distributed cuts the nodes' links there
#   BENCHSTREAM_DATA_DIR   root for local state                         [<repo>/.benchstream]
#   KAFKA_DATA_DIR         config, KRaft log dirs, pid file, broker.log [$BENCHSTREAM_DATA_DIR/kafka-$KAFKA_PORT]
#                          (a cluster: those of node i in its node-<i> directory)
#   KAFKA_LIBS_DIR         jar cache      [${XDG_CACHE_HOME:-$HOME/.cache}/benchstream/kafka-<version>/libs]
#   KAFKA_HEAP             JVM heap flags                               [-Xmx512m -Xms256m]
#   KAFKA_PARTITIONS       num.partitions for new topics                [4]
#   KAFKA_START_TIMEOUT    seconds to wait for readiness on start       [60]
#   KAFKA_STOP_TIMEOUT     seconds to wait after SIGTERM before SIGKILL [30]
# A secure listener instead of PLAINTEXT (the tests of TLS and SASL):
#   KAFKA_LISTENER_PROTOCOL   PLAINTEXT (default) or SASL_SSL: then clients and brokers speak
#                             SASL_SSL with SCRAM-SHA-512 only and controllers SSL; no plaintext port
#   KAFKA_SSL_KEYSTORE_PEM    the brokers' private key (PKCS#8, unencrypted) and certificate, PEM
#   KAFKA_SSL_TRUSTSTORE_PEM  the CA that signed it, PEM (brokers are each other's clients)
#   KAFKA_SCRAM_USERS         user:password[,user:password...], created when the storage is
#                             formatted; the first is the brokers' own (inter-broker) user
set -euo pipefail

# Resolve paths from the script's own location so it works from any cwd.
SCRIPT_DIR="$(cd -P -- "$(dirname -- "${BASH_SOURCE[0]}")" && pwd)"
REPO_ROOT="$(cd -P -- "$SCRIPT_DIR/../.." && pwd)"
POM="$SCRIPT_DIR/kafka-pom.xml"
SCRIPT_NAME=kafka.sh
# shellcheck source=lib.sh
source "$SCRIPT_DIR/lib.sh"

usage() {
  echo "usage: ${0##*/} start|stop|status|fetch|restart|version|brokers" >&2
  echo "       ${0##*/} kill-node|stop-node|start-node <node id>" >&2
  echo "  start       fetch jars if needed, format storage once, start every node, wait until ready" >&2
  echo "  stop        SIGTERM every node (SIGKILL after KAFKA_STOP_TIMEOUT s)" >&2
  echo "  status      exit 0 if every node is running, 3 if not" >&2
  echo "  fetch       download the broker jars into the cache (KAFKA_LIBS_DIR)" >&2
  echo "  restart     stop, then start (the version started is KAFKA_VERSION's, as for start)" >&2
  echo "  version     print the Kafka version start/fetch would use" >&2
  echo "  brokers     print the nodes' client addresses, host:port,... (KAFKA_BROKERS)" >&2
  echo "  kill-node   SIGKILL one node: a crash, no controlled shutdown" >&2
  echo "  stop-node   SIGTERM one node (SIGKILL after KAFKA_STOP_TIMEOUT s)" >&2
  echo "  start-node  start one node and wait until it is ready" >&2
  exit 2
}

# The default version is read from the pom rather than repeated here, so bumping the
# pom also moves the cache dir (old and new jars never mix) and the messages.
[[ -f "$POM" ]] || die "missing $POM"
if [[ -z "${KAFKA_VERSION:-}" ]]; then
  KAFKA_VERSION="$(sed -n 's:.*<kafka.version>\([^<]*\)</kafka.version>.*:\1:p' "$POM" | head -n1)"
  [[ -n "$KAFKA_VERSION" ]] || die "cannot read <kafka.version> from $POM"
fi
[[ "$KAFKA_VERSION" =~ ^[0-9]+\.[0-9]+\.[0-9]+$ ]] \
  || die "KAFKA_VERSION must be a release version like 4.1.1 or 3.9.1, got '$KAFKA_VERSION'"
# What differs between the lines: the logging backend (pom profile, config file, JVM
# flag) and a few broker settings. 3.x is run in KRaft mode only (no ZooKeeper).
KAFKA_LINE="${KAFKA_VERSION%%.*}"
case "$KAFKA_LINE" in
  4) LOG_BINDING_GLOB='log4j-slf4j-impl-*.jar' ;;
  3) LOG_BINDING_GLOB='slf4j-reload4j-*.jar' ;;
  *) die "KAFKA_VERSION $KAFKA_VERSION is not supported: use a 4.x release (default) or 3.9.x" ;;
esac
MVN_PROFILE="kafka-$KAFKA_LINE"

KAFKA_PORT="${KAFKA_PORT:-9092}"
is_uint "$KAFKA_PORT" || die "KAFKA_PORT must be a number, got '$KAFKA_PORT'"
KAFKA_PARTITIONS="${KAFKA_PARTITIONS:-4}"
if ! is_uint "$KAFKA_PARTITIONS" || ((10#$KAFKA_PARTITIONS == 0)); then
  die "KAFKA_PARTITIONS must be a positive number, got '$KAFKA_PARTITIONS'"
fi
KAFKA_START_TIMEOUT="${KAFKA_START_TIMEOUT:-60}"
is_uint "$KAFKA_START_TIMEOUT" || die "KAFKA_START_TIMEOUT must be a number of seconds"
KAFKA_STOP_TIMEOUT="${KAFKA_STOP_TIMEOUT:-30}"
is_uint "$KAFKA_STOP_TIMEOUT" || die "KAFKA_STOP_TIMEOUT must be a number of seconds"
KAFKA_HEAP="${KAFKA_HEAP:--Xmx512m -Xms256m}"

BENCHSTREAM_DATA_DIR="${BENCHSTREAM_DATA_DIR:-$REPO_ROOT/.benchstream}"
DATA_DIR="${KAFKA_DATA_DIR:-$BENCHSTREAM_DATA_DIR/kafka-$KAFKA_PORT}"
LIBS_DIR="${KAFKA_LIBS_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/benchstream/kafka-$KAFKA_VERSION/libs}"
# Absolute paths: they end up in server.properties and on the JVM command line (which
# broker_pid matches against), so they must not depend on the caller's cwd.
[[ "$DATA_DIR" == /* ]] || DATA_DIR="$PWD/$DATA_DIR"
[[ "$LIBS_DIR" == /* ]] || LIBS_DIR="$PWD/$LIBS_DIR"

# How many nodes: the environment's, else what this data dir was started with (so that
# stop and status need no KAFKA_BROKERS_COUNT), else one. A cluster's storage cannot be
# started with another count: its controller quorum is written into every node's log.
COUNT_FILE="$DATA_DIR/brokers.count"
RECORDED_COUNT=""
[[ -s "$COUNT_FILE" ]] && RECORDED_COUNT="$(<"$COUNT_FILE")"
NODES="${KAFKA_BROKERS_COUNT:-${RECORDED_COUNT:-1}}"
if ! is_uint "$NODES" || ((10#$NODES < 1 || 10#$NODES > 9)); then
  die "KAFKA_BROKERS_COUNT must be a number from 1 to 9, got '$NODES'"
fi
NODES=$((10#$NODES))
if [[ -n "$RECORDED_COUNT" && "$RECORDED_COUNT" != "$NODES" ]]; then
  die "the storage in $DATA_DIR is a cluster of $RECORDED_COUNT nodes, KAFKA_BROKERS_COUNT asks for $NODES;" \
    "use another KAFKA_DATA_DIR (or KAFKA_PORT), or remove $DATA_DIR to start empty"
fi
# A single node keeps its controller on KAFKA_PORT+1, as it always had.
KAFKA_CONTROLLER_PORT="${KAFKA_CONTROLLER_PORT:-$((10#$KAFKA_PORT + NODES))}"
is_uint "$KAFKA_CONTROLLER_PORT" || die "KAFKA_CONTROLLER_PORT must be a number, got '$KAFKA_CONTROLLER_PORT'"
if ((10#$KAFKA_CONTROLLER_PORT + NODES > 10#$KAFKA_PORT && 10#$KAFKA_PORT + NODES > 10#$KAFKA_CONTROLLER_PORT)); then
  die "the client ports ($KAFKA_PORT..$((10#$KAFKA_PORT + NODES - 1))) and the controller ports" \
    "($KAFKA_CONTROLLER_PORT..$((10#$KAFKA_CONTROLLER_PORT + NODES - 1))) must not overlap"
fi
((10#$KAFKA_PORT + NODES - 1 <= 65535 && 10#$KAFKA_CONTROLLER_PORT + NODES - 1 <= 65535)) \
  || die "ports above 65535: lower KAFKA_PORT / KAFKA_CONTROLLER_PORT"

# nth_item LIST I: the I-th of a comma-separated list, or its only item.
nth_item() {
  local items
  IFS=, read -r -a items <<<"$1"
  if ((${#items[@]} == 1)); then echo "${items[0]}"; else echo "${items[$2 - 1]}"; fi
}
KAFKA_HOSTS="${KAFKA_HOSTS:-127.0.0.1}"
IFS=, read -r -a _hosts <<<"$KAFKA_HOSTS"
((${#_hosts[@]} == 1 || ${#_hosts[@]} == NODES)) \
  || die "KAFKA_HOSTS must name one address, or one per node ($NODES), got '$KAFKA_HOSTS'"
for _h in "${_hosts[@]}"; do
  [[ "$_h" =~ ^[0-9]{1,3}(\.[0-9]{1,3}){3}$ ]] || die "KAFKA_HOSTS must list IPv4 addresses, got '$_h'"
done
KAFKA_NETNS="${KAFKA_NETNS:-}"
if [[ -n "$KAFKA_NETNS" ]]; then
  IFS=, read -r -a _netns <<<"$KAFKA_NETNS"
  ((${#_netns[@]} == NODES)) || die "KAFKA_NETNS must name one namespace per node ($NODES), got '$KAFKA_NETNS'"
  for _n in "${_netns[@]}"; do
    [[ "$_n" =~ ^[A-Za-z0-9._-]+$ ]] || die "KAFKA_NETNS: not a namespace name: '$_n'"
  done
fi

KAFKA_LISTENER_PROTOCOL="${KAFKA_LISTENER_PROTOCOL:-PLAINTEXT}"
case "$KAFKA_LISTENER_PROTOCOL" in
  PLAINTEXT) ;;
  SASL_SSL)
    for v in KAFKA_SSL_KEYSTORE_PEM KAFKA_SSL_TRUSTSTORE_PEM; do
      [[ -n "${!v:-}" && -f "${!v}" ]] || die "KAFKA_LISTENER_PROTOCOL=SASL_SSL needs $v: a PEM file"
      [[ "${!v}" == /* ]] || die "$v must be an absolute path, got '${!v}'"
    done
    [[ "${KAFKA_SCRAM_USERS:-}" =~ ^[A-Za-z0-9._-]+:[^,\"\;]+(,[A-Za-z0-9._-]+:[^,\"\;]+)*$ ]] \
      || die "KAFKA_LISTENER_PROTOCOL=SASL_SSL needs KAFKA_SCRAM_USERS=user:password[,user:password...]" \
        "(no commas, semicolons or double quotes in passwords)"
    ;;
  *) die "KAFKA_LISTENER_PROTOCOL must be PLAINTEXT or SASL_SSL, got '$KAFKA_LISTENER_PROTOCOL'" ;;
esac

CLUSTER_ID_FILE="$DATA_DIR/cluster.id"
if [[ "$KAFKA_LINE" == 3 ]]; then
  LOG4J_TOOLS="$DATA_DIR/tools-log4j.properties"
  LOG4J_FLAG="-Dlog4j.configuration"
else
  LOG4J_TOOLS="$DATA_DIR/tools-log4j2.properties"
  LOG4J_FLAG="-Dlog4j2.configurationFile"
fi
# Written last by fetch; its presence is what makes the cache "complete".
LIBS_MARKER=".benchstream-complete"

# use_node I: points the per-node variables at node I (1..NODES). A single node keeps the
# layout kafka.sh always had (everything directly in DATA_DIR); a cluster's node I lives
# in DATA_DIR/node-I.
use_node() {
  NODE_ID="$1"
  if ((NODES == 1)); then NODE_DIR="$DATA_DIR"; else NODE_DIR="$DATA_DIR/node-$NODE_ID"; fi
  NODE_PORT=$((10#$KAFKA_PORT + NODE_ID - 1))
  NODE_CONTROLLER_PORT=$((10#$KAFKA_CONTROLLER_PORT + NODE_ID - 1))
  NODE_HOST="$(nth_item "$KAFKA_HOSTS" "$NODE_ID")"
  NODE_NETNS=""
  [[ -z "$KAFKA_NETNS" ]] || NODE_NETNS="$(nth_item "$KAFKA_NETNS" "$NODE_ID")"
  NODE_NAME="kafka"
  ((NODES == 1)) || NODE_NAME="kafka node $NODE_ID"
  PID_FILE="$NODE_DIR/kafka.pid"
  LOG_FILE="$NODE_DIR/broker.log"
  CONFIG="$NODE_DIR/server.properties"
  if [[ "$KAFKA_LINE" == 3 ]]; then
    LOG4J_BROKER="$NODE_DIR/log4j.properties"
  else
    LOG4J_BROKER="$NODE_DIR/log4j2.properties"
  fi
  KRAFT_LOG_DIR="$NODE_DIR/kraft-logs"
  # The version of the broker last launched from this dir (what status reports), and
  # the version that formatted its storage (an older line cannot read a newer format).
  RUNNING_VERSION_FILE="$NODE_DIR/kafka.version"
  FORMATTED_VERSION_FILE="$NODE_DIR/kafka.formatted-by"
}

# node_arg ID: a node id argument, checked, as a plain number.
node_arg() {
  is_uint "${1:-}" && ((10#$1 >= 1 && 10#$1 <= NODES)) \
    || die "the node id must be a number from 1 to $NODES (KAFKA_BROKERS_COUNT), got '${1:-}'"
  echo $((10#$1))
}

# ---------------------------------------------------------------- jar cache

libs_complete() {
  [[ -f "$LIBS_DIR/$LIBS_MARKER" \
    && -f "$LIBS_DIR/kafka_2.13-$KAFKA_VERSION.jar" \
    && -f "$LIBS_DIR/kafka-tools-$KAFKA_VERSION.jar" ]] || return 1
  # Without its line's logging backend the broker would start but log nothing, and the
  # readiness wait (which reads broker.log) would time out.
  compgen -G "$LIBS_DIR/$LOG_BINDING_GLOB" >/dev/null
}

fetch_libs() {
  if libs_complete; then
    echo "kafka $KAFKA_VERSION jars already cached in $LIBS_DIR"
    return 0
  fi
  need mvn "install Maven 3 (e.g. apt-get install maven); it downloads the Kafka jars from Maven Central"
  need java "install a JDK 17+ (e.g. apt-get install openjdk-17-jre-headless)"
  local parent
  parent="$(dirname -- "$LIBS_DIR")"
  mkdir -p -- "$parent"
  # The temp dir lives next to the final dir so the final mv is a same-filesystem
  # rename(2), i.e. atomic: an interrupted fetch leaves only a .tmp dir (removed by
  # the trap), never a half-filled cache.
  FETCH_TMP="$(mktemp -d "$parent/.libs.tmp.XXXXXX")"
  trap cleanup_fetch_tmp EXIT
  # Turn signals into a normal exit so the EXIT trap removes the temp dir.
  trap 'exit 130' INT TERM HUP
  echo "fetching kafka $KAFKA_VERSION jars from Maven Central into $LIBS_DIR ..."
  local mvn_log="$FETCH_TMP/mvn.log"
  if ! mvn -q -B -Dstyle.color=never -f "$POM" -P "$MVN_PROFILE" -Dkafka.version="$KAFKA_VERSION" \
      dependency:copy-dependencies -DoutputDirectory="$FETCH_TMP/libs" -DincludeScope=runtime >"$mvn_log" 2>&1; then
    cat "$mvn_log" >&2
    die "mvn dependency:copy-dependencies failed for Kafka $KAFKA_VERSION" \
      "(see output above; is it a version released on Maven Central?)"
  fi
  [[ -f "$FETCH_TMP/libs/kafka_2.13-$KAFKA_VERSION.jar" ]] \
    || die "mvn finished but kafka_2.13-$KAFKA_VERSION.jar is missing from its output"
  echo "$KAFKA_VERSION $(date -u +%Y-%m-%dT%H:%M:%SZ)" >"$FETCH_TMP/libs/$LIBS_MARKER"
  # A cache dir without the marker is a leftover from an older/broken layout: move it
  # aside (atomic) before deleting, so the rename below lands on an empty name.
  if [[ -e "$LIBS_DIR" ]] && ! libs_complete; then
    mv -- "$LIBS_DIR" "$FETCH_TMP/stale"
  fi
  # mv -T refuses to nest into an existing non-empty dir; that only happens when a
  # concurrent fetch won the race, and its result is equally good.
  if ! mv -T -- "$FETCH_TMP/libs" "$LIBS_DIR" 2>/dev/null; then
    libs_complete || die "could not move fetched jars into $LIBS_DIR"
  fi
  cleanup_fetch_tmp
  FETCH_TMP=""
  echo "kafka $KAFKA_VERSION jars cached in $LIBS_DIR ($(find "$LIBS_DIR" -name '*.jar' | wc -l) jars)"
}

# ---------------------------------------------------------------- process state

# Prints the broker pid of the current node (use_node) if the pid file names a live
# process that is really that broker (checking the command line guards against pid
# reuse after a reboot/crash).
broker_pid() {
  [[ -f "$PID_FILE" ]] || return 1
  local pid args
  pid="$(<"$PID_FILE")"
  is_uint "$pid" || return 1
  kill -0 "$pid" 2>/dev/null || return 1
  args="$(ps -o args= -p "$pid" 2>/dev/null || true)"
  [[ "$args" == *kafka.Kafka* && "$args" == *"$CONFIG"* ]] || return 1
  echo "$pid"
}

# The version of the broker launched from this node's dir (empty for one started by an
# older kafka.sh, which ran the pom's one version, 3.9.1, and did not record it).
running_version() {
  [[ -s "$RUNNING_VERSION_FILE" ]] && echo "$(<"$RUNNING_VERSION_FILE")"
  return 0
}

broker_ready() {
  grep -q "Kafka Server started" "$LOG_FILE" 2>/dev/null && port_open "$NODE_PORT" "$NODE_HOST"
}

# ---------------------------------------------------------------- config

min() { if (($1 < $2)); then echo "$1"; else echo "$2"; fi; }

write_config() {
  # Rewritten on every start so env changes (partitions, ports) take effect; the
  # identity that must stay stable (cluster id, node id, log dirs) never changes.
  local voters="" i
  for ((i = 1; i <= NODES; i++)); do
    voters+="${voters:+,}$i@$(nth_item "$KAFKA_HOSTS" "$i"):$((10#$KAFKA_CONTROLLER_PORT + i - 1))"
  done
  # Internal topics get as many replicas as there are nodes, up to 3, and two in sync
  # where there are two or more (a single node: 1 and 1, as always).
  local rf min_isr
  rf="$(min "$NODES" 3)"
  min_isr="$(min "$rf" 2)"
  local client="PLAINTEXT" controller_protocol="PLAINTEXT"
  if [[ "$KAFKA_LISTENER_PROTOCOL" == SASL_SSL ]]; then
    client="SASL_SSL"
    controller_protocol="SSL"
  fi
  cat >"$CONFIG" <<EOF
# Generated by deploy/local/kafka.sh on every start; edits are overwritten.
process.roles=broker,controller
node.id=$NODE_ID
controller.quorum.voters=$voters
listeners=$client://$NODE_HOST:$NODE_PORT,CONTROLLER://$NODE_HOST:$NODE_CONTROLLER_PORT
advertised.listeners=$client://$NODE_HOST:$NODE_PORT
controller.listener.names=CONTROLLER
inter.broker.listener.name=$client
listener.security.protocol.map=CONTROLLER:$controller_protocol,$client:$client
log.dirs=$KRAFT_LOG_DIR
num.partitions=$KAFKA_PARTITIONS
# Internal topics cannot have more replicas than brokers.
offsets.topic.replication.factor=$rf
transaction.state.log.replication.factor=$rf
transaction.state.log.min.isr=$min_isr
# Consumers in benchmarks join immediately; the default 3 s delay only slows tests.
group.initial.rebalance.delay.ms=0
# Topics are created explicitly, so typos fail loudly instead of inventing topics.
auto.create.topics.enable=false
log.retention.hours=24
EOF
  if ((NODES > 1)); then
    cat >>"$CONFIG" <<EOF
# Topics created without settings of their own (Benchstream's set both).
default.replication.factor=$rf
min.insync.replicas=$min_isr
EOF
  fi
  if [[ "$KAFKA_LINE" == 4 ]]; then
    # Share groups (Kafka 4.x) keep their state in an internal topic whose default
    # replication factor (3) a single node cannot satisfy. 3.x does not know the keys.
    cat >>"$CONFIG" <<EOF
share.coordinator.state.topic.replication.factor=$rf
share.coordinator.state.topic.min.isr=$min_isr
EOF
  fi
  if [[ "$KAFKA_LISTENER_PROTOCOL" == SASL_SSL ]]; then
    # TLS on every listener (the controller's too, without SASL: SCRAM cannot
    # authenticate controllers, whose credentials live in the metadata they serve);
    # SCRAM-SHA-512 for clients and between brokers, as the first user of
    # KAFKA_SCRAM_USERS. Hostname verification stays on: the certificate names 127.0.0.1.
    local first="${KAFKA_SCRAM_USERS%%,*}"
    cat >>"$CONFIG" <<EOF
sasl.enabled.mechanisms=SCRAM-SHA-512
sasl.mechanism.inter.broker.protocol=SCRAM-SHA-512
listener.name.sasl_ssl.scram-sha-512.sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule \\
  required username="${first%%:*}" password="${first#*:}";
ssl.keystore.type=PEM
ssl.keystore.location=$KAFKA_SSL_KEYSTORE_PEM
ssl.truststore.type=PEM
ssl.truststore.location=$KAFKA_SSL_TRUSTSTORE_PEM
EOF
    chmod 600 "$CONFIG"
  fi

  # Broker logs go to broker.log only (no console appender, so nothing is doubled by
  # the stdout redirect, which still catches JVM-level errors in the same file).
  # Per-request and state-change chatter would drown the useful lines.
  if [[ "$KAFKA_LINE" == 3 ]]; then
    cat >"$LOG4J_BROKER" <<EOF
log4j.rootLogger=INFO, file
log4j.appender.file=org.apache.log4j.FileAppender
log4j.appender.file.File=$LOG_FILE
log4j.appender.file.Append=true
log4j.appender.file.layout=org.apache.log4j.PatternLayout
log4j.appender.file.layout.ConversionPattern=[%d] %p %m (%c)%n
log4j.logger.kafka.request.logger=WARN
log4j.logger.state.change.logger=WARN
log4j.logger.org.apache.kafka.clients=WARN
EOF
  else
    # Kafka 4 logs through log4j2; its properties format needs no extra jars (the
    # distribution's log4j2.yaml would need jackson-dataformat-yaml).
    cat >"$LOG4J_BROKER" <<EOF
status = warn
appender.file.type = File
appender.file.name = FILE
appender.file.fileName = $LOG_FILE
appender.file.append = true
appender.file.layout.type = PatternLayout
appender.file.layout.pattern = [%d] %p %m (%c)%n
rootLogger.level = INFO
rootLogger.appenderRef.file.ref = FILE
logger.request.name = kafka.request.logger
logger.request.level = WARN
logger.statechange.name = state.change.logger
logger.statechange.level = WARN
logger.clients.name = org.apache.kafka.clients
logger.clients.level = WARN
EOF
  fi
}

# CLI tools (StorageTool) only need to complain, on stderr.
write_tools_log_config() {
  mkdir -p -- "$DATA_DIR"
  if [[ "$KAFKA_LINE" == 3 ]]; then
    cat >"$LOG4J_TOOLS" <<EOF
log4j.rootLogger=WARN, stderr
log4j.appender.stderr=org.apache.log4j.ConsoleAppender
log4j.appender.stderr.Target=System.err
log4j.appender.stderr.layout=org.apache.log4j.PatternLayout
log4j.appender.stderr.layout.ConversionPattern=[%d] %p %m (%c)%n
EOF
  else
    cat >"$LOG4J_TOOLS" <<EOF
status = warn
appender.stderr.type = Console
appender.stderr.name = STDERR
appender.stderr.target = SYSTEM_ERR
appender.stderr.layout.type = PatternLayout
appender.stderr.layout.pattern = [%d] %p %m (%c)%n
rootLogger.level = WARN
rootLogger.appenderRef.stderr.ref = STDERR
EOF
  fi
}

# "major.minor" of a version as one comparable number (4.1.1 -> 4001).
line_number() {
  local major="${1%%.*}" rest="${1#*.}"
  echo $((10#$major * 1000 + 10#${rest%%.*}))
}

# An older line cannot read storage a newer one formatted (its metadata.version is
# unknown there); upgrading (e.g. storage formatted by 3.9 under 4.x) is supported by
# Kafka. Storage formatted before versions were recorded was formatted by 3.9.1.
check_storage_version() {
  [[ -f "$KRAFT_LOG_DIR/meta.properties" && -s "$FORMATTED_VERSION_FILE" ]] || return 0
  local formatted
  formatted="$(<"$FORMATTED_VERSION_FILE")"
  [[ "$formatted" =~ ^[0-9]+\.[0-9]+\.[0-9]+$ ]] || return 0
  if (($(line_number "$KAFKA_VERSION") < $(line_number "$formatted"))); then
    die "the storage in $KRAFT_LOG_DIR was formatted by Kafka $formatted, which Kafka $KAFKA_VERSION cannot read;" \
      "use another KAFKA_DATA_DIR (or KAFKA_PORT), or remove $DATA_DIR to start empty"
  fi
}

format_storage_once() {
  # meta.properties is what StorageTool writes; if present the dir is already
  # formatted and re-formatting would fail (or, forced, wipe data).
  [[ -f "$KRAFT_LOG_DIR/meta.properties" ]] && return 0
  local tool=(java "$LOG4J_FLAG=file:$LOG4J_TOOLS" -cp "$LIBS_DIR/*" kafka.tools.StorageTool)
  if [[ ! -s "$CLUSTER_ID_FILE" ]]; then
    local id
    id="$("${tool[@]}" random-uuid)" || die "kafka.tools.StorageTool random-uuid failed"
    [[ -n "$id" ]] || die "kafka.tools.StorageTool random-uuid printed nothing"
    echo "$id" >"$CLUSTER_ID_FILE"
  fi
  # SCRAM credentials are written into the metadata log at format time (no broker needed).
  local scram=() user users
  if [[ "$KAFKA_LISTENER_PROTOCOL" == SASL_SSL ]]; then
    IFS=, read -r -a users <<<"$KAFKA_SCRAM_USERS"
    for user in "${users[@]}"; do
      scram+=(--add-scram "SCRAM-SHA-512=[name=${user%%:*},password=${user#*:}]")
    done
  fi
  local what="$KRAFT_LOG_DIR (cluster id $(<"$CLUSTER_ID_FILE"))"
  ((NODES == 1)) || what="$KRAFT_LOG_DIR (cluster id $(<"$CLUSTER_ID_FILE"), node $NODE_ID of $NODES)"
  echo "formatting KRaft storage in $what"
  "${tool[@]}" format -t "$(<"$CLUSTER_ID_FILE")" -c "$CONFIG" "${scram[@]}" >/dev/null \
    || die "kafka.tools.StorageTool format failed"
  echo "$KAFKA_VERSION" >"$FORMATTED_VERSION_FILE"
}

# ---------------------------------------------------------------- one node

# launch_node: starts the current node (use_node) unless it runs already; LAUNCHED_PID is
# its pid either way.
launch_node() {
  local pid
  LAUNCHED_PID=""
  if pid="$(broker_pid)"; then
    # Starting is idempotent for the same version only: tests and benchmarks that ask
    # for a version must not silently get another one.
    local running
    running="$(running_version)"
    if [[ -n "$running" && "$running" != "$KAFKA_VERSION" ]]; then
      die "kafka $running is already running on $NODE_HOST:$NODE_PORT (pid $pid, data: $NODE_DIR);" \
        "stop it first to start $KAFKA_VERSION"
    fi
    if port_open "$NODE_PORT" "$NODE_HOST"; then
      echo "$NODE_NAME ${running:-(version not recorded)} already running on $NODE_HOST:$NODE_PORT"
    else
      # Alive but not listening: most likely still starting from an earlier call whose
      # waiting was interrupted; wait for it instead of starting a second broker.
      echo "$NODE_NAME process $pid exists but $NODE_HOST:$NODE_PORT is not answering yet; waiting"
    fi
    LAUNCHED_PID="$pid"
    return 0
  fi
  rm -f -- "$PID_FILE"
  # Someone else (another broker, another data dir) holds our ports: starting would
  # only fail inside the JVM with a less obvious bind error.
  local p
  for p in "$NODE_PORT" "$NODE_CONTROLLER_PORT"; do
    if port_open "$p" "$NODE_HOST"; then
      die "$NODE_HOST:$p is already in use by another process (not the broker of $NODE_DIR);" \
        "set KAFKA_PORT / KAFKA_CONTROLLER_PORT"
    fi
  done

  mkdir -p -- "$NODE_DIR"
  check_storage_version
  write_config
  format_storage_once

  # Keep the previous run's log for post-mortems, and make sure the readiness grep
  # below can only match this run's "Kafka Server started".
  if [[ -f "$LOG_FILE" ]]; then mv -f -- "$LOG_FILE" "$LOG_FILE.1"; fi
  local heap
  read -r -a heap <<<"$KAFKA_HEAP"
  # setsid+nohup: own session, immune to the caller's SIGHUP/Ctrl-C, so the broker
  # outlives this script. Both exec in place, so $! is the java pid. fd 9 (the lock)
  # must not leak into the broker or it would hold the lock forever.
  local launcher=(nohup)
  command -v setsid >/dev/null 2>&1 && launcher=(setsid nohup)
  # ip netns exec execs the command in place, so $! stays the java pid.
  [[ -z "$NODE_NETNS" ]] || launcher+=(ip netns exec "$NODE_NETNS")
  "${launcher[@]}" java "${heap[@]}" \
    -XX:+UseG1GC -XX:MaxGCPauseMillis=20 -Djava.awt.headless=true \
    "$LOG4J_FLAG=file:$LOG4J_BROKER" \
    -cp "$LIBS_DIR/*" kafka.Kafka "$CONFIG" \
    </dev/null >>"$LOG_FILE" 2>&1 9>&- &
  pid=$!
  echo "$pid" >"$PID_FILE"
  echo "$KAFKA_VERSION" >"$RUNNING_VERSION_FILE"
  LAUNCHED_PID="$pid"
}

# wait_ready ID PID DEADLINE: waits for node ID (pid PID) to be ready until SECONDS
# reaches DEADLINE; if it does not get there, says why with its log's tail and returns 1.
wait_ready() {
  use_node "$1"
  local pid="$2" deadline="$3"
  until broker_ready; do
    if ! kill -0 "$pid" 2>/dev/null; then
      rm -f -- "$PID_FILE"
      echo "kafka.sh: $NODE_NAME process $pid exited during startup" >&2
      print_log_tail "$LOG_FILE"
      return 1
    fi
    if ((SECONDS >= deadline)); then
      echo "kafka.sh: $NODE_NAME not ready on $NODE_HOST:$NODE_PORT after ${KAFKA_START_TIMEOUT}s;" \
        "stopping it (raise KAFKA_START_TIMEOUT on slow machines)" >&2
      print_log_tail "$LOG_FILE"
      return 1
    fi
    sleep 0.25
  done
}

# ---------------------------------------------------------------- commands

lock_cluster() { lock_data_dir "$DATA_DIR" $((KAFKA_START_TIMEOUT + KAFKA_STOP_TIMEOUT + 60)); }

# The client addresses of every node: KAFKA_BROKERS for this cluster.
bootstrap() {
  local i out=""
  for ((i = 1; i <= NODES; i++)); do
    out+="${out:+,}$(nth_item "$KAFKA_HOSTS" "$i"):$((10#$KAFKA_PORT + i - 1))"
  done
  echo "$out"
}

cmd_start() {
  need java "install a JDK 17+ (e.g. apt-get install openjdk-17-jre-headless)"
  lock_cluster
  libs_complete || fetch_libs
  write_tools_log_config
  if ((NODES > 1)); then echo "$NODES" >"$COUNT_FILE"; fi
  # Every node is launched before any is waited for: a node is ready only once the
  # controller quorum (a majority of the nodes) answers.
  local i pids=()
  for ((i = 1; i <= NODES; i++)); do
    use_node "$i"
    launch_node
    pids[i]="$LAUNCHED_PID"
  done
  local deadline=$((SECONDS + KAFKA_START_TIMEOUT))
  for ((i = 1; i <= NODES; i++)); do
    if ! wait_ready "$i" "${pids[i]}" "$deadline"; then
      # Don't leave a half-started cluster holding the ports and the data dir.
      local j pid
      for ((j = 1; j <= NODES; j++)); do
        use_node "$j"
        if pid="$(broker_pid)"; then stop_pid "$pid" "$KAFKA_STOP_TIMEOUT" broker >/dev/null; fi
        rm -f -- "$PID_FILE"
      done
      exit 1
    fi
  done
  if ((NODES == 1)); then
    echo "kafka $KAFKA_VERSION ready on $(bootstrap) (data: $DATA_DIR)"
  else
    echo "kafka $KAFKA_VERSION cluster of $NODES nodes ready on $(bootstrap) (data: $DATA_DIR)"
  fi
}

cmd_start_node() {
  need java "install a JDK 17+ (e.g. apt-get install openjdk-17-jre-headless)"
  lock_cluster
  libs_complete || fetch_libs
  write_tools_log_config
  use_node "$1"
  launch_node
  if ! wait_ready "$1" "$LAUNCHED_PID" $((SECONDS + KAFKA_START_TIMEOUT)); then
    stop_pid "$LAUNCHED_PID" "$KAFKA_STOP_TIMEOUT" broker >/dev/null
    rm -f -- "$PID_FILE"
    exit 1
  fi
  echo "$NODE_NAME ready on $NODE_HOST:$NODE_PORT"
}

# SIGTERM lets Kafka flush and close its logs cleanly (faster next start, no
# recovery); SIGKILL is only the fallback for a hung JVM (stop_pid, lib.sh). A cluster's
# nodes get SIGTERM together: stopped one after the other, the last ones would wait for a
# controller quorum that is already gone.
cmd_stop() {
  [[ -d "$DATA_DIR" ]] || { echo "kafka not running"; return 0; }
  lock_cluster
  local i pid entry stopping=()
  for ((i = 1; i <= NODES; i++)); do
    use_node "$i"
    if pid="$(broker_pid)"; then
      stopping+=("$i:$pid")
    else
      rm -f -- "$PID_FILE" # stale pid file from a crash/reboot
    fi
  done
  if ((${#stopping[@]} == 0)); then
    echo "kafka not running"
    return 0
  fi
  for entry in "${stopping[@]}"; do
    (
      use_node "${entry%%:*}"
      stop_pid "${entry#*:}" "$KAFKA_STOP_TIMEOUT" "broker (node ${entry%%:*})"
      rm -f -- "$PID_FILE"
    ) &
  done
  wait
  for entry in "${stopping[@]}"; do
    use_node "${entry%%:*}"
    echo "$NODE_NAME stopped (pid ${entry#*:})"
  done
}

cmd_stop_node() {
  lock_cluster
  use_node "$1"
  local pid
  if ! pid="$(broker_pid)"; then
    rm -f -- "$PID_FILE"
    echo "$NODE_NAME not running"
    return 0
  fi
  stop_pid "$pid" "$KAFKA_STOP_TIMEOUT" broker
  rm -f -- "$PID_FILE"
  echo "$NODE_NAME stopped (pid $pid)"
}

# A crash as the operating system sees one: no controlled shutdown, no flush; the
# partitions it led move only when the controller notices (broker.session.timeout.ms).
cmd_kill_node() {
  lock_cluster
  use_node "$1"
  local pid
  if ! pid="$(broker_pid)"; then
    rm -f -- "$PID_FILE"
    echo "$NODE_NAME not running"
    return 0
  fi
  kill -KILL "$pid" 2>/dev/null || true
  local tries=40
  while ((tries-- > 0)) && kill -0 "$pid" 2>/dev/null; do sleep 0.05; done
  rm -f -- "$PID_FILE"
  echo "$NODE_NAME killed (pid $pid)"
}

cmd_status() {
  local i pid version up=0
  for ((i = 1; i <= NODES; i++)); do
    use_node "$i"
    if pid="$(broker_pid)"; then
      version="$(running_version)"
      version="${version:-(version not recorded)}"
      if port_open "$NODE_PORT" "$NODE_HOST"; then
        echo "$NODE_NAME $version running on $NODE_HOST:$NODE_PORT (pid $pid, data: $NODE_DIR)"
        up=$((up + 1))
      else
        echo "$NODE_NAME $version process running (pid $pid, data: $NODE_DIR) but $NODE_HOST:$NODE_PORT" \
          "not answering yet"
      fi
    else
      echo "$NODE_NAME not running (data: $NODE_DIR)"
    fi
  done
  ((up == NODES)) || return 3
}

case "${1:-}" in
  start | stop | status | fetch | restart | version | brokers) [[ $# -eq 1 ]] || usage ;;
  kill-node | stop-node | start-node) [[ $# -eq 2 ]] || usage ;;
  *) usage ;;
esac
case "$1" in
  start) cmd_start ;;
  stop) cmd_stop ;;
  status) cmd_status ;;
  fetch) fetch_libs ;;
  restart) cmd_stop; cmd_start ;;
  version) echo "$KAFKA_VERSION" ;;
  brokers) bootstrap ;;
  kill-node) node="$(node_arg "$2")" && cmd_kill_node "$node" ;;
  stop-node) node="$(node_arg "$2")" && cmd_stop_node "$node" ;;
  start-node) node="$(node_arg "$2")" && cmd_start_node "$node" ;;
esac
