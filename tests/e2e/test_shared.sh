#!/usr/bin/env bash
# Virtual media without a provisioning network and without an extra IP (docs/design.md, "Shared addresses"):
# the node's NIC is on the hosts' own network with the node's address (198.18.0.20) and the control plane's
# VIP (198.18.0.5/32, added as kube-vip and keepalived add theirs); bpfnet serves Ironic's ramdisk ports on the
# VIP without owning it (sharedAddresses, no serviceIP, no DHCP, no TFTP). The node forwards and masquerades its
# pods' traffic, as every CNI's node does. The walk is virtual media's: the "BMC" (the host) fetches the boot
# ISO from the image server with a Range request, the "agent" looks itself up and heartbeats on 6385, Ironic
# calls it back; the VIP's other ports stay the node's (a 6443 stand-in answers, an unlisted pod port is not
# reached), its ARP is the kernel's, and the steering follows the VIP away and back in the middle of a
# download. With `address: node` the node's own address serves the same ports.
#
#   usage: test_shared.sh PATH/TO/bpfnet-loader [--case KEY]... | --list   (as root; it sandboxes itself, see lib.sh)
#   env:   E2E_KEEP_TMP    keep the temporary directory (configs, logs) for inspection
#
# Cases are called through run_cases (the case list), which shellcheck cannot see.
# shellcheck disable=SC2317
set -uo pipefail

# shellcheck source-path=SCRIPTDIR source=lib.sh
source "$(dirname "$(realpath "$0")")/lib.sh"
# shellcheck source=dhcp.sh
source "$E2E_DIR/dhcp.sh"
# shellcheck source=ironic.sh
source "$E2E_DIR/ironic.sh"
# shellcheck source=lan6.sh
source "$E2E_DIR/lan6.sh"

# The cases, in the order of a full run, with what each starts from (lib.sh, "The case list").
e2e_fixture world shared_world
e2e_fixture loader shared_loader world
e2e_fixture enrolled ironic_enrolled loader
e2e_case arp_is_the_nodes case_arp_is_the_nodes "the VIP's ARP is answered by the node's kernel, not the datapath" loader
e2e_case virtual_media case_virtual_media "the BMC fetches the boot ISO from the VIP: a Range request (206) and the whole file" loader
e2e_case source_kept case_source_kept "a listed port's pod sees the client's own address (targetPort translated)" loader
e2e_case agent_lookup_heartbeat case_agent_lookup_heartbeat "the agent's lookup and heartbeat reach Ironic on the VIP's 6385" enrolled
e2e_case ironic_calls_agent case_ironic_calls_agent "Ironic's call to the agent leaves through the node's routing (the CNI's masquerade)" loader
e2e_case in_cluster_clients case_in_cluster_clients "the same pod ports still answer the cluster's own clients (the node, as kubelet and a ClusterIP Service reach the pod)" loader
e2e_case host_ports_stay case_host_ports_stay "the VIP's other ports are the node's: 6443 answered there, the pod's unlisted port not reached" loader
e2e_case status_shows_shared case_status_shows_shared "bpfnetctl status: the shared address, who holds it, its steered ports" loader
e2e_case address_moves case_address_moves "the VIP moves mid-download to a node without the loader (cut off there; this node keeps its listed ports for the pod), returns, and the download resumes" loader
e2e_case pod_on_another_node case_pod_on_another_node "the VIP on another control-plane node without the pod: that node's loader hands the VIP's ports to this one, whose pod answers from the VIP (the BMC's Range request and ISO, the agent's lookup and heartbeat, Ironic's call back); the client's address kept" enrolled
e2e_case node_address case_node_address "address: node: the node's own address serves the ports (the virtual-media walk: Range request and ISO, the agent's lookup and heartbeat), the VIP no longer" enrolled
e2e_case ipv6_vip case_ipv6_vip "an IPv6 VIP: held once its duplicate address detection is over, the client's address kept, NDP the node's" loader

e2e_start "$@"
bpfnetctl_argument

require_tools curl python3 busybox nft nsenter sha256sum bpftool

