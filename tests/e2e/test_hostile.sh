#!/usr/bin/env bash
# A hostile LAN, end to end (docs/design.md, "Trust model"): a host on the bridge sends frames in other
# hosts' names from its own NIC, and none of them may change where the pod's traffic goes.
#  - A SYN to an unlisted port and a TFTP request, both in the name of a host that already talked to the
#    service IP: the pod's next connection to that host still reaches it.
#  - A TFTP request in the name of a host the datapath has never seen: the entry it creates is checked by
#    the loader's ARP request, and the pod's connection reaches the real host.
#  - 20 hosts hold idle connections that the pod opened; a flood of 100,000 spoofed TFTP read requests in
#    their names makes the pod's TFTP server open a flow for each (more than the 65,536 flows the table
#    holds); afterwards each host speaks first on its connection and the pod hears all 20.
#
#   usage: test_hostile.sh PATH/TO/bpfnet-loader [--case KEY]... | --list   (as root; it sandboxes itself, see lib.sh)
#   env:   E2E_HOSTILE_FLOOD   spoofed requests of the flood (default 100000)
#          E2E_KEEP_TMP        keep the temporary directory (configs, logs) for inspection
#
# Cases are called through run_cases (the case list), which shellcheck cannot see.
# shellcheck disable=SC2317
set -uo pipefail

# shellcheck source-path=SCRIPTDIR source=lib.sh
source "$(dirname "$(realpath "$0")")/lib.sh"
# shellcheck source=dhcp.sh
source "$E2E_DIR/dhcp.sh"

FLOOD=${E2E_HOSTILE_FLOOD:-100000}
HONEST=20

# The cases, in the order of a full run, with what each starts from (lib.sh, "The case list").
e2e_fixture world hostile_lan
e2e_case known_host_keeps_its_traffic case_known_host_keeps_its_traffic "a spoofed SYN and TFTP request in a known host's name leave its traffic with it" world
e2e_case new_host_is_checked_by_arp case_new_host_is_checked_by_arp "a spoofed request in a new host's name is corrected by the loader's ARP check" world
e2e_case flood_leaves_confirmed_flows case_flood_leaves_confirmed_flows "$HONEST idle connections survive $FLOOD spoofed TFTP requests in their hosts' names" world

e2e_start "$@"

require_tools curl python3 bpftool

ROOT=$E2E_TMP/tftp
SPOOF=$E2E_DIR/spoof.py
ATTACKER=e2e-host3 # one of lib.sh's bystanders
NEWCOMER_IP=198.18.0.8 # a host that has not talked to the service IP yet
NEWCOMER_MAC=02:00:00:00:00:08
E2E_BYSTANDERS+=("e2e-newcomer $NEWCOMER_IP $NEWCOMER_MAC")
for i in $(seq 1 "$HONEST"); do
    E2E_BYSTANDERS+=("e2e-h$i 198.18.0.$((100 + i)) 02:00:00:00:05:$(printf %02x "$i")")
done
AGENT_PORT=9999

attacker() { ip netns exec "$ATTACKER" "$@"; }

# agent_serve NS: an HTTP server on AGENT_PORT in NS (a ramdisk agent's API, as Ironic calls it).
agent_serve() {
    mkdir -p "$E2E_TMP/agent-$1"
    echo "$1" >"$E2E_TMP/agent-$1/index.html"
    bg_in_ns "$1" "$LOGS/agent-$1.log" python3 -m http.server --bind 0.0.0.0 --directory "$E2E_TMP/agent-$1" "$AGENT_PORT"
}

# pod_reaches NS IP: the pod's HTTP call to IP:AGENT_PORT is answered by the agent in NS (its page names it).
pod_reaches() {
    local got
    got=$(pod curl -sS --max-time 2 "http://$2:$AGENT_PORT/" 2>&1)
    [ "$got" = "$1" ]
}

# ---------------------------------------------------------------------------------------------------
# Cases

