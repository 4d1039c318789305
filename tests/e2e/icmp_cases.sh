# shellcheck shell=bash
# The ICMP error cases, one body for both families (FAMILY 4 in test_lan.sh, on a pod network of MTU 1450; 6
# in test_ipv6.sh, dual stack): ICMP errors about steered packets reach the other side translated (outer and
# quoted address, quoted port and checksums; for ICMPv6 the checksum the pod's kernel verifies). The suite
# defines CLOSED_PORT (listed, udp, nothing in the pod listens on it), POD_SPORT (where the pod's own
# datagrams leave from), and for IPv6 HOST6 and SERVICE6.
#
# E2E_REASON is read by lib.sh's run_cases.
# shellcheck disable=SC2034

# icmp_host FAMILY, icmp_service FAMILY: the host's and the service's address of FAMILY.
icmp_host() { if [ "$1" = 6 ]; then echo "$HOST6"; else echo "$E2E_HOST_IP"; fi; }
icmp_service() { if [ "$1" = 6 ]; then echo "$SERVICE6"; else echo "$E2E_SERVICE_IP"; fi; }
# icmp_endpoint ADDRESS PORT: ADDRESS:PORT, an IPv6 address in brackets.
icmp_endpoint() { if [[ $1 == *:* ]]; then echo "[$1]:$2"; else echo "$1:$2"; fi; }

# icmp_host_introduced FAMILY: the host has talked to the service address of FAMILY and the datapath knows
# its MAC, so the pod's first datagram to it leaves (rather than missing the neighbour and being dropped).
# IPv4: lib.sh's host_introduced.
icmp_host_introduced() {
    [ "$1" = 6 ] || { host_introduced; return; }
    host curl -s -6 -o /dev/null --max-time 2 "http://[$SERVICE6]/"
    wait_for 5 neighbour_learned "$HOST6" || {
        E2E_REASON="the datapath did not learn $HOST6 after it talked to the service address"
        return 1
    }
}

# icmp_host_refuses FAMILY: the pod sends to a host port where nothing listens: the host's kernel answers
# port unreachable to the service address; translated, it reaches the pod's socket.
icmp_host_refuses() {
    local before out host
    host=$(icmp_host "$1")
    icmp_host_introduced "$1" || return 1
    before=$(counter icmp_error_to_pod)
    out=$(pod python3 "$E2E_DIR/udp_refused.py" --sport "$POD_SPORT" "$host" 9)
    if [ "$out" != refused ]; then
        E2E_REASON="pod -> $(icmp_endpoint "$host" 9) (closed): '$out', want refused (icmp_error_to_pod $before -> $(counter icmp_error_to_pod), drop_icmp_unmatched $(counter drop_icmp_unmatched), drop_protocol $(counter drop_protocol))"
        return 1
    fi
    log "the pod's socket saw ECONNREFUSED; icmp_error_to_pod $before -> $(counter icmp_error_to_pod)"
}

# icmp_pod_refuses FAMILY: a host sends to a listed UDP port where nothing in the pod listens: the pod's port
# unreachable leaves as the service address's, and the host's socket sees it.
icmp_pod_refuses() {
    local before out service
    service=$(icmp_service "$1")
    before=$(counter icmp_error_to_lan)
    out=$(host python3 "$E2E_DIR/udp_refused.py" "$service" "$CLOSED_PORT")
    if [ "$out" != refused ]; then
        E2E_REASON="host -> $(icmp_endpoint "$service" "$CLOSED_PORT") (nothing listens in the pod): '$out', want refused (icmp_error_to_lan $before -> $(counter icmp_error_to_lan), drop_icmp_unmatched $(counter drop_icmp_unmatched))"
        return 1
    fi
    log "the host's socket saw ECONNREFUSED from the service address; icmp_error_to_lan $before -> $(counter icmp_error_to_lan)"
}

# icmp_path_mtu FAMILY MTU: path MTU discovery through the service address: a router on the LAN (here the
# host's namespace speaking for one) says the pod's datagram to the host needs a hop of MTU bytes
# (fragmentation needed; IPv6: packet too big, as IPv6 routers never fragment). The quote names the service
# address; translated, the pod's kernel learns the path MTU for the host.
icmp_route_mtu_is() { pod ip -"$1" route get "$2" | grep -q "mtu $3"; }
icmp_path_mtu() {
    local family=$1 mtu=$2 host service af=AF_INET any=0.0.0.0
    host=$(icmp_host "$family")
    service=$(icmp_service "$family")
    [ "$family" = 6 ] && af=AF_INET6 any=::
    icmp_host_introduced "$family" || return 1
    # A socket bound to the quoted port, for the error to be taken; its datagram records the flow.
    bg_in_ns "$E2E_POD" "$LOGS/pmtu$family-socket.log" python3 -c "
import socket, time
s = socket.socket(socket.$af, socket.SOCK_DGRAM)
s.bind(('$any', $POD_SPORT + 1)); s.sendto(b'x' * 64, ('$host', 9)); time.sleep(30)"
    local sock_pid=$BG_PID
    wait_for 5 pod_udp_bound $((POD_SPORT + 1)) || {
        E2E_REASON="the pod's socket did not bind"
        return 1
    }
    if icmp_route_mtu_is "$family" "$host" "$mtu"; then
        stop_pid "$sock_pid"
        E2E_REASON="the pod's route to $host has MTU $mtu before the error"
        return 1
    fi
    host python3 "$E2E_DIR/icmp_send.py" --to "$service" --mtu "$mtu" \
        --quote "$(icmp_endpoint "$service" $((POD_SPORT + 1)))-$(icmp_endpoint "$host" 9)"
    if ! wait_for 3 icmp_route_mtu_is "$family" "$host" "$mtu"; then
        stop_pid "$sock_pid"
        E2E_REASON="the pod's route to $host did not learn MTU $mtu: $(pod ip -"$family" route get "$host") (icmp_error_to_pod $(counter icmp_error_to_pod), drop_icmp_unmatched $(counter drop_icmp_unmatched))"
        return 1
    fi
    stop_pid "$sock_pid"
    log "pod route: $(pod ip -"$family" route get "$host" | tr -s " \n" " ")"
}
