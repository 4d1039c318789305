#!/bin/bash
# End-to-end test of the DHCPv6 relay on an IPv6-only provisioning LAN (the config has serviceIPv6 and no
# serviceIP): the bridge world of lib.sh, the hosts on 2001:2::/64. Real servers in the pod (dnsmasq's DHCPv6,
# Kea's kea-dhcp6) answer real clients on the host (ISC dhclient -6, dhcpcd) through the datapath, which
# wraps the clients' messages to ff02::1:2 in Relay-Forwards and unwraps the servers' Relay-Replies. The host
# then fetches the boot file the lease names (option 59, RFC 5970) by TFTP and an image by HTTP, both from the
# service address.
#
#   usage: test_dhcp6.sh PATH/TO/bpfnet-loader [--case KEY]... | --list   (as root; it sandboxes itself, see lib.sh)
#
# Output is TAP-like: one `ok - NAME` / `not ok - NAME: REASON` per case, then `N passed, M failed`.
# shellcheck disable=SC2317
set -uo pipefail

# shellcheck source-path=SCRIPTDIR source=lib.sh
source "$(dirname "$(realpath "$0")")/lib.sh"
# shellcheck source=dhcp.sh
source "$E2E_DIR/dhcp.sh"

# The cases, in the order of a full run, with what each starts from (lib.sh, "The case list").
e2e_fixture topology ipv6_topology
e2e_fixture servers start_http_server topology
e2e_fixture loader start_ipv6_loader servers
e2e_case nic_in_dhcp_group case_nic_in_dhcp_group "the NIC is in ff02::1:2 while the relay is on" loader
e2e_case prefix_on_link case_prefix_on_link "the router advertisement makes the provisioning prefix on-link on the host, no default route" loader
e2e_case dnsmasq_dhclient case_dnsmasq_dhclient "dnsmasq DHCPv6 in the pod -> dhclient -6 on the host: address and boot file URL through the relay" loader
e2e_case boot_file_and_image case_boot_file_and_image "the boot file by TFTP and an image by HTTP from the service IPv6 address" case:dnsmasq_dhclient case:prefix_on_link
e2e_case dnsmasq_known_by_mac case_dnsmasq_known_by_mac "dnsmasq configured as ironic-image configures it (DHCP_HOSTS by MAC, DHCP_IGNORE=tag:!known): the host known by its MAC from the relay's Client Link-Layer Address option, leased its reserved address" loader
e2e_case kea_known_by_mac case_kea_known_by_mac "kea-dhcp6 with a host reservation by hardware address: the host known by the MAC of the relay's Client Link-Layer Address option" loader
e2e_case kea_dhclient case_kea_dhclient "kea-dhcp6 in the pod -> dhclient -6 on the host through the relay" loader
e2e_case solicitation_answered case_solicitation_answered "a router solicitation is answered without waiting for the interval" loader
e2e_case solicitations_in_a_row case_solicitations_in_a_row "hosts soliciting in a row (within the 3 s between advertisements to all nodes) are each answered, before they solicit again; the delays measured" case:solicitation_answered
# Last: dhcpcd takes IPv6 configuration of eth0 over from the kernel (accept_ra, link-local generation).
e2e_case kea_dhcpcd case_kea_dhcpcd "kea-dhcp6 in the pod -> dhcpcd on the host, which configures the address" case:kea_dhclient

e2e_start --needs-dhcp "$@"

require_tools python3 bpftool nsenter ss curl tftp sha256sum kea-dhcp6 dhcpcd
BPFNETCTL=$(realpath "$(dirname "$LOADER")/../cli/bpfnetctl" 2>/dev/null) || true
[ -x "$BPFNETCTL" ] || die "no bpfnetctl next to the loader's build directory"

SUBNET6=2001:2::/64
SERVICE6=2001:2::2
POD6=2001:2:0:100::2
POD_GW6=2001:2:0:100::1
POD_HTTP_PORT=8080
RANGE6_FIRST=2001:2::100
RANGE6_LAST=2001:2::1ff
BOOT_URL="tftp://[$SERVICE6]/$DHCP_BOOT_FILE"
DHCP_TFTP_ROOT=$E2E_TMP/tftp
HTTP_ROOT=$E2E_TMP/http
DOWNLOADS=$E2E_TMP/downloads

