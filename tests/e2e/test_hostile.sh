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
#  - A flood of ARP requests from 2,100 made-up addresses of the /16 provisioning subnet and of neighbour
#    solicitations from 2,100 made-up addresses of the IPv6 /64, each 8 times (together more than the 4,096
#    entries of the neighbours table, and each seen again while it is there) while 10 of the 20 hosts
#    download over HTTP (both families) and TFTP and the pod calls their agents (both families), and the
#    other 10 wait, as a host does between its deployment's steps: no transfer or
#    call fails, no packet of the pod's meets a neighbour miss, every host keeps its confirmed entries, and
#    the pod's calls to the waiting hosts after the flood meet no miss either.
#  - A host that makes the pod's TFTP server open 800 flows and answers each, from its own address, holds
#    no more confirmed flows than its share (BPFNET_MAX_FLOWS_PER_HOST): every one of its answers is still
#    steered (the flows beyond the share steer from flows_unconfirmed), and another host's idle connection,
#    opened by the pod before, keeps its confirmed flow and is heard.
#
#   usage: test_hostile.sh PATH/TO/bpfnet-loader [--case KEY]... | --list   (as root; it sandboxes itself, see lib.sh)
#   env:   E2E_HOSTILE_FLOOD   spoofed requests of the flood (default 100000)
#          E2E_SHARE_FLOOD     answered TFTP transfers of the host that fills its share (default 800)
#          E2E_NEIGHBOUR_FLOOD made-up senders of each family's neighbour flood (default 2100), each sending 8 times
#          E2E_KEEP_TMP        keep the temporary directory (configs, logs) for inspection
#
# Cases are called through run_cases (the case list), which shellcheck cannot see.
# shellcheck disable=SC2317
set -uo pipefail

# shellcheck source-path=SCRIPTDIR source=lib.sh
source "$(dirname "$(realpath "$0")")/lib.sh"
# shellcheck source=dhcp.sh
source "$E2E_DIR/dhcp.sh"
# shellcheck source=lan6.sh
source "$E2E_DIR/lan6.sh"

FLOOD=${E2E_HOSTILE_FLOOD:-100000}
NEIGHBOUR_FLOOD=${E2E_NEIGHBOUR_FLOOD:-2100}
HONEST=20
SHARE_FLOOD=${E2E_SHARE_FLOOD:-800}
FLOW_SHARE=$(sed -n 's/^#define BPFNET_MAX_FLOWS_PER_HOST[[:space:]]*//p' "$E2E_REPO/maps/bpfnet_maps.h")
# The issue's LAN: a /16 provisioning subnet (room for thousands of made-up ARP senders) and the IPv6 /64;
# the pod's network apart from it, as a cluster's pod network is.
E2E_SUBNET=198.18.0.0/16
E2E_POD_IP=198.19.100.2
E2E_POD_GW=198.19.100.1

# The cases, in the order of a full run, with what each starts from (lib.sh, "The case list").
e2e_fixture world hostile_lan
e2e_case known_host_keeps_its_traffic case_known_host_keeps_its_traffic "a spoofed SYN and TFTP request in a known host's name leave its traffic with it" world
e2e_case new_host_is_checked_by_arp case_new_host_is_checked_by_arp "a spoofed request in a new host's name is corrected by the loader's ARP check" world
e2e_case flood_leaves_confirmed_flows case_flood_leaves_confirmed_flows "$HONEST idle connections survive $FLOOD spoofed TFTP requests in their hosts' names" world
e2e_case one_host_fills_only_its_share case_one_host_fills_only_its_share "a host answering $SHARE_FLOOD TFTP transfers of its own holds its share of flows; another host's idle connection keeps its flow" world
e2e_case neighbour_flood_leaves_hosts case_neighbour_flood_leaves_hosts "$HONEST hosts' transfers and the pod's calls go on through ARP and NS from $NEIGHBOUR_FLOOD made-up addresses each" world

e2e_start "$@"

require_tools curl python3 bpftool

ROOT=$E2E_TMP/tftp
SPOOF=$E2E_DIR/spoof.py
ATTACKER=e2e-host3 # one of lib.sh's bystanders
NEWCOMER_IP=198.18.0.8 # a host that has not talked to the service IP yet
NEWCOMER_MAC=02:00:00:00:00:08
E2E_BYSTANDERS+=("e2e-newcomer $NEWCOMER_IP $NEWCOMER_MAC")
for i in $(seq 1 "$HONEST"); do
    E2E_BYSTANDERS+=("e2e-h$i 198.18.0.$((100 + i)) 02:00:00:00:05:$(printf %02x "$i")") # honest_ip below
