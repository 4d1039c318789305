#!/usr/bin/env bash
# Router solicitations answered: how long a host coming up on an IPv6 provisioning LAN waits between its
# router solicitation and the advertisement that makes the prefix on-link and tells it to ask DHCPv6, two ways
# side by side on the same LAN (tests/e2e/lib.sh's bridge with three hosts):
#   bpfnet          the loader's router advertisements (routerAdvertisements, docs/config.md) for the service
#                   address's subnet: answers to each soliciting host after a random 0-500 ms (RFC 4861 6.2.6)
#   dnsmasq on LAN  bpfnet torn down; the node's NIC has the service address, dnsmasq sends the advertisements
#                   as ironic-image configures it on the host network (enable-ra, ra-param=NIC,0,0, a DHCPv6
#                   range of the subnet): the baseline
# A round bounces the three hosts' links one after the other (the kernel solicits after its link-local address
# passes DAD), waits until each has the on-link route, and pairs each solicitation with the first advertisement
# the host receives after it (tests/e2e/ra_watch.py); a host that solicits again before an answer counts as
# unanswered. What a host sees: from its link up to the prefix's on-link route (the kernel's own events, `ip
# monitor`), which includes the kernel's wait before it solicits (DAD of its link-local address, up to 1 s of
# random delay), the same on both paths. The loader's periodic advertisements are every 1800 s here, so that an answer is an answer.
# Paths alternate from round to round. Not a test: it fails only if a run could not be made. Needs root;
# sandboxes itself.
#
#   router_solicitations.sh [ROUNDS] [RESULTS_FILE]     (defaults 10, ./router_solicitations.json)
set -uo pipefail

top=$(cd "$(dirname "$0")/../.." && pwd)
ROUNDS=${1:-10}
RESULTS_FILE=$(realpath -m "${2:-router_solicitations.json}")
BUILD=${BUILD:-$top/build}
LOADER=$BUILD/loader/bpfnet-loader
# shellcheck source=../e2e/lib.sh
source "$top/tests/e2e/lib.sh"
# shellcheck source=../e2e/dhcp.sh
source "$top/tests/e2e/dhcp.sh"
# shellcheck source=../e2e/lan6.sh
source "$top/tests/e2e/lan6.sh"
command -v dnsmasq >/dev/null || { echo "router_solicitations: dnsmasq is not installed (scripts/setup.sh installs it)" >&2; exit 2; }
[ -x "$LOADER" ] || { echo "router_solicitations: $LOADER is not built" >&2; exit 2; }
LOADER=$(realpath "$LOADER")
sandbox_reexec "$@"
set -e

RA_WATCH=$top/tests/e2e/ra_watch.py
CONFIG=$E2E_TMP/conf/bpfnet.yaml
topology_create >/dev/null
lan6_pod_address || die "$E2E_REASON"
HOSTS=("$E2E_HOST")
for entry in "${E2E_BYSTANDERS[@]}"; do
    HOSTS+=("${entry%% *}")
done
# The IPv6 walks' config (its other ports unused here), periodic advertisements as said above.
LAN6_RA_INTERVAL=1800 lan6_write_config "$CONFIG" 6180

NODE_DNSMASQ_PID=""
MODE=none
LOADER_RUNS=0
bpfnet_down() {
    [ -n "$LOADER_PID" ] || return 0
    loader_stop TERM
    run_loader --config "$CONFIG" --teardown >/dev/null 2>&1 || die "loader --teardown failed"
}
node_dnsmasq_stop() {
    [ -z "$NODE_DNSMASQ_PID" ] || stop_pid "$NODE_DNSMASQ_PID"
    NODE_DNSMASQ_PID=""
}
switch_to() {
    [ "$MODE" = "$1" ] && return 0
    node_dnsmasq_stop
    case $1 in
    bpfnet)
        ip -n "$E2E_NODE" -6 addr flush dev "$E2E_NIC" scope global
        LOADER_RUNS=$((LOADER_RUNS + 1))
        loader_start "$CONFIG" "$E2E_TMP/logs/loader-$LOADER_RUNS.log" >/dev/null || die "$E2E_REASON"
        ;;
    "dnsmasq on LAN")
        bpfnet_down
        ip -n "$E2E_NODE" -6 addr replace "$LAN6_SERVICE/64" dev "$E2E_NIC" nodad
        # shellcheck disable=SC2054 # the commas are inside dnsmasq's arguments
        dnsmasq_run "$E2E_NODE" "$E2E_TMP/dnsmasq-lan" --interface="$E2E_NIC" --enable-ra \
            --ra-param="$E2E_NIC,0,0" --dhcp-range="$LAN6_RANGE_FIRST,$LAN6_RANGE_LAST,64,10m" || die "$E2E_REASON"
        NODE_DNSMASQ_PID=$DNSMASQ_PID
        ;;
    esac
    MODE=$1
    sleep 2 # the advertisements a start sends are over before the round
}

host_on_link() { ip -n "$1" -6 route show "$LAN6_SUBNET" | grep -q expires; }

