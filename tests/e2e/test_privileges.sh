#!/usr/bin/env bash
# What each server of the Ironic pod needs when it runs as a non-root user behind bpfnet (docs/ironic-pod.md,
# "Capabilities, as tested"). Every server runs in the pod namespace as uid/gid 65534 with exactly a
# capability set X: setpriv sets the inheritable, ambient and bounding sets to X and no_new_privs (what a
# container with runAsUser, `capabilities: {drop: [ALL], add: X}` and allowPrivilegeEscalation: false
# gets), and the case reads the running server's /proc/PID/status to check the uid, CapEff and CapPrm (= X)
# and CapBnd (nothing more can be gained). Clients use the service IP from the host, so everything also
# goes through the datapath (ports: dhcp udp 67 kind dhcp, tftp udp 69 kind tftp, ironic-api tcp 6385,
# images tcp 6180). Each case shows that X is enough and, where there is a smaller set, that one fewer is
# not:
#
#   image server (python3 -m http.server)   none
#   Kea, dhcp-socket-type udp               NET_BIND_SERVICE (none: cannot bind 67; raw sockets: NET_RAW)
#   dnsmasq, DHCP (no-ping)                 NET_ADMIN + NET_BIND_SERVICE (either alone is refused; without
#                                           no-ping it also demands NET_RAW)
#   dnsmasq, TFTP only                      NET_BIND_SERVICE (none: cannot bind 69)
#   with ip_unprivileged_port_start=0       Kea and dnsmasq's TFTP need none; dnsmasq's DHCP NET_ADMIN
#   Ironic API                              none
#
#   test_privileges.sh LOADER [--case KEY]... | --list
# The cases are called through run_cases (the case list), which shellcheck cannot follow.
# shellcheck disable=SC2317
set -u

# shellcheck source=lib.sh
source "$(dirname "$(realpath "$0")")/lib.sh"
# shellcheck source=dhcp.sh
source "$E2E_DIR/dhcp.sh"
# shellcheck source=ironic.sh
source "$E2E_DIR/ironic.sh"
# The cases, in the order of a full run, with what each starts from (lib.sh, "The case list"). A case leaves
# nothing running when it passes; after each, what a failed one left is stopped (privileged_cleanup).
e2e_fixture loader setup
e2e_case images case_images "1. image server, no capabilities: a file byte for byte through the service IP" loader
e2e_case kea case_kea "2. Kea (udp sockets), NET_BIND_SERVICE: a lease through the relay" loader
e2e_case kea_without case_kea_without "3. Kea, no capabilities: cannot bind UDP 67 (logged), no lease" loader
e2e_case kea_raw case_kea_raw "4. Kea, raw sockets: NET_BIND_SERVICE is not enough, with NET_RAW a lease" loader
e2e_case dnsmasq_dhcp case_dnsmasq_dhcp "5. dnsmasq DHCP (no-ping), NET_ADMIN + NET_BIND_SERVICE: a lease through the relay" loader
e2e_case dnsmasq_dhcp_fewer case_dnsmasq_dhcp_fewer "6. dnsmasq DHCP, NET_BIND_SERVICE alone or NET_ADMIN alone: refused at start-up" loader
e2e_case dnsmasq_ping case_dnsmasq_ping "7. dnsmasq DHCP without no-ping: NET_RAW demanded too" loader
e2e_case tftp case_tftp "8. dnsmasq TFTP only, NET_BIND_SERVICE: a file through the service IP; none: refused" loader
e2e_case sysctl case_sysctl "9. ip_unprivileged_port_start=0: Kea and dnsmasq TFTP with none, dnsmasq DHCP with NET_ADMIN" loader
e2e_fixture ironic ironic_unprivileged loader
e2e_case ironic case_ironic "10. Ironic, no capabilities: /v1 through the service IP" ironic
E2E_AFTER_CASE=privileged_cleanup

e2e_start "$@"

PRIV_UID=65534
PRIV_GID=65534
IMAGE_PORT=6180
IMAGE_BYTES=$((4 * 1024 * 1024))
TFTP_BYTES=$((512 * 1024))
# Debian's interpreter: a per-user one (pyenv) is not readable by uid 65534.
IMAGE_PYTHON=/usr/bin/python3