done
# The honest host e2e-hI's addresses: IPv4 (as in E2E_BYSTANDERS above) and IPv6.
honest_ip() { echo "198.18.0.$((100 + $1))"; }
honest_ip6() { echo "2001:2::a:$1"; }
AGENT_PORT=9999

attacker() { ip netns exec "$ATTACKER" "$@"; }

# agent_serve NS: an HTTP server on AGENT_PORT in NS, both families (a ramdisk agent's API, as Ironic calls it).
agent_serve() {
    mkdir -p "$E2E_TMP/agent-$1"
    echo "$1" >"$E2E_TMP/agent-$1/index.html"
    bg_in_ns "$1" "$LOGS/agent-$1.log" python3 -m http.server --bind :: --directory "$E2E_TMP/agent-$1" "$AGENT_PORT"
}

# pod_reaches NS IP: the pod's HTTP call to IP:AGENT_PORT is answered by the agent in NS (its page names it).
pod_reaches() {
    local got
    got=$(pod curl -sS --max-time 2 "http://$2:$AGENT_PORT/" 2>&1)
    [ "$got" = "$1" ]
}

# idle_host_serve I PORT GO LOG: honest host e2e-hI accepts one connection on PORT, holds it idle until the
# file GO exists, then speaks first ("host I").
idle_host_serve() {
    bg_in_ns "e2e-h$1" "$4" "$SYSTEM_PYTHON" -c "
import os, socket, time
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(('0.0.0.0', $2)); s.listen(1)
c, _ = s.accept()
while not os.path.exists('$3'): time.sleep(0.05)
c.sendall(b'host $1\n'); time.sleep(30)"
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
        idle_host_serve "$i" 7100 "$go" "$LOGS/idle-$i.log"
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
# confirmed_flows IP: how many flows of host IP (IPv4) the confirmed table (flows) holds. One dump.
confirmed_flows() {
    bpftool -j map dump pinned "$E2E_PIN_DIR/flows" | "$SYSTEM_PYTHON" -c 'import ipaddress, json, sys
want = ipaddress.IPv6Address("::ffff:" + sys.argv[1]).packed
print(sum(1 for e in json.load(sys.stdin) if bytes(int(b, 16) for b in e["key"][:16]) == want))' "$1"
}

# The greedy host (the attacker, from its own address) makes the pod's TFTP server open SHARE_FLOOD flows,
# one read request each, and answers each data block: more than its share. Every exchange is answered and
# every answer steered (flow_confirmed up to the share, flow_over_share after), the host holds exactly its
# share of confirmed flows, and an idle connection the pod opened to another host before keeps its
# confirmed flow: the host speaks first on it afterwards and the pod hears it. On a datapath without the
# share the host's flows all take places in flows (SHARE_FLOOD of them), which is how, past the table's
# 65,536 entries, it evicted other hosts' idle flows (the packet table shows that at full size).
case_one_host_fills_only_its_share() {
    local go=$E2E_TMP/go-share honest=e2e-h1 honest_ip greedy_ip=198.18.0.7 confirmed_before over_before out held
    honest_ip=$(honest_ip 1)
    rm -f "$go"
    idle_host_serve 1 7101 "$go" "$LOGS/share-idle.log"
    wait_for 5 ns_tcp_listens "$honest" 7101 || {
        E2E_REASON="host $honest does not listen on 7101"
        return 1
    }
    ip netns exec "$honest" curl -sS --max-time 5 -o /dev/null "http://$E2E_SERVICE_IP/" || {
        E2E_REASON="host $honest could not reach the service IP"
        return 1
    }
    bg_in_ns "$E2E_POD" "$LOGS/share-pod.log" "$SYSTEM_PYTHON" -c "
import os, socket, time
c = socket.create_connection(('$honest_ip', 7101), timeout=10)
print('connected', flush=True)
while not os.path.exists('$go'): time.sleep(0.05)
c.settimeout(5)
print('heard' if c.recv(64).startswith(b'host 1') else 'silent', flush=True)"
    local pod_pid=$BG_PID
    wait_for 10 grep -q connected "$LOGS/share-pod.log" || {
        E2E_REASON="the pod did not connect to $honest: $(tail -c 300 "$LOGS/share-pod.log")"
        return 1
    }
    [ "$(confirmed_flows "$honest_ip")" -ge 1 ] || {
        E2E_REASON="the pod's connection to $honest has no confirmed flow before the greedy host starts"
        return 1
    }
    confirmed_before=$(counter flow_confirmed)
    over_before=$(counter flow_over_share)
    out=$(attacker "$SYSTEM_PYTHON" -c 'import socket, sys
answered = 0
for i in range(int(sys.argv[2])):
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.settimeout(2)
    s.sendto(b"\x00\x01pxelinux.0\x00octet\x00", (sys.argv[1], 69))
    try:
        data, server = s.recvfrom(1500)
    except OSError:
        continue
    if data[:4] == b"\x00\x03\x00\x01":
        s.sendto(b"\x00\x04\x00\x01", server)  # the ACK: the host answers the flow the pod opened
        answered += 1
    s.close()
print(answered)' "$E2E_SERVICE_IP" "$SHARE_FLOOD")
    sleep 0.5 # the last ACKs reach the datapath
    local confirmed=$(($(counter flow_confirmed) - confirmed_before)) over=$(($(counter flow_over_share) - over_before))
    held=$(confirmed_flows "$greedy_ip")
    touch "$go"
    wait_for 10 pid_gone "$pod_pid"
    if [ "$out" != "$SHARE_FLOOD" ]; then
        E2E_REASON="the greedy host's transfers: $out of $SHARE_FLOOD answered"
        return 1
    fi
    if [ "$held" -ne "$FLOW_SHARE" ] || [ "$confirmed" -ne "$FLOW_SHARE" ] || [ "$over" -ne $((SHARE_FLOOD - FLOW_SHARE)) ]; then
        E2E_REASON="the greedy host holds $held confirmed flows (share $FLOW_SHARE); flow_confirmed +$confirmed, flow_over_share +$over"
        return 1
    fi
    if ! grep -q '^heard$' "$LOGS/share-pod.log" || [ "$(confirmed_flows "$honest_ip")" -lt 1 ]; then
        E2E_REASON="the idle connection to $honest: '$(tail -c 200 "$LOGS/share-pod.log")', its confirmed flows: $(confirmed_flows "$honest_ip")"
        return 1
    fi
    log "greedy host: $out of $SHARE_FLOOD transfers answered, $held confirmed flows held (share $FLOW_SHARE), flow_over_share +$over; the idle connection to $honest kept its flow and was heard"
}

ns_tcp_listens() { ip netns exec "$1" ss -Htln "sport = :$2" | grep -q LISTEN; }

# unconfirmed_hosts: the honest hosts (e2e-hI, both families) that the datapath's confirmed neighbour table
# (neighbours) does not hold at their own MAC, one "IP" per line; nothing when it holds them all. One dump.
unconfirmed_hosts() {
    bpftool -j map dump pinned "$E2E_PIN_DIR/neighbours" | "$SYSTEM_PYTHON" -c 'import ipaddress, json, sys
held = {}
for e in json.load(sys.stdin):
    key = bytes(int(b, 16) for b in e["key"])
    ip = ipaddress.IPv6Address(key)
    ip = ip.ipv4_mapped or ip
    held[str(ip)] = ":".join("%02x" % int(b, 16) for b in e["value"][:6])
for i in range(1, int(sys.argv[1]) + 1):
    mac = "02:00:00:00:05:%02x" % i
    for ip in ("198.18.0.%d" % (100 + i), "2001:2::a:%d" % i):  # as honest_ip6 writes them
        if held.get(ip) != mac:
            print(ip, held.get(ip))' "$HONEST"
}

# tftp_exchange NS IP: NS's read request to IP:69 is answered with the first data block within 3 s (the pod's
# server answers from a new socket: a flow the datapath records and the host's answer would confirm).
tftp_exchange() {
    ip netns exec "$1" "$SYSTEM_PYTHON" -c 'import socket, sys
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.settimeout(3)
s.sendto(b"\x00\x01pxelinux.0\x00octet\x00", (sys.argv[1], 69))
data, _ = s.recvfrom(1500)
sys.exit(data[:4] != b"\x00\x03\x00\x01")' "$2"
}

# honest_rounds I SECONDS: host e2e-hI and the pod call each other for SECONDS, over and over: the host
# downloads the image over HTTP on both families and makes a TFTP exchange, the pod calls the host's agent on
# both families. Each failure is one line in $LOGS/rounds-I.log; the last line is "rounds N".
honest_rounds() {
    local i=$1 until=$(($(date +%s) + $2)) rounds=0 ns=e2e-h$1
    while [ "$(date +%s)" -lt "$until" ]; do
        ip netns exec "$ns" curl -sS --max-time 5 -o /dev/null "http://$E2E_SERVICE_IP/image" || echo "http v4 failed"
        ip netns exec "$ns" curl -sS -6 --max-time 5 -o /dev/null "http://[$LAN6_SERVICE]/image" || echo "http v6 failed"
        tftp_exchange "$ns" "$E2E_SERVICE_IP" || echo "tftp failed"
        agent_answers "$i" "$(honest_ip "$i")" || echo "agent v4 call failed"
        agent_answers "$i" "[$(honest_ip6 "$i")]" || echo "agent v6 call failed"
        rounds=$((rounds + 1))
    done
    echo "rounds $rounds"
}

# Each honest host has talked to the service IP on both families (as an agent's lookups and heartbeats do),
# so its entries are confirmed, and the pod has called its agent on both.
honest_hosts_introduced() {
    local i ns
    for i in $(seq 1 "$HONEST"); do
        ns=e2e-h$i
        ip netns exec "$ns" curl -sS --max-time 5 -o /dev/null "http://$E2E_SERVICE_IP/" &&
            ip netns exec "$ns" curl -sS -6 --max-time 5 -o /dev/null "http://[$LAN6_SERVICE]/" || {
            E2E_REASON="host $ns could not reach the service IP on both families"
            return 1
        }
        agent_calls "$i" || {
            E2E_REASON="the pod's calls to the agent of $ns failed before the flood"
            return 1
        }
    done
    local missing
    missing=$(unconfirmed_hosts)
    [ -z "$missing" ] || {
        E2E_REASON="hosts not among the confirmed neighbours after their requests (IP, entry): ${missing//$'\n'/, }"
        return 1
    }
}

# agent_answers I HOST: the pod's call to HOST (an address, IPv6 in brackets) on AGENT_PORT is answered by the
# agent of host e2e-hI. agent_calls I: on both of its addresses.
agent_answers() { [ "$(pod curl -sS --max-time 5 "http://$2:$AGENT_PORT/" 2>&1)" = "e2e-h$1" ]; }
agent_calls() { agent_answers "$1" "$(honest_ip "$1")" && agent_answers "$1" "[$(honest_ip6 "$1")]"; }

# Half the hosts download and answer the pod's calls on both families while the attacker sends ARP requests
# from NEIGHBOUR_FLOOD made-up addresses of the /16 and neighbour solicitations from as many of the /64, each
# 8 times (together more than the 4,096 entries of the neighbours table); the other half wait. Every transfer
# and call succeeds, no packet of the pod's meets a neighbour miss (during the flood, and in the pod's calls
# to the waiting hosts after it), every host keeps its confirmed entries at its own MAC. The senders come
# back on purpose: the kernel's LRU spares entries looked up since its last pass, so a flood of senders seen
# once evicts only its own; senders seen again while they are in the table are used as much as the hosts.
# Before the tables were split this case failed so (a host lost its entry, or the pod's packets met misses).
case_neighbour_flood_leaves_hosts() {
    local i failures misses_before learned_before arp_log=$LOGS/arp-flood.log ns_log=$LOGS/ns-flood.log
    local arp_pid ns_pid rounds=0 n unconfirmed missing
    for i in $(seq 1 "$HONEST"); do
        [ -e "$E2E_TMP/agent-e2e-h$i" ] || agent_serve "e2e-h$i"
    done
    for i in $(seq 1 "$HONEST"); do
        wait_for 5 ns_tcp_listens "e2e-h$i" "$AGENT_PORT" || {
            E2E_REASON="the agent of e2e-h$i did not start"
            return 1
        }
    done
    honest_hosts_introduced || return 1
    misses_before=$(counter neighbour_miss)
    learned_before=$(counter neighbour_learned)
    # Each sender 8 times: a sender seen again is looked up, which an LRU counts as use (see above).
    bg_in_ns "$ATTACKER" "$arp_log" "$SYSTEM_PYTHON" "$SPOOF" arp-flood eth0 --src-ip 198.18.1.0 \
        --dst-ip "$E2E_SERVICE_IP" --count $((8 * NEIGHBOUR_FLOOD)) --distinct "$NEIGHBOUR_FLOOD" --rate 5000
    arp_pid=$BG_PID
    bg_in_ns "$ATTACKER" "$ns_log" "$SYSTEM_PYTHON" "$SPOOF" ns-flood eth0 --src-ip 2001:2::1:0 \
        --dst-ip "$LAN6_SERVICE" --count $((8 * NEIGHBOUR_FLOOD)) --distinct "$NEIGHBOUR_FLOOD" --rate 5000
    ns_pid=$BG_PID
    for i in $(seq 1 $((HONEST / 2))); do
        honest_rounds "$i" $((8 * NEIGHBOUR_FLOOD / 5000 + 1)) >"$LOGS/rounds-$i.log" 2>&1 &
    done
    wait_for 60 pid_gone "$arp_pid" && wait_for 60 pid_gone "$ns_pid" || {
        E2E_REASON="the floods did not end: $(cat "$arp_log" "$ns_log" | tail -c 300)"
        return 1
    }
    wait_for 60 rounds_done || {
        E2E_REASON="the hosts' rounds did not end"
        return 1
    }
    failures=$(cat "$LOGS"/rounds-*.log | grep -v '^rounds ' | sort | uniq -c | tr '\n' ' ')
    for i in $(seq 1 $((HONEST / 2))); do
        n=$(sed -n 's/^rounds //p' "$LOGS/rounds-$i.log")
        rounds=$((rounds + ${n:-0}))
    done
    if [ -n "$failures" ]; then
        E2E_REASON="during the flood: $failures(arp: $(cat "$arp_log"); ns: $(cat "$ns_log"))"
        return 1
    fi
    if [ "$(counter neighbour_miss)" -ne "$misses_before" ]; then
        E2E_REASON="neighbour misses during the flood: $misses_before -> $(counter neighbour_miss)"
        return 1
    fi
    missing=$(unconfirmed_hosts)
    [ -z "$missing" ] || {
        E2E_REASON="hosts lost their confirmed entry in the flood (IP, entry): ${missing//$'\n'/, } (neighbour_miss +$(($(counter neighbour_miss) - misses_before)) so far)"
        return 1
    }
    for i in $(seq $((HONEST / 2 + 1)) "$HONEST"); do
        agent_calls "$i" || {
            E2E_REASON="the pod's calls to the waiting host e2e-h$i failed after the flood"
            return 1
        }
    done
    if [ "$(counter neighbour_miss)" -ne "$misses_before" ]; then
        E2E_REASON="the pod's calls to the waiting hosts after the flood met neighbour misses: $misses_before -> $(counter neighbour_miss)"
        return 1
    fi
    # The flood reached the datapath: each made-up sender was learned, into the unconfirmed table.
    if [ $(($(counter neighbour_learned) - learned_before)) -lt $((2 * NEIGHBOUR_FLOOD)) ]; then
        E2E_REASON="only $(($(counter neighbour_learned) - learned_before)) of the $((2 * NEIGHBOUR_FLOOD)) made-up senders were learned"
        return 1
    fi
    unconfirmed=$(bpftool -j map dump pinned "$E2E_PIN_DIR/neighbours_unconfirmed" | "$SYSTEM_PYTHON" -c 'import json, sys; print(len(json.load(sys.stdin)))')
    log "flood: arp $(cat "$arp_log"), ns $(cat "$ns_log"); $rounds rounds of $((HONEST / 2)) busy hosts (http v4+v6, tftp, agent v4+v6) all succeeded; the $((HONEST / 2)) waiting hosts kept their entries; neighbour_miss +0; $unconfirmed entries in neighbours_unconfirmed"
}
rounds_done() {
    local i
    for i in $(seq 1 $((HONEST / 2))); do
        grep -q '^rounds ' "$LOGS/rounds-$i.log" 2>/dev/null || return 1
    done
}

# ---------------------------------------------------------------------------------------------------

# The LAN with its honest hosts and the attacker, the pod's HTTP and TFTP servers, the loader, the hosts' agents.
hostile_lan() {
    local ns i
    topology_create
    mkdir -p "$ROOT" "$LOGS"
    head -c 2048 /dev/urandom >"$ROOT/image"
    head -c 2048 /dev/urandom >"$ROOT/pxelinux.0"
    # Both families: the honest hosts' IPv6 addresses on the /64, the pod's (lan6.sh), the service address.
    for i in $(seq 1 "$HONEST"); do
        ip -n "e2e-h$i" -6 addr add "$(honest_ip6 "$i")/64" dev eth0 nodad || die "IPv6 address of e2e-h$i"
    done
    lan6_pod_address || die "$E2E_REASON"
    bg_in_ns "$E2E_POD" "$LOGS/http.log" python3 -m http.server --bind :: --directory "$ROOT" 8080
    cat >"$CONFIG" <<YAML
interface: $E2E_NIC
serviceIP: $E2E_SERVICE_IP
subnet: $E2E_SUBNET
serviceIPv6: $LAN6_SERVICE
subnetV6: $LAN6_SUBNET
pinRoot: $E2E_PIN_ROOT
ports:
  - {name: http, protocol: tcp, port: 80, targetPort: 8080}
  - {name: tftp, protocol: udp, port: 69, kind: tftp}
backend:
  ip: $E2E_POD_IP
  ipv6: $LAN6_POD
  veth: auto
YAML
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
