#!/bin/bash
# End-to-end test of the PXE walk (design packet walks 2 and 3) with real DHCP and TFTP software: the host
# namespace is the bare-metal host being provisioned, the pod runs dnsmasq (or Kea), bpfnet on the node
# relays DHCP (RFC 1542) and steers TFTP with its ephemeral ports. An AF_PACKET capture on the host's eth0
# checks what the host actually saw on the LAN: only the service IP, from the NIC's MAC, never the pod IP
# (not in headers, not in BOOTP fields or options).
#
#   usage: test_pxe.sh PATH/TO/bpfnet-loader [--case KEY]... | --list   (as root; it sandboxes itself, see lib.sh)
#   env:   XDP_PASS_OBJ  the compiled tests/e2e/xdp_pass.bpf.c (default build/tests/e2e/xdp_pass.bpf.o)
#          E2E_KEEP_TMP  keep the temporary directory (configs, logs, captures, leases) for inspection
#
# Output is TAP-like: one `ok - NAME` / `not ok - NAME: REASON` per case, then `N passed, M failed`. A case
# that fails because of a known bug is reported `not ok - NAME: REASON # TODO known bug: ...` and not
# counted as a failure (TAP's TODO); it says so when it starts passing.
# Exit 77 (skip) when dnsmasq, Kea, udhcpc, dhclient or tftp is not installed.
#
# The cases run in this order and share the topology: a-d and g against dnsmasq in the pod, e stops it and
# runs Kea, f tears bpfnet down and compares with dnsmasq's own relay on the node (it changes the topology,
# so it is last). A capture on the host's eth0 runs throughout; each case checks the frames since it began.
# Cases are called through run_cases (the case list), which shellcheck cannot see.
# shellcheck disable=SC2317
set -uo pipefail

# shellcheck source-path=SCRIPTDIR source=lib.sh
source "$(dirname "$(realpath "$0")")/lib.sh"
# shellcheck source-path=SCRIPTDIR source=dhcp.sh
source "$E2E_DIR/dhcp.sh"

# The cases, in the order of a full run, with what each starts from (lib.sh, "The case list"): every case starts
# from the loader, dnsmasq in the pod and the capture on the host's eth0 (the Kea cases stop dnsmasq).
e2e_fixture topology topology_create
e2e_fixture loader files_and_loader --fails-as "loader starts" topology
e2e_fixture dnsmasq start_pod_dnsmasq loader
e2e_fixture capture start_lan_capture dnsmasq
e2e_case udhcpc case_udhcpc "a. udhcpc gets the PXE lease through the relay, sees only the service IP" capture
e2e_case dhclient case_dhclient "b. dhclient gets a lease with the service IP as server identifier" capture
e2e_case dnsmasq_known_by_mac case_dnsmasq_known_by_mac "b2. dnsmasq configured as ironic-image configures it (DHCP_HOSTS by MAC, DHCP_IGNORE=tag:!known): the host known by its MAC, leased its reserved address" dnsmasq
e2e_case renew case_renew "c. unicast renewal to the service IP is relayed and acknowledged" capture
e2e_case renew_broadcast case_renew_broadcast "c2. broadcast renewal with ciaddr (busybox without the address) is relayed to ciaddr" capture
e2e_case tftp_default case_tftp_default "d1. tftp through the service IP, new ephemeral server port per transfer" capture
e2e_case tftp_range case_tftp_range "d2. tftp through the service IP, --tftp-port-range" capture
e2e_case tftp_single case_tftp_single "d3. tftp through the service IP, --tftp-single-port" capture
e2e_case checksums case_checksums "d4. every relayed DHCP reply and TFTP datagram the host received carries a right UDP checksum, complete or partial" case:tftp_default
e2e_case bad_input case_bad_input "g. bad DHCP and unknown-flow TFTP input is dropped, counted, never reaches the pod" capture
e2e_case kea_offer case_kea_offer "e1. Kea names the pod: the OFFER's server identifier is rewritten to the service IP" capture
e2e_case kea_lease case_kea_lease "e2. Kea names the pod: the host gets a lease (the relay restores Kea's identifier in the REQUEST)" case:kea_offer
e2e_case kea_configured_id case_kea_configured_id "e3. Kea with server identifier = service IP: lease without rewriting" capture
e2e_case kea_known_by_mac case_kea_known_by_mac "e4. Kea with a host reservation by hardware address: the host known by its MAC, leased its reserved address" capture
e2e_case reference_relay case_reference_relay "f. dnsmasq's own relay gives the same lease fields as bpfnet's relay" case:udhcpc

e2e_start --needs-dhcp "$@"

# Everything below runs inside the sandbox.

require_tools python3 bpftool ethtool nsenter ss sha256sum

