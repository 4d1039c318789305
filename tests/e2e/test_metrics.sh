#!/bin/bash
# End-to-end test of the loader's HTTP endpoints (docs/observability.md), scraped with curl from the node's
# network namespace where the loader listens: /healthz and /readyz after start, /metrics valid for
# promtool, the dnat_service counter rising with one HTTP request through the service IP, a second MAC
# claiming the service IP showing as a conflict (metrics and log), a port already in use, readiness lost
# when a reload fails (backend veth gone) and regained, a clean stop on SIGTERM, and the listener disabled.
#
#   usage: test_metrics.sh PATH/TO/bpfnet-loader [--case KEY]... | --list   (as root; it sandboxes itself, see lib.sh)
#   env:   XDP_PASS_OBJ  the compiled tests/e2e/xdp_pass.bpf.c (default build/tests/e2e/xdp_pass.bpf.o)
#          BPFNETCTL     bpfnetctl (default: cli/bpfnetctl next to the loader's build directory)
#          E2E_KEEP_TMP  keep the temporary directory (configs, logs, scrapes) for inspection
#
# Output is TAP-like: one `ok - NAME` / `not ok - NAME: REASON` per case, then `N passed, M failed`.
# Cases are called through run_cases (the case list), which shellcheck cannot see.
# shellcheck disable=SC2317
set -uo pipefail

# shellcheck source-path=SCRIPTDIR source=lib.sh
source "$(dirname "$(realpath "$0")")/lib.sh"

METRICS_ADDRESS=127.0.0.1:9394 # loopback of the node's namespace

# The cases, in the order of a full run, with what each starts from (lib.sh, "The case list"): every case starts
# from a serving loader.
e2e_fixture topology topology_create
e2e_fixture server start_pod_server topology
e2e_fixture loader start_loader --fails-as "loader with --metrics-address $METRICS_ADDRESS serves" server
e2e_case probes case_probes "a. /healthz and /readyz answer 200 after start" loader
e2e_case format case_format "b. /metrics: text format 0.0.4, promtool check metrics clean, service IP active" loader
e2e_case dnat_counter case_dnat_counter "c. one HTTP request through the service IP raises dnat_service (and matches the map)" loader
e2e_case conflict case_conflict "d. a second MAC claiming the service IP: conflict metrics and a logged warning" loader
e2e_case port_in_use case_port_in_use "e. a second loader on the same address exits 1 before touching the kernel" loader
e2e_case not_ready case_not_ready "f. backend veth gone, SIGHUP: /readyz 503 with the reason, /healthz 200; back: 200" loader
e2e_case carrier case_carrier "f2. the NIC loses carrier: a warning, /readyz 503 naming it, bpfnet_nic_carrier 0, bpfnetctl status says so; back: 200" loader
e2e_case sigterm case_sigterm "g. SIGTERM: exit 0 promptly, listener closed" loader
e2e_case disabled case_disabled "h. malformed --metrics-address exits 2; '' starts no listener" loader

loader_argument "$@"
bpfnetctl_argument
e2e_start "$@"

# Everything below runs inside the sandbox.

require_tools curl python3 bpftool ethtool nsenter promtool ss

POD_HTTP_PORT=8080
METRICS_URL=http://$METRICS_ADDRESS
OTHER_MAC=02:00:00:00:00:99 # the second owner of the service IP in case d

# ---------------------------------------------------------------------------------------------------
# Helpers

node() { ip netns exec "$E2E_NODE" "$@"; }

