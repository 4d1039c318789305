# shellcheck shell=bash
# Real DHCP and TFTP software for bpfnet's end-to-end tests and benchmarks: dnsmasq and Kea as servers,
# busybox udhcpc and ISC dhclient as clients, tftp-hpa, and an AF_PACKET capture (capture.py). Source this
# file after lib.sh (it uses bg_in_ns, stop_pid, wait_for, pid_gone, log, E2E_TMP and E2E_REASON).
#
#   dhcp_available                     0 when every program is installed (else a test should skip, exit 77)
#   dnsmasq_run NS DIR ARGS...         dnsmasq in NS with its state in DIR (log, leases, pid) and ARGS;
#                                      waits until it has started; DNSMASQ_PID, DNSMASQ_LOG
#                                      (both servers run as root unless DHCP_SERVER_AS is set, below)
#   dnsmasq_start NS DIR [ARGS...]     the PXE server of docs/ironic-pod.md for relayed DHCP (range, router,
#                                      boot file, next server = service IP, TFTP from DHCP_TFTP_ROOT) + ARGS
#   kea_start NS DIR [SERVER_ID] [RESERVATION_JSON]
#                                      kea-dhcp4 in NS, the same lease parameters; KEA_PID, KEA_LOG
#   kea_run NS DIR PROGRAM PORT        kea-dhcp4 or kea-dhcp6 with the caller's DIR/PROGRAM.json
#                                      (dhcp-socket-type KEA_SOCKET_TYPE, udp unless set)
#   udhcpc_lease NS IFACE OUT [ARGS]   one busybox udhcpc run (exits once bound, or after 3 tries)
#   udhcpc_start NS IFACE OUT [ARGS]   udhcpc staying in the foreground (renewals, SIGUSR1); UDHCPC_PID
#   dhclient_lease NS IFACE DIR        one ISC dhclient -1 run; lease file DIR/dhclient.leases
#   dhclient_run NS IFACE DIR EVENT [ARGS]  the same with the caller's DIR/dhclient.conf (-6: DHCPv6)
#   dhclient6_lease NS IFACE DIR       one dhclient -6 run asking for the boot file URL (option 59)
#   lease_field OUT FIELD [EVENT]      a variable of the last hook event (of kind EVENT) recorded in OUT
#   lease_events OUT                   the events recorded in OUT, space separated
#   dhclient_option LEASEFILE NAME     an option of the last lease in a dhclient lease file
#   capture_start NS IFACE OUT         capture.py record on IFACE (needle: the pod IP); CAPTURE_PID
#   capture_stop                       stops it (it appends its packet and drop statistics)
#   tftp_get NS SERVER FILE DEST       tftp-hpa: get FILE from SERVER (IPv4 or IPv6) into DEST (binary, bounded)
#   random_file PATH BYTES             random contents that never contain the pod IP's 4 bytes
#   ip_in_range IP FIRST LAST          0 when FIRST <= IP <= LAST (IPv4 or IPv6)
#   ns_udp_listens NS PORT             something in NS has a UDP socket on PORT
#
# The clients' hook (OUT.hook, written next to the events file OUT) records every event with the environment
# the client passed, and changes nothing: no address, no route, no resolv.conf. Every function returns 0,
# or sets E2E_REASON and returns 1.
#
# Read by the sourcing script.
# shellcheck disable=SC2034

DHCP_RANGE_FIRST=198.18.0.100
DHCP_RANGE_LAST=198.18.0.200
DHCP_NETMASK=255.255.255.0
DHCP_ROUTER=198.18.0.1 # a router value; nothing in the topology has this address
DHCP_BOOT_FILE=pxelinux.0
DHCP_LEASE_TIME=10m
DHCP_LEASE_SECONDS=600
DHCP_TFTP_ROOT=${DHCP_TFTP_ROOT:-}
CAPTURE_PY=$E2E_DIR/capture.py
DHCP_SEND_PY=$E2E_DIR/dhcp_send.py

