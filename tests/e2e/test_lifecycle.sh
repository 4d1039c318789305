#!/bin/bash
# End-to-end test of the loader's life cycle around a running datapath: gratuitous ARP when it becomes
# active, a config file edited in place (only what changed is written, open connections survive), an
# invalid config on SIGHUP (rejected, running state kept), the liveness gate after SIGKILL (ARP stops at the
# heartbeat timeout, steering goes on), generic XDP, a backend whose veth disappears and comes back, and an
# upgrade across a change of the map layout.
#
#   usage: test_lifecycle.sh PATH/TO/bpfnet-loader [--case KEY]... | --list   (as root; it sandboxes itself, see lib.sh)
#   env:   XDP_PASS_OBJ  the compiled tests/e2e/xdp_pass.bpf.c (default build/tests/e2e/xdp_pass.bpf.o)
#          E2E_KEEP_TMP  keep the temporary directory (configs, logs) for inspection
#
# Output is TAP-like: one `ok - NAME` / `not ok - NAME: REASON` per case, then `N passed, M failed`.
# The cases run in the order below and share the topology and the loaders, each documenting what it
# starts from: k starts loader A (native XDP), o restarts it over a pin of another layout, h and i change its
# configuration, j kills it, l starts loader B (generic XDP), m removes the pod's veth under it, q makes it again.
# Cases are called through run_cases (the case list), which shellcheck cannot see.
# shellcheck disable=SC2317
set -uo pipefail

# shellcheck source-path=SCRIPTDIR source=lib.sh
source "$(dirname "$(realpath "$0")")/lib.sh"

# The cases, in the order of a full run, with what each starts from (lib.sh, "The case list"): k starts loader
# A, or the loader_a set-up does when k is not run.
e2e_fixture topology topology_create
e2e_fixture servers start_servers topology
e2e_case clean_start_stop case_clean_start_stop "p. a start, serving, SIGTERM and the teardown: no line at warning level (nothing an operator must act on)" servers
e2e_case gratuitous_arp case_gratuitous_arp "k. gratuitous ARP on becoming active fixes a stale host entry" servers
e2e_fixture loader_a loader_a_serving servers
e2e_case layout_change case_layout_change "o. a pin left by a build with another map layout is replaced; the programs use the new map" loader_a
e2e_case config_edit case_config_edit "h. config edit (rename over the file) adds a port, writes only the change, keeps a transfer" loader_a
e2e_case sighup_invalid case_sighup_invalid "i. SIGHUP with an invalid config is rejected and the running state kept; a valid one applies" loader_a
e2e_case liveness_gate case_liveness_gate "j. liveness gate: after SIGKILL, ARP answered until the heartbeat timeout only; steering goes on" loader_a
e2e_case generic_xdp case_generic_xdp "l. generic XDP attaches as xdpgeneric, announces the resumed service IP and steers HTTP" case:liveness_gate
e2e_case backend_gone case_backend_gone "m. backend veth deleted: steering stops at once (warning, not ready, service IP not answered); then SIGHUP: error naming backend.veth, loader keeps running" case:generic_xdp
e2e_case backend_back case_backend_back "q. the pod's veth made again (its pod recreated): steered to and answered again within 2 s, without SIGHUP, and ready" case:backend_gone
e2e_case xdp_auto_fallback case_xdp_auto_fallback "n. xdpMode auto on a device without native XDP runs generic XDP and says why" topology

e2e_start "$@"

# Everything below runs inside the sandbox.

require_tools iperf3 curl python3 bpftool ethtool nsenter tc

CONF_DIR=$E2E_TMP/conf
CONFIG=$CONF_DIR/bpfnet.yaml
POD_HTTP_PORT=8080
NEW_PORT=8081 # the port case h adds (tcp 8081 -> pod 8081)
IPERF_PORT=5201
ARP_PROBE=$E2E_DIR/arp_probe.py

# Short liveness and announcement timings, so that case j sees the gate close within a second and case k
# can count the announcements quickly.
HEARTBEAT_INTERVAL_MS=200
HEARTBEAT_TIMEOUT_MS=1000
GARP_COUNT=3
GARP_INTERVAL_MS=100
timing_yaml() {
    cat <<EOF
heartbeat:
  intervalMs: $HEARTBEAT_INTERVAL_MS
  timeoutMs: $HEARTBEAT_TIMEOUT_MS
gratuitousARP:
  count: $GARP_COUNT
  intervalMs: ${1:-$GARP_INTERVAL_MS}
EOF
}

# ---------------------------------------------------------------------------------------------------
# Helpers

