# shellcheck shell=bash
# The whole provisioning walk of a bare-metal host, as its firmware and ramdisk do it, every step through
# the service IP: DHCP lease -> TFTP boot file -> HTTP boot script and image from the image server -> Ironic
# lookup -> heartbeat -> Ironic calls the agent on the host. Shared by tests/e2e/test_pxe_walk.sh and the
# demo (scripts/demo.sh). Source after lib.sh, dhcp.sh and ironic.sh.
#
# WALK_FAMILIES: the walks to set up, "4" (default: the IPv4 LAN), "6" (an IPv6-only LAN: serviceIPv6 alone,
# DHCPv6 through the relay, router advertisements) or "4 6" (dual stack: both walks through one loader, one
# dnsmasq and one Ironic, each through its own service address).
#
#   pxe_walk_setup                 servers in the pod (dnsmasq DHCP+TFTP, image server, Ironic with the host
#                              enrolled), the agent stand-in on the host, and the loader
#   walk_lease                 udhcpc on the host: WALK_IP, WALK_SERVER_ID, WALK_NEXT_SERVER, WALK_BOOT_FILE;
#                              the host then uses the leased address, as a ramdisk does
#   walk_tftp                  the boot file over TFTP from the next server; WALK_TFTP_BYTES
#   walk_http                  boot script and image from the image server; WALK_IMAGE_BYTES
#   walk_lookup                Ironic lookup by the host's MAC: WALK_NODE, WALK_TOKEN
#   walk_heartbeat             heartbeat with the token, callback URL on the leased address
#   walk_agent_call            the pod calls the agent (port 9999) on the host; WALK_AGENT_SAW
#   walk6_lease ... walk6_agent_call   the same steps over IPv6 (dhclient -6, the boot file URL of option 59,
#                              the service's IPv6 address); WALK6_IP, WALK6_BOOT_URL, WALK6_NODE,
#                              WALK6_TOKEN, WALK6_AGENT_SAW
#
# Each step returns 0 or sets E2E_REASON and returns 1. Read by the sourcing script.
# shellcheck disable=SC2034

WALK_IMAGE_PORT=6180
WALK_AGENT_PORT=9999
WALK_IMAGE_BYTES=$((8 * 1024 * 1024))
WALK_TFTP_BYTES=$((1024 * 1024))
WALK_FAMILIES=${WALK_FAMILIES:-4}
# The IPv6 LAN (IPv6's benchmarking range, as tests/e2e/test_ipv6.sh): the service, the pod and its gateway.
WALK_SUBNET6=2001:2::/64
WALK_SERVICE6=2001:2::2
WALK_POD6=2001:2:0:100::2
WALK_POD_GW6=2001:2:0:100::1
WALK_RANGE6_FIRST=2001:2::100
WALK_RANGE6_LAST=2001:2::1ff

walk_has() { [[ " $WALK_FAMILIES " == *" $1 "* ]]; }

# The pod's IPv6 address and route (a dual-stack pod network); the hosts keep their link-local addresses.
walk_pod_ipv6() {
    ip -n "$E2E_NODE" -6 addr add "$WALK_POD_GW6/64" dev "$E2E_VETH" &&
        ip -n "$E2E_POD" -6 addr add "$WALK_POD6/64" dev eth0 &&
        ip -n "$E2E_POD" -6 route add default via "$WALK_POD_GW6" || {
        E2E_REASON="cannot give the pod its IPv6 address"
        return 1
    }
    local ns
    for ns in "$E2E_HOST" "$E2E_NODE" "$E2E_POD"; do
        wait_for 10 no_tentative "$ns" || {
            E2E_REASON="IPv6 addresses of $ns still tentative"
            return 1
        }
    done
}

# The loader's config for an IPv6-only or dual-stack walk (docs/config.md): each family's service address,
# its DHCP relay, TFTP, the Ironic API and the image server; router advertisements for the IPv6 hosts.
walk_write_config6() {
    local v4="" dhcp4="" backend4=""
    if walk_has 4; then
        v4="serviceIP: $E2E_SERVICE_IP"$'\n'"subnet: $E2E_SUBNET"
        dhcp4="  - {name: dhcp, protocol: udp, port: 67, kind: dhcp}"
        backend4="  ip: $E2E_POD_IP"
    fi
    cat >"$1" <<EOF
interface: $E2E_NIC
$v4
serviceIPv6: $WALK_SERVICE6
subnetV6: $WALK_SUBNET6
pinRoot: $E2E_PIN_ROOT
ports:
$dhcp4
  - {name: dhcpv6, protocol: udp, port: 547, kind: dhcpv6}
  - {name: tftp, protocol: udp, port: 69, kind: tftp}
  - {name: ironic-api, protocol: tcp, port: $IRONIC_PORT}
  - {name: images, protocol: tcp, port: $WALK_IMAGE_PORT}
routerAdvertisements:
  enabled: true
  intervalSeconds: 4
backend:
$backend4
  ipv6: $WALK_POD6
  veth: auto
EOF
}

# dnsmasq in the pod: the IPv4 PXE server (dnsmasq_start) and, for IPv6, DHCPv6 for relayed requests with
# the boot file URL (option 59); TFTP for both.
walk_dnsmasq_start() {
    local v6=()
    walk_has 6 && v6=(--dhcp-range="$WALK_RANGE6_FIRST,$WALK_RANGE6_LAST,64,10m"
        --dhcp-option="option6:bootfile-url,tftp://[$WALK_SERVICE6]/$DHCP_BOOT_FILE")
    if walk_has 4; then
        dnsmasq_start "$E2E_POD" "$WALK_DIR/dnsmasq" "${v6[@]}"
        return
    fi
    dnsmasq_run "$E2E_POD" "$WALK_DIR/dnsmasq" --log-dhcp "${v6[@]}" --enable-tftp --tftp-root="$DHCP_TFTP_ROOT" ||
        return 1
    wait_for 5 ns_udp_listens "$E2E_POD" 547 || {
        E2E_REASON="dnsmasq does not listen on UDP 547 in the pod"
        return 1
    }
}