POD_DNSMASQ=$E2E_TMP/dnsmasq-pod
LAN_CAPTURE=$E2E_TMP/lan.jsonl
DHCP_TFTP_ROOT=$E2E_TMP/tftp
DOWNLOADS=$E2E_TMP/downloads
BIG_FILE=$DHCP_BOOT_FILE # about 3 MB
SMALL_FILE=ldlinux.c32   # the second file of each TFTP mode
UNKNOWN_FLOW_PORT=45678  # case g: a service IP port that no flow was recorded for

A_EVENTS=$E2E_TMP/udhcpc-a.events # case a's lease, which case f compares against

# check_eq LABEL GOT WANT: sets E2E_REASON on a mismatch.
check_eq() {
    if [ "$2" != "$3" ]; then
        E2E_REASON="$1 is '$2', want '$3'"
        return 1
    fi
}

# The host's eth0 keeps exactly its own address: the clients' hook configures nothing.
host_addresses_untouched() {
    local addrs
    addrs=$(ip -n "$E2E_HOST" -4 -o addr show dev eth0 | awk '{print $4}' | tr '\n' ' ')
    check_eq "the host's eth0 addresses" "$addrs" "$E2E_HOST_IP/24 "
}

# check_udhcpc_lease EVENTS EVENT: the lease udhcpc recorded is the PXE lease, as the host must see it.
check_udhcpc_lease() {
    local events=$1 event=$2 ip
    if ! ip=$(lease_field "$events" ip "$event"); then
        E2E_REASON="udhcpc recorded no '$event' event (events: $(lease_events "$events"))"
        return 1
    fi
    if ! ip_in_range "$ip" "$DHCP_RANGE_FIRST" "$DHCP_RANGE_LAST"; then
        E2E_REASON="leased address '$ip' is outside $DHCP_RANGE_FIRST-$DHCP_RANGE_LAST"
        return 1
    fi
    check_eq serverid "$(lease_field "$events" serverid "$event")" "$E2E_SERVICE_IP" || return 1
    check_eq siaddr "$(lease_field "$events" siaddr "$event")" "$E2E_SERVICE_IP" || return 1
    check_eq router "$(lease_field "$events" router "$event")" "$DHCP_ROUTER" || return 1
    check_eq boot_file "$(lease_field "$events" boot_file "$event")" "$DHCP_BOOT_FILE" || return 1
    check_eq subnet "$(lease_field "$events" subnet "$event")" "$DHCP_NETMASK" || return 1
    check_eq lease "$(lease_field "$events" lease "$event")" "$DHCP_LEASE_SECONDS" || return 1
}

lease_summary() {
    local f=$1 e=${2:-}
    echo "ip=$(lease_field "$f" ip "$e") serverid=$(lease_field "$f" serverid "$e") siaddr=$(lease_field "$f" siaddr "$e")" \
        "router=$(lease_field "$f" router "$e") subnet=$(lease_field "$f" subnet "$e") boot_file=$(lease_field "$f" boot_file "$e")" \
        "lease=$(lease_field "$f" lease "$e")"
}

# lan_check SINCE NEED: capture.py dhcp-check over the LAN capture since SINCE (replies from the service
# IP:67 and the NIC's MAC, each of NEED among them, the pod IP in no frame).
LAN_SUMMARY=""
lan_check() {
    local out
    if ! out=$(python3 "$CAPTURE_PY" dhcp-check "$LAN_CAPTURE" --server "$E2E_SERVICE_IP" --mac "$E2E_NIC_MAC" \
        --need "$2" --after "$1"); then
        E2E_REASON="LAN capture: $out"
        return 1
    fi
    LAN_SUMMARY=$out
}

# counter_delta NAME BEFORE: prints the counter's rise since BEFORE.
counter_delta() {
    local now
    now=$(counter "$1") || return 1
    echo $((now - $2))
}

flows_in_map() { bpftool -j map dump pinned "$E2E_PIN_DIR/flows" 2>/dev/null | python3 -c 'import json, sys; print(len(json.load(sys.stdin)))'; }

# ---------------------------------------------------------------------------------------------------
# Cases

# a. udhcpc gets the PXE lease through the relay; every reply came from the service IP:67 and the NIC's MAC,
# and the pod IP is in no frame on the LAN.
case_udhcpc() {
    local t0 relayed_req relayed_rep
    t0=$(date +%s.%N)
    if ! { relayed_req=$(counter dhcp_request_relayed) && relayed_rep=$(counter dhcp_reply_relayed); }; then
        E2E_REASON="cannot read counters"
        return 1
    fi
    udhcpc_lease "$E2E_HOST" eth0 "$A_EVENTS" || return 1
    log "udhcpc bound in $(since "$t0") s: $(lease_summary "$A_EVENTS" bound)"
    check_udhcpc_lease "$A_EVENTS" bound || return 1
    lan_check "$t0" OFFER,ACK || return 1
    log "LAN: $LAN_SUMMARY"
    host_addresses_untouched || return 1
    local req rep
    req=$(counter_delta dhcp_request_relayed "$relayed_req") && rep=$(counter_delta dhcp_reply_relayed "$relayed_rep")
    if [ "${req:-0}" -lt 2 ] || [ "${rep:-0}" -lt 2 ]; then
        E2E_REASON="relay counters rose by requests $req, replies $rep; want at least 2 each"
        return 1
    fi
    local ip
    ip=$(lease_field "$A_EVENTS" ip bound)
    if ! wait_for 2 grep -q "DHCPACK(eth0) $ip $E2E_HOST_MAC" "$DNSMASQ_LOG"; then
        E2E_REASON="dnsmasq's log has no DHCPACK(eth0) $ip $E2E_HOST_MAC"
        return 1
    fi
    log "relayed: $req requests, $rep replies; dnsmasq: $(grep -c 'DHCPACK' "$DNSMASQ_LOG") ACKs logged"
}