# The host has talked to the service IP (so the datapath knows its MAC); then the attacker sends a SYN to
# an unlisted port and a TFTP request, both in the host's name. Before the fix the dropped SYN alone moved
# the host's entry to the attacker's MAC.
case_known_host_keeps_its_traffic() {
    local kept_before
    host curl -sS --max-time 5 -o /dev/null "http://$E2E_SERVICE_IP/" || {
        E2E_REASON="the host's own request to the service IP failed"
        return 1
    }
    kept_before=$(counter neighbour_kept)
    attacker "$SYSTEM_PYTHON" "$SPOOF" syn eth0 --src-ip "$E2E_HOST_IP" --dst-ip "$E2E_SERVICE_IP" --dst-mac "$E2E_NIC_MAC" \
        --dport 22 >/dev/null
    attacker "$SYSTEM_PYTHON" "$SPOOF" tftp-flood eth0 --src-ip "$E2E_HOST_IP" --dst-ip "$E2E_SERVICE_IP" \
        --dst-mac "$E2E_NIC_MAC" --count 1 >/dev/null
    if ! wait_for 3 pod_reaches "$E2E_HOST" "$E2E_HOST_IP"; then
        E2E_REASON="after the spoofed frames the pod's call to $E2E_HOST_IP:$AGENT_PORT got '$(pod curl -sS --max-time 2 "http://$E2E_HOST_IP:$AGENT_PORT/" 2>&1)' (neighbour_kept $kept_before -> $(counter neighbour_kept))"
        return 1
    fi
    log "pod -> $E2E_HOST_IP still reaches the host; neighbour_kept $kept_before -> $(counter neighbour_kept)"
}

# A TFTP request in the name of a host the datapath has never seen creates its entry with the attacker's
# MAC; the loader's ARP check is answered by the real host, whose answer corrects it.
case_new_host_is_checked_by_arp() {
    attacker "$SYSTEM_PYTHON" "$SPOOF" tftp-flood eth0 --src-ip "$NEWCOMER_IP" --dst-ip "$E2E_SERVICE_IP" \
        --dst-mac "$E2E_NIC_MAC" --count 1 >/dev/null
    if ! wait_for 3 pod_reaches e2e-newcomer "$NEWCOMER_IP"; then
        E2E_REASON="the pod's call to the new host $NEWCOMER_IP got '$(pod curl -sS --max-time 2 "http://$NEWCOMER_IP:$AGENT_PORT/" 2>&1)'"
        return 1
    fi
    log "pod -> $NEWCOMER_IP reaches the real host after the loader's ARP check"
}