skip_unless dhcp_available ironic_available
if [ ! -x "$IMAGE_PYTHON" ] || ! setpriv --help 2>&1 | grep -q -- --ambient-caps; then
    echo "e2e: needs $IMAGE_PYTHON and a setpriv with --ambient-caps (util-linux >= 2.31); skipped" >&2
    exit 77
fi

# ---------------------------------------------------------------------------------------------------
# Running as uid 65534 with exactly a capability set

# cap_mask CAPS: the capability mask (CapEff format, 16 hex digits) of CAPS, names comma separated
# (net_admin,net_bind_service; empty: none).
cap_mask() {
    local mask=0 c
    for c in ${1//,/ }; do
        case $c in
        net_bind_service) mask=$((mask | 1 << 10)) ;;
        net_admin) mask=$((mask | 1 << 12)) ;;
        net_raw) mask=$((mask | 1 << 13)) ;;
        *) die "cap_mask: unknown capability $c" ;;
        esac
    done
    printf '%016x' "$mask"
}

# as_user CAPS: PRIV_AS, the setpriv prefix that runs a command as uid/gid 65534, no supplementary groups,
# no_new_privs, with CAPS (comma separated, empty: none) as its inheritable, ambient and bounding sets; the
# ambient set carries CAPS into the permitted and effective sets across the exec of the server.
PRIV_AS=()
as_user() {
    local set=-all c
    for c in ${1//,/ }; do
        set+=",+$c"
    done
    PRIV_AS=(setpriv --reuid="$PRIV_UID" --regid="$PRIV_GID" --clear-groups --no-new-privs
        --inh-caps="$set" --ambient-caps="$set" --bounding-set="$set")
}

# privs_match STATUS CAPS: STATUS (a /proc/PID/status text) is uid and gid 65534 (real, effective, saved,
# fs), no supplementary groups, no_new_privs, CapEff = CapPrm = CapBnd = CAPS. PRIV_SEEN says what it saw.
PRIV_SEEN=""
privs_match() {
    local status=$1 want
    want=$(cap_mask "$2")
    local uid gid groups nnp eff prm bnd
    uid=$(awk '/^Uid:/ {print $2, $3, $4, $5}' <<<"$status")
    gid=$(awk '/^Gid:/ {print $2, $3, $4, $5}' <<<"$status")
    groups=$(awk '/^Groups:/ {$1 = ""; print}' <<<"$status" | tr -d ' ')
    nnp=$(awk '/^NoNewPrivs:/ {print $2}' <<<"$status")
    eff=$(awk '/^CapEff:/ {print $2}' <<<"$status")
    prm=$(awk '/^CapPrm:/ {print $2}' <<<"$status")
    bnd=$(awk '/^CapBnd:/ {print $2}' <<<"$status")
    PRIV_SEEN="uid $uid gid $gid groups '$groups' NoNewPrivs $nnp CapEff $eff CapPrm $prm CapBnd $bnd"
    local ids="$PRIV_UID $PRIV_UID $PRIV_UID $PRIV_UID"
    [ "$uid" = "$ids" ] && [ "$gid" = "${ids//$PRIV_UID/$PRIV_GID}" ] && [ -z "$groups" ] && [ "$nnp" = 1 ] &&
        [ "$eff" = "$want" ] && [ "$prm" = "$want" ] && [ "$bnd" = "$want" ]
}

# privs_ok PID NAME CAPS: the running process PID is NAME (its comm) with exactly CAPS as uid 65534.
privs_ok() {
    local pid=$1 name=$2 caps=$3 comm status
    comm=$(cat "/proc/$pid/comm" 2>/dev/null)
    status=$(cat "/proc/$pid/status" 2>/dev/null)
    if [ "$comm" != "$name" ]; then
        E2E_REASON="pid $pid is '$comm', want $name (exited? $(pid_gone "$pid" && echo yes || echo no))"
        return 1
    fi
    if ! privs_match "$status" "$caps"; then
        E2E_REASON="$name (pid $pid): $PRIV_SEEN; want uid/gid $PRIV_UID, no groups, NoNewPrivs 1,"
        E2E_REASON+=" CapEff = CapPrm = CapBnd = $(cap_mask "$caps") (${caps:-none})"
        return 1
    fi
    log "$name (pid $pid) runs with $PRIV_SEEN"
}

# prefix_ok CAPS: PRIV_AS (from as_user CAPS) gives a process exactly CAPS as uid 65534, read from the
# process's own status in the pod: for servers that exit at once, whose status cannot be read.
prefix_ok() {
    if ! privs_match "$(pod "${PRIV_AS[@]}" cat /proc/self/status)" "$1"; then
        E2E_REASON="setpriv prefix gives $PRIV_SEEN, want ${1:-no capabilities}"
        return 1
    fi
}

# serve_as CAPS: dnsmasq_run and kea_start run their server as uid 65534 with CAPS, state owned by it.
serve_as() {
    as_user "$1"
    DHCP_SERVER_AS=("${PRIV_AS[@]}")
    DHCP_SERVER_OWNER=$PRIV_UID:$PRIV_GID
}

same_file() { [ "$(sha256sum <"$1")" = "$(sha256sum <"$2")" ]; }

# lease_ok OUT: udhcpc (events in OUT) is bound to an address of the range, from the service IP as server
# identifier, with the service IP as next server.
lease_ok() {
    local ip sid siaddr
    ip=$(lease_field "$1" ip bound)
    sid=$(lease_field "$1" serverid bound)
    siaddr=$(lease_field "$1" siaddr bound)
    if ! ip_in_range "$ip" "$DHCP_RANGE_FIRST" "$DHCP_RANGE_LAST" || [ "$sid" != "$E2E_SERVICE_IP" ] ||
        [ "$siaddr" != "$E2E_SERVICE_IP" ]; then
        E2E_REASON="lease ip=$ip serverid=$sid siaddr=$siaddr, want an address of the range from $E2E_SERVICE_IP"
        return 1
    fi
    log "lease $ip from $sid (next server $siaddr)"
}

# no_lease OUT: udhcpc gives up (3 discovers, about 3 s) without a lease.
no_lease() {
    if udhcpc_lease "$E2E_HOST" eth0 "$1"; then
        E2E_REASON="the host got a lease ($(lease_field "$1" ip bound)) although the server should not serve"
        return 1
    fi
    if has_event "$1" bound; then
        E2E_REASON="udhcpc failed but recorded a bound event"
        return 1
    fi
}

# ---------------------------------------------------------------------------------------------------
# Set-up: the topology, the files the servers hand out, Ironic (it takes seconds to come up: started first,
# checked last) and the loader.

PRIV_DIR=$E2E_TMP/priv
TFTP_ROOT=$PRIV_DIR/tftp
IMAGE_ROOT=$PRIV_DIR/images

# Ironic as uid 65534 with no capabilities, for case 10.
ironic_unprivileged() {
    IRONIC_UID=$PRIV_UID
    IRONIC_GID=$PRIV_GID
    IRONIC_SETPRIV_ARGS=(--no-new-privs --inh-caps=-all --ambient-caps=-all --bounding-set=-all)
    ironic_start "$E2E_POD" "$PRIV_DIR/ironic"
}

setup() {
    topology_create
    mkdir -p "$TFTP_ROOT" "$IMAGE_ROOT" "$PRIV_DIR/fetched"
    random_file "$TFTP_ROOT/$DHCP_BOOT_FILE" "$TFTP_BYTES"
    random_file "$IMAGE_ROOT/ironic-agent.img" "$IMAGE_BYTES"
    DHCP_TFTP_ROOT=$TFTP_ROOT
    # Readable, not writable, by uid 65534; every server's state goes in a directory of its own.
    chmod -R a+rX "$PRIV_DIR"
    chmod o+x "$E2E_TMP"

    local config=$E2E_TMP/conf/privileges.yaml
    write_config --port dhcp:udp:67:67:dhcp --port tftp:udp:69:69:tftp --port ironic-api:tcp:"$IRONIC_PORT" \
        --port images:tcp:"$IMAGE_PORT" "$config"
    loader_start "$config" "$E2E_TMP/logs/loader.log"
}

# ---------------------------------------------------------------------------------------------------
# Cases

case_images() {
    as_user ""
    bg_in_ns "$E2E_POD" "$PRIV_DIR/images.log" "${PRIV_AS[@]}" \
        "$IMAGE_PYTHON" -m http.server "$IMAGE_PORT" --bind 0.0.0.0 --directory "$IMAGE_ROOT"
    local pid=$BG_PID
    if ! wait_for 10 pod_listens "$IMAGE_PORT"; then
        E2E_REASON="the image server does not listen on $IMAGE_PORT: $(tail -n 3 "$PRIV_DIR/images.log" | tr '\n' ' ')"
        return 1
    fi
    privs_ok "$pid" python3 "" || return 1
    local got=$PRIV_DIR/fetched/ironic-agent.img url="http://$E2E_SERVICE_IP:$IMAGE_PORT/ironic-agent.img"
    host curl -sSf --max-time 20 -o "$got" "$url" || {
        E2E_REASON="GET $url from the host failed"
        return 1
    }
    if ! same_file "$got" "$IMAGE_ROOT/ironic-agent.img"; then
        E2E_REASON="the image fetched through $E2E_SERVICE_IP differs from the server's"
        return 1
    fi
    log "$(stat -c %s "$got") bytes byte for byte through $E2E_SERVICE_IP:$IMAGE_PORT"
    stop_pid "$pid"
}

case_kea() {
    serve_as net_bind_service
    kea_start "$E2E_POD" "$PRIV_DIR/kea-nbs" || return 1
    privs_ok "$KEA_PID" kea-dhcp4 net_bind_service || return 1
    udhcpc_lease "$E2E_HOST" eth0 "$PRIV_DIR/kea-nbs/lease" || return 1
    lease_ok "$PRIV_DIR/kea-nbs/lease" || return 1
    kea_stop
}

kea_warnings() { grep -m3 -E 'WARN|ERROR' "$KEA_LOG" | tr '\n' ' '; }

# Kea does not exit when it cannot open a socket (service-sockets-require-all is false): it logs it and
# serves nothing.
case_kea_without() {
    local dir=$PRIV_DIR/kea-none
    serve_as ""
    if kea_start "$E2E_POD" "$dir"; then
        E2E_REASON="kea-dhcp4 listens on UDP 67 without NET_BIND_SERVICE"
        return 1
    fi
    privs_ok "$KEA_PID" kea-dhcp4 "" || return 1
    local failed
    failed=$(grep -m1 'DHCPSRV_OPEN_SOCKET_FAIL.*port=67' "$KEA_LOG")
    if [ -z "$failed" ]; then
        E2E_REASON="no DHCPSRV_OPEN_SOCKET_FAIL for port 67 in $KEA_LOG: $(kea_warnings)"
        return 1
    fi
    log "kea: ${failed#*DHCPSRV_OPEN_SOCKET_FAIL }"
    no_lease "$dir/lease" || return 1
    kea_stop
}

# The default dhcp-socket-type, raw, opens an AF_PACKET socket: NET_BIND_SERVICE is not enough, NET_RAW is
# needed too. Relayed traffic needs no raw socket, hence dhcp-socket-type udp.
case_kea_raw() {
    local failed
    KEA_SOCKET_TYPE=raw
    serve_as net_bind_service
    if kea_start "$E2E_POD" "$PRIV_DIR/kea-raw"; then
        E2E_REASON="kea-dhcp4 with raw sockets listens with NET_BIND_SERVICE alone"
        KEA_SOCKET_TYPE=udp
        return 1
    fi
    KEA_SOCKET_TYPE=udp
    privs_ok "$KEA_PID" kea-dhcp4 net_bind_service || return 1
    failed=$(grep -m1 'DHCPSRV_OPEN_SOCKET_FAIL.*raw' "$KEA_LOG")
    if [ -z "$failed" ]; then
        E2E_REASON="no DHCPSRV_OPEN_SOCKET_FAIL for the raw socket in $KEA_LOG: $(kea_warnings)"
        return 1
    fi
    log "kea, raw, NET_BIND_SERVICE: ${failed#*DHCPSRV_OPEN_SOCKET_FAIL }"
    kea_stop

    KEA_SOCKET_TYPE=raw
    serve_as net_bind_service,net_raw
    kea_start "$E2E_POD" "$PRIV_DIR/kea-raw2"
    local rc=$?
    KEA_SOCKET_TYPE=udp
    [ "$rc" = 0 ] || return 1
    privs_ok "$KEA_PID" kea-dhcp4 net_bind_service,net_raw || return 1
    udhcpc_lease "$E2E_HOST" eth0 "$PRIV_DIR/kea-raw2/lease" || return 1
    lease_ok "$PRIV_DIR/kea-raw2/lease" || return 1
    kea_stop
}

# The dnsmasq configuration of docs/ironic-pod.md (dnsmasq_start: DHCP for relayed requests and TFTP).
case_dnsmasq_dhcp() {
    serve_as net_admin,net_bind_service
    dnsmasq_start "$E2E_POD" "$PRIV_DIR/dnsmasq-dhcp" || return 1
    privs_ok "$DNSMASQ_PID" dnsmasq net_admin,net_bind_service || return 1
    udhcpc_lease "$E2E_HOST" eth0 "$PRIV_DIR/dnsmasq-dhcp/lease" || return 1
    lease_ok "$PRIV_DIR/dnsmasq-dhcp/lease" || return 1
    dnsmasq_stop
}

# dnsmasq_refuses DIR CAPS MESSAGE ARGS...: dnsmasq with ARGS as uid 65534 with CAPS exits at start-up with
# a non-zero status and MESSAGE on its standard error.
dnsmasq_refuses() {
    local dir=$1 caps=$2 message=$3
    shift 3
    serve_as "$caps"
    prefix_ok "$caps" || return 1
    if dnsmasq_run "$E2E_POD" "$dir" "$@"; then
        E2E_REASON="dnsmasq started with ${caps:-no capabilities} (${*})"
        return 1
    fi
    if ! wait_for 5 pid_gone "$DNSMASQ_PID"; then
        E2E_REASON="dnsmasq did not start and did not exit either"
        return 1
    fi
    dnsmasq_stop
    local rc=$STOPPED_RC out
    out=$(tr '\n' ' ' <"$dir/dnsmasq.out")
    if [ "$rc" = 0 ] || ! grep -qF "$message" "$dir/dnsmasq.out"; then
        E2E_REASON="dnsmasq with ${caps:-no capabilities}: exit $rc, '$out'; want a failure with '$message'"
        return 1
    fi
    log "dnsmasq with ${caps:-no capabilities}: exit $rc: ${out# }"
}

# The DHCP part of the documented configuration, without TFTP.
# shellcheck disable=SC2054 # commas inside dnsmasq's option values
DNSMASQ_DHCP_ARGS=(--dhcp-proxy --dhcp-range="$DHCP_RANGE_FIRST,$DHCP_RANGE_LAST,$DHCP_NETMASK,$DHCP_LEASE_TIME"
    --dhcp-option=3,"$DHCP_ROUTER" --dhcp-boot="$DHCP_BOOT_FILE,,$E2E_SERVICE_IP")

case_dnsmasq_dhcp_fewer() {
    dnsmasq_refuses "$PRIV_DIR/dnsmasq-nbs" net_bind_service \
        "process is missing required capability NET_ADMIN" --no-ping "${DNSMASQ_DHCP_ARGS[@]}" || return 1
    dnsmasq_refuses "$PRIV_DIR/dnsmasq-admin" net_admin \
        "failed to bind DHCP server socket: Permission denied" --no-ping "${DNSMASQ_DHCP_ARGS[@]}"
}

case_dnsmasq_ping() {
    dnsmasq_refuses "$PRIV_DIR/dnsmasq-ping" net_admin,net_bind_service \
        "process is missing required capability NET_RAW" "${DNSMASQ_DHCP_ARGS[@]}"
}

# tftp_only_ok DIR CAPS: dnsmasq as TFTP server only (no DNS, no DHCP) with CAPS; the boot file comes
# through the service IP byte for byte.
tftp_only_ok() {
    local dir=$1 caps=$2
    serve_as "$caps"
    dnsmasq_run "$E2E_POD" "$dir" --enable-tftp --tftp-root="$TFTP_ROOT" || return 1
    if ! wait_for 5 ns_udp_listens "$E2E_POD" 69; then
        E2E_REASON="dnsmasq does not listen on UDP 69"
        return 1
    fi
    if ns_udp_listens "$E2E_POD" 67; then
        E2E_REASON="dnsmasq listens on UDP 67 although it serves TFTP only"
        return 1
    fi
    privs_ok "$DNSMASQ_PID" dnsmasq "$caps" || return 1
    local got=$dir/fetched-$DHCP_BOOT_FILE
    tftp_get "$E2E_HOST" "$E2E_SERVICE_IP" "$DHCP_BOOT_FILE" "$got" || return 1
    if ! same_file "$got" "$TFTP_ROOT/$DHCP_BOOT_FILE"; then
        E2E_REASON="the file fetched over TFTP differs from the server's"
        return 1
    fi
    log "$(stat -c %s "$got") bytes over TFTP through $E2E_SERVICE_IP"
    dnsmasq_stop
}

case_tftp() {
    tftp_only_ok "$PRIV_DIR/tftp-nbs" net_bind_service || return 1
    dnsmasq_refuses "$PRIV_DIR/tftp-none" "" "failed to create listening socket for port 69: Permission denied" \
        --enable-tftp --tftp-root="$TFTP_ROOT"
}

# The namespaced sysctl net.ipv4.ip_unprivileged_port_start=0 (a "safe" sysctl in a pod's securityContext)
# lets any user bind ports below 1024: Kea and dnsmasq's TFTP then need no capability. dnsmasq's DHCP still
# needs NET_ADMIN (its own start-up check), and that alone.
unprivileged_ports() {
    pod sysctl -qw net.ipv4.ip_unprivileged_port_start="$1" &&
        [ "$(pod sysctl -n net.ipv4.ip_unprivileged_port_start)" = "$1" ]
}

sysctl_cases() {
    serve_as ""
    kea_start "$E2E_POD" "$PRIV_DIR/kea-sysctl" || return 1
    privs_ok "$KEA_PID" kea-dhcp4 "" || return 1
    udhcpc_lease "$E2E_HOST" eth0 "$PRIV_DIR/kea-sysctl/lease" || return 1
    lease_ok "$PRIV_DIR/kea-sysctl/lease" || return 1
    kea_stop

    tftp_only_ok "$PRIV_DIR/tftp-sysctl" "" || return 1

    dnsmasq_refuses "$PRIV_DIR/dnsmasq-sysctl-none" "" \
        "process is missing required capability NET_ADMIN" --no-ping "${DNSMASQ_DHCP_ARGS[@]}" || return 1
    serve_as net_admin
    dnsmasq_run "$E2E_POD" "$PRIV_DIR/dnsmasq-sysctl" --no-ping "${DNSMASQ_DHCP_ARGS[@]}" || return 1
    privs_ok "$DNSMASQ_PID" dnsmasq net_admin || return 1
    udhcpc_lease "$E2E_HOST" eth0 "$PRIV_DIR/dnsmasq-sysctl/lease" || return 1
    lease_ok "$PRIV_DIR/dnsmasq-sysctl/lease" || return 1
    dnsmasq_stop
}

case_sysctl() {
    if ! unprivileged_ports 0; then
        E2E_REASON="cannot set net.ipv4.ip_unprivileged_port_start=0 in $E2E_POD"
        return 1
    fi
    log "$E2E_POD: net.ipv4.ip_unprivileged_port_start=0"
    sysctl_cases
    local rc=$?
    kea_stop
    dnsmasq_stop
    unprivileged_ports 1024 || {
        E2E_REASON="cannot restore net.ipv4.ip_unprivileged_port_start=1024"
        return 1
    }
    return "$rc"
}

case_ironic() {
    ironic_wait 40 || return 1
    privs_ok "$IRONIC_PID" ironic "" || return 1
    local out body code
    out=$(host curl -sS --max-time 10 -w '\n%{http_code}' "http://$E2E_SERVICE_IP:$IRONIC_PORT/v1" 2>&1)
    code=${out##*$'\n'}
    body=${out%$'\n'*}
    if [ "$code" != 200 ] || [ "$(json_get id <<<"$body")" != v1 ]; then
        E2E_REASON="GET http://$E2E_SERVICE_IP:$IRONIC_PORT/v1 from the host: HTTP $code: ${body:0:200}"
        return 1
    fi
}

# ---------------------------------------------------------------------------------------------------

# A case leaves nothing running when it passes; after a failure, stop what it left.
privileged_cleanup() {
    kea_stop
    dnsmasq_stop
    DHCP_SERVER_AS=()
    DHCP_SERVER_OWNER=""
}

run_cases
finish