start_servers() {
    bg_in_ns "$E2E_POD" "$LOGS/pod-http.log" python3 "$E2E_DIR/addr_server.py" 0.0.0.0 "$POD_HTTP_PORT"
    bg_in_ns "$E2E_POD" "$LOGS/pod-http-new.log" python3 "$E2E_DIR/addr_server.py" 0.0.0.0 "$NEW_PORT"
    bg_in_ns "$E2E_POD" "$LOGS/pod-iperf3.log" iperf3 --server --port "$IPERF_PORT"
    local port
    for port in "$POD_HTTP_PORT" "$NEW_PORT"; do
        wait_for 10 pod curl -s -o /dev/null --max-time 1 "http://127.0.0.1:$port/" ||
            die "pod HTTP server on $port did not come up: $(cat "$LOGS"/pod-http*.log)"
    done
    wait_for 10 pod_listens "$IPERF_PORT" || die "iperf3 server did not come up: $(cat "$LOGS/pod-iperf3.log")"
    log "servers up: pod http :$POD_HTTP_PORT and :$NEW_PORT, pod iperf3 :$IPERF_PORT"
}

# log_count PATTERN: how many lines of the running loader's log match PATTERN (fixed string).
log_count() { grep -cF -- "$1" "$LOADER_LOG"; }

# log_count_above PATTERN N: more than N lines match.
log_count_above() { [ "$(log_count "$1")" -gt "$2" ]; }

# The last "maps reconciled" line's writes= and removals= fields, as "writes=W removals=R".
last_reconcile() {
    grep -F 'maps reconciled' "$LOADER_LOG" | tail -n1 | grep -oE '(writes|removals)=[0-9]+' | tr '\n' ' ' |
        sed 's/ $//'
}

# http_from_host PORT [MAX_SECONDS]: the body of http://SERVICE_IP:PORT/ as the host sees it (the address the pod saw).
http_from_host() { host curl -s --max-time "${2:-1}" "http://$E2E_SERVICE_IP:$1/"; }

new_port_answers() { [ "$(http_from_host "$NEW_PORT")" = "$E2E_HOST_IP" ]; }


# service_ip_unanswered: one who-has for the service IP from the host goes unanswered (arp_probe.py exits 1).
service_ip_unanswered() {
    host python3 "$ARP_PROBE" eth0 "$E2E_SERVICE_IP" >/dev/null
    [ $? = 1 ]
}

