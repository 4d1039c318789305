#!/bin/bash
# End-to-end test of bpfnet's steering with real traffic between network namespaces: a bare-metal host on
# the provisioning LAN reaches a pod through the service IP, the pod reaches the host as the service IP,
# everything else is dropped, a loader restart keeps flows, a bad config attaches nothing, and teardown
# removes everything.
#
#   usage: test_steering.sh PATH/TO/bpfnet-loader [--case KEY]... | --list   (as root; it sandboxes itself, see lib.sh)
#   env:   XDP_PASS_OBJ  the compiled tests/e2e/xdp_pass.bpf.c (default build/tests/e2e/xdp_pass.bpf.o)
#          E2E_KEEP_TMP  keep the temporary directory (configs, logs) for inspection
#
# Output is TAP-like: one `ok - NAME` / `not ok - NAME: REASON` per case, then `N passed, M failed`.
# Cases are called through run_cases (the case list), which shellcheck cannot see.
# shellcheck disable=SC2317
set -uo pipefail

# shellcheck source-path=SCRIPTDIR source=lib.sh
source "$(dirname "$(realpath "$0")")/lib.sh"

# The cases, in the order of a full run, with what each starts from (lib.sh, "The case list").
e2e_fixture topology topology_create
e2e_fixture servers start_servers topology
e2e_case bad_config case_bad_config "bad config is rejected and attaches nothing" servers
e2e_fixture loader start_good_loader --fails-as "loader starts and the service IP answers" servers
e2e_case arp_every_host case_arp_every_host "every host on the LAN bridge gets ARP answers for the service IP (veth NIC, default xdpMode)" loader
e2e_case http case_http "http to service IP:80 reaches pod:8080 with client address kept" loader
e2e_case iperf case_iperf "iperf3 host->pod and pod->host through service IP:5201" loader
e2e_case pod_to_host case_pod_to_host "pod connects to host agent as the service IP (neighbour miss path)" loader
e2e_case checksums case_checksums "every TCP segment rewritten either way carries a right checksum, complete or partial (captured in the pod and on the host)" loader
e2e_case unlisted_port case_unlisted_port "unlisted port is dropped silently and counted" loader
e2e_case restart case_restart "loader restart keeps a running transfer and adopts the programs" loader
e2e_case upgrade_flow_ports case_upgrade_flow_ports "upgrade from a build without flow_ports: the host's late answer to the pod's call gets in" loader
e2e_case attach_choices case_attach_choices "the kernel probe picks the TC attach; clsact and veth delivery on request, and back" loader
e2e_case teardown case_teardown "teardown removes programs, filters and pins" loader

e2e_start "$@"

# Everything below runs inside the sandbox.

require_tools iperf3 curl python3 bpftool ethtool nsenter tc

POD_HTTP_PORT=8080
HOST_AGENT_PORT=9999
IPERF_PORT=5201

# ---------------------------------------------------------------------------------------------------
# Servers

start_servers() {
    bg_in_ns "$E2E_POD" "$LOGS/pod-http.log" python3 "$E2E_DIR/addr_server.py" 0.0.0.0 "$POD_HTTP_PORT"
    bg_in_ns "$E2E_POD" "$LOGS/pod-iperf3.log" iperf3 --server --port "$IPERF_PORT"
    # The ramdisk agent of walk 5 (the conductor calls it on TCP 9999): it tells who called.
    bg_in_ns "$E2E_HOST" "$LOGS/host-agent.log" python3 "$E2E_DIR/addr_server.py" "$E2E_HOST_IP" "$HOST_AGENT_PORT"
    wait_for 10 pod curl -s -o /dev/null --max-time 1 "http://127.0.0.1:$POD_HTTP_PORT/" ||
        die "pod HTTP server did not come up: $(cat "$LOGS/pod-http.log")"
    wait_for 10 host curl -s -o /dev/null --max-time 1 "http://$E2E_HOST_IP:$HOST_AGENT_PORT/" ||
        die "host agent server did not come up: $(cat "$LOGS/host-agent.log")"
    wait_for 10 pod_listens "$IPERF_PORT" || die "iperf3 server did not come up: $(cat "$LOGS/pod-iperf3.log")"
    log "servers up: pod http :$POD_HTTP_PORT, pod iperf3 :$IPERF_PORT, host agent $E2E_HOST_IP:$HOST_AGENT_PORT"
}