# The hosts keep only their link-local addresses (a host being provisioned has nothing else yet); the pod and
# its gateway get their IPv6 addresses.
add_ipv6() {
    ip -n "$E2E_NODE" -6 addr add "$POD_GW6/64" dev "$E2E_VETH" || die "pod gateway IPv6 address"
    ip -n "$E2E_POD" -6 addr add "$POD6/64" dev eth0 || die "pod IPv6 address"
    ip -n "$E2E_POD" -6 route add default via "$POD_GW6" || die "pod IPv6 default route"
    local ns
    for ns in "$E2E_HOST" "$E2E_NODE" "$E2E_POD"; do
        wait_for 10 no_tentative "$ns" || die "IPv6 addresses of $ns still tentative"
    done
}

write_ipv6_only_config() {
    cat >"$CONFIG" <<YAML
interface: $E2E_NIC
serviceIPv6: $SERVICE6
subnetV6: $SUBNET6
pinRoot: $E2E_PIN_ROOT
ports:
  - name: dhcpv6
    protocol: udp
    port: 547
    kind: dhcpv6
  - name: tftp
    protocol: udp
    port: 69
    kind: tftp
  - name: http
    protocol: tcp
    port: 80
    targetPort: $POD_HTTP_PORT
routerAdvertisements:
  enabled: true
  intervalSeconds: 4
backend:
  ipv6: $POD6
YAML
}

# dnsmasq's DHCPv6 for relayed requests: the range is chosen by the Relay-Forward's link-address (the service
# address), the boot file URL is option 59; TFTP from the same root.
dnsmasq6_start() {
    dnsmasq_run "$E2E_POD" "$E2E_TMP/dnsmasq6" --log-dhcp \
        --dhcp-range="$RANGE6_FIRST,$RANGE6_LAST,64,10m" \
        --dhcp-option="option6:bootfile-url,$BOOT_URL" \
        --enable-tftp --tftp-root="$DHCP_TFTP_ROOT" || return 1
    if ! wait_for 5 ns_udp_listens "$E2E_POD" 547; then
        E2E_REASON="dnsmasq does not listen on UDP 547 in the pod"
        return 1
    fi
}

# kea-dhcp6 [RESERVATION_JSON] for relayed requests (with a host reservation when given): Relay-Forwards arrive at the pod's global address, on which Kea listens only
# when told (eth0/ADDRESS; by default it takes link-local and multicast traffic only); the subnet is
# selected by the link-address, leases in memory, a server DUID not written anywhere.
kea6_start() {
    local dir=$E2E_TMP/kea6 reservations="" mac_sources=""
    [ -z "${1:-}" ] || reservations="\"reservations\": [ $1 ],"
    # Kea finds a client's MAC in several places by default (its EUI-64 link-local address, a DUID-LL): with a
    # reservation, only the relay's Client Link-Layer Address option counts, so that it is what the test shows.
    [ -z "${1:-}" ] || mac_sources="\"mac-sources\": [ \"client-link-addr-option\" ],"
    mkdir -p "$dir"
    KEA_LOG=$dir/kea.log
    : >"$KEA_LOG"
    cat >"$dir/kea-dhcp6.json" <<EOF
{
  "Dhcp6": {
    "interfaces-config": { "interfaces": [ "eth0/$POD6" ] },
    "lease-database": { "type": "memfile", "persist": false },
    "server-id": { "type": "LLT", "persist": false },
    $mac_sources
    "preferred-lifetime": 300,
    "valid-lifetime": $DHCP_LEASE_SECONDS,
    "subnet6": [
      {
        "id": 1,
        "subnet": "$SUBNET6",
        "pools": [ { "pool": "$RANGE6_FIRST-$RANGE6_LAST" } ],
        $reservations
        "option-data": [ { "name": "bootfile-url", "data": "$BOOT_URL" } ]
      }
    ],
    "loggers": [
      { "name": "kea-dhcp6", "output_options": [ { "output": "$KEA_LOG" } ], "severity": "DEBUG", "debuglevel": 40 }
    ]
  }
}
EOF
    kea_run "$E2E_POD" "$dir" kea-dhcp6 547
}

# host_dhclient6_lease DIR: dhclient -6 once on the host's eth0 (dhcp.sh), asking for option 59.
host_dhclient6_lease() { dhclient6_lease "$E2E_HOST" eth0 "$1"; }

