#!/usr/bin/env bash
# Installs the Debian packages Benchstream's tests need, if any is missing:
# Java + Maven (the Kafka broker, deploy/local/kafka.sh), redis-server and
# postgresql (binding tests start private servers from them), prometheus
# (promtool, for the alert rules' tests), chromium (the live view's browser
# test, headless). Used by test/run.mjs and .ci/run.
# Does nothing when everything is there; needs root (or sudo) otherwise.
set -euo pipefail
need=()
command -v java >/dev/null 2>&1 || need+=(openjdk-17-jre-headless)
command -v mvn >/dev/null 2>&1 || need+=(maven)
command -v redis-server >/dev/null 2>&1 || need+=(redis-server)
ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 || need+=(postgresql)
command -v promtool >/dev/null 2>&1 || need+=(prometheus)
[ -x /usr/bin/chromium ] || need+=(chromium)
[ "${#need[@]}" -eq 0 ] && exit 0
echo "system-deps: installing ${need[*]} (Debian packages)"
sudo=""
if [ "$(id -u)" -ne 0 ]; then
  command -v sudo >/dev/null 2>&1 || { echo "system-deps: missing ${need[*]}; install them as root: apt-get install ${need[*]}" >&2; exit 1; }
  sudo="sudo"
fi
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq
$sudo apt-get install -y -qq "${need[@]}"