# DHCP_SERVER_AS: a command prefix that dnsmasq_run and kea_start put before the server, to run it as a
# non-root user with chosen capabilities (setpriv --reuid=... --ambient-caps=...; test_privileges.sh).
# Empty: the server runs as the test, root. DHCP_SERVER_OWNER (UID:GID): the owner given to the server's
# state directory and the files written into it before the server starts (log, configuration), so that a
# non-root server can write there; its parents must be traversable by that user.
DHCP_SERVER_AS=()
DHCP_SERVER_OWNER=""
KEA_SOCKET_TYPE=udp

DNSMASQ_PID=""
DNSMASQ_LOG=""
KEA_PID=""
KEA_LOG=""
UDHCPC_PID=""
CAPTURE_PID=""
CAPTURE_FILE=""

dhcp_available() {
    local cmd
    for cmd in dnsmasq busybox dhclient tftp kea-dhcp4 python3; do
        if ! command -v "$cmd" >/dev/null; then
            E2E_REASON="$cmd is not installed (scripts/setup.sh)"
            return 1
        fi
    done
    # Not `busybox --list | grep -q`: grep leaving early makes busybox die of SIGPIPE, and under pipefail
    # that reads as "no udhcpc" (a test skipped at random).
    local applets
    applets=$(busybox --list)
    if ! grep -qx udhcpc <<<"$applets"; then
        E2E_REASON="busybox has no udhcpc applet"
        return 1
    fi
}

# dhcp_hook OUT: the hook for both clients, recording into OUT: one block per event, "event=NAME", the
# sorted environment, "end". udhcpc passes the event as $1 (bound, renew, deconfig, leasefail, nak); dhclient
# as $reason (PREINIT, BOUND, RENEW, ...), with the lease in new_* variables. dhclient gives its script a
# clean environment, so OUT is written into the script (OUT.hook). The hook exits 0: dhclient declines the
# lease when its ARPCHECK call fails.
dhcp_hook() {
    local out=$1 hook=$1.hook
    cat >"$hook" <<EOF
#!/bin/sh
# Records the DHCP client's event and environment; configures nothing.
{
    echo "event=\${1:-\${reason:-unknown}}"
    env | LC_ALL=C sort
    echo "end"
} >>'$out'
exit 0
EOF
    chmod 755 "$hook"
    echo "$hook"
}

# lease_field OUT FIELD [EVENT]: FIELD's value in the last event block (of kind EVENT) of OUT; fails when
# there is no such block. A field the block lacks prints as empty.
lease_field() {
    awk -v field="$2" -v want="${3:-}" '
        /^event=/ { ev = substr($0, 7); inblk = (want == "" || ev == want); if (inblk) split("", cur); next }
        /^end$/   { if (inblk) { val = (field in cur) ? cur[field] : ""; found = 1 } inblk = 0; next }
        inblk     { i = index($0, "="); if (i) cur[substr($0, 1, i - 1)] = substr($0, i + 1) }
        END       { if (!found) exit 1; print val }' "$1" 2>/dev/null
}

lease_events() { grep '^event=' "$1" 2>/dev/null | cut -d= -f2 | tr '\n' ' ' | sed 's/ $//'; }

# has_event OUT EVENT: OUT holds a whole block of EVENT. The hook writes a block in several writes: a check
# that saw only its event= line could read the block's fields before they are there.
has_event() {
    awk -v want="event=$2" '
        /^event=/ { open = ($0 == want); next }
        /^end$/ && open { found = 1; exit }
        END { exit !found }' "$1" 2>/dev/null
}

