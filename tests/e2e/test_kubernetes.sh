#!/bin/bash
# End-to-end test of the loader's Kubernetes mode: two simulated control-plane nodes on one provisioning LAN
# (cluster.sh), each running the loader against an API server stand-in (tests/k8s/apiserver_standin.py),
# with the Ironic Service of docs/kubernetes.md, its EndpointSlice and one Lease.
#
#   usage: test_kubernetes.sh PATH/TO/bpfnet-loader [--case KEY]... | --list   (as root; it sandboxes itself, see lib.sh)
#   env:   K8S_MOVES     how many times case c moves the pod between the nodes (default 20)
#          K8S_OUTAGE_S  how long case e keeps the API server away before anything else happens (default 60)
#          K8S_UPGRADE_PULL_S  how long case f5 waits between stopping the owner's loader and starting the next
#                        (default 8, past the 5 s heartbeat timeout)
#          E2E_KEEP_TMP  keep the temporary directory (logs, probe records) for inspection
#
# Cases: a. refusals with Events; b. the pod on node A (Lease, ARP, HTTP, DHCP, ingress, Event, metrics); b2.
# the status: only the ingress written, compared by meaning, cleared without endpoints, refusal Events
# reported again after they expired; c. K8S_MOVES moves between the nodes with HTTP, DHCP and ARP probes every
# 10 ms (failover times measured; never two ARP owners); d. SIGKILL of the owner's loader; e. the API server
# away (60 s: nothing lost), then back with 410; e2. the owner's node alone cut off from the API server while
# its pod moves (how long both nodes answer, measured); f. malformed and unexpected API answers, 409 on
# renewal; f2. stalled watches; f3. a rolling update; f4. the Metal3 example; f5. the owner's loader upgraded
# with a slow start (the ARP gap, measured); f6. loadBalancerSourceRanges; g. two Services sharing the IP; g6. a Service on a shared
# address (the VIP, a node's own); g2.
# the Service made dual stack, an IPv6-only one, two addresses on one pod; h. pivot between two clusters and a double claim; i. a pod behind a bridge CNI; j. every recorded API request granted by the roles of k8s/examples/ironic (k8s/manifests/rbac.yaml, k8s/served-namespace in metal3).
#
# Output is TAP-like. The cases share the topology and run in order; each says what it starts from.
# Cases are called through run_cases (the case list), which shellcheck cannot see.
# shellcheck disable=SC2317
set -uo pipefail

# shellcheck source-path=SCRIPTDIR source=lib.sh
source "$(dirname "$(realpath "$0")")/lib.sh"
# shellcheck source-path=SCRIPTDIR source=dhcp.sh
source "$E2E_DIR/dhcp.sh"
# shellcheck source-path=SCRIPTDIR source=cluster.sh
source "$E2E_DIR/cluster.sh"

K8S_MOVES=${K8S_MOVES:-20}

# The cases, in the order of a full run, with what each starts from (lib.sh, "The case list"): most start from
# case b's end state (the pod ready on node A, A serving), the last two from case h's (the second cluster).
e2e_fixture cluster cluster_start
e2e_case refused case_refused "a. Services with a disallowed namespace or IP are refused with an Event; another class is ignored" cluster
e2e_case serve case_serve "b. the pod ready on node A: A holds the Lease, answers ARP, serves HTTP and DHCP, sets the ingress" cluster
e2e_case status case_status "b2. the owner writes only the ingress, by meaning: no write per Service change, conditions kept, cleared when no node serves; a refusal reported again after the server expired it" case:serve
e2e_case ipvs_arp case_ipvs_arp "b3. kube-proxy in IPVS mode: the service IP on kube-ipvs0 of every node, still one ARP answer, the owner's; the standby drops the who-has" case:serve
e2e_case moves case_moves "c. $K8S_MOVES pod moves between A and B: each answered by the new pod; never two ARP owners" case:serve
e2e_case sigkill_owner case_sigkill_owner "d. SIGKILL of the owner's loader: ARP stops at the heartbeat timeout; the other node takes over" case:serve
e2e_case carrier_loss case_carrier_loss "d2. the owner's provisioning NIC loses carrier: its Lease released at once, the other node with a ready pod answers; the carrier's return takes nothing back" case:serve
e2e_case pod_gone case_pod_gone "d3. the owner's pod deleted before the API server says so: its veth's going ends the steering and releases the Lease at once; no Warning for it" case:serve
e2e_case api_outage case_api_outage "e. the API server away (and the owner's loader restarted): still served; caught up after a 410" case:serve
e2e_case partition case_partition "e2. the owner's node cut off from the API server while its pod moves: the new owner announces, the old one yields" case:serve
e2e_case bad_responses case_bad_responses "f. malformed JSON, unexpected types, truncated streams and bad writes: no crash, still following" case:serve
e2e_case stalled_watches case_stalled_watches "f2. watches stalled (connected, silent): restarted after the idle timeout, a move followed" case:serve
e2e_case rolling_update case_rolling_update "f3. rolling update: the old pod, terminating but serving, keeps the IP until the new one is ready" case:serve
e2e_case metal3_example case_metal3_example "f4. the Service of the BMO component (k8s/metal3/ironic-deployment, rendered) is accepted and served" case:serve
e2e_case loader_upgrade case_loader_upgrade "f5. the owner's loader upgraded with a slow start (past the heartbeat timeout): the grace keeps the IP answered" case:serve
e2e_case source_ranges case_source_ranges "f6. loadBalancerSourceRanges: only sources in the ranges reach the service IP's ports; broadcast DHCP still relayed" case:serve
e2e_case shared_ip case_shared_ip "g. two Services sharing the IP are served only when their pods are on one node" case:serve
e2e_case dual_stack case_dual_stack "g2. the Service made dual stack: each address served under its own Lease (RA, NDP, DHCPv6, HTTP over both), both follow a move, the ingress lists what is served; an IPv6-only Service; two addresses on one pod refused" case:serve
e2e_case pod_clients case_pod_clients "g3. pods call the service IP through kube-proxy's rules for the ingress IP (iptables, then nftables mode), on the owner's node and the other: answered by the serving pod" case:serve
e2e_case ipvs_pod_clients case_ipvs_pod_clients "g4. pods call the service IP through kube-proxy in IPVS mode (the IP on kube-ipvs0 of both nodes, a virtual server to the endpoint), on the owner's node and the other: answered by the serving pod, one ARP answer" case:serve
e2e_case no_kube_proxy case_no_kube_proxy "g5. without kube-proxy, its replacement's socket-level load balancing (a stand-in for Cilium's socket-LB) takes pods' calls to the service IP to the endpoint, from both nodes: answered by the serving pod, which sees each client pod's own address" case:serve
e2e_case shared_address case_shared_address "g6. a Service on the control plane's VIP (bpfnet.io/shared-address): the node holding the VIP serves it from the pod that also serves the service IP, the VIP's other ports stay the node's; the VIP moving to the node without the pod hands the ports to the pod's node (its node Lease's address; refused and reported there while the pod's node has none), and the pod following it is served; on each node's own address (node), the pod's node serves its own" case:serve
e2e_case pivot case_pivot "h. pivot between two clusters on one LAN, then a double claim: the second claimant probes, defers while the first answers, and answers once it stops" case:serve
e2e_case bridge_cni case_bridge_cni "i. a pod behind a bridge CNI (cni0) is found behind the bridge and served, into its veth or (bpfnet.io/pod-delivery: route) through the node's routing" case:pivot
e2e_case uninstall case_uninstall "k. uninstall: the loaders stopped as a deleted DaemonSet stops them, then --teardown with their flags (k8s/uninstall) leaves each node clean" case:serve
e2e_case rbac case_rbac "j. every API request the loaders sent is granted by the ClusterRole and the metal3 Role" case:pivot
E2E_AFTER_CASE=k8s_after_case

loader_argument "$@"
bpfnetctl_argument

sandbox_reexec "$@"

require_tools curl bpftool ethtool nsenter dnsmasq "$SYSTEM_PYTHON"

LOGS=$E2E_TMP/logs
K8S_OUTAGE_S=${K8S_OUTAGE_S:-60}
K8S_UPGRADE_PULL_S=${K8S_UPGRADE_PULL_S:-8}
HEARTBEAT_TIMEOUT_S=5 # the loader's default heartbeat timeout
LEASE_S=3             # --lease-duration given by k8s_loader_start

# The node serving now (the pod's node in the current EndpointSlice).
CURRENT="node-a"
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
    # Gone again: a loader started by a later case would otherwise warn of their refusal while starting.
    kapi c1 DELETE /api/v1/namespaces/other/services/elsewhere >/dev/null
    kapi c1 DELETE "$SERVICE_PATH/outside" >/dev/null
    kapi c1 DELETE "$SERVICE_PATH/foreign" >/dev/null
    loaders_alive
}

case_serve() {
    # From: both loaders running, the Service without endpoints. The pod becomes ready on node A.
    # node-b's loader was given its NIC by MAC (k8s_loader_start) and says which link that chose.
    grep -q "msg=\"provisioning NIC chosen by MAC\" iface=$E2E_NIC " "${K8S_LOADER_LOG[node-b]}" ||
        { E2E_REASON="node-b's loader did not choose $E2E_NIC by MAC: $(grep -m2 'NIC\|error' "${K8S_LOADER_LOG[node-b]}")"; return 1; }
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
    cluster_host "$SYSTEM_PYTHON" "$PROBE_PY" probe eth0 "$E2E_SERVICE_IP" --seconds "$(scaled_seconds 0.5)" --every 0.05 >"$out"
    local offer
    offer=$(awk '$2 == "dhcp" && $3 != "-" { print $3; exit }' "$out")
    ip_in_range "$offer" "${DHCP_FIRST[node-a]}" "${DHCP_LAST[node-a]}" ||
        { E2E_REASON="no DHCP offer from pod A's range (got '$offer')"; return 1; }
    log "node-a serves: lease, ingress, Serving Event, HTTP from ${POD_NAME[node-a]}, DHCP offer $offer"
    local served standby
    served=$(node_metric node-a 'bpfnet_k8s_services{state="served"}')
    standby=$(node_metric node-b 'bpfnet_k8s_services{state="standby"}')
    [ "$served" = 1 ] && [ "$standby" = 1 ] ||
        { E2E_REASON="metrics: node-a served='$served', node-b standby='$standby' (want 1 and 1)"; return 1; }
    # bpfnetctl backend set/clear are for standalone mode: this loader refuses them and nothing changes.
    local refusal rc
    refusal=$(nsenter --net="/run/netns/${NODE_NS[node-a]}" "$BPFNETCTL" -i "$E2E_NIC" --pin-root "$E2E_PIN_ROOT/node-a" \
        --control-socket /run/bpfnet/node-a.sock backend clear 2>&1)
    rc=$?
    [ "$rc" = 1 ] && [[ $refusal == *"runs in Kubernetes mode"*EndpointSlice* ]] ||
        { E2E_REASON="bpfnetctl backend clear on node-a: exit $rc: $refusal"; return 1; }
    serves node-a || { E2E_REASON="node-a stopped serving after the refused backend clear"; return 1; }
    log "backend clear refused: $refusal"
    # bpfnetctl status without --interface (the only datapath under node-b's pin root) says how node-b's
    # loader chose its NIC.
    local status
    status=$(nsenter --net="/run/netns/${NODE_NS[node-b]}" "$BPFNETCTL" --pin-root "$E2E_PIN_ROOT/node-b" \
        --control-socket /run/bpfnet/node-b.sock status 2>&1)
    [[ $status == *"loader        kubernetes mode, NIC chosen by MAC (the one link with one of 02:00:00:00:ff:99,"* ]] ||
        { E2E_REASON="bpfnetctl status on node-b does not say its NIC was chosen by MAC: $status"; return 1; }
    log "node-b: $(grep '^loader' <<<"$status")"
    loaders_alive
}

# Requests that wrote the Service's status, by both loaders.
status_writes() { grep -c "/services/$SERVICE_NAME/status" "$E2E_TMP/logs/requests-c1.log"; }
merge_patch() { KAPI_TYPE=application/merge-patch+json kapi "$@" >/dev/null; }
conditions_of() { json_field c1 "$SERVICE_PATH/$SERVICE_NAME" '[c["type"] for c in o.get("status", {}).get("conditions", [])]'; }

case_status() {
    # From: the pod ready on node A, A serving (case serve, its need in the case list).
    # From: CURRENT serves. Another controller adds a condition to the Service's status; then the Service
    # changes three times (labels). The owner writes only status.loadBalancer.ingress, compares it by meaning
    # (the server added ipMode: VIP), so none of the changes causes a status write, and the condition stays.
    local path=$SERVICE_PATH/$SERVICE_NAME
    merge_patch c1 PATCH "$path/status" '{"status": {"conditions": [{"type": "Example", "status": "True",
        "reason": "Test", "message": "set by another controller", "lastTransitionTime": "2026-12-01T00:00:00Z"}]}}' ||
        { E2E_REASON="cannot add a condition to the status"; return 1; }
    local before after i
    before=$(status_writes)
    for i in 1 2 3; do
        merge_patch c1 PATCH "$path" "{\"metadata\": {\"labels\": {\"touched\": \"t$i\"}}}" ||
            { E2E_REASON="cannot change the Service"; return 1; }
        sleep 0.5
    done
    sleep 1.5 # a reconcile tick (1 s) after the last change
    after=$(status_writes)
    [ "$after" = "$before" ] || { E2E_REASON="$((after - before)) status writes after 3 label changes, want 0"; return 1; }
    [ "$(conditions_of)" = "['Example']" ] || { E2E_REASON="the status' conditions are now $(conditions_of)"; return 1; }
    [ "$(ingress_of c1)" = "$E2E_SERVICE_IP" ] || { E2E_REASON="ingress is '$(ingress_of c1)'"; return 1; }
    log "3 Service changes: no status write; the other controller's condition kept"

    # A refusal stays visible: after the API server expired the Event (--event-ttl), the loaders report it
    # again within their refresh interval (--event-refresh 2 here, 1800 s by default).
    kapi c1 POST "$SERVICE_PATH" "$(service_json outside-status 198.19.0.9)" >/dev/null ||
        { E2E_REASON="cannot create the refused Service"; return 1; }
    refused_shown() { [[ $(events_of c1 Refused) == *198.19.0.9* ]]; }
    wait_for 5 refused_shown || { E2E_REASON="no Refused Event for 198.19.0.9"; return 1; }
    kapi c1 POST /_test/expire-events '{}' >/dev/null
    refused_shown && { E2E_REASON="the stand-in did not expire the Event"; return 1; }
    wait_for 5 refused_shown || { E2E_REASON="the Refused Event did not come back after it expired"; return 1; }
    kapi c1 DELETE "$SERVICE_PATH/outside-status" >/dev/null
    log "the Refused Event came back after the API server expired it"

    # No endpoint anywhere: the owner releases and takes the IP out of the status; the pod back: written again.
    set_slice c1 none || { E2E_REASON="cannot empty the EndpointSlice"; return 1; }
    wait_for 5 eval '[ -z "$(ingress_of c1)" ]' || { E2E_REASON="ingress still '$(ingress_of c1)' with no endpoint"; return 1; }
    [ "$(conditions_of)" = "['Example']" ] || { E2E_REASON="clearing the ingress took the conditions: $(conditions_of)"; return 1; }
    set_slice c1 "$CURRENT" || { E2E_REASON="cannot restore the EndpointSlice"; return 1; }
    wait_serves "$CURRENT" 5 || return 1
    wait_for 5 eval '[ "$(ingress_of c1)" = "$E2E_SERVICE_IP" ]' ||
        { E2E_REASON="ingress not written again: '$(ingress_of c1)'"; return 1; }
    log "no endpoint: ingress cleared (conditions kept); pod back on $CURRENT: ingress written again"
}

# move_to NODE: the EndpointSlice now names the pod on NODE (one update: ready there, gone from the other).
move_to() {
    set_slice c1 "$1" || return 1
    CURRENT=$1
}

