#!/usr/bin/env bash
# DHCP with many clients, against the same dnsmasq configuration three ways:
#   bpfnet          the eBPF relay on prov0 -> dnsmasq in the pod (the deployment this project makes)
#   dnsmasq relay   bpfnet torn down; prov0 has the service IP; `dnsmasq --dhcp-relay` on the node -> the
#                   same dnsmasq in the pod
#   dnsmasq on LAN  bpfnet torn down; prov0 has the service IP; dnsmasq serves the LAN itself from the
#                   node (hostNetwork, as Metal3 runs it today; the baseline)
# Clients: tests/bench/dhcp_clients.py on the host's eth0, CLIENTS machines (distinct MACs) broadcasting
# full DISCOVER/OFFER/REQUEST/ACK exchanges with the broadcast flag set (as PXE firmware does), WINDOW at
# a time, EXCHANGES per run: leases per second and DISCOVER -> ACK p50/p99.
# Relay on the LAN: perfdhcp (Debian kea-admin; for DHCPv4 it always acts as a relay, giaddr = its own
# address) sending relayed exchanges to the service IP, through bpfnet and to dnsmasq on the LAN: its
# completed exchanges per second at saturation (-r SATURATE) and DISCOVER -> ACK p99 at a steady 200/s
# (tests/bench/dhcp_times.py).
# dnsmasq runs without --log-dhcp (a log line per packet would be what is measured). Each round visits
# the paths in an order that rotates from round to round; the leases a path gave out stay (dnsmasq answers
# a known machine from its lease), as when the same hosts are provisioned again.
# Not a test: it fails only if a run could not be made. Needs root; sandboxes itself.
#
#   dhcp_leases.sh [ROUNDS] [SECONDS] [RESULTS_FILE]     (defaults 10, 2, ./dhcp_leases.json; SECONDS per
#                                                          perfdhcp run)
set -uo pipefail

top=$(cd "$(dirname "$0")/../.." && pwd)
ROUNDS=${1:-10}
SECONDS_PER_RUN=${2:-2}
RESULTS_FILE=$(realpath -m "${3:-dhcp_leases.json}")
BUILD=${BUILD:-$top/build}
LOADER=$BUILD/loader/bpfnet-loader
CLIENTS=100 # per kind of client: the pool below holds both kinds' machines at once
POOL_FIRST=198.18.0.11 # above the addresses of the topology
POOL_LAST=198.18.0.254
WINDOW=16
EXCHANGES=${DHCP_EXCHANGES:-1000}
SATURATE=20000 # exchanges/s asked for: more than any of the paths answers here
STEADY=200
# shellcheck source=../e2e/lib.sh
source "$top/tests/e2e/lib.sh"
# shellcheck source=../e2e/dhcp.sh
source "$top/tests/e2e/dhcp.sh"
for tool in perfdhcp dnsmasq; do
    command -v "$tool" >/dev/null || { echo "dhcp_leases: $tool is not installed (scripts/setup.sh installs it)" >&2; exit 2; }
done
sandbox_reexec "$@"
set -e

CONFIG=$E2E_TMP/conf/bpfnet.yaml
topology_create >/dev/null
# perfdhcp is a relay agent on the LAN: the operator lists it, or its giaddr is refused (docs/config.md).
write_config --port "dhcp:udp:67::dhcp" "$CONFIG" "dhcpRelay: {relays: [$E2E_HOST_IP]}"
# shellcheck disable=SC2054 # the commas are inside one dnsmasq argument
SERVER_ARGS=(--no-ping --dhcp-range="$POOL_FIRST,$POOL_LAST,$DHCP_NETMASK,$DHCP_LEASE_TIME"
    --dhcp-option=3,"$DHCP_ROUTER" --dhcp-boot="$DHCP_BOOT_FILE,,$E2E_SERVICE_IP")
