#!/bin/bash
# End-to-end test of bpfnetctl (docs/cli.md) against a running datapath in the namespace topology: every
# read command in table and JSON form checked against the topology's known values, `stats` deltas after one
# DHCP exchange and one HTTP request matched exactly against what a capture on the host saw, a flow from a
# TFTP transfer, a conflicting MAC, bad arguments and their exit codes (nothing changed), and the backend
# switch through the loader's control socket: `backend clear` drops the service traffic, `backend set` brings
# it back, a loader reload re-applies the config's backend, both refuse without a loader (and as another
# user), and a second loader or a teardown under the running one is refused naming it.
#
#   usage: test_cli.sh PATH/TO/bpfnet-loader [--case KEY]... | --list   (as root; it sandboxes itself, see lib.sh)
#   env:   BPFNETCTL     bpfnetctl to test (default: cli/bpfnetctl next to the loader's build directory)
#          XDP_PASS_OBJ  the compiled tests/e2e/xdp_pass.bpf.c (default build/tests/e2e/xdp_pass.bpf.o)
#          E2E_KEEP_TMP  keep the temporary directory (configs, logs, command outputs) for inspection
#
# Output is TAP-like: one `ok - NAME` / `not ok - NAME: REASON` per case, then `N passed, M failed`. The
# cases share one loader and run in order: the backend cases change its state, the last one removes it.
# Exit 77 (skip) when dnsmasq, udhcpc or tftp is not installed.
# Cases are called through run_cases (the case list), which shellcheck cannot see.
# shellcheck disable=SC2317
set -uo pipefail

# shellcheck source-path=SCRIPTDIR source=lib.sh
source "$(dirname "$(realpath "$0")")/lib.sh"
# shellcheck source-path=SCRIPTDIR source=dhcp.sh
source "$E2E_DIR/dhcp.sh"

# The cases, in the order of a full run, with what each starts from (lib.sh, "The case list"). They share one
# loader: the backend cases change its state, the last one removes it.
e2e_fixture topology topology_create
e2e_fixture servers start_servers topology
e2e_fixture loader start_loader servers
e2e_case status case_status "status: hooks, heartbeat, ownership, backend (table and JSON)" loader
e2e_case services case_services "services (table and JSON)" loader
e2e_case backends case_backends "backends (table and JSON)" loader
e2e_case traffic_stats case_traffic_stats "stats deltas: one DHCP exchange and one HTTP request" loader
e2e_case neighbours case_neighbours "neighbours (table and JSON)" loader
e2e_case flows case_flows "flows: a TFTP transfer's flow, filters" loader
e2e_case stats_watch case_stats_watch "stats --watch: rates, JSON lines" case:traffic_stats
e2e_case trace case_trace "trace: DHCP exchange by client MAC, TFTP request with its file, off again afterwards" loader
e2e_case conflict case_conflict "status shows a conflicting MAC" loader
e2e_case bad_arguments case_bad_arguments "bad arguments: exit codes, one line, nothing changed" loader
e2e_case one_loader_per_interface case_one_loader_per_interface "one loader per interface: a second loader and a teardown are refused naming it" loader
e2e_case backend_clear case_backend_clear "backend clear: HTTP dropped as drop_no_backend" loader
e2e_case backend_set case_backend_set "backend set: HTTP works again; --delivery route, kept by the next set, auto again" case:backend_clear
e2e_case reload_restores case_reload_restores "a loader reload re-applies the config's backend" loader
e2e_case backend_needs_the_loader case_backend_needs_the_loader "backend set/clear refuse without a loader; stale heartbeat" loader
e2e_case teardown case_teardown "no datapath after teardown" loader

loader_argument "$@"
bpfnetctl_argument
if [ "$(id -u)" = 0 ] && ! dhcp_available; then
    echo "e2e: $E2E_REASON; skipped" >&2
    exit 77
fi

sandbox_reexec "$@"

# Everything below runs inside the sandbox.

require_tools curl python3 nsenter setpriv tc ss

CONFIG=$E2E_TMP/conf/bpfnet.yaml
LOGS=$E2E_TMP/logs
OUT=$E2E_TMP/ctl # every bpfnetctl run leaves NAME.out and NAME.err here
POD_HTTP_PORT=8080
POD_DNSMASQ=$E2E_TMP/dnsmasq-pod
DHCP_TFTP_ROOT=$E2E_TMP/tftp
LAN_CAPTURE=$E2E_TMP/lan.jsonl
OTHER_MAC=02:00:00:00:00:99 # the second owner of the service IP in the conflict case
NO_ROUTE_IP=198.19.77.7     # a pod address the node has no route to
mkdir -p "$OUT" "$DHCP_TFTP_ROOT"

# Exit codes of docs/cli.md.
EXIT_USAGE=2
EXIT_NO_DATAPATH=3
EXIT_PERMISSION=4
EXIT_INVALID=5
EXIT_BACKEND_UNAVAILABLE=6
EXIT_NO_LOADER=7

# ---------------------------------------------------------------------------------------------------
# bpfnetctl and its output

# ctl NAME ARGS...: bpfnetctl in the node's network namespace (nsenter keeps the sandbox's bpffs, which
# `ip netns exec` would hide); stdout in $OUT/NAME.out, stderr in $OUT/NAME.err, the exit code in CTL_RC.
CTL_RC=0
ctl() {
    local name=$1
    shift
    nsenter --net="/run/netns/$E2E_NODE" "$BPFNETCTL" "$@" >"$OUT/$name.out" 2>"$OUT/$name.err"
    CTL_RC=$?
}

# ctl_ok NAME ARGS...: ctl, and a failure (with bpfnetctl's message) unless it exited 0.
ctl_ok() {
    ctl "$@"
    if [ "$CTL_RC" != 0 ]; then
        E2E_REASON="bpfnetctl ${*:2} exit $CTL_RC: $(head -c 300 "$OUT/$1.err")"
        return 1
    fi
}