# kube-ipvs0 as kube-proxy in IPVS mode makes it on NODE: a dummy device, left down, holding every
# LoadBalancer ingress IP as a /32 (here the service IP): the node's kernel then answers ARP for the IP.
kube_ipvs0() {
    case $1 in
    add) ip -n "${NODE_NS[$2]}" link add kube-ipvs0 type dummy &&
        ip -n "${NODE_NS[$2]}" addr add "$E2E_SERVICE_IP/32" dev kube-ipvs0 ;;
    del) ip -n "${NODE_NS[$2]}" link del kube-ipvs0 2>/dev/null ;;
    esac
}

# one_arp_answerer OWNER COUNT WHAT: the host's COUNT who-has for the service IP, each answered by OWNER's NIC alone
# (no other MAC, none unanswered); logs the count under WHAT.
one_arp_answerer() {
    local owner=$1 count=$2 probes=$E2E_TMP/arpprobe.$RANDOM answered other
    who_has_probes "$count" "$probes"
    answered=$(grep -c "answered ${NIC_MAC[$owner]}\$" "$probes")
    other=$(grep -v -c "answered ${NIC_MAC[$owner]}\$" "$probes")
    log "$3: $answered of $count who-has answered by $owner's NIC alone, $other otherwise"
    [ "$answered" = "$count" ] ||
        { E2E_REASON="$3: $other of $count who-has not answered by ${NIC_MAC[$owner]} alone: $(grep -m3 -v "answered ${NIC_MAC[$owner]}\$" "$probes" | tr '\n' ' ')"; return 1; }
}