NODE_ADDR=198.18.0.20 # the node's own address on the hosts' network
VIP=198.18.0.5        # the control plane's VIP (kube-vip, keepalived): a /32 the node holds
MEDIA_PORT=6180       # Ironic's virtual media / image server port (httpd in ironic-image)
WHOAMI_PORT=7000      # a listed port whose pod server (8080) answers with the client address it saw
ISO_BYTES=$((16 * 1024 * 1024))
# The image case address_moves cuts off mid-download: larger than what TCP still delivers after the VIP left.
# The host's ACKs then go to the other node, whose resets lag behind the data still arriving from this node
# (out of the window, they are dropped), so the pod fills the host's window until it stalls: 9-20 MB here
# (tcp_rmem's maximum is 32 MiB), and the whole 16 MiB of boot.iso once in CI. The reset reaches curl only
# once it has read what its socket holds: at MOVING_RATE, seconds later.
MOVING_BYTES=$((64 * 1024 * 1024))
MOVING_RATE=4M
MEDIA_ROOT=""
AGENT_PORT=9999
NODE_ADDR6=2001:2::20 # the node's own IPv6 address, and an IPv6 VIP beside it
VIP6=2001:2::5
HOST_ADDR6=2001:2::10

node() { ip netns exec "$E2E_NODE" "$@"; }
ctl() { nsenter --net="/run/netns/$E2E_NODE" "$BPFNETCTL" "$@"; }

# The node's NIC as a node's is: its own address and the VIP on it, forwarding on, its pods' traffic leaving
# masqueraded; the pod's servers (the image server, a whoami), the node's own API server stand-in on
# 6443, and the agent's callback listener on the host.
shared_world() {
    topology_create
    node ip addr add "$NODE_ADDR/24" dev "$E2E_NIC" || die "node address"
    node ip addr add "$VIP/32" dev "$E2E_NIC" || die "VIP"
    node sysctl -qw net.ipv4.ip_forward=1 || die "forwarding"
    # kube-proxy's rule in iptables mode beside the CNI's masquerade: forwarded packets conntrack calls invalid
    # are dropped (its KUBE-FORWARD chain), as a connection whose other direction the node never saw is.
    node nft -f - <<EOF || die "masquerade rule"
table ip cni-nat {
  chain postrouting {
    type nat hook postrouting priority srcnat;
    ip saddr ${E2E_POD_IP%.*}.0/24 oifname "$E2E_NIC" masquerade
  }
}
table ip kube-proxy-standin {
  chain forward {
    type filter hook forward priority filter;
    ct state invalid drop
  }
}
EOF
    MEDIA_ROOT=$E2E_TMP/media
    mkdir -p "$MEDIA_ROOT"
    random_file "$MEDIA_ROOT/boot.iso" "$ISO_BYTES"
    chmod -R o+rX "$MEDIA_ROOT"
    chmod o+x "$E2E_TMP"
    bg_in_ns "$E2E_POD" "$LOGS/media.log" busybox httpd -f -vv -p "0.0.0.0:$MEDIA_PORT" -h "$MEDIA_ROOT"
    bg_in_ns "$E2E_POD" "$LOGS/whoami.log" python3 "$E2E_DIR/addr_server.py" :: 8080
    bg_in_ns "$E2E_NODE" "$LOGS/apiserver.log" python3 "$E2E_DIR/addr_server.py" 0.0.0.0 6443
    bg_in_ns "$E2E_HOST" "$LOGS/agent.log" python3 "$E2E_DIR/addr_server.py" 0.0.0.0 "$AGENT_PORT"
    wait_for 10 pod_listens "$MEDIA_PORT" || die "the image server does not listen"
    wait_for 10 pod_listens 8080 || die "the whoami server does not listen"
    log "world up: node $NODE_ADDR and VIP $VIP on $E2E_NIC, pod $E2E_POD_IP behind $E2E_VETH"
}

# write_shared_config FILE ADDRESS [NIC PIN_ROOT BACKEND_LINES]: no provisioning LAN, the ramdisk's ports on
# one shared address (on NIC, pinned under PIN_ROOT; the backend the pod here, or BACKEND_LINES).
write_shared_config() {
    cat >"$1" <<EOF
interface: ${3:-$E2E_NIC}
pinRoot: ${4:-$E2E_PIN_ROOT}
${3:+controlSocket: $E2E_TMP/$3.sock}
sharedAddresses:
  - address: $2
    ports:
      - name: ironic-api
        protocol: tcp
        port: $IRONIC_PORT
      - name: virtual-media
        protocol: tcp
        port: $MEDIA_PORT
      - name: whoami
        protocol: tcp
        port: $WHOAMI_PORT
        targetPort: 8080
backend:
  ip: $E2E_POD_IP
${5:-}
EOF
}