# ctl_fails NAME CODE ARGS...: bpfnetctl exits with CODE, says why in one line on stderr, prints nothing.
ctl_fails() {
    local name=$1 code=$2
    shift 2
    ctl "$name" "$@"
    if [ "$CTL_RC" != "$code" ]; then
        E2E_REASON="bpfnetctl $* exit $CTL_RC, want $code (stderr: $(head -c 300 "$OUT/$name.err"))"
        return 1
    fi
    if [ "$(wc -l <"$OUT/$name.err")" != 1 ] || [[ $(cat "$OUT/$name.err") != bpfnetctl:* ]] ||
        [ -s "$OUT/$name.out" ]; then
        E2E_REASON="bpfnetctl $*: want one 'bpfnetctl: ...' line on stderr and nothing on stdout, got"
        E2E_REASON+=" stderr '$(head -c 300 "$OUT/$name.err")' stdout '$(head -c 100 "$OUT/$name.out")'"
        return 1
    fi
}

# json_expect NAME EXPR: EXPR, a Python expression over the document `d` in $OUT/NAME.out, holds.
json_expect() {
    local name=$1 expr=$2 err
    if ! err=$(python3 -c '
import json, sys
d = json.load(open(sys.argv[1]))
sys.exit(0 if eval("(" + sys.argv[2] + ")") else 1)' "$OUT/$name.out" "$expr" 2>&1); then
        E2E_REASON="$name: not ($expr) in $(head -c 600 "$OUT/$name.out") ${err}"
        return 1
    fi
}

# json_expect_lines NAME CODE: $OUT/NAME.out holds JSON lines; CODE (Python statements over `lines`) sets ok.
json_expect_lines() {
    local name=$1 code=$2 err
    if ! err=$(python3 -c '
import json, sys
lines = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
scope = {"lines": lines}
exec(sys.argv[2], scope)
sys.exit(0 if scope.get("ok") else 1)' "$OUT/$name.out" "$code" 2>&1); then
        E2E_REASON="$name: check failed on $(head -c 900 "$OUT/$name.out" | tr '\n' '|') ${err}"
        return 1
    fi
}

# has_line NAME TEXT: the table output $OUT/NAME.out has a line exactly TEXT.
has_line() {
    if ! grep -qxF -- "$2" "$OUT/$1.out"; then
        E2E_REASON="$1: no line '$2' in: $(head -c 800 "$OUT/$1.out" | tr '\n' '|')"
        return 1
    fi
}

# has_line_matching NAME REGEX: some line of $OUT/NAME.out matches the (extended) REGEX.
has_line_matching() {
    if ! grep -qE -- "$2" "$OUT/$1.out"; then
        E2E_REASON="$1: no line matching '$2' in: $(head -c 800 "$OUT/$1.out" | tr '\n' '|')"
        return 1
    fi
}

node_ifindex() { ip -n "$E2E_NODE" -o link show "$1" | cut -d: -f1; }


# xdp_prog_id IFACE: the id of bpfnet's XDP program on IFACE. Where libxdp's dispatcher loads (found by the
# kernel matrix on Debian's 6.1 and 6.12), the program attached to the link is the dispatcher and bpfnet's is
# one of its components: xdp-loader lists those.
xdp_prog_id() {
    local id name
    read -r id name < <(ip -n "$E2E_NODE" -d -j link show "$1" | python3 -c 'import json, sys
p = json.load(sys.stdin)[0].get("xdp", {}).get("prog", {})
print(p.get("id", 0), p.get("name", "-"))')
    if [ "$name" = xdp_dispatcher ]; then
        id=$(nsenter --net="/run/netns/$E2E_NODE" xdp-loader status "$1" |
            awk '{ for (i = 1; i < NF; i++) if ($i == "xdp_nic") { print $(i + 1); exit } }')
    fi
    echo "$id"
}

http_works() { service_reachable; }

# ---------------------------------------------------------------------------------------------------
# Set-up

start_servers() {
    bg_in_ns "$E2E_POD" "$LOGS/pod-http.log" python3 "$E2E_DIR/addr_server.py" 0.0.0.0 "$POD_HTTP_PORT"
    wait_for 10 pod curl -s -o /dev/null --max-time 1 "http://127.0.0.1:$POD_HTTP_PORT/" ||
        die "pod HTTP server did not come up: $(cat "$LOGS/pod-http.log")"
    echo "boot file for the flows case" >"$DHCP_TFTP_ROOT/$DHCP_BOOT_FILE"
    dnsmasq_start "$E2E_POD" "$POD_DNSMASQ" || die "$E2E_REASON"
    log "servers up: pod http :$POD_HTTP_PORT, dnsmasq DHCP and TFTP"
}

start_loader() {
    write_config --port dhcp:udp:67::dhcp --port tftp:udp:69::tftp "$CONFIG"
    loader_start "$CONFIG" "$LOGS/loader-1.log" || die "$E2E_REASON"
    wait_for 10 http_works || die "host cannot reach http://$E2E_SERVICE_IP/ through the datapath"
}

# ---------------------------------------------------------------------------------------------------
# Cases: the read commands

# a. status: the interface, both NIC hooks (ids as ip and tc see them), a fresh heartbeat, the service IP
# active and answering ARP, the backend with its pod hook and how the loader found its veth (the route to
# the pod names it: a routed CNI), no conflicts.
case_status() {
    local nic_index veth_index xdp_id tc_id pod_id
    nic_index=$(node_ifindex "$E2E_NIC")
    veth_index=$(node_ifindex "$E2E_VETH")
    xdp_id=$(xdp_prog_id "$E2E_NIC")
    tc_hook_of "$E2E_NIC"
    tc_id=$TC_PROG_ID
    local attach=$TC_ATTACH attach_text="clsact filter"
    [ "$attach" = tcx ] && attach_text="tcx link"
    pod_id=$(tc_prog_id "$E2E_VETH")
    ctl_ok status status || return 1
    has_line status "interface     $E2E_NIC (ifindex $nic_index, mac $E2E_NIC_MAC)" || return 1
    has_line status "loader        standalone mode, NIC named $E2E_NIC" || return 1
    has_line status "subnet        $E2E_SUBNET" || return 1
    has_line_matching status "^xdp           xdp_nic \\(id $xdp_id\\), native, (plain attach \\(no dispatcher\\)|via libxdp dispatcher)$" || return 1
    has_line status "tc ingress    tc_nic_ingress (id $tc_id), $attach_text" || return 1
    has_line status "pod delivery  bpf_redirect_peer" || return 1
    has_line status "arp           answered at tc ingress, out of the NIC's egress (every NIC kind)" || return 1
    has_line_matching status '^heartbeat     fresh: [0-9.]+ s ago \(timeout 5\.0 s\)$' || return 1
    has_line status "service IP    $E2E_SERVICE_IP: active (owner), answering ARP" || return 1
    has_line status "dhcp relay    for $E2E_SERVICE_IP" || return 1
    has_line status "backend       $E2E_POD_IP on $E2E_VETH (ifindex $veth_index, found by route), delivered by bpf_redirect_peer, pod hook tc_pod_ingress ($attach)" || return 1
    has_line status "conflicts     none seen" || return 1

    ctl_ok status-json --output json status || return 1
    json_expect status-json "d['interface'] == {'name': '$E2E_NIC', 'ifindex': $nic_index, 'mac': '$E2E_NIC_MAC', 'carrier': True}" || return 1
    json_expect status-json "d['loader'] == {'mode': 'standalone', 'interface': '$E2E_NIC', 'interface_chosen_by': 'name', 'interface_macs': None,
        'backend_veths': [{'ifindex': $veth_index, 'found_by': 'route', 'behind': None, 'delivery': 'redirect_peer'}]}" || return 1
    json_expect status-json "d['subnet'] == '$E2E_SUBNET' and d['dhcp_service_ip'] == '$E2E_SERVICE_IP'" || return 1
    json_expect status-json "d['hooks']['xdp']['attached'] and d['hooks']['xdp']['program'] == 'xdp_nic' and
        d['hooks']['xdp']['program_id'] == $xdp_id and d['hooks']['xdp']['mode'] == 'native' and
        isinstance(d['hooks']['xdp']['dispatcher'], bool)" || return 1
    json_expect status-json "d['hooks']['tc_ingress'] == {'attached': True, 'program': 'tc_nic_ingress', 'program_id': $tc_id, 'attach': '$attach'}" || return 1
    json_expect status-json "d['pod_delivery'] == 'redirect_peer'" || return 1
    json_expect status-json "d['arp_responder'] == 'tc_egress'" || return 1
    json_expect status-json "d['heartbeat']['state'] == 'fresh' and 0 <= d['heartbeat']['age_seconds'] <= 5 and
        d['heartbeat']['timeout_seconds'] == 5.0" || return 1
    json_expect status-json "d['service_ips'] == [{'ip': '$E2E_SERVICE_IP', 'active': True, 'answering_arp': True, 'solicited_node_group': None}]" || return 1
    json_expect status-json "d['shared_addresses'] == []" || return 1
    json_expect status-json "d['backends'] == [{'ip': '$E2E_POD_IP', 'veth': '$E2E_VETH', 'ifindex': $veth_index, 'pod_delivery': 'redirect_peer',
        'pod_hook': {'attached': True, 'program': 'tc_pod_ingress', 'program_id': $pod_id, 'attach': '$attach'}}]" || return 1
    json_expect status-json "d['conflicts'] == {'seen': 0, 'entries': []}" || return 1
    log "xdp id $xdp_id, tc ids $tc_id (nic) $pod_id (veth) as $attach; $(grep heartbeat "$OUT/status.out")"
}