case_ipvs_arp() {
    # From: node A serves (case serve). The host sends 200 who-has for the service IP while both nodes' kernels
    # have it on kube-ipvs0; every one must be answered by A's NIC alone.
    local owner=$CURRENT standby node dropped_before dropped_after rc=0
    standby=$(other "$owner")
    if ! ip -n "${NODE_NS[$owner]}" link add kube-ipvs0 type dummy 2>/dev/null; then
        E2E_REASON="this kernel has no dummy devices (kube-ipvs0 is one): the kernel matrix's guests run this case"
        return 77
    fi
    ip -n "${NODE_NS[$owner]}" link del kube-ipvs0
    dropped_before=$(E2E_PIN_DIR=$E2E_PIN_ROOT/$standby/${E2E_NIC//./:} counter arp_not_active) ||
        { E2E_REASON="cannot read $standby's counters"; return 1; }
    for node in node-a node-b; do
        kube_ipvs0 add "$node" || { kube_ipvs0 del node-a; kube_ipvs0 del node-b; E2E_REASON="cannot make kube-ipvs0 on $node"; return 1; }
    done
    one_arp_answerer "$owner" 200 "kube-ipvs0 on both nodes" || rc=1
    kube_ipvs0 del node-a
    kube_ipvs0 del node-b
    [ "$rc" = 0 ] || return 1
    dropped_after=$(E2E_PIN_DIR=$E2E_PIN_ROOT/$standby/${E2E_NIC//./:} counter arp_not_active)
    log "$standby dropped $((dropped_after - dropped_before)) who-has (arp_not_active)"
    [ $((dropped_after - dropped_before)) -ge 200 ] ||
        { E2E_REASON="$standby counted $((dropped_after - dropped_before)) arp_not_active, want at least 200"; return 1; }
}

case_moves() {
    # From: the pod ready on node A, A serving (case serve, its need in the case list).
    # From: node A serves. The pod moves K8S_MOVES times between the nodes, while the host probes HTTP and
    # DHCP every 10 ms and records every ARP frame about the service IP.
    local probe_log=$E2E_TMP/moves.probe moves_log=$E2E_TMP/moves.log arp_log=$E2E_TMP/moves.arp
    # Under emulation (the kernel matrix, E2E_TIME_SCALE) a move takes several times longer to be served:
    # the moves are spaced out by the same factor, so each still gets its window.
    local scale=${E2E_TIME_SCALE:-1}
    local gap
    gap=$(awk -v k="$scale" 'BEGIN { printf "%.1f", 1.9 * k }')
    # The probes outlast the last move by 10 s: under the sanitizers, beside two other suites, each move's
    # EndpointSlice write can take half a second more than its gap (CI: the 20th move came after the probes had
    # stopped, "never" answered).
    local seconds=$((K8S_MOVES * 2 * scale + 10))
    : >"$moves_log"
    # The probers stand for hosts on the LAN, which would not share the nodes' CPUs: they run at a lower
    # priority, so that on this 2-CPU machine they delay the API server and the loaders as little as possible.
    cluster_host nice -n 10 "$SYSTEM_PYTHON" "$E2E_DIR/arp_probe.py" --watch "$seconds" eth0 "$E2E_SERVICE_IP" >"$arp_log" &
    local watcher=$!
    E2E_PIDS+=("$watcher")
    cluster_host nice -n 10 "$SYSTEM_PYTHON" "$E2E_DIR/arp_probe.py" --every 0.01 --count $(((seconds - 1) * 100)) eth0 \
        "$E2E_SERVICE_IP" >"$E2E_TMP/moves.arpprobe" &
    local prober=$!
    E2E_PIDS+=("$prober")
    cluster_host nice -n 10 "$SYSTEM_PYTHON" "$PROBE_PY" probe eth0 "$E2E_SERVICE_IP" --seconds "$seconds" >"$probe_log" &
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
        sleep "$gap"
    done
    wait "$probe"
    wait "$prober"
    wait "$watcher"
    local analysis
    analysis=$("$SYSTEM_PYTHON" "$PROBE_PY" analyze "$probe_log" "$moves_log" --commits "$LOGS/commits-c1.log")
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
    [ "$probes" -gt $((K8S_MOVES * 100 / scale)) ] || { E2E_REASON="the ARP prober sent only $probes requests"; return 1; }
    [ "$double" = 0 ] || { E2E_REASON="$double who-has probes were answered by both nodes: $(grep -m3 'answered .*,' "$E2E_TMP/moves.arpprobe" | tr '\n' ' ')"; return 1; }
    # Neither datapath saw the other claim the IP while it answered for it.
    [ -z "$(events_of c1 Conflict)" ] || { E2E_REASON="Conflict Events during the moves: $(events_of c1 Conflict)"; return 1; }
    loaders_alive
}

# wait_serves NODE SECONDS: waits until NODE serves; sets TOOK (seconds).
TOOK=""
wait_serves() {
    local t0
    t0=$(date +%s.%N)
    if ! wait_for "$2" serves "$1"; then
        E2E_REASON="$1 does not serve after $2 s: who='$(who_serves)' arp='$(arp_owner)' lease='$(lease_holder c1)'"
        return 1
    fi
    TOOK=$(since "$t0")
}

case_sigkill_owner() {
    # From: the pod ready on node A, A serving (case serve, its need in the case list).
    # From: CURRENT serves. Its loader is killed; the datapath goes on until the heartbeat is stale, then
    # stops answering ARP. The pod then moves: the other node takes over once the dead owner's Lease expires.
    local dead=$CURRENT next
    next=$(other "$dead")
    local out=$E2E_TMP/sigkill.arp killed
    # The kill's time is taken just before the signal: taken after k8s_loader_stop (which also waits for the
    # process to go) it was later than the kill and made the heartbeat look younger than it was.
    killed=$("$SYSTEM_PYTHON" -c 'import time; print("%.6f" % time.monotonic())')
    k8s_loader_stop "$dead" KILL
    cluster_host "$SYSTEM_PYTHON" "$E2E_DIR/arp_probe.py" --every 0.1 --count $(((HEARTBEAT_TIMEOUT_S + 2) * 10)) eth0 \
        "$E2E_SERVICE_IP" >"$out"
    # Answered by the dead owner's datapath up to the heartbeat timeout (1.2 s of slack for the last
    # heartbeat's age: the 1 s interval and the thread's wake-up), silent from 0.5 s after it.
    local verdict
    verdict=$(awk -v k="$killed" -v t="$HEARTBEAT_TIMEOUT_S" -v mac="${NIC_MAC[$dead]}" '
        { age = $1 - k }
        age < t - 1.2 && $3 != mac { bad = bad " " sprintf("%.2f:%s", age, $2) }
        age > t + 0.5 && $2 != "silent" { bad = bad " " sprintf("%.2f:%s", age, $2) }
        END { print (bad == "" ? "ok" : "wrong at" bad) }' "$out")
    if [ "$verdict" != ok ]; then
        log "ARP probes after the SIGKILL (monotonic time, answer; killed at $killed): $(head -n 8 "$out" | tr '\n' ' ')"
        log "heartbeat of $dead before the kill: $(grep -c heartbeat "$LOGS/loader-$dead"*.log 2>/dev/null | tr '\n' ' ')"
        E2E_REASON="ARP after SIGKILL: $verdict"
        return 1
    fi
    log "after SIGKILL of the loader on $dead: ARP answered until the heartbeat timeout, then silent"
    move_to "$next" || { E2E_REASON="cannot write the EndpointSlice"; return 1; }
    wait_serves "$next" $((LEASE_S + 5)) || return 1
    log "the pod moved to $next: served after $TOOK s (the dead owner's Lease had expired)"
    # The killed loader comes back: its stale datapath must not answer, and it adopts without a claim.
    k8s_loader_start "$dead" c1 "$LOGS/loader-$dead-restarted.log" || return 1
    local answers
    answers=$(cluster_host "$SYSTEM_PYTHON" "$E2E_DIR/arp_probe.py" --every 0.05 --count 40 eth0 "$E2E_SERVICE_IP" |
        grep -c -e "${NIC_MAC[$dead]}")
    [ "$answers" = 0 ] || { E2E_REASON="the restarted loader's node answered ARP $answers times"; return 1; }
    [ "$(lease_holder c1)" = "$next" ] || { E2E_REASON="lease holder '$(lease_holder c1)' after the restart"; return 1; }
    serves "$next" || { E2E_REASON="$next stopped serving after $dead's loader restarted"; return 1; }
    loaders_alive
}

# The EndpointSlice with a ready pod on each node: both nodes are eligible, the Lease decides which serves.
set_slice_both() {
    local slice
    slice=$(slice_json node-a | "$SYSTEM_PYTHON" -c 'import json, sys
s = json.load(sys.stdin)
s["endpoints"].append({"addresses": [sys.argv[1]], "conditions": {"ready": True}, "nodeName": "node-b"})
print(json.dumps(s))' "${POD_IP[node-b]}")
    kapi c1 PUT "$SLICE_PATH/$SERVICE_NAME-abcde" "$slice" >/dev/null
}

node_readyz() { ip netns exec "${NODE_NS[$1]}" curl -s --max-time 2 http://127.0.0.1:9394/readyz; }

# owner_cut OWNER NEXT WHAT COMMAND...: with a ready pod on both nodes and OWNER serving, runs COMMAND (the
# fault) while the host probes ARP every 20 ms for 3 s; FIRST is how long after it NEXT first answered ("" if
# it never did), and the probes are in $E2E_TMP/WHAT.arp.
owner_cut() {
    local owner=$1 next=$2 out=$E2E_TMP/$3.arp cut
    shift 3
    FIRST=""
    set_slice_both || { E2E_REASON="cannot write the EndpointSlice with both pods"; return 1; }
    sleep 1 # both loaders see both pods; the owner keeps its Lease
    serves "$owner" || { E2E_REASON="$owner stopped serving when both pods became ready"; return 1; }
    cluster_host "$SYSTEM_PYTHON" "$E2E_DIR/arp_probe.py" --every 0.02 --count 150 eth0 "$E2E_SERVICE_IP" >"$out" &
    local prober=$!
    E2E_PIDS+=("$prober")
    sleep 0.3
    cut=$("$SYSTEM_PYTHON" -c 'import time; print("%.6f" % time.monotonic())')
    "$@"
    wait "$prober"
    FIRST=$(awk -v k="$cut" -v mac="${NIC_MAC[$next]}" '$1 > k && $3 == mac { printf "%.3f", $1 - k; exit }' "$out")
}

case_carrier_loss() {
    # From: CURRENT serves (case serve). With a ready pod on both nodes, the owner's NIC loses its carrier (its
    # switch port, here the LAN bridge's end of its veth, goes down): it stops claiming and releases its Lease,
    # so the other node claims the free Lease and answers without waiting for the Lease to expire (LEASE_S).
    local lost=$CURRENT next
    next=$(other "$lost")
    owner_cut "$lost" "$next" carrier ip -n "$CLUSTER_LAN" link set "lan-$lost" down || return 1
    if [ -z "$FIRST" ]; then
        ip -n "$CLUSTER_LAN" link set "lan-$lost" up
        E2E_REASON="$next never answered ARP in 3 s after $lost lost carrier: $(sort -u -k2,3 "$E2E_TMP/carrier.arp" | head -n 3 | tr '\n' ' ')"
        return 1
    fi
    log "carrier lost on $lost: the first ARP answer from $next came $FIRST s after the cut (Lease duration ${LEASE_S} s)"
    CURRENT=$next
    local checks=""
    wait_serves "$next" 5 || checks+=" $next does not serve: $E2E_REASON;"
    [ "$(lease_holder c1)" = "$next" ] || checks+=" lease holder '$(lease_holder c1)';"
    # Released, not expired: the next node's Serving Event names no takeover.
    events_of c1 Serving | tail -n 1 | grep -q "taken over" && checks+=" the next node took the Lease over (it expired: not released);"
    grep -q 'msg="the provisioning NIC has no carrier"' "${K8S_LOADER_LOG[$lost]}" || checks+=" $lost did not log the loss;"
    events_of c1 Released | grep -q "has no carrier" || checks+=" no Released Event naming the carrier;"
    [ "$(node_metric "$lost" bpfnet_nic_carrier)" = 0 ] || checks+=" bpfnet_nic_carrier on $lost is not 0;"
    node_readyz "$lost" | grep -q "no carrier" || checks+=" /readyz of $lost does not say it;"
    # The carrier returns: nothing moves back.
    ip -n "$CLUSTER_LAN" link set "lan-$lost" up
    wait_for 5 grep -q 'msg="the provisioning NIC has carrier again"' "${K8S_LOADER_LOG[$lost]}" ||
        checks+=" $lost did not log the carrier's return;"
    sleep $((LEASE_S + 1))
    serves "$next" || checks+=" $next stopped serving after $lost's carrier returned;"
    [ "$(lease_holder c1)" = "$next" ] || checks+=" lease holder '$(lease_holder c1)' after the return;"
    [ "$(node_metric "$lost" bpfnet_nic_carrier)" = 1 ] || checks+=" bpfnet_nic_carrier on $lost is not 1 again;"
    move_to "$next" || checks+=" cannot write the EndpointSlice back to one pod;"
    if [ -n "$checks" ]; then
        E2E_REASON="after the carrier loss:$checks"
        return 1
    fi
    loaders_alive
}

case_pod_gone() {
    # From: CURRENT serves (case serve). With a ready pod on both nodes, the owner's pod is deleted: its veth
    # goes while the EndpointSlice still has it ready (the API server has not heard yet). The owner's loader
    # stops steering to it at the link notification and releases the Lease, so the other node answers.
    local gone=$CURRENT next warnings_before checks=""
    next=$(other "$gone")
    warnings_before=$(events_of c1 BackendNotFound | grep -c "${POD_IP[$gone]}")
    owner_cut "$gone" "$next" pod-gone ip -n "${NODE_NS[$gone]}" link del "$E2E_VETH" || return 1
    [ -n "$FIRST" ] || checks+=" $next never answered ARP in 3 s after the pod on $gone went;"
    CURRENT=$next
    grep -q 'msg="backend veth stopped' "${K8S_LOADER_LOG[$gone]}" || checks+=" $gone did not log the pod's veth going;"
    wait_serves "$next" 5 || checks+=" $next does not serve: $E2E_REASON;"
    [ "$(lease_holder c1)" = "$next" ] || checks+=" lease holder '$(lease_holder c1)';"
    [ "$(events_of c1 BackendNotFound | grep -c "${POD_IP[$gone]}")" = "$warnings_before" ] ||
        checks+=" a BackendNotFound Warning for the pod being deleted;"
    events_of c1 Released | grep -q "veth went down or was deleted" ||
        checks+=" no Released Event naming the deleted veth;"
    # The API server hears of it; the pod comes back (a new one on the same node, as a routed CNI wires it).
    move_to "$next" || checks+=" cannot write the EndpointSlice back to one pod;"
    pod_link_create "$gone" || checks+=" cannot recreate the pod's veth on $gone;"
    wait_for 10 no_tentative "${POD_NS[$gone]}" || checks+=" the recreated pod's IPv6 address stays tentative;"
    if [ -n "$checks" ]; then
        E2E_REASON="after the pod went:$checks"
        return 1
    fi
    log "the pod on $gone deleted (its veth gone, the EndpointSlice still ready): the first ARP answer from $next came $FIRST s after"
    loaders_alive
}

case_api_outage() {
    # From: the pod ready on node A, A serving (case serve, its need in the case list).
    # From: CURRENT serves. The API server goes away (every loader request cut off) for K8S_OUTAGE_S seconds,
    # many Lease durations and heartbeat timeouts: the datapath keeps serving (HTTP, DHCP and ARP probed all
    # along: nothing lost, one ARP owner), also after the owner's loader restarts. Meanwhile the pod moves and
    # the history is compacted, so the other loader's re-watch gets 410 Gone. When it is back, both catch
    # up, with never two ARP owners.
    local before=$CURRENT next
    next=$(other "$before")
    local probe=$E2E_TMP/outage.probe arp=$E2E_TMP/outage-steady.arpprobe
    cluster_host nice -n 10 "$SYSTEM_PYTHON" "$PROBE_PY" probe eth0 "$E2E_SERVICE_IP" --seconds "$K8S_OUTAGE_S" \
        --every 0.05 >"$probe" &
    local prober=$!
    E2E_PIDS+=("$prober")
    cluster_host nice -n 10 "$SYSTEM_PYTHON" "$E2E_DIR/arp_probe.py" --every 0.05 --count $((K8S_OUTAGE_S * 20)) eth0 \
        "$E2E_SERVICE_IP" >"$arp" &
    local arp_prober=$!
    E2E_PIDS+=("$arp_prober")
    wait_for 5 grep -q started "$probe"
    kapi c1 POST /_test/offline '{"on": true}' >/dev/null || { E2E_REASON="cannot take the stand-in offline"; return 1; }
    wait "$prober"
    wait "$arp_prober"
    # Every HTTP try answered by the owner's pod, every DISCOVER by an offer from its range (within the
    # prober's 0.1 s, or later but within 1 s: "late", the DISCOVER was relayed and answered while the machine
    # was busy; no offer at all is a loss), every who-has by the owner's MAC alone.
    local counts http_ok http_lost dhcp_ok dhcp_late dhcp_lost arp_other
    counts=$(awk -v pod="${POD_NAME[$before]}" -v first="${DHCP_FIRST[$before]}" -v last="${DHCP_LAST[$before]}" '
        BEGIN { split(first, f, "."); split(last, l, ".") }
        $2 == "http" { if ($3 == pod) ho++; else hl++ }
        $2 == "dhcp" {
            ip = $3
            if (ip == "-" && $4 ~ /^late=/) { ip = substr($4, 6); late++ }
            split(ip, o, ".")
            if (ip != "-" && o[4] + 0 >= f[4] + 0 && o[4] + 0 <= l[4] + 0) dok++; else dl++
        }
        END { print ho + 0, hl + 0, dok + 0, late + 0, dl + 0 }' "$probe")
    read -r http_ok http_lost dhcp_ok dhcp_late dhcp_lost <<<"$counts"
    arp_other=$(grep -v -c "answered ${NIC_MAC[$before]}\$" "$arp")
    log "API server away $K8S_OUTAGE_S s: HTTP $http_ok answered by ${POD_NAME[$before]}, $http_lost not; DHCP $dhcp_ok offers from its range ($dhcp_late of them late), $dhcp_lost not; ARP $(grep -c . "$arp") who-has, $arp_other not answered by ${NIC_MAC[$before]} alone"
    [ "$http_lost" = 0 ] && [ "$dhcp_lost" = 0 ] && [ "$arp_other" = 0 ] && [ "$http_ok" -gt 0 ] && [ "$dhcp_ok" -gt 0 ] ||
        { E2E_REASON="lost while the API server was away: $http_lost HTTP, $dhcp_lost DHCP, $arp_other ARP ($(grep -m3 -v "answered ${NIC_MAC[$before]}\$" "$arp" | tr '\n' ' '))"; return 1; }
    local failures=0 tries=0 t0
    # A rolling update of the owner's loader while the API server is still away: the new loader cannot list,
    # and the datapath goes on serving past the heartbeat timeout.
    k8s_loader_stop "$before"
    K8S_NO_WAIT=1 k8s_loader_start "$before" c1 "$LOGS/loader-$before-during-outage.log"
    t0=$(date +%s)
    while [ $(($(date +%s) - t0)) -lt $((HEARTBEAT_TIMEOUT_S + 2)) ]; do
        tries=$((tries + 1))
        [ "$(who_serves)" = "${POD_NAME[$before]}" ] || failures=$((failures + 1))
        sleep 0.2
    done
    [ "$failures" = 0 ] || { E2E_REASON="$failures requests failed after the loader restarted during the outage"; return 1; }
    grep -q 'msg=serving ' "${K8S_LOADER_LOG[$before]}" && { E2E_REASON="the restarted loader reconciled without an API server"; return 1; }
    log "the owner's loader restarted during the outage: still served ($tries requests in all)"
    set_slice c1 "$next" || { E2E_REASON="cannot move the pod"; return 1; }
    CURRENT=$next
    kapi c1 POST /_test/compact '{}' >/dev/null
    local arp=$E2E_TMP/outage.arpprobe
    cluster_host "$SYSTEM_PYTHON" "$E2E_DIR/arp_probe.py" --every 0.01 --count 4000 eth0 "$E2E_SERVICE_IP" >"$arp" &
    local prober=$!
    E2E_PIDS+=("$prober")
    kapi c1 POST /_test/offline '{"on": false}' >/dev/null
    # The watches reconnect with backoff (at most 30 s between tries).
    wait_serves "$next" 40 || return 1
    wait_for 10 k8s_loader_serving "$before" || { E2E_REASON="the restarted loader never reconciled"; return 1; }
    log "API server back (history compacted, the pod moved meanwhile): $next serves after $TOOK s"
    stop_pid "$prober"
    local double
    double=$(grep -c 'answered .*,' "$arp")
    [ "$double" = 0 ] || { E2E_REASON="$double who-has answered by both nodes while catching up"; return 1; }
    # The loader that ran through the outage re-watched from its old resourceVersion: 410, re-list.
    local expired
    expired=$(node_metric "$next" 'bpfnet_k8s_watch_expired_total{resource="endpointslices"}')
    [ "${expired:-0}" -ge 1 ] && grep -q '410 Gone\|resourceVersion expired' "${K8S_LOADER_LOG[$next]}" ||
        { E2E_REASON="the loader on $next did not see a 410 on re-watch (expired metric '$expired')"; return 1; }
    [ "$(lease_holder c1)" = "$next" ] || { E2E_REASON="lease holder '$(lease_holder c1)'"; return 1; }
    loaders_alive
}

# partition_analysis OLD_MAC NEW_MAC ARP_PROBE_LOG: "two_answerers_s silent_s both first_new": from the first
# who-has the new owner answered to the last one the old owner answered after it (0 when the old one had
# stopped before), the silence between the old owner's last answer before that and it, how many probes both
# answered, and the monotonic time of the new owner's first answer (10 ms resolution: a probe every 10 ms).
partition_analysis() {
    awk -v old="$1" -v new="$2" '
        $2 == "answered" {
            o = index($3, old) > 0; n = index($3, new) > 0
            if (n && first_new == "") first_new = $1
            if (o && first_new == "") last_old_before = $1
            if (o) last_old = $1
            if (o && n) both++
        }
        END {
            if (first_new == "") { print "-1 -1 0 -1"; exit }
            two = last_old >= first_new ? last_old - first_new + 0.01 : 0
            silent = last_old_before == "" ? 0 : first_new - last_old_before - 0.01
            printf "%.3f %.3f %d %s\n", two, silent < 0 ? 0 : silent, both, first_new
        }' "$3"
}

case_partition() {
    # From: the pod ready on node A, A serving (case serve, its need in the case list).
    # From: CURRENT serves. Its node alone is cut off from the API server (its management link down; the
    # provisioning LAN is fine), and the pod moves to the other node. The other node takes the Lease over once
    # it has watched it unrenewed for its duration, announces the IP and answers a GARP interval later; the
    # cut-off node, whose claim is unconfirmed by then, sees the announcement and stops answering. Measured
    # from who-has probes every 10 ms: how long both nodes answered. When the link is back, the cut-off node
    # finds the Lease taken and stays standby; its Yielded Event, recorded while cut off, reaches the API.
    local old=$CURRENT new
    new=$(other "$old")
    local arp=$E2E_TMP/partition.arpprobe seconds=$((LEASE_S + 9))
    cluster_host nice -n 10 "$SYSTEM_PYTHON" "$E2E_DIR/arp_probe.py" --every 0.01 --count $((seconds * 100)) eth0 \
        "$E2E_SERVICE_IP" >"$arp" &
    local prober=$!
    E2E_PIDS+=("$prober")
    sleep 1
    ip -n "${NODE_NS[$old]}" link set mgmt0 down || { E2E_REASON="cannot cut $old off"; return 1; }
    local verdict=ok
    if ! move_to "$new"; then
        verdict="cannot write the EndpointSlice"
    elif ! wait_serves "$new" $((LEASE_S + 6)); then
        verdict=$E2E_REASON
    fi
    wait "$prober"
    local analysis two silent both old_after
    analysis=$(partition_analysis "${NIC_MAC[$old]}" "${NIC_MAC[$new]}" "$arp")
    read -r two silent both _ <<<"$analysis"
    # The last two seconds of probes (well after the takeover): the cut-off node answers none.
    old_after=$(tail -n 200 "$arp" | grep -c "${NIC_MAC[$old]}")
    local yielded_log
    yielded_log=$(grep -c 'yielded: another MAC claims the service IP' "${K8S_LOADER_LOG[$old]}")
    # Every ARP frame about the IP while the old node gets back in touch: it must not announce the IP again
    # (it finds the Lease taken and stays standby).
    local back=$E2E_TMP/partition-back.arp
    cluster_host "$SYSTEM_PYTHON" "$E2E_DIR/arp_probe.py" --watch 5 eth0 "$E2E_SERVICE_IP" >"$back" &
    local watcher=$!
    E2E_PIDS+=("$watcher")
    wait_for 3 grep -q listening "$back"
    ip -n "${NODE_NS[$old]}" link set mgmt0 up
    [ "$verdict" = ok ] || { E2E_REASON=$verdict; return 1; }
    CURRENT=$new
    log "$old cut off from the API server, the pod moved to $new: served by $new after $TOOK s; both answered for $two s ($both probes answered twice), silence before the takeover $silent s"
    PARTITION_JSON="{\"takeover_s\": $TOOK, \"two_answerers_s\": $two, \"double_answered_probes\": $both, \"silent_s\": $silent}"
    [ "$old_after" = 0 ] || { E2E_REASON="the cut-off node $old still answered $old_after of the last 200 who-has"; return 1; }
    [ "$yielded_log" -ge 1 ] || { E2E_REASON="the loader on $old logged no yield: $(grep -m2 conflict "${K8S_LOADER_LOG[$old]}" | tr '\n' ' ')"; return 1; }
    [ "$(lease_holder c1)" = "$new" ] || { E2E_REASON="lease holder '$(lease_holder c1)'"; return 1; }
    # Back in touch: the Yielded Event arrives (queued while cut off), and the old node stays silent.
    if ! wait_for 40 eval '[[ $(events_of c1 Yielded) == *"$old stopped answering"* ]]'; then
        E2E_REASON="no Yielded Event from $old after it reached the API again: '$(events_of c1 Yielded)'"
        return 1
    fi
    local answers
    answers=$(cluster_host "$SYSTEM_PYTHON" "$E2E_DIR/arp_probe.py" --every 0.02 --count 50 eth0 "$E2E_SERVICE_IP" |
        grep -c -e "${NIC_MAC[$old]}")
    [ "$answers" = 0 ] || { E2E_REASON="$old answered $answers who-has after reaching the API again"; return 1; }
    serves "$new" || { E2E_REASON="$new stopped serving after $old came back"; return 1; }
    wait "$watcher"
    local announced
    announced=$(grep -c "announce sha=${NIC_MAC[$old]}" "$back")
    [ "$announced" = 0 ] || { E2E_REASON="$old announced the IP $announced times after reaching the API again"; return 1; }
    log "link back: $(events_of c1 Yielded | head -n1)"
    loaders_alive
}

case_bad_responses() {
    # From: the pod ready on node A, A serving (case serve, its need in the case list).
    # From: CURRENT serves. Objects with fields of the wrong type, malformed watch lines, events of
    # unexpected types, a truncated stream, malformed list and write answers: nothing crashes, the datapath
    # keeps serving, and a later move is still followed.
    local weird='{"apiVersion": "v1", "kind": "Service",
                  "metadata": {"name": "weird", "namespace": "'$SERVICE_NS'", "annotations": {"bpfnet.io/ip": "198.18.0.5"}},
                  "spec": {"type": "LoadBalancer", "loadBalancerClass": "bpfnet.io/provisioning", "ports": "eighty"}}'
    local weird_slice='{"apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice",
                        "metadata": {"name": "weird", "namespace": "'$SERVICE_NS'", "labels": {"kubernetes.io/service-name": "'$SERVICE_NAME'"}},
                        "addressType": "IPv4", "endpoints": "everywhere"}'
    kapi c1 POST "$SERVICE_PATH" "$weird" >/dev/null || { E2E_REASON="cannot create the weird Service"; return 1; }
    kapi c1 POST "$SLICE_PATH" "$weird_slice" >/dev/null || { E2E_REASON="cannot create the weird slice"; return 1; }
    if ! wait_for 5 eval '[[ $(events_of c1 Refused) == *ports* ]]'; then
        E2E_REASON="no Refused Event naming the ports of the weird Service: '$(events_of c1 Refused)'"
        return 1
    fi
    log "wrong types: $(events_of c1 Refused | grep ports)"
    kapi c1 POST /_test/garbage '{"line": "{this is not json"}' >/dev/null
    kapi c1 POST /_test/garbage '{"line": "{\"type\": \"ADDED\", \"object\": [1, 2]}"}' >/dev/null
    kapi c1 POST /_test/garbage '{"line": "{\"type\": 7, \"object\": {\"metadata\": {\"name\": 5}}}"}' >/dev/null
    kapi c1 POST /_test/garbage '{"line": "[\"MODIFIED\"]"}' >/dev/null
    kapi c1 POST /_test/garbage-writes '{"count": 3}' >/dev/null
    sleep 1.5 # the owner's next renewal (every second with a 3 s Lease) meets a malformed answer
    # A 409 on renewal: the owner re-reads the Lease, finds itself the holder and renews again.
    kapi c1 POST /_test/conflict-writes '{"count": 1}' >/dev/null
    sleep 1.5
    [ "$(lease_holder c1)" = "$CURRENT" ] || { E2E_REASON="after a 409 on renewal the Lease holder is '$(lease_holder c1)'"; return 1; }
    kapi c1 POST /_test/garbage-list '{"count": 4}' >/dev/null
    kapi c1 POST /_test/truncate >/dev/null
    sleep 2
    kapi c1 POST /_test/garbage-list '{"count": 0}' >/dev/null
    loaders_alive || return 1
    serves "$CURRENT" || { E2E_REASON="$CURRENT stopped serving: who='$(who_serves)' arp='$(arp_owner)'"; return 1; }
    local node
    for node in "${NODES[@]}"; do
        log "$node: $(grep -c 'bad event\|malformed\|truncated\|unexpected answer' "${K8S_LOADER_LOG[$node]}") log lines about bad input"
    done
    kapi c1 DELETE "$SERVICE_PATH/weird" >/dev/null
    kapi c1 DELETE "$SLICE_PATH/weird" >/dev/null
    local next
    next=$(other "$CURRENT")
    move_to "$next" || { E2E_REASON="cannot write the EndpointSlice"; return 1; }
    wait_serves "$next" 5 || return 1
    log "after the bad input, a move to $next is served after $TOOK s"
    loaders_alive
}

case_stalled_watches() {
    # From: the pod ready on node A, A serving (case serve, its need in the case list).
    # From: CURRENT serves. Every open watch goes silent but stays connected (a stuck proxy), then the pod
    # moves. The loaders take a watch silent for --watch-idle-timeout (3 s here; bookmarks come every 1 s) as
    # stalled, watch again from where they were, and follow the move; without that, only the watches'
    # timeoutSeconds (300 s) would end the wait, with the old owner renewing on stale endpoints meanwhile.
    local next stalls_before stalls_after
    next=$(other "$CURRENT")
    stalls_before=$(node_metric "$CURRENT" 'bpfnet_k8s_watch_stalls_total{resource="endpointslices"}')
    kapi c1 POST /_test/stall-watches '{}' >/dev/null || { E2E_REASON="cannot stall the watches"; return 1; }
    move_to "$next" || { E2E_REASON="cannot write the EndpointSlice"; return 1; }
    wait_serves "$next" 10 || return 1
    stalls_after=$(node_metric "$(other "$next")" 'bpfnet_k8s_watch_stalls_total{resource="endpointslices"}')
    [ "${stalls_after:-0}" -gt "${stalls_before:-0}" ] 2>/dev/null ||
        { E2E_REASON="no stall counted (bpfnet_k8s_watch_stalls_total $stalls_before -> $stalls_after)"; return 1; }
    log "watches stalled, the pod moved to $next: served after $TOOK s (stalls $stalls_before -> $stalls_after)"
    loaders_alive
}

# longest_silence ARP_PROBE_LOG: the longest time, in seconds, between two answered who-has.
longest_silence() {
    awk '$2 == "answered" { if (last != "" && $1 - last > gap) gap = $1 - last; last = $1 }
         END { printf "%.3f\n", gap + 0 }' "$1"
}

case_loader_upgrade() {
    # From: the pod ready on node A, A serving (case serve, its need in the case list).
    # From: CURRENT serves. Its loader is stopped with SIGTERM, as a rolling update of the DaemonSet does, and
    # the next one starts only K8S_UPGRADE_PULL_S seconds later, past the heartbeat timeout (its image being
    # pulled). The stopping loader leaves the datapath a grace (--upgrade-grace, 60 s): the service IP stays
    # answered without a loader, and the next one takes over. A who-has every 10 ms throughout; the longest
    # silence is measured. With --upgrade-grace 0 (K8S_LOADER_EXTRA, the benchmark's baseline) the IP must
    # instead go quiet at the heartbeat timeout, as before the grace existed.
    local node=$CURRENT arp=$E2E_TMP/upgrade.arpprobe seconds=$((K8S_UPGRADE_PULL_S + 6))
    cluster_host nice -n 10 "$SYSTEM_PYTHON" "$E2E_DIR/arp_probe.py" --every 0.01 --count $((seconds * 100)) eth0 \
        "$E2E_SERVICE_IP" >"$arp" &
    local prober=$!
    E2E_PIDS+=("$prober")
    sleep 1
    local old_log=${K8S_LOADER_LOG[$node]}
    k8s_loader_stop "$node"
    sleep "$K8S_UPGRADE_PULL_S"
    k8s_loader_start "$node" c1 "$LOGS/loader-$node-upgraded-$RANDOM.log" || return 1
    wait "$prober"
    local grace silence other
    grace=$(sed -n 's/.*msg="stopping; datapath left running".* grace_s=\([0-9]*\).*/\1/p' "$old_log" | tail -n1)
    silence=$(longest_silence "$arp")
    other=$(grep -c -e "${NIC_MAC[$(other "$node")]}" "$arp")
    UPGRADE_JSON="{\"grace_s\": ${grace:-null}, \"pull_s\": $K8S_UPGRADE_PULL_S, \"longest_silence_s\": $silence}"
    log "loader on $node stopped, the next one started $K8S_UPGRADE_PULL_S s later (grace ${grace:-?} s): longest ARP silence $silence s"
    [ -n "$grace" ] || { E2E_REASON="the stopping loader did not log its grace"; return 1; }
    [ "$other" = 0 ] || { E2E_REASON="the other node answered $other who-has"; return 1; }
    if [ "$grace" -gt "$K8S_UPGRADE_PULL_S" ]; then
        # Answered all along: no gap longer than a few lost probes.
        awk -v s="$silence" 'BEGIN { exit !(s < 0.5) }' ||
            { E2E_REASON="the service IP went quiet for $silence s across the upgrade"; return 1; }
    else
        awk -v s="$silence" -v t="$HEARTBEAT_TIMEOUT_S" -v p="$K8S_UPGRADE_PULL_S" 'BEGIN { exit !(s > p - t - 1) }' ||
            { E2E_REASON="without a grace the service IP was quiet only $silence s"; return 1; }
    fi
    serves "$node" || { E2E_REASON="$node does not serve after the upgrade"; return 1; }
    loaders_alive
}

case_source_ranges() {
    # From: the pod ready on node A, A serving (case serve, its need in the case list).
    # From: CURRENT serves. The Service gets loadBalancerSourceRanges without the host (198.18.0.10): its
    # HTTP tries are dropped by the owner's datapath (drop_source_range), while PXE's broadcast DHCP, from
    # 0.0.0.0, is still relayed. With the host's range added it is served again; with the annotation form
    # the same; without ranges, every source again.
    local path=$SERVICE_PATH/$SERVICE_NAME before after
    before=$(node_metric "$CURRENT" 'bpfnet_datapath_drops_total{reason="source_range"}')
    merge_patch c1 PATCH "$path" '{"spec": {"loadBalancerSourceRanges": ["198.18.0.128/25"]}}' ||
        { E2E_REASON="cannot set the source ranges"; return 1; }
    refused() { [ -z "$(who_serves)" ]; }
    wait_for 5 refused || { E2E_REASON="the host outside the ranges is still served: '$(who_serves)'"; return 1; }
    after=$(node_metric "$CURRENT" 'bpfnet_datapath_drops_total{reason="source_range"}')
    [ "${after:-0}" -gt "${before:-0}" ] 2>/dev/null ||
        { E2E_REASON="drop_source_range did not count ($before -> $after)"; return 1; }
    [ "$(arp_owner)" = "${NIC_MAC[$CURRENT]}" ] || { E2E_REASON="ARP is no longer answered: $(arp_owner)"; return 1; }
    local out=$E2E_TMP/ranges.probe offer
    cluster_host "$SYSTEM_PYTHON" "$PROBE_PY" probe eth0 "$E2E_SERVICE_IP" --seconds "$(scaled_seconds 0.5)" --every 0.05 >"$out"
    offer=$(awk '$2 == "dhcp" && $3 != "-" { print $3; exit }' "$out")
    ip_in_range "$offer" "${DHCP_FIRST[$CURRENT]}" "${DHCP_LAST[$CURRENT]}" ||
        { E2E_REASON="broadcast DHCP got no offer under source ranges (got '$offer')"; return 1; }
    log "ranges without the host: HTTP dropped (drop_source_range ${before:-0} -> $after), ARP answered, broadcast DHCP offered $offer"
    merge_patch c1 PATCH "$path" '{"spec": {"loadBalancerSourceRanges": ["198.18.0.128/25", "198.18.0.0/28"]}}' ||
        { E2E_REASON="cannot widen the source ranges"; return 1; }
    wait_for 5 eval '[ "$(who_serves)" = "${POD_NAME[$CURRENT]}" ]' ||
        { E2E_REASON="the host inside the ranges is not served: '$(who_serves)'"; return 1; }
    merge_patch c1 PATCH "$path" '{"spec": {"loadBalancerSourceRanges": null}, "metadata": {"annotations": {"service.beta.kubernetes.io/load-balancer-source-ranges": "198.18.0.200/29"}}}' ||
        { E2E_REASON="cannot set the annotation"; return 1; }
    wait_for 5 refused || { E2E_REASON="the annotation's ranges were not applied: '$(who_serves)'"; return 1; }
    merge_patch c1 PATCH "$path" '{"metadata": {"annotations": {"service.beta.kubernetes.io/load-balancer-source-ranges": null}}}' ||
        { E2E_REASON="cannot remove the annotation"; return 1; }
    wait_for 5 eval '[ "$(who_serves)" = "${POD_NAME[$CURRENT]}" ]' ||
        { E2E_REASON="without ranges the host is not served: '$(who_serves)'"; return 1; }
    log "host's range added: served; annotation form: applied; no ranges: every source served"
    loaders_alive
}

# The EndpointSlice of a rolling update: the old pod on OLD terminating but still serving, the new one on NEW
# READY (true or false).
rolling_slice_json() {
    local old=$1 new=$2 ready=$3
    cat <<EOF
{"apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice",
 "metadata": {"name": "$SERVICE_NAME-abcde", "namespace": "$SERVICE_NS",
              "labels": {"kubernetes.io/service-name": "$SERVICE_NAME"}},
 "addressType": "IPv4",
 "endpoints": [{"addresses": ["${POD_IP[$old]}"], "nodeName": "$old",
                "conditions": {"ready": false, "serving": true, "terminating": true}},
               {"addresses": ["${POD_IP[$new]}"], "nodeName": "$new", "conditions": {"ready": $ready}}],
 "ports": [{"name": "http", "protocol": "TCP", "port": 8080}, {"name": "dhcp", "protocol": "UDP", "port": 67}]}
EOF
}

case_rolling_update() {
    # From: the pod ready on node A, A serving (case serve, its need in the case list).
    # From: CURRENT serves. A rolling update: the old pod terminates (ready false, still serving) while the
    # new one on the other node starts (not ready). The old pod keeps the traffic, as the EndpointSlice API
    # means; only when the new pod is ready does the IP move.
    local old=$CURRENT new
    new=$(other "$old")
    kapi c1 PUT "$SLICE_PATH/$SERVICE_NAME-abcde" "$(rolling_slice_json "$old" "$new" false)" >/dev/null ||
        { E2E_REASON="cannot write the rolling update's slice"; return 1; }
    sleep 2 # several reconcile passes
    serves "$old" || { E2E_REASON="the terminating pod lost the traffic before a new one was ready: who='$(who_serves)' arp='$(arp_owner)'"; return 1; }
    kapi c1 PUT "$SLICE_PATH/$SERVICE_NAME-abcde" "$(rolling_slice_json "$old" "$new" true)" >/dev/null ||
        { E2E_REASON="cannot write the slice"; return 1; }
    CURRENT=$new
    wait_serves "$new" 5 || return 1
    log "old pod terminating on $old kept the traffic; the new one on $new served $TOOK s after it was ready"
    set_slice c1 "$CURRENT" || { E2E_REASON="cannot write the slice"; return 1; }
    loaders_alive
}

case_metal3_example() {
    # The Service of k8s/metal3/ironic-deployment, the component docs/metal3.md gives for baremetal-operator's
    # ironic-deployment, as it renders over the stand-in of that deployment (tests/k8s/bmo/with-bpfnet), with
    # an IP of the test LAN and in the test's namespace: accepted, and served from the node of its ready endpoint,
    # the pod that does not back the Ironic Service (a pod answers for one address per family, case g2).
    # From: the pod ready on node A, A serving (case serve, its need in the case list): the example goes to the
    # other node, and the Ironic Service's Lease must outlive the example's.
    local ip=198.18.0.9 name=ironic-provisioning body node
    node=$(other "$CURRENT")
    body=$(kubectl kustomize "$E2E_REPO/tests/k8s/bmo/with-bpfnet" | "$SYSTEM_PYTHON" -c 'import json, sys, yaml
[d] = [o for o in yaml.safe_load_all(sys.stdin) if o["kind"] == "Service"]
d["metadata"]["annotations"]["bpfnet.io/ip"] = sys.argv[1]
d["metadata"]["namespace"] = sys.argv[2]
print(json.dumps(d))' "$ip" "$SERVICE_NS") ||
        { E2E_REASON="cannot render the component's Service"; return 1; }
    kapi c1 POST "$SLICE_PATH" "$(slice_json "$node" true "$name")" >/dev/null || { E2E_REASON="cannot create its slice"; return 1; }
    kapi c1 POST "$SERVICE_PATH" "$body" >/dev/null || { E2E_REASON="cannot create the example Service"; return 1; }
    example_served() { [ "$(lease_holder c1 "$ip")" = "$node" ] && [ "$(ingress_of c1 "$name")" = "$ip" ]; }
    if ! wait_for 5 example_served; then
        E2E_REASON="the example is not served: lease '$(lease_holder c1 "$ip")', ingress '$(ingress_of c1 "$name")', refusals: $(events_of c1 Refused | grep -F "$name") $(events_of c1 BackendShared)"
        return 1
    fi
    log "the Metal3 example Service is accepted and served by $node on $ip"
    kapi c1 DELETE "$SERVICE_PATH/$name" >/dev/null
    kapi c1 DELETE "$SLICE_PATH/$name-abcde" >/dev/null
    # No Service uses the IP any more: its Lease is released, then deleted as an orphan.
    example_lease_gone() { ! kapi c1 GET "$(lease_path "$ip")" >/dev/null; }
    wait_for 5 example_lease_gone || { E2E_REASON="the Lease of $ip outlived its Service: $(kapi c1 GET "$(lease_path "$ip")")"; return 1; }
    [ -n "$(lease_holder c1)" ] || { E2E_REASON="the Lease of $E2E_SERVICE_IP went too"; return 1; }
    log "the example Service deleted: the Lease of $ip released and deleted"
    loaders_alive
}

# The cluster's pod network between the two nodes, as any CNI provides it: a link between the nodes with routes
# to each other's pod subnets, and IP forwarding on (as on every Kubernetes node). Plus a client pod on each node
# (BMO's stand-in), on a routed veth of its own. kube_proxy_world_down removes all of it.
declare -A CLIENT_NS=([node-a]=k8s-bmo-a [node-b]=k8s-bmo-b)
declare -A CLIENT_IP=([node-a]=198.18.110.2 [node-b]=198.18.111.2)
declare -A CLUSTER_LINK_IP=([node-a]=198.19.254.1 [node-b]=198.19.254.2)
kube_proxy_world_up() {
    local node ns peer
    ip -n "${NODE_NS[node-a]}" link add clu0 type veth peer name clu0 netns "${NODE_NS[node-b]}" || return 1
    for node in "${NODES[@]}"; do
        ns=${NODE_NS[$node]}
        peer=$(other "$node")
        ip netns exec "$ns" sysctl -qw net.ipv4.ip_forward=1
        ip -n "$ns" addr add "${CLUSTER_LINK_IP[$node]}/30" dev clu0
        ip -n "$ns" link set clu0 up
        ip -n "$ns" route add "${POD_IP[$peer]%.*}.0/24" via "${CLUSTER_LINK_IP[$peer]}"
        ip -n "$ns" route add "${CLIENT_IP[$peer]%.*}.0/24" via "${CLUSTER_LINK_IP[$peer]}"
        ip netns add "${CLIENT_NS[$node]}" && E2E_NAMESPACES+=("${CLIENT_NS[$node]}")
        ip -n "${CLIENT_NS[$node]}" link set lo up
        ip -n "$ns" link add vethbmo type veth peer name eth0 netns "${CLIENT_NS[$node]}" || return 1
        ip -n "$ns" addr add "${CLIENT_IP[$node]%.*}.1/24" dev vethbmo
        ip -n "$ns" link set vethbmo up
        ip -n "${CLIENT_NS[$node]}" addr add "${CLIENT_IP[$node]}/24" dev eth0
        ip -n "${CLIENT_NS[$node]}" link set eth0 up
        ip -n "${CLIENT_NS[$node]}" route add default via "${CLIENT_IP[$node]%.*}.1" || return 1
    done
}

kube_proxy_world_down() {
    local node
    for node in "${NODES[@]}"; do
        kube_proxy_rules_remove "$node"
        ip -n "${NODE_NS[$node]}" link del vethbmo 2>/dev/null
        ip netns del "${CLIENT_NS[$node]}" 2>/dev/null
        ip netns exec "${NODE_NS[$node]}" sysctl -qw net.ipv4.ip_forward=0
    done
    ip -n "${NODE_NS[node-a]}" link del clu0 2>/dev/null
    return 0
}

# kube_proxy_rules NODE MODE ENDPOINT: kube-proxy's NAT rules for the Service's LoadBalancer ingress IP (port 80 ->
# ENDPOINT:8080, externalTrafficPolicy Cluster) on NODE, written as kube-proxy's iptables and nftables proxiers
# write them (pkg/proxy/iptables, pkg/proxy/nftables): the ingress IP's rule in KUBE-SERVICES (the service-ips
# map), its external chain marking for masquerade, the service chain, the endpoint's DNAT, and the masquerade of
# marked packets in POSTROUTING.
# The NAT rules kube-proxy's iptables and IPVS proxiers both write, for iptables-restore: the jumps from the
# built-in chains, the mark for masquerade, and the masquerade of marked packets in POSTROUTING.
kube_proxy_masquerade_rules() {
    cat <<'EOF'
:KUBE-SERVICES - [0:0]
:KUBE-POSTROUTING - [0:0]
:KUBE-MARK-MASQ - [0:0]
-A PREROUTING -m comment --comment "kubernetes service portals" -j KUBE-SERVICES
-A OUTPUT -m comment --comment "kubernetes service portals" -j KUBE-SERVICES
-A POSTROUTING -m comment --comment "kubernetes postrouting rules" -j KUBE-POSTROUTING
-A KUBE-MARK-MASQ -j MARK --or-mark 0x4000
-A KUBE-POSTROUTING -m mark ! --mark 0x4000/0x4000 -j RETURN
-A KUBE-POSTROUTING -j MARK --xor-mark 0x4000
-A KUBE-POSTROUTING -m comment --comment "kubernetes service traffic requiring SNAT" -j MASQUERADE --random-fully
EOF
}

kube_proxy_rules() {
    local node=$1 mode=$2 endpoint=$3 ns=${NODE_NS[$1]}
    case $mode in
    iptables)
        ip netns exec "$ns" iptables-restore --noflush <<EOF || return 1
*nat
$(kube_proxy_masquerade_rules)
:KUBE-EXT-IRONIC - [0:0]
:KUBE-SVC-IRONIC - [0:0]
:KUBE-SEP-IRONIC - [0:0]
-A KUBE-SERVICES -d $E2E_SERVICE_IP/32 -p tcp -m comment --comment "$SERVICE_NS/$SERVICE_NAME:http loadbalancer IP" -m tcp --dport 80 -j KUBE-EXT-IRONIC
-A KUBE-EXT-IRONIC -m comment --comment "masquerade traffic for $SERVICE_NS/$SERVICE_NAME:http external destinations" -j KUBE-MARK-MASQ
-A KUBE-EXT-IRONIC -j KUBE-SVC-IRONIC
-A KUBE-SVC-IRONIC -m comment --comment "$SERVICE_NS/$SERVICE_NAME:http -> $endpoint:8080" -j KUBE-SEP-IRONIC
-A KUBE-SEP-IRONIC -s $endpoint/32 -m comment --comment "$SERVICE_NS/$SERVICE_NAME:http" -j KUBE-MARK-MASQ
-A KUBE-SEP-IRONIC -p tcp -m comment --comment "$SERVICE_NS/$SERVICE_NAME:http" -m tcp -j DNAT --to-destination $endpoint:8080
COMMIT
EOF
        ;;
    nftables)
        ip netns exec "$ns" nft -f - <<EOF || return 1
table ip kube-proxy {
    map service-ips {
        type ipv4_addr . inet_proto . inet_service : verdict
        elements = { $E2E_SERVICE_IP . tcp . 80 : goto external-ironic-http }
    }
    chain nat-prerouting { type nat hook prerouting priority dstnat; jump services; }
    chain nat-output { type nat hook output priority -100; jump services; }
    chain nat-postrouting { type nat hook postrouting priority srcnat; jump masquerading; }
    chain services { ip daddr . meta l4proto . th dport vmap @service-ips; }
    chain mark-for-masquerade { meta mark set meta mark | 0x4000; }
    chain masquerading {
        meta mark & 0x4000 == 0 return
        meta mark set meta mark ^ 0x4000
        masquerade fully-random
    }
    chain external-ironic-http { jump mark-for-masquerade; goto service-ironic-http; }
    chain service-ironic-http { numgen random mod 1 vmap { 0 : goto endpoint-ironic-http }; }
    chain endpoint-ironic-http {
        ip saddr $endpoint jump mark-for-masquerade
        meta l4proto tcp dnat to $endpoint:8080
    }
}
EOF
        ;;
    ipvs)
        # pkg/proxy/ipvs: the ingress IP bound to kube-ipvs0, a virtual server for it (round robin) with the
        # endpoint as a masqueraded real server, the IP and port in the KUBE-LOAD-BALANCER set, whose rule marks
        # the packets for masquerade; and conntrack for IPVS, which that masquerade needs (vs/conntrack=1).
        kube_ipvs0 add "$node" || return 1
        ip netns exec "$ns" sysctl -qw net.ipv4.vs.conntrack=1 || return 1
        ip netns exec "$ns" ipset create KUBE-LOAD-BALANCER hash:ip,port comment -exist || return 1
        ip netns exec "$ns" ipset add KUBE-LOAD-BALANCER "$E2E_SERVICE_IP,tcp:80" comment "$SERVICE_NS/$SERVICE_NAME:http loadbalancer IP" ||
            return 1
        ip netns exec "$ns" ipvsadm -A -t "$E2E_SERVICE_IP:80" -s rr || return 1
        ip netns exec "$ns" ipvsadm -a -t "$E2E_SERVICE_IP:80" -r "$endpoint:8080" -m || return 1
        ip netns exec "$ns" iptables-restore --noflush <<EOF || return 1
*nat
$(kube_proxy_masquerade_rules)
:KUBE-LOAD-BALANCER - [0:0]
-A KUBE-SERVICES -m comment --comment "Kubernetes service lb portal" -m set --match-set KUBE-LOAD-BALANCER dst,dst -j KUBE-LOAD-BALANCER
-A KUBE-SERVICES -m set --match-set KUBE-LOAD-BALANCER dst,dst -j ACCEPT
-A KUBE-LOAD-BALANCER -j KUBE-MARK-MASQ
COMMIT
EOF
        ;;
    esac
}

kube_proxy_rules_remove() {
    local ns=${NODE_NS[$1]} chain
    local chains=(KUBE-SERVICES KUBE-POSTROUTING KUBE-MARK-MASQ KUBE-EXT-IRONIC KUBE-SVC-IRONIC KUBE-SEP-IRONIC KUBE-LOAD-BALANCER)
    ip netns exec "$ns" nft delete table ip kube-proxy 2>/dev/null
    ip netns exec "$ns" iptables -t nat -D PREROUTING -m comment --comment "kubernetes service portals" -j KUBE-SERVICES 2>/dev/null
    ip netns exec "$ns" iptables -t nat -D OUTPUT -m comment --comment "kubernetes service portals" -j KUBE-SERVICES 2>/dev/null
    ip netns exec "$ns" iptables -t nat -D POSTROUTING -m comment --comment "kubernetes postrouting rules" -j KUBE-POSTROUTING 2>/dev/null
    for chain in "${chains[@]}"; do ip netns exec "$ns" iptables -t nat -F "$chain" 2>/dev/null; done
    for chain in "${chains[@]}"; do ip netns exec "$ns" iptables -t nat -X "$chain" 2>/dev/null; done
    if [ -n "$(ip -n "$ns" link show kube-ipvs0 2>/dev/null)" ]; then
        ip netns exec "$ns" ipvsadm -C 2>/dev/null
        ip netns exec "$ns" ipset destroy KUBE-LOAD-BALANCER 2>/dev/null
        kube_ipvs0 del "$1"
    fi
    return 0
}

# client_calls NODE [CGROUP]: the client pod on NODE calls the service IP; prints who answered.
# With CGROUP (a cgroup v2 directory), the call is made from it (`ip netns exec` mounts a sysfs of its own, so
# the cgroup is reached through a mount of the sandbox's).
client_calls() {
    if [ -z "${2:-}" ]; then
        ip netns exec "${CLIENT_NS[$1]}" curl -s --max-time 2 "http://$E2E_SERVICE_IP/who"
        return
    fi
    # shellcheck disable=SC2016 # expanded by the inner shell
    ip netns exec "${CLIENT_NS[$1]}" sh -c 'echo $$ >"$1/cgroup.procs" && exec curl -s --max-time 2 "http://$2/who"' \
        sh "$2" "$E2E_SERVICE_IP"
}

# pod_saw NODE: the client address the pod on NODE logged for its last request (IPv4 without the ::ffff: of
# its dual-stack socket).
pod_saw() {
    local seen
    seen=$(tail -n 1 "$E2E_TMP/pod-$1/http.log" | awk '{ print $1 }')
    echo "${seen#::ffff:}"
}

# pods_call_service MODE...: BMO calls Ironic at the service IP from a pod: kube-proxy's rules for the Service's
# ingress IP (which the owner writes), in each MODE, take it to the endpoint, from the owner's node and from the
# other one, while the owner's datapath serves the LAN.
pods_call_service() {
    local serving=$CURRENT mode node answer seen want rc=0
    [ "$(ingress_of c1)" = "$E2E_SERVICE_IP" ] || { E2E_REASON="the Service's ingress is '$(ingress_of c1)'"; return 1; }
    kube_proxy_world_up || { E2E_REASON="cannot build the pod network between the nodes"; kube_proxy_world_down; return 1; }
    for mode in "$@"; do
        for node in "${NODES[@]}"; do
            kube_proxy_rules "$node" "$mode" "${POD_IP[$serving]}" ||
                { E2E_REASON="cannot write kube-proxy's $mode rules on $node"; rc=1; break 2; }
        done
        for node in "${NODES[@]}"; do
            answer=$(client_calls "$node")
            seen=$(pod_saw "$serving")
            # externalTrafficPolicy Cluster: kube-proxy masquerades, so Ironic sees the client's node, by the
            # address the node sends from toward the pod (its gateway address on the owner's node, its end of
            # the link between the nodes on the other).
            if [ "$node" = "$serving" ]; then want=${POD_GW[$serving]}; else want=${CLUSTER_LINK_IP[$node]}; fi
            log "kube-proxy $mode: the client on $node called $E2E_SERVICE_IP: answered by '$answer', the pod saw $seen"
            if [ "$answer" != "${POD_NAME[$serving]}" ] || [ "$seen" != "$want" ]; then
                E2E_REASON="kube-proxy $mode: the client on $node got '$answer' from $E2E_SERVICE_IP (want ${POD_NAME[$serving]}), the pod saw $seen (want $want)"
                rc=1
                break 2
            fi
        done
        # The LAN is still served by the owner alone, with the rules in place (in IPVS mode both nodes' kernels
        # have the IP): every who-has of a run answered by its NIC alone, and the LAN's request reaches the pod
        # through bpfnet, not through kube-proxy's rules on the owner's node (which would serve it from the same
        # pod, masqueraded): the pod sees the LAN host's own address.
        one_arp_answerer "$serving" 50 "kube-proxy $mode, its rules in place" || { rc=1; break; }
        answer=$(who_serves)
        seen=$(pod_saw "$serving")
        if [ "$answer" != "${POD_NAME[$serving]}" ] || [ "$seen" != "$E2E_HOST_IP" ]; then
            E2E_REASON="kube-proxy $mode, its rules in place: the LAN's HTTP answered by '$answer', the pod saw $seen (want $E2E_HOST_IP)"
            rc=1
            break
        fi
        for node in "${NODES[@]}"; do kube_proxy_rules_remove "$node"; done
    done
    kube_proxy_world_down
    [ "$rc" = 0 ] && loaders_alive
}

case_pod_clients() {
    # From: the pod ready on node A, A serving (case serve, its need in the case list).
    pods_call_service iptables nftables
}

case_no_kube_proxy() {
    # From: the pod ready on node A, A serving (case serve, its need in the case list). No kube-proxy: no rules on
    # the nodes for the ingress IP. A replacement's socket-LB (Cilium's, attached to the cgroup root, for every
    # pod of the node) turns a pod's connect() to IP:80 into one to the endpoint, so the pod network carries it and
    # nothing is masqueraded. The client pods' processes run in a cgroup of the test's with the stand-in on it.
    local serving=$CURRENT node answer seen rc=0 mnt=$E2E_TMP/cgroup2
    local pin=/sys/fs/bpf/socket-lb translated
    [ -x "${CNI_STANDIN:-}" ] || { E2E_REASON="CNI_STANDIN is not set to the cni_standin program"; return 1; }
    mkdir -p "$mnt" && mount -t cgroup2 none "$mnt" || { E2E_REASON="cannot mount cgroup2"; return 1; }
    # Below the test's own cgroup (the sandbox has no cgroup namespace: the mount shows the machine's hierarchy),
    # removed by the cleanup trap if the case does not get to it.
    SOCKET_LB_CGROUP=$mnt$(awk -F: '$1 == "0" { print $3 }' /proc/self/cgroup)/bpfnet-socket-lb
    SOCKET_LB_CGROUP=${SOCKET_LB_CGROUP/\/\///}
    mkdir "$SOCKET_LB_CGROUP" || { E2E_REASON="cannot make the cgroup $SOCKET_LB_CGROUP"; umount "$mnt"; return 1; }
    E2E_CGROUPS+=("$SOCKET_LB_CGROUP")
    if ! kube_proxy_world_up; then
        E2E_REASON="cannot build the pod network between the nodes"
        rc=1
    elif ! "$CNI_STANDIN" socket-lb "$SOCKET_LB_CGROUP" "$E2E_SERVICE_IP:80" "${POD_IP[$serving]}:8080" "$pin" >/dev/null; then
        E2E_REASON="cannot attach the socket-LB stand-in"
        rc=1
    else
        for node in "${NODES[@]}"; do
            answer=$(client_calls "$node" "$SOCKET_LB_CGROUP")
            seen=$(pod_saw "$serving")
            log "socket-LB: the client on $node called $E2E_SERVICE_IP: answered by '$answer', the pod saw $seen"
            if [ "$answer" != "${POD_NAME[$serving]}" ] || [ "$seen" != "${CLIENT_IP[$node]}" ]; then
                E2E_REASON="socket-LB: the client on $node got '$answer' from $E2E_SERVICE_IP (want ${POD_NAME[$serving]}), the pod saw $seen (want ${CLIENT_IP[$node]})"
                rc=1
                break
            fi
        done
        translated=$("$CNI_STANDIN" seen "$pin")
        if [ "$rc" = 0 ] && [ "${translated:-0}" -lt 2 ]; then
            E2E_REASON="the socket-LB translated $translated connects, want 2"
            rc=1
        fi
    fi
    if [ "$rc" = 0 ] && ! serves "$serving"; then
        E2E_REASON="after the pods' calls, who='$(who_serves)' arp='$(arp_owner)'"
        rc=1
    fi
    rm -f "${pin}_link" "${pin}_seen"
    kube_proxy_world_down
    if rmdir "$SOCKET_LB_CGROUP"; then E2E_CGROUPS=(); else log "cannot remove the cgroup $SOCKET_LB_CGROUP"; fi
    umount "$mnt"
    [ "$rc" = 0 ] && loaders_alive
}

case_ipvs_pod_clients() {
    # From: the pod ready on node A, A serving (case serve, its need in the case list).
    # The IPVS generic netlink family is there when ip_vs is loaded (the matrix's guests load it at boot); asking
    # for it by name, as ipvsadm does, would load the module into a machine's kernel.
    if ! command -v ipvsadm >/dev/null || ! genl ctrl list 2>/dev/null | grep -qw 'Name: IPVS'; then
        E2E_REASON="this kernel has no IPVS (ip_vs loaded), or ipvsadm is not installed: the kernel matrix's guests run this case"
        return 77
    fi
    pods_call_service ipvs
}

case_shared_ip() {
    # From: the pod ready on node A, A serving (case serve, its need in the case list).
    # From: CURRENT serves ironic. A second Service, images (TCP 6180 -> 8081), shares the service IP with
    # disjoint ports; its pod runs on the other node: one node cannot steer to both, so neither is served
    # and an Event says why. When images' pod is on the same node, both are served from it.
    local here=$CURRENT there
    there=$(other "$here")
    local images='{"apiVersion": "v1", "kind": "Service",
                   "metadata": {"name": "images", "namespace": "'$SERVICE_NS'", "annotations": {"bpfnet.io/ip": "'$E2E_SERVICE_IP'"}},
                   "spec": {"type": "LoadBalancer", "loadBalancerClass": "bpfnet.io/provisioning",
                            "ports": [{"name": "images", "protocol": "TCP", "port": 6180, "targetPort": 8081}]}}'
    kapi c1 POST "$SLICE_PATH" "$(slice_json "$there" true images)" >/dev/null || { E2E_REASON="cannot create images' slice"; return 1; }
    kapi c1 POST "$SERVICE_PATH" "$images" >/dev/null || { E2E_REASON="cannot create images"; return 1; }
    if ! wait_for 5 eval '[[ $(events_of c1 SharedIPSplit) == *"different nodes"* ]]'; then
        E2E_REASON="no SharedIPSplit Event: '$(events_of c1 SharedIPSplit)'"
        return 1
    fi
    log "split: $(events_of c1 SharedIPSplit | head -n1)"
    wait_for 3 eval '[ "$(arp_owner)" = silent ]' || { E2E_REASON="the shared IP is still answered by $(arp_owner)"; return 1; }
    kapi c1 PUT "$SLICE_PATH/images-abcde" "$(slice_json "$here" true images)" >/dev/null || { E2E_REASON="cannot move images"; return 1; }
    wait_serves "$here" 5 || return 1
    local body
    body=$(cluster_host curl -s --max-time 1 "http://$E2E_SERVICE_IP:6180/who")
    [ "$body" = "${POD_NAME[$here]}" ] || { E2E_REASON="images (port 6180) answered '$body'"; return 1; }
    log "together on $here: both Services served after $TOOK s (port 6180 answered by $body)"
    [ "$(who_serves)" = "${POD_NAME[$here]}" ] || { E2E_REASON="ironic (port 80) answered '$(who_serves)'"; return 1; }
    # One Lease for the IP, whichever Services share it; it names them.
    [ "$(lease_holder c1)" = "$here" ] || { E2E_REASON="the IP's Lease is held by '$(lease_holder c1)'"; return 1; }
    wait_for 3 eval '[ "$(lease_services c1)" = "$SERVICE_NS/images,$SERVICE_NS/$SERVICE_NAME" ]' ||
        { E2E_REASON="the IP's Lease names '$(lease_services c1)'"; return 1; }
    # A third Service on the IP whose named target port resolves to images' 8081: refused with an Event,
    # the other two still served.
    local clash='{"apiVersion": "v1", "kind": "Service",
                  "metadata": {"name": "clash", "namespace": "'$SERVICE_NS'", "annotations": {"bpfnet.io/ip": "'$E2E_SERVICE_IP'"}},
                  "spec": {"type": "LoadBalancer", "loadBalancerClass": "bpfnet.io/provisioning",
                           "ports": [{"name": "clash", "protocol": "TCP", "port": 7000, "targetPort": "images-alt"}]}}'
    kapi c1 POST "$SLICE_PATH" "$(slice_json "$here" true clash)" >/dev/null || { E2E_REASON="cannot create clash's slice"; return 1; }
    kapi c1 POST "$SERVICE_PATH" "$clash" >/dev/null || { E2E_REASON="cannot create clash"; return 1; }
    if ! wait_for 5 eval '[[ $(events_of c1 TargetPortConflict) == *images* ]]'; then
        E2E_REASON="no TargetPortConflict Event for clash: '$(events_of c1 TargetPortConflict)'"
        return 1
    fi
    serves "$here" || { E2E_REASON="the clash stopped the other Services: who='$(who_serves)'"; return 1; }
    log "clash: $(events_of c1 TargetPortConflict | head -n1)"
    kapi c1 DELETE "$SERVICE_PATH/clash" >/dev/null
    kapi c1 DELETE "$SLICE_PATH/clash-abcde" >/dev/null
    # images deleted: the IP's Lease stays with its owner, and names ironic alone.
    kapi c1 DELETE "$SERVICE_PATH/images" >/dev/null
    kapi c1 DELETE "$SLICE_PATH/images-abcde" >/dev/null
    wait_for 3 eval '[ "$(lease_services c1)" = "$SERVICE_NS/$SERVICE_NAME" ]' ||
        { E2E_REASON="after images was deleted the IP's Lease names '$(lease_services c1)'"; return 1; }
    [ "$(lease_holder c1)" = "$here" ] || { E2E_REASON="the IP's Lease is held by '$(lease_holder c1)'"; return 1; }
    log "images deleted: the IP's Lease kept by $here, naming ironic alone"
    loaders_alive
}

# g6: virtual media on the control plane's VIP (docs/metal3.md, "Virtual media without an extra IP"). The nodes'
# NICs are also on the hosts' own network, 198.18.4.0/24 (the host 198.18.4.10, node A .20, node B .21), and the
# VIP (CLUSTER_SHARED_VIP, a /32) sits on the node kube-vip chose; the loaders were started with
# --shared-addresses VIP (k8s_loader_flags). Nodes forward, as every Kubernetes node does: the pod's answers are
# routed out of the NIC.
SHARED_VIP=$CLUSTER_SHARED_VIP
SHARED_HOST=198.18.4.10
declare -A SHARED_NODE=([node-a]=198.18.4.20 [node-b]=198.18.4.21)
# shared_service NAME PORT TARGET_PORT [ADDRESS]: a Service of the class on the shared ADDRESS (default the VIP)
# with one TCP port, named NAME.
shared_service() {
    cat <<EOF
{"apiVersion": "v1", "kind": "Service",
 "metadata": {"name": "$1", "namespace": "$SERVICE_NS", "annotations": {"bpfnet.io/shared-address": "${4:-$SHARED_VIP}"}},
 "spec": {"type": "LoadBalancer", "loadBalancerClass": "bpfnet.io/provisioning",
          "ports": [{"name": "$1", "protocol": "TCP", "port": $2, "targetPort": $3}]}}
EOF
}
# media_answer [PORT [ADDRESS]]: what the host gets from PORT (default 6180) of ADDRESS (default the VIP): the
# pod's name, or curl's exit code.
media_answer() {
    local body rc=0
    body=$(cluster_host curl -s --max-time 1 "http://${2:-$SHARED_VIP}:${1:-6180}/who") || rc=$?
    [ "$rc" = 0 ] && echo "$body" || echo "curl-exit-$rc"
}
# vip_on NODE add|del: kube-vip's move of the VIP; vip_announce NODE: its gratuitous ARP from NODE, which kube-vip
# sends on taking the VIP and every few seconds after (the host's stale entry for the VIP is only replaced by a
# gratuitous ARP past the neighbour table's locktime, 1 s: each wait below announces on every try).
vip_on() { ip -n "${NODE_NS[$1]}" addr "$2" "$SHARED_VIP/32" dev "$E2E_NIC"; }
vip_announce() {
    ip netns exec "${NODE_NS[$1]}" "$SYSTEM_PYTHON" "$E2E_DIR/arp_announce.py" --op request "$E2E_NIC" "$SHARED_VIP" \
        "${NIC_MAC[$1]}"
}

# node_lease_address NODE: the address NODE's loader published in its node Lease ("" when none).
node_lease_address() {
    json_field c1 "$LEASE_PATH/bpfnet-node-$1" 'o["metadata"].get("annotations", {}).get("bpfnet.io/node-address", "")'
}

case_shared_address() {
    # From: the pod ready on node A, A serving (case serve, its need in the case list).
    local here=$CURRENT there node
    there=$(other "$here")
    cluster_host ip addr add "$SHARED_HOST/24" dev eth0 || { E2E_REASON="host address"; return 1; }
    for node in "${NODES[@]}"; do
        ip -n "${NODE_NS[$node]}" addr add "${SHARED_NODE[$node]}/24" dev "$E2E_NIC" &&
            ip netns exec "${NODE_NS[$node]}" sysctl -qw net.ipv4.ip_forward=1 || { E2E_REASON="$node's own address"; return 1; }
    done
    vip_on "$here" add || { E2E_REASON="the VIP on $here"; return 1; }
    kapi c1 POST "$SLICE_PATH" "$(slice_json "$here" true media)" >/dev/null || { E2E_REASON="cannot create media's slice"; return 1; }
    kapi c1 POST "$SERVICE_PATH" "$(shared_service media 6180 8081)" >/dev/null || { E2E_REASON="cannot create media"; return 1; }
    if ! wait_for 5 eval '[ "$(media_answer)" = "${POD_NAME[$here]}" ]'; then
        E2E_REASON="the VIP's 6180 answered '$(media_answer)' (events: $(events_of c1 Refused) $(events_of c1 SharedAddressPodElsewhere))"
        return 1
    fi
    log "media on the VIP $SHARED_VIP:6180, held by $here: answered by $(media_answer)"
    [[ $(events_of c1 Serving) == *"serves the shared address $SHARED_VIP (held here"* ]] ||
        { E2E_REASON="no Serving Event for the shared address: '$(events_of c1 Serving)'"; return 1; }
    wait_for 3 eval '[ "$(ingress_of c1 media)" = "$SHARED_VIP" ]' ||
        { E2E_REASON="media's ingress is '$(ingress_of c1 media)'"; return 1; }
    local status
    status=$(nsenter --net="/run/netns/${NODE_NS[$here]}" "$BPFNETCTL" --pin-root "$E2E_PIN_ROOT/$here" \
        --control-socket "/run/bpfnet/$here.sock" status 2>&1)
    [[ $status == *"shared address  $SHARED_VIP: the node's, held on $E2E_NIC"*"steered: tcp/6180 to ${POD_IP[$here]}:8081"* ]] ||
        { E2E_REASON="bpfnetctl status on $here does not show the shared address: $status"; return 1; }
    # What a Service may not take on the VIP: a port that is not one of the loaders' --shared-ports (6443, the
    # API server's), or a target port the pod answers another address on (8080, the service IP's http).
    kapi c1 POST "$SERVICE_PATH" "$(shared_service kube-api 6443 8081)" >/dev/null || { E2E_REASON="cannot create kube-api"; return 1; }
    kapi c1 POST "$SLICE_PATH" "$(slice_json "$here" true clash)" >/dev/null || { E2E_REASON="cannot create clash's slice"; return 1; }
    kapi c1 POST "$SERVICE_PATH" "$(shared_service clash 6183 8080)" >/dev/null || { E2E_REASON="cannot create clash"; return 1; }
    wait_for 5 eval '[[ $(events_of c1 Refused) == *"port 6443 is not one the loaders steer on a shared address"* ]]' ||
        { E2E_REASON="kube-api on the VIP's 6443 not refused: '$(events_of c1 Refused)'"; return 1; }
    wait_for 5 eval '[[ $(events_of c1 PodPortShared) == *"already answers on "*" 8080 for $E2E_SERVICE_IP"* ]]' ||
        { E2E_REASON="no PodPortShared Event for clash: '$(events_of c1 PodPortShared)'"; return 1; }
    [ "$(media_answer 6183)" = curl-exit-7 ] || { E2E_REASON="clash's 6183 answered '$(media_answer 6183)'"; return 1; }
    log "refused on the VIP: 6443 ($(events_of c1 Refused | grep -m1 6443)); clash's target port 8080: PodPortShared"
    kapi c1 DELETE "$SERVICE_PATH/kube-api" >/dev/null
    kapi c1 DELETE "$SERVICE_PATH/clash" >/dev/null
    kapi c1 DELETE "$SLICE_PATH/clash-abcde" >/dev/null
    # One pod, two addresses: the service IP's ports are still served, and the VIP's other ports are the
    # node's (the pod's 8080 is not reached through the VIP: the node's kernel refuses it).
    serves "$here" || { E2E_REASON="the service IP is no longer served by $here: who='$(who_serves)'"; return 1; }
    [ "$(media_answer 8080)" = curl-exit-7 ] || { E2E_REASON="the VIP's unlisted port 8080 answered '$(media_answer 8080)'"; return 1; }
    # Each loader publishes its node's own address on the NIC in its node Lease: where a node holding the VIP
    # hands the ports of a pod elsewhere.
    for node in "${NODES[@]}"; do
        wait_for 5 eval '[ "$(node_lease_address "$node")" = "${SHARED_NODE[$node]}" ]' ||
            { E2E_REASON="$node's node Lease publishes '$(node_lease_address "$node")', not ${SHARED_NODE[$node]}"; return 1; }
    done
    # Renewed once a Lease duration (the holders stop trusting one left unrenewed).
    local version
    version=$(json_field c1 "$LEASE_PATH/bpfnet-node-$here" 'o["metadata"]["resourceVersion"]')
    wait_for $((2 * LEASE_S + 2)) eval '[ "$(json_field c1 "$LEASE_PATH/bpfnet-node-$here" '"'"'o["metadata"]["resourceVersion"]'"'"')" != "$version" ]' ||
        { E2E_REASON="$here's node Lease not renewed in $((2 * LEASE_S + 2)) s (resourceVersion $version)"; return 1; }
    # kube-vip moves the VIP to the node without the pod: that node hands the listed ports to the pod's node
    # (its published address), whose loader steers them into the pod; the answer leaves there as the VIP.
    vip_on "$here" del && vip_on "$there" add || { E2E_REASON="cannot move the VIP"; return 1; }
    wait_for 5 eval 'vip_announce "$there"; [ "$(media_answer)" = "${POD_NAME[$here]}" ]' ||
        { E2E_REASON="after the VIP moved to $there, 6180 answered '$(media_answer)' (events: $(events_of c1 SharedAddressPodElsewhere))"; return 1; }
    [ "$(cluster_host ip neigh show "$SHARED_VIP" dev eth0 | awk '{print $3}')" = "${NIC_MAC[$there]}" ] ||
        { E2E_REASON="the host does not reach the VIP at $there's MAC: $(cluster_host ip neigh show "$SHARED_VIP" dev eth0)"; return 1; }
    wait_for 5 eval '[[ $(events_of c1 Serving) == *"node $there serves the shared address $SHARED_VIP (held here"*"hands the Service'"'"'s ports to node $here (${SHARED_NODE[$here]})"* ]]' ||
        { E2E_REASON="no Serving Event from $there handing to $here: '$(events_of c1 Serving)'"; return 1; }
    [[ $(events_of c1 Released) == *"node $here stopped serving this Service on $SHARED_VIP (the shared address is no longer held"* ]] ||
        { E2E_REASON="no Released Event from $here: '$(events_of c1 Released)'"; return 1; }
    wait_for 3 eval '[ "$(ingress_of c1 media)" = "$SHARED_VIP" ]' ||
        { E2E_REASON="served through $there, media's ingress is '$(ingress_of c1 media)'"; return 1; }
    status=$(nsenter --net="/run/netns/${NODE_NS[$there]}" "$BPFNETCTL" --pin-root "$E2E_PIN_ROOT/$there" \
        --control-socket "/run/bpfnet/$there.sock" status 2>&1)
    [[ $status == *"steered: tcp/6180 to ${POD_IP[$here]}:8081 on the node at ${SHARED_NODE[$here]}"* ]] ||
        { E2E_REASON="bpfnetctl status on $there does not show the port handed on: $status"; return 1; }
    log "the VIP on $there, the pod on $here: 6180 handed to ${SHARED_NODE[$here]}, answered by $(media_answer)"
    # The pod's node loses its own address on the NIC: its node Lease says so, and the VIP's node hands nothing
    # there any more (refused by its kernel) and says why; the address back, the ports are handed on again.
    ip -n "${NODE_NS[$here]}" addr del "${SHARED_NODE[$here]}/24" dev "$E2E_NIC" || { E2E_REASON="cannot remove $here's address"; return 1; }
    wait_for 5 eval '[ "$(media_answer)" = curl-exit-7 ]' ||
        { E2E_REASON="$here without an address of its own, 6180 answered '$(media_answer)'"; return 1; }
    if ! wait_for 5 eval '[[ $(events_of c1 SharedAddressPodElsewhere) == *"node $there holds the shared address $SHARED_VIP"*"runs on node $here, which publishes no address of its own"* ]]'; then
        E2E_REASON="no SharedAddressPodElsewhere Event from $there: '$(events_of c1 SharedAddressPodElsewhere)'"
        return 1
    fi
    wait_for 3 eval '[ -z "$(ingress_of c1 media)" ]' ||
        { E2E_REASON="served nowhere, media's ingress is still '$(ingress_of c1 media)'"; return 1; }
    log "$here without its own address: its node Lease publishes '$(node_lease_address "$here")', 6180 refused on $there, reported"
    ip -n "${NODE_NS[$here]}" addr add "${SHARED_NODE[$here]}/24" dev "$E2E_NIC" || { E2E_REASON="cannot restore $here's address"; return 1; }
    wait_for 5 eval '[ "$(media_answer)" = "${POD_NAME[$here]}" ]' ||
        { E2E_REASON="$here's address back, 6180 answered '$(media_answer)'"; return 1; }
    # The pod follows (both Services' EndpointSlices name it on the VIP's node): served there.
    move_to "$there" || { E2E_REASON="cannot move the pod"; return 1; }
    kapi c1 PUT "$SLICE_PATH/media-abcde" "$(slice_json "$there" true media)" >/dev/null || { E2E_REASON="cannot move media's pod"; return 1; }
    wait_for 5 eval '[ "$(media_answer)" = "${POD_NAME[$there]}" ]' ||
        { E2E_REASON="with the pod on $there, the VIP's 6180 answered '$(media_answer)'"; return 1; }
    wait_serves "$there" 5 || return 1
    wait_for 3 eval '[ "$(ingress_of c1 media)" = "$SHARED_VIP" ]' ||
        { E2E_REASON="served on $there, media's ingress is '$(ingress_of c1 media)'"; return 1; }
    log "the pod moved to $there: the VIP's 6180 and the service IP both served there"
    # The Service on each node's own address instead: the pod's node serves its own, the other (no pod) none;
    # the VIP is no longer served, and the ingress names no address.
    kapi c1 PUT "$SERVICE_PATH/media" "$(shared_service media 6180 8081 node)" >/dev/null || { E2E_REASON="cannot change media"; return 1; }
    wait_for 5 eval '[ "$(media_answer 6180 "${SHARED_NODE[$there]}")" = "${POD_NAME[$there]}" ]' ||
        { E2E_REASON="on node addresses, $there's 6180 answered '$(media_answer 6180 "${SHARED_NODE[$there]}")'"; return 1; }
    [ "$(media_answer 6180 "${SHARED_NODE[$here]}")" = curl-exit-7 ] ||
        { E2E_REASON="$here (no pod) answered on its own address: '$(media_answer 6180 "${SHARED_NODE[$here]}")'"; return 1; }
    wait_for 5 eval '[ "$(media_answer)" = curl-exit-7 ]' || { E2E_REASON="on node addresses, the VIP still answered '$(media_answer)'"; return 1; }
    wait_for 3 eval '[ -z "$(ingress_of c1 media)" ]' || { E2E_REASON="on node addresses, media's ingress is '$(ingress_of c1 media)'"; return 1; }
    # The node without the pod holds its own address but was asked for nothing there: no Warning from it.
    [[ $(events_of c1 SharedAddressPodElsewhere) != *"${SHARED_NODE[$here]}"* ]] ||
        { E2E_REASON="$here warns about its own address: '$(events_of c1 SharedAddressPodElsewhere)'"; return 1; }
    log "on node addresses: $there serves ${SHARED_NODE[$there]}:6180, $here refuses its own, the VIP is the node's"
    kapi c1 DELETE "$SERVICE_PATH/media" >/dev/null
    kapi c1 DELETE "$SLICE_PATH/media-abcde" >/dev/null
    wait_for 5 eval '[ "$(media_answer)" = curl-exit-7 ]' || { E2E_REASON="media deleted, 6180 answered '$(media_answer)'"; return 1; }
    vip_on "$there" del
    for node in "${NODES[@]}"; do
        ip -n "${NODE_NS[$node]}" addr del "${SHARED_NODE[$node]}/24" dev "$E2E_NIC"
        ip netns exec "${NODE_NS[$node]}" sysctl -qw net.ipv4.ip_forward=0
    done
    cluster_host ip addr del "$SHARED_HOST/24" dev eth0
    loaders_alive
}

# g2: the Ironic Service made dual stack (its address per family, ipFamilies, DHCPv6), with the IPv6
# EndpointSlice the EndpointSlice controller writes beside the IPv4 one for a dual-stack pod.
SERVICE_IP6=2001:2::2
V6ONLY_IP6=2001:2::3
IRONIC_PORTS='{"name": "http", "protocol": "TCP", "port": 80, "targetPort": "web"},
              {"name": "dhcp", "protocol": "UDP", "port": 67, "targetPort": 67, "appProtocol": "dhcp"}'

# ipv6_slice_json SERVICE NODE|none: SERVICE's EndpointSlice of addressType IPv6 with the pod of NODE.
ipv6_slice_json() {
    local service=$1 node=$2 endpoints="[]"
    [ "$node" != none ] &&
        endpoints="[{\"addresses\": [\"${POD_IP6[$node]}\"], \"conditions\": {\"ready\": true}, \"nodeName\": \"$node\"}]"
    cat <<EOF
{"apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice",
 "metadata": {"name": "$service-ipv6", "namespace": "$SERVICE_NS",
              "labels": {"kubernetes.io/service-name": "$service"}},
 "addressType": "IPv6", "endpoints": $endpoints,
 "ports": [{"name": "http", "protocol": "TCP", "port": 8080}, {"name": "dhcp", "protocol": "UDP", "port": 67},
           {"name": "dhcpv6", "protocol": "UDP", "port": 547}]}
EOF
}

set_ipv6_slice() {
    local body
    body=$(ipv6_slice_json "$@")
    kapi c1 PUT "$SLICE_PATH/$1-ipv6" "$body" >/dev/null || kapi c1 POST "$SLICE_PATH" "$body" >/dev/null
}

# who6 ADDRESS: the pod that answers http://[ADDRESS]/who from the host ("" when none does).
who6() { cluster_host curl -s -6 --max-time 1 "http://[$1]/who"; }
# neighbour6 ADDRESS: the MAC the host's kernel resolved ADDRESS to.
neighbour6() { cluster_host ip -6 neigh show "$1" dev eth0 | awk '{ for (i = 1; i < NF; i++) if ($i == "lladdr") print $(i + 1) }'; }
# A router advertisement made the provisioning prefix on-link (the host's own address is a /128).
ra_prefix_route() { cluster_host ip -6 route show "$CLUSTER_SUBNET6" | grep -q expires; }

dual_served_by() {
    [ "$(lease_holder c1)" = "$1" ] && [ "$(lease_holder c1 "$SERVICE_IP6")" = "$1" ] &&
        [ "$(who6 "$SERVICE_IP6")" = "${POD_NAME[$1]}" ] && [ "$(who_serves)" = "${POD_NAME[$1]}" ]
}

case_dual_stack() {
    # From: the pod ready on node A, A serving (case serve, its need in the case list).
    # From: both loaders on c1 (with --subnet-v6 and --router-advertisements), CURRENT serves the Ironic
    # Service. It becomes dual stack: each address is served from the pod's node under a Lease of its own, the
    # IPv6 one answered by NDP and steered to the pod's IPv6 address, the router advertisement sent by the
    # owner; the status lists both; DHCPv6 is relayed to that pod's dnsmasq.
    local path=$SERVICE_PATH/$SERVICE_NAME node=$CURRENT t0
    set_ipv6_slice "$SERVICE_NAME" "$node" || { E2E_REASON="cannot write the IPv6 slice"; return 1; }
    merge_patch c1 PATCH "$path" '{"metadata": {"annotations": {"bpfnet.io/ip": "'"$E2E_SERVICE_IP,$SERVICE_IP6"'"}},
        "spec": {"ipFamilyPolicy": "RequireDualStack", "ipFamilies": ["IPv4", "IPv6"],
                 "ports": ['"$IRONIC_PORTS"', {"name": "dhcpv6", "protocol": "UDP", "port": 547, "targetPort": 547}]}}' ||
        { E2E_REASON="cannot make the Service dual stack"; return 1; }
    if ! wait_for 10 ra_prefix_route; then
        E2E_REASON="no router advertisement made $CLUSTER_SUBNET6 on-link on the host: $(cluster_host ip -6 route | tr '\n' ' '); refusals: $(events_of c1 Refused | tail -n 1)"
        return 1
    fi
    if ! wait_for 10 dual_served_by "$node"; then
        E2E_REASON="not served by $node: Leases '$(lease_holder c1)' '$(lease_holder c1 "$SERVICE_IP6")', IPv6 who '$(who6 "$SERVICE_IP6")', IPv4 who '$(who_serves)'"
        return 1
    fi
    [ "$(neighbour6 "$SERVICE_IP6")" = "${NIC_MAC[$node]}" ] ||
        { E2E_REASON="the host resolved $SERVICE_IP6 to '$(neighbour6 "$SERVICE_IP6")'"; return 1; }
    wait_for 3 eval '[ "$(ingress_of c1)" = "$E2E_SERVICE_IP,$SERVICE_IP6" ]' ||
        { E2E_REASON="status.loadBalancer.ingress is '$(ingress_of c1)'"; return 1; }
    if ! events_of c1 Serving | grep -F "serves $SERVICE_IP6 (answers NDP, steers its ports to pod ${POD_IP6[$node]})" >/dev/null; then
        E2E_REASON="no Serving Event for $SERVICE_IP6: $(events_of c1 Serving | tail -n 2 | tr '\n' ' ')"
        return 1
    fi
    log "dual stack on $node: Leases of both addresses, RA, NDP, HTTP over both, ingress $(ingress_of c1)"
    dhclient6_lease "$CLUSTER_HOST" eth0 "$E2E_TMP/dual-dhcp6" || return 1
    local leased
    leased=$(lease_field "$E2E_TMP/dual-dhcp6/dhclient.events" new_ip6_address BOUND6)
    ip_in_range "$leased" "${DHCP6_FIRST[$node]}" "${DHCP6_LAST[$node]}" ||
        { E2E_REASON="DHCPv6 lease '$leased' is not from $node's pod"; return 1; }
    log "DHCPv6 through the relay: $leased from ${POD_NAME[$node]}'s dnsmasq"

    # The pod moves: both families follow, and the new owner's unsolicited advertisement fixes the host's
    # entry without a solicitation of its own.
    node=$(other "$node")
    t0=$(date +%s.%N)
    { move_to "$node" && set_ipv6_slice "$SERVICE_NAME" "$node"; } || { E2E_REASON="cannot move the slices"; return 1; }
    if ! wait_for 10 eval '[ "$(neighbour6 "$SERVICE_IP6")" = "${NIC_MAC[$node]}" ]'; then
        E2E_REASON="the host's entry for $SERVICE_IP6 is '$(neighbour6 "$SERVICE_IP6")' after the move"
        return 1
    fi
    log "moved to $node: the host's entry for $SERVICE_IP6 is ${NIC_MAC[$node]} $(since "$t0") s after the slices changed"
    wait_for 10 dual_served_by "$node" ||
        { E2E_REASON="not served by $node after the move: IPv6 who '$(who6 "$SERVICE_IP6")', IPv4 who '$(who_serves)'"; return 1; }

    # The pod loses its IPv6 endpoint: that address goes (its Lease released, the ingress keeps the IPv4 one),
    # the IPv4 one stays served.
    set_ipv6_slice "$SERVICE_NAME" none || { E2E_REASON="cannot empty the IPv6 slice"; return 1; }
    if ! wait_for 10 eval '[ -z "$(lease_holder c1 "$SERVICE_IP6")" ] && [ "$(ingress_of c1)" = "$E2E_SERVICE_IP" ]'; then
        E2E_REASON="without an IPv6 endpoint: Lease '$(lease_holder c1 "$SERVICE_IP6")', ingress '$(ingress_of c1)'"
        return 1
    fi
    [ -z "$(who6 "$SERVICE_IP6")" ] || { E2E_REASON="$SERVICE_IP6 still answered without an endpoint"; return 1; }
    serves "$node" || { E2E_REASON="$E2E_SERVICE_IP stopped being served: '$(who_serves)'"; return 1; }
    log "IPv6 endpoint gone: its Lease released, the ingress $(ingress_of c1), $E2E_SERVICE_IP still served"

    # Made single stack (IPv4) while the annotation still names the IPv6 address: refused, saying why.
    merge_patch c1 PATCH "$path" '{"spec": {"ipFamilyPolicy": "SingleStack", "ipFamilies": ["IPv4"]}}' ||
        { E2E_REASON="cannot make the Service single stack"; return 1; }
    if ! wait_for 5 eval '[[ $(events_of c1 Refused) == *"$SERVICE_IP6 is IPv6, and spec.ipFamilies does not list it"* ]]'; then
        E2E_REASON="no Refused Event for the single-stack Service: '$(events_of c1 Refused | tail -n 1)'"
        return 1
    fi
    wait_for 5 eval '[ "$(arp_owner)" = silent ]' || { E2E_REASON="still answered after the refusal: $(arp_owner)"; return 1; }
    # Back to the IPv4 Service the other cases use.
    merge_patch c1 PATCH "$path" '{"metadata": {"annotations": {"bpfnet.io/ip": "'"$E2E_SERVICE_IP"'"}},
        "spec": {"ports": ['"$IRONIC_PORTS"']}}' || { E2E_REASON="cannot restore the Service"; return 1; }
    kapi c1 DELETE "$SLICE_PATH/$SERVICE_NAME-ipv6" >/dev/null
    wait_serves "$node" 10 || return 1

    # An IPv6-only Service, on the pod's IPv6 address (no other Service uses it now): served on its own
    # Lease, named with all eight groups. Then a Service on another IPv4 address steered to the Ironic pod:
    # a pod answers for one address per family, so it is refused with an Event and Ironic stays served.
    local v6only='{"apiVersion": "v1", "kind": "Service",
                   "metadata": {"name": "ironic-v6", "namespace": "'$SERVICE_NS'", "annotations": {"bpfnet.io/ip": "'$V6ONLY_IP6'"}},
                   "spec": {"type": "LoadBalancer", "loadBalancerClass": "bpfnet.io/provisioning",
                            "ipFamilyPolicy": "SingleStack", "ipFamilies": ["IPv6"],
                            "ports": [{"name": "http", "protocol": "TCP", "port": 80, "targetPort": 8080}]}}'
    set_ipv6_slice ironic-v6 "$node" || { E2E_REASON="cannot write ironic-v6's slice"; return 1; }
    kapi c1 POST "$SERVICE_PATH" "$v6only" >/dev/null || { E2E_REASON="cannot create ironic-v6"; return 1; }
    if ! wait_for 10 eval '[ "$(who6 "$V6ONLY_IP6")" = "${POD_NAME[$node]}" ] && [ "$(lease_holder c1 "$V6ONLY_IP6")" = "$node" ]'; then
        E2E_REASON="ironic-v6 not served by $node: who '$(who6 "$V6ONLY_IP6")', Lease $(lease_path "$V6ONLY_IP6") held by '$(lease_holder c1 "$V6ONLY_IP6")'"
        return 1
    fi
    wait_for 3 eval '[ "$(ingress_of c1 ironic-v6)" = "$V6ONLY_IP6" ]' ||
        { E2E_REASON="ironic-v6's ingress is '$(ingress_of c1 ironic-v6)'"; return 1; }
    log "IPv6-only Service served by $node under the Lease $(basename "$(lease_path "$V6ONLY_IP6")")"
    kapi c1 DELETE "$SERVICE_PATH/ironic-v6" >/dev/null
    kapi c1 DELETE "$SLICE_PATH/ironic-v6-ipv6" >/dev/null
    kapi c1 POST "$SLICE_PATH" "$(slice_json "$node" true other-ip)" >/dev/null || { E2E_REASON="cannot create other-ip's slice"; return 1; }
    local other_ip='{"apiVersion": "v1", "kind": "Service",
                     "metadata": {"name": "other-ip", "namespace": "'$SERVICE_NS'", "annotations": {"bpfnet.io/ip": "198.18.0.7"}},
                     "spec": {"type": "LoadBalancer", "loadBalancerClass": "bpfnet.io/provisioning",
                              "ports": [{"name": "other-ip", "protocol": "TCP", "port": 80, "targetPort": 8081}]}}'
    kapi c1 POST "$SERVICE_PATH" "$other_ip" >/dev/null || { E2E_REASON="cannot create other-ip"; return 1; }
    if ! wait_for 5 eval '[[ $(events_of c1 BackendShared) == *"already backs service IP $E2E_SERVICE_IP"* ]]'; then
        E2E_REASON="no BackendShared Event: '$(events_of c1 BackendShared)'"
        return 1
    fi
    log "another address on the same pod: $(events_of c1 BackendShared | head -n 1)"
    serves "$node" || { E2E_REASON="the Ironic Service stopped being served by $node"; return 1; }
    kapi c1 DELETE "$SERVICE_PATH/other-ip" >/dev/null
    kapi c1 DELETE "$SLICE_PATH/other-ip-abcde" >/dev/null
    loaders_alive
}