# check_lease EVENTS: the BOUND6 event's address is in the range and the boot file URL is the service's.
check_lease() {
    local address url
    address=$(lease_field "$1" new_ip6_address BOUND6)
    url=$(lease_field "$1" new_dhcp6_bootfile_url BOUND6)
    if ! ip_in_range "$address" "$RANGE6_FIRST" "$RANGE6_LAST"; then
        E2E_REASON="leased address '$address' is not in $RANGE6_FIRST-$RANGE6_LAST"
        return 1
    fi
    if [ "$url" != "$BOOT_URL" ]; then
        E2E_REASON="boot file URL '$url', want $BOOT_URL"
        return 1
    fi
    LEASED6=$address
}

# relayed_both_ways BEFORE_REQUESTS BEFORE_REPLIES: at least two messages each way (Solicit and Request,
# Advertise and Reply) went through the relay.
relayed_both_ways() {
    local requests replies
    requests=$(($(counter dhcp6_request_relayed) - $1))
    replies=$(($(counter dhcp6_reply_relayed) - $2))
    if [ "$requests" -lt 2 ] || [ "$replies" -lt 2 ]; then
        E2E_REASON="relayed $requests requests and $replies replies, want at least 2 each"
        return 1
    fi
}

# ---------------------------------------------------------------------------------------------------
# Cases

LEASED6=""

# a. dnsmasq's DHCPv6 in the pod, dhclient -6 on the host: an address of the range and the boot file URL,
# every message through the relay. The server saw the Relay-Forward with the service address as link-address.
case_dnsmasq_dhclient() {
    local requests replies
    requests=$(counter dhcp6_request_relayed)
    replies=$(counter dhcp6_reply_relayed)
    dnsmasq6_start || return 1
    host_dhclient6_lease "$E2E_TMP/dhclient-dnsmasq" || { dnsmasq_stop; return 1; }
    check_lease "$E2E_TMP/dhclient-dnsmasq/dhclient.events" || { dnsmasq_stop; return 1; }
    relayed_both_ways "$requests" "$replies" || { dnsmasq_stop; return 1; }
    if ! grep -q "DHCPREPLY.*$LEASED6" "$DNSMASQ_LOG"; then
        E2E_REASON="dnsmasq's log has no DHCPREPLY for $LEASED6: $(grep DHCP "$DNSMASQ_LOG" | tail -n 4 | tr '\n' ' ')"
        dnsmasq_stop
        return 1
    fi
    log "dnsmasq -> dhclient -6: $LEASED6, boot file $BOOT_URL"
}

# a2. ironic-image's MAC-keyed configuration (its DHCP_HOSTS lines are dhcp-host=MAC,..., DHCP_IGNORE is
# tag:!known): dnsmasq reads a relayed client's MAC from the Client Link-Layer Address option (RFC 6939) of the
# Relay-Forward. Without it, it logs "cannot determine client MAC address" and ignores every message.
case_dnsmasq_known_by_mac() {
    local reserved=2001:2::150 dir=$E2E_TMP/dhclient-known
    dnsmasq_stop
    dnsmasq_run "$E2E_POD" "$E2E_TMP/dnsmasq6-known" --log-dhcp \
        --dhcp-range="$RANGE6_FIRST,$RANGE6_LAST,64,10m" \
        --dhcp-option="option6:bootfile-url,$BOOT_URL" \
        --dhcp-host="$E2E_HOST_MAC,[$reserved]" --dhcp-ignore='tag:!known' || return 1
    if ! wait_for 5 ns_udp_listens "$E2E_POD" 547; then
        E2E_REASON="dnsmasq does not listen on UDP 547 in the pod"
        dnsmasq_stop
        return 1
    fi
    host_dhclient6_lease "$dir" || {
        E2E_REASON="no lease for the known host: $E2E_REASON; dnsmasq: $(grep -m3 -i 'mac\|ignor' "$DNSMASQ_LOG" | tr '\n' ' ')"
        dnsmasq_stop
        return 1
    }
    local address
    address=$(lease_field "$dir/dhclient.events" new_ip6_address BOUND6)
    dnsmasq_stop
    if [ "$address" != "$reserved" ]; then
        E2E_REASON="the host known by its MAC was leased '$address', want its reservation $reserved"
        return 1
    fi
    log "dnsmasq with dhcp-host=$E2E_HOST_MAC,[$reserved] and dhcp-ignore=tag:!known -> dhclient -6: $address"
}

