# shellcheck shell=bash
# The whole provisioning walk of a bare-metal host, as its firmware and ramdisk do it, every step through
# the service IP: DHCP lease -> TFTP boot file -> HTTP boot script and image from the image server -> Ironic
# lookup -> heartbeat -> Ironic calls the agent on the host. Shared by tests/e2e/test_pxe_walk.sh and the
# demo (scripts/demo.sh). Source after lib.sh, dhcp.sh and ironic.sh.
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
#
# Each step returns 0 or sets E2E_REASON and returns 1. Read by the sourcing script.
# shellcheck disable=SC2034

WALK_IMAGE_PORT=6180
WALK_AGENT_PORT=9999
WALK_IMAGE_BYTES=$((8 * 1024 * 1024))
WALK_TFTP_BYTES=$((1024 * 1024))

pxe_walk_setup() {
    WALK_DIR=$E2E_TMP/walk
    DHCP_TFTP_ROOT=$WALK_DIR/tftp
    WALK_HTTP_ROOT=$WALK_DIR/images
    mkdir -p "$DHCP_TFTP_ROOT" "$WALK_HTTP_ROOT"
    random_file "$DHCP_TFTP_ROOT/$DHCP_BOOT_FILE" "$WALK_TFTP_BYTES"
    random_file "$WALK_HTTP_ROOT/ironic-agent.img" "$WALK_IMAGE_BYTES"
    printf '#!ipxe\nkernel http://%s:%s/ironic-agent.img\nboot\n' "$E2E_SERVICE_IP" "$WALK_IMAGE_PORT" \
        >"$WALK_HTTP_ROOT/boot.ipxe"
    chmod -R o+rX "$WALK_DIR"
    chmod o+x "$E2E_TMP"

    dnsmasq_start "$E2E_POD" "$WALK_DIR/dnsmasq" || return 1
    # The image server runs unprivileged: 6180 needs no capability.
    # Debian's python3: a per-user interpreter (pyenv) is not readable by nobody.
    bg_in_ns "$E2E_POD" "$WALK_DIR/images.log" setpriv --reuid=65534 --regid=65534 --clear-groups \
        /usr/bin/python3 -m http.server "$WALK_IMAGE_PORT" --bind 0.0.0.0 --directory "$WALK_HTTP_ROOT"
    bg_in_ns "$E2E_HOST" "$WALK_DIR/agent.log" python3 "$E2E_DIR/addr_server.py" 0.0.0.0 "$WALK_AGENT_PORT"
    ironic_start "$E2E_POD" "$WALK_DIR/ironic" || return 1

    WALK_CONFIG=$E2E_TMP/conf/walk.yaml
    write_config --port dhcp:udp:67:67:dhcp --port tftp:udp:69:69:tftp --port ironic-api:tcp:6385 \
        --port images:tcp:"$WALK_IMAGE_PORT" "$WALK_CONFIG"
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
    # From here on the host is the ramdisk: it uses the address it leased.
    host ip addr flush dev eth0
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