case_pivot() {
    # From: the pod ready on node A, A serving (case serve, its need in the case list).
    # From: both loaders on cluster c1. Cluster c2 is created with the same Service and no endpoint; node B's
    # loader is moved to c2 (a loader of each cluster on the LAN). c1's endpoint goes away and c2's becomes
    # ready on node B: the service IP moves to cluster c2. Then c1 claims it again (a deliberate double
    # claim): c1's node defers to c2's, both report it, and it answers once c2 lets the IP go.
    if [ "$CURRENT" != node-a ]; then
        move_to node-a || return 1
        wait_serves node-a 5 || return 1
    fi
    standin_start c2
    kapi c2 POST "$SERVICE_PATH" "$(service_json)" >/dev/null || { E2E_REASON="cannot create the Service in c2"; return 1; }
    kapi c2 POST "$SLICE_PATH" "$(slice_json none)" >/dev/null || { E2E_REASON="cannot create the slice in c2"; return 1; }
    k8s_loader_stop node-b
    k8s_loader_start node-b c2 "$LOGS/loader-node-b-c2.log" || return 1
    serves node-a || { E2E_REASON="node-a stopped serving when node-b joined c2"; return 1; }

    set_slice c1 none || return 1
    if ! wait_for 5 eval '[ "$(arp_owner)" = silent ]'; then
        E2E_REASON="node-a still answers ARP after c1's endpoint went away"
        return 1
    fi
    [ -z "$(lease_holder c1)" ] || { E2E_REASON="c1's Lease still held by '$(lease_holder c1)'"; return 1; }
    set_slice c2 node-b || return 1
    local t0
    t0=$(date +%s.%N)
    if ! wait_for 5 serves node-b; then
        E2E_REASON="node-b (cluster c2) does not serve: who='$(who_serves)' arp='$(arp_owner)'"
        return 1
    fi
    log "pivot: c1 released the service IP, c2 serves it through node-b after $(since "$t0") s"
    [ "$(lease_holder c2)" = node-b ] || { E2E_REASON="c2's Lease holder is '$(lease_holder c2)'"; return 1; }
    wait_for 3 eval '[ "$(ingress_of c2)" = "$E2E_SERVICE_IP" ]' || { E2E_REASON="c2 ingress '$(ingress_of c2)'"; return 1; }

    # The double claim: c1 gets a ready endpoint on node-a again while c2's node-b serves. node-a holds c1's Lease
    # but probes the LAN before it answers: node-b answers, so node-a defers (Event Deferred in c1 naming
    # node-b's MAC) and node-b reports node-a's probes (Event Conflict in c2 naming node-a's MAC). One answerer.
    set_slice c1 node-a || return 1
    if ! wait_for 5 eval '[ -n "$(events_of c1 Deferred)" ] && [ -n "$(events_of c2 Conflict)" ]'; then
        E2E_REASON="no Deferred Event in c1 ('$(events_of c1 Deferred)') or no Conflict Event in c2 ('$(events_of c2 Conflict)')"
        return 1
    fi
    log "double claim: c1: '$(events_of c1 Deferred)' c2: '$(events_of c2 Conflict)'"
    local checks=""
    [ "$(lease_holder c1)" = node-a ] || checks+=" c1's Lease is held by '$(lease_holder c1)', not node-a;"
    [[ $(events_of c1 Deferred) == *"${NIC_MAC[node-b]}"* ]] || checks+=" c1's Deferred Event does not name node-b's MAC;"
    [[ $(events_of c2 Conflict) == *"${NIC_MAC[node-a]}"* ]] || checks+=" c2's Conflict Event does not name node-a's MAC;"
    grep -q 'msg="deferred: another MAC answers for the service IP on the LAN"' "${K8S_LOADER_LOG[node-a]}" ||
        checks+=" node-a did not log the deferral;"
    [ "$(node_metric node-a bpfnet_k8s_lease_deferrals_total)" = 1 ] ||
        checks+=" bpfnet_k8s_lease_deferrals_total on node-a is '$(node_metric node-a bpfnet_k8s_lease_deferrals_total)';"
    # 200 who-has over 2 s (times E2E_TIME_SCALE), across node-a's probe rounds (every 1-1.5 s): each answered by
    # node-b alone.
    local probes=$E2E_TMP/pivot.arpprobe alone
    who_has_probes 200 "$probes"
    alone=$(grep -c "answered ${NIC_MAC[node-b]}\$" "$probes")
    log "double claim: $alone of 200 who-has answered by node-b alone"
    [ "$alone" = 200 ] ||
        checks+=" $((200 - alone)) of 200 who-has not answered by node-b alone: $(grep -m3 -v "answered ${NIC_MAC[node-b]}\$" "$probes" | tr '\n' ' ');"
    serves node-b || checks+=" node-b stopped serving;"
    [ -z "$checks" ] || { E2E_REASON="during the double claim:$checks"; return 1; }

    # c2 lets the IP go (its endpoint gone): node-a's next probe round goes unanswered, and it answers.
    set_slice c2 none || return 1
    t0=$(date +%s.%N)
    if ! wait_for 5 serves node-a; then
        E2E_REASON="node-a (c1) does not answer after c2 let the IP go: who='$(who_serves)' arp='$(arp_owner)'"
        return 1
    fi
    log "c2 let the IP go: node-a (c1) answers $(since "$t0") s later, after its probe went unanswered"
    grep -q 'msg="probe unanswered: answering for the deferred service IP"' "${K8S_LOADER_LOG[node-a]}" ||
        { E2E_REASON="node-a did not log its unanswered probe"; return 1; }

    # Back to what the cases after this one start from: node-b serves for cluster c2.
    set_slice c1 none || return 1
    wait_for 5 eval '[ "$(arp_owner)" = silent ]' || { E2E_REASON="node-a still answers after c1's endpoint went away"; return 1; }
    set_slice c2 node-b || return 1
    wait_for 5 serves node-b || { E2E_REASON="node-b does not serve c2 again: who='$(who_serves)' arp='$(arp_owner)'"; return 1; }
    loaders_alive
}