# b. The boot file the lease names, by TFTP from the service address (dnsmasq's TFTP, its ephemeral port
# steered back), and an image by HTTP: the host's files are the pod's. The host configures its lease as a
# client does (the address alone, /128); the router advertisement made the prefix, and so the service
# address, on-link.
case_boot_file_and_image() {
    # From: dhclient's lease with the boot file URL, the prefix on-link (their cases, its needs in the case list).
    host ip -6 addr add "$LEASED6/128" dev eth0 nodad || {
        E2E_REASON="cannot configure the lease $LEASED6 on the host"
        return 1
    }
    boot_file_and_image
    local rc=$?
    host ip -6 addr del "$LEASED6/128" dev eth0
    return $rc
}

boot_file_and_image() {
    mkdir -p "$DOWNLOADS"
    if ! host tftp -6 -m binary "$SERVICE6" -c get "$DHCP_BOOT_FILE" "$DOWNLOADS/$DHCP_BOOT_FILE" 2>"$E2E_TMP/tftp.err" ||
        ! cmp -s "$DHCP_TFTP_ROOT/$DHCP_BOOT_FILE" "$DOWNLOADS/$DHCP_BOOT_FILE"; then
        E2E_REASON="TFTP of $DHCP_BOOT_FILE from [$SERVICE6] failed: $(head -c 200 "$E2E_TMP/tftp.err")"
        return 1
    fi
    if ! host curl -s -6 --max-time 10 -o "$DOWNLOADS/image.qcow2" "http://[$SERVICE6]/image.qcow2" ||
        ! cmp -s "$HTTP_ROOT/image.qcow2" "$DOWNLOADS/image.qcow2"; then
        E2E_REASON="HTTP download of image.qcow2 from [$SERVICE6] failed"
        return 1
    fi
    dnsmasq_stop
    log "TFTP $DHCP_BOOT_FILE ($(stat -c %s "$DOWNLOADS/$DHCP_BOOT_FILE") bytes) and HTTP image.qcow2 ($(stat -c %s "$DOWNLOADS/image.qcow2") bytes) from [$SERVICE6]"
}

# f. The router advertisement: the host's kernel has the provisioning prefix on-link (learned from the RA the
# loader sends while it owns the service address) and no default route (router lifetime 0: no router here).
# The kernel installs an RA's on-link prefix as a route that expires with the prefix's valid lifetime.
ra_route() { ip -n "$E2E_HOST" -6 route show "$SUBNET6" | grep -q expires; }
case_prefix_on_link() {
    if ! wait_for 10 ra_route; then
        E2E_REASON="the host learned no on-link route for $SUBNET6 from a router advertisement: $(ip -n "$E2E_HOST" -6 route | tr '\n' ' ')"
        return 1
    fi
    if ip -n "$E2E_HOST" -6 route show default | grep -q .; then
        E2E_REASON="the host has a default route: $(ip -n "$E2E_HOST" -6 route show default)"
        return 1
    fi
    log "host routes: $(ip -n "$E2E_HOST" -6 route | tr '\n' ';')"
}

# c. Kea's kea-dhcp6 in the pod, dhclient -6 on the host: Kea selects the subnet by the relay's link-address.
case_kea_dhclient() {
    local requests replies
    dnsmasq_stop
    requests=$(counter dhcp6_request_relayed)
    replies=$(counter dhcp6_reply_relayed)
    kea6_start || return 1
    host_dhclient6_lease "$E2E_TMP/dhclient-kea" || return 1
    check_lease "$E2E_TMP/dhclient-kea/dhclient.events" || return 1
    relayed_both_ways "$requests" "$replies" || return 1
    log "kea-dhcp6 -> dhclient -6: $LEASED6"
}

# c2. Kea's host reservation by hardware address: Kea takes a relayed client's MAC from the Client Link-Layer
# Address option (its mac-sources, "any" by default, include it).
case_kea_known_by_mac() {
    local reserved=2001:2::160 dir=$E2E_TMP/dhclient-kea-known address
    dnsmasq_stop
    kea6_start "{ \"hw-address\": \"$E2E_HOST_MAC\", \"ip-addresses\": [ \"$reserved\" ] }" || return 1
    host_dhclient6_lease "$dir" || {
        kea_stop
        return 1
    }
    kea_stop
    address=$(lease_field "$dir/dhclient.events" new_ip6_address BOUND6)
    if [ "$address" != "$reserved" ]; then
        E2E_REASON="the host reserved by its MAC was leased '$address', want $reserved"
        return 1
    fi
    log "kea-dhcp6 with a reservation for hw-address $E2E_HOST_MAC -> dhclient -6: $address"
}