# b. ISC dhclient gets a lease with the service IP as server identifier and the router, per its lease file.
# b2. ironic-image's MAC-keyed configuration through the relay (the IPv4 counterpart of test_dhcp6.sh's case):
# dnsmasq knows a relayed host by the BOOTP chaddr, which the relay leaves as the client wrote it.
case_dnsmasq_known_by_mac() {
    local reserved=$DHCP_RANGE_LAST dir=$E2E_TMP/dhclient-known ip rc=0
    dnsmasq_stop
    dnsmasq_start "$E2E_POD" "$E2E_TMP/dnsmasq-known" --dhcp-host="$E2E_HOST_MAC,$reserved" \
        --dhcp-ignore='tag:!known' || return 1
    dhclient_lease "$E2E_HOST" eth0 "$dir" || rc=1
    ip=$(dhclient_option "$dir/dhclient.leases" fixed-address 2>/dev/null)
    dnsmasq_stop
    # The pod's usual dnsmasq again, for the cases after this one.
    dnsmasq_start "$E2E_POD" "$POD_DNSMASQ" || return 1
    [ "$rc" = 0 ] || return 1
    check_eq "the known host's fixed-address" "$ip" "$reserved" || return 1
    log "dnsmasq with dhcp-host=$E2E_HOST_MAC,$reserved and dhcp-ignore=tag:!known -> dhclient: $ip"
}

case_dhclient() {
    local t0 dir=$E2E_TMP/dhclient-b
    t0=$(date +%s.%N)
    dhclient_lease "$E2E_HOST" eth0 "$dir" || return 1
    local leases=$dir/dhclient.leases ip
    log "dhclient bound in $(since "$t0") s: $(grep -E 'fixed-address|server-identifier|routers|filename|subnet-mask|lease-time' "$leases" | tr -s ' \n' ' ')"
    ip=$(dhclient_option "$leases" fixed-address)
    if ! ip_in_range "$ip" "$DHCP_RANGE_FIRST" "$DHCP_RANGE_LAST"; then
        E2E_REASON="dhclient's fixed-address '$ip' is outside the range"
        return 1
    fi
    check_eq "dhcp-server-identifier" "$(dhclient_option "$leases" dhcp-server-identifier)" "$E2E_SERVICE_IP" || return 1
    check_eq routers "$(dhclient_option "$leases" routers)" "$DHCP_ROUTER" || return 1
    check_eq filename "$(dhclient_option "$leases" filename)" "$DHCP_BOOT_FILE" || return 1
    check_eq subnet-mask "$(dhclient_option "$leases" subnet-mask)" "$DHCP_NETMASK" || return 1
    check_eq "new_dhcp_server_identifier (hook)" "$(lease_field "$dir/dhclient.events" new_dhcp_server_identifier BOUND)" \
        "$E2E_SERVICE_IP" || return 1
    lan_check "$t0" OFFER,ACK || return 1
    log "LAN: $LAN_SUMMARY"
    host_addresses_untouched || return 1
}

# c. A renewal (RFC 2131 RENEWING): busybox udhcpc, bound and in the foreground, gets SIGUSR1 and unicasts a
# DHCPREQUEST from its leased address (ciaddr) to the server identifier, the service IP:67, through a kernel
# UDP socket bound to that address. The host configures the leased address on eth0 itself first (the
# hook configures nothing), as a real client's hook would. The relay takes the same path as for
# broadcasts; the ACK comes back from the service IP to the leased address, and the hook records "renew"
# with the same lease.
case_renew() {
    local events=$E2E_TMP/udhcpc-c.events ip t1
    udhcpc_start "$E2E_HOST" eth0 "$events" || return 1
    ip=$(lease_field "$events" ip bound)
    check_udhcpc_lease "$events" bound || return 1
    ip -n "$E2E_HOST" addr add "$ip/24" dev eth0 || {
        E2E_REASON="cannot add $ip to the host's eth0"
        return 1
    }
    t1=$(date +%s.%N)
    kill -USR1 "$UDHCPC_PID"
    local renewed=0
    wait_for 10 has_event "$events" renew && renewed=1
    stop_pid "$UDHCPC_PID"
    ip -n "$E2E_HOST" addr del "$ip/24" dev eth0
    if [ "$renewed" != 1 ]; then
        E2E_REASON="no renew event within 10 s of SIGUSR1 (events: $(lease_events "$events"); $(tail -n 4 "$events.log" | tr '\n' ' '))"
        return 1
    fi
    log "renewed in $(since "$t1") s: $(lease_summary "$events" renew)"
    check_udhcpc_lease "$events" renew || return 1
    check_eq "renewed address" "$(lease_field "$events" ip renew)" "$ip" || return 1
    local out
    if ! out=$(python3 "$CAPTURE_PY" renew-check "$LAN_CAPTURE" --server "$E2E_SERVICE_IP" --client "$ip" \
        --mac "$E2E_NIC_MAC" --after "$t1"); then
        E2E_REASON="LAN capture: $out"
        return 1
    fi
    log "$out"
    lan_check "$t1" ACK || return 1
    host_addresses_untouched || return 1
}