pxe_walk_setup() {
    WALK_DIR=$E2E_TMP/walk
    DHCP_TFTP_ROOT=$WALK_DIR/tftp
    WALK_HTTP_ROOT=$WALK_DIR/images
    mkdir -p "$DHCP_TFTP_ROOT" "$WALK_HTTP_ROOT"
    random_file "$DHCP_TFTP_ROOT/$DHCP_BOOT_FILE" "$WALK_TFTP_BYTES"
    random_file "$WALK_HTTP_ROOT/ironic-agent.img" "$WALK_IMAGE_BYTES"
    printf '#!ipxe\nkernel http://%s:%s/ironic-agent.img\nboot\n' "$E2E_SERVICE_IP" "$WALK_IMAGE_PORT" \
        >"$WALK_HTTP_ROOT/boot.ipxe"
    printf '#!ipxe\nkernel http://[%s]:%s/ironic-agent.img\nboot\n' "$WALK_SERVICE6" "$WALK_IMAGE_PORT" \
        >"$WALK_HTTP_ROOT/boot6.ipxe"
    chmod -R o+rX "$WALK_DIR"
    chmod o+x "$E2E_TMP"

    # "::" serves both families (Linux's sockets take IPv4 on an IPv6 socket unless told otherwise).
    local any=0.0.0.0
    if walk_has 6; then
        walk_pod_ipv6 || return 1
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

    WALK_CONFIG=$E2E_TMP/conf/walk.yaml
    if walk_has 6; then
        walk_write_config6 "$WALK_CONFIG"
    else
        write_config --port dhcp:udp:67:67:dhcp --port tftp:udp:69:69:tftp --port ironic-api:tcp:6385 \
            --port images:tcp:"$WALK_IMAGE_PORT" "$WALK_CONFIG"
    fi
    loader_start "$WALK_CONFIG" "$E2E_TMP/logs/loader.log" || return 1
    ironic_wait 40 || return 1
    ironic_create_node "$E2E_HOST_MAC" walk-host || return 1
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

walk6_prefix_on_link() { ip -n "$E2E_HOST" -6 route show "$WALK_SUBNET6" | grep -q expires; }

walk6_lease() {
    local dir=$WALK_DIR/dhclient6 events
    dhclient6_lease "$E2E_HOST" eth0 "$dir" || return 1
    events=$dir/dhclient.events
    WALK6_IP=$(lease_field "$events" new_ip6_address BOUND6)
    WALK6_BOOT_URL=$(lease_field "$events" new_dhcp6_bootfile_url BOUND6)
    if ! ip_in_range "$WALK6_IP" "$WALK_RANGE6_FIRST" "$WALK_RANGE6_LAST" ||
        [ "$WALK6_BOOT_URL" != "tftp://[$WALK_SERVICE6]/$DHCP_BOOT_FILE" ]; then
        E2E_REASON="lease ip6=$WALK6_IP bootfile-url=$WALK6_BOOT_URL"
        return 1
    fi
    # The ramdisk configures the lease as a DHCPv6 client does (the address alone); the router advertisement
    # the loader sends made the prefix, and so the service address, on-link.
    host ip -6 addr add "$WALK6_IP/128" dev eth0 nodad || {
        E2E_REASON="cannot configure $WALK6_IP on the host"
        return 1
    }
    wait_for 10 walk6_prefix_on_link || {
        E2E_REASON="no router advertisement made $WALK_SUBNET6 on-link: $(ip -n "$E2E_HOST" -6 route | tr '\n' ' ')"
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
    local script image url="http://[$WALK_SERVICE6]:$WALK_IMAGE_PORT"
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
        "http://[$WALK_SERVICE6]:$IRONIC_PORT/v1/lookup?addresses=$E2E_HOST_MAC") || {
        E2E_REASON="lookup through [$WALK_SERVICE6] failed"
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
    if ! grep -F 'eventlet.wsgi.server' "$IRONIC_LOG" | grep -F '/v1/lookup' | grep -qF "$WALK6_IP"; then
        E2E_REASON="Ironic's access log has no lookup from $WALK6_IP"
        return 1
    fi
}

walk6_heartbeat() {
    local code
    code=$(host curl -sS -6 --max-time 10 -o /dev/null -w '%{http_code}' -X POST \
        -H "X-OpenStack-Ironic-API-Version: $IRONIC_API_VERSION" -H 'Content-Type: application/json' \
        -d "{\"callback_url\": \"http://[$WALK6_IP]:$WALK_AGENT_PORT\", \"agent_token\": \"$WALK6_TOKEN\", \"agent_version\": \"9.0.0\"}" \
        "http://[$WALK_SERVICE6]:$IRONIC_PORT/v1/heartbeat/$WALK6_NODE")
    if [ "$code" != 202 ]; then
        E2E_REASON="heartbeat answered HTTP $code, want 202"
        return 1
    fi
    # Ironic saw the heartbeat come from the host's own address.
    if ! grep -F 'eventlet.wsgi.server' "$IRONIC_LOG" | grep -F "/v1/heartbeat/$WALK6_NODE" | grep -qF "$WALK6_IP"; then
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
    if [ "$WALK6_AGENT_SAW" != "$WALK_SERVICE6" ]; then
        E2E_REASON="the agent saw the call from $WALK6_AGENT_SAW, want the service address $WALK_SERVICE6"
        return 1
    fi
}