# The ports of the configuration: http 80 -> 8080 and iperf 5201 from write_config, dhcp 67 and tftp 69.
SERVICES_JSON="{'services': [
    {'service_ip': '$E2E_SERVICE_IP', 'shared': False, 'protocol': 'tcp', 'port': 80, 'kind': 'plain', 'backend_ip': '$E2E_POD_IP', 'backend_port': 8080, 'via_node': None},
    {'service_ip': '$E2E_SERVICE_IP', 'shared': False, 'protocol': 'tcp', 'port': 5201, 'kind': 'plain', 'backend_ip': '$E2E_POD_IP', 'backend_port': 5201, 'via_node': None},
    {'service_ip': '$E2E_SERVICE_IP', 'shared': False, 'protocol': 'udp', 'port': 67, 'kind': 'dhcp', 'backend_ip': '$E2E_POD_IP', 'backend_port': 67, 'via_node': None},
    {'service_ip': '$E2E_SERVICE_IP', 'shared': False, 'protocol': 'udp', 'port': 69, 'kind': 'tftp', 'backend_ip': '$E2E_POD_IP', 'backend_port': 69, 'via_node': None}]}"

# b. services: every listed port with its kind and backend endpoint, sorted.
case_services() {
    ctl_ok services services || return 1
    local want
    want=$(printf '%s\n' \
        "SERVICE IP  PROTO  PORT  KIND   BACKEND" \
        "$E2E_SERVICE_IP  tcp    80    plain  $E2E_POD_IP:8080" \
        "$E2E_SERVICE_IP  tcp    5201  plain  $E2E_POD_IP:5201" \
        "$E2E_SERVICE_IP  udp    67    dhcp   $E2E_POD_IP:67" \
        "$E2E_SERVICE_IP  udp    69    tftp   $E2E_POD_IP:69")
    if [ "$(cat "$OUT/services.out")" != "$want" ]; then
        E2E_REASON="services table: $(tr '\n' '|' <"$OUT/services.out"), want $(tr '\n' '|' <<<"$want")"
        return 1
    fi
    ctl_ok services-json services -o json || return 1
    json_expect services-json "d == $SERVICES_JSON" || return 1
}

# c. backends: the pod behind its veth, both MACs, bpf_redirect_peer, the service IP it leaves with.
case_backends() {
    local veth_index
    veth_index=$(node_ifindex "$E2E_VETH")
    ctl_ok backends backends || return 1
    has_line backends "BACKEND IP    VETH     IFINDEX  POD MAC            VETH MAC           POD DELIVERY   EGRESS SERVICE IP" || return 1
    has_line backends "$E2E_POD_IP  $E2E_VETH  $veth_index        $E2E_POD_MAC  $E2E_VETH_MAC  redirect_peer  $E2E_SERVICE_IP" || return 1
    ctl_ok backends-json -o json backends || return 1
    json_expect backends-json "d == {'backends': [{'ip': '$E2E_POD_IP', 'veth': '$E2E_VETH', 'ifindex': $veth_index,
        'pod_mac': '$E2E_POD_MAC', 'veth_mac': '$E2E_VETH_MAC', 'pod_delivery': 'redirect_peer', 'redirect': 'peer', 'egress_service_ip': '$E2E_SERVICE_IP'}]}" || return 1
}