case_bridge_cni() {
    # From: node-b serves for cluster c2 (case pivot, its need in the case list). The pod is recreated on node-b
    # behind a bridge (flannel, the CNI bridge plugin: the route to the pod names cni0, not the pod's veth): the
    # loader finds the pod's veth behind the bridge by the namespace its peer is in, and the pod is served.
    local ns=k8s-pod-c node_ns=${NODE_NS[node-b]} ip=198.18.102.2 dir=$E2E_TMP/pod-c
    ip netns add "$ns" && E2E_NAMESPACES+=("$ns")
    ip -n "$ns" link set lo up
    ip -n "$node_ns" link add cni0 type bridge || { E2E_REASON="cannot create cni0"; return 1; }
    ip -n "$node_ns" addr add 198.18.102.1/24 dev cni0
    ip -n "$node_ns" link set cni0 up
    ip netns exec "$node_ns" sysctl -qw net.ipv4.ip_forward=1 # as the bridge plugin does for its pods
    ip -n "$node_ns" link add vethc type veth peer name eth0 netns "$ns"
    ip -n "$node_ns" link set vethc master cni0 up
    ip -n "$ns" addr add "$ip/24" dev eth0
    ip -n "$ns" link set eth0 up
    ip -n "$ns" route add default via 198.18.102.1
    mkdir -p "$dir/www" && echo pod-c >"$dir/www/who"
    bg_in_ns "$ns" "$dir/http.log" "$SYSTEM_PYTHON" -m http.server --bind :: --directory "$dir/www" 8080
    kapi c2 PUT "$SLICE_PATH/$SERVICE_NAME-abcde" "$(slice_json node-b true "$SERVICE_NAME" "$ip")" >/dev/null || { E2E_REASON="cannot write the slice"; return 1; }
    if ! wait_for 5 eval '[ "$(who_serves)" = pod-c ] && [ "$(arp_owner)" = "${NIC_MAC[node-b]}" ]'; then
        E2E_REASON="pod-c behind cni0 not served: who='$(who_serves)' arp='$(arp_owner)' events='$(events_of c2 BackendNotFound)'"
        return 1
    fi
    if ! grep -q 'veth=vethc found_by=namespace behind=cni0' "${K8S_LOADER_LOG[node-b]}"; then
        E2E_REASON="node-b's loader did not say it found vethc behind cni0: $(grep 'backend veth' "${K8S_LOADER_LOG[node-b]}" | tail -n 1)"
        return 1
    fi
    [ -z "$(events_of c2 BackendNotFound)" ] || { E2E_REASON="BackendNotFound: $(events_of c2 BackendNotFound)"; return 1; }
    # bpfnetctl status says it too, from the loader's describe answer.
    local status
    status=$(nsenter --net="/run/netns/${NODE_NS[node-b]}" "$BPFNETCTL" --pin-root "$E2E_PIN_ROOT/node-b" \
        --control-socket /run/bpfnet/node-b.sock status 2>&1)
    [[ $status == *"on vethc (ifindex "*", found by namespace behind cni0), delivered by bpf_redirect_peer, pod hook"* ]] ||
        { E2E_REASON="bpfnetctl status on node-b does not say vethc was found behind cni0: $(grep '^backend' <<<"$status")"; return 1; }
    log "bridge CNI: $(grep 'backend veth' "${K8S_LOADER_LOG[node-b]}" | tail -n 1); status: $(grep '^backend' <<<"$status")"
    # The Service asks for the node's routing (bpfnet.io/pod-delivery: route): the same pod, now reached through
    # cni0, status says so, and the pod still answers the host; without the annotation, into the veth again.
    local path=$SERVICE_PATH/$SERVICE_NAME
    delivered() {
        status=$(nsenter --net="/run/netns/${NODE_NS[node-b]}" "$BPFNETCTL" --pin-root "$E2E_PIN_ROOT/node-b" \
            --control-socket /run/bpfnet/node-b.sock status 2>&1)
        [[ $status == *"found by namespace behind cni0), delivered by $1, pod hook"* ]] && [ "$(who_serves)" = pod-c ]
    }
    merge_patch c2 PATCH "$path" '{"metadata": {"annotations": {"bpfnet.io/pod-delivery": "route"}}}' ||
        { E2E_REASON="cannot annotate the Service"; return 1; }
    wait_for 5 delivered "the node's routing" ||
        { E2E_REASON="with bpfnet.io/pod-delivery: route, status says $(grep '^backend' <<<"$status"); who='$(who_serves)'"; return 1; }
    log "bridge CNI, pod delivery route: $(grep '^backend' <<<"$status")"
    merge_patch c2 PATCH "$path" '{"metadata": {"annotations": {"bpfnet.io/pod-delivery": null}}}' ||
        { E2E_REASON="cannot remove the annotation"; return 1; }
    wait_for 5 delivered bpf_redirect_peer ||
        { E2E_REASON="without the annotation, status says $(grep '^backend' <<<"$status")"; return 1; }
    loaders_alive
}