# c2. The same renewal when the leased address is not configured: busybox 1.35 cannot bind its UDP socket to
# it ("bind(UDP): Cannot assign requested address") and broadcasts the DHCPREQUEST instead, from the leased
# address with ciaddr set, through its raw socket. The relay takes the broadcast path; the ACK goes to
# ciaddr.
case_renew_broadcast() {
    local events=$E2E_TMP/udhcpc-c2.events ip t1
    udhcpc_start "$E2E_HOST" eth0 "$events" || return 1
    ip=$(lease_field "$events" ip bound)
    t1=$(date +%s.%N)
    kill -USR1 "$UDHCPC_PID"
    local renewed=0
    wait_for 10 has_event "$events" renew && renewed=1
    stop_pid "$UDHCPC_PID"
    if [ "$renewed" != 1 ]; then
        E2E_REASON="no renew event within 10 s of SIGUSR1 (events: $(lease_events "$events"); $(tail -n 4 "$events.log" | tr '\n' ' '))"
        return 1
    fi
    log "$(grep -A3 'sending renew' "$events.log" | tr '\n' ' ')"
    check_udhcpc_lease "$events" renew || return 1
    check_eq "renewed address" "$(lease_field "$events" ip renew)" "$ip" || return 1
    local out
    if ! out=$(python3 "$CAPTURE_PY" renew-check "$LAN_CAPTURE" --server "$E2E_SERVICE_IP" --client "$ip" \
        --mac "$E2E_NIC_MAC" --broadcast --after "$t1"); then
        E2E_REASON="LAN capture: $out"
        return 1
    fi
    log "$out"
    lan_check "$t1" ACK || return 1
    host_addresses_untouched || return 1
}

