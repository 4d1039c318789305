# shellcheck shell=bash
# The whole provisioning walk of a bare-metal host, as its firmware and ramdisk do it, every step through
# the service IP: DHCP lease -> TFTP boot file -> HTTP boot script and image from the image server -> Ironic
# lookup -> heartbeat -> Ironic calls the agent on the host. Shared by tests/e2e/test_pxe_walk.sh and the
# demo (scripts/demo.sh). Source after lib.sh, dhcp.sh and ironic.sh; it sources lan6.sh (the IPv6 LAN).
#
# WALK_FAMILIES: the walks to set up, "4" (default: the IPv4 LAN), "6" (an IPv6-only LAN: serviceIPv6 alone,
# DHCPv6 through the relay, router advertisements) or "4 6" (dual stack: both walks through one loader, one
# dnsmasq and one Ironic, each through its own service address).
#
#   pxe_walk_setup                 servers in the pod (dnsmasq DHCP+TFTP, image server, Ironic with the host
#                              enrolled), the agent stand-in on the host, and the loader
#   pxe_walk_servers_start     the same servers without the loader and the enrolment (a loader of the
#                              test's own serves them: Kubernetes mode)
#   pxe_walk_enrol             Ironic up and the host enrolled, once the service IP is served
#   walk_lease                 udhcpc on the host: WALK_IP, WALK_SERVER_ID, WALK_NEXT_SERVER, WALK_BOOT_FILE;
#                              the host then uses the leased address, as a ramdisk does
#   walk_tftp                  the boot file over TFTP from the next server; WALK_TFTP_BYTES
#   walk_http                  boot script and image from the image server; WALK_IMAGE_BYTES
#   walk_lookup                Ironic lookup by the host's MAC: WALK_NODE, WALK_TOKEN
#   walk_heartbeat             heartbeat with the token, callback URL on the leased address
#   walk_agent_call            the pod calls the agent (port 9999) on the host; WALK_AGENT_SAW
#   walk_move                  the pod made again as its runtime makes it after a move (a new veth, wired as
#                              E2E_CNI says), then the lease, image and heartbeat of each family through it
#   walk6_lease ... walk6_agent_call   the same steps over IPv6 (dhclient -6, the boot file URL of option 59,
#                              the service's IPv6 address); WALK6_IP, WALK6_BOOT_URL, WALK6_NODE,
#                              WALK6_TOKEN, WALK6_AGENT_SAW
#
# Each step returns 0 or sets E2E_REASON and returns 1. Read by the sourcing script.
# shellcheck disable=SC2034

# shellcheck source=lan6.sh
source "$(dirname "${BASH_SOURCE[0]}")/lan6.sh"

WALK_IMAGE_PORT=6180
WALK_AGENT_PORT=9999
WALK_IMAGE_BYTES=$((8 * 1024 * 1024))
WALK_TFTP_BYTES=$((1024 * 1024))
WALK_FAMILIES=${WALK_FAMILIES:-4}
walk_has() { [[ " $WALK_FAMILIES " == *" $1 "* ]]; }

# dnsmasq in the pod: the IPv4 PXE server (dnsmasq_start) and, for IPv6, DHCPv6 for relayed requests with
# the boot file URL (option 59); TFTP for both.
walk_dnsmasq_start() {
    if ! walk_has 4; then
        lan6_dnsmasq_start "$WALK_DIR/dnsmasq"
        return
    fi
    LAN6_DNSMASQ=()
    walk_has 6 && lan6_dnsmasq_options
    dnsmasq_start "$E2E_POD" "$WALK_DIR/dnsmasq" "${LAN6_DNSMASQ[@]}"
}