# stats_deltas BEFORE AFTER: "name=delta" for every counter that moved between two `stats -o json`.
stats_deltas() {
    python3 - "$OUT/$1.out" "$OUT/$2.out" <<'EOF'
import json, sys
a, b = (json.load(open(p)) for p in sys.argv[1:3])
for group, prefix in (("paths", ""), ("drops", "drop_")):
    for name, value in b[group].items():
        if group == "drops" and name in b["paths"]:
            continue  # neighbour_miss: a drop, listed under paths too (as before events had a group)
        if value != a[group][name]:
            print("%s%s=%d" % (prefix, name, value - a[group][name]))
EOF
}

# capture_counts SINCE: what the host's eth0 saw since SINCE, as shell assignments: DHCP requests it sent
# and replies it got (with their message types), TCP frames to and from service IP:80.
capture_counts() {
    python3 - "$LAN_CAPTURE" "$1" "$E2E_SERVICE_IP" <<'EOF'
import json, sys
path, since, service = sys.argv[1], float(sys.argv[2]), sys.argv[3]
recs = [json.loads(l) for l in open(path) if l.startswith("{\"t\"")]
recs = [r for r in recs if r["t"] >= since]
req = [r for r in recs if r["dir"] == "out" and r.get("dport") == 67]
rep = [r for r in recs if r["dir"] != "out" and r.get("dport") == 68]
tcp_in = [r for r in recs if r["dir"] == "out" and r.get("proto") == 6 and r.get("ip_dst") == service]
tcp_out = [r for r in recs if r["dir"] != "out" and r.get("proto") == 6 and r.get("ip_src") == service]
types = lambda rs: ",".join(r.get("dhcp", {}).get("type", "?") for r in rs)
print("CAP_REQ=%d CAP_REP=%d CAP_REQ_TYPES=%s CAP_REP_TYPES=%s CAP_TCP_IN=%d CAP_TCP_OUT=%d" % (
    len(req), len(rep), types(req), types(rep), len(tcp_in), len(tcp_out)))
EOF
}

# d. One DHCP exchange (udhcpc through the relay) and one HTTP request: `stats -o json` moves by exactly
# what the host's capture saw: each request relayed and each reply delivered once, each TCP frame to
# service IP:80 DNATed and each frame back SNATed once; no flow, no drop, no miss.
case_traffic_stats() {
    capture_start "$E2E_HOST" eth0 "$LAN_CAPTURE" || return 1
    local t0
    t0=$(date +%s.%N)
    ctl_ok stats-before stats -o json || return 1
    udhcpc_lease "$E2E_HOST" eth0 "$E2E_TMP/udhcpc.events" || return 1
    local body
    body=$(host curl -sS --max-time 5 "http://$E2E_SERVICE_IP/" 2>&1)
    if [ "$body" != "$E2E_HOST_IP" ]; then
        capture_stop
        E2E_REASON="HTTP through the service IP answered '$body', want $E2E_HOST_IP"
        return 1
    fi
    sleep 0.5 # the last ACKs of the connection
    ctl_ok stats-after --output json stats || return 1
    capture_stop
    local CAP_REQ CAP_REP CAP_REQ_TYPES CAP_REP_TYPES CAP_TCP_IN CAP_TCP_OUT
    eval "$(capture_counts "$t0")"
    if [ "$CAP_REQ_TYPES" != DISCOVER,REQUEST ] || [ "$CAP_REP_TYPES" != OFFER,ACK ]; then
        E2E_REASON="the host sent $CAP_REQ_TYPES and got $CAP_REP_TYPES; want DISCOVER,REQUEST and OFFER,ACK"
        return 1
    fi
    local deltas want
    deltas=$(stats_deltas stats-before stats-after | tr '\n' ' ')
    log "host sent $CAP_REQ_TYPES, got $CAP_REP_TYPES, TCP frames $CAP_TCP_IN in / $CAP_TCP_OUT out; deltas: $deltas"
    for want in "dhcp_request_relayed=$CAP_REQ" "dhcp_reply_relayed=$CAP_REP" "dnat_service=$CAP_TCP_IN" \
        "snat_reply=$CAP_TCP_OUT"; do
        if [[ " $deltas " != *" $want "* ]]; then
            E2E_REASON="stats deltas '$deltas' lack $want"
            return 1
        fi
    done
    # Nothing else the datapath decides about this traffic moved: no flow, no drop, no miss, no conflict.
    local moved
    for moved in $deltas; do
        case ${moved%%=*} in
        dnat_flow | snat_flow | flow_created | neighbour_miss | event_lost | arp_conflict | drop_*)
            E2E_REASON="$moved moved (deltas: $deltas)"
            return 1
            ;;
        esac
    done
}

# e. neighbours: the host, with its MAC, learned from its ARP and confirmed by its service traffic.
case_neighbours() {
    host_introduced || return 1
    ctl_ok neighbours neighbours || return 1
    has_line neighbours "IP           MAC                STATE" || return 1
    has_line neighbours "$E2E_HOST_IP  $E2E_HOST_MAC  confirmed" || return 1
    ctl_ok neighbours-json neighbours -o json || return 1
    json_expect neighbours-json "{'ip': '$E2E_HOST_IP', 'mac': '$E2E_HOST_MAC', 'confirmed': True} in d['neighbours'] and
        all(n['ip'].startswith('198.18.0.') for n in d['neighbours'])" || return 1
}