shared_loader() {
    write_shared_config "$CONFIG" "$VIP"
    loader_start "$CONFIG" "$LOGS/loader.log" || die "loader: $E2E_REASON"
    wait_for 10 grep -q "shared address held here" "$LOGS/loader.log" || die "the loader did not take the VIP as held"
}

# Ironic in the pod (only the agent's case needs it: each case alone starts what it needs).
ironic_enrolled() {
    ironic_start "$E2E_POD" "$E2E_TMP/ironic" || die "Ironic: $E2E_REASON"
    ironic_wait 40 || die "Ironic: $E2E_REASON"
    ironic_create_node "$E2E_HOST_MAC" vmedia-host || die "enrol: $E2E_REASON"
}

# ---------------------------------------------------------------------------------------------------
# Cases

case_arp_is_the_nodes() {
    local mac before
    before=$(counter arp_reply) || { E2E_REASON="no counters"; return 1; }
    host ip neigh flush dev eth0
    host curl -s -o /dev/null --max-time 5 "http://$VIP:$MEDIA_PORT/" || true
    mac=$(host ip neigh show "$VIP" dev eth0 | awk '{print $3}')
    if [ "$mac" != "$E2E_NIC_MAC" ]; then
        E2E_REASON="the host resolved $VIP to '$mac', want the node's NIC $E2E_NIC_MAC"
        return 1
    fi
    if [ "$(counter arp_reply)" != "$before" ]; then
        E2E_REASON="the datapath answered ARP (arp_reply $before -> $(counter arp_reply)): the VIP is the node's"
        return 1
    fi
}

case_virtual_media() {
    local part=$E2E_TMP/part full=$E2E_TMP/full.iso code
    code=$(host curl -sS --max-time 20 -r 1048576-2097151 -o "$part" -w '%{http_code}' "http://$VIP:$MEDIA_PORT/boot.iso")
    if [ "$code" != 206 ] || ! cmp -s "$part" <(tail -c +1048577 "$MEDIA_ROOT/boot.iso" | head -c 1048576); then
        E2E_REASON="Range GET through $VIP answered HTTP $code, or other bytes ($(stat -c %s "$part" 2>/dev/null) bytes)"
        return 1
    fi
    host curl -sSf --max-time 60 -o "$full" "http://$VIP:$MEDIA_PORT/boot.iso" || {
        E2E_REASON="GET of the ISO through $VIP failed"
        return 1
    }
    same_iso "$full" || { E2E_REASON="the ISO fetched through $VIP differs from the server's"; return 1; }
}

# same_iso FILE [SERVED]: FILE is the image the server serves as SERVED (boot.iso).
same_iso() { [ "$(sha256sum <"$1")" = "$(sha256sum <"$MEDIA_ROOT/${2:-boot.iso}")" ]; }

case_source_kept() {
    local saw
    saw=$(host curl -sS --max-time 5 "http://$VIP:$WHOAMI_PORT/") || {
        E2E_REASON="$VIP:$WHOAMI_PORT did not answer"
        return 1
    }
    if [ "$saw" != "$E2E_HOST_IP" ]; then
        E2E_REASON="the pod saw the call from '$saw', want the host's own $E2E_HOST_IP"
        return 1
    fi
}

AGENT_NODE=""
AGENT_TOKEN=""
case_agent_lookup_heartbeat() {
    local body code token
    body=$(host curl -sS --max-time 10 -H "X-OpenStack-Ironic-API-Version: $IRONIC_API_VERSION" \
        "http://$VIP:$IRONIC_PORT/v1/lookup?addresses=$E2E_HOST_MAC") || {
        E2E_REASON="lookup through $VIP failed"
        return 1
    }
    AGENT_NODE=$(json_get node.uuid <<<"$body" 2>/dev/null)
    token=$(json_get config.agent_token <<<"$body" 2>/dev/null)
    # Ironic hands the token out at the first lookup only (later ones mask it): an agent looking itself up
    # again (a case run after this one) keeps the token it has.
    [[ $token =~ ^[*]*$ ]] || AGENT_TOKEN=$token
    if [ "$AGENT_NODE" != "$IRONIC_NODE_UUID" ] || [ -z "$AGENT_TOKEN" ]; then
        E2E_REASON="lookup answered node '$AGENT_NODE': ${body:0:200}"
        return 1
    fi
    code=$(host curl -sS --max-time 10 -o /dev/null -w '%{http_code}' -X POST \
        -H "X-OpenStack-Ironic-API-Version: $IRONIC_API_VERSION" -H 'Content-Type: application/json' \
        -d "{\"callback_url\": \"http://$E2E_HOST_IP:$AGENT_PORT\", \"agent_token\": \"$AGENT_TOKEN\", \"agent_version\": \"9.0.0\"}" \
        "http://$VIP:$IRONIC_PORT/v1/heartbeat/$AGENT_NODE")
    if [ "$code" != 202 ]; then
        E2E_REASON="heartbeat through $VIP answered HTTP $code, want 202"
        return 1
    fi
}