# tftp_capture_has_bytes N T0: the host's capture holds at least N bytes of TFTP DATA from the service IP
# since T0, each block counted once (all that the transfers fetched: the capture has caught up with them).
# Each read parses the whole capture, which competes with its writer for the CPU: its wait reads once a
# (scaled) second.
tftp_capture_has_bytes() {
    local seen
    seen=$(python3 "$CAPTURE_PY" tftp-ports "$LAN_CAPTURE" --server "$E2E_SERVICE_IP" --after "$2")
    seen=${seen##*blocks_bytes=}
    [ "${seen:-0}" -ge "$1" ]
}

# d. TFTP through the service IP in one dnsmasq mode: the ~3 MB boot file and a second file, byte for byte.
# MODE default: one after the other, a new ephemeral server port per transfer, flows recorded and used;
# range: both at once, the server's ports from --tftp-port-range=40000,40010, flows recorded and used;
# single: --tftp-single-port, everything on the listed port 69 and no flow needed.
tftp_case() {
    local mode=$1 args=()
    case $mode in
    range) args=("--tftp-port-range=40000,40010") ;;
    single) args=(--tftp-single-port) ;;
    esac
    dnsmasq_stop
    dnsmasq_start "$E2E_POD" "$POD_DNSMASQ" "${args[@]}" || return 1
    local t0 created dnat file took i
    t0=$(date +%s.%N)
    if ! { created=$(counter flow_created) && dnat=$(counter dnat_flow); }; then
        E2E_REASON="cannot read counters"
        return 1
    fi
    mkdir -p "$DOWNLOADS"
    if [ "$mode" = range ]; then
        # dnsmasq takes the lowest free port of the range, so sequential transfers would all use 40000:
        # both at once make it hand out two.
        local pids=() rcs=()
        for file in "$BIG_FILE" "$SMALL_FILE"; do
            tftp_get "$E2E_HOST" "$E2E_SERVICE_IP" "$file" "$DOWNLOADS/$mode-$file" &
            pids+=($!)
        done
        for i in 0 1; do
            wait "${pids[$i]}"
            rcs+=($?)
        done
        took=$(since "$t0")
        if [ "${rcs[*]}" != "0 0" ]; then
            E2E_REASON="concurrent tftp gets exit ${rcs[*]}: $(cat "$DOWNLOADS/$mode-"*.log | head -c 300 | tr '\n' ' ')"
            return 1
        fi
        log "$mode: both files fetched concurrently in $took s"
    else
        for file in "$BIG_FILE" "$SMALL_FILE"; do
            local started
            started=$(date +%s.%N)
            tftp_get "$E2E_HOST" "$E2E_SERVICE_IP" "$file" "$DOWNLOADS/$mode-$file" || return 1
            log "$mode: $file fetched in $(since "$started") s"
        done
    fi
    for file in "$BIG_FILE" "$SMALL_FILE"; do
        local want got
        want=$(sha256sum <"$DHCP_TFTP_ROOT/$file" | cut -c1-64)
        got=$(sha256sum <"$DOWNLOADS/$mode-$file" | cut -c1-64)
        if [ "$want" != "$got" ]; then
            E2E_REASON="$file: sha256 $got, want $want ($(stat -c %s "$DOWNLOADS/$mode-$file") of $(stat -c %s "$DHCP_TFTP_ROOT/$file") bytes)"
            return 1
        fi
    done
    local big_size small_size
    big_size=$(stat -c %s "$DHCP_TFTP_ROOT/$BIG_FILE")
    small_size=$(stat -c %s "$DHCP_TFTP_ROOT/$SMALL_FILE")
    log "$mode: $BIG_FILE ($big_size bytes) and $SMALL_FILE ($small_size bytes): sha256 match"
    local ports created_delta dnat_delta
    # The capture writes what it saw as it goes: on a loaded machine its file can be behind the transfers by
    # megabytes (a guest of the kernel matrix under TCG: 2.9 of 4 MB when the transfers ended). The ports are
    # judged once it holds every byte fetched, or after 60 s (scaled) without (the judgments then say what it
    # saw).
    local fetched=$((big_size + small_size))
    wait_for --every 1 60 tftp_capture_has_bytes "$fetched" "$t0" || log "$mode: the capture still lacks some of the $fetched bytes fetched"
    ports=$(python3 "$CAPTURE_PY" tftp-ports "$LAN_CAPTURE" --server "$E2E_SERVICE_IP" --after "$t0")
    created_delta=$(counter_delta flow_created "$created")
    dnat_delta=$(counter_delta dnat_flow "$dnat")
    log "$mode: server ports seen by the host: $ports; flow_created +$created_delta, dnat_flow +$dnat_delta"
    local list=${ports#ports=}
    list=${list%% *}
    case $mode in
    default | range)
        if [ -z "$list" ] || [[ ,$list, == *,69,* ]]; then
            E2E_REASON="server ports '$list': want ephemeral ports only"
            return 1
        fi
        if [ "$(tr ',' '\n' <<<"$list" | wc -l)" -lt 2 ]; then
            E2E_REASON="both transfers used the server port '$list'; want one port per transfer"
            return 1
        fi
        if [ "$mode" = range ] && tr ',' '\n' <<<"$list" | awk '$1 < 40000 || $1 > 40010 { bad = 1 } END { exit !bad }'; then
            E2E_REASON="server ports '$list' outside --tftp-port-range=40000,40010"
            return 1
        fi
        if [ "${created_delta:-0}" -lt 2 ] || [ "${dnat_delta:-0}" -lt 2 ]; then
            E2E_REASON="flow_created +$created_delta, dnat_flow +$dnat_delta: want the datapath to record and use a flow per transfer"
            return 1
        fi
        local flows
        flows=$(flows_in_map)
        if [ "${flows:-0}" -lt 1 ]; then
            E2E_REASON="the pinned flows map is empty after the transfers"
            return 1
        fi
        log "$mode: $flows entries in $E2E_PIN_DIR/flows"
        ;;
    single)
        if [ "$list" != 69 ]; then
            E2E_REASON="server ports '$list' with --tftp-single-port, want 69 only"
            return 1
        fi
        if [ "${created_delta:-0}" != 0 ]; then
            E2E_REASON="flow_created +$created_delta with --tftp-single-port: the listed port needs no flow"
            return 1
        fi
        ;;
    esac
    local hits
    hits=$(python3 "$CAPTURE_PY" hits "$LAN_CAPTURE" --after "$t0")
    if [ "$(head -n1 <<<"$hits")" != 0 ]; then
        E2E_REASON="the pod IP appears on the LAN: $hits"
        return 1
    fi
}

case_tftp_default() { tftp_case default; }
case_tftp_range() { tftp_case range; }
case_tftp_single() { tftp_case single; }

# d4. The relay's replies and the TFTP data came out of the pod as CHECKSUM_PARTIAL skbs (the pod's veth
# offloads) and were rewritten on their way: their UDP checksums, as the host's capture saw them, must be
# right (a veth receiver would not check; a NIC, a tap or a host's firmware would drop a wrong one).
case_checksums() {
    local verdict
    if ! verdict=$(python3 "$CAPTURE_PY" checksums "$LAN_CAPTURE" --min 100); then
        E2E_REASON="on the host: $verdict"
        return 1
    fi
    log "UDP checksums of what the host received: $verdict"
}