# http_get PATH: GET from the loader's listener; sets HTTP_CODE, HTTP_TYPE and HTTP_BODY (000 when nothing
# answered).
HTTP_CODE="" HTTP_TYPE="" HTTP_BODY=""
http_get() {
    local out
    out=$(node curl -s -o "$E2E_TMP/body" -w '%{http_code}\t%{content_type}' --max-time 3 "$METRICS_URL$1")
    HTTP_CODE=${out%%$'\t'*}
    HTTP_TYPE=${out#*$'\t'}
    HTTP_BODY=$(cat "$E2E_TMP/body" 2>/dev/null)
    rm -f "$E2E_TMP/body"
}

# scrape FILE: /metrics into FILE; fails unless it answered 200.
scrape() {
    http_get /metrics
    printf '%s\n' "$HTTP_BODY" >"$1"
    [ "$HTTP_CODE" = 200 ]
}

# metric FILE SERIES: the value of one series (name with its labels exactly as exposed) in a scrape.
metric() { awk -v s="$2" '$1 == s { print $2; found = 1 } END { exit !found }' "$1"; }

SCRAPES=0
# metric_now SERIES: the value of SERIES in a fresh scrape (kept as scrape-N.txt).
metric_now() {
    SCRAPES=$((SCRAPES + 1))
    local file=$LOGS/scrape-$SCRAPES.txt
    scrape "$file" && metric "$file" "$1"
}

series_above() {
    local value
    value=$(metric_now "$1") || return 1
    is_number "$value" && [ "$value" -gt "$2" ]
}

readyz_is() {
    http_get /readyz
    [ "$HTTP_CODE" = "$1" ]
}

loader_running() { [ -n "$LOADER_PID" ] && pid_alive "$LOADER_PID"; }

log_count() { grep -cF -- "$1" "$LOADER_LOG"; }
log_count_above() { [ "$(log_count "$1")" -gt "$2" ]; }

start_pod_server() {
    bg_in_ns "$E2E_POD" "$LOGS/pod-http.log" python3 "$E2E_DIR/addr_server.py" 0.0.0.0 "$POD_HTTP_PORT"
    wait_for 10 pod curl -s -o /dev/null --max-time 1 "http://127.0.0.1:$POD_HTTP_PORT/" ||
        die "pod HTTP server did not come up: $(cat "$LOGS/pod-http.log")"
}

# The pod's veth as topology_create made it (deleting the node side took the pod side with it).
recreate_pod_veth() {
    ip -n "$E2E_NODE" link add "$E2E_VETH" address "$E2E_VETH_MAC" type veth \
        peer name eth0 address "$E2E_POD_MAC" netns "$E2E_POD" || return 1
    ip -n "$E2E_NODE" addr add "$E2E_POD_GW/24" dev "$E2E_VETH"
    ip -n "$E2E_NODE" link set "$E2E_VETH" up
    ip -n "$E2E_POD" addr add "$E2E_POD_IP/24" dev eth0
    ip -n "$E2E_POD" link set eth0 up
    ip -n "$E2E_POD" route add default via "$E2E_POD_GW"
}

# ---------------------------------------------------------------------------------------------------
# Cases

start_loader() {
    write_config "$CONFIG"
    loader_start "$CONFIG" "$LOGS/loader.log" --metrics-address "$METRICS_ADDRESS" || return 1
    if ! wait_for 10 service_reachable; then
        E2E_REASON="host cannot reach http://$E2E_SERVICE_IP/ 10 s after the loader started"
        return 1
    fi
}

# a. Both probes answer 200 once the loader serves.
case_probes() {
    http_get /healthz
    if [ "$HTTP_CODE" != 200 ] || [ "$HTTP_BODY" != ok ]; then
        E2E_REASON="/healthz: $HTTP_CODE '$HTTP_BODY', want 200 'ok'"
        return 1
    fi
    http_get /readyz
    if [ "$HTTP_CODE" != 200 ] || [ "$HTTP_BODY" != ok ]; then
        E2E_REASON="/readyz: $HTTP_CODE '$HTTP_BODY', want 200 'ok'"
        return 1
    fi
    http_get /nonexistent
    if [ "$HTTP_CODE" != 404 ]; then
        E2E_REASON="/nonexistent: $HTTP_CODE, want 404"
        return 1
    fi
}

# b. /metrics is the text format 0.0.4, promtool finds nothing to complain about, and the state is right.
case_format() {
    local file=$LOGS/scrape-format.txt
    if ! scrape "$file"; then
        E2E_REASON="/metrics answered $HTTP_CODE"
        return 1
    fi
    if [[ $HTTP_TYPE != "text/plain; version=0.0.4"* ]]; then
        E2E_REASON="Content-Type '$HTTP_TYPE', want text/plain; version=0.0.4"
        return 1
    fi
    local out
    if ! out=$(promtool check metrics <"$file" 2>&1) || [ -n "$out" ]; then
        E2E_REASON="promtool check metrics: $out"
        return 1
    fi
    local want
    for want in 'bpfnet_service_ip_active{service_ip="198.18.0.2"} 1' 'bpfnet_loader_ready 1' \
        'bpfnet_build_info{version="0.1.0"} 1' 'bpfnet_loader_heartbeat_timeout_seconds 5'; do
        if ! grep -qxF "$want" "$file"; then
            E2E_REASON="no line '$want' in $file"
            return 1
        fi
    done
    local age
    age=$(metric "$file" bpfnet_loader_heartbeat_age_seconds)
    if ! awk -v a="$age" 'BEGIN { exit !(a >= 0 && a < 2) }'; then
        E2E_REASON="bpfnet_loader_heartbeat_age_seconds '$age', want 0 <= age < 2 (interval 1 s)"
        return 1
    fi
    log "$(grep -c '^bpfnet_' "$file") samples, $(grep -c '^# TYPE' "$file") families; heartbeat age $age s"
}

# c. One HTTP request from the host through the service IP raises dnat_service; the metric agrees with the
# counters map (read with bpftool just before and after the scrape).
case_dnat_counter() {
    local series='bpfnet_datapath_packets_total{decision="dnat_service"}'
    local before after map_before map_after
    before=$(metric_now "$series") || { E2E_REASON="no $series before"; return 1; }
    local out
    out=$(host curl -sS --max-time 5 "http://$E2E_SERVICE_IP/" 2>&1)
    if [ "$out" != "$E2E_HOST_IP" ]; then
        E2E_REASON="HTTP through the service IP: '$out', want $E2E_HOST_IP"
        return 1
    fi
    map_before=$(counter dnat_service)
    after=$(metric_now "$series") || { E2E_REASON="no $series after"; return 1; }
    map_after=$(counter dnat_service)
    if ! [ "$after" -gt "$before" ]; then
        E2E_REASON="$series did not rise: $before -> $after"
        return 1
    fi
    if ! [ "$map_before" -le "$after" ] || ! [ "$after" -le "$map_after" ]; then
        E2E_REASON="$series = $after, counters map says $map_before..$map_after"
        return 1
    fi
    log "$series: $before -> $after (map: $map_after)"
}

# d. A second MAC claims the service IP with gratuitous ARP from the LAN: the conflict counter rises, the
# MAC shows in bpfnet_conflict_info, the loader logs a warning naming it, and this node stays active.
case_conflict() {
    local before
    before=$(metric_now bpfnet_conflicts_total) || { E2E_REASON="no bpfnet_conflicts_total"; return 1; }
    local logged
    logged=$(log_count "mac=$OTHER_MAC")
    if ! host python3 "$E2E_DIR/arp_announce.py" --count 2 eth0 "$E2E_SERVICE_IP" "$OTHER_MAC"; then
        E2E_REASON="could not send the gratuitous ARP"
        return 1
    fi
    if ! wait_for 3 series_above bpfnet_conflicts_total "$before"; then
        E2E_REASON="bpfnet_conflicts_total stayed at $before"
        return 1
    fi
    local file=$LOGS/scrape-conflict.txt
    scrape "$file" || { E2E_REASON="/metrics answered $HTTP_CODE"; return 1; }
    local want="bpfnet_conflict_info{service_ip=\"$E2E_SERVICE_IP\",mac=\"$OTHER_MAC\"} 1"
    if ! grep -qxF "$want" "$file"; then
        E2E_REASON="no line '$want': $(grep conflict "$file" | grep -v '^#' | tr '\n' ' ')"
        return 1
    fi
    if ! grep -qxF "bpfnet_service_ip_active{service_ip=\"$E2E_SERVICE_IP\"} 1" "$file"; then
        E2E_REASON="the service IP is no longer active on this node after the conflict"
        return 1
    fi
    if ! wait_for 3 log_count_above "mac=$OTHER_MAC" "$logged"; then
        E2E_REASON="no log line naming mac=$OTHER_MAC"
        return 1
    fi
    local line
    line=$(grep -F "mac=$OTHER_MAC" "$LOADER_LOG" | tail -n1)
    if [[ $line != *level=warn* ]] || [[ $line != *conflict* ]] || [[ $line != *"service_ip=$E2E_SERVICE_IP"* ]]; then
        E2E_REASON="the log line is not a conflict warning naming the service IP: $line"
        return 1
    fi
    log "$(metric "$file" bpfnet_conflicts_total) conflicts; ${line#*msg=}"
}

# e. A second loader asked to listen on the same address fails before touching the kernel (exit 1, the
# address named), and the running one keeps answering: no SO_REUSEPORT sharing of the probes.
case_port_in_use() {
    local rc other=$E2E_TMP/conf/other-pins.yaml
    # Another pin root and control socket: the same ones would be refused earlier, by the pin directory's lock
    # (test_cli.sh, case i2). Here only the address is in use.
    sed "s|^pinRoot: .*|pinRoot: $E2E_PIN_ROOT/other|" "$CONFIG" >"$other" &&
        echo "controlSocket: /run/bpfnet/other.sock" >>"$other" || { E2E_REASON="cannot write $other"; return 1; }
    nsenter --net="/run/netns/$E2E_NODE" "$LOADER" --config "$other" --metrics-address "$METRICS_ADDRESS" \
        >"$LOGS/second.out" 2>"$LOGS/second.err" &
    local pid=$!
    E2E_PIDS+=("$pid")
    if ! wait_for 5 pid_gone "$pid"; then
        stop_pid "$pid"
        E2E_REASON="a second loader on $METRICS_ADDRESS kept running"
        return 1
    fi
    stop_pid "$pid"
    rc=$STOPPED_RC
    if [ "$rc" != 1 ] || ! grep -q "cannot listen on $METRICS_ADDRESS" "$LOGS/second.err"; then
        E2E_REASON="second loader: exit $rc, want 1 naming $METRICS_ADDRESS: $(tail -c 300 "$LOGS/second.err")"
        return 1
    fi
    if grep -q 'xdp program on the NIC' "$LOGS/second.err" || [ -e "$E2E_PIN_ROOT/other" ] || [ -e /run/bpfnet/other.sock ]; then
        E2E_REASON="the second loader touched the datapath (or left its pin directory or socket) before failing to listen"
        return 1
    fi
    if ! readyz_is 200; then
        E2E_REASON="the running loader's /readyz: $HTTP_CODE '$HTTP_BODY'"
        return 1
    fi
    log "$(head -n1 "$LOGS/second.err")"
}

# f2. The provisioning NIC loses carrier (its switch port down: here the bridge's end of its veth): the loader
# follows the kernel's link notifications, warns, and is not ready until the carrier returns; bpfnetctl status
# reads the kernel's word itself.
# bpfnetctl status in the node's namespace (nsenter keeps the sandbox's bpffs, which ip netns exec would hide).
node_status() { nsenter --net="/run/netns/$E2E_NODE" "$BPFNETCTL" status 2>&1; }

case_carrier() {
    local port=lan-node checks=""
    ip -n "$(lan_bridge_ns)" link set "$port" down || { E2E_REASON="could not set $port down"; return 1; }
    if ! wait_for 3 readyz_is 503; then
        ip -n "$(lan_bridge_ns)" link set "$port" up
        E2E_REASON="/readyz still $HTTP_CODE '$HTTP_BODY' 3 s after the carrier was lost"
        return 1
    fi
    [[ $HTTP_BODY == *"has no carrier"* ]] || checks+=" /readyz reason '$HTTP_BODY';"
    [ "$(metric_now bpfnet_nic_carrier)" = 0 ] || checks+=" bpfnet_nic_carrier not 0;"
    grep -q 'level=warn msg="the provisioning NIC has no carrier"' "$LOADER_LOG" || checks+=" no warning logged;"
    node_status | grep -q '^carrier *NO' || checks+=" bpfnetctl status does not say NO: $(node_status | head -n 3)"
    ip -n "$(lan_bridge_ns)" link set "$port" up
    wait_for 3 readyz_is 200 || checks+=" /readyz $HTTP_CODE '$HTTP_BODY' 3 s after the carrier returned;"
    [ "$(metric_now bpfnet_nic_carrier)" = 1 ] || checks+=" bpfnet_nic_carrier not 1 again;"
    node_status | grep -q '^carrier *yes' || checks+=" bpfnetctl status does not say yes again;"
    wait_for 5 service_reachable || checks+=" the host cannot reach the pod after the carrier returned;"
    if [ -n "$checks" ]; then
        E2E_REASON="carrier lost and back:$checks"
        return 1
    fi
    log "carrier lost: $(grep -o 'msg="the provisioning NIC has no carrier".*' "$LOADER_LOG" | head -n 1)"
}

# f. The backend's veth disappears and SIGHUP cannot apply the config: /readyz says 503 and why, /healthz
# stays 200 and bpfnet_loader_ready drops to 0. With the veth back, SIGHUP makes it ready again.
case_not_ready() {
    ip -n "$E2E_NODE" link del "$E2E_VETH" || { E2E_REASON="could not delete $E2E_VETH"; return 1; }
    kill -HUP "$LOADER_PID"
    if ! wait_for 3 readyz_is 503; then
        E2E_REASON="/readyz still $HTTP_CODE '$HTTP_BODY' 3 s after SIGHUP without the backend veth"
        return 1
    fi
    local reason=$HTTP_BODY
    if [[ $reason != *backend.veth* ]] || [ "$(printf '%s\n' "$reason" | wc -l)" != 1 ]; then
        E2E_REASON="/readyz reason is not one line naming backend.veth: '$reason'"
        return 1
    fi
    http_get /healthz
    if [ "$HTTP_CODE" != 200 ]; then
        E2E_REASON="/healthz answered $HTTP_CODE while not ready"
        return 1
    fi
    local ready
    ready=$(metric_now bpfnet_loader_ready)
    if [ "$ready" != 0 ]; then
        E2E_REASON="bpfnet_loader_ready '$ready' while /readyz says 503"
        return 1
    fi
    log "not ready: $reason"
    recreate_pod_veth || { E2E_REASON="could not recreate $E2E_VETH"; return 1; }
    kill -HUP "$LOADER_PID"
    if ! wait_for 3 readyz_is 200; then
        E2E_REASON="/readyz $HTTP_CODE '$HTTP_BODY' 3 s after SIGHUP with the veth back"
        return 1
    fi
    if ! wait_for 5 service_reachable; then
        E2E_REASON="ready again, but the host cannot reach the pod through the service IP"
        return 1
    fi
    log "ready again after the veth came back: $(metric_now bpfnet_loader_ready | sed 's/^/bpfnet_loader_ready /')"
}

# g. SIGTERM: the loader exits 0 promptly and the listener is gone.
case_sigterm() {
    local started
    started=$(date +%s.%N)
    loader_stop TERM
    local rc=$STOPPED_RC took
    took=$(since "$started")
    if [ "$rc" != 0 ]; then
        E2E_REASON="exit status $rc after SIGTERM"
        return 1
    fi
    if ! awk -v t="$took" 'BEGIN { exit !(t < 3) }'; then
        E2E_REASON="took $took s to stop"
        return 1
    fi
    http_get /healthz
    if [ "$HTTP_CODE" != 000 ]; then
        E2E_REASON="something still answers on $METRICS_ADDRESS ($HTTP_CODE)"
        return 1
    fi
    log "stopped in $took s"
}

# h. A malformed --metrics-address is a command-line error (exit 2) before anything happens, and
# --metrics-address '' starts no listener.
case_disabled() {
    local rc
    ! loader_running || loader_stop TERM # the set-up's loader holds the interface (and the port)
    run_loader --config "$CONFIG" --metrics-address 127.0.0.1 >/dev/null 2>"$LOGS/badaddr.err"
    rc=$?
    if [ "$rc" != 2 ] || ! grep -q -- '--metrics-address' "$LOGS/badaddr.err"; then
        E2E_REASON="--metrics-address 127.0.0.1: exit $rc, want 2: $(head -c 300 "$LOGS/badaddr.err")"
        return 1
    fi
    loader_start "$CONFIG" "$LOGS/loader-disabled.log" --metrics-address '' || return 1
    local listening
    listening=$(node ss -Htln)
    if [ -n "$listening" ]; then
        E2E_REASON="listening with --metrics-address '': $listening"
        return 1
    fi
    loader_stop TERM
}

# ---------------------------------------------------------------------------------------------------

log "loader: $LOADER"

run_cases

finish
