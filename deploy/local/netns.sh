#!/usr/bin/env bash
# Hosts on a private network on this machine, for tests of Benchstream across a network
# (npm run test:distributed): each host a Linux network namespace with one veth link to a
# bridge, an address of its own in a private /24, and no route beyond it. Links can be cut
# and healed (iptables DROP inside the host's namespace, nothing on this machine's own
# tables), one host can be cut off from chosen addresses only, and a host's connections to
# an address can be steered through a port elsewhere (DNAT: the latency proxy). Needs root,
# iproute2 and iptables (deploy/local/distributed-deps.sh installs them).
#
# Everything it makes is named after NETNS_PREFIX, and `down` removes all of it (the
# namespaces take their rules and veth ends with them): a test cleans up before it starts
# too, so a test that died leaves nothing for the next one.
#
# Usage: deploy/local/netns.sh up NAME=HOST [NAME=HOST ...]   the bridge (.1) and the hosts
#        deploy/local/netns.sh down                           remove the bridge and every host
#        deploy/local/netns.sh list                           the hosts: name, namespace, address
#        deploy/local/netns.sh ns NAME                        the namespace of a host
#        deploy/local/netns.sh cut|heal NAME                  drop / let through all of a host's traffic
#        deploy/local/netns.sh block|unblock NAME ADDR...     drop / let through its traffic with these addresses
#        deploy/local/netns.sh steer NAME ADDR:PORT TO:PORT   its connections to ADDR:PORT go to TO:PORT
#        deploy/local/netns.sh exec NAME COMMAND...           run a command in a host's namespace
#
# Environment:
#   NETNS_PREFIX   names of the namespaces (PREFIX-NAME), bridge (PREFIX-br) and veths [bsnet]:
#                  2-6 letters or digits, so that interface names stay within 15 characters
#   NETNS_SUBNET   the first three octets of the /24, a private range [10.213.0]; the bridge
#                  (this machine's side) is .1, a host's HOST is 2-254
set -euo pipefail

