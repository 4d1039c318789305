#!/usr/bin/env bash
# Failover: what a bare-metal host on the LAN sees while the backend moves, from "the new backend is ready"
# to the first request it answers, and the longest gap a client sees. The host probes all along (tests/e2e/
# failover_probe.py: HTTP GET /who every 10 ms from 8 staggered threads, DHCP DISCOVERs every 30 ms from
# 3; tests/e2e/arp_probe.py: a who-has every 10 ms). Three ways to move, each MOVES times:
#   bpfnetctl       standalone loader; `bpfnetctl backend set IP` switches the maps to the other pod (two
#                   pods on one node, each with HTTP and its own DHCP range)
#   config reload   standalone loader; the config file is replaced with the other pod as backend (the
#                   loader's file watch applies it)
#   Kubernetes      tests/e2e/test_kubernetes.sh --case serve --case moves: the pod moves between two nodes through
#                   EndpointSlice changes at the API server stand-in; the Lease moves the service IP (and
#                   its ARP answers) to the new node. "Ready" is the stand-in's commit of the EndpointSlice.
# Then, ROUNDS times (3; 1 with fewer than 10 moves), test_kubernetes.sh's cases partition (the owner's node cut
# off from the API server while its pod moves: how long both nodes answered ARP, how long none did) and
# loader_upgrade (the owner's loader restarted with a slow start: the longest ARP silence, with the upgrade
# grace and with --upgrade-grace 0 side by side).
# Each way is a probe session of its own (the loader compares the parsed file, so config moves must
# alternate the pods themselves, and a bpfnetctl move in between could leave the file unchanged).
# Per move: the time to the first HTTP answer from the new pod and to the first DHCP offer from its
# range, and the longest times without an HTTP answer (a new TCP connection each try) and without a DHCP
# offer; for ARP, the longest time between answered who-has over each session (in standalone mode the
# node that answers never changes).
# Not a test: it fails only if a run could not be made (or a move never got an answer: that is reported).
# Needs root; sandboxes itself.
#
#   failover.sh [MOVES] [RESULTS_FILE]     (defaults 20, ./failover.json)
set -euo pipefail

top=$(cd "$(dirname "$0")/../.." && pwd)
MOVES=${1:-20}
RESULTS_FILE=$(realpath -m "${2:-failover.json}")
BUILD=${BUILD:-$top/build}
LOADER=$BUILD/loader/bpfnet-loader
BPFNETCTL=$BUILD/cli/bpfnetctl
# shellcheck source=../e2e/lib.sh
source "$top/tests/e2e/lib.sh"
# shellcheck source=../e2e/dhcp.sh
source "$top/tests/e2e/dhcp.sh"
[ -x "$BPFNETCTL" ] || { echo "failover: $BPFNETCTL is not built" >&2; exit 2; }
if [ "$(id -u)" = 0 ] && ! dhcp_available; then
    echo "failover: $E2E_REASON" >&2
    exit 2
fi
sandbox_reexec "$@"

PROBE_PY=$top/tests/e2e/failover_probe.py
ARP_PY=$top/tests/e2e/arp_probe.py
POD_B=e2e-podb
POD_B_IP=198.18.101.2
POD_B_GW=198.18.101.1
VETH_B=vethpodb
declare -A POD_IP=([pod-a]=$E2E_POD_IP [pod-b]=$POD_B_IP)
declare -A POD_NS=([pod-a]=$E2E_POD [pod-b]=$POD_B)
declare -A FIRST=([pod-a]=198.18.0.100 [pod-b]=198.18.0.150)
declare -A LAST=([pod-a]=198.18.0.149 [pod-b]=198.18.0.199)
CONFIG=$E2E_TMP/conf/bpfnet.yaml

# ---------------------------------------------------------------------------------------------------
# Standalone: two pods on the node, the loader serving pod-a first

topology_create >/dev/null
ip netns add "$POD_B"
E2E_NAMESPACES+=("$POD_B")
ip -n "$POD_B" link set lo up
ip -n "$E2E_NODE" link add "$VETH_B" type veth peer name eth0 netns "$POD_B"
ip -n "$E2E_NODE" addr add "$POD_B_GW/24" dev "$VETH_B"
ip -n "$E2E_NODE" link set "$VETH_B" up
ip -n "$POD_B" addr add "$POD_B_IP/24" dev eth0
ip -n "$POD_B" link set eth0 up
ip -n "$POD_B" route add default via "$POD_B_GW"
for pod in pod-a pod-b; do
    mkdir -p "$E2E_TMP/$pod/www"
    echo "$pod" >"$E2E_TMP/$pod/www/who"
    bg_in_ns "${POD_NS[$pod]}" "$E2E_TMP/logs/http-$pod.log" "$SYSTEM_PYTHON" -m http.server --bind 0.0.0.0 \
        --directory "$E2E_TMP/$pod/www" 8080
    DHCP_RANGE_FIRST=${FIRST[$pod]} DHCP_RANGE_LAST=${LAST[$pod]} dnsmasq_start "${POD_NS[$pod]}" "$E2E_TMP/$pod/dnsmasq" ||
        die "$E2E_REASON"