pxe_walk_servers_start() {
    WALK_DIR=$E2E_TMP/walk
    DHCP_TFTP_ROOT=$WALK_DIR/tftp
    WALK_HTTP_ROOT=$WALK_DIR/images
    mkdir -p "$DHCP_TFTP_ROOT" "$WALK_HTTP_ROOT"
    random_file "$DHCP_TFTP_ROOT/$DHCP_BOOT_FILE" "$WALK_TFTP_BYTES"
    random_file "$WALK_HTTP_ROOT/ironic-agent.img" "$WALK_IMAGE_BYTES"
    printf '#!ipxe\nkernel http://%s:%s/ironic-agent.img\nboot\n' "$E2E_SERVICE_IP" "$WALK_IMAGE_PORT" \
        >"$WALK_HTTP_ROOT/boot.ipxe"
    printf '#!ipxe\nkernel http://[%s]:%s/ironic-agent.img\nboot\n' "$LAN6_SERVICE" "$WALK_IMAGE_PORT" \
        >"$WALK_HTTP_ROOT/boot6.ipxe"
    chmod -R o+rX "$WALK_DIR"
    chmod o+x "$E2E_TMP"

    # "::" serves both families (Linux's sockets take IPv4 on an IPv6 socket unless told otherwise).
    local any=0.0.0.0
    if walk_has 6; then
        lan6_pod_address || return 1
        any=::
        IRONIC_HOST_IP=::
    fi
    walk_dnsmasq_start || return 1
    # The image server runs unprivileged: 6180 needs no capability.
    # Debian's python3: a per-user interpreter (pyenv) is not readable by nobody.
    bg_in_ns "$E2E_POD" "$WALK_DIR/images.log" setpriv --reuid=65534 --regid=65534 --clear-groups \
        /usr/bin/python3 -m http.server "$WALK_IMAGE_PORT" --bind "$any" --directory "$WALK_HTTP_ROOT"
    bg_in_ns "$E2E_HOST" "$WALK_DIR/agent.log" python3 "$E2E_DIR/addr_server.py" "$any" "$WALK_AGENT_PORT"
    ironic_start "$E2E_POD" "$WALK_DIR/ironic" || return 1
}

# The walk's enrolment, once the service IP is served: Ironic up, the host enrolled.
pxe_walk_enrol() {
    # 90 s (scaled): Ironic's API starts as slowly as its database was made, and in a TCG guest of the kernel
    # matrix that took 183 s (E2E_TIME_SCALE 5): a 40 s wait (200 s there) failed e2e_pxe_walk@ovs on 6.1 once.
    # Here it answers within seconds.
    ironic_wait 90 || return 1
    ironic_create_node "$E2E_HOST_MAC" walk-host
}

pxe_walk_setup() {
    pxe_walk_servers_start || return 1
    WALK_CONFIG=$E2E_TMP/conf/walk.yaml
    if walk_has 6; then
        lan6_write_config "$WALK_CONFIG" "$WALK_IMAGE_PORT" "$(walk_has 4 && echo dual)"
    else
        write_config --port dhcp:udp:67:67:dhcp --port tftp:udp:69:69:tftp --port ironic-api:tcp:6385 \
            --port images:tcp:"$WALK_IMAGE_PORT" "$WALK_CONFIG"
    fi
    loader_start "$WALK_CONFIG" "$E2E_TMP/logs/loader.log" || return 1
    pxe_walk_enrol
}

walk_lease() {
    local out=$WALK_DIR/lease
    udhcpc_lease "$E2E_HOST" eth0 "$out" || return 1
    WALK_IP=$(lease_field "$out" ip bound)
    WALK_SERVER_ID=$(lease_field "$out" serverid bound)
    WALK_NEXT_SERVER=$(lease_field "$out" siaddr bound)
    WALK_BOOT_FILE=$(lease_field "$out" boot_file bound)
    if ! ip_in_range "$WALK_IP" "$DHCP_RANGE_FIRST" "$DHCP_RANGE_LAST" ||
        [ "$WALK_SERVER_ID" != "$E2E_SERVICE_IP" ] || [ "$WALK_NEXT_SERVER" != "$E2E_SERVICE_IP" ] ||
        [ "$WALK_BOOT_FILE" != "$DHCP_BOOT_FILE" ]; then
        E2E_REASON="lease ip=$WALK_IP serverid=$WALK_SERVER_ID siaddr=$WALK_NEXT_SERVER boot_file=$WALK_BOOT_FILE"
        return 1
    fi
    # From here on the host is the ramdisk: it uses the address it leased (its IPv6 link-local address stays).
    host ip -4 addr flush dev eth0
    host ip addr add "$WALK_IP/24" dev eth0
}

same_file() { [ "$(sha256sum <"$1")" = "$(sha256sum <"$2")" ]; }