# The loader's /readyz (its metrics address, the default, in the node's namespace): the body, and whether it
# says ready (200).
readyz_body() { ip netns exec "$E2E_NODE" curl -s --max-time 2 http://127.0.0.1:9394/readyz; }
readyz_ok() { ip netns exec "$E2E_NODE" curl -sf -o /dev/null --max-time 2 http://127.0.0.1:9394/readyz; }

host_neigh() { ip -n "$E2E_HOST" neigh show "$E2E_SERVICE_IP" dev eth0; }
host_neigh_is_nic() { [[ $(host_neigh) == *"lladdr $E2E_NIC_MAC "* ]]; }

# CLOCK_MONOTONIC now, in seconds: the clock of the heartbeat and of arp_probe.py's timestamps.
mono_now() { python3 -c 'import time; print("%.6f" % time.monotonic())'; }

# The loader's last heartbeat (CLOCK_MONOTONIC ns) from the pinned heartbeat map.
heartbeat_ns() {
    bpftool -j map lookup pinned "$E2E_PIN_DIR/heartbeat" key 0 0 0 0 2>/dev/null | python3 -c '
import json, sys
r = json.load(sys.stdin)
v = r.get("formatted", r)["value"]
if isinstance(v, dict):
    print(int(v["monotonic_ns"]))
else:  # raw bytes, host (little endian) order
    print(int.from_bytes(bytes(int(b, 16) for b in v), "little"))
'
}

loader_running() { [ -n "$LOADER_PID" ] && pid_alive "$LOADER_PID"; }

# ---------------------------------------------------------------------------------------------------
# Cases

# k. Becoming active, the loader announces the service IP (RFC 5227 style, sender = target = service IP), and
# the announcements alone fix a host's stale neighbour entry: the host sends no ARP request of its own (an
# AF_PACKET capture in the host's namespace sees both directions), and its entry shows the NIC's MAC within
# 0.5 s of the loader serving, long before it would probe by itself (it has no traffic for the IP at all).
start_loader_a() {
    write_config "$CONFIG" "$(timing_yaml)"
    loader_start "$CONFIG" "$LOGS/loader-a.log"
}

# p. A normal life logs no warning: a warning asks an operator to act, and a start, a stop (an upgrade's) and a
# teardown ask nothing. Libraries' expected failures (libxdp's dispatcher attempt, a qdisc that is not there)
# are the loader's to word, at info or debug.
case_clean_start_stop() {
    local log=$LOGS/clean-start.log out warnings
    write_config "$CONFIG" "$(timing_yaml)"
    loader_start "$CONFIG" "$log" || return 1
    wait_for 10 grep -q 'serving' "$log" || { E2E_REASON="the loader did not serve: $(tail -n 3 "$log" | tr '\n' ' ')"; return 1; }
    loader_stop TERM
    out=$(run_loader --config "$CONFIG" --teardown 2>&1) || { E2E_REASON="teardown: $out"; return 1; }
    warnings=$( (grep -h 'level=warn' "$log"; echo "$out" | grep 'level=warn') | cut -c1-200)
    if [ -n "$warnings" ]; then
        E2E_REASON="warnings in a normal life: $(echo "$warnings" | tr '\n' '|')"
        return 1
    fi
    log "start, serve, SIGTERM, teardown: $(grep -c . "$log") log lines, $(echo "$out" | grep -c .) from the teardown, none a warning"
}

# The state the cases after k start from: loader A serving (started by k, or here when k is not run).
loader_a_serving() {
    if ! case_ran gratuitous_arp; then
        start_loader_a || { E2E_REASON="loader A: $E2E_REASON"; return 1; }
    fi
    if ! loader_running; then
        log "loader A is not running; the remaining cases need it"
        finish
    fi
}

# announcements_seen LOG N: arp_probe.py's LOG holds at least N announcements from the node's NIC.
announcements_seen() {
    [ "$(grep -c " in announce sha=$E2E_NIC_MAC spa=$E2E_SERVICE_IP tpa=$E2E_SERVICE_IP" "$1")" -ge "$2" ]
}

case_gratuitous_arp() {
    local bogus=02:00:00:00:00:99
    ip -n "$E2E_HOST" neigh replace "$E2E_SERVICE_IP" lladdr "$bogus" dev eth0 nud stale
    if [[ $(host_neigh) != *"lladdr $bogus "* ]]; then
        E2E_REASON="could not plant the stale entry: $(host_neigh)"
        return 1
    fi
    local watch_log=$LOGS/arp-watch.log
    # Longer than any loader start (a sanitized one under load took 3.9 s), also under emulation
    # (E2E_TIME_SCALE); stopped once the announcements are over.
    bg_in_ns "$E2E_HOST" "$watch_log" python3 "$ARP_PROBE" --watch $((30 * ${E2E_TIME_SCALE:-1})) eth0 "$E2E_SERVICE_IP"
    local watch_pid=$BG_PID
    if ! wait_for 5 grep -q '^listening' "$watch_log"; then
        E2E_REASON="the ARP capture did not start: $(head -c 300 "$watch_log")"
        return 1
    fi

    start_loader_a || return 1
    local serving_at
    serving_at=$(date +%s.%N)
    if ! wait_for 0.5 host_neigh_is_nic; then
        E2E_REASON="0.5 s after the loader served, the host's entry is still '$(host_neigh)'"
        return 1
    fi
    log "host entry fixed $(since "$serving_at") s after 'serving': $(host_neigh)"

    # All announcements (count x interval from 'serving'), then twice their span more for any extra one.
    wait_for 5 announcements_seen "$watch_log" "$GARP_COUNT"
    sleep "$(awk -v n="$GARP_COUNT" -v ms="$GARP_INTERVAL_MS" 'BEGIN { print 2 * n * ms / 1000 }')"
    stop_pid "$watch_pid"
    local announcements host_requests others
    announcements=$(grep -c " in announce sha=$E2E_NIC_MAC spa=$E2E_SERVICE_IP tpa=$E2E_SERVICE_IP" "$watch_log")
    host_requests=$(grep -c " out request " "$watch_log")
    others=$(grep -vc -e '^listening' -e " in announce sha=$E2E_NIC_MAC " "$watch_log")
    if [ "$host_requests" != 0 ]; then
        E2E_REASON="the host sent $host_requests ARP request(s) for the service IP itself: $(grep ' out request ' "$watch_log" | head -n2)"
        return 1
    fi
    if [ "$announcements" != "$GARP_COUNT" ]; then
        E2E_REASON="$announcements announcements from $E2E_NIC_MAC seen, want gratuitousARP.count = $GARP_COUNT ($(tr '\n' '|' <"$watch_log"))"
        return 1
    fi
    if [ "$others" != 0 ]; then
        E2E_REASON="unexpected ARP frames about the service IP: $(grep -v -e '^listening' -e " in announce sha=$E2E_NIC_MAC " "$watch_log" | head -n3 | tr '\n' '|')"
        return 1
    fi
    local first last
    first=$(grep ' in announce ' "$watch_log" | head -n1 | cut -d' ' -f1)
    last=$(grep ' in announce ' "$watch_log" | tail -n1 | cut -d' ' -f1)
    log "$announcements announcements over $(awk -v a="$first" -v b="$last" 'BEGIN { printf "%.3f", b - a }') s, no ARP request from the host"
    if ! wait_for 5 service_reachable; then
        E2E_REASON="the host cannot reach http://$E2E_SERVICE_IP/ after the announcements (neigh: $(host_neigh))"
        return 1
    fi
}

# h. The file is edited the way editors and ConfigMaps do it (a new file renamed over the old one): a new
# port becomes reachable without a restart, the reconcile writes exactly the two new entries (services and
# backend_ports) and removes nothing, and a transfer open across the change completes.
case_config_edit() {
    port_dropped "$NEW_PORT" || return 1
    log "before the edit: port $NEW_PORT dropped ($DROPPED_DETAIL)"

    local json=$LOGS/iperf-edit.json
    host iperf3 --client "$E2E_SERVICE_IP" --port "$IPERF_PORT" --time 4 --connect-timeout 3000 --json \
        >"$json" 2>"$LOGS/iperf-edit.err" &
    local iperf_pid=$!
    E2E_PIDS+=("$iperf_pid")
    sleep 1
    if pid_gone "$iperf_pid"; then
        wait "$iperf_pid"
        E2E_REASON="iperf3 ended before the edit (exit $?): $(head -c 300 "$LOGS/iperf-edit.err")"
        return 1
    fi

    local reconciled reloaded edited_at
    reconciled=$(log_count 'maps reconciled')
    reloaded=$(log_count 'config reloaded')
    write_config --port "new-http:tcp:$NEW_PORT:$NEW_PORT" "$CONF_DIR/.bpfnet.yaml.new" "$(timing_yaml)"
    edited_at=$(date +%s.%N)
    replace_file "$CONF_DIR/.bpfnet.yaml.new" "$CONFIG"
    if ! wait_for 5 log_count_above 'config reloaded' "$reloaded"; then
        E2E_REASON="the loader did not log 'config reloaded' within 5 s of the edit"
        return 1
    fi
    local count fields
    count=$(log_count 'maps reconciled')
    fields=$(last_reconcile)
    if [ "$count" != $((reconciled + 1)) ]; then
        E2E_REASON="the edit produced $((count - reconciled)) 'maps reconciled' lines, want 1"
        return 1
    fi
    if [ "$fields" != "writes=2 removals=0" ]; then
        E2E_REASON="the reload reconciled '$fields', want 'writes=2 removals=0' (one services + one backend_ports entry)"
        return 1
    fi
    if ! wait_for 3 new_port_answers; then
        E2E_REASON="port $NEW_PORT does not answer 3 s after the reload: '$(http_from_host "$NEW_PORT" 2>&1)'"
        return 1
    fi
    log "port $NEW_PORT answers $(since "$edited_at") s after the edit; reload: $fields"

    if ! wait_for 10 pid_gone "$iperf_pid"; then
        E2E_REASON="iperf3 still running 10 s after the edit"
        return 1
    fi
    wait "$iperf_pid"
    local rc=$?
    if [ "$rc" != 0 ] || ! iperf_check "$json" "across the edit"; then
        E2E_REASON="iperf3 across the edit: exit $rc; ${IPERF_SUMMARY:-$(head -c 300 "$LOGS/iperf-edit.err")}"
        return 1
    fi
    log "$IPERF_SUMMARY"
}

# i. SIGHUP with an invalid file: "config rejected", the loader keeps running with the running state (the
# service and the port added in h still answer); a valid file and SIGHUP again are applied. The loader
# also watches its config's directory, so to see what SIGHUP alone does, the config path is first made a
# symlink into a directory the loader does not watch: edits there reach it only through SIGHUP.
case_sighup_invalid() {
    local hup_dir=$E2E_TMP/hup
    mkdir -p "$hup_dir"
    # The switch to the symlink is seen through the watched directory; a harmless difference (the
    # announcement interval) makes it show in the log, so nothing below races with it.
    local reloaded
    reloaded=$(log_count 'config reloaded')
    write_config --port "new-http:tcp:$NEW_PORT:$NEW_PORT" "$hup_dir/bpfnet.yaml" "$(timing_yaml 110)"
    ln -s "$hup_dir/bpfnet.yaml" "$CONF_DIR/.bpfnet.yaml.link"
    replace_file "$CONF_DIR/.bpfnet.yaml.link" "$CONFIG"
    if ! wait_for 5 log_count_above 'config reloaded' "$reloaded"; then
        E2E_REASON="switching the config path to a symlink was not picked up"
        return 1
    fi

    # An out-of-range port (ports[1] is iperf's), renamed into place in the unwatched directory.
    local rejected
    rejected=$(log_count 'config rejected')
    write_config --port "new-http:tcp:$NEW_PORT:$NEW_PORT" "$hup_dir/.new" "$(timing_yaml 110)"
    sed -i "s/port: $IPERF_PORT\$/port: 70000/" "$hup_dir/.new"
    replace_file "$hup_dir/.new" "$hup_dir/bpfnet.yaml"
    sleep 0.3
    if log_count_above 'config rejected' "$rejected"; then
        E2E_REASON="the loader saw the edit in the unwatched directory by itself; cannot tell what SIGHUP does"
        return 1
    fi
    kill -HUP "$LOADER_PID"
    if ! wait_for 3 log_count_above 'config rejected' "$rejected"; then
        E2E_REASON="no 'config rejected' within 3 s of SIGHUP with an invalid file"
        return 1
    fi
    local line
    line=$(grep -F 'config rejected' "$LOADER_LOG" | tail -n1)
    if [[ $line != *'ports[1].port'* ]]; then
        E2E_REASON="the rejection does not name ports[1].port: $line"
        return 1
    fi
    sleep 0.5
    if ! loader_running; then
        E2E_REASON="the loader died after rejecting the file"
        return 1
    fi
    if ! service_reachable || ! new_port_answers; then
        E2E_REASON="after the rejection the service (80, $NEW_PORT) no longer answers as before"
        return 1
    fi
    log "rejected and still serving: ${line#*msg=}"

    # A valid file that drops the port h added, then SIGHUP: applied, with only its two entries removed.
    local reconciled
    reloaded=$(log_count 'config reloaded')
    reconciled=$(log_count 'maps reconciled')
    write_config "$hup_dir/.new" "$(timing_yaml 110)"
    replace_file "$hup_dir/.new" "$hup_dir/bpfnet.yaml"
    kill -HUP "$LOADER_PID"
    if ! wait_for 3 log_count_above 'config reloaded' "$reloaded"; then
        E2E_REASON="a valid file was not applied within 3 s of SIGHUP"
        return 1
    fi
    local fields
    fields=$(last_reconcile)
    if [ "$(log_count 'maps reconciled')" != $((reconciled + 1)) ] || [ "$fields" != "writes=0 removals=2" ]; then
        E2E_REASON="the valid file reconciled '$fields', want 'writes=0 removals=2'"
        return 1
    fi
    port_dropped "$NEW_PORT" || return 1
    if ! service_reachable; then
        E2E_REASON="the service does not answer after the valid reload"
        return 1
    fi
    log "valid file applied on SIGHUP: $fields; port $NEW_PORT dropped again ($DROPPED_DETAIL)"
}

# j. The liveness gate. The loader is killed with SIGKILL (no chance to clean up). ARP probes from the host,
# every 0.1 s from before the kill, must be answered while the last heartbeat is younger than timeoutMs and
# unanswered once it is older (0.15 s of tolerance either side of the boundary). Meanwhile a host that still
# holds the service IP's MAC in its ARP cache (resolved just before the kill) keeps reaching the pod:
# steering does not depend on the loader.
case_liveness_gate() {
    local out
    if ! out=$(host python3 "$ARP_PROBE" eth0 "$E2E_SERVICE_IP"); then
        E2E_REASON="the service IP is not answered while the loader runs: $out"
        return 1
    fi
    # The host resolves the service IP as any host does (its ARP, answered), so its cache holds the MAC,
    # REACHABLE for at least 15 s (base_reachable_time / 2): longer than this case runs.
    if ! service_reachable; then
        E2E_REASON="the service does not answer before the kill"
        return 1
    fi
    local stale_before
    stale_before=$(counter arp_stale_heartbeat)
    is_number "$stale_before" || { E2E_REASON="cannot read counters from $E2E_PIN_DIR/counters"; return 1; }

    local probe_log=$LOGS/arp-liveness.log
    # 3 s of probes, longer under emulation (E2E_TIME_SCALE), where the kill and the heartbeat's read after the
    # train started can take longer than the heartbeat timeout: the train must outlast both by a second or more.
    bg_in_ns "$E2E_HOST" "$probe_log" python3 "$ARP_PROBE" --every 0.1 --count $((30 * ${E2E_TIME_SCALE:-1})) \
        eth0 "$E2E_SERVICE_IP"
    local probe_pid=$BG_PID
    if ! wait_for 3 grep -q ' answered ' "$probe_log"; then
        E2E_REASON="the probe train got no answer before the kill: $(head -n3 "$probe_log" | tr '\n' '|')"
        return 1
    fi
    local kill_at
    kill_at=$(mono_now)
    # bash reports a background job killed by a signal on stderr ("Killed"): expected here.
    { loader_stop KILL; } 2>/dev/null
    if [ "$STOPPED_RC" != 137 ]; then
        E2E_REASON="the loader exited with $STOPPED_RC, want 137 (SIGKILL)"
        return 1
    fi
    local hb_ns
    hb_ns=$(heartbeat_ns)
    is_number "$hb_ns" || { E2E_REASON="cannot read the heartbeat map"; return 1; }

    if ! wait_for 6 pid_gone "$probe_pid"; then
        E2E_REASON="the probe train did not finish"
        return 1
    fi
    stop_pid "$probe_pid"
    # Steering after the gate closed (the train ran 3 s or more, well past the timeout).
    out=$(host curl -sS --max-time 5 "http://$E2E_SERVICE_IP/" 2>&1)
    local rc=$?
    if [ "$rc" != 0 ] || [ "$out" != "$E2E_HOST_IP" ]; then
        E2E_REASON="HTTP through the cached MAC after the timeout: curl exit $rc, '$out' (want $E2E_HOST_IP)"
        return 1
    fi

    local verdict
    verdict=$(awk -v kill="$kill_at" -v hb="$hb_ns" -v timeout="$HEARTBEAT_TIMEOUT_MS" '
        BEGIN { hb /= 1e9; timeout /= 1000; margin = 0.15 }
        {
            age = $1 - hb
            if ($1 > kill + 0.05 && age < timeout - margin) {
                alive++
                if ($2 != "answered") bad = bad sprintf(" silent at heartbeat age %.2f s;", age)
            } else if (age > timeout + margin) {
                dead++
                if ($2 != "silent") bad = bad sprintf(" answered at heartbeat age %.2f s;", age)
            }
            if ($2 == "answered") last_answered = age
            else if (first_silent == "" && $1 > kill) first_silent = age
        }
        END {
            if (bad != "") { print "FAIL" bad; exit }
            if (alive < 1) { print "FAIL no probe landed between the kill and the timeout"; exit }
            if (dead < 3) { print "FAIL only " dead + 0 " probes after the timeout"; exit }
            printf "OK %d probes answered after the kill (last at heartbeat age %.2f s), %d silent after the timeout (first at %.2f s)\n",
                alive, last_answered, dead, first_silent
        }' "$probe_log")
    if [[ $verdict != OK* ]]; then
        E2E_REASON="${verdict#FAIL } (timeout ${HEARTBEAT_TIMEOUT_MS} ms; probes: $(tr '\n' '|' <"$probe_log"))"
        return 1
    fi
    local stale_after
    stale_after=$(counter arp_stale_heartbeat)
    if ! is_number "$stale_after" || [ "$stale_after" -le "$stale_before" ]; then
        E2E_REASON="probes went unanswered but arp_stale_heartbeat did not move ($stale_before -> $stale_after)"
        return 1
    fi
    log "${verdict#OK }; arp_stale_heartbeat $stale_before -> $stale_after; HTTP still steered"
}

# l. Generic XDP: a loader started with xdpMode generic (over the datapath loader A left in native mode)
# moves the program to the skb path, says so, answers ARP and steers HTTP as in test_steering case a.
loader_announced() { [ "$(grep -c 'gratuitous ARP sent' "$LOADER_LOG")" -ge "$1" ]; }

case_generic_xdp() {
    # From: a datapath whose loader was killed, heartbeat stale (case j, its need in the case list).
    local config=$CONF_DIR/generic.yaml
    write_config --xdp-mode generic "$config" "$(timing_yaml)"
    loader_start "$config" "$LOGS/loader-b.log" || return 1
    local link
    link=$(ip -n "$E2E_NODE" link show "$E2E_NIC")
    if [[ $link != *xdpgeneric* ]] || [[ $link == *"xdp/id:"* ]]; then
        E2E_REASON="$E2E_NIC does not carry (only) a generic XDP program: $(echo "$link" | head -n1)"
        return 1
    fi
    local attach
    attach=$(grep -F 'xdp program on the NIC' "$LOADER_LOG")
    if [[ $attach != *'attach="generic '* ]]; then
        E2E_REASON="the loader log does not name the generic attach mode: $attach"
        return 1
    fi
    # j left the datapath with a stale heartbeat: it had stopped answering ARP, so this loader resumes and
    # must announce the service IP even though the pinned maps already mark it active.
    local announced
    if ! wait_for 3 loader_announced "$GARP_COUNT"; then
        announced=$(grep -c 'gratuitous ARP sent' "$LOADER_LOG")
        E2E_REASON="a loader resuming a stale datapath sent $announced gratuitous ARPs, want $GARP_COUNT"
        return 1
    fi
    # The host lost its entry in j: this resolves the service IP through generic XDP's ARP answer.
    if ! wait_for 5 service_reachable; then
        E2E_REASON="the host cannot reach http://$E2E_SERVICE_IP/ (neigh: $(host_neigh))"
        return 1
    fi
    local out rc
    out=$(host curl -sS --max-time 5 "http://$E2E_SERVICE_IP/" 2>&1)
    rc=$?
    if [ "$rc" != 0 ] || [ "$out" != "$E2E_HOST_IP" ]; then
        E2E_REASON="curl exit $rc, pod saw client '$out', want $E2E_HOST_IP"
        return 1
    fi
    log "${attach#*msg=}"
}

# m. The backend disappears (its veth is deleted under the running loader): at the kernel's notification the
# loader warns, stops steering (the service IP is not answered: no pod behind it) and is not ready; then
# SIGHUP: the loader logs an error naming backend.veth and keeps running (its heartbeat goes on).
case_backend_gone() {
    if ! loader_running; then
        E2E_REASON="no loader running (case l did not start one)"
        return 1
    fi
    local errors lost
    errors=$(log_count 'backend.veth')
    lost=$(log_count "the backend's veth is down or gone")
    ip -n "$E2E_NODE" link del "$E2E_VETH" || { E2E_REASON="could not delete $E2E_VETH"; return 1; }
    if ! wait_for 2 log_count_above "the backend's veth is down or gone" "$lost"; then
        E2E_REASON="no warning that the backend's veth is gone within 2 s of its deletion"
        return 1
    fi
    if ! wait_for 2 service_ip_unanswered; then
        E2E_REASON="the service IP is still answered 2 s after its only backend's veth went"
        return 1
    fi
    if readyz_ok; then
        E2E_REASON="/readyz still says ready with the backend gone"
        return 1
    fi
    log "backend gone: $(grep -F "the backend's veth is down or gone" "$LOADER_LOG" | tail -n1 | sed 's/.*msg=//')"
    kill -HUP "$LOADER_PID"
    if ! wait_for 3 log_count_above 'backend.veth' "$errors"; then
        sleep 0.5
        if ! loader_running; then
            wait "$LOADER_PID"
            E2E_REASON="the loader died (status $?) after SIGHUP without its backend"
        else
            E2E_REASON="no log line naming backend.veth within 3 s of SIGHUP"
        fi
        return 1
    fi
    local line
    line=$(grep -F 'backend.veth' "$LOADER_LOG" | tail -n1)
    if [[ $line != *level=error* ]]; then
        E2E_REASON="the line naming backend.veth is not an error: $line"
        return 1
    fi
    local hb1 hb2
    hb1=$(heartbeat_ns)
    sleep 0.5 # more than two heartbeat intervals
    hb2=$(heartbeat_ns)
    if ! loader_running; then
        wait "$LOADER_PID"
        E2E_REASON="the loader exited (status $?) after logging: $line"
        return 1
    fi
    if ! is_number "$hb1" || ! is_number "$hb2" || [ "$hb2" -le "$hb1" ]; then
        E2E_REASON="the loader is alive but its heartbeat stopped ($hb1 -> $hb2)"
        return 1
    fi
    log "still running, heartbeat advancing: ${line#*msg=}"
}

# q. The pod's veth is made again, as a pod recreated with its address gets one: the loader finds it (it
# looks each second while the backend is gone), steers to it, answers the service IP and is ready again,
# without a SIGHUP (the one case m sent failed: the file is applied again now).
case_backend_back() {
    local back
    back=$(log_count 'the backend is back')
    pod_link_create || { E2E_REASON="could not make the pod's veth again"; return 1; }
    local t0
    t0=$(date +%s.%N)
    if ! wait_for 3 log_count_above 'the backend is back' "$back"; then
        E2E_REASON="the loader did not find the backend's new veth within 3 s"
        return 1
    fi
    if ! wait_for 3 service_reachable; then
        E2E_REASON="the host cannot reach http://$E2E_SERVICE_IP/ through the new veth (neigh: $(host_neigh))"
        return 1
    fi
    local took
    took=$(since "$t0")
    if ! wait_for 2 readyz_ok; then
        E2E_REASON="/readyz is not ready again with the backend back: $(readyz_body)"
        return 1
    fi
    log "backend back after ${took} s: $(grep -F 'the backend is back' "$LOADER_LOG" | tail -n1 | sed 's/.*msg=//')"
}

# n. xdpMode auto (the default) on a device whose driver has no native XDP (loopback): the loader logs the
# driver's refusal (at info: an expected fallback, as on every VLAN sub-interface), runs generic XDP instead
# and serves; its teardown leaves the device clean.
case_xdp_auto_fallback() {
    local config=$CONF_DIR/loopback.yaml log=$LOGS/loader-loopback.log pid
    printf '%s\n' "interface: lo" "serviceIP: $E2E_SERVICE_IP" "subnet: $E2E_SUBNET" "pinRoot: $E2E_PIN_ROOT" \
        "ports:" "  - name: http" "    protocol: tcp" "    port: 80" >"$config"
    nsenter --net="/run/netns/$E2E_NODE" "$LOADER" --config "$config" --metrics-address '' >"$log" 2>&1 &
    pid=$!
    E2E_PIDS+=("$pid")
    if ! wait_for 10 grep -q 'xdp program on the NIC' "$log"; then
        E2E_REASON="the loader on lo did not attach: $(tail -n 3 "$log")"
        return 1
    fi
    local refused attach link
    refused=$(grep -F 'native XDP refused' "$log")
    attach=$(grep -F 'xdp program on the NIC' "$log")
    link=$(ip -n "$E2E_NODE" link show lo)
    stop_pid "$pid"
    if [[ $refused != *level=info* ]] || [[ $attach != *'attach="generic '* ]] || [[ $link != *xdpgeneric* ]]; then
        E2E_REASON="auto on lo: refusal logged as '$refused', attach '$attach', link: $(echo "$link" | head -n1)"
        return 1
    fi
    local out
    out=$(run_loader --config "$config" --teardown 2>&1) || { E2E_REASON="teardown on lo: $out"; return 1; }
    link=$(ip -n "$E2E_NODE" link show lo)
    [[ $link != *xdp* ]] || { E2E_REASON="XDP left on lo after teardown: $link"; return 1; }
    log "${refused#*msg=}"
}

# o. An upgrade across a change of the map layout: a pin left by a build whose counters table had another size
# cannot be re-used (libbpf refuses the load). The loader replaces that pin (logging it), loads programs that
# use the new map instead of adopting the attached ones (which still use the old map), and serves.
# counters_total PIN: the sum of every counter on every CPU in a pinned per-CPU counters map.
counters_total() {
    bpftool -j map dump pinned "$1" | "$SYSTEM_PYTHON" -c 'import json, sys
total = 0
for e in json.load(sys.stdin):
    for v in e.get("formatted", e).get("values", []):
        val = v["value"]
        total += int.from_bytes(bytes(int(b, 16) for b in val), "little") if isinstance(val, list) else int(val)
print(total)'
}

case_layout_change() {
    # From: loader A serving (started by k, or by the suite when k is not run).
    loader_stop
    local pin=$E2E_PIN_DIR/counters
    rm -f "$pin"
    bpftool map create "$pin" type percpu_array key 4 value 8 entries 3 name counters ||
        { E2E_REASON="cannot pin a counters map of another layout"; return 1; }
    # The operator is told: the pinned contents are lost.
    expect_warnings 'pinned map from another layout replaced'
    start_loader_a || return 1
    grep -q 'pinned map from another layout replaced' "$LOADER_LOG" ||
        { E2E_REASON="no replacement logged: $(grep -m2 -i 'pin\|error' "$LOADER_LOG" | tr '\n' ' ')"; return 1; }
    local entries
    entries=$(bpftool -j map show pinned "$pin" | "$SYSTEM_PYTHON" -c 'import json, sys; print(json.load(sys.stdin)["max_entries"])')
    [ "${entries:-3}" -gt 3 ] || { E2E_REASON="the counters pin still has $entries entries"; return 1; }
    wait_for 5 service_reachable || { E2E_REASON="the host cannot reach http://$E2E_SERVICE_IP/"; return 1; }
    # The programs count into the new map: they were replaced, not adopted with the old one.
    local before after
    before=$(counters_total "$pin")
    host curl -s --max-time 3 -o /dev/null "http://$E2E_SERVICE_IP/"
    after=$(counters_total "$pin")
    [ "$after" -gt "$before" ] || { E2E_REASON="the new counters map does not count ($before -> $after)"; return 1; }
    log "counters pin of another layout replaced ($entries entries now); served, counted ($before -> $after)"
}

# ---------------------------------------------------------------------------------------------------

log "loader: $LOADER"
run_cases
finish
