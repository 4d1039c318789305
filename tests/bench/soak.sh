#!/usr/bin/env bash
# Soak: the Kubernetes-mode loaders of two nodes through a compressed day, to see whether anything grows. The
# e2e suite's world (tests/e2e/cluster.sh: two nodes on one bridge LAN, a pod with HTTP and dnsmasq on each, the
# API server stand-in), the Ironic Service served by one node at a time, and all at once for SECONDS:
#   DHCP        every 30 s, 100 machines (distinct MACs) each through a full exchange, relayed to the pod
#               (tests/bench/dhcp_clients.py: 16 at a time)
#   flows       the serving pod calls a host (Ironic -> the ramdisk agent: a new TCP connection every 50 ms to
#               the host's port 9999, each a flow), and the host calls the service IP's HTTP every 100 ms
#   moves       every 30 s the pod's EndpointSlice moves to the other node (the Lease, the IP, the flows follow)
#   API away    every 10 min the API server stand-in is away for 60 s (its /_test/offline)
#   watches cut every 2 min every open watch is cut mid-event (its /_test/truncate)
# Sampled every SAMPLE_S (10 s) for each node's loader: resident memory (VmRSS), file descriptors, threads,
# and from its /metrics the datapath's tables (neighbours, flows, unconfirmed flows), the conflicts, the events
# the ring had no room for; the DHCP servers' table from its pin (bpftool). Written to OUT_DIR/samples.csv and
# plotted to OUT_DIR/soak.png (tests/bench/soak_plot.py, python3-matplotlib); OUT_DIR/summary.json has each
# series' first and last value and its peak; the moves, the API server's absences and each DHCP round's result
# (dhcp_clients.py's JSON) are copied there too. Flat is the goal: growth is for the report to explain.
# Not a test, not in CI (an hour by default). Needs root; sandboxes itself (tests/e2e/lib.sh).
#
#   soak.sh [SECONDS] [OUT_DIR]    (defaults 3600, ./soak)
set -uo pipefail

top=$(cd "$(dirname "$0")/../.." && pwd)
DURATION_S=${1:-3600}
OUT_DIR=$(realpath -m "${2:-soak}")
SAMPLE_S=${SAMPLE_S:-10}
BUILD=${BUILD:-$top/build}
LOADER=$BUILD/loader/bpfnet-loader
# shellcheck source=../e2e/lib.sh
source "$top/tests/e2e/lib.sh"
# shellcheck source=../e2e/dhcp.sh
source "$top/tests/e2e/dhcp.sh"
# shellcheck source=../e2e/cluster.sh
source "$top/tests/e2e/cluster.sh"
[ -x "$LOADER" ] || { echo "soak: $LOADER is not built" >&2; exit 2; }
LOADER=$(realpath "$LOADER")
sandbox_reexec "$@"

LOGS=$E2E_TMP/logs
SERVICE_PATH=/api/v1/namespaces/$SERVICE_NS/services
SLICE_PATH=/apis/discovery.k8s.io/v1/namespaces/$SERVICE_NS/endpointslices
mkdir -p "$OUT_DIR"
SAMPLES=$OUT_DIR/samples.csv
DEADLINE=0 # set when the day starts
running() { [ "$SECONDS" -lt "$DEADLINE" ]; }

log "soak: $DURATION_S s, a sample every $SAMPLE_S s, into $OUT_DIR"
cluster_start node-a
wait_for 10 eval '[ "$(who_serves)" = "${POD_NAME[node-a]}" ]' || die "node-a does not serve"

# The ramdisk agent's port on the host, which the pods call.
mkdir -p "$E2E_TMP/agent"
echo agent >"$E2E_TMP/agent/index.html"
bg_in_ns "$CLUSTER_HOST" "$LOGS/agent.log" "$SYSTEM_PYTHON" -m http.server --bind 0.0.0.0 --directory "$E2E_TMP/agent" 9999

