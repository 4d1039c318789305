#!/bin/bash
# End-to-end test of bpfnet over IPv6 on the bridge world of lib.sh, made dual stack: every host, the pod and
# the service have an IPv6 address beside the IPv4 one (IPv6's benchmarking range 2001:2::/48, the
# counterpart of 198.18.0.0/15). The hosts' kernels resolve the service address by NDP (the datapath answers)
# and reach the pod through NAT66; the pod reaches a host as the service address (the loader resolves the
# host by a neighbour solicitation); another node taking the address is refused by DAD and reported;
# sourceRanges apply per family; ICMPv6 errors (port unreachable both ways, packet too big) are translated.
#
#   usage: test_ipv6.sh PATH/TO/bpfnet-loader [--case KEY]... | --list   (as root; it sandboxes itself, see lib.sh)
#
# Output is TAP-like: one `ok - NAME` / `not ok - NAME: REASON` per case, then `N passed, M failed`.
# shellcheck disable=SC2317
set -uo pipefail

# shellcheck source-path=SCRIPTDIR source=lib.sh
source "$(dirname "$(realpath "$0")")/lib.sh"
# shellcheck source=icmp_cases.sh
source "$E2E_DIR/icmp_cases.sh"

# The cases, in the order of a full run, with what each starts from (lib.sh, "The case list").
e2e_fixture topology ipv6_topology
e2e_fixture servers start_servers topology
e2e_fixture loader start_dual_loader servers
e2e_case host_to_pod case_host_to_pod "host -> service IPv6 address -> pod (NDP answered by the datapath, NAT66, client kept)" loader
e2e_case pod_to_host case_pod_to_host "pod -> host over IPv6 as the service address (miss resolved by the loader's solicitation)" loader
e2e_case checksums case_checksums "every TCP segment NAT66 rewrote either way carries a right checksum, complete or partial (captured in the pod and on the host)" loader
e2e_case unlisted_dropped case_unlisted_dropped "unlisted port of the service IPv6 address dropped" loader
e2e_case solicited_node_group case_solicited_node_group "the NIC is in the service address's solicited-node group, and status says so" loader
e2e_case source_ranges case_source_ranges "sourceRanges of both families: each service address takes the ranges of its family" loader
e2e_case exposure_scan case_exposure_scan "exposure: a scan of each service address finds the listed port open and nothing else" loader
e2e_case icmp6_host_refuses case_icmp6_host_refuses "ICMPv6: a host's port unreachable reaches the pod's socket" loader
e2e_case icmp6_pod_refuses case_icmp6_pod_refuses "ICMPv6: the pod's port unreachable reaches the host as the service address's" loader
e2e_case icmp6_packet_too_big case_icmp6_packet_too_big "ICMPv6: packet too big through the service address sets the pod's path MTU" loader
e2e_case dad_defended case_dad_defended "another node's DAD for the service address defended and reported" loader
e2e_case takeover_advertisement case_takeover_advertisement "a takeover's unsolicited advertisements fix a host's stale entry (as gratuitous ARP)" loader

e2e_start "$@"

require_tools curl python3 bpftool nsenter
BPFNETCTL=$(realpath "$(dirname "$LOADER")/../cli/bpfnetctl" 2>/dev/null) || true
[ -x "$BPFNETCTL" ] || die "no bpfnetctl next to the loader's build directory"

SUBNET6=2001:2::/64
SERVICE6=2001:2::2
HOST6=2001:2::10
BYSTANDER=e2e-host2
BYSTANDER6=2001:2::6
POD6=2001:2:0:100::2
POD_GW6=2001:2:0:100::1
POD_HTTP_PORT=8080
HOST_AGENT_PORT=9999
CLOSED_PORT=7000 # listed (udp), and nothing in the pod listens on it
POD_SPORT=41000  # the pod's own datagrams leave from here
POD_UNLISTED_PORT=9090 # the pod listens here too, but the port is not listed: no one may reach it