walk_tftp() {
    local got=$WALK_DIR/fetched-$WALK_BOOT_FILE
    tftp_get "$E2E_HOST" "$WALK_NEXT_SERVER" "$WALK_BOOT_FILE" "$got" || return 1
    if ! same_file "$got" "$DHCP_TFTP_ROOT/$DHCP_BOOT_FILE"; then
        E2E_REASON="the boot file fetched over TFTP differs from the server's"
        return 1
    fi
}

walk_http() {
    local script image url
    url="http://$E2E_SERVICE_IP:$WALK_IMAGE_PORT"
    script=$(host curl -sSf --max-time 10 "$url/boot.ipxe") || {
        E2E_REASON="GET $url/boot.ipxe failed"
        return 1
    }
    image=$(awk '/^kernel/ {print $2}' <<<"$script")
    if [ "$image" != "$url/ironic-agent.img" ]; then
        E2E_REASON="boot script names '$image', want $url/ironic-agent.img"
        return 1
    fi
    host curl -sSf --max-time 30 -o "$WALK_DIR/fetched.img" "$image" || {
        E2E_REASON="GET $image failed"
        return 1
    }
    if ! same_file "$WALK_DIR/fetched.img" "$WALK_HTTP_ROOT/ironic-agent.img"; then
        E2E_REASON="the image fetched over HTTP differs from the server's"
        return 1
    fi
}

walk_lookup() {
    local body
    body=$(host curl -sS --max-time 10 -H "X-OpenStack-Ironic-API-Version: $IRONIC_API_VERSION" \
        "http://$E2E_SERVICE_IP:$IRONIC_PORT/v1/lookup?addresses=$E2E_HOST_MAC") || {
        E2E_REASON="lookup through $E2E_SERVICE_IP failed"
        return 1
    }
    WALK_NODE=$(json_get node.uuid <<<"$body" 2>/dev/null)
    WALK_TOKEN=$(json_get config.agent_token <<<"$body" 2>/dev/null)
    if [ "$WALK_NODE" != "$IRONIC_NODE_UUID" ] || [ -z "$WALK_TOKEN" ] || [ "$WALK_TOKEN" = "******" ]; then
        E2E_REASON="lookup answered node '$WALK_NODE' token '${WALK_TOKEN:0:8}...': ${body:0:200}"
        return 1
    fi
}

walk_heartbeat() {
    local code
    code=$(host curl -sS --max-time 10 -o /dev/null -w '%{http_code}' -X POST \
        -H "X-OpenStack-Ironic-API-Version: $IRONIC_API_VERSION" -H 'Content-Type: application/json' \
        -d "{\"callback_url\": \"http://$WALK_IP:$WALK_AGENT_PORT\", \"agent_token\": \"$WALK_TOKEN\", \"agent_version\": \"9.0.0\"}" \
        "http://$E2E_SERVICE_IP:$IRONIC_PORT/v1/heartbeat/$WALK_NODE")
    if [ "$code" != 202 ]; then
        E2E_REASON="heartbeat answered HTTP $code, want 202"
        return 1
    fi
}

# With fake hardware the conductor does not call the agent itself; the pod's curl stands in for it.
walk_agent_call() {
    WALK_AGENT_SAW=$(pod curl -sS --max-time 10 "http://$WALK_IP:$WALK_AGENT_PORT/") || {
        E2E_REASON="the pod could not reach the agent at $WALK_IP:$WALK_AGENT_PORT"
        return 1
    }
    if [ "$WALK_AGENT_SAW" != "$E2E_SERVICE_IP" ]; then
        E2E_REASON="the agent saw the call from $WALK_AGENT_SAW, want the service IP"
        return 1
    fi
}

# ---------------------------------------------------------------------------------------------------
# The walk over IPv6: the host has only its link-local address until DHCPv6 gives it one.

walk6_prefix_on_link() { ip -n "$E2E_HOST" -6 route show "$LAN6_SUBNET" | grep -q expires; }