SCRIPT_NAME=netns.sh
SCRIPT_DIR="$(cd -P -- "$(dirname -- "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=lib.sh
source "$SCRIPT_DIR/lib.sh"

PREFIX="${NETNS_PREFIX:-bsnet}"
[[ "$PREFIX" =~ ^[a-z][a-z0-9]{1,5}$ ]] || die "NETNS_PREFIX must be 2-6 lower-case letters or digits, got '$PREFIX'"
SUBNET="${NETNS_SUBNET:-10.213.0}"
# Private ranges only: this network must never overlap one this machine reaches.
[[ "$SUBNET" =~ ^(10\.[0-9]{1,3}\.[0-9]{1,3}|192\.168\.[0-9]{1,3}|172\.(1[6-9]|2[0-9]|3[01])\.[0-9]{1,3})$ ]] \
  || die "NETNS_SUBNET must be the first three octets of a private /24 (10.x.y, 172.16-31.x, 192.168.x), got '$SUBNET'"
BRIDGE="$PREFIX-br"
# A comment on every rule this script adds, so that heal/unblock remove exactly those.
TAG="benchstream-netns"

usage() {
  sed -n '/^# Usage:/,/^#$/p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//' >&2
  exit 2
}

ns_of() { echo "$PREFIX-$1"; }

check_name() {
  [[ "$1" =~ ^[a-z][a-z0-9]{0,6}$ ]] || die "a host name is 1-7 lower-case letters or digits, got '$1'"
}

check_addr() {
  [[ "$1" =~ ^[0-9]{1,3}(\.[0-9]{1,3}){3}$ ]] || die "not an IPv4 address: '$1'"
  [[ "$1" == "$SUBNET".* ]] || die "$1 is not on this network ($SUBNET.0/24): traffic stays on it"
}

need_ns() {
  ip netns list | awk '{print $1}' | grep -qx -- "$(ns_of "$1")" \
    || die "no host $1 (namespace $(ns_of "$1")); run up first"
}

in_ns() {
  local name="$1"
  shift
  ip netns exec "$(ns_of "$name")" "$@"
}

cmd_down() {
  local ns
  for ns in $(ip netns list | awk '{print $1}' | grep -E "^$PREFIX-[a-z0-9]+$" || true); do
    ip netns pids "$ns" 2>/dev/null | while read -r pid; do
      # Whatever a test left running in there (it cannot reach anything else any more).
      kill -KILL "$pid" 2>/dev/null || true
    done
    ip netns del "$ns"
  done
  if ip link show "$BRIDGE" >/dev/null 2>&1; then ip link del "$BRIDGE"; fi
  # A veth end whose namespace went away goes with it; one left by a half-finished `up` does not.
  local l
  for l in $(ip -o link show | awk -F': ' '{print $2}' | sed 's/@.*//' | grep -E "^$PREFIX-v" || true); do
    ip link del "$l" 2>/dev/null || true
  done
}

cmd_up() {
  (($# > 0)) || die "up needs NAME=HOST pairs, e.g. a1=11 a2=12"
  need ip "install iproute2"
  need iptables "install iptables (deploy/local/distributed-deps.sh)"
  cmd_down
  ip link add "$BRIDGE" type bridge
  ip addr add "$SUBNET.1/24" dev "$BRIDGE"
  ip link set "$BRIDGE" up
  local pair name host ns
  for pair in "$@"; do
    name="${pair%%=*}"
    host="${pair#*=}"
    check_name "$name"
    is_uint "$host" && ((10#$host >= 2 && 10#$host <= 254)) || die "HOST of $name must be 2-254, got '$host'"
    ns="$(ns_of "$name")"
    ip netns add "$ns"
    ip link add "$PREFIX-v$name" type veth peer name "$PREFIX-p$name"
    ip link set "$PREFIX-p$name" netns "$ns"
    ip link set "$PREFIX-v$name" master "$BRIDGE" up
    ip -n "$ns" link set "$PREFIX-p$name" name eth0
    ip -n "$ns" addr add "$SUBNET.$((10#$host))/24" dev eth0
    ip -n "$ns" link set eth0 up
    ip -n "$ns" link set lo up
    # No default route: only the /24 (on-link) and the namespace's own loopback are reachable.
  done
}

cmd_list() {
  local ns name
  for ns in $(ip netns list | awk '{print $1}' | grep -E "^$PREFIX-[a-z0-9]+$" | sort || true); do
    name="${ns#"$PREFIX"-}"
    echo "$name $ns $(ip -n "$ns" -4 -o addr show dev eth0 2>/dev/null | awk '{print $4}' | cut -d/ -f1)"
  done
}

# rule NAME -A|-D ARGS...: adds or deletes one tagged filter rule in the host's namespace.
rule() {
  local name="$1" op="$2"
  shift 2
  if [[ "$op" == -D ]]; then
    # Deleting a rule that is not there is no error (heal twice, heal after a failed cut).
    while in_ns "$name" iptables -w -C "$@" -m comment --comment "$TAG" 2>/dev/null; do
      in_ns "$name" iptables -w -D "$@" -m comment --comment "$TAG"
    done
  else
    in_ns "$name" iptables -w -I "$@" -m comment --comment "$TAG"
  fi
}

cmd_cut() {
  need_ns "$1"
  rule "$1" -A INPUT -i eth0 -j DROP
  rule "$1" -A OUTPUT -o eth0 -j DROP
}

cmd_heal() {
  need_ns "$1"
  rule "$1" -D INPUT -i eth0 -j DROP
  rule "$1" -D OUTPUT -o eth0 -j DROP
}

cmd_block() {
  local name="$1" op="$2" a
  shift 2
  need_ns "$name"
  (($# > 0)) || die "which addresses?"
  for a in "$@"; do
    check_addr "$a"
    rule "$name" "$op" INPUT -s "$a" -j DROP
    rule "$name" "$op" OUTPUT -d "$a" -j DROP
  done
}

cmd_steer() {
  local name="$1" from="$2" to="$3"
  need_ns "$name"
  [[ "$from" =~ ^([0-9.]+):([0-9]+)$ ]] || die "steer: ADDR:PORT, got '$from'"
  local faddr="${BASH_REMATCH[1]}" fport="${BASH_REMATCH[2]}"
  [[ "$to" =~ ^([0-9.]+):([0-9]+)$ ]] || die "steer: TO:PORT, got '$to'"
  local taddr="${BASH_REMATCH[1]}"
  check_addr "$faddr"
  check_addr "$taddr"
  in_ns "$name" iptables -w -t nat -A OUTPUT -d "$faddr" -p tcp --dport "$fport" \
    -j DNAT --to-destination "$to" -m comment --comment "$TAG"
}

case "${1:-}" in
  up) shift; cmd_up "$@" ;;
  down) [[ $# -eq 1 ]] || usage; cmd_down ;;
  list) [[ $# -eq 1 ]] || usage; cmd_list ;;
  ns) [[ $# -eq 2 ]] || usage; check_name "$2"; ns_of "$2" ;;
  cut | heal) [[ $# -eq 2 ]] || usage; check_name "$2"; "cmd_$1" "$2" ;;
  block | unblock)
    (($# >= 3)) || usage
    check_name "$2"
    op=-A
    [[ "$1" == unblock ]] && op=-D
    name="$2"
    shift 2
    cmd_block "$name" "$op" "$@"
    ;;
  steer) [[ $# -eq 4 ]] || usage; check_name "$2"; cmd_steer "$2" "$3" "$4" ;;
  exec)
    (($# >= 3)) || usage
    check_name "$2"
    need_ns "$2"
    ns="$(ns_of "$2")"
    shift 2
    exec ip netns exec "$ns" "$@"
    ;;
  *) usage ;;
esac