add_ipv6() {
    ip -n "$E2E_HOST" -6 addr add "$HOST6/64" dev eth0 || die "host IPv6 address"
    ip -n "$BYSTANDER" -6 addr add "$BYSTANDER6/64" dev eth0 || die "bystander IPv6 address"
    ip -n "$E2E_NODE" -6 addr add "$POD_GW6/64" dev "$E2E_VETH" || die "pod gateway IPv6 address"
    ip -n "$E2E_POD" -6 addr add "$POD6/64" dev eth0 || die "pod IPv6 address"
    ip -n "$E2E_POD" -6 route add default via "$POD_GW6" || die "pod IPv6 default route"
    for ns in "$E2E_HOST" "$BYSTANDER" "$E2E_NODE" "$E2E_POD"; do
        wait_for 10 no_tentative "$ns" || die "IPv6 addresses of $ns still tentative"
    done
    if ip -n "$E2E_NODE" -6 route get "$HOST6" >/dev/null 2>&1; then
        die "the node has a route to $HOST6; only the datapath may connect pod and LAN"
    fi
}

# write_dual_config [FILE [EXTRA_YAML]]: the dual-stack config (to $CONFIG unless FILE is given).
write_dual_config() {
    cat >"${1:-$CONFIG}" <<YAML
interface: $E2E_NIC
serviceIP: $E2E_SERVICE_IP
subnet: $E2E_SUBNET
serviceIPv6: $SERVICE6
subnetV6: $SUBNET6
pinRoot: $E2E_PIN_ROOT
ports:
  - name: http
    protocol: tcp
    port: 80
    targetPort: $POD_HTTP_PORT
  - name: closed
    protocol: udp
    port: $CLOSED_PORT
backend:
  ip: $E2E_POD_IP
  ipv6: $POD6
${2:-}
YAML
}

# Rewrites the config (one rename, as a ConfigMap update does) and waits until the loader has applied it.
reload_dual_config() {
    local reloaded
    reloaded=$(loader_reloads)
    write_dual_config "$CONFIG.new" "${1:-}"
    replace_file "$CONFIG.new" "$CONFIG"
    wait_for 5 loader_reloaded_since "$reloaded"
}

# The host's neighbour entry for an address: "MAC STATE", empty when it has none.
host_neighbour() { ip -n "$1" -6 neigh show "$2" dev eth0 | awk '{ print $3, $NF }'; }

# ---------------------------------------------------------------------------------------------------
# Cases

# a. The host resolves the service address (the datapath's advertisement) and reaches the pod through it;
# the pod sees the host's own address.
case_host_to_pod() {
    local replies_before body entry
    replies_before=$(counter ndp_reply)
    body=$(host curl -s -6 --max-time 5 "http://[$SERVICE6]/") || {
        E2E_REASON="curl to [$SERVICE6]:80 failed (ndp_reply $replies_before -> $(counter ndp_reply))"
        return 1
    }
    if [ "$body" != "$HOST6" ]; then
        E2E_REASON="the pod saw '$body', want the host's own address $HOST6"
        return 1
    fi
    entry=$(host_neighbour "$E2E_HOST" "$SERVICE6")
    if [ "${entry%% *}" != "$E2E_NIC_MAC" ]; then
        E2E_REASON="the host's neighbour entry for $SERVICE6 is '$entry', want the NIC's MAC $E2E_NIC_MAC"
        return 1
    fi
    if [ "$(counter ndp_reply)" -le "$replies_before" ]; then
        E2E_REASON="ndp_reply did not move ($replies_before)"
        return 1
    fi
    log "host -> [$SERVICE6]:80 -> pod: the pod saw $body; the host has $SERVICE6 at $entry"
}

# b. The pod calls the host's agent. The host's entry is removed from the datapath's neighbour table first
# (case a's packets taught it), so the first packet misses and the loader solicits the host from the service
# address; the connection then goes through as the service address.
# The TCP checksums of what NAT66 rewrote, both ways (lib.sh, checksum_watch_start).
case_checksums() {
    checksum_watch_start "$E2E_POD" "$E2E_HOST" || return 1
    local failed=""
    host curl -s -6 --max-time 5 -o /dev/null "http://[$SERVICE6]/" || failed+=" host-to-pod"
    pod curl -s -6 --max-time 10 -o /dev/null "http://[$HOST6]:$HOST_AGENT_PORT/" || failed+=" pod-to-host"
    checksum_watch_check 8 "$failed" "$E2E_POD" "$E2E_HOST" || return 1
    log "TCP checksums right: $CHECKSUM_VERDICT"
}