# f. flows: a TFTP read through the service IP; dnsmasq answers from an ephemeral port, which the datapath
# records as a flow host:port <-> service IP:that port -> pod:that port, idle for seconds. Filters by host
# and port.
case_flows() {
    tftp_get "$E2E_HOST" "$E2E_SERVICE_IP" "$DHCP_BOOT_FILE" "$E2E_TMP/downloaded" || return 1
    ctl_ok flows-json flows -o json || return 1
    json_expect flows-json "len([f for f in d['flows'] if f['host_ip'] == '$E2E_HOST_IP' and
        f['service_ip'] == '$E2E_SERVICE_IP' and f['protocol'] == 'udp' and f['backend_ip'] == '$E2E_POD_IP' and
        f['backend_port'] == f['service_port'] != 69 and 0 <= f['idle_s'] < 60]) == 1" || return 1
    local host_port service_port
    read -r host_port service_port < <(python3 -c 'import json, sys
f = [f for f in json.load(open(sys.argv[1]))["flows"] if f["protocol"] == "udp"][0]
print(f["host_port"], f["service_port"])' "$OUT/flows-json.out")
    ctl_ok flows flows || return 1
    has_line_matching flows "^$E2E_HOST_IP:$host_port +<-> +$E2E_SERVICE_IP:$service_port +udp +$E2E_POD_IP:$service_port +confirmed +[0-9]+s\$" || return 1
    ctl_ok flows-port flows -o json --port "$service_port" || return 1
    json_expect flows-port "len(d['flows']) == 1 and d['flows'][0]['host_port'] == $host_port" || return 1
    ctl_ok flows-host flows -o json --host "$E2E_HOST_IP" --port "$host_port" || return 1
    json_expect flows-host "len(d['flows']) == 1" || return 1
    ctl_ok flows-other flows -o json --host 198.18.0.99 || return 1
    json_expect flows-other "d == {'flows': []}" || return 1
    log "TFTP flow $E2E_HOST_IP:$host_port <-> $E2E_SERVICE_IP:$service_port"
}

# h. trace: off until asked; while it runs, one line per decision with the DHCP message type, xid and client
# MAC (filtered by protocol and MAC), the TFTP request's file name; switched off again when it ends.
trace_running() { grep -q . "$OUT/$1.out" 2>/dev/null || pid_gone "$2"; }
trace_control_off() {
    bpftool -j map dump pinned "$E2E_PIN_DIR/trace_control" | python3 -c 'import json, sys
d = json.load(sys.stdin)
v = d[0]["value"]
print("off" if (v.get("enabled", 0) if isinstance(v, dict) else int(v[0], 16)) == 0 else "on")'
}
# tracing_on: bpfnetctl trace has switched tracing on (it opens the ring buffer first, so nothing after is lost).
tracing_on() { [ "$(trace_control_off)" = on ]; }
trace_control_is_off() { [ "$(trace_control_off)" = off ]; }
case_trace() {
    local state
    state=$(trace_control_off) || {
        E2E_REASON="cannot read trace_control"
        return 1
    }
    if [ "$state" != off ]; then
        E2E_REASON="tracing is $state before bpfnetctl trace ran"
        return 1
    fi
    # Each trace ends at the records it waits for (--count); its --duration only bounds a run that misses
    # them, long enough for a client that starts slowly under emulation (a 6 s window once closed before
    # the guest's TFTP client sent its RRQ).
    local bound
    bound=$(scaled_seconds 15)
    nsenter --net="/run/netns/$E2E_NODE" "$BPFNETCTL" trace --protocol dhcp --mac "$E2E_HOST_MAC" -o json \
        --count 4 --duration "$bound" >"$OUT/trace-dhcp.out" 2>"$OUT/trace-dhcp.err" &
    local tracer=$!
    E2E_PIDS+=("$tracer")
    # Tracing on before the client starts (a fixed wait lost the DISCOVER, OFFER and REQUEST once in CI's
    # ASan stage, where bpfnetctl starts slower).
    wait_for 10 tracing_on || {
        E2E_REASON="bpfnetctl trace did not switch tracing on: $(head -c 300 "$OUT/trace-dhcp.err")"
        return 1
    }
    udhcpc_lease "$E2E_HOST" eth0 "$E2E_TMP/udhcpc-trace.events" || return 1
    tftp_get "$E2E_HOST" "$E2E_SERVICE_IP" "$DHCP_BOOT_FILE" "$E2E_TMP/trace-downloaded" || return 1
    wait "$tracer"
    json_expect_lines trace-dhcp "
types = [(l['hook'], l['dhcp']['type']) for l in lines]
xids = {l['dhcp']['xid'] for l in lines}
ok = types == [('lan->pod', 'DISCOVER'), ('pod->lan', 'OFFER'), ('lan->pod', 'REQUEST'), ('pod->lan', 'ACK')]
ok = ok and [l['program'] for l in lines] == ['tc_nic_ingress', 'tc_pod_ingress'] * 2
ok = ok and len(xids) == 1 and all(l['dhcp']['client_mac'] == '$E2E_HOST_MAC' for l in lines)
ok = ok and [l['decision'] for l in lines] == ['dhcp_request_relayed', 'dhcp_reply_relayed'] * 2
ok = ok and lines[0]['steered_to']['ip'] == '$E2E_POD_IP' and lines[1]['steered_to']['port'] == 68" || return 1

    wait_for 5 trace_control_is_off || {
        E2E_REASON="tracing stayed on after the first bpfnetctl trace ended"
        return 1
    }
    ctl_ok trace-tftp trace --protocol tftp --count 1 --duration "$bound" &
    local tracer2=$!
    wait_for 10 tracing_on || {
        E2E_REASON="the second bpfnetctl trace did not switch tracing on"
        return 1
    }
    tftp_get "$E2E_HOST" "$E2E_SERVICE_IP" "$DHCP_BOOT_FILE" "$E2E_TMP/trace-downloaded2" || return 1
    wait "$tracer2"
    has_line_matching trace-tftp "tc_nic_ingress dnat_service udp $E2E_HOST_IP:[0-9]+ -> $E2E_SERVICE_IP:69 => $E2E_POD_IP:69 tftp RRQ $DHCP_BOOT_FILE\$" || return 1
    state=$(trace_control_off)
    if [ "$state" != off ]; then
        E2E_REASON="tracing stayed $state after bpfnetctl trace ended"
        return 1
    fi
}