# g. Bad input through the real path, from the host: a DHCP broadcast whose BOOTP header is cut short, a
# DISCOVER with hops 17 (above maxHops 4), a UDP packet to a service IP port with no recorded flow (a TFTP
# ACK for an unknown transfer). Each is dropped and counted once; nothing reaches the pod (a capture on the
# pod's eth0 sees no UDP, dnsmasq logs nothing new); the loader lives on. A DISCOVER with hops 4 (at the
# limit) sent afterwards does reach dnsmasq, which shows that the pod-side checks would have seen them.
pod_udp_in() {
    python3 - "$1" "$2" <<'EOF'
import json, sys
n = 0
for line in open(sys.argv[1]):
    try:
        r = json.loads(line)
    except ValueError:
        continue  # the line the running capture is writing
    if r.get("t", 0) >= float(sys.argv[2]) and r.get("dir") != "out" and r.get("proto") == 17:
        n += 1
print(n)
EOF
}

case_bad_input() {
    local names=(drop_dhcp_malformed drop_dhcp_hops drop_not_allowed) before=() name i
    for name in "${names[@]}"; do
        before+=("$(counter "$name")") || {
            E2E_REASON="cannot read counters"
            return 1
        }
    done
    local pod_capture=$E2E_TMP/pod-g.jsonl lan_pid=$CAPTURE_PID lan_file=$CAPTURE_FILE
    capture_start "$E2E_POD" eth0 "$pod_capture" || return 1
    local pod_pid=$CAPTURE_PID
    CAPTURE_PID=$lan_pid CAPTURE_FILE=$lan_file
    local dnsmasq_lines t0
    dnsmasq_lines=$(grep -c 'DHCP' "$DNSMASQ_LOG")
    t0=$(date +%s.%N)
    host python3 "$DHCP_SEND_PY" truncated eth0 --bytes 100 | sed 's/^/# /'
    host python3 "$DHCP_SEND_PY" discover eth0 --hops 17 --xid 0x0bad0017 | sed 's/^/# /'
    host python3 "$DHCP_SEND_PY" udp "$E2E_SERVICE_IP" "$UNKNOWN_FLOW_PORT" --sport 45679 | sed 's/^/# /'
    local want=(1 1 1) got=()
    counters_reached() {
        local k
        for k in 0 1 2; do
            [ "$(counter_delta "${names[$k]}" "${before[$k]}")" -ge "${want[$k]}" ] || return 1
        done
    }
    wait_for 3 counters_reached
    sleep 0.3 # anything that did get through would have reached the pod by now
    for i in 0 1 2; do
        got+=("$(counter_delta "${names[$i]}" "${before[$i]}")")
    done
    local pod_seen dnsmasq_now
    pod_seen=$(pod_udp_in "$pod_capture" "$t0")
    dnsmasq_now=$(grep -c 'DHCP' "$DNSMASQ_LOG")
    log "counters: ${names[0]} +${got[0]}, ${names[1]} +${got[1]}, ${names[2]} +${got[2]}; UDP into the pod: $pod_seen; new dnsmasq DHCP lines: $((dnsmasq_now - dnsmasq_lines))"
    for i in 0 1 2; do
        if [ "${got[$i]}" != "${want[$i]}" ]; then
            stop_pid "$pod_pid"
            E2E_REASON="${names[$i]} rose by ${got[$i]}, want ${want[$i]}"
            return 1
        fi
    done
    if [ "$pod_seen" != 0 ] || [ "$dnsmasq_now" != "$dnsmasq_lines" ]; then
        stop_pid "$pod_pid"
        E2E_REASON="bad input reached the pod: $pod_seen UDP packets in its capture, $((dnsmasq_now - dnsmasq_lines)) new dnsmasq DHCP lines: $(tail -n 3 "$DNSMASQ_LOG")"
        return 1
    fi
    if ! pid_alive "$LOADER_PID"; then
        stop_pid "$pod_pid"
        E2E_REASON="the loader died"
        return 1
    fi
    # The control: at the hop limit the same DISCOVER is relayed, and both the pod capture and dnsmasq see it.
    local t1 xid=$((0x0bad0004))
    t1=$(date +%s.%N)
    host python3 "$DHCP_SEND_PY" discover eth0 --hops 4 --xid "$xid" | sed 's/^/# /'
    local seen=0
    wait_for 3 grep -q "^.*$xid DHCPDISCOVER" "$DNSMASQ_LOG" && seen=1
    stop_pid "$pod_pid"
    if [ "$seen" != 1 ] || [ "$(pod_udp_in "$pod_capture" "$t1")" = 0 ]; then
        E2E_REASON="the control DISCOVER (hops 4) did not reach dnsmasq (logged: $seen, pod UDP: $(pod_udp_in "$pod_capture" "$t1"))"
        return 1
    fi
    log "control DISCOVER with hops 4 reached dnsmasq: $(grep -m1 "$xid DHCPDISCOVER" "$DNSMASQ_LOG")"
}