case_pod_to_host() {
    local misses_before body
    if ! forget_neighbour "$HOST6"; then
        E2E_REASON="could not remove $HOST6 from the neighbour table"
        return 1
    fi
    misses_before=$(counter neighbour_miss)
    body=$(pod curl -s -6 --max-time 10 "http://[$HOST6]:$HOST_AGENT_PORT/") || {
        E2E_REASON="curl from the pod to [$HOST6]:$HOST_AGENT_PORT failed (neighbour_miss $misses_before -> $(counter neighbour_miss))"
        return 1
    }
    if [ "$body" != "$SERVICE6" ]; then
        E2E_REASON="the host's agent saw '$body', want the service address $SERVICE6"
        return 1
    fi
    if [ "$(counter neighbour_miss)" -le "$misses_before" ]; then
        E2E_REASON="the connection did not go through the miss path (neighbour_miss $misses_before)"
        return 1
    fi
    if ! neighbour_learned "$HOST6"; then
        E2E_REASON="the datapath has no entry for $HOST6 after the connection"
        return 1
    fi
    log "pod -> [$HOST6]:$HOST_AGENT_PORT: the agent saw $body (neighbour_miss $misses_before -> $(counter neighbour_miss))"
}

# c. Anything but a listed port is dropped at the service address.
case_unlisted_dropped() {
    local before
    before=$(counter drop_not_allowed)
    if host curl -s -6 --max-time 2 -o /dev/null "http://[$SERVICE6]:3306/"; then
        E2E_REASON="port 3306 of $SERVICE6 answered"
        return 1
    fi
    if [ "$(counter drop_not_allowed)" -le "$before" ]; then
        E2E_REASON="drop_not_allowed did not move"
        return 1
    fi
}

# f. sourceRanges of both families: the IPv6 address takes the IPv6 ranges (the host's /128 only), the IPv4
# address the IPv4 ones (the whole subnet). The bystander reaches the pod over IPv4, not over IPv6
# (drop_source_range); the host over IPv6. Without the ranges again, the bystander gets through over IPv6.
case_source_ranges() {
    local before body
    reload_dual_config "sourceRanges: [$E2E_SUBNET, '$HOST6/128']" || {
        E2E_REASON="the loader did not apply the config with sourceRanges: $(tail -n 3 "$LOADER_LOG")"
        return 1
    }
    before=$(counter drop_source_range)
    if body=$(ip netns exec "$BYSTANDER" curl -s -6 --max-time 2 "http://[$SERVICE6]/"); then
        E2E_REASON="the bystander $BYSTANDER6, outside the IPv6 ranges, reached the pod over IPv6 (it saw '$body')"
        return 1
    fi
    if [ "$(counter drop_source_range)" -le "$before" ]; then
        E2E_REASON="drop_source_range did not count the bystander's IPv6 tries ($before)"
        return 1
    fi
    body=$(ip netns exec "$BYSTANDER" curl -s -4 --max-time 5 "http://$E2E_SERVICE_IP/") || {
        E2E_REASON="the bystander, inside the IPv4 range $E2E_SUBNET, did not reach the pod over IPv4"
        return 1
    }
    body=$(host curl -s -6 --max-time 5 "http://[$SERVICE6]/") || {
        E2E_REASON="the host $HOST6, inside the IPv6 ranges, did not reach the pod over IPv6"
        return 1
    }
    log "IPv6 ranges [$HOST6/128]: the bystander dropped over IPv6 (drop_source_range $before -> $(counter drop_source_range)), served over IPv4; the host served over IPv6"
    reload_dual_config || {
        E2E_REASON="the loader did not apply the config without sourceRanges"
        return 1
    }
    body=$(ip netns exec "$BYSTANDER" curl -s -6 --max-time 5 "http://[$SERVICE6]/") || {
        E2E_REASON="without sourceRanges, the bystander still cannot reach the pod over IPv6"
        return 1
    }
}

# g-i. ICMPv6 errors both ways and packet too big: the ICMP cases' bodies, shared with test_lan.sh
# (icmp_cases.sh); here the IPv6 ones, the hop of the packet too big 1280 bytes (IPv6's minimum MTU).
case_icmp6_host_refuses() { icmp_host_refuses 6; }
case_icmp6_pod_refuses() { icmp_pod_refuses 6; }
case_icmp6_packet_too_big() { icmp_path_mtu 6 1280; }