# dhclient_option LEASEFILE NAME: "option NAME VALUE;" (or "NAME VALUE;" for fixed-address, filename,
# next-server) of the last lease block, quotes removed.
dhclient_option() {
    awk -v name="$2" '
        /^lease / { split("", cur) }
        { line = $0; sub(/^[ \t]+/, "", line); sub(/;[ \t]*$/, "", line)
          if (line ~ /^option /) line = substr(line, 8)
          i = index(line, " "); if (i) cur[substr(line, 1, i - 1)] = substr(line, i + 1) }
        /^}/ { if (name in cur) { val = cur[name]; found = 1 } else { found = 0 } }
        END { if (!found) exit 1; gsub(/"/, "", val); print val }' "$1" 2>/dev/null
}

ip_in_range() {
    python3 -c 'import ipaddress, sys
a, lo, hi = (ipaddress.ip_address(x) for x in sys.argv[1:4])
sys.exit(0 if lo <= a <= hi else 1)' "$1" "$2" "$3" 2>/dev/null
}

ns_udp_listens() { ip netns exec "$1" ss -Hunl "sport = :$2" 2>/dev/null | grep -q .; }

# ---------------------------------------------------------------------------------------------------
# Servers

dnsmasq_started() { grep -q 'started, version' "$DNSMASQ_LOG" 2>/dev/null || pid_gone "$DNSMASQ_PID"; }

# dnsmasq_run NS DIR ARGS...: dnsmasq in the foreground (as a background job of the test), DNS off, no
# configuration file, running as root (it would drop to the dnsmasq user, which cannot read DIR), its
# lease file, pid file and log in DIR. Under DHCP_SERVER_AS it runs as that prefix's user, without --user
# and --group: dnsmasq changes user only when started as root.
dnsmasq_run() {
    local ns=$1 dir=$2
    shift 2
    mkdir -p "$dir"
    DNSMASQ_LOG=$dir/dnsmasq.log
    : >"$DNSMASQ_LOG"
    local user=(--user=root --group=root)
    [ "${#DHCP_SERVER_AS[@]}" = 0 ] || user=()
    [ -z "$DHCP_SERVER_OWNER" ] || chown -R "$DHCP_SERVER_OWNER" "$dir"
    bg_in_ns "$ns" "$dir/dnsmasq.out" "${DHCP_SERVER_AS[@]}" \
        dnsmasq --keep-in-foreground --conf-file=/dev/null --port=0 --no-resolv --no-hosts "${user[@]}" \
        --pid-file="$dir/dnsmasq.pid" --log-facility="$DNSMASQ_LOG" --dhcp-leasefile="$dir/dnsmasq.leases" "$@"
    DNSMASQ_PID=$BG_PID
    if ! wait_for 10 dnsmasq_started || pid_gone "$DNSMASQ_PID"; then
        E2E_REASON="dnsmasq did not start in $ns: $(head -c 300 "$dir/dnsmasq.out") $(tail -n 3 "$DNSMASQ_LOG")"
        return 1
    fi
}

# dnsmasq_start NS DIR [ARGS...]: the PXE server for relayed requests (docs/ironic-pod.md): no ping before an
# offer, server identifier = giaddr (the service IP), the range with its netmask, the router set explicitly
# (it would default to giaddr), boot file with the service IP as next server, TFTP from DHCP_TFTP_ROOT.
dnsmasq_start() {
    local ns=$1 dir=$2
    shift 2
    [ -n "$DHCP_TFTP_ROOT" ] || DHCP_TFTP_ROOT=$E2E_TMP/tftp
    mkdir -p "$DHCP_TFTP_ROOT"
    dnsmasq_run "$ns" "$dir" --no-ping --dhcp-proxy \
        --dhcp-range="$DHCP_RANGE_FIRST,$DHCP_RANGE_LAST,$DHCP_NETMASK,$DHCP_LEASE_TIME" \
        --dhcp-option=3,"$DHCP_ROUTER" --dhcp-boot="$DHCP_BOOT_FILE,,$E2E_SERVICE_IP" \
        --enable-tftp --tftp-root="$DHCP_TFTP_ROOT" --log-dhcp "$@" || return 1
    if ! wait_for 5 ns_udp_listens "$ns" 67 || ! wait_for 5 ns_udp_listens "$ns" 69; then
        E2E_REASON="dnsmasq started but does not listen on UDP 67 and 69 in $ns"
        return 1
    fi
}

dnsmasq_stop() {
    [ -n "$DNSMASQ_PID" ] || return 0
    stop_pid "$DNSMASQ_PID"
    DNSMASQ_PID=""
}

kea_started() { grep -q "$1" "$KEA_LOG" 2>/dev/null || pid_gone "$KEA_PID"; }

# kea_run NS DIR PROGRAM PORT: PROGRAM (kea-dhcp4 or kea-dhcp6) in NS with DIR/PROGRAM.json, its pid and lock
# files in DIR, logging to KEA_LOG (set by the caller, whose configuration names it); waits until it has
# started and listens on UDP PORT. KEA_PID.
kea_run() {
    local ns=$1 dir=$2 program=$3 port=$4 started
    started=$(tr a-z A-Z <<<"${program#kea-}")_STARTED # DHCP4_STARTED, DHCP6_STARTED
    [ -z "$DHCP_SERVER_OWNER" ] || chown -R "$DHCP_SERVER_OWNER" "$dir"
    bg_in_ns "$ns" "$dir/kea.out" "${DHCP_SERVER_AS[@]}" env KEA_PIDFILE_DIR="$dir" KEA_LOCKFILE_DIR="$dir" \
        "$program" -c "$dir/$program.json"
    KEA_PID=$BG_PID
    if ! wait_for 10 kea_started "$started" || pid_gone "$KEA_PID"; then
        E2E_REASON="$program did not start in $ns: $(head -c 300 "$dir/kea.out") $(grep -m3 -E 'ERROR|FATAL' "$KEA_LOG")"
        return 1
    fi
    if ! wait_for 5 ns_udp_listens "$ns" "$port"; then
        E2E_REASON="$program started but does not listen on UDP $port in $ns"
        return 1
    fi
}

# kea_start NS DIR [SERVER_ID]: kea-dhcp4 with UDP sockets on eth0 (relayed traffic needs no raw socket),
# leases in memory, the subnet selected by giaddr, the same pool, router, next server and boot file as
# dnsmasq, no control socket, its log, pid file and lock file in DIR. Kea names the address it received the
# request on (the pod IP) as server identifier, unless SERVER_ID is given: then option 54 is configured
# explicitly (Kea also accepts requests that name it). RESERVATION_JSON: a host reservation of the subnet.
kea_start() {
    local ns=$1 dir=$2 server_id=${3:-} reservations=""
    local options='{ "name": "routers", "data": "'$DHCP_ROUTER'" }'
    [ -n "$server_id" ] && options+=', { "name": "dhcp-server-identifier", "data": "'$server_id'" }'
    [ -z "${4:-}" ] || reservations="\"reservations\": [ $4 ],"
    mkdir -p "$dir"
    KEA_LOG=$dir/kea.log
    : >"$KEA_LOG"
    cat >"$dir/kea-dhcp4.json" <<EOF
{
  "Dhcp4": {
    "interfaces-config": { "interfaces": [ "eth0" ], "dhcp-socket-type": "$KEA_SOCKET_TYPE" },
    "lease-database": { "type": "memfile", "persist": false },
    "valid-lifetime": $DHCP_LEASE_SECONDS,
    "subnet4": [
      {
        "id": 1,
        "subnet": "${E2E_SUBNET}",
        "pools": [ { "pool": "$DHCP_RANGE_FIRST - $DHCP_RANGE_LAST" } ],
        $reservations
        "option-data": [ $options ],
        "next-server": "$E2E_SERVICE_IP",
        "boot-file-name": "$DHCP_BOOT_FILE"
      }
    ],
    "loggers": [
      {
        "name": "kea-dhcp4",
        "output_options": [ { "output": "$KEA_LOG" } ],
        "severity": "DEBUG",
        "debuglevel": 40
      }
    ]
  }
}
EOF
    kea_run "$ns" "$dir" kea-dhcp4 67
}

kea_stop() {
    [ -n "$KEA_PID" ] || return 0
    stop_pid "$KEA_PID"
    KEA_PID=""
}

# ---------------------------------------------------------------------------------------------------
# Clients

# udhcpc_lease NS IFACE OUT [ARGS...]: busybox udhcpc once: foreground, quit once bound (-q), give up after
# 3 discovers 1 s apart (-n -t 3 -T 1); events to OUT, its output to OUT.log. Returns udhcpc's status.
udhcpc_lease() {
    local ns=$1 iface=$2 out=$3 hook rc
    shift 3
    hook=$(dhcp_hook "$out")
    timeout 20 ip netns exec "$ns" \
        busybox udhcpc -i "$iface" -f -q -n -t 3 -T 1 -s "$hook" "$@" >>"$out.log" 2>&1
    rc=$?
    if [ "$rc" != 0 ]; then
        E2E_REASON="udhcpc exit $rc (events: $(lease_events "$out"); $(tail -n 3 "$out.log" | tr '\n' ' '))"
        return 1
    fi
}

# udhcpc_start NS IFACE OUT [ARGS...]: udhcpc that stays in the foreground after it is bound (renewals,
# SIGUSR1 = renew now); waits for the first lease. UDHCPC_PID.
udhcpc_start() {
    local ns=$1 iface=$2 out=$3 hook
    shift 3
    hook=$(dhcp_hook "$out")
    bg_in_ns "$ns" "$out.log" busybox udhcpc -i "$iface" -f -n -t 3 -T 1 -s "$hook" "$@"
    UDHCPC_PID=$BG_PID
    if ! wait_for 10 has_event "$out" bound; then
        E2E_REASON="udhcpc got no lease within 10 s (events: $(lease_events "$out"); $(tail -n 3 "$out.log" | tr '\n' ' '))"
        return 1
    fi
}

dhclient_bound_or_dead() { has_event "$1" "$3" || pid_gone "$2"; }

# dhclient_run NS IFACE DIR EVENT [ARGS...]: ISC dhclient -1 (one attempt, up to the timeout of its
# configuration DIR/dhclient.conf, which the caller wrote) in the foreground (-d, as a background job of the
# test) with ARGS (-6 for DHCPv6), the hook, lease and pid files in DIR; stopped once it reports EVENT (BOUND,
# BOUND6; SIGTERM: no release). Events in DIR/dhclient.events, the lease in DIR/dhclient.leases.
dhclient_run() {
    local ns=$1 iface=$2 dir=$3 event=$4 hook pid
    shift 4
    hook=$(dhcp_hook "$dir/dhclient.events")
    bg_in_ns "$ns" "$dir/dhclient.log" \
        dhclient "$@" -d -1 -v -cf "$dir/dhclient.conf" -sf "$hook" -lf "$dir/dhclient.leases" \
        -pf "$dir/dhclient.pid" "$iface"
    pid=$BG_PID
    wait_for 20 dhclient_bound_or_dead "$dir/dhclient.events" "$pid" "$event"
    local bound=0
    has_event "$dir/dhclient.events" "$event" && bound=1
    stop_pid "$pid"
    if [ "$bound" != 1 ]; then
        E2E_REASON="dhclient $* got no lease (events: $(lease_events "$dir/dhclient.events"); $(tail -n 4 "$dir/dhclient.log" | tr '\n' ' '))"
        return 1
    fi
}

# dhclient6_lease NS IFACE DIR: ISC dhclient -6 once (stateful, from the link-local address), asking for the
# boot file URL (option 59, RFC 5970); the hook records BOUND6 with new_ip6_address and
# new_dhcp6_bootfile_url.
dhclient6_lease() {
    local ns=$1 iface=$2 dir=$3
    mkdir -p "$dir"
    cat >"$dir/dhclient.conf" <<'EOF'
timeout 15;
retry 1;
initial-interval 1;
option dhcp6.bootfile-url code 59 = string;
also request dhcp6.bootfile-url;
EOF
    dhclient_run "$ns" "$iface" "$dir" BOUND6 -6
}

# dhclient_lease NS IFACE DIR: dhclient_run for a DHCPv4 lease, its 15 s timeout, the usual options.
dhclient_lease() {
    local ns=$1 iface=$2 dir=$3
    mkdir -p "$dir"
    cat >"$dir/dhclient.conf" <<'EOF'
timeout 15;
retry 1;
initial-interval 1;
request subnet-mask, broadcast-address, routers, dhcp-lease-time, dhcp-server-identifier;
EOF
    dhclient_run "$ns" "$iface" "$dir" BOUND
}

# ---------------------------------------------------------------------------------------------------
# Capture and TFTP

capture_listening() { grep -q listening "$CAPTURE_FILE.out" 2>/dev/null || pid_gone "$CAPTURE_PID"; }

# capture_start NS IFACE OUT: records IFACE's frames into OUT (JSON lines, capture.py), flagging frames
# that contain the pod IP anywhere.
capture_start() {
    local ns=$1 iface=$2
    CAPTURE_FILE=$3
    bg_in_ns "$ns" "$CAPTURE_FILE.out" python3 "$CAPTURE_PY" record "$iface" "$CAPTURE_FILE" --needle "$E2E_POD_IP"
    CAPTURE_PID=$BG_PID
    if ! wait_for 5 capture_listening || pid_gone "$CAPTURE_PID"; then
        E2E_REASON="capture on $ns/$iface did not start: $(head -c 300 "$CAPTURE_FILE.out")"
        return 1
    fi
}

capture_stop() {
    [ -n "$CAPTURE_PID" ] || return 0
    stop_pid "$CAPTURE_PID"
    CAPTURE_PID=""
}

# capture_stats FILE: "packets=N drops=D" from the statistics a stopped capture appended.
capture_stats() {
    python3 -c 'import json, sys
s = [json.loads(l)["stats"] for l in open(sys.argv[1]) if l.startswith("{\"stats\"")]
print("packets=%d drops=%d" % (s[-1]["packets"], s[-1]["drops"]) if s else "running")' "$1"
}

# tftp_get NS SERVER FILE DEST: tftp-hpa in NS fetches FILE in binary mode; fails on a non-zero exit, a
# missing DEST, or an error message (tftp-hpa's exit status does not always tell).
tftp_get() {
    local ns=$1 server=$2 file=$3 dest=$4 rc
    rm -f "$dest"
    local family=()
    [[ $server != *:* ]] || family=(-6)
    # 60 s for a file (scaled: a guest of the kernel matrix under TCG, beside another suite, fetched 0.9 MB of
    # the 3 MB boot file in 60 s, 2026-12-07).
    (cd "$(dirname "$dest")" && timeout "$(scaled_seconds 60)" ip netns exec "$ns" tftp "${family[@]}" -m binary -v "$server" -c get \
        "$file" "$(basename "$dest")") >"$dest.log" 2>&1
    rc=$?
    if [ "$rc" != 0 ] || [ ! -f "$dest" ] || grep -qiE 'error|timed out|refused' "$dest.log"; then
        E2E_REASON="tftp get $file from $server exit $rc: $(head -c 300 "$dest.log" | tr '\n' ' ')"
        return 1
    fi
}

random_file() {
    python3 - "$1" "$2" "$E2E_POD_IP" <<'EOF'
import os, socket, sys
path, size, needle = sys.argv[1], int(sys.argv[2]), socket.inet_aton(sys.argv[3])
while True:
    data = os.urandom(size)
    if needle not in data:  # so a capture can scan every frame for the pod IP
        break
open(path, "wb").write(data)
EOF
}
