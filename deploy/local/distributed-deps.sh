#!/usr/bin/env bash
# What npm run test:distributed needs beyond deploy/local/system-deps.sh, installed if
# missing: iptables (links cut inside network namespaces, deploy/local/netns.sh), faketime
# (libfaketime: an agent whose clock is really off) and Toxiproxy (latency and jitter on the
# links; this kernel has no netem), built with Go from the Go module proxy into
# ${XDG_CACHE_HOME:-$HOME/.cache}/benchstream/toxiproxy-<version>/toxiproxy-server.
# Does nothing when everything is there; needs root (network namespaces need it anyway).
#
# Usage: deploy/local/distributed-deps.sh          install what is missing
#        deploy/local/distributed-deps.sh toxiproxy print the Toxiproxy server's path
set -euo pipefail
SCRIPT_NAME=distributed-deps.sh
SCRIPT_DIR="$(cd -P -- "$(dirname -- "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=lib.sh
source "$SCRIPT_DIR/lib.sh"

# The newest release the Go module proxy lists for github.com/Shopify/toxiproxy/v2 here.
TOXIPROXY_VERSION="v2.5.0"
TOXIPROXY_DIR="${XDG_CACHE_HOME:-$HOME/.cache}/benchstream/toxiproxy-$TOXIPROXY_VERSION"
TOXIPROXY="$TOXIPROXY_DIR/toxiproxy-server"

if [[ "${1:-}" == toxiproxy ]]; then
  echo "$TOXIPROXY"
  exit 0
fi
[[ $# -eq 0 ]] || die "usage: distributed-deps.sh [toxiproxy]"

[[ "$(id -u)" -eq 0 ]] || die "network namespaces, veth links and iptables need root"
need=()
command -v ip >/dev/null 2>&1 || need+=(iproute2)
command -v iptables >/dev/null 2>&1 || need+=(iptables)
[[ -n "$(compgen -G '/usr/lib/*/faketime/libfaketime.so.1')" ]] || need+=(faketime)
if ((${#need[@]} > 0)); then
  echo "distributed-deps: installing ${need[*]} (Debian packages)"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq "${need[@]}"
fi

if [[ ! -x "$TOXIPROXY" ]]; then
  GO="$(command -v go || true)"
  [[ -n "$GO" ]] || GO=/usr/local/go/bin/go
  [[ -x "$GO" ]] || die "Toxiproxy is built with Go (1.22 or newer): install Go, or put a toxiproxy-server" \
    "$TOXIPROXY_VERSION at $TOXIPROXY"
  mkdir -p -- "$(dirname -- "$TOXIPROXY_DIR")"
  FETCH_TMP="$(mktemp -d "$(dirname -- "$TOXIPROXY_DIR")/.toxiproxy.tmp.XXXXXX")"
  trap cleanup_fetch_tmp EXIT
  trap 'exit 130' INT TERM HUP
  echo "distributed-deps: building Toxiproxy $TOXIPROXY_VERSION (go install, about two minutes the first time)"
  GOBIN="$FETCH_TMP" GOFLAGS=-buildvcs=false \
    "$GO" install "github.com/Shopify/toxiproxy/v2/cmd/server@$TOXIPROXY_VERSION" \
    || die "go install github.com/Shopify/toxiproxy/v2/cmd/server@$TOXIPROXY_VERSION failed (see above)"
  mkdir -p -- "$TOXIPROXY_DIR"
  mv -f -- "$FETCH_TMP/server" "$TOXIPROXY"
  echo "distributed-deps: $("$TOXIPROXY" -version 2>&1 | head -n1) at $TOXIPROXY"
fi