# e. Kea instead of dnsmasq. e1: with the documented configuration Kea names its own address (the pod IP)
# as server identifier; the datapath rewrites it to the service IP, so the OFFER the host sees names only the
# service IP and the pod IP is in no frame on the LAN. e2: the host then gets a lease from that Kea (the
# same udhcpc run). e3: Kea with option 54 configured as the service IP: a lease, nothing to rewrite.
KEA_EVENTS=$E2E_TMP/udhcpc-e1.events
KEA_RC=""
case_kea_offer() {
    dnsmasq_stop
    kea_start "$E2E_POD" "$E2E_TMP/kea-self" || return 1
    local t0 rewritten
    rewritten=$(counter dhcp_server_id_rewritten) || {
        E2E_REASON="cannot read counters"
        return 1
    }
    t0=$(date +%s.%N)
    udhcpc_lease "$E2E_HOST" eth0 "$KEA_EVENTS"
    KEA_RC=$?
    log "udhcpc through Kea: exit $KEA_RC after $(since "$t0") s; events: $(lease_events "$KEA_EVENTS"); $(grep -c 'select for' "$KEA_EVENTS.log") REQUESTs sent"
    local delta dropped
    delta=$(counter_delta dhcp_server_id_rewritten "$rewritten")
    dropped=$(grep -c 'foreign server identifier' "$KEA_LOG")
    kea_stop
    [ "$dropped" = 0 ] || log "Kea dropped $dropped REQUESTs: $(grep -m1 'foreign server identifier' "$KEA_LOG" | sed 's/.*DHCP4_PACKET_DROP/DHCP4_PACKET_DROP/')"
    lan_check "$t0" OFFER || return 1
    log "LAN: $LAN_SUMMARY"
    if [ "${delta:-0}" -lt 1 ]; then
        E2E_REASON="dhcp_server_id_rewritten rose by $delta, want at least 1 (the OFFER)"
        return 1
    fi
    log "dhcp_server_id_rewritten +$delta"
}

case_kea_lease() {
    # From: Kea naming the pod, its OFFER rewritten (case kea_offer, its need in the case list).
    if [ "$KEA_RC" != 0 ]; then
        E2E_REASON="udhcpc got no lease from Kea (exit $KEA_RC; events: $(lease_events "$KEA_EVENTS")); Kea dropped $(grep -c 'foreign server identifier' "$E2E_TMP/kea-self/kea.log") requests for a foreign server identifier"
        return 1
    fi
    local restored
    restored=$(counter dhcp_server_id_restored)
    if ! is_number "$restored" || [ "$restored" -lt 1 ]; then
        E2E_REASON="Kea leased, but dhcp_server_id_restored is '$restored': who translated option 54?"
        return 1
    fi
    check_udhcpc_lease "$KEA_EVENTS" bound
}

case_kea_configured_id() {
    kea_start "$E2E_POD" "$E2E_TMP/kea-sid" "$E2E_SERVICE_IP" || return 1
    local t0 rewritten events=$E2E_TMP/udhcpc-e3.events
    rewritten=$(counter dhcp_server_id_rewritten) || {
        E2E_REASON="cannot read counters"
        return 1
    }
    t0=$(date +%s.%N)
    udhcpc_lease "$E2E_HOST" eth0 "$events" || {
        kea_stop
        return 1
    }
    log "udhcpc bound through Kea (server identifier configured) in $(since "$t0") s: $(lease_summary "$events" bound)"
    local delta
    delta=$(counter_delta dhcp_server_id_rewritten "$rewritten")
    kea_stop
    check_udhcpc_lease "$events" bound || return 1
    lan_check "$t0" OFFER,ACK || return 1
    log "LAN: $LAN_SUMMARY; dhcp_server_id_rewritten +$delta"
    if [ "$delta" != 0 ]; then
        E2E_REASON="dhcp_server_id_rewritten rose by $delta although Kea named the service IP itself"
        return 1
    fi
}

# e4. Kea's MAC-keyed reservation through the relay (the IPv4 counterpart of test_dhcp6.sh's case): Kea knows a
# relayed host by the BOOTP chaddr, which the relay leaves as the client wrote it. The reserved address is
# outside the pool, so only the reservation can give it.
case_kea_known_by_mac() {
    local reserved=198.18.0.250 dir=$E2E_TMP/dhclient-kea-known ip rc=0
    dnsmasq_stop
    kea_start "$E2E_POD" "$E2E_TMP/kea-known" "" \
        "{ \"hw-address\": \"$E2E_HOST_MAC\", \"ip-address\": \"$reserved\" }" || return 1
    dhclient_lease "$E2E_HOST" eth0 "$dir" || rc=1
    ip=$(dhclient_option "$dir/dhclient.leases" fixed-address 2>/dev/null)
    kea_stop
    [ "$rc" = 0 ] || return 1
    check_eq "the known host's fixed-address" "$ip" "$reserved" || return 1
    log "Kea with a reservation for hw-address $E2E_HOST_MAC -> dhclient: $ip"
}