# With fake hardware the conductor does not call the agent itself; the pod's curl stands in for it. The call
# is the pod's own: the node routes and masquerades it (bpfnet never speaks for the node's addresses).
case_ironic_calls_agent() {
    local saw
    saw=$(pod curl -sS --max-time 10 "http://$E2E_HOST_IP:$AGENT_PORT/") || {
        E2E_REASON="the pod could not reach the agent at $E2E_HOST_IP:$AGENT_PORT"
        return 1
    }
    if [ "$saw" != "$NODE_ADDR" ]; then
        E2E_REASON="the agent saw the call from '$saw', want the node's address $NODE_ADDR (masqueraded)"
        return 1
    fi
}

# While the node holds the VIP, the pod's listed ports still answer the cluster's own clients: the node itself
# (kubelet's probes; a ClusterIP Service's traffic reaches the pod through the node's routing the same way),
# whose answers the node routes to itself, not out of the NIC.
case_in_cluster_clients() {
    local saw
    saw=$(node curl -sS --max-time 5 "http://$E2E_POD_IP:8080/") || {
        E2E_REASON="the node could not reach the pod's 8080 (the whoami port, listed as $WHOAMI_PORT on the VIP)"
        return 1
    }
    if [ "$saw" != "$E2E_POD_GW" ]; then
        E2E_REASON="the pod saw the node's call from '$saw', want the node's side of the veth $E2E_POD_GW"
        return 1
    fi
    node curl -sSf --max-time 10 -o /dev/null -r 0-1023 "http://$E2E_POD_IP:$MEDIA_PORT/boot.iso" || {
        E2E_REASON="the node could not fetch from the pod's image server directly"
        return 1
    }
}

case_host_ports_stay() {
    local saw requests
    saw=$(host curl -sS --max-time 5 "http://$VIP:6443/") || {
        E2E_REASON="the node's own 6443 on $VIP did not answer"
        return 1
    }
    if [ "$saw" != "$E2E_HOST_IP" ]; then
        E2E_REASON="the node's 6443 saw '$saw', want $E2E_HOST_IP"
        return 1
    fi
    requests=$(grep -c 'GET' "$LOGS/whoami.log" || true)
    if host curl -s -o /dev/null --max-time 3 "http://$VIP:8080/"; then
        E2E_REASON="$VIP:8080 (not listed) answered"
        return 1
    fi
    if [ "$(grep -c 'GET' "$LOGS/whoami.log" || true)" != "$requests" ]; then
        E2E_REASON="a request to $VIP:8080 (not listed) reached the pod"
        return 1
    fi
}

case_status_shows_shared() {
    local text json
    text=$(ctl status 2>&1) || { E2E_REASON="bpfnetctl status failed: $text"; return 1; }
    local want="shared address .*$VIP: the node's, held on $E2E_NIC .*tcp/$MEDIA_PORT to $E2E_POD_IP:$MEDIA_PORT, tcp/$IRONIC_PORT to $E2E_POD_IP:$IRONIC_PORT, tcp/$WHOAMI_PORT to $E2E_POD_IP:8080"
    grep -qE "$want" <<<"$text" || { E2E_REASON="status lacks the shared address line: $(grep -i shared <<<"$text")"; return 1; }
    json=$(ctl -o json status) || { E2E_REASON="bpfnetctl -o json status failed"; return 1; }
    python3 -c "$SHARED_STATUS_PY" "$VIP" "$E2E_NIC" <<<"$json" || {
        E2E_REASON="status JSON: shared_addresses wrong: $json"
        return 1
    }
}