RUNS=0
# on_link_after MONITOR_LOG: seconds from the link's coming up to the prefix's on-link route, from the
# `ip -ts monitor link route` of a host; nothing when either is missing.
on_link_after() {
    awk -v prefix="${LAN6_SUBNET} dev eth0 " 'function at(s) { split(substr(s, 13, 15), t, ":"); return t[1] * 3600 + t[2] * 60 + t[3] }
        / eth0@.*state UP / && !up { up = at($1) }
        up && index($0, prefix) && /expires/ && !/Deleted/ { printf "%.3f\n", at($1) - up; exit }' "$1"
}

# round OUT: bounces every host's link in a row; writes to OUT one line per solicitation ("answered SECONDS"
# or "unanswered"), from each host's ra_watch.py log, and per host "on_link SECONDS".
round() {
    local out=$1 ns watchers=() logs=() monitors=() i
    RUNS=$((RUNS + 1))
    : >"$out"
    for ns in "${HOSTS[@]}"; do
        logs+=("$E2E_TMP/logs/ra-$RUNS-$ns.log")
        ip netns exec "$ns" "$SYSTEM_PYTHON" "$RA_WATCH" watch 30 eth0 >"${logs[-1]}" &
        watchers+=($!)
        monitors+=("$E2E_TMP/logs/monitor-$RUNS-$ns.log")
        ip -n "$ns" -ts monitor link route >"${monitors[-1]}" &
        watchers+=($!)
    done
    for i in "${!HOSTS[@]}"; do
        wait_for 5 grep -q listening "${logs[i]}" || die "ra_watch.py did not start in ${HOSTS[i]}"
    done
    for ns in "${HOSTS[@]}"; do
        ip -n "$ns" link set eth0 down
        ip -n "$ns" link set eth0 up
    done
    for ns in "${HOSTS[@]}"; do
        wait_for 20 host_on_link "$ns" || log "round $RUNS ($MODE): $ns has no on-link route after 20 s"
    done
    sleep 0.2 # the last advertisement's line
    kill "${watchers[@]}" 2>/dev/null
    wait "${watchers[@]}" 2>/dev/null || true # killed: 143
    for i in "${!HOSTS[@]}"; do
        "$SYSTEM_PYTHON" "$RA_WATCH" answers "${logs[i]}" | grep -E '^(answered|unanswered)' >>"$out" || true
        echo "on_link $(on_link_after "${monitors[i]}")" >>"$out"
    done
}

# median_and_longest: of the numbers on standard input, in ms; "nan nan" when there are none.
median_and_longest() {
    sort -n | awk '{ v[NR] = $1 * 1000 } END { if (NR == 0) { print "nan nan"; exit }
        m = (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2; print m, v[NR] }'
}

declare -A MEDIAN WORST UNANSWERED ON_LINK ON_LINK_WORST
# measure PATH: one round on PATH; its median and longest wait (ms) for an answer and for the on-link route,
# and its unanswered solicitations.
measure() {
    local lines out=$E2E_TMP/logs/answers.txt median worst
    switch_to "$1"
    round "$out"
    lines=$(cat "$out")
    read -r median worst < <(awk '$1 == "answered" { print $2 }' <<<"$lines" | median_and_longest)
    MEDIAN[$1]+="$median "
    WORST[$1]+="$worst "
    read -r median worst < <(awk '$1 == "on_link" && NF == 2 { print $2 }' <<<"$lines" | median_and_longest)
    ON_LINK[$1]+="$median "
    ON_LINK_WORST[$1]+="$worst "
    UNANSWERED[$1]+="$(grep -c '^unanswered' <<<"$lines" || true) "
}

PATHS=(bpfnet "dnsmasq on LAN")
for ((r = 0; r < ROUNDS; r++)); do
    for ((i = 0; i < ${#PATHS[@]}; i++)); do
        measure "${PATHS[$(((i + r) % ${#PATHS[@]}))]}"
    done
    log "round $((r + 1))/$ROUNDS done"
done
node_dnsmasq_stop
bpfnet_down

REPORT=$top/tests/bench/report.py
rm -f "$RESULTS_FILE"
table() {
    local title=$2 unit=$3 notes=$4 args=() path
    local -n values=$1
    for path in "${PATHS[@]}"; do
        args+=(--series "$path=${values[$path]}")
    done
    "$SYSTEM_PYTHON" "$REPORT" table "$RESULTS_FILE" router_solicitations --title "$title" --unit "$unit" \
        --better lower --baseline "dnsmasq on LAN" --paired "${args[@]}" --notes "$notes"
}
N="$ROUNDS rounds, ${#HOSTS[@]} hosts' links bounced one after the other in each, paths alternating"
table MEDIAN "router solicitation -> advertisement, median of a round" ms "$N."
table WORST "router solicitation -> advertisement, longest of a round" ms "$N."
table ON_LINK "a host's link up -> the prefix on-link, median of a round" ms "$N; the host's wait before it solicits included."
table ON_LINK_WORST "a host's link up -> the prefix on-link, longest of a round" ms "$N."
table UNANSWERED "solicitations not answered before the host solicited again, per round" solicitations "$N."
log "results in $RESULTS_FILE"