# f. Differential against dnsmasq's own relay: bpfnet torn down, the node's prov0 gets the relay address
# (the service IP), `dnsmasq --dhcp-relay` runs on the node, the pod's dnsmasq is unchanged. The fields a
# host depends on must be the same as in case a's lease through bpfnet.
case_reference_relay() {
    # From: bpfnet's lease, to compare with (case udhcpc, its need in the case list).
    loader_stop TERM
    local out
    if ! out=$(run_loader --config "$CONFIG" --teardown 2>&1); then
        E2E_REASON="--teardown failed: $out"
        return 1
    fi
    dnsmasq_stop
    dnsmasq_start "$E2E_POD" "$POD_DNSMASQ" || return 1
    local server_pid=$DNSMASQ_PID server_log=$DNSMASQ_LOG
    ip -n "$E2E_NODE" addr add "$E2E_SERVICE_IP/24" dev "$E2E_NIC" || {
        E2E_REASON="cannot give $E2E_NIC the address $E2E_SERVICE_IP"
        return 1
    }
    # dnsmasq 2.90: --dhcp-relay=LOCAL,SERVER[#PORT][,INTERFACE]; LOCAL must be an address of an interface
    # it listens on, and it also takes the server's replies (to giaddr = LOCAL) arriving on vethpod.
    dnsmasq_run "$E2E_NODE" "$E2E_TMP/dnsmasq-relay" --dhcp-relay="$E2E_SERVICE_IP,$E2E_POD_IP" \
        --interface="$E2E_NIC" --interface="$E2E_VETH" --log-dhcp || return 1
    local relay_pid=$DNSMASQ_PID relay_log=$DNSMASQ_LOG
    DNSMASQ_PID=$server_pid DNSMASQ_LOG=$server_log
    local t0 events=$E2E_TMP/udhcpc-f.events
    t0=$(date +%s.%N)
    udhcpc_lease "$E2E_HOST" eth0 "$events" || {
        E2E_REASON="$E2E_REASON; relay log: $(tail -n 3 "$relay_log" | tr '\n' ' ')"
        stop_pid "$relay_pid"
        return 1
    }
    stop_pid "$relay_pid"
    log "udhcpc bound through dnsmasq's relay in $(since "$t0") s: $(lease_summary "$events" bound)"
    log "bpfnet's lease (case a):                  $(lease_summary "$A_EVENTS" bound)"
    local field diffs=""
    for field in subnet mask router siaddr boot_file lease serverid; do
        local a f
        a=$(lease_field "$A_EVENTS" "$field" bound)
        f=$(lease_field "$events" "$field" bound)
        [ "$a" = "$f" ] || diffs+="$field: bpfnet '$a', dnsmasq relay '$f'; "
    done
    if [ -n "$diffs" ]; then
        E2E_REASON="the leases differ: $diffs"
        return 1
    fi
    local ip
    ip=$(lease_field "$events" ip bound)
    if ! ip_in_range "$ip" "$DHCP_RANGE_FIRST" "$DHCP_RANGE_LAST"; then
        E2E_REASON="dnsmasq relay lease address '$ip' outside the range"
        return 1
    fi
    # Same view on the wire: replies from the relay address and the NIC's MAC, no pod IP.
    if ! out=$(python3 "$CAPTURE_PY" dhcp-check "$LAN_CAPTURE" --server "$E2E_SERVICE_IP" --mac "$E2E_NIC_MAC" \
        --need OFFER,ACK --after "$t0"); then
        E2E_REASON="reference relay, LAN capture: $out"
        return 1
    fi
    log "reference relay LAN: $out"
}

# ---------------------------------------------------------------------------------------------------

files_and_loader() {
    mkdir -p "$DHCP_TFTP_ROOT"
    random_file "$DHCP_TFTP_ROOT/$BIG_FILE" 3145728
    random_file "$DHCP_TFTP_ROOT/$SMALL_FILE" 1048576
    write_config --port "dhcp:udp:67::dhcp" --port "tftp:udp:69::tftp" "$CONFIG"
    loader_start "$CONFIG" "$LOGS/loader.log"
}

start_pod_dnsmasq() {
    dnsmasq_start "$E2E_POD" "$POD_DNSMASQ" || die "$E2E_REASON"
    log "dnsmasq serving in the pod (pid $DNSMASQ_PID, log $DNSMASQ_LOG)"
}

start_lan_capture() {
    capture_start "$E2E_HOST" eth0 "$LAN_CAPTURE" || die "$E2E_REASON"
}

log "loader: $LOADER"
log "software: $(dnsmasq --version | head -n1); $(busybox | head -n1); $(dhclient --version 2>&1 | head -n1); kea-dhcp4 $(kea-dhcp4 -v 2>&1); tftp-hpa $(dpkg-query -W -f='${Version}' tftp-hpa 2>/dev/null)"
run_cases

capture_stop
log "LAN capture: $(capture_stats "$LAN_CAPTURE")"
finish