# The status JSON's shared_addresses: the VIP alone, held on the NIC, its three ports; no service IP of it.
SHARED_STATUS_PY='
import json, sys
status = json.load(sys.stdin)
shared = status["shared_addresses"]
assert [s["ip"] for s in shared] == [sys.argv[1]], shared
assert shared[0]["held_on"] == sys.argv[2], shared
assert {(p["protocol"], p["port"]) for p in shared[0]["ports"]} == {("tcp", 6385), ("tcp", 6180), ("tcp", 7000)}, shared
assert all(s["ip"] != sys.argv[1] for s in status["service_ips"]), status["service_ips"]
'

# shared_steered: the datapath lists the VIP's ports (bpfnetctl status shows it as a shared address).
shared_steered() { ctl -o json status 2>/dev/null | grep -q "\"ip\": *\"$VIP\""; }

# kube-vip moving the VIP to another control-plane node (one without bpfnet's loader: its kernel has no socket
# on the VIP's ports) and back, announced each time with a gratuitous ARP as kube-vip announces it: the BMC's
# download in flight is cut off by the new holder, the ports are answered there by nobody; this node, with the
# pod, keeps the VIP's listed ports steered to it (a node holding the VIP may hand them on); the VIP comes back
# and the BMC's next request, a Range request from where it stopped, completes.
# loader_logged_ms TEXT: the time (epoch ms) of the loader's last log line holding TEXT.
loader_logged_ms() {
    grep "$1" "$LOGS/loader.log" | tail -n1 | sed -E 's/^ts=([^ ]+) .*/\1/' |
        python3 -c 'import datetime, sys; t = sys.stdin.read().strip().replace("Z", "+00:00"); print(round(datetime.datetime.fromisoformat(t).timestamp() * 1000))'
}
# logged_more LOG TEXT N: LOG has more than N lines holding TEXT (for wait_for after a change).
logged_more() { [ "$(grep -c "$2" "$1")" -gt "$3" ]; }

# The other control-plane node: a namespace on the LAN bridge with its own address (kube-vip's and keepalived's
# peers share one link), forwarding on; its loader only when a case starts it (holder_loader_up).
HOLDER=e2e-holder
HOLDER_ADDR=198.18.0.21
HOLDER_MAC=02:00:00:00:00:21
holder() { ip netns exec "$HOLDER" "$@"; }
holder_up() {
    [ -e "/run/netns/$HOLDER" ] && return 0
    ip netns add "$HOLDER" || return 1
    E2E_NAMESPACES+=("$HOLDER")
    holder ip link set lo up
    lan_host_attach "$HOLDER" "$HOLDER_ADDR" "$HOLDER_MAC" "$(lan_bridge_ns)"
    holder sysctl -qw net.ipv4.ip_forward=1
}
# vip_to holder|node: kube-vip moving the VIP: off the one node, onto the other, announced from its MAC (an
# RFC 5227 announcement: a gratuitous ARP request updates the hosts' entries at once, where an unsolicited
# reply to the broadcast address waits out their entries' lock time).
vip_to() {
    if [ "$1" = holder ]; then
        node ip addr del "$VIP/32" dev "$E2E_NIC" 2>/dev/null
        holder ip addr add "$VIP/32" dev eth0 2>/dev/null
        holder python3 "$E2E_DIR/arp_announce.py" --count 2 --op request eth0 "$VIP" "$HOLDER_MAC" >/dev/null
    else
        holder ip addr del "$VIP/32" dev eth0 2>/dev/null
        node ip addr add "$VIP/32" dev "$E2E_NIC" 2>/dev/null
        node python3 "$E2E_DIR/arp_announce.py" --count 2 --op request "$E2E_NIC" "$VIP" "$E2E_NIC_MAC" >/dev/null
    fi
}