# left_on NODE: what bpfnet left attached or pinned on NODE (empty when nothing).
left_on() {
    local node=$1 what=""
    ip -n "${NODE_NS[$node]}" link show "$E2E_NIC" | grep -q 'xdp' && what+="xdp on $E2E_NIC; "
    [ -n "$(tc -n "${NODE_NS[$node]}" filter show dev "$E2E_NIC" ingress 2>/dev/null)" ] && what+="tc filter on $E2E_NIC; "
    [ -n "$(tc -n "${NODE_NS[$node]}" filter show dev vethpod ingress 2>/dev/null)" ] && what+="tc filter on vethpod; "
    [ -e "$E2E_PIN_ROOT/$node/$E2E_NIC" ] && what+="pins in $E2E_PIN_ROOT/$node/$E2E_NIC; "
    echo "$what"
}

case_uninstall() {
    # From: node-a serving (case serve). Deleting the DaemonSet sends SIGTERM: an upgrade's stop, the datapath
    # left running. k8s/uninstall then runs the loader with the DaemonSet's own flags and --teardown.
    local node out
    for node in node-a node-b; do
        k8s_loader_stop "$node" TERM
        [ -n "$(left_on "$node")" ] || { E2E_REASON="$node had nothing attached before the teardown"; return 1; }
    done
    for node in node-a node-b; do
        k8s_loader_flags "$node" c1
        if ! out=$(nsenter --net="/run/netns/${NODE_NS[$node]}" "$LOADER" "${K8S_FLAGS[@]}" --teardown 2>&1); then
            E2E_REASON="--teardown on $node failed: $(echo "$out" | tail -n 3 | tr '\n' ' ')"
            return 1
        fi
        grep -q 'msg="datapath removed"' <<<"$out" || { E2E_REASON="$node: no 'datapath removed': $out"; return 1; }
        local left
        left=$(left_on "$node")
        [ -z "$left" ] || { E2E_REASON="left behind on $node: $left"; return 1; }
    done
    wait_for 3 eval '[ "$(arp_owner)" = silent ]' || { E2E_REASON="the service IP is still answered by $(arp_owner)"; return 1; }
    log "both nodes clean after --teardown; the service IP unanswered"
}

