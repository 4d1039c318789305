#!/bin/bash
# End-to-end test of the loader's Kubernetes mode: two simulated control-plane nodes on one provisioning LAN
# (cluster.sh), each running the loader against an API server stand-in (tests/k8s/apiserver_standin.py),
# with the Ironic Service of docs/kubernetes.md, its EndpointSlice and one Lease.
#
#   usage: test_kubernetes.sh PATH/TO/bpfnet-loader     (as root; it sandboxes itself, see lib.sh)
#   env:   K8S_MOVES     how many times case c moves the pod between the nodes (default 20)
#          E2E_KEEP_TMP  keep the temporary directory (logs, probe records) for inspection
#
# Output is TAP-like. The cases share the topology and run in order; each says what it starts from.
# Cases are called through run_case, which shellcheck cannot see.
# shellcheck disable=SC2317
set -uo pipefail

# shellcheck source-path=SCRIPTDIR source=lib.sh
source "$(dirname "$(realpath "$0")")/lib.sh"
# shellcheck source-path=SCRIPTDIR source=dhcp.sh
source "$E2E_DIR/dhcp.sh"
# shellcheck source-path=SCRIPTDIR source=cluster.sh
source "$E2E_DIR/cluster.sh"

loader_argument "$@"

sandbox_reexec "$@"

require_tools curl bpftool ethtool nsenter dnsmasq "$SYSTEM_PYTHON"

LOGS=$E2E_TMP/logs
K8S_MOVES=${K8S_MOVES:-20}
HEARTBEAT_TIMEOUT_S=5 # the loader's default heartbeat timeout
LEASE_S=3             # --lease-duration given by k8s_loader_start

# The node serving now (the pod's node in the current EndpointSlice).
CURRENT=node-a
other() { [ "$1" = node-a ] && echo node-b || echo node-a; }

serves() { [ "$(who_serves)" = "${POD_NAME[$1]}" ] && [ "$(arp_owner)" = "${NIC_MAC[$1]}" ]; }

loaders_alive() {
    local node
    for node in "${NODES[@]}"; do
        if [ -n "${K8S_LOADER_PID[$node]:-}" ] && pid_gone "${K8S_LOADER_PID[$node]}"; then
            E2E_REASON="the loader on $node exited: $(tail -n 3 "${K8S_LOADER_LOG[$node]}" | tr '\n' ' ')"
            return 1
        fi
    done
}

# ---------------------------------------------------------------------------------------------------

case_refused() {
    # Not ours: another class. Refused: a namespace not allowed, an IP outside the allowed CIDRs.
    kapi c1 POST /api/v1/namespaces/other/services "$(service_json elsewhere 198.18.0.3 other)" >/dev/null || return 1
    kapi c1 POST "$SERVICE_PATH" "$(service_json outside 198.19.0.3)" >/dev/null || return 1
    local foreign
    foreign=$(service_json foreign 198.18.0.4 | sed 's#bpfnet.io/provisioning#example.com/other#')
    kapi c1 POST "$SERVICE_PATH" "$foreign" >/dev/null || return 1
    if ! wait_for 5 eval '[ -n "$(events_of c1 Refused other)" ] && [ -n "$(events_of c1 Refused)" ]'; then
        E2E_REASON="no Refused Events (other: '$(events_of c1 Refused other)', metal3: '$(events_of c1 Refused)')"
        return 1
    fi
    local ns_note cidr_note
    ns_note=$(events_of c1 Refused other)
    cidr_note=$(events_of c1 Refused)
    log "refused (namespace): $ns_note"
    log "refused (CIDR): $cidr_note"
    [[ $ns_note == *"namespace"*"other"* ]] || { E2E_REASON="namespace Event does not say why: $ns_note"; return 1; }
    [[ $cidr_note == *"198.19.0.3"*"CIDR"* ]] || { E2E_REASON="CIDR Event does not say why: $cidr_note"; return 1; }
    if [ "$(json_field c1 "$EVENT_PATH" 'len(o["items"])')" != 1 ]; then
        E2E_REASON="expected exactly one Event in $SERVICE_NS (the CIDR refusal; none for the foreign class)"
        return 1
    fi
    local ip
    for ip in 198.18.0.3 198.18.0.4; do
        if cluster_host "$SYSTEM_PYTHON" "$E2E_DIR/arp_probe.py" --timeout 0.3 eth0 "$ip" >/dev/null; then
            E2E_REASON="$ip (a refused or foreign Service) is answered on the LAN"
            return 1
        fi
    done
    loaders_alive
}