walk6_lease() {
    local dir=$WALK_DIR/dhclient6 events
    dhclient6_lease "$E2E_HOST" eth0 "$dir" || return 1
    events=$dir/dhclient.events
    WALK6_IP=$(lease_field "$events" new_ip6_address BOUND6)
    WALK6_BOOT_URL=$(lease_field "$events" new_dhcp6_bootfile_url BOUND6)
    if ! ip_in_range "$WALK6_IP" "$LAN6_RANGE_FIRST" "$LAN6_RANGE_LAST" ||
        [ "$WALK6_BOOT_URL" != "tftp://[$LAN6_SERVICE]/$DHCP_BOOT_FILE" ]; then
        E2E_REASON="lease ip6=$WALK6_IP bootfile-url=$WALK6_BOOT_URL"
        return 1
    fi
    # The ramdisk configures the lease as a DHCPv6 client does (the address alone; replaced when the walk
    # leases it again after a move); the router advertisement the loader sends made the prefix, and so the
    # service address, on-link.
    host ip -6 addr replace "$WALK6_IP/128" dev eth0 nodad || {
        E2E_REASON="cannot configure $WALK6_IP on the host"
        return 1
    }
    wait_for 10 walk6_prefix_on_link || {
        E2E_REASON="no router advertisement made $LAN6_SUBNET on-link: $(ip -n "$E2E_HOST" -6 route | tr '\n' ' ')"
        return 1
    }
}