# 20 idle connections opened by the pod; a flood of spoofed TFTP requests in their hosts' names; then each
# host speaks first and the pod must hear every one.
case_flood_leaves_confirmed_flows() {
    local go=$E2E_TMP/go sources="" i flows_before created_before out
    rm -f "$go"
    for i in $(seq 1 "$HONEST"); do
        sources+="${sources:+,}198.18.0.$((100 + i))"
        # Accepts one connection, waits for the go file, then speaks first.
        bg_in_ns "e2e-h$i" "$LOGS/idle-$i.log" "$SYSTEM_PYTHON" -c "
import os, socket, time
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(('0.0.0.0', 7100)); s.listen(1)
c, _ = s.accept()
while not os.path.exists('$go'): time.sleep(0.05)
c.sendall(b'host $i\n'); time.sleep(30)"
    done
    for i in $(seq 1 "$HONEST"); do
        wait_for 5 ns_tcp_listens "e2e-h$i" 7100 || {
            E2E_REASON="host e2e-h$i does not listen on 7100: $(ip netns exec "e2e-h$i" ss -Htln | tr '\n' ' ') $(head -c 300 "$LOGS/idle-$i.log")"
            return 1
        }
    done
    # Each host has talked to the service IP (as an agent's heartbeat does), so the datapath knows it.
    for i in $(seq 1 "$HONEST"); do
        ip netns exec "e2e-h$i" curl -sS --max-time 5 -o /dev/null "http://$E2E_SERVICE_IP/" || {
            E2E_REASON="host e2e-h$i could not reach the service IP"
            return 1
        }
    done
    bg_in_ns "$E2E_POD" "$LOGS/idle-pod.log" "$SYSTEM_PYTHON" -c "
import os, socket, time
conns = []
for i in range(1, $HONEST + 1):
    c = socket.create_connection(('198.18.0.%d' % (100 + i), 7100), timeout=10)
    conns.append(c)
print('connected', flush=True)
while not os.path.exists('$go'): time.sleep(0.05)
heard = 0
for c in conns:
    c.settimeout(5)
    try:
        if c.recv(64).startswith(b'host '):
            heard += 1
    except OSError as e:
        print('silent:', c.getpeername(), e, flush=True)
print('heard', heard, flush=True)"
    local pod_pid=$BG_PID
    wait_for 20 grep -q connected "$LOGS/idle-pod.log" || {
        E2E_REASON="the pod did not connect to all $HONEST hosts: $(tail -c 300 "$LOGS/idle-pod.log")"
        return 1
    }
    flows_before=$(counter flow_confirmed)
    created_before=$(counter flow_created)
    out=$(attacker "$SYSTEM_PYTHON" "$SPOOF" tftp-flood eth0 --src-ip "$sources" --dst-ip "$E2E_SERVICE_IP" \
        --dst-mac "$E2E_NIC_MAC" --count "$FLOOD" --file image)
    sleep 1 # the pod's server answers the last requests
    touch "$go"
    wait_for 25 pid_gone "$pod_pid"
    if ! grep -q "^heard $HONEST\$" "$LOGS/idle-pod.log"; then
        E2E_REASON="after the flood the pod heard: $(grep -E 'heard|silent' "$LOGS/idle-pod.log" | head -5 | tr '\n' ' ') (flow_created +$(($(counter flow_created) - created_before)))"
        return 1
    fi
    log "flood: $out; the pod's server opened $(($(counter flow_created) - created_before)) flows for it, confirmed $(($(counter flow_confirmed) - flows_before)); all $HONEST idle connections heard their host"
}
ns_tcp_listens() { ip netns exec "$1" ss -Htln "sport = :$2" | grep -q LISTEN; }

# ---------------------------------------------------------------------------------------------------

# The LAN with its honest hosts and the attacker, the pod's HTTP and TFTP servers, the loader, the hosts' agents.
hostile_lan() {
    local ns
    topology_create
    mkdir -p "$ROOT" "$LOGS"
    head -c 2048 /dev/urandom >"$ROOT/image"
    head -c 2048 /dev/urandom >"$ROOT/pxelinux.0"
    bg_in_ns "$E2E_POD" "$LOGS/http.log" python3 -m http.server --bind 0.0.0.0 --directory "$ROOT" 8080
    write_config --port tftp:udp:69::tftp "$CONFIG"
    loader_start "$CONFIG" "$LOGS/loader.log" || die "$E2E_REASON"
    # The pod's TFTP server answers every read request from a new socket, as in.tftpd (one process per
    # request) does; dnsmasq caps concurrent transfers (--tftp-max), which would cap the flood's flows too.
    bg_in_ns "$E2E_POD" "$LOGS/tftp.log" "$SYSTEM_PYTHON" -c "
import socket
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.bind(('0.0.0.0', 69))
block = b'\x00\x03\x00\x01' + b'x' * 512
while True:
    request, client = s.recvfrom(1500)
    if request[:2] == b'\x00\x01':
        t = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        t.sendto(block, client)
        t.close()"
    wait_for 5 ns_udp_listens "$E2E_POD" 69 || die "the pod's TFTP server did not start"
    wait_for 10 pod_listens 8080 || die "pod HTTP server did not start"
    for ns in "$E2E_HOST" e2e-newcomer; do agent_serve "$ns"; done
    wait_for 5 ns_tcp_listens "$E2E_HOST" "$AGENT_PORT" || die "the host's agent did not start"
}

run_cases
finish