case_address_moves() {
    local dl=$E2E_TMP/moving.iso pid got left held_before gone_before status
    holder_up || { E2E_REASON="cannot make the other node"; return 1; }
    rm -f "$dl"
    [ -e "$MEDIA_ROOT/moving.iso" ] || random_file "$MEDIA_ROOT/moving.iso" "$MOVING_BYTES"
    chmod o+r "$MEDIA_ROOT/moving.iso"
    host curl -sS --max-time 60 --limit-rate "$MOVING_RATE" -o "$dl" "http://$VIP:$MEDIA_PORT/moving.iso" \
        2>"$LOGS/moving.err" &
    pid=$!
    wait_for 10 test -s "$dl" || { E2E_REASON="the download did not start"; return 1; }
    local left_ms came_ms
    gone_before=$(grep -c "no longer held here" "$LOGS/loader.log")
    left_ms=$(date +%s%3N)
    vip_to holder
    wait_for 5 logged_more "$LOGS/loader.log" "no longer held here" "$gone_before" || {
        E2E_REASON="the loader did not follow the VIP away"
        return 1
    }
    status=$(ctl status 2>&1)
    [[ $status == *"$VIP: the node's, held by no interface here (its listed ports still reach the pod here"* ]] || {
        E2E_REASON="status after the VIP left: $(grep -i shared <<<"$status")"
        return 1
    }
    if host curl -s -o /dev/null --max-time 2 -r 0-0 "http://$VIP:$MEDIA_PORT/boot.iso"; then
        E2E_REASON="a new request to $VIP:$MEDIA_PORT was answered while the other node, without the loader, held it"
        return 1
    fi
    left=0
    wait_for 30 pid_gone "$pid" || left=1
    kill "$pid" 2>/dev/null
    wait "$pid" 2>/dev/null
    local curl_exit=$?
    got=$(stat -c %s "$dl")
    if [ "$got" -ge "$MOVING_BYTES" ]; then
        E2E_REASON="the download had ended ($got bytes) before the VIP left: nothing was cut off"
        return 1
    fi
    [ "$left" = 0 ] || { E2E_REASON="the download in flight was not cut off by the new holder ($got bytes in 30 s)"; return 1; }
    # 56: the connection reset (the new holder's answer to the host's ACKs); 28 would be curl's own time limit.
    [ "$curl_exit" = 56 ] || {
        E2E_REASON="the download ended with curl's exit $curl_exit, not a reset: $(tail -c 200 "$LOGS/moving.err")"
        return 1
    }
    held_before=$(grep -c "shared address held here" "$LOGS/loader.log")
    came_ms=$(date +%s%3N)
    vip_to node
    wait_for 5 logged_more "$LOGS/loader.log" "shared address held here" "$held_before" ||
        { E2E_REASON="the loader did not follow the VIP back"; return 1; }
    log "the loader followed the VIP away in $(($(loader_logged_ms "no longer held here") - left_ms)) ms and back in $(($(loader_logged_ms "shared address held here") - came_ms)) ms (its log's times)"
    host curl -sS --max-time 60 -C - -o "$dl" "http://$VIP:$MEDIA_PORT/moving.iso" 2>>"$LOGS/moving.err" || {
        E2E_REASON="the download did not resume through $VIP: $(tail -c 300 "$LOGS/moving.err")"
        return 1
    }
    same_iso "$dl" moving.iso || { E2E_REASON="the resumed ISO differs from the server's"; return 1; }
    log "the VIP left after $got of $MOVING_BYTES bytes, came back, and a Range request fetched the rest"
}

case_node_address() {
    local next=$E2E_TMP/conf/node.yaml reloads saw
    reloads=$(loader_reloads)
    write_shared_config "$next" node
    replace_file "$next" "$CONFIG"
    wait_for 10 loader_reloaded_since "$reloads" || { E2E_REASON="the loader did not reload"; return 1; }
    wait_for 5 grep -q "shared address held here.*$NODE_ADDR" "$LOGS/loader.log" || {
        E2E_REASON="the node's address is not held: $(grep -m1 'shared address' "$LOGS/loader.log")"
        return 1
    }
    saw=$(host curl -sS --max-time 5 "http://$NODE_ADDR:$WHOAMI_PORT/") || {
        E2E_REASON="$NODE_ADDR:$WHOAMI_PORT did not answer"
        return 1
    }
    [ "$saw" = "$E2E_HOST_IP" ] || { E2E_REASON="the pod saw '$saw' through $NODE_ADDR"; return 1; }
    # The virtual-media walk on the node's own address: the BMC's Range request and ISO, the agent's lookup and
    # heartbeat to Ironic.
    VIP=$NODE_ADDR case_virtual_media || { E2E_REASON="on $NODE_ADDR: $E2E_REASON"; return 1; }
    VIP=$NODE_ADDR case_agent_lookup_heartbeat || { E2E_REASON="on $NODE_ADDR: $E2E_REASON"; return 1; }
    saw=$(host curl -sS --max-time 5 "http://$NODE_ADDR:6443/") || { E2E_REASON="the node's 6443 on its address did not answer"; return 1; }
    if host curl -s -o /dev/null --max-time 3 "http://$VIP:$WHOAMI_PORT/"; then
        E2E_REASON="$VIP:$WHOAMI_PORT still steered after the config named the node's address"
        return 1
    fi
}