# d. dhcpcd as the client (a second implementation), against Kea: it configures the leased address on eth0.
# Its state and run directories are the sandbox's own (bind mounts in the test's private mount namespace),
# and its hook only records (no resolv.conf, hostname or NTP changes on this machine).
case_kea_dhcpcd() {
    # From: kea-dhcp6 serving (case kea_dhclient, its need in the case list).
    local dir=$E2E_TMP/dhcpcd address hook
    mkdir -p "$dir/db" "$dir/run" /run/dhcpcd
    if ! mount --bind "$dir/db" /var/lib/dhcpcd || ! mount --bind "$dir/run" /run/dhcpcd; then
        E2E_REASON="cannot give dhcpcd private state directories"
        return 1
    fi
    hook=$(dhcp_hook "$dir/dhcpcd.events")
    # A DHCPv6 option is requested by its name with dhcp6_ in front (dhcpcd.conf(5)); a plain bootfile_url is
    # "unknown option" to dhcpcd 9.4, which then asks for nothing.
    cat >"$dir/dhcpcd.conf" <<'EOF'
noipv6rs
ia_na 1
option dhcp6_bootfile_url
EOF
    timeout 40 ip netns exec "$E2E_HOST" dhcpcd -6 -1 -B -t 30 -c "$hook" -f "$dir/dhcpcd.conf" eth0 \
        >"$dir/dhcpcd.log" 2>&1
    address=$(ip -n "$E2E_HOST" -6 -o addr show dev eth0 scope global | awk '{print $4}' | cut -d/ -f1 | head -n 1)
    if [ -z "$address" ] || ! ip_in_range "$address" "$RANGE6_FIRST" "$RANGE6_LAST"; then
        E2E_REASON="dhcpcd configured '$address' on eth0: $(tail -n 5 "$dir/dhcpcd.log" | tr '\n' ' ')"
        return 1
    fi
    if grep -q 'unknown option' "$dir/dhcpcd.log"; then
        E2E_REASON="dhcpcd refused its configuration: $(grep -m1 'unknown option' "$dir/dhcpcd.log")"
        return 1
    fi
    # Option 59, as dhcpcd hands it to its hook: what a PXE client chains to.
    local url
    url=$(lease_field "$dir/dhcpcd.events" new_dhcp6_bootfile_url BOUND6)
    if [ "$url" != "$BOOT_URL" ]; then
        E2E_REASON="dhcpcd's boot file URL (option 59) is '$url', want $BOOT_URL (events: $(lease_events "$dir/dhcpcd.events"))"
        return 1
    fi
    log "kea-dhcp6 -> dhcpcd: $address on the host's eth0, boot file URL $url (events: $(lease_events "$dir/dhcpcd.events"))"
}

# e. The NIC is a member of ff02::1:2 (MLD-snooping switches forward the clients' messages to it), and
# bpfnetctl status says so.
case_nic_in_dhcp_group() {
    local out
    if ! ip -n "$E2E_NODE" -6 maddr show dev "$E2E_NIC" | grep -q "inet6 ff02::1:2\$"; then
        E2E_REASON="$E2E_NIC is not in ff02::1:2: $(ip -n "$E2E_NODE" -6 maddr show dev "$E2E_NIC" | tr '\n' ' ')"
        return 1
    fi
    out=$(nsenter --net="/run/netns/$E2E_NODE" "$BPFNETCTL" -i "$E2E_NIC" status -o json) || {
        E2E_REASON="bpfnetctl status failed"
        return 1
    }
    if ! python3 -c 'import json, sys
d = json.load(sys.stdin)
sys.exit(0 if d["dhcp6_relay"] == {"service_ip": sys.argv[1], "nic_in_group": True} and d["subnet"] is None else 1)' \
        "$SERVICE6" <<<"$out"; then
        E2E_REASON="bpfnetctl status does not show the DHCPv6 relay for $SERVICE6 with the NIC in ff02::1:2: $out"
        return 1
    fi
}