case_serve() {
    # From: both loaders running, the Service without endpoints. The pod becomes ready on node A.
    set_slice c1 node-a || { E2E_REASON="cannot write the EndpointSlice"; return 1; }
    if ! wait_for 5 serves node-a; then
        E2E_REASON="node-a does not serve: who='$(who_serves)' arp='$(arp_owner)'"
        return 1
    fi
    [ "$(lease_holder c1)" = node-a ] || { E2E_REASON="lease holder is '$(lease_holder c1)'"; return 1; }
    wait_for 3 eval '[ "$(ingress_of c1)" = "$E2E_SERVICE_IP" ]' ||
        { E2E_REASON="status.loadBalancer.ingress is '$(ingress_of c1)'"; return 1; }
    local serving
    serving=$(events_of c1 Serving)
    [[ $serving == *"node node-a serves $E2E_SERVICE_IP"* ]] || { E2E_REASON="no Serving Event: '$serving'"; return 1; }
    # A DHCP exchange through node A reaches pod A's server.
    local out=$E2E_TMP/serve.probe
    cluster_host "$SYSTEM_PYTHON" "$PROBE_PY" probe eth0 "$E2E_SERVICE_IP" --seconds 0.5 --every 0.05 >"$out"
    local offer
    offer=$(awk '$2 == "dhcp" && $3 != "-" { print $3; exit }' "$out")
    ip_in_range "$offer" "${DHCP_FIRST[node-a]}" "${DHCP_LAST[node-a]}" ||
        { E2E_REASON="no DHCP offer from pod A's range (got '$offer')"; return 1; }
    log "node-a serves: lease, ingress, Serving Event, HTTP from ${POD_NAME[node-a]}, DHCP offer $offer"
    loaders_alive
}

# move_to NODE: the EndpointSlice now names the pod on NODE (one update: ready there, gone from the other).
move_to() {
    set_slice c1 "$1" || return 1
    CURRENT=$1
}

case_moves() {
    # From: node A serves. The pod moves K8S_MOVES times between the nodes, while the host probes HTTP and
    # DHCP every 10 ms and records every ARP frame about the service IP.
    local probe_log=$E2E_TMP/moves.probe moves_log=$E2E_TMP/moves.log arp_log=$E2E_TMP/moves.arp
    local seconds=$((K8S_MOVES * 2 + 4))
    : >"$moves_log"
    cluster_host "$SYSTEM_PYTHON" "$E2E_DIR/arp_probe.py" --watch "$seconds" eth0 "$E2E_SERVICE_IP" >"$arp_log" &
    local watcher=$!
    E2E_PIDS+=("$watcher")
    cluster_host "$SYSTEM_PYTHON" "$E2E_DIR/arp_probe.py" --every 0.01 --count $(((seconds - 1) * 100)) eth0 \
        "$E2E_SERVICE_IP" >"$E2E_TMP/moves.arpprobe" &
    local prober=$!
    E2E_PIDS+=("$prober")
    cluster_host "$SYSTEM_PYTHON" "$PROBE_PY" probe eth0 "$E2E_SERVICE_IP" --seconds "$seconds" >"$probe_log" &
    local probe=$!
    E2E_PIDS+=("$probe")
    wait_for 5 grep -q started "$probe_log"
    sleep 1
    local n next
    for ((n = 0; n < K8S_MOVES; n++)); do
        next=$(other "$CURRENT")
        # The move's time is taken just before the API server has the new EndpointSlice.
        echo "$EPOCHREALTIME ${POD_NAME[$next]} ${DHCP_FIRST[$next]} ${DHCP_LAST[$next]}" >>"$moves_log"
        move_to "$next" || { E2E_REASON="cannot write the EndpointSlice"; return 1; }
        sleep 1.9
    done
    wait "$probe"
    wait "$prober"
    wait "$watcher"
    local analysis
    analysis=$("$SYSTEM_PYTHON" "$PROBE_PY" analyze "$probe_log" "$moves_log")
    local rc=$?
    echo "$analysis" | sed 's/^/# /'
    MOVES_JSON=$(echo "$analysis" | tail -n1)
    if [ $rc != 0 ]; then
        E2E_REASON="a move never got an HTTP answer or DHCP offer from its new pod"
        return 1
    fi
    # Never two MACs answering one who-has (the prober collects every answer until its next request).
    local probes double silent
    probes=$(grep -c . "$E2E_TMP/moves.arpprobe")
    double=$(grep -c 'answered .*,' "$E2E_TMP/moves.arpprobe")
    silent=$(grep -c silent "$E2E_TMP/moves.arpprobe")
    log "ARP: $probes who-has from the host every 10 ms, $silent unanswered, $double answered by two MACs; $(grep -c ' announce ' "$arp_log") announcements seen"
    [ "$probes" -gt $((K8S_MOVES * 100)) ] || { E2E_REASON="the ARP prober sent only $probes requests"; return 1; }
    [ "$double" = 0 ] || { E2E_REASON="$double who-has probes were answered by both nodes: $(grep -m3 'answered .*,' "$E2E_TMP/moves.arpprobe" | tr '\n' ' ')"; return 1; }
    loaders_alive
}

# ---------------------------------------------------------------------------------------------------

log "loader: $LOADER"
cluster_topology_create
pods_start || die "pods: $E2E_REASON"
standin_start c1
kapi c1 POST "$SERVICE_PATH" "$(service_json)" >/dev/null || die "cannot create the Service"
kapi c1 POST "$SLICE_PATH" "$(slice_json none)" >/dev/null || die "cannot create the EndpointSlice"
for node in "${NODES[@]}"; do
    k8s_loader_start "$node" c1 "$LOGS/loader-$node.log" || die "$E2E_REASON"
done
MOVES_JSON=""

run_case "a. Services with a disallowed namespace or IP are refused with an Event; another class is ignored" case_refused
run_case "b. the pod ready on node A: A holds the Lease, answers ARP, serves HTTP and DHCP, sets the ingress" case_serve
run_case "c. $K8S_MOVES pod moves between A and B: each answered by the new pod; never two ARP owners" case_moves
[ -n "$MOVES_JSON" ] && log "failover: $MOVES_JSON"

finish