# ---------------------------------------------------------------------------------------------------
# Cases

# f. Bad configurations are refused with exit code 2, naming the field, and touch nothing.
BAD_CONFIG_OUT=""
check_bad_config() {
    local label=$1 file=$2 field=$3
    local rc
    run_loader --config "$file" --log-level debug >"$LOGS/bad-$label.out" 2>"$LOGS/bad-$label.err"
    rc=$?
    if [ "$rc" != 2 ]; then
        E2E_REASON="$label: exit code $rc, want 2 (stderr: $(head -c 300 "$LOGS/bad-$label.err"))"
        return 1
    fi
    if ! grep -q -- "$field" "$LOGS/bad-$label.err"; then
        E2E_REASON="$label: stderr does not name $field: $(head -c 300 "$LOGS/bad-$label.err")"
        return 1
    fi
    BAD_CONFIG_OUT+="$label: $(head -n1 "$LOGS/bad-$label.err"); "
}

nothing_attached() {
    local what=""
    ip -n "$E2E_NODE" link show "$E2E_NIC" | grep -q 'xdp' && what+="xdp on $E2E_NIC; "
    [ -n "$(ip netns exec "$E2E_NODE" tc filter show dev "$E2E_NIC" ingress 2>/dev/null)" ] &&
        what+="tc filter on $E2E_NIC ingress; "
    [ -n "$(ip netns exec "$E2E_NODE" tc filter show dev "$E2E_VETH" ingress 2>/dev/null)" ] &&
        what+="tc filter on $E2E_VETH ingress; "
    [ -e "$E2E_PIN_DIR" ] && what+="pin dir $E2E_PIN_DIR exists; "
    local links
    links=$(tc_links_left)
    [ -n "$links" ] && what+="tcx links: $links; "
    if [ -n "$what" ]; then
        E2E_REASON="left behind: $what"
        return 1
    fi
}

case_bad_config() {
    local dir=$E2E_TMP/bad
    mkdir -p "$dir"
    # serviceIP outside the subnet.
    write_config "$dir/outside.yaml"
    sed -i "s|^serviceIP: .*|serviceIP: 198.18.1.2|" "$dir/outside.yaml"
    # A typo'd key must not be ignored.
    write_config "$dir/unknown.yaml" "bogusField: 1"
    # A valid file whose backend has no route on the node: refused before anything is attached.
    write_config "$dir/noroute.yaml"
    sed -i "s|^  ip: .*|  ip: 198.19.77.7|" "$dir/noroute.yaml"

    check_bad_config outside "$dir/outside.yaml" serviceIP || return 1
    check_bad_config unknown "$dir/unknown.yaml" bogusField || return 1
    check_bad_config noroute "$dir/noroute.yaml" backend || return 1
    nothing_attached || return 1
    log "rejected: $BAD_CONFIG_OUT"
}

# Starts the good loader (not a case of its own: every case below needs it).
start_good_loader() {
    write_config "$CONFIG"
    loader_start "$CONFIG" "$LOGS/loader-1.log" || return 1
    local started
    started=$(date +%s.%N)
    if ! wait_for 10 service_reachable; then
        E2E_REASON="host cannot reach http://$E2E_SERVICE_IP/ 10 s after the loader started (neigh: $(ip -n "$E2E_HOST" neigh show "$E2E_SERVICE_IP"))"
        return 1
    fi
    log "service IP answers after $(since "$started") s; host neighbour: $(ip -n "$E2E_HOST" neigh show "$E2E_SERVICE_IP")"
    log "loader ready"
}