# g. A router solicitation is answered at once: with the periodic advertisements 30 minutes apart, a host whose
# link comes back (its kernel solicits, and forgets the prefix with the link) learns the prefix within seconds.
case_solicitation_answered() {
    local reloads
    reloads=$(loader_reloads)
    sed -i 's/intervalSeconds: 4$/intervalSeconds: 1800/' "$CONFIG"
    kill -HUP "$LOADER_PID"
    wait_for 10 loader_reloaded_since "$reloads" || {
        E2E_REASON="the loader did not reload the config: $(tail -n 2 "$LOADER_LOG")"
        return 1
    }
    # Checked while the link is down: once it is up, the answer can come before a loaded machine looks.
    ip -n "$E2E_HOST" link set eth0 down
    if ra_route; then
        E2E_REASON="the host kept the prefix with its link down"
        return 1
    fi
    ip -n "$E2E_HOST" link set eth0 up
    local t0
    t0=$(date +%s.%N)
    if ! wait_for 10 ra_route; then
        E2E_REASON="no on-link route 10 s after the host's link came up (its solicitation not answered): $(ip -n "$E2E_HOST" -6 route | tr '\n' ' ')"
        return 1
    fi
    log "the host's solicitation answered: prefix on-link $(since "$t0") s after its link came up"
}

# The host's link bounced BOUNCES times, each as soon as the last bounce's advertisement made the prefix on-link:
# every solicitation after the first comes within MIN_DELAY_BETWEEN_RAS (3 s) of the previous answer, which the
# rate limit of advertisements to all nodes would put off (RFC 4861 6.2.6). Each must be answered before the
# host's kernel solicits again (4 s later): ra_watch.py pairs what the host sent and received.
case_solicitations_in_a_row() {
    # From: periodic advertisements every 1800 s (case solicitation_answered): only answers reach the host.
    local log=$LOGS/ra-in-a-row.log bounces=4 n watcher analysis
    host "$SYSTEM_PYTHON" "$E2E_DIR/ra_watch.py" watch 60 eth0 >"$log" &
    watcher=$!
    E2E_PIDS+=("$watcher")
    wait_for 5 grep -q listening "$log" || { E2E_REASON="ra_watch.py did not start"; return 1; }
    for ((n = 1; n <= bounces; n++)); do
        ip -n "$E2E_HOST" link set eth0 down
        ip -n "$E2E_HOST" link set eth0 up
        if ! wait_for 10 ra_route; then
            E2E_REASON="bounce $n: no on-link route 10 s after the host's link came up: $(grep -c ' rs ' "$log") solicitations, $(grep -c ' ra ' "$log") advertisements seen"
            kill "$watcher" 2>/dev/null
            return 1
        fi
    done
    sleep 0.2 # the last advertisement's line
    kill "$watcher" 2>/dev/null
    wait "$watcher" 2>/dev/null
    analysis=$("$SYSTEM_PYTHON" "$E2E_DIR/ra_watch.py" answers "$log")
    local rc=$?
    log "$bounces bounces in a row: $(grep -c ' rs ' "$log") solicitations, each's answer: $(echo "$analysis" | tr '\n' ' ')"
    if [ "$rc" != 0 ]; then
        E2E_REASON="a solicitation was not answered before the host solicited again: $(echo "$analysis" | tr '\n' ' ')"
        return 1
    fi
}

# ---------------------------------------------------------------------------------------------------
# Set-up

ipv6_topology() {
    topology_create
    add_ipv6
}

start_http_server() {
    mkdir -p "$LOGS" "$DHCP_TFTP_ROOT" "$HTTP_ROOT"
    random_file "$DHCP_TFTP_ROOT/$DHCP_BOOT_FILE" 300000
    random_file "$HTTP_ROOT/image.qcow2" 2000000
    bg_in_ns "$E2E_POD" "$LOGS/pod-http.log" python3 -m http.server --bind :: --directory "$HTTP_ROOT" "$POD_HTTP_PORT"
    wait_for 10 pod_listens "$POD_HTTP_PORT" || die "pod HTTP server did not come up: $(cat "$LOGS/pod-http.log")"
}

start_ipv6_loader() {
    write_ipv6_only_config
    loader_start "$CONFIG" "$LOGS/loader.log" || die "$E2E_REASON"
}

run_cases
finish