# j. Taking the address over, the loader announces it with unsolicited neighbour advertisements (RFC 4861
# 7.2.6, Override set), as it sends gratuitous ARP for IPv4 (test_lifecycle.sh, case k): they alone fix a
# host's stale entry. The datapath is torn down first so that the new loader takes the address over; the host
# has no traffic for the address, so it solicits nothing itself (ndp_reply stays put), and its entry shows the
# NIC's MAC within 0.5 s of the loader serving.
host_entry_is_nic() { [ "$(host_neighbour "$E2E_HOST" "$SERVICE6" | cut -d' ' -f1)" = "$E2E_NIC_MAC" ]; }
case_takeover_advertisement() {
    local bogus=02:00:00:00:00:99 launched serving_at fixed_after
    loader_stop
    run_loader --config "$CONFIG" --teardown >"$LOGS/teardown.log" 2>&1 || {
        E2E_REASON="teardown failed: $(tail -n 2 "$LOGS/teardown.log")"
        return 1
    }
    ip -n "$E2E_HOST" -6 neigh replace "$SERVICE6" lladdr "$bogus" dev eth0 nud stale
    if [ "$(host_neighbour "$E2E_HOST" "$SERVICE6")" != "$bogus STALE" ]; then
        E2E_REASON="could not plant the stale entry: $(host_neighbour "$E2E_HOST" "$SERVICE6")"
        return 1
    fi
    launched=$(date +%s.%N)
    loader_start "$CONFIG" "$LOGS/loader-takeover.log" || return 1
    serving_at=$(date +%s.%N)
    if ! wait_for 0.5 host_entry_is_nic; then
        E2E_REASON="0.5 s after the loader served, the host's entry is still '$(host_neighbour "$E2E_HOST" "$SERVICE6")'"
        return 1
    fi
    fixed_after="$(since "$launched") s after the loader's start, $(since "$serving_at") s after 'serving'"
    # The teardown cleared the counters: any solicitation the datapath answered came after the start.
    if [ "$(counter ndp_reply)" != 0 ]; then
        E2E_REASON="the host solicited the address itself (ndp_reply $(counter ndp_reply))"
        return 1
    fi
    log "host entry fixed by the advertisements: $(host_neighbour "$E2E_HOST" "$SERVICE6"), $fixed_after"
    wait_for 5 service6_reachable || {
        E2E_REASON="the host cannot reach http://[$SERVICE6]/ after the takeover"
        return 1
    }
}
service6_reachable() { [ "$(host curl -s -6 --max-time 1 "http://[$SERVICE6]/")" = "$HOST6" ]; }

# k. Exposure: a TCP scan of ports 1-1024 and the pod's own ports on each service address (IPv6 and IPv4)
# finds the listed port (80) open and nothing else, not even the port the pod listens on without it being
# listed; every other port is silent (dropped, not refused: nothing behind the address answers for it).
case_exposure_scan() {
    local address out open counts
    for address in "$SERVICE6" "$E2E_SERVICE_IP"; do
        out=$(host python3 "$E2E_DIR/port_scan.py" --timeout $((2 * ${E2E_TIME_SCALE:-1})) "$address" "1-1024,$POD_HTTP_PORT,$POD_UNLISTED_PORT,$CLOSED_PORT,$HOST_AGENT_PORT" 2>&1) || {
            E2E_REASON="the scan of $address failed: $out"
            return 1
        }
        open=$(sed -n 1p <<<"$out")
        counts=$(sed -n 2p <<<"$out")
        if [ "$open" != 80 ] || [[ $counts != "refused 0 "* ]]; then
            E2E_REASON="scanning $address: open '$open' ($counts), want only 80 open and no port refused"
            return 1
        fi
        log "scan of $address: open $open; $counts"
    done
    if ! pod ss -Htln "sport = :$POD_UNLISTED_PORT" | grep -q LISTEN; then
        E2E_REASON="the pod does not listen on $POD_UNLISTED_PORT: the scan proved nothing about it"
        return 1
    fi
}

# d. Another node configuring the service address runs duplicate address detection: the datapath defends the
# address (the other node's kernel marks it dadfailed) and reports the conflict.
case_dad_defended() {
    local conflicts_before
    conflicts_before=$(counter arp_conflict)
    # After the loader's announcement round: an unsolicited advertisement of the address reaching the
    # bystander while its address is tentative fails its DAD before it has sent a probe (RFC 4862 5.4.4), and
    # there is then no probe for the datapath to see (the case alone starts right after the loader).
    if ! wait_for 5 grep -q 'msg="gratuitous ARP sent" left=0' "$LOADER_LOG"; then
        E2E_REASON="the loader's announcement round did not end"
        return 1
    fi
    ip -n "$BYSTANDER" -6 addr add "$SERVICE6/64" dev eth0 || {
        E2E_REASON="cannot add $SERVICE6 on $BYSTANDER"
        return 1
    }
    dad_failed() { ip -n "$BYSTANDER" -6 addr show dev eth0 | grep -q "$SERVICE6/64 .*dadfailed"; }
    if ! wait_for 10 dad_failed; then
        E2E_REASON="$BYSTANDER's DAD for $SERVICE6 did not fail: $(ip -n "$BYSTANDER" -6 addr show dev eth0 | grep "$SERVICE6")"
        return 1
    fi
    if [ "$(counter arp_conflict)" -le "$conflicts_before" ]; then
        E2E_REASON="the conflict was not counted (arp_conflict $conflicts_before)"
        return 1
    fi
    if ! wait_for 5 grep -q "conflict.*$SERVICE6" "$LOADER_LOG"; then
        E2E_REASON="the loader did not log the conflict"
        return 1
    fi
    ip -n "$BYSTANDER" -6 addr del "$SERVICE6/64" dev eth0
    log "$BYSTANDER's DAD for $SERVICE6: dadfailed; arp_conflict $conflicts_before -> $(counter arp_conflict)"
}

# e. The loader made the NIC a member of the service address's solicited-node group (the kernel reports it by
# MLD, so snooping switches forward the hosts' solicitations), and bpfnetctl status says so.
case_solicited_node_group() {
    local group=ff02::1:ff00:2 out
    if ! ip -n "$E2E_NODE" -6 maddr show dev "$E2E_NIC" | grep -q "inet6 $group\$"; then
        E2E_REASON="$E2E_NIC is not in $group: $(ip -n "$E2E_NODE" -6 maddr show dev "$E2E_NIC" | tr '\n' ' ')"
        return 1
    fi
    out=$(nsenter --net="/run/netns/$E2E_NODE" "$BPFNETCTL" -i "$E2E_NIC" status -o json) || {
        E2E_REASON="bpfnetctl status failed"
        return 1
    }
    if ! python3 -c 'import json, sys
ips = {i["ip"]: i for i in json.load(sys.stdin)["service_ips"]}
sys.exit(0 if ips[sys.argv[1]]["solicited_node_group"] is True and ips[sys.argv[1]]["answering_arp"] else 1)' \
        "$SERVICE6" <<<"$out"; then
        E2E_REASON="bpfnetctl status does not show $SERVICE6 answered with the NIC in its group: $out"
        return 1
    fi
}

# ---------------------------------------------------------------------------------------------------

ipv6_topology() {
    topology_create
    add_ipv6
}

start_servers() {
    mkdir -p "$LOGS"
    bg_in_ns "$E2E_POD" "$LOGS/pod-http.log" python3 "$E2E_DIR/addr_server.py" :: "$POD_HTTP_PORT"
    bg_in_ns "$E2E_POD" "$LOGS/pod-unlisted.log" python3 "$E2E_DIR/addr_server.py" :: "$POD_UNLISTED_PORT"
    bg_in_ns "$E2E_HOST" "$LOGS/host-agent.log" python3 "$E2E_DIR/addr_server.py" "$HOST6" "$HOST_AGENT_PORT"
    wait_for 10 pod_listens "$POD_HTTP_PORT" || die "pod HTTP server did not come up: $(cat "$LOGS/pod-http.log")"
}

start_dual_loader() {
    write_dual_config
    loader_start "$CONFIG" "$LOGS/loader.log" || die "$E2E_REASON"
}

run_cases
finish