# --- the day's work, each a loop until the deadline ------------------------------------------------------------
dhcp_load() {
    while running; do
        cluster_host "$SYSTEM_PYTHON" "$top/tests/bench/dhcp_clients.py" eth0 --clients 100 --window 16 \
            --timeout 2 >>"$LOGS/dhcp.jsonl" 2>>"$LOGS/dhcp.err" || true
        sleep 30
    done
}
host_calls() {
    while running; do
        cluster_host curl -s -o /dev/null --max-time 1 "http://$E2E_SERVICE_IP/who" || true
        sleep 0.1
    done
}
pod_calls() { # NODE: its pod calls the host; only the serving pod's calls reach it
    while running; do
        ip netns exec "${POD_NS[$1]}" curl -s -o /dev/null --max-time 1 "http://198.18.0.10:9999/" || true
        sleep 0.05
    done
}
moves() {
    local node=node-a
    while running; do
        sleep 30
        node=$(other "$node")
        kapi c1 PUT "$SLICE_PATH/$SERVICE_NAME-abcde" "$(slice_json "$node")" >/dev/null || true
        echo "$SECONDS $node" >>"$LOGS/moves.log"
    done
}
api_away() {
    while running; do
        sleep 540
        running || break
        kapi c1 POST /_test/offline '{"on": true}' >/dev/null || true
        echo "$SECONDS away" >>"$LOGS/api.log"
        sleep 60
        kapi c1 POST /_test/offline '{"on": false}' >/dev/null || true
        echo "$SECONDS back" >>"$LOGS/api.log"
    done
}
watches_cut() {
    while running; do
        sleep 120
        kapi c1 POST /_test/truncate '{}' >/dev/null || true
    done
}
other() { [ "$1" = node-a ] && echo node-b || echo node-a; }

# --- sampling --------------------------------------------------------------------------------------------------
# metric TEXT NAME: the value of the series NAME (with its labels, as exposed) in a /metrics text.
metric() { awk -v s="$2" '$1 == s { print $2; found = 1 } END { if (!found) print 0 }' <<<"$1"; }
sample() {
    local node pid metrics dhcp_servers pin
    for node in "${NODES[@]}"; do
        pid=${K8S_LOADER_PID[$node]}
        [ -d "/proc/$pid" ] || { echo "$SECONDS,$node,gone,,,,,,,," >>"$SAMPLES"; continue; }
        metrics=$(ip netns exec "${NODE_NS[$node]}" curl -s --max-time 2 http://127.0.0.1:9394/metrics)
        pin=$E2E_PIN_ROOT/$node/$E2E_NIC/dhcp_servers
        dhcp_servers=$(bpftool -j map dump pinned "$pin" 2>/dev/null |
            "$SYSTEM_PYTHON" -c 'import json, sys; print(len(json.load(sys.stdin)))' 2>/dev/null || echo "")
        echo "$SECONDS,$node,$(awk '/^VmRSS/ { print $2 }' "/proc/$pid/status"),$(find "/proc/$pid/fd" -mindepth 1 -maxdepth 1 | wc -l),$(awk '/^Threads/ { print $2 }' "/proc/$pid/status"),$(metric "$metrics" bpfnet_neighbours),$(metric "$metrics" bpfnet_flows),$(metric "$metrics" bpfnet_flows_unconfirmed),$dhcp_servers,$(metric "$metrics" bpfnet_conflicts_total),$(metric "$metrics" 'bpfnet_datapath_events_total{event="event_lost"}')" >>"$SAMPLES"
    done
}

echo "t_s,node,rss_kib,fds,threads,neighbours,flows,flows_unconfirmed,dhcp_servers,conflicts_total,events_lost_total" >"$SAMPLES"
start=$SECONDS
DEADLINE=$((start + DURATION_S))
for job in dhcp_load host_calls moves api_away watches_cut; do
    "$job" &
    E2E_PIDS+=("$!")
done
for node in "${NODES[@]}"; do
    pod_calls "$node" &
    E2E_PIDS+=("$!")
done
while running; do
    sample
    sleep "$SAMPLE_S"
done
sample
for node in "${NODES[@]}"; do
    pid_gone "${K8S_LOADER_PID[$node]}" && log "the loader on $node exited: $(tail -n 3 "${K8S_LOADER_LOG[$node]}" | tr '\n' ' ')"
done
cp "$LOGS/moves.log" "$LOGS/api.log" "$LOGS/dhcp.jsonl" "$OUT_DIR/" 2>/dev/null || true
"$SYSTEM_PYTHON" "$top/tests/bench/soak_plot.py" "$SAMPLES" "$OUT_DIR/soak.png" "$OUT_DIR/summary.json" ||
    log "soak: no plot (python3-matplotlib missing? scripts/setup.sh installs it)"
log "soak: $(grep -c . "$LOGS/moves.log" 2>/dev/null || echo 0) moves, $(grep -c . "$LOGS/dhcp.jsonl" 2>/dev/null || echo 0) DHCP rounds, samples in $SAMPLES"
exit 0 # a benchmark, not a suite: no tally (the sandbox's cleanup runs on exit)