dnsmasq_run "$E2E_POD" "$E2E_TMP/dnsmasq-pod" --dhcp-proxy "${SERVER_ARGS[@]}" || die "$E2E_REASON"
wait_for 5 ns_udp_listens "$E2E_POD" 67 || die "the pod's dnsmasq does not listen on 67"
NODE_DNSMASQ_PID=""
MODE=none
LOADER_RUNS=0

node_dnsmasq_stop() {
    [ -z "$NODE_DNSMASQ_PID" ] || stop_pid "$NODE_DNSMASQ_PID"
    NODE_DNSMASQ_PID=""
}

bpfnet_down() {
    [ -n "$LOADER_PID" ] || return 0
    loader_stop TERM
    run_loader --config "$CONFIG" --teardown >/dev/null 2>&1 || die "loader --teardown failed"
}

switch_to() {
    [ "$MODE" = "$1" ] && return 0
    node_dnsmasq_stop
    case $1 in
    bpfnet)
        ip -n "$E2E_NODE" -4 addr flush dev "$E2E_NIC"
        LOADER_RUNS=$((LOADER_RUNS + 1))
        loader_start "$CONFIG" "$E2E_TMP/logs/loader-$LOADER_RUNS.log" >/dev/null || die "$E2E_REASON"
        ;;
    "dnsmasq relay")
        bpfnet_down
        ip -n "$E2E_NODE" addr replace "$E2E_SERVICE_IP/24" dev "$E2E_NIC"
        dnsmasq_run "$E2E_NODE" "$E2E_TMP/dnsmasq-relay" --dhcp-relay="$E2E_SERVICE_IP,$E2E_POD_IP" \
            --interface="$E2E_NIC" --interface="$E2E_VETH" || die "$E2E_REASON"
        NODE_DNSMASQ_PID=$DNSMASQ_PID
        ;;
    "dnsmasq on LAN")
        bpfnet_down
        ip -n "$E2E_NODE" addr replace "$E2E_SERVICE_IP/24" dev "$E2E_NIC"
        dnsmasq_run "$E2E_NODE" "$E2E_TMP/dnsmasq-lan" --interface="$E2E_NIC" "${SERVER_ARGS[@]}" || die "$E2E_REASON"
        NODE_DNSMASQ_PID=$DNSMASQ_PID
        wait_for 5 ns_udp_listens "$E2E_NODE" 67 || die "the node's dnsmasq does not listen on 67"
        ;;
    esac
    MODE=$1
}

RUNS=0
# perfdhcp_run RATE: one perfdhcp run (a relay on the LAN, to the service IP) on the current path;
# prints dhcp_times.py's line.
perfdhcp_run() {
    local out
    RUNS=$((RUNS + 1))
    out=$E2E_TMP/logs/perfdhcp-$RUNS.log
    echo "# $MODE, rate $1" >"$out"
    # Exit 3: some exchanges were not completed (counted as drops); anything else is a failed run.
    ip netns exec "$E2E_HOST" perfdhcp -4 -R "$CLIENTS" -r "$1" -p "$SECONDS_PER_RUN" -x t \
        -l "$E2E_HOST_IP" "$E2E_SERVICE_IP" >>"$out" 2>&1 || [ $? = 3 ] || return 1
    "$SYSTEM_PYTHON" "$top/tests/bench/dhcp_times.py" "$out"
}

# clients_run: one run of the simulated machines on the current path; prints
# "LEASES_PER_S P50_MS P99_MS UNANSWERED".
clients_run() {
    RUNS=$((RUNS + 1))
    ip netns exec "$E2E_HOST" "$SYSTEM_PYTHON" "$top/tests/bench/dhcp_clients.py" eth0 --clients "$CLIENTS" \
        --exchanges "$EXCHANGES" --window "$WINDOW" >"$E2E_TMP/logs/clients-$RUNS.json" || return 1
    "$SYSTEM_PYTHON" -c 'import json, sys
r = json.load(open(sys.argv[1]))
print(r["leases_per_s"], r["p50_ms"], r["p99_ms"], r["unanswered"])' "$E2E_TMP/logs/clients-$RUNS.json"
}