# ARP: every host on the bridge that asks for the service IP gets the NIC's MAC, at once, every time. The NIC
# is a veth whose peer is a bridge port without an XDP program, as metal3-dev-env's: an answer sent with
# XDP_TX would be lost there (the loader's gratuitous ARP would still fill a half-resolved entry after a
# while, so only a direct probe shows whether requests are answered).
case_arp_every_host() {
    local entry ns answers before after mode
    local hosts=("$E2E_HOST")
    for entry in "${E2E_BYSTANDERS[@]}"; do
        hosts+=("${entry%% *}")
    done
    mode=$(grep -o 'msg="xdp program on the NIC".*' "$LOADER_LOG" | grep -o 'attach="[^"]*"')
    before=$(counter arp_reply)
    for ns in "${hosts[@]}"; do
        answers=$(ip netns exec "$ns" "$SYSTEM_PYTHON" "$E2E_DIR/arp_probe.py" --every 0.2 --count 3 eth0 "$E2E_SERVICE_IP")
        if [ "$(grep -c "answered $E2E_NIC_MAC\$" <<<"$answers")" != 3 ]; then
            E2E_REASON="$ns: not every who-has for $E2E_SERVICE_IP answered by $E2E_NIC_MAC (xdp $mode): $(tr '\n' ';' <<<"$answers")"
            return 1
        fi
    done
    after=$(counter arp_reply)
    if [ $((after - before)) -lt $((3 * ${#hosts[@]})) ]; then
        E2E_REASON="arp_reply went $before -> $after for $((3 * ${#hosts[@]})) requests"
        return 1
    fi
    log "${#hosts[@]} hosts x 3 who-has answered by $E2E_NIC_MAC (xdp $mode; arp_reply $before -> $after)"
}

# a. HTTP to the service IP on 80 reaches the pod on 8080, which sees the host's own address.
case_http() {
    local out rc
    out=$(host curl -sS --max-time 5 "http://$E2E_SERVICE_IP/" 2>&1)
    rc=$?
    if [ "$rc" != 0 ]; then
        E2E_REASON="curl exit $rc: $out"
        return 1
    fi
    if [ "$out" != "$E2E_HOST_IP" ]; then
        E2E_REASON="pod saw client '$out', want $E2E_HOST_IP"
        return 1
    fi
}

# b. iperf3 both ways through service IP:5201.
case_iperf() {
    local rc
    host iperf3 --client "$E2E_SERVICE_IP" --port "$IPERF_PORT" --time 3 --connect-timeout 3000 --json \
        >"$LOGS/iperf-forward.json" 2>"$LOGS/iperf-forward.err"
    rc=$?
    if [ "$rc" != 0 ] || ! iperf_check "$LOGS/iperf-forward.json" "host->pod"; then
        E2E_REASON="host->pod: exit $rc; ${IPERF_SUMMARY:-$(head -c 300 "$LOGS/iperf-forward.err")}"
        return 1
    fi
    log "$IPERF_SUMMARY"
    host iperf3 --client "$E2E_SERVICE_IP" --port "$IPERF_PORT" --time 3 --connect-timeout 3000 --json --reverse \
        >"$LOGS/iperf-reverse.json" 2>"$LOGS/iperf-reverse.err"
    rc=$?
    if [ "$rc" != 0 ] || ! iperf_check "$LOGS/iperf-reverse.json" "pod->host (-R)"; then
        E2E_REASON="pod->host (-R): exit $rc; ${IPERF_SUMMARY:-$(head -c 300 "$LOGS/iperf-reverse.err")}"
        return 1
    fi
    log "$IPERF_SUMMARY"
}

# c. The pod calls the host's agent directly; the host sees the service IP. The host's entry is removed
# from the datapath's neighbour table first, so the connection has to go through the miss path: the
# first SYN is dropped and reported, the loader ARPs from the service IP, the retransmitted SYN passes.
case_pod_to_host() {
    local misses_before out rc started
    if ! forget_neighbour "$E2E_HOST_IP"; then
        E2E_REASON="could not remove $E2E_HOST_IP from the neighbour table"
        return 1
    fi
    misses_before=$(counter neighbour_miss)
    is_number "$misses_before" || { E2E_REASON="cannot read counters from $E2E_PIN_DIR/counters"; return 1; }
    started=$(date +%s.%N)
    out=$(pod curl -sS --max-time 8 "http://$E2E_HOST_IP:$HOST_AGENT_PORT/" 2>&1)
    rc=$?
    local took misses_after
    took=$(since "$started")
    misses_after=$(counter neighbour_miss)
    if [ "$rc" != 0 ]; then
        E2E_REASON="curl from the pod exit $rc after $took s: $out (neighbour_miss $misses_before -> $misses_after)"
        return 1
    fi
    if [ "$out" != "$E2E_SERVICE_IP" ]; then
        E2E_REASON="host saw the pod as '$out', want $E2E_SERVICE_IP"
        return 1
    fi
    if ! is_number "$misses_after" || [ "$misses_after" -le "$misses_before" ]; then
        E2E_REASON="connection worked but neighbour_miss did not move ($misses_before -> $misses_after)"
        return 1
    fi
    log "pod -> host took $took s through the neighbour-miss path (neighbour_miss $misses_before -> $misses_after)"
    if ! grep -q 'neighbour miss' "$LOADER_LOG"; then
        E2E_REASON="the loader did not log the neighbour miss it resolved"
        return 1
    fi
}

# c2. Every TCP segment the datapath rewrote, either way, carries a right checksum: the whole checksum, or (a
# CHECKSUM_PARTIAL skb: the default offloads of every veth here) the pseudo-header's sum that the device
# completes (lib.sh, checksum_watch_start).
case_checksums() {
    checksum_watch_start "$E2E_POD" "$E2E_HOST" || return 1
    # Host -> pod and back on a listed port, a bulk transfer each way, and the pod's own call to the host.
    local failed=""
    host curl -sS --max-time 5 -o /dev/null "http://$E2E_SERVICE_IP/" || failed+=" http"
    host iperf3 --client "$E2E_SERVICE_IP" --port "$IPERF_PORT" --bytes 2M --connect-timeout 3000 >/dev/null 2>&1 ||
        failed+=" iperf3"
    host iperf3 --client "$E2E_SERVICE_IP" --port "$IPERF_PORT" --bytes 2M --connect-timeout 3000 --reverse \
        >/dev/null 2>&1 || failed+=" iperf3-reverse"
    pod curl -sS --max-time 5 -o /dev/null "http://$E2E_HOST_IP:$HOST_AGENT_PORT/" || failed+=" pod-to-host"
    checksum_watch_check 20 "$failed" "$E2E_POD" "$E2E_HOST" || return 1
    log "TCP/UDP checksums right: $CHECKSUM_VERDICT"
}

# d. An unlisted port on the service IP: silence (no RST, no answer), and drop_not_allowed counts it.
case_unlisted_port() {
    port_dropped 22 2 || return 1
    log "port 22 timed out; $DROPPED_DETAIL"
}

# e. Restarting the loader in the middle of a transfer leaves the transfer alone.
case_restart() {
    local json=$LOGS/iperf-restart.json
    host iperf3 --client "$E2E_SERVICE_IP" --port "$IPERF_PORT" --time 8 --connect-timeout 3000 --json \
        >"$json" 2>"$LOGS/iperf-restart.err" &
    local iperf_pid=$!
    E2E_PIDS+=("$iperf_pid")
    sleep 2
    if pid_gone "$iperf_pid"; then
        wait "$iperf_pid"
        E2E_REASON="iperf3 ended before the restart (exit $?): $(head -c 300 "$LOGS/iperf-restart.err")"
        return 1
    fi
    local restarted
    restarted=$(date +%s.%N)
    local old_log=$LOADER_LOG
    loader_stop TERM
    local old_rc=$STOPPED_RC
    if [ "$old_rc" != 0 ]; then
        E2E_REASON="the old loader exited with $old_rc on SIGTERM"
        return 1
    fi
    if ! grep -q 'datapath left running' "$old_log"; then
        E2E_REASON="the old loader did not say it left the datapath running"
        return 1
    fi
    loader_start "$CONFIG" "$LOGS/loader-2.log" || return 1
    log "loader restarted in $(since "$restarted") s"

    local deadline=20 rc
    if ! wait_for "$deadline" pid_gone "$iperf_pid"; then
        E2E_REASON="iperf3 still running ${deadline} s after the restart"
        return 1
    fi
    wait "$iperf_pid"
    rc=$?
    if [ "$rc" != 0 ] || ! iperf_check "$json" "during restart"; then
        E2E_REASON="iperf3 across the restart: exit $rc; ${IPERF_SUMMARY:-$(head -c 300 "$LOGS/iperf-restart.err")}"
        return 1
    fi
    log "$IPERF_SUMMARY"
    # The new loader found everything in place: the NIC's XDP and TC programs and the pod's hook.
    local xdp tc
    xdp=$(grep 'xdp program on the NIC' "$LOADER_LOG")
    tc=$(grep 'tc program on the NIC ingress' "$LOADER_LOG")
    if [[ $xdp != *action=adopted* ]] || [[ $tc != *action=adopted* ]]; then
        E2E_REASON="the new loader did not adopt the programs: '$xdp' / '$tc'"
        return 1
    fi
    if grep -q 'tc program on the backend veth' "$LOADER_LOG"; then
        E2E_REASON="the new loader re-attached the pod hook: $(grep 'tc program on the backend veth' "$LOADER_LOG")"
        return 1
    fi
}

# expect_tc_attach KIND: the NIC's and the veth's TC programs are attached as KIND (tcx or clsact), each
# exactly once: no program of ours is left on the other kind.
expect_tc_attach() {
    local dev filters
    for dev in "$E2E_NIC" "$E2E_VETH"; do
        tc_hook_of "$dev"
        if [ "$TC_ATTACH" != "$1" ] || [ "$TC_PROG_ID" = 0 ]; then
            E2E_REASON="$dev: TC program attached as '$TC_ATTACH' (id $TC_PROG_ID), want $1"
            return 1
        fi
        filters=$(ip netns exec "$E2E_NODE" tc filter show dev "$dev" ingress 2>/dev/null)
        if [ "$1" = tcx ] && [ -n "$filters" ]; then
            E2E_REASON="$dev: a clsact filter is left next to the tcx link: $filters"
            return 1
        fi
    done
    local links
    links=$(tc_links_left)
    if [ "$1" = clsact ] && [ -n "$links" ]; then
        E2E_REASON="tcx links left next to the clsact filters: $links"
        return 1
    fi
}

http_from_host() {
    local out
    out=$(host curl -sS --max-time 5 "http://$E2E_SERVICE_IP/" 2>&1)
    [ "$out" = "$E2E_HOST_IP" ] || { E2E_REASON="HTTP through the service IP: '$out'"; return 1; }
}

# Restarts the loader with CONFIG and extra kernel choices (write_config options).
restart_with() {
    local log=$1
    shift
    loader_stop TERM
    write_config "$@" "$CONFIG" || return 1
    loader_start "$CONFIG" "$LOGS/$log" || return 1
}

# The loader upgraded from a build that had no flow_ports map (the ports of recorded flows; a host's packet to
# an unmarked port skips the flow tables): the new loader finds the flows pinned and that map new, and marks
# their ports. The pod called the host's agent, which answers only after the upgrade, while the pod's side is
# silent (a pod that sends anything has the port marked again by its own packet).
case_upgrade_flow_ports() {
    local out=$LOGS/upgrade-call.out
    # Past the upgrade, which takes seconds: under emulation, and under ASan on a loaded machine (CI: the new
    # loader served 4.5 s after its start, the upgrade took 5.3 s, past a 6 s delay).
    local delay=$((12 * ${E2E_TIME_SCALE:-1}))
    pod curl -sS --max-time $((delay + 10)) "http://$E2E_HOST_IP:$HOST_AGENT_PORT/delay/$delay" >"$out" 2>&1 &
    local call=$!
    E2E_PIDS+=("$call")
    sleep 1
    if pid_gone "$call"; then
        wait "$call"
        E2E_REASON="the pod's call ended before the upgrade (exit $?): $(head -c 300 "$out")"
        return 1
    fi
    local upgraded
    upgraded=$(date +%s.%N)
    loader_stop TERM
    # What a build without the map leaves: every other pin, flows included.
    rm -f "$E2E_PIN_DIR/flow_ports"
    loader_start "$CONFIG" "$LOGS/loader-upgrade.log" || return 1
    local took
    took=$(since "$upgraded")
    if ! grep -q 'ports of pinned flows marked' "$LOADER_LOG"; then
        E2E_REASON="the new loader did not mark the pinned flows' ports: $(grep -m3 -i 'flow\|error' "$LOADER_LOG" | tr '\n' ' ')"
        return 1
    fi
    if pid_gone "$call"; then
        E2E_REASON="the agent answered before the upgrade was over (${took} s): the case proves nothing; $(head -c 300 "$out")"
        return 1
    fi
    local rc
    wait "$call"
    rc=$?
    if [ "$rc" != 0 ] || [ "$(cat "$out")" != "$E2E_SERVICE_IP" ]; then
        E2E_REASON="the pod's call across the upgrade: curl exit $rc: $(head -c 300 "$out")"
        return 1
    fi
    log "upgrade took $took s; the agent's answer $delay s after the call reached the pod; $(grep -m1 'ports of pinned flows marked' "$LOADER_LOG" | grep -o 'flows=[0-9]*')"
}

# f. The loader probes the kernel at start and logs what it found and chose: tcx links where the kernel
# has them (6.6+), else clsact filters. A restart with tcAttach clsact and redirectPeer off moves both hooks
# onto clsact filters and delivers into the pod through its veth; back on auto, onto tcx again. Service
# traffic works each way. Where the kernel has no tcx, tcAttach tcx is refused with the reason.
case_attach_choices() {
    local probed expected=clsact
    kernel_has_tcx && expected=tcx
    probed=$(grep -F 'kernel probed' "$LOADER_LOG")
    if [[ $probed != *"tc_attach=\"$expected (tcAttach auto)\""* ]] || [[ $probed != *redirect_peer=yes* ]] ||
        [[ $probed != *pod_delivery=redirect_peer* ]]; then
        E2E_REASON="kernel $(uname -r): want $expected and redirect_peer, the loader logged: $probed"
        return 1
    fi
    expect_tc_attach "$expected" || return 1
    log "kernel $(uname -r): ${probed#*msg=}"

    # Only the delivery changes: the same instructions with another load-time constant, so the running
    # programs are replaced (not adopted) and the pod is reached through its veth.
    restart_with loader-veth.log --redirect-peer off || return 1
    probed=$(grep -F 'kernel probed' "$LOADER_LOG")
    [[ $probed =~ pod_delivery=veth( |$) ]] || { E2E_REASON="redirectPeer off, the loader logged: $probed"; return 1; }
    local tc_action
    tc_action=$(grep -F 'tc program on the NIC ingress' "$LOADER_LOG")
    [[ $tc_action == *action=replaced* ]] || { E2E_REASON="redirectPeer off: the TC program was not replaced: $tc_action"; return 1; }
    expect_tc_attach "$expected" || return 1
    wait_for 5 service_reachable && http_from_host || return 1
    log "redirectPeer off: programs replaced, HTTP answered through the veth"

    restart_with loader-clsact.log --tc-attach clsact || return 1
    expect_tc_attach clsact || return 1
    wait_for 5 service_reachable && http_from_host || return 1
    log "tcAttach clsact: $(grep -F 'tc program on the NIC ingress' "$LOADER_LOG" | sed 's/.*msg=//'); HTTP answered"

    if [ "$expected" = tcx ]; then
        restart_with loader-auto.log || return 1
        expect_tc_attach tcx || return 1
    else
        local out rc
        write_config --tc-attach tcx "$CONFIG"
        # The loader of the previous step still runs (and holds the metrics port): this one must fail on
        # tcAttach alone, before it touches anything.
        out=$(run_loader --config "$CONFIG" --metrics-address '' 2>&1)
        rc=$?
        if [ "$rc" = 0 ] || [[ $out != *"has no tcx links"* ]]; then
            E2E_REASON="tcAttach tcx on $(uname -r): exit $rc: $(echo "$out" | tail -n 2)"
            return 1
        fi
        log "tcAttach tcx refused: $(echo "$out" | grep -m1 'has no tcx')"
        restart_with loader-auto.log || return 1
        expect_tc_attach clsact || return 1
    fi
    wait_for 5 service_reachable && http_from_host || return 1
}

# g. --teardown removes the programs from the NIC and the pod's veth, and the pins.
case_teardown() {
    loader_stop TERM
    local out rc
    out=$(run_loader --config "$CONFIG" --teardown 2>&1)
    rc=$?
    if [ "$rc" != 0 ]; then
        E2E_REASON="--teardown exit $rc: $out"
        return 1
    fi
    nothing_attached || return 1
    # The datapath is gone: the service IP no longer answers (the host's cached ARP entry still points
    # at prov0, so this is the DNAT that is gone, not just ARP).
    if service_reachable; then
        E2E_REASON="the service IP still answers after teardown"
        return 1
    fi
}

# ---------------------------------------------------------------------------------------------------

log "loader: $LOADER"
run_cases
finish