walk6_tftp() {
    local server file got=$WALK_DIR/fetched6-$DHCP_BOOT_FILE
    server=$(sed -n 's|^tftp://\[\(.*\)\]/.*$|\1|p' <<<"$WALK6_BOOT_URL")
    file=${WALK6_BOOT_URL##*/}
    tftp_get "$E2E_HOST" "$server" "$file" "$got" || return 1
    if ! same_file "$got" "$DHCP_TFTP_ROOT/$DHCP_BOOT_FILE"; then
        E2E_REASON="the boot file fetched over TFTP from [$server] differs from the server's"
        return 1
    fi
}

walk6_http() {
    local script image url="http://[$LAN6_SERVICE]:$WALK_IMAGE_PORT"
    script=$(host curl -sSf -6 --max-time 10 "$url/boot6.ipxe") || {
        E2E_REASON="GET $url/boot6.ipxe failed"
        return 1
    }
    image=$(awk '/^kernel/ {print $2}' <<<"$script")
    if [ "$image" != "$url/ironic-agent.img" ]; then
        E2E_REASON="boot script names '$image', want $url/ironic-agent.img"
        return 1
    fi
    host curl -sSf -6 --max-time 30 -o "$WALK_DIR/fetched6.img" "$image" || {
        E2E_REASON="GET $image failed"
        return 1
    }
    if ! same_file "$WALK_DIR/fetched6.img" "$WALK_HTTP_ROOT/ironic-agent.img"; then
        E2E_REASON="the image fetched over HTTP differs from the server's"
        return 1
    fi
}

walk6_lookup() {
    local body
    body=$(host curl -sS -6 --max-time 10 -H "X-OpenStack-Ironic-API-Version: $IRONIC_API_VERSION" \
        "http://[$LAN6_SERVICE]:$IRONIC_PORT/v1/lookup?addresses=$E2E_HOST_MAC") || {
        E2E_REASON="lookup through [$LAN6_SERVICE] failed"
        return 1
    }
    WALK6_NODE=$(json_get node.uuid <<<"$body" 2>/dev/null)
    WALK6_TOKEN=$(json_get config.agent_token <<<"$body" 2>/dev/null)
    # A second lookup (the dual-stack walk's) gets the node with the token hidden: it was handed out once.
    if [ "$WALK6_NODE" != "$IRONIC_NODE_UUID" ] || [ -z "$WALK6_TOKEN" ]; then
        E2E_REASON="lookup answered node '$WALK6_NODE' token '${WALK6_TOKEN:0:8}...': ${body:0:200}"
        return 1
    fi
    if [ "$WALK6_TOKEN" = "******" ]; then
        WALK6_TOKEN=$WALK_TOKEN
    fi
    # Ironic saw the host's own address: NAT66 kept the client.
    if ! wait_for 5 ironic_logged_from '/v1/lookup' "$WALK6_IP"; then
        E2E_REASON="Ironic's access log has no lookup from $WALK6_IP"
        return 1
    fi
}

# ironic_logged_from REQUEST CLIENT: Ironic's access log has a line of REQUEST from CLIENT. eventlet writes
# that line after the answer has gone out, so a client can have its answer before the line exists.
ironic_logged_from() {
    grep -F 'eventlet.wsgi.server' "$IRONIC_LOG" | grep -F "$1" | grep -qF "$2"
}

walk6_heartbeat() {
    local code
    code=$(host curl -sS -6 --max-time 10 -o /dev/null -w '%{http_code}' -X POST \
        -H "X-OpenStack-Ironic-API-Version: $IRONIC_API_VERSION" -H 'Content-Type: application/json' \
        -d "{\"callback_url\": \"http://[$WALK6_IP]:$WALK_AGENT_PORT\", \"agent_token\": \"$WALK6_TOKEN\", \"agent_version\": \"9.0.0\"}" \
        "http://[$LAN6_SERVICE]:$IRONIC_PORT/v1/heartbeat/$WALK6_NODE")
    if [ "$code" != 202 ]; then
        E2E_REASON="heartbeat answered HTTP $code, want 202"
        return 1
    fi
    # Ironic saw the heartbeat come from the host's own address.
    if ! wait_for 5 ironic_logged_from "/v1/heartbeat/$WALK6_NODE" "$WALK6_IP"; then
        E2E_REASON="Ironic's access log has no heartbeat from $WALK6_IP"
        return 1
    fi
}

# With fake hardware the conductor does not call the agent itself; the pod's curl to the callback URL stands
# in for it.
walk6_agent_call() {
    WALK6_AGENT_SAW=$(pod curl -sS -6 --max-time 10 "http://[$WALK6_IP]:$WALK_AGENT_PORT/") || {
        E2E_REASON="the pod could not reach the agent at [$WALK6_IP]:$WALK_AGENT_PORT"
        return 1
    }
    if [ "$WALK6_AGENT_SAW" != "$LAN6_SERVICE" ]; then
        E2E_REASON="the agent saw the call from $WALK6_AGENT_SAW, want the service address $LAN6_SERVICE"
        return 1
    fi
}

# ---------------------------------------------------------------------------------------------------
# A move: the pod's veth deleted and made again (a pod rescheduled to this node gets a new veth from its CNI,
# with a new ifindex), the loader finds it again by itself, and the host's next boot goes through it.

walk_move() {
    local old new
    old=$(ip -n "$E2E_NODE" -o link show "$E2E_VETH" | cut -d: -f1)
    ip -n "$E2E_NODE" link del "$E2E_VETH" || { E2E_REASON="cannot delete the pod's veth"; return 1; }
    pod_link_create || { E2E_REASON="cannot make the pod's veth again: $E2E_REASON"; return 1; }
    if walk_has 6; then lan6_pod_address || return 1; fi
    new=$(ip -n "$E2E_NODE" -o link show "$E2E_VETH" | cut -d: -f1)
    if ! wait_for 10 eval 'tc_hook_of "$E2E_VETH"; [ "$TC_PROG_ID" != 0 ]'; then
        E2E_REASON="no bpfnet program on the new veth (ifindex $new, was $old) 10 s after the move"
        return 1
    fi
    log "move: the pod's veth is ifindex $new (was $old), hooked ($TC_ATTACH)"
    walk_veth_found "$old" && walk_veth_found "$new" || return 1
    if walk_has 4; then
        walk_lease && walk_http && walk_heartbeat && walk_agent_call || return 1
    fi
    if walk_has 6; then
        walk6_lease && walk6_http && walk6_heartbeat && walk6_agent_call || return 1
    fi
}

# walk_veth_found IFINDEX: the loader found the pod's veth IFINDEX (before the move and after it) the way the
# CNI's shape (E2E_CNI) allows: through the route to the pod when the route names the veth, else behind the
# device the route names (cni0, cilium_host, ovn-k8s-mp0), by the namespace its peer is in; delivering through
# the node's routing when E2E_POD_DELIVERY=route says so. The loader writes the
# line once the hook is attached, which the walk may see first.
walk_veth_found() {
    local want="ifindex=$1 veth=$E2E_VETH found_by=route delivery="
    [ "$E2E_CNI" = routed ] || want="ifindex=$1 veth=$E2E_VETH found_by=namespace behind=$(pod_gateway_dev) delivery="
    [ "$E2E_POD_DELIVERY" = route ] && want+="route action="
    if ! wait_for 5 grep -qF "$want" "$E2E_TMP/logs/loader.log"; then
        E2E_REASON="the loader's log has no '$want': $(grep -F 'backend veth' "$E2E_TMP/logs/loader.log" | tail -n 2)"
        return 1
    fi
    log "the loader found the pod's veth: $want"
}

# Delivered through the node's routing (E2E_POD_DELIVERY=route): bpfnetctl status names it for the backend, and
# every packet the NIC's program steered to the pod while the host fetched the image (over each family the walk
# has) left through the device the node routes the pod by (cni0, ovn-k8s-mp0: its transmit count grew by at
# least as many), where bpf_redirect_peer would have put them straight into the pod's namespace, past it; most
# of them by the datapath's own redirect (the route's next hop resolved), not handed to the stack.
walk_route_delivery() {
    local dev sent_before sent_after steered_before steered_after stack_before stack_after status
    dev=$(pod_gateway_dev)
    sent_before=$(link_tx_packets "$dev") && steered_before=$(counter dnat_service) &&
        stack_before=$(counter route_to_stack) || return 1
    if walk_has 4; then walk_http || return 1; fi
    if walk_has 6; then walk6_http || return 1; fi
    sent_after=$(link_tx_packets "$dev") && steered_after=$(counter dnat_service) &&
        stack_after=$(counter route_to_stack) || return 1
    local sent=$((sent_after - sent_before)) steered=$((steered_after - steered_before))
    local to_stack=$((stack_after - stack_before))
    log "route delivery: $steered packets steered to the pod while the host fetched the image, $dev sent $sent, $to_stack handed to the stack"
    if [ "$steered" -lt 10 ] || [ "$sent" -lt "$steered" ]; then
        E2E_REASON="$steered packets steered to the pod while the host fetched the image, and $dev sent $sent: want them all through $dev (the node's routing)"
        return 1
    fi
    if [ $((to_stack * 10)) -gt "$steered" ]; then
        E2E_REASON="$to_stack of the $steered packets steered were handed to the stack: want the datapath's redirect for nine in ten at least"
        return 1
    fi
    status=$(nsenter --net="/run/netns/$E2E_NODE" "$BPFNETCTL" status) || { E2E_REASON="bpfnetctl status failed"; return 1; }
    if ! grep -q "^backend .*, delivered by the node's routing, pod hook tc_pod_ingress" <<<"$status"; then
        E2E_REASON="bpfnetctl status does not say the backend is delivered by the node's routing: $(grep '^backend' <<<"$status")"
        return 1
    fi
}

# link_tx_packets DEV: the packets DEV in the node's namespace has sent.
link_tx_packets() {
    ip -n "$E2E_NODE" -j -s link show "$1" | "$SYSTEM_PYTHON" -c 'import json, sys; print(json.load(sys.stdin)[0]["stats64"]["tx"]["packets"])'
}

# With a CNI's own programs on the pod's veth and the NIC (E2E_CNI=cilium): the walk above passed with them
# in place, so bpfnet's ran first; they still run for what bpfnet hands on. A who-has for an address that is
# no service IP reaches the NIC's, and the pod's resolution of its gateway (its ARP, which the stand-in lets
# through) the veth's.
walk_cni_programs() {
    local nic_before veth_before
    nic_before=$(cni_standin_seen "$E2E_NIC") && veth_before=$(cni_standin_seen "$E2E_VETH") || {
        E2E_REASON="cannot read the CNI stand-in's counters"
        return 1
    }
    host "$SYSTEM_PYTHON" "$E2E_DIR/arp_probe.py" --timeout 0.2 eth0 "${E2E_SERVICE_IP%.*}.250" >/dev/null
    pod ip neigh flush dev eth0
    pod curl -s --max-time 1 "http://$E2E_POD_GW:1/" >/dev/null
    local nic_after veth_after
    nic_after=$(cni_standin_seen "$E2E_NIC")
    veth_after=$(cni_standin_seen "$E2E_VETH")
    log "CNI stand-in ($E2E_CNI_STANDIN on $E2E_VETH, pass on $E2E_NIC): NIC $nic_before -> $nic_after frames, veth $veth_before -> $veth_after"
    if [ "$nic_after" -le "$nic_before" ] || [ "$veth_after" -le "$veth_before" ]; then
        E2E_REASON="the CNI's programs saw nothing of what bpfnet handed on: NIC $nic_before -> $nic_after, veth $veth_before -> $veth_after"
        return 1
    fi
}