done
write_config --port "dhcp:udp:67::dhcp" "$CONFIG"
loader_start "$CONFIG" "$E2E_TMP/logs/loader.log" >/dev/null || die "$E2E_REASON"
who() { host curl -s --max-time 1 "http://$E2E_SERVICE_IP/who"; }
wait_for 10 test "$(who)" = pod-a || die "pod-a does not answer through the service IP"

# move_by METHOD POD: makes POD the backend that way.
move_by() {
    case $1 in
    bpfnetctl) nsenter --net="/run/netns/$E2E_NODE" "$BPFNETCTL" backend set "${POD_IP[$2]}" >/dev/null ;;
    "config reload")
        sed "s/^  ip: .*/  ip: ${POD_IP[$2]}/" "$CONFIG" >"$CONFIG.new"
        replace_file "$CONFIG.new" "$CONFIG"
        ;;
    esac
}

# longest_arp_gap FILE: the longest time between answered who-has (arp_probe.py --every lines), seconds.
longest_arp_gap() {
    awk '$2 == "answered" { if (last != "" && $1 - last > gap) gap = $1 - last; last = $1 }
         END { printf "%.3f\n", gap + 0 }' "$1"
}

GAP=1.0
declare -A RESULT ARP_GAP
# standalone_session METHOD: MOVES moves by METHOD under the probes; sets RESULT[METHOD] (analyze's JSON)
# and ARP_GAP[METHOD] (seconds). The backend alternates between the pods, so the file always changes.
standalone_session() {
    local method=$1 tag=${1// /-} seconds probe_log moves_log arp_pid probe_pid n next out
    seconds=$(awk -v m="$MOVES" -v g="$GAP" 'BEGIN { printf "%d", m * g + 4 }')
    probe_log=$E2E_TMP/$tag.probe
    moves_log=$E2E_TMP/$tag.moves
    : >"$moves_log"
    host nice -n 10 "$SYSTEM_PYTHON" "$ARP_PY" --every 0.01 --count $(((seconds - 1) * 100)) eth0 "$E2E_SERVICE_IP" \
        >"$E2E_TMP/$tag.arp" &
    arp_pid=$!
    E2E_PIDS+=("$arp_pid")
    host nice -n 10 "$SYSTEM_PYTHON" "$PROBE_PY" probe eth0 "$E2E_SERVICE_IP" --seconds "$seconds" >"$probe_log" &
    probe_pid=$!
    E2E_PIDS+=("$probe_pid")
    wait_for 5 grep -q started "$probe_log" || die "the prober did not start"
    sleep 1
    for ((n = 0; n < MOVES; n++)); do
        next=$([ "$CURRENT" = pod-a ] && echo pod-b || echo pod-a)
        echo "$EPOCHREALTIME $next ${FIRST[$next]} ${LAST[$next]}" >>"$moves_log"
        move_by "$method" "$next" || die "move $((n + 1)) by $method failed"
        CURRENT=$next
        sleep "$GAP"
    done
    wait "$probe_pid"
    wait "$arp_pid"
    out=$("$SYSTEM_PYTHON" "$PROBE_PY" analyze "$probe_log" "$moves_log") ||
        die "a move by $method never got an answer from its new pod: $(echo "$out" | grep never | head -3 | tr '\n' ' ')"
    RESULT[$method]=$(echo "$out" | tail -n1)
    ARP_GAP[$method]=$(longest_arp_gap "$E2E_TMP/$tag.arp")
    log "$method: $(echo "${RESULT[$method]}" | cut -c1-160); longest ARP gap ${ARP_GAP[$method]} s"
}

CURRENT="pod-a"
standalone_session bpfnetctl
# The file still names pod-a: from pod-a, the config session's first move (to pod-b) changes it.
if [ "$CURRENT" != pod-a ]; then
    move_by bpfnetctl pod-a
    CURRENT="pod-a"
    sleep "$GAP"
fi
standalone_session "config reload"
loader_stop TERM

# ---------------------------------------------------------------------------------------------------
# Kubernetes: the e2e suite's cases serve and moves, its records kept

k8s_out=$E2E_TMP/logs/kubernetes.log
# A sandbox of its own inside this one (the suite makes its namespaces from a fresh one).
env -u BPFNET_E2E_SANDBOX K8S_MOVES=$MOVES E2E_KEEP_TMP=1 bash "$top/tests/e2e/test_kubernetes.sh" "$LOADER" --case serve --case moves >"$k8s_out" 2>&1 ||
    die "the Kubernetes moves could not be run: $(grep -E '^not ok|fatal' "$k8s_out" | head -3)"
k8s_tmp=$(sed -n 's/.*kept \(\/tmp\/bpfnet-e2e\.[A-Za-z0-9]*\).*/\1/p' "$k8s_out" | tail -n1)
[ -d "$k8s_tmp" ] || die "the Kubernetes run kept no records"
RESULT[Kubernetes]=$("$SYSTEM_PYTHON" "$PROBE_PY" analyze "$k8s_tmp/moves.probe" "$k8s_tmp/moves.log" \
    --commits "$k8s_tmp/logs/commits-c1.log") || die "a Kubernetes move never got an answer from its new pod"
RESULT[Kubernetes]=$(echo "${RESULT[Kubernetes]}" | tail -n1)
ARP_GAP[Kubernetes]=$(longest_arp_gap "$k8s_tmp/moves.arpprobe")
# Who-has the moves got from both nodes, in seconds of probing (a probe every 10 ms).
K8S_TWO=$(awk '$2 == "answered" && $3 ~ /,/ { n++ } END { printf "%.2f", n * 0.01 }' "$k8s_tmp/moves.arpprobe")
log "Kubernetes: $(echo "${RESULT[Kubernetes]}" | cut -c1-160); longest ARP gap ${ARP_GAP[Kubernetes]} s"
rm -rf "$k8s_tmp"

# ---------------------------------------------------------------------------------------------------
# Kubernetes, ROUNDS times (each a fresh cluster): the suite's cases partition (the owner cut off from the API
# server while its pod moves: how long both nodes answered, how long none did) and loader_upgrade (the owner's
# loader stopped, the next one started 8 s later: the longest ARP silence), then loader_upgrade again with
# --upgrade-grace 0 (the loader before the grace), side by side.

ROUNDS=${ROUNDS:-$((MOVES >= 10 ? 3 : 1))}
PART_TWO=() PART_SILENT=() PART_TAKEOVER=() UPGRADE_GAP=() NO_GRACE_GAP=()
# k8s_json OUT KEY: the JSON a run logged as "KEY: {...}".
k8s_json() { sed -n "s/.* $2: \({.*}\)\$/\1/p" "$1" | tail -n1; }
field() { echo "$1" | "$SYSTEM_PYTHON" -c 'import json, sys; print("%.3f" % json.load(sys.stdin)[sys.argv[1]])' "$2"; }
for ((round = 1; round <= ROUNDS; round++)); do
    out=$E2E_TMP/logs/k8s-round-$round.log
    env -u BPFNET_E2E_SANDBOX bash "$top/tests/e2e/test_kubernetes.sh" "$LOADER" --case serve --case partition \
        --case loader_upgrade >"$out" 2>&1 || die "round $round failed: $(grep -E '^not ok|fatal' "$out" | head -3)"
    part=$(k8s_json "$out" partition)
    upgrade=$(k8s_json "$out" upgrade)
    [ -n "$part" ] && [ -n "$upgrade" ] || die "round $round reported no measurement"
    PART_TWO+=("$(field "$part" two_answerers_s)")
    PART_SILENT+=("$(field "$part" silent_s)")
    PART_TAKEOVER+=("$(field "$part" takeover_s)")
    UPGRADE_GAP+=("$(field "$upgrade" longest_silence_s)")
    out=$E2E_TMP/logs/k8s-round-$round-no-grace.log
    env -u BPFNET_E2E_SANDBOX K8S_LOADER_EXTRA="--upgrade-grace 0" bash "$top/tests/e2e/test_kubernetes.sh" "$LOADER" \
        --case serve --case loader_upgrade >"$out" 2>&1 ||
        die "round $round without a grace failed: $(grep -E '^not ok|fatal' "$out" | head -3)"
    no_grace=$(k8s_json "$out" upgrade)
    [ -n "$no_grace" ] || die "round $round without a grace reported no measurement"
    NO_GRACE_GAP+=("$(field "$no_grace" longest_silence_s)")
    log "Kubernetes round $round: partition $part; upgrade $upgrade; without a grace $no_grace"
done

# ---------------------------------------------------------------------------------------------------

# series METHOD KEY: one value (ms) per move of that method.
series() {
    "$SYSTEM_PYTHON" -c 'import json, sys
print(" ".join("%.1f" % (m[sys.argv[2]] * 1000) for m in json.loads(sys.argv[1])["per_move"] if m[sys.argv[2]] is not None))' \
        "${RESULT[$1]}" "$2"
}
ms() { awk -v s="$1" 'BEGIN { printf "%.1f", s * 1000 }'; }
REPORT=$top/tests/bench/report.py
rm -f "$RESULTS_FILE"
declare -A TITLE=([http_s]="first HTTP answer from the new pod" [dhcp_s]="first DHCP offer from the new pod's range"
    [http_gap_s]="longest time without an HTTP answer after a move"
    [dhcp_gap_s]="longest time without a DHCP offer after a move")
for key in http_s dhcp_s http_gap_s dhcp_gap_s; do
    "$SYSTEM_PYTHON" "$REPORT" table "$RESULTS_FILE" failover --title "Failover: ${TITLE[$key]}" --unit ms --better lower \
        --baseline bpfnetctl --series "bpfnetctl=$(series bpfnetctl "$key")" \
        --series "config reload=$(series "config reload" "$key")" --series "Kubernetes=$(series Kubernetes "$key")" \
        --notes "$MOVES moves each, from the new backend being ready (command issued, file replaced, EndpointSlice committed); probes every 10 ms (HTTP) and 30 ms (DHCP). Not paired: one value per move, the ways one after the other."
done
"$SYSTEM_PYTHON" "$REPORT" table "$RESULTS_FILE" failover --title "Failover: longest run without an ARP answer for the service IP" \
    --unit ms --better lower --baseline bpfnetctl --series "bpfnetctl=$(ms "${ARP_GAP[bpfnetctl]}")" \
    --series "config reload=$(ms "${ARP_GAP[config reload]}")" --series "Kubernetes=$(ms "${ARP_GAP[Kubernetes]}")" \
    --notes "One value per session (a who-has every 10 ms through all its moves); standalone moves never change the node that answers ARP, Kubernetes moves do."
ms_list() {
    local v out=""
    for v in "$@"; do out+="${out:+,}$(ms "$v")"; done
    echo "$out"
}
"$SYSTEM_PYTHON" "$REPORT" table "$RESULTS_FILE" failover \
    --title "Kubernetes: time both nodes answered ARP for the service IP" --unit ms --better lower \
    --baseline "moves (Lease released)" --series "moves (Lease released)=$(ms "$K8S_TWO")" \
    --series "owner cut off from the API server=$(ms_list "${PART_TWO[@]}")" \
    --notes "Moves: all $MOVES moves of one session together (who-has answered by two MACs x 10 ms). Cut off: one value per round ($ROUNDS rounds, a fresh cluster each, Lease 3 s): the owner's management link down, then its pod moved; from the new owner's first answer to the old one's last (0: the old one had stopped first). The takeover came $(IFS=,; echo "${PART_TAKEOVER[*]}") s after the move (the Lease expiring unrenewed)."
"$SYSTEM_PYTHON" "$REPORT" table "$RESULTS_FILE" failover \
    --title "Kubernetes: longest run without an ARP answer across a takeover" --unit ms --better lower \
    --baseline "moves (Lease released)" --series "moves (Lease released)=$(ms "${ARP_GAP[Kubernetes]}")" \
    --series "owner cut off from the API server=$(ms_list "${PART_SILENT[@]}")" \
    --notes "Cut off: the new owner announces and answers one gratuitous-ARP interval (200 ms) later, so the old owner yields first; the old owner answered until then."
"$SYSTEM_PYTHON" "$REPORT" table "$RESULTS_FILE" failover \
    --title "Kubernetes: longest run without an ARP answer across a loader upgrade (next loader 8 s later)" \
    --unit ms --better lower --paired --baseline "no grace (--upgrade-grace 0)" \
    --series "no grace (--upgrade-grace 0)=$(ms_list "${NO_GRACE_GAP[@]}")" \
    --series "upgrade grace (60 s)=$(ms_list "${UPGRADE_GAP[@]}")" \
    --notes "The owner's loader SIGTERMed, the next one started 8 s later (past the 5 s heartbeat timeout: an image being pulled); a who-has every 10 ms. One pair per round, run one after the other."
log "results in $RESULTS_FILE"
