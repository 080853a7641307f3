#!/usr/bin/env bash
# Installs the Debian packages Benchstream's tests need, if any is missing:
# Java + Maven (the Kafka broker, deploy/local/kafka.sh), redis-server and
# postgresql (binding tests start private servers from them), prometheus
# (promtool, for the alert rules' tests), the JDK's jcmd (profile capture attaches
# async-profiler with it), chromium (the browser tests of the live view and the profiles page),
# a C compiler and curl (deploy/local/clickhouse.sh, the ClickHouse server stand-in). Used by
# test/run.mjs and .ci/run.
# Does nothing when everything is there; needs root (or sudo) otherwise.
# Not Go: test/integration/clickhouse-http.test.ts builds a clickhouse-go
# v2.47.0 client that needs Go >= 1.25, and Debian 12's golang-go is 1.19;
# the test uses the machine's Go (/usr/local/go) and skips, saying so, without it.
set -euo pipefail
need=()
command -v java >/dev/null 2>&1 || need+=(openjdk-17-jre-headless)
command -v mvn >/dev/null 2>&1 || need+=(maven)
command -v redis-server >/dev/null 2>&1 || need+=(redis-server)
ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 || need+=(postgresql)
command -v promtool >/dev/null 2>&1 || need+=(prometheus)
command -v jcmd >/dev/null 2>&1 || need+=(openjdk-17-jdk-headless)
[ -x "${CHROMIUM_PATH:-/usr/bin/chromium}" ] || need+=(chromium)
command -v cc >/dev/null 2>&1 || need+=(gcc libc6-dev)
command -v curl >/dev/null 2>&1 || need+=(curl)
[ "${#need[@]}" -eq 0 ] && exit 0
echo "system-deps: installing ${need[*]} (Debian packages)"
sudo=""
if [ "$(id -u)" -ne 0 ]; then
  if ! command -v sudo >/dev/null 2>&1; then
    echo "system-deps: missing ${need[*]}; install them as root: apt-get install ${need[*]}" >&2
    exit 1
  fi
  sudo="sudo"
fi
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq
$sudo apt-get install -y -qq "${need[@]}"