declare -A RATE P50 P99 DROPS
# measure PATH KIND: one path's measurements for one kind of client (clients or relayed).
measure() {
    local key="$2,$1" rate p50 p99 drops
    switch_to "$1"
    if [ "$2" = clients ]; then
        read -r rate p50 p99 drops < <(clients_run) || die "the simulated machines got no lease through $1"
    else
        read -r rate _ _ drops < <(perfdhcp_run "$SATURATE") || die "perfdhcp through $1 at saturation failed"
        read -r _ p50 p99 _ < <(perfdhcp_run "$STEADY") || die "perfdhcp through $1 at $STEADY/s failed"
    fi
    RATE[$key]+="$rate "
    DROPS[$key]+="$drops "
    P50[$key]+="$p50 "
    P99[$key]+="$p99 "
}

PATHS=(bpfnet "dnsmasq relay" "dnsmasq on LAN")
for path in "${PATHS[@]}"; do # warm-up: leases exist, caches are filled, nothing recorded
    switch_to "$path"
    clients_run >/dev/null || die "warm-up through $path: no lease"
done
for ((round = 0; round < ROUNDS; round++)); do
    for ((i = 0; i < ${#PATHS[@]}; i++)); do
        path=${PATHS[$(((i + round) % ${#PATHS[@]}))]}
        measure "$path" clients
        [ "$path" = "dnsmasq relay" ] || measure "$path" relayed
    done
    log "round $((round + 1))/$ROUNDS done"
done
node_dnsmasq_stop

REPORT=$top/tests/bench/report.py
rm -f "$RESULTS_FILE"
# table KIND METRIC TITLE UNIT BETTER NOTES PATH...
table() {
    local kind=$1 title=$3 unit=$4 better=$5 notes=$6 args=() path
    local -n values=$2
    shift 6
    for path in "$@"; do
        args+=(--series "$path=${values[$kind,$path]}")
    done
    "$SYSTEM_PYTHON" "$REPORT" table "$RESULTS_FILE" dhcp_leases --title "$title" --unit "$unit" --better "$better" \
        --baseline "dnsmasq on LAN" --paired "${args[@]}" --notes "$notes"
}
C="$CLIENTS machines (distinct MACs) broadcasting, $WINDOW at a time"
R="perfdhcp as a relay on the LAN (giaddr $E2E_HOST_IP) to the service IP, $CLIENTS clients"
N="$ROUNDS rounds, paths in rotating order"
table clients RATE "$C: leases per second" "leases/s" higher "$N; $EXCHANGES exchanges per run (tests/bench/dhcp_clients.py)." "${PATHS[@]}"
table clients P50 "$C: DISCOVER -> ACK p50" ms lower "$N; over the $EXCHANGES exchanges of a run." "${PATHS[@]}"
table clients P99 "$C: DISCOVER -> ACK p99" ms lower "$N; over the $EXCHANGES exchanges of a run." "${PATHS[@]}"
table clients DROPS "$C: exchanges without an ACK within 2 s" exchanges lower "$N." "${PATHS[@]}"
table relayed RATE "$R: leases per second at saturation" "leases/s" higher "$N; perfdhcp -r $SATURATE -p $SECONDS_PER_RUN." bpfnet "dnsmasq on LAN"
table relayed DROPS "$R: unanswered at saturation" "%" lower "$N; perfdhcp -r $SATURATE; DISCOVERs and REQUESTs without an answer." bpfnet "dnsmasq on LAN"
table relayed P99 "$R: DISCOVER -> ACK p99 at $STEADY/s" ms lower "$N; perfdhcp -r $STEADY -p $SECONDS_PER_RUN." bpfnet "dnsmasq on LAN"
log "results in $RESULTS_FILE"