case_rbac() {
    # From: the second cluster after the pivot (case pivot, its need in the case list).
    # Every request the loaders sent to either stand-in during this test is granted by k8s/manifests/rbac.yaml
    # (everywhere) and k8s/served-namespace's Role in metal3, as k8s/examples/ironic installs them.
    local check=$E2E_REPO/tests/k8s/check_rbac.py name out
    for name in c1 c2; do
        if ! out=$("$SYSTEM_PYTHON" "$check" "$E2E_TMP/logs/requests-$name.log"); then
            E2E_REASON="requests to $name not granted by the roles: $(echo "$out" | grep -v '^granted\|^unused' | tr '\n' ' ')"
            return 1
        fi
        echo "$out" | sed "s/^/# $name: /"
    done
    # The check itself fails on a call the roles do not grant: a Lease written outside the served namespaces
    # (the scheduler's leader election in kube-system).
    echo "PUT /apis/coordination.k8s.io/v1/namespaces/kube-system/leases/kube-scheduler" >"$E2E_TMP/denied.log"
    if "$SYSTEM_PYTHON" "$check" "$E2E_TMP/denied.log" >/dev/null; then
        E2E_REASON="check_rbac.py accepted a Lease update in kube-system"
        return 1
    fi
}

# ---------------------------------------------------------------------------------------------------

# The measurements some cases leave, logged after them.
MOVES_JSON=""
PARTITION_JSON=""
UPGRADE_JSON=""
k8s_after_case() {
    case $E2E_CASE_KEY in
    moves) [ -n "$MOVES_JSON" ] && log "failover: $MOVES_JSON" ;;
    partition) [ -n "$PARTITION_JSON" ] && log "partition: $PARTITION_JSON" ;;
    loader_upgrade) [ -n "$UPGRADE_JSON" ] && log "upgrade: $UPGRADE_JSON" ;;
    esac
    return 0
}

log "loader: $LOADER"
run_cases

finish