# g. stats --watch: one JSON line per refresh with totals and rates; the table form with rates.
case_stats_watch() {
    # From: a DHCP exchange and HTTP in the totals (case traffic_stats, its need in the case list).
    ctl_ok watch-json stats --watch --interval 0.2 --count 3 -o json || return 1
    if [ "$(wc -l <"$OUT/watch-json.out")" != 3 ]; then
        E2E_REASON="stats --watch --count 3 printed $(wc -l <"$OUT/watch-json.out") lines, want 3"
        return 1
    fi
    if ! python3 - "$OUT/watch-json.out" <<'EOF'; then
import json, sys
lines = [json.loads(l) for l in open(sys.argv[1])]
for d in lines:
    assert set(d) == {"paths", "drops", "events", "interval_seconds", "rates"}, d.keys()
    assert 0.15 <= d["interval_seconds"] <= 1.0, d["interval_seconds"]
    assert all(set(d["rates"][g]) == set(d[g]) for g in ("paths", "drops", "events"))
    assert all(v >= 0 for g in ("paths", "drops", "events") for v in d["rates"][g].values())
assert all(b["paths"]["pass"] >= a["paths"]["pass"] for a, b in zip(lines, lines[1:]))
EOF
        E2E_REASON="stats --watch JSON lines are not as documented: $(head -c 400 "$OUT/watch-json.out")"
        return 1
    fi
    ctl_ok watch-table stats --watch --interval 0.2 --count 2 || return 1
    has_line_matching watch-table '^PATH +COUNT +PER SECOND$' || return 1
    has_line_matching watch-table '^DROP REASON +COUNT +PER SECOND$' || return 1
    has_line_matching watch-table '^bpfnetctl stats on prov0: sample 2, rates over 0\.[0-9] s$' || return 1
    ctl_ok stats-table stats || return 1
    has_line_matching stats-table '^dhcp_request_relayed +[1-9][0-9]*$' || return 1
    has_line_matching stats-table '^no_backend +[0-9]+$' || return 1
}

# h. Another MAC claims the service IP (an unsolicited ARP reply from the LAN): status shows the conflict,
# naming the MAC, and this node stays the owner.
case_conflict() {
    host python3 - "$OTHER_MAC" "$E2E_SERVICE_IP" <<'EOF' || { E2E_REASON="could not send the claim"; return 1; }
import socket, struct, sys
mac, ip = bytes.fromhex(sys.argv[1].replace(":", "")), socket.inet_aton(sys.argv[2])
s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW)
s.bind(("eth0", 0x0806))
arp = struct.pack("!HHBBH", 1, 0x0800, 6, 4, 2) + mac + ip + b"\xff" * 6 + ip
s.send(b"\xff" * 6 + mac + struct.pack("!H", 0x0806) + arp)
EOF
    conflict_shown() { ctl status-conflict status -o json && json_expect status-conflict "d['conflicts']['seen'] >= 1"; }
    wait_for 3 conflict_shown || { E2E_REASON="no conflict in status: $(head -c 400 "$OUT/status-conflict.out")"; return 1; }
    json_expect status-conflict "[(e['service_ip'], e['mac']) for e in d['conflicts']['entries']] ==
        [('$E2E_SERVICE_IP', '$OTHER_MAC')] and 0 <= d['conflicts']['entries'][0]['age_seconds'] < 5" || return 1
    json_expect status-conflict "d['service_ips'][0]['active']" || return 1
    ctl_ok status-conflict-table status || return 1
    has_line_matching status-conflict-table "^conflicts     [1-9][0-9]* seen \\(ARP and NDP claims: counter arp_conflict\\)\$" || return 1
    has_line_matching status-conflict-table "^conflict      $E2E_SERVICE_IP claimed by $OTHER_MAC, [0-9.]+ s ago\$" || return 1
}

# ---------------------------------------------------------------------------------------------------
# Cases: errors

# The state a failed command must leave untouched.
maps_snapshot() {
    ctl snapshot-services services -o json && ctl snapshot-backends backends -o json &&
        ctl snapshot-status status -o json || return 1
    cat "$OUT/snapshot-services.out" "$OUT/snapshot-backends.out"
    # What the maps hold, not what follows from the clock: answering_arp turns false while the case runs once the
    # stopped loader's heartbeat ages past the timeout (under emulation the snapshots are seconds apart).
    python3 -c 'import json, sys; d = json.load(open(sys.argv[1]))
print([(i["ip"], i["active"]) for i in d["service_ips"]], d["backends"])' "$OUT/snapshot-status.out"
    ip netns exec "$E2E_NODE" tc filter show dev "$E2E_VETH" ingress
    echo "veth TC program $(tc_prog_id "$E2E_VETH") ($TC_ATTACH)"
}