# The other node's loader, configured as a control-plane node without the Ironic pod is: the same shared
# address, its backend on this node (backend.node).
holder_loader_up() {
    holder_up || return 1
    [ -n "${HOLDER_PID:-}" ] && ! pid_gone "$HOLDER_PID" && return 0
    write_shared_config "$E2E_TMP/conf/holder.yaml" "$VIP" eth0 "$E2E_PIN_ROOT-holder" "  node: $NODE_ADDR"
    nsenter --net="/run/netns/$HOLDER" "$LOADER" --config "$E2E_TMP/conf/holder.yaml" --log-level debug \
        >>"$LOGS/holder-loader.log" 2>&1 &
    HOLDER_PID=$!
    E2E_PIDS+=("$HOLDER_PID")
    wait_for 15 grep -q 'maps reconciled' "$LOGS/holder-loader.log"
}
holder_counter() {
    bpftool -j map dump pinned "$E2E_PIN_ROOT-holder/eth0/counters" 2>/dev/null |
        python3 -c "$E2E_COUNTER_PY" "$E2E_REPO/maps/bpfnet_maps.h" "$1"
}

# kube-vip moves the VIP to the other node, which has no Ironic pod: its loader hands the listed ports' packets
# to this node as they came (a hop older), this node steers them into the pod, held or not, and the pod's
# answers leave here as the VIP. The client sees one address throughout; the pod sees the client's own
# address; this node's kube-proxy rule drops whatever its conntrack would see of one direction only.
case_pod_on_another_node() {
    pod_on_another_node_walk
    local rc=$?
    vip_to node # as the cases after this one expect it, whatever happened
    wait_for 5 shared_held_here || { [ "$rc" != 0 ] || E2E_REASON="the VIP did not come back to $E2E_NIC"; return 1; }
    return "$rc"
}
shared_held_here() { ctl status 2>/dev/null | grep -q "$VIP: the node's, held on $E2E_NIC"; }

pod_on_another_node_walk() {
    local dl=$E2E_TMP/remote.iso saw forwarded status next=$E2E_TMP/conf/vip.yaml reloads held_before
    local taken_before forwarded_before taken
    # This node's config shares the VIP, as the fixture's does (a case before may have named another address).
    write_shared_config "$next" "$VIP"
    if ! cmp -s "$next" "$CONFIG"; then
        reloads=$(loader_reloads)
        replace_file "$next" "$CONFIG"
        wait_for 10 loader_reloaded_since "$reloads" || { E2E_REASON="the loader did not reload"; return 1; }
    fi
    holder_loader_up || { E2E_REASON="the other node's loader did not start: $(tail -n 5 "$LOGS/holder-loader.log")"; return 1; }
    held_before=$(grep -c "shared address held here" "$LOGS/holder-loader.log")
    vip_to holder
    wait_for 5 logged_more "$LOGS/holder-loader.log" "shared address held here" "$held_before" ||
        { E2E_REASON="the other node's loader did not take the VIP as held"; return 1; }
    status=$(nsenter --net="/run/netns/$HOLDER" "$BPFNETCTL" --pin-root "$E2E_PIN_ROOT-holder" \
        --control-socket "$E2E_TMP/eth0.sock" status 2>&1)
    [[ $status == *"tcp/$MEDIA_PORT to $E2E_POD_IP:$MEDIA_PORT on the node at $NODE_ADDR"* ]] ||
        { E2E_REASON="the other node's status does not name the pod's node: $(grep -i shared <<<"$status")"; return 1; }
    taken_before=$(counter dnat_service)
    forwarded_before=$(holder_counter forward_to_node)
    rm -f "$dl"
    host curl -sS --max-time 30 -o "$dl" "http://$VIP:$MEDIA_PORT/boot.iso" 2>"$LOGS/remote.err" || {
        E2E_REASON="the ISO through the other node failed: $(tail -c 300 "$LOGS/remote.err")"
        return 1
    }
    same_iso "$dl" || { E2E_REASON="the ISO through the other node differs from the server's"; return 1; }
    # The rest of the virtual-media walk through the other node: the BMC's Range request, the agent booted from
    # the ISO looking itself up and heartbeating to Ironic, Ironic calling it back.
    case_virtual_media || { E2E_REASON="through the other node: $E2E_REASON"; return 1; }
    case_agent_lookup_heartbeat || { E2E_REASON="through the other node: $E2E_REASON"; return 1; }
    case_ironic_calls_agent || { E2E_REASON="with the VIP on the other node: $E2E_REASON"; return 1; }
    saw=$(host curl -sS --max-time 5 "http://$VIP:$WHOAMI_PORT/") || { E2E_REASON="whoami through the other node"; return 1; }
    [ "$saw" = "$E2E_HOST_IP" ] || { E2E_REASON="the pod saw '$saw' through the other node, want $E2E_HOST_IP"; return 1; }
    forwarded=$(($(holder_counter forward_to_node) - ${forwarded_before:-0}))
    taken=$(($(counter dnat_service) - taken_before))
    [ "$forwarded" -gt 0 ] || { E2E_REASON="the other node's forward_to_node did not move"; return 1; }
    # Every packet the other node handed on was taken into the pod here by the datapath, not by the stack.
    [ "$taken" -ge "$forwarded" ] || { E2E_REASON="forward_to_node $forwarded there, dnat_service $taken here"; return 1; }
    # The VIP's other ports are the other node's own (nothing listens there: refused).
    if host curl -s -o /dev/null --max-time 3 "http://$VIP:6443/"; then
        E2E_REASON="$VIP:6443 answered on the node without the API server stand-in"
        return 1
    fi
    log "through the other node: the ISO ($ISO_BYTES bytes, and a Range request), the agent's lookup and heartbeat (node $AGENT_NODE), Ironic's call back; the pod saw $saw; forward_to_node $forwarded there, dnat_service $taken here"
}