# i. Bad arguments and missing datapaths: the documented exit code, one line on stderr, nothing changed.
case_bad_arguments() {
    local before after
    before=$(maps_snapshot) || { E2E_REASON="cannot snapshot the maps"; return 1; }
    ctl_fails usage-option "$EXIT_USAGE" --bogus status || return 1
    ctl_fails usage-command "$EXIT_USAGE" frobnicate || return 1
    ctl_fails usage-missing "$EXIT_USAGE" backend set || return 1
    ctl_fails usage-needs "$EXIT_USAGE" stats --count 2 || return 1
    ctl_fails bad-port "$EXIT_INVALID" flows --port 70000 || return 1
    ctl_fails bad-port-name "$EXIT_INVALID" flows --port tftp || return 1
    ctl_fails bad-host "$EXIT_INVALID" flows --host 198.18.0 || return 1
    ctl_fails bad-ip "$EXIT_INVALID" backend set 198.18.100 || return 1
    ctl_fails bad-ip-service "$EXIT_INVALID" backend set "$E2E_SERVICE_IP" || return 1
    ctl_fails bad-ip-subnet "$EXIT_INVALID" backend set 198.18.0.50 || return 1
    ctl_fails bad-output "$EXIT_INVALID" -o yaml status || return 1
    ctl_fails bad-interval "$EXIT_INVALID" stats --watch --interval -1 || return 1
    ctl_fails no-datapath "$EXIT_NO_DATAPATH" -i eth9 status || return 1
    grep -q "no bpfnet datapath on eth9" "$OUT/no-datapath.err" || { E2E_REASON="$(cat "$OUT/no-datapath.err")"; return 1; }
    ctl_fails no-datapath-json "$EXIT_NO_DATAPATH" --interface eth9 stats -o json || return 1
    ctl_fails no-datapath-root "$EXIT_NO_DATAPATH" --pin-root /sys/fs/bpf/elsewhere services || return 1
    ctl_fails no-route "$EXIT_BACKEND_UNAVAILABLE" backend set "$NO_ROUTE_IP" || return 1
    ctl_fails no-veth "$EXIT_BACKEND_UNAVAILABLE" backend set "$E2E_POD_IP" --veth nosuchveth || return 1
    ctl_fails nic-as-veth "$EXIT_INVALID" backend set "$E2E_POD_IP" --veth "$E2E_NIC" || return 1

    # Not root: the maps refuse. The binary is copied where the unprivileged user can run it.
    local bin=$E2E_TMP/bin
    mkdir -p "$bin" && cp "$BPFNETCTL" "$bin/" && chmod 711 "$E2E_TMP" "$bin" && chmod 755 "$bin/bpfnetctl"
    local name cmd rc
    for cmd in status "backend clear"; do
        name=not-root-${cmd// /-}
        # shellcheck disable=SC2086 # the command's words
        nsenter --net="/run/netns/$E2E_NODE" setpriv --reuid=65534 --regid=65534 --clear-groups \
            "$bin/bpfnetctl" $cmd >"$OUT/$name.out" 2>"$OUT/$name.err"
        rc=$?
        if [ "$rc" != "$EXIT_PERMISSION" ] || [ "$(wc -l <"$OUT/$name.err")" != 1 ]; then
            E2E_REASON="bpfnetctl $cmd as nobody: exit $rc, want $EXIT_PERMISSION: $(cat "$OUT/$name.err")"
            return 1
        fi
    done
    log "as nobody: $(cat "$OUT/not-root-status.err")"
    log "as nobody: $(cat "$OUT/not-root-backend-clear.err")"
    grep -q "control socket" "$OUT/not-root-backend-clear.err" ||
        { E2E_REASON="backend clear as nobody: $(cat "$OUT/not-root-backend-clear.err")"; return 1; }

    after=$(maps_snapshot) || { E2E_REASON="cannot snapshot the maps"; return 1; }
    if [ "$before" != "$after" ]; then
        E2E_REASON="a failed command changed the datapath: $(diff <(echo "$before") <(echo "$after") | tr '\n' '|')"
        return 1
    fi
}

# i2. One writer per interface: a second loader for the same interface, and a teardown under the running
# loader, are refused naming the running one's pid, and change nothing.
case_one_loader_per_interface() {
    local before after out rc
    before=$(maps_snapshot) || { E2E_REASON="cannot snapshot the maps"; return 1; }
    for what in second teardown; do
        if [ "$what" = second ]; then
            out=$(timeout 20 nsenter --net="/run/netns/$E2E_NODE" "$LOADER" --config "$CONFIG" 2>&1)
        else
            out=$(timeout 20 nsenter --net="/run/netns/$E2E_NODE" "$LOADER" --config "$CONFIG" --teardown 2>&1)
        fi
        rc=$?
        if [ "$rc" != 1 ] || [[ $out != *"is held by another bpfnet-loader (pid $LOADER_PID: "*"bpfnet-loader --config"* ]]; then
            E2E_REASON="$what loader: exit $rc, want 1 naming pid $LOADER_PID: $out"
            return 1
        fi
    done
    log "second loader: $out"
    after=$(maps_snapshot) || { E2E_REASON="cannot snapshot the maps"; return 1; }
    if [ "$before" != "$after" ]; then
        E2E_REASON="a refused loader changed the datapath: $(diff <(echo "$before") <(echo "$after") | tr '\n' '|')"
        return 1
    fi
    [ -S "/run/bpfnet/$E2E_NIC.sock" ] || { E2E_REASON="the running loader's control socket is gone"; return 1; }
    pid_gone "$LOADER_PID" && { E2E_REASON="the running loader died"; return 1; }
    http_works || { E2E_REASON="HTTP does not work after the refused loaders"; return 1; }
}

# ---------------------------------------------------------------------------------------------------
# Cases: backend set / clear (through the loader's control socket)

counter_json() {
    ctl counter-now stats -o json || return 1
    python3 -c 'import json, sys
d = json.load(open(sys.argv[1])); n = sys.argv[2]
print(d["drops"][n[5:]] if n.startswith("drop_") else d["paths"][n])' "$OUT/counter-now.out" "$1"
}

# j. backend clear: the service IP goes inactive, its ports stay listed without a backend, the pod hook
# leaves the veth; HTTP to the service IP now fails, dropped as drop_no_backend.
case_backend_clear() {
    http_works || { E2E_REASON="HTTP does not work before the clear"; return 1; }
    local before after
    before=$(counter_json drop_no_backend) || { E2E_REASON="cannot read drop_no_backend"; return 1; }
    ctl_ok clear backend clear || return 1
    has_line_matching clear "^backend cleared: $E2E_SERVICE_IP inactive, listed ports dropped \\(drop_no_backend\\); [0-9]+ map writes, [0-9]+ removals; pod hook removed from $E2E_VETH\$" || return 1
    ctl_ok clear-services services -o json || return 1
    json_expect clear-services "[(s['port'], s['backend_ip'], s['backend_port']) for s in d['services']] ==
        [(80, None, 8080), (5201, None, 5201), (67, None, 67), (69, None, 69)]" || return 1
    ctl_ok clear-status status -o json || return 1
    json_expect clear-status "d['service_ips'] == [{'ip': '$E2E_SERVICE_IP', 'active': False, 'answering_arp': False, 'solicited_node_group': None}] and
        d['backends'] == []" || return 1
    ctl_ok clear-backends backends -o json || return 1
    json_expect clear-backends "d == {'backends': []}" || return 1
    if [ "$(tc_prog_id "$E2E_VETH")" != 0 ]; then
        E2E_REASON="the pod hook is still on $E2E_VETH after backend clear"
        return 1
    fi
    local out rc
    out=$(host curl -sS --max-time $((2 * ${E2E_TIME_SCALE:-1})) "http://$E2E_SERVICE_IP/" 2>&1)
    rc=$?
    after=$(counter_json drop_no_backend)
    if [ "$rc" = 0 ]; then
        E2E_REASON="HTTP still answered after backend clear: $out"
        return 1
    fi
    if ! is_number "$after" || [ "$after" -le "$before" ]; then
        # What the host did with its SYN: its neighbour entry for the service IP, and where the datapath's
        # counters moved (a SYN that never left the host counts nowhere).
        E2E_REASON="drop_no_backend did not rise ($before -> $after); curl exit $rc; host neighbour: $(host ip neigh show "$E2E_SERVICE_IP"); stats: $(ctl_ok clear-stats stats -o json && tr -d '\n ' <"$OUT/clear-stats.out" | head -c 600)"
        return 1
    fi
    log "after clear: curl exit $rc, drop_no_backend $before -> $after"
}

# k. backend set: the pod hook goes back on the veth (the loader's program), every port points at the pod
# again with its target port, the service IP is active and announced; HTTP works. Setting it again
# changes nothing.
case_backend_set() {
    # From: the backend cleared (case backend_clear, its need in the case list).
    ctl_ok set -o json backend set "$E2E_POD_IP" || return 1
    json_expect set "d['backend'] == {'ip': '$E2E_POD_IP', 'veth': '$E2E_VETH', 'ifindex': $(node_ifindex "$E2E_VETH")} and
        d['pod_hook'] == 'attached' and d['writes'] > 0 and d['announced'] == ['$E2E_SERVICE_IP'] and
        d['detached_pod_hooks'] == []" || return 1
    ctl_ok set-services services -o json || return 1
    json_expect set-services "d == $SERVICES_JSON" || return 1
    ctl_ok set-status status -o json || return 1
    json_expect set-status "d['service_ips'][0]['active'] and d['backends'][0]['pod_hook']['attached'] and
        d['backends'][0]['pod_hook']['program_id'] == $(tc_prog_id "$E2E_VETH")" || return 1
    if ! wait_for 10 http_works; then
        E2E_REASON="HTTP does not work 10 s after backend set"
        return 1
    fi
    grep -q '"backend changed through the control socket"' "$LOADER_LOG" ||
        { E2E_REASON="the loader did not log the change"; return 1; }
    ctl_ok set-again backend set "$E2E_POD_IP" --veth "$E2E_VETH" || return 1
    has_line_matching set-again "^backend $E2E_POD_IP on $E2E_VETH now serves $E2E_SERVICE_IP; pod hook already_attached; 0 map writes, 0 removals\$" || return 1
    has_line set-again "note: bpfnet-loader re-applies its config's backend on SIGHUP, a config change or a restart" || return 1
    # --delivery route: the same pod through the node's routing (its backends entry says so); a set without it
    # keeps the running backend's delivery; --delivery auto: into the veth again.
    ctl_ok set-route backend set "$E2E_POD_IP" --delivery route || return 1
    ctl_ok set-route-backends backends -o json || return 1
    json_expect set-route-backends "d['backends'][0]['pod_delivery'] == 'route'" || return 1
    ctl_ok set-kept backend set "$E2E_POD_IP" || return 1
    ctl_ok set-kept-backends backends -o json || return 1
    json_expect set-kept-backends "d['backends'][0]['pod_delivery'] == 'route'" || return 1
    ctl_ok set-auto backend set "$E2E_POD_IP" --delivery auto || return 1
    ctl_ok set-auto-backends backends -o json || return 1
    json_expect set-auto-backends "d['backends'][0]['pod_delivery'] == 'redirect_peer'" || return 1
    ctl_fails set-bad-delivery "$EXIT_USAGE" backend set "$E2E_POD_IP" --delivery peer || return 1
}

loader_backend_back() { ctl reload-backends backends -o json && json_expect reload-backends "len(d['backends']) == 1"; }

# l. A loader reload re-applies the config's backend over a manual change.
case_reload_restores() {
    ctl_ok reload-clear backend clear || return 1
    kill -HUP "$LOADER_PID"
    if ! wait_for 5 loader_backend_back; then
        E2E_REASON="the loader did not restore the backend on SIGHUP: $(cat "$OUT/reload-backends.out")"
        return 1
    fi
    wait_for 10 http_works || { E2E_REASON="HTTP does not work after the reload"; return 1; }
}

# m. Without a loader nobody writes the maps: backend set and clear say there is no loader (the socket went
# with it) and change nothing. status shows the heartbeat going stale. A new loader restores everything.
case_backend_needs_the_loader() {
    loader_stop TERM
    [ -e "/run/bpfnet/$E2E_NIC.sock" ] && { E2E_REASON="the stopped loader left its control socket"; return 1; }
    local before
    before=$(maps_snapshot) || { E2E_REASON="cannot snapshot the maps"; return 1; }
    ctl_fails noloader-clear "$EXIT_NO_LOADER" backend clear || return 1
    ctl_fails noloader-set "$EXIT_NO_LOADER" backend set "$E2E_POD_IP" || return 1
    grep -q "no bpfnet-loader serves /run/bpfnet/$E2E_NIC.sock" "$OUT/noloader-set.err" ||
        { E2E_REASON="$(cat "$OUT/noloader-set.err")"; return 1; }
    if [ "$(maps_snapshot)" != "$before" ]; then
        E2E_REASON="a refused backend command changed the datapath"
        return 1
    fi
    heartbeat_stale() { ctl stale-status status -o json && json_expect stale-status "d['heartbeat']['state'] == 'stale'"; }
    wait_for 8 heartbeat_stale || { E2E_REASON="heartbeat not stale 8 s after the loader stopped"; return 1; }
    ctl_ok stale-status-table status || return 1
    has_line_matching stale-status-table '^heartbeat     STALE: [0-9.]+ s ago \(timeout 5\.0 s\): loader not running, no ARP answers$' || return 1
    log "$(head -n1 "$OUT/noloader-set.err")"

    loader_start "$CONFIG" "$LOGS/loader-2.log" || return 1
    wait_for 10 http_works || { E2E_REASON="HTTP does not work after the loader restarted"; return 1; }
}

# n. After the loader's teardown there is no datapath: the no-datapath exit code.
case_teardown() {
    loader_stop TERM
    run_loader --config "$CONFIG" --teardown >"$LOGS/teardown.log" 2>&1 || { E2E_REASON="teardown failed"; return 1; }
    ctl_fails after-teardown "$EXIT_NO_DATAPATH" status || return 1
    ctl_fails after-teardown-set "$EXIT_NO_DATAPATH" backend set "$E2E_POD_IP" || return 1
}

# ---------------------------------------------------------------------------------------------------

run_cases
finish