# An IPv6 VIP (the control plane's, on an IPv6 cluster): the loader takes it as held once its duplicate address
# detection is over; the pod sees the client's own address; the VIP's neighbour solicitations are the node
# kernel's (the datapath's NDP counter does not move).
case_ipv6_vip() {
    local next=$E2E_TMP/conf/vip6.yaml reloads saw mac before added
    lan6_pod_address || return 1
    host ip -6 addr add "$HOST_ADDR6/64" dev eth0 nodad
    node ip -6 addr add "$NODE_ADDR6/64" dev "$E2E_NIC" nodad
    node sysctl -qw net.ipv6.conf.all.forwarding=1
    reloads=$(loader_reloads)
    cat >"$next" <<EOC
interface: $E2E_NIC
pinRoot: $E2E_PIN_ROOT
sharedAddresses:
  - address: $VIP6
    ports:
      - {name: whoami, protocol: tcp, port: $WHOAMI_PORT, targetPort: 8080}
backend:
  ipv6: $LAN6_POD
EOC
    replace_file "$next" "$CONFIG"
    wait_for 10 loader_reloaded_since "$reloads" || { E2E_REASON="the loader did not reload"; return 1; }
    added=$(date +%s%3N)
    node ip -6 addr add "$VIP6/128" dev "$E2E_NIC" # with duplicate address detection, as kube-vip adds it
    wait_for 10 grep -q "shared address held here.*$VIP6" "$LOGS/loader.log" || {
        E2E_REASON="the IPv6 VIP is not held: $(grep 'shared address' "$LOGS/loader.log" | tail -n1)"
        return 1
    }
    log "the IPv6 VIP was taken as held $(($(loader_logged_ms "held here.*$VIP6") - added)) ms after it was added (its duplicate address detection)"
    before=$(counter ndp_reply) || { E2E_REASON="no counters"; return 1; }
    saw=$(host curl -sS -g --max-time 5 "http://[$VIP6]:$WHOAMI_PORT/") || {
        E2E_REASON="[$VIP6]:$WHOAMI_PORT did not answer"
        return 1
    }
    [ "$saw" = "$HOST_ADDR6" ] || { E2E_REASON="the pod saw '$saw' through the IPv6 VIP, want $HOST_ADDR6"; return 1; }
    mac=$(host ip -6 neigh show "$VIP6" dev eth0 | awk '{print $3}')
    [ "$mac" = "$E2E_NIC_MAC" ] || { E2E_REASON="the host resolved $VIP6 to '$mac', want $E2E_NIC_MAC"; return 1; }
    [ "$(counter ndp_reply)" = "$before" ] || { E2E_REASON="the datapath answered NDP for the IPv6 VIP"; return 1; }
}

run_cases

finish
